"""Pages over many runs: ``index.html`` in a results folder (every run in it, newest first) and a
page for any list of runs (``write_runs_page``: a pytest session's, harness/report/session_page.py).
Each row says the run's verdict and whether it was as expected, its scenario, seed, duration,
backend, Kafka version, clients and when, with relative links to its report and its folder.

Made from each run's small JSON files alone (verdict.json, journal.json, scenario.json), never its
history, so a page over hundreds of runs takes a fraction of a second. A run whose files are
missing or broken (a crashed or killed run, one still going) is a row that says so; a page is made
whatever a folder holds. Self-contained like the run reports: it loads nothing from anywhere.

``after_run`` is what a finished scenario run calls: it points ``results/latest`` at the run and
rewrites ``results/index.html``."""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.base.errors import ConfigError
from harness.base.paths import results_dir
from harness.report import _env, rerun
from harness.report.nemesis_page import META_FILE as NEMESIS_META
from harness.rundir.journal import Journal
from harness.rundir.run_verdict import RunVerdict
from harness.rundir.runfolder import INDEX, LATEST, SOAK_HTML, RunFolder, point_latest, write_output, write_text

log = logging.getLogger(__name__)

#: Pages of many runs that live in a folder of the results folder: a soak's and a matrix's
#: (harness/campaigns/matrix.py MATRIX_HTML, a layer above this one; tests/unit/test_index.py keeps them equal).
GROUP_PAGES = (SOAK_HTML, "matrix.html")
#: A pytest session's page of its runs, in the results folder itself.
SESSION_PAGES = "pytest-session-*.html"
#: What a run folder holds at the least (a cluster's or a bench's folder has none of them);
#: nemesis.json: a pytest test's nemesis fixture (harness/report/nemesis_page.py)
_RUN_FILES = ("scenario.json", "journal.json", "verdict.json", NEMESIS_META)


@dataclass
class RunRow:
    """One run as a row of a page; ``problem`` says why facts are missing (None: a finished run)."""

    name: str
    #: valid | invalid | unknown | none (no verdict)
    verdict: str = "none"
    as_expected: bool | None = None
    problem: str | None = None
    scenario: str | None = None
    seed: int | None = None
    duration_s: float | None = None
    took_s: float | None = None
    backend: str | None = None
    kafka: str | None = None
    transaction_version: int | None = None
    clients: list[str] = field(default_factory=list)
    started: str | None = None
    #: check name -> how many times it fired
    anomalies: dict[str, int] = field(default_factory=dict)
    command: str | None = None
    #: relative to the page: the run's report.html (None: there is none) and its folder
    report: str | None = None
    folder: str = ""
    #: for sorting, newest first: the journal's start, else the folder's last change
    when: float = 0.0


def is_run_folder(path: Path) -> bool:
    """A folder ``eos-chaos run`` made (or began to make): a cluster's folder is not one."""
    return path.is_dir() and not path.is_symlink() and any((path / f).exists() for f in _RUN_FILES)


def run_row(run_dir: Path, page_dir: Path) -> RunRow:
    """``run_dir`` as a row of a page written in ``page_dir``; never raises for what the folder holds."""
    folder = RunFolder(run_dir)
    row = RunRow(name=run_dir.name, folder=_link(run_dir, page_dir) + "/")
    if not run_dir.is_dir():
        row.problem = "the run folder is not there (moved or deleted)"
        return row
    if (run_dir / NEMESIS_META).exists() and not folder.verdict.exists():
        return _nemesis_row(row, folder, page_dir)
    problems: list[str] = []
    verdict = _read(folder, folder.verdict, problems) or {}
    scenario = _read(folder, folder.scenario, problems) or {}
    try:
        journal = Journal.load(folder)
    except ConfigError as exc:
        journal = None
        problems.append(str(exc).replace(str(run_dir) + os.sep, ""))
    _from_scenario(row, scenario)
    if journal is not None:
        _from_journal(row, journal)
    if verdict:
        try:
            _from_verdict(row, RunVerdict.of(verdict, folder.verdict.name))
        except ConfigError as exc:  # a verdict.json eos-chaos did not write
            problems.append(str(exc))
    elif not problems:
        problems.append("no verdict: the run crashed, was killed, or is still going"
                        if journal is None or journal.finished is None else "no verdict (eos-chaos check RUN_DIR makes one)")
    try:
        row.command = rerun(scenario, journal) if scenario or journal else None
    except (TypeError, ValueError, AttributeError):
        row.command = None  # a scenario.json too broken to rebuild the command from
    row.problem = "; ".join(problems) or None
    if folder.report.exists():
        row.report = _link(folder.report, page_dir)
    row.when = row.when or _mtime(run_dir)
    return row


