"""``report.html``: one self-contained page per run folder (``eos-chaos report RUN_DIR``), made
from the folder alone: verdict first, then the timeline, the partitions anomalies name, and how
to run it again. No script, style or font is loaded from anywhere: it opens offline."""

from __future__ import annotations

import html
import logging
import time
from pathlib import Path
from typing import Any

from harness.checker import MEANING, VERDICT_FILE
from harness.history.text import write_history_text
from harness.report.data import RunData, load
from harness.report.jinja_env import ENV
from harness.report.loaded import LoadedRun
from harness.report.logs import excerpts, log_links
from harness.report.ops import Marked
from harness.rundir import runinfo
from harness.rundir.journal import Journal, mostly_nothing
from harness.rundir.runfolder import REPORT, RunFolder, write_output

REPORT_FILE = REPORT
log = logging.getLogger(__name__)

#: the pages' templates (harness/report/jinja_env.py; the other pages import it from here)
_env = ENV


def flat(d: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """Nested figures as ``a.b: value`` rows (lists of scalars stay one row)."""
    rows: list[tuple[str, Any]] = []
    for k, v in d.items():
        if isinstance(v, dict) and v and all(not isinstance(x, dict) for x in v.values()) and len(v) <= 6:
            rows.append((prefix + k, v))
        elif isinstance(v, dict) and v:
            rows += flat(v, f"{prefix}{k}.")
        else:
            rows.append((prefix + k, v))
    return rows


def _without_series(figure: Any) -> Any:
    """A figure over time (``unseen``, ``realtime_lag``) without its points: the timeline draws them."""
    if isinstance(figure, dict) and "series" in figure:
        return {k: x for k, x in figure.items() if k != "series"} | {"over time": "on the timeline"}
    return figure


def rerun(scenario: dict[str, Any], journal: Journal | None = None) -> str:
    """The re-run command the journal recorded; for runs made before, the one ``scenario.json``
    recorded, or the same built from the scenario."""
    if journal is not None and journal.command:
        return journal.command
    if scenario.get("command"):
        return str(scenario["command"])
    return runinfo.rerun_command(scenario.get("name", "?"), scenario.get("backend", "local"), int(scenario.get("seed", 0)),
                                 float(scenario.get("duration", 0)), (scenario.get("versions") or {}).get("kafka"))


def example_times(data: RunData) -> dict[tuple[str, int], dict[str, Any]]:
    """(check, example number) -> what the example table says of its time: its label, its ops'
    times, the faults active while they ran."""
    def faults(m: Marked) -> str:
        return "; ".join(f"F{n} {data.faults[n - 1].label}" for n in m.faults) or "none"

    return {(m.check, m.example): {"label": m.label, "ops": [s.describe(data.clock) for s in m.spans],
                                   "faults": faults(m), "in_fault": bool(m.faults)} for m in data.marked}


def render(data: RunData) -> str:
    from harness.report.lanes import lane_views
    from harness.report.plots import legend, partition_svg, timeline_svg

    v = data.verdict
    checks = [{"name": name, "count": c.count, "meaning": MEANING.get(name, ""), "error": c.error,
               "skipped": c.skipped, "examples": c.examples,
               "columns": list(dict.fromkeys(k for ex in c.examples if isinstance(ex, dict) for k in ex))}
              for name, c in v.checks.items()]
    fired = [c for c in checks if c["count"] != 0]
    stats = {k: _without_series(x) for k, x in v.stats.items()}
    journal = data.journal
    # a run on a shared cluster (a pytest session's, a soak's): the brokers' logs are in its folder
    cluster_dir = Path(journal.cluster_dir) if journal is not None and journal.cluster_dir else None
    return _env.get_template("report.html.j2").render(
        title=f"{data.scenario.get('name', data.run_dir.name)} · {data.run_dir.name}",
        run_id=data.run_dir.name, v=v, run=v.facts, sc=data.scenario, checks=fired,
        clean=[c for c in checks if c["count"] == 0], anomalous=[c for c in checks if c["count"]],
        times=example_times(data), clock=data.clock, never_started=data.never_started, lanes=lane_views(data),
        logs=log_links(data.run_dir, cluster_dir), excerpts=excerpts(data.run_dir, data.marked, data.clock, cluster_dir),
        versions=journal.versions if journal is not None else data.scenario.get("versions") or {},
        features=journal.features if journal is not None else {},
        cluster_read=journal.cluster if journal is not None else None,
        cleanup_problems=journal.cleanup_problems if journal is not None else [],
        run_topics=journal.run_topics if journal is not None else [],
        seed=journal.seed if journal is not None else data.scenario.get("seed"),
        backend=journal.backend if journal is not None else data.scenario.get("backend"),
        command=rerun(data.scenario, journal), duration_s=data.duration_s,
        timeline=timeline_svg(data), faults=data.faults, fault_legend=legend([f.kind for f in data.faults]),
        faults_hit=(journal.faults_hit() if journal is not None else None),
        mostly_nothing=mostly_nothing(journal.faults_hit() if journal is not None else None),
        spark_ran=data.spark_batches is not None,
        partitions=[(p, partition_svg(p)) for p in data.partitions], app=data.app,
        stats=flat(stats), expected=v.expected, generated=time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        description=data.scenario.get("description", ""), esc=html.escape)


def write_report(run: Path | LoadedRun, out: Path | None = None) -> Path:
    """Write the run folder's ``report.html`` (or ``out``) atomically; return its path. ``run``: the
    folder, or the run as already loaded (the runner's, ``eos-chaos check``'s: nothing is read
    again). Into the run folder, ``history.txt`` is written first (the page links it); a history
    that cannot be written so is logged, never stops the report."""
    from harness.report.nemesis_page import is_nemesis_run, write_nemesis_report

    run_dir = run if isinstance(run, Path) else run.run_dir
    if isinstance(run, Path) and is_nemesis_run(run_dir) and not (run_dir / VERDICT_FILE).exists():
        return write_nemesis_report(run_dir, out=out)  # a pytest test's nemesis fixture: faults, no verdict
    data = load(run)
    if out is None and data.tables is not None:
        try:
            write_history_text(run_dir, data.tables, data.clock.zero_ns, data.clock.wall_zero_ns, data.clock.basis)
        except Exception as exc:  # noqa: BLE001 - see docstring
            log.info(f"history.txt could not be written ({type(exc).__name__}: {exc})")
    return write_output(out or RunFolder(run_dir).report, render(data))