def _nemesis_row(row: RunRow, folder: RunFolder, page_dir: Path) -> RunRow:
    """A test's nemesis folder: the faults it injected and whether the cluster was healed after."""
    problems: list[str] = []
    meta = _read(folder, folder.path / NEMESIS_META, problems) or {}
    row.verdict = "faults"
    row.scenario = f"test: {meta.get('test') or '?'}"
    row.backend = _str(meta.get("backend"))
    started = _str(meta.get("started"))  # a journal's format: %Y-%m-%dT%H:%M:%S%z
    row.started = started.replace("T", " ") if started else None
    healed = meta.get("healed")
    row.as_expected = healed if isinstance(healed, bool) else None
    if isinstance(meta.get("t0_ns"), int) and isinstance(meta.get("ended_ns"), int):
        row.took_s = (meta["ended_ns"] - meta["t0_ns"]) / 1e9
    problems += [f"not healed: {p}" for p in _items(meta.get("heal_problems"))]
    problems += [f"fault failed: {e}" for e in _items(meta.get("errors"))]
    if healed is None and not problems:
        problems.append("the test had not ended (or was killed)")
    row.problem = "; ".join(problems) or None
    if folder.report.exists():
        row.report = _link(folder.report, page_dir)
    row.when = _epoch(started) or _mtime(folder.path)
    return row


def _read(folder: RunFolder, path: Path, problems: list[str]) -> dict[str, Any] | None:
    try:
        return folder.read_json(path)
    except (ConfigError, OSError) as exc:
        problems.append(f"{path.name} is broken ({str(exc).replace(str(path) + ': ', '')})")
        return None


def _from_scenario(row: RunRow, sc: dict[str, Any]) -> None:
    row.scenario = _str(sc.get("name"))
    row.seed = sc.get("seed") if isinstance(sc.get("seed"), int) else None
    row.backend = _str(sc.get("backend"))
    row.duration_s = _num(sc.get("duration"))
    row.clients = _clients(sc.get("workloads"))


def _from_journal(row: RunRow, j: Journal) -> None:
    row.scenario, row.seed, row.backend = j.scenario, j.seed, j.backend
    row.duration_s = _num(j.resolved.get("duration")) or row.duration_s
    row.kafka = j.kafka_version or _str(j.versions.get("kafka"))
    row.transaction_version = j.transaction_version
    row.clients = _clients(j.resolved.get("workloads")) or row.clients
    row.started = j.started.replace("T", " ")
    started, finished = _epoch(j.started), _epoch(j.finished)
    row.when = started or 0.0
    if started and finished:
        row.took_s = finished - started


def _from_verdict(row: RunRow, v: RunVerdict) -> None:
    row.verdict = v.label
    row.as_expected = v.as_expected
    tv = v.facts.transaction_version
    row.transaction_version = tv if tv is not None else row.transaction_version
    row.anomalies = v.counts()


def _clients(workloads: Any) -> list[str]:
    """The client libraries the run's workloads ran on (``confluent-kafka``, ``java@4.1.0``, ...)."""
    if not isinstance(workloads, list):
        return []
    return sorted({str(w["library"]) for w in workloads if isinstance(w, dict) and w.get("library")})


def _link(path: Path, page_dir: Path) -> str:
    # relative, so the pages work wherever the results folder is copied to (a CI artifact)
    return Path(os.path.relpath(path.absolute(), page_dir.absolute())).as_posix()


def _items(v: Any) -> list[Any]:
    """A list a file should hold as one (a single value as a list of it; nothing: none)."""
    return v if isinstance(v, list) else [] if v is None or v == "" else [v]


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _epoch(stamp: str | None) -> float | None:
    """A journal's ``%Y-%m-%dT%H:%M:%S%z`` as seconds since the epoch."""
    try:
        return time.mktime(time.strptime(stamp, "%Y-%m-%dT%H:%M:%S%z")) if stamp else None
    except ValueError:
        return None


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def totals(rows: list[RunRow]) -> dict[str, int]:
    return {"runs": len(rows), "as_expected": sum(r.as_expected is True for r in rows),
            "not_as_expected": sum(r.as_expected is False for r in rows),
            "valid": sum(r.verdict == "valid" for r in rows), "invalid": sum(r.verdict == "invalid" for r in rows),
            "unknown": sum(r.verdict == "unknown" for r in rows), "no_verdict": sum(r.verdict == "none" for r in rows)}


def render_runs(title: str, description: str, rows: list[RunRow], groups: list[tuple[str, str]] | None = None) -> str:
    """The page: totals, the commands that replay what was not as expected, one row per run;
    ``groups``: (name, link) of soak and matrix pages beside the runs."""
    replay = [r.command for r in rows if r.as_expected is False and r.command]
    return _env.get_template("runs.html.j2").render(
        title=title, description=description, rows=rows, t=totals(rows), replay=replay, groups=groups or [],
        generated=time.strftime("%Y-%m-%d %H:%M:%S %Z"))


def write_runs_page(out: Path, run_dirs: list[Path], title: str, description: str = "") -> Path:
    """A page at ``out`` over exactly ``run_dirs``, in that order, atomically; its path."""
    out.parent.mkdir(parents=True, exist_ok=True)
    rows = [run_row(d, out.parent) for d in run_dirs]
    return write_text(out, render_runs(title, description, rows))


def write_index(folder: Path | None = None) -> Path:
    """``index.html`` in ``folder`` (default: the results folder): every run folder in it, newest
    first, and the soak and matrix pages of its folders; atomically. Its path."""
    folder = folder or results_dir()
    if folder.is_file():
        raise ConfigError(f"{folder} is a file, not a results folder (a folder of run folders, such as results/)")
    if not folder.is_dir():
        raise ConfigError(f"results folder {folder} does not exist")
    runs, groups = [], []
    for child in sorted(folder.iterdir()):
        if child.is_symlink() or not child.is_dir():
            continue  # results/latest is a second name for a run already listed
        if is_run_folder(child):
            runs.append(run_row(child, folder))
        else:
            groups += [(f"{child.name}/{page}", _link(child / page, folder)) for page in GROUP_PAGES
                       if (child / page).exists()]
    # the pages the pytest plugin writes at each session's end (harness/pytest_plugin/__init__.py), newest first
    groups += [(page.name, _link(page, folder)) for page in sorted(folder.glob(SESSION_PAGES), reverse=True)]
    runs.sort(key=lambda r: (r.when, r.name), reverse=True)
    t = totals(runs)
    where = folder.absolute()
    return write_output(folder / INDEX, render_runs(
        f"runs in {where.name}", f"{t['runs']} runs in {where}; newest first. {LATEST} points at the run that "
        "finished last.", runs, groups))


def after_run(run_dir: Path, results: Path | None = None) -> None:
    """What a finished run leaves in the results folder: ``latest`` pointing at it and a new
    ``index.html``. Only for runs in the results folder (a soak's and a matrix's runs too, in their
    folders there); a run written elsewhere with ``--out`` leaves it alone. A failure is logged,
    never fails the run (its verdict is what counts; ``eos-chaos index`` makes the page again)."""
    results = results or results_dir()
    try:
        if not run_dir.resolve().is_relative_to(results.resolve()):
            return
        point_latest(results, run_dir)
    except Exception as exc:  # noqa: BLE001 - see docstring
        log.warning(f"{results / LATEST} could not be pointed at {run_dir.name} ({exc})")
    try:
        write_index(results)
    except Exception as exc:  # noqa: BLE001 - see docstring
        log.warning(f"{results / INDEX} could not be written ({type(exc).__name__}: {exc}); try: eos-chaos index {results}")
