"""What ``eos-chaos repro`` writes: ``REPORT.md``, to paste into a client's or Kafka's issue tracker,
and beside it the raw excerpts it quotes from (``harness.report.repro`` gathers them).

``REPORT.md`` must fit an issue's body (GitHub refuses one over 65,536 characters): its log blocks
and timeline are cut to fit ``MD_MAX_CHARS``, and say where the whole excerpt is. Its logs are in
collapsible ``<details>`` blocks, so a maintainer reads the summary, the versions and the timeline
first."""

from __future__ import annotations

import math
import re
from dataclasses import asdict
from pathlib import Path
from typing import Any

import jinja2
import orjson

from harness.base.errors import ConfigError
from harness.report.repro import Repro
from harness.rundir.runfolder import make_folder, read_json_object, write_output

REPORT_MD = "REPORT.md"
SUMMARY_JSON = "repro.json"
WIRE_FILE = "wire-events.jsonl"
HISTORY_FILE = "history.txt"
MINIMAL_FILE = "minimal-scenario.yaml"
#: What ``eos-chaos minimize`` adds: the smallest scenario that reproduced, the candidates it ran
#: (a table for people, a record for programs).
CHECKED_FILE = "minimal.yaml"
CANDIDATES_FILE = "candidates.md"
MINIMIZE_JSON = "minimize.json"
#: Under GitHub's limit on an issue's body (65,536), with room for a sentence of one's own.
MD_MAX_CHARS = 60_000
#: How much REPORT.md quotes at first: lines per log and rows of the timeline (halved until it fits).
MD_LOG_LINES = 40
MD_MOMENTS = 120
#: A log line in REPORT.md is cut here (a broker's fetcher lines list every partition); the files keep more.
MD_LINE_CHARS = 400

_env = jinja2.Environment(loader=jinja2.PackageLoader("harness.report", "templates"), autoescape=False,
                          undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                          keep_trailing_newline=True)


def md(v: Any) -> str:
    """A value as one Markdown table cell: no line break, ``|`` escaped, no HTML tag."""
    return re.sub(r"\s*\n\s*", " ", str(v)).replace("|", "\\|").replace("<", "&lt;")


def fence(text: str, mark: str = "`") -> str:
    """A code fence longer than any run of ``mark`` inside ``text`` (a log may hold some)."""
    longest = max((len(m) for m in re.findall(re.escape(mark) + "+", text)), default=0)
    return mark * max(3, longest + 1)


_env.filters["md"] = md


def _middle(lines: list[str], n: int, file: str) -> list[str]:
    """At most ``n`` of ``lines``, from their middle (the anomaly's ops are in the window's middle),
    saying how many were left out on each side and where they are."""
    if len(lines) <= n:
        return lines
    start = (len(lines) - n) // 2
    end = start + n
    return ([f"… {start} earlier lines in {file}"] if start else []) + lines[start:end] + \
        ([f"… {len(lines) - end} later lines in {file}"] if end < len(lines) else [])


def files_of(r: Repro) -> list[tuple[str, str]]:
    """(file in the output folder, what it holds), in the order REPORT.md lists them."""
    files = [(REPORT_MD, "this report"), (SUMMARY_JSON, "the same facts, machine-readable")]
    if r.wire:
        files.append((WIRE_FILE, f"the wire proxy's {len(r.wire)} events in the window, as it logged them"))
    if r.history_lines:
        files.append((HISTORY_FILE, "the history's operations in the window, one a line (t, wall clock, process, "
                                    "type, op, records, error)"))
    files += [(lg.file, f"{lg.source}: {lg.picked_by}") for lg in r.logs]
    c = r.checked
    if c is not None and c.minimal:
        files.append((CHECKED_FILE, "the smallest scenario that reproduced (eos-chaos minimize ran it)"))
    elif r.minimal:
        files.append((MINIMAL_FILE, "the smaller scenario's draft"))
    if c is not None:
        files += [(CANDIDATES_FILE, "every smaller scenario eos-chaos minimize tried: what it took out, its runs and "
                                    "their folders, whether it reproduced"),
                  (MINIMIZE_JSON, "the same, for a program")]
    return files


def render(r: Repro, log_lines: int = MD_LOG_LINES, rows: int = MD_MOMENTS) -> str:
    """``REPORT.md``: at most ``log_lines`` lines per log and ``rows`` rows of the timeline."""
    clock = r.clock

    def t(s: float) -> str:
        return "?" if math.isnan(s) else f"{s:.3f}"

    def wall(s: float) -> str:
        return "" if math.isnan(s) else clock.wall_text(s)

    logs = []
    for lg in r.logs:
        shown = [x if len(x) <= MD_LINE_CHARS else x[:MD_LINE_CHARS] + " …"
                 for x in _middle(lg.clipped.lines, log_lines, lg.file)]
        text = "\n".join(shown)
        logs.append({"source": lg.source, "clipped": lg.clipped, "picked_by": lg.picked_by, "text": text,
                     "fence": fence(text), "shown": len([x for x in shown if not x.startswith("… ")])})
    a = r.anomaly
    example = "; ".join(f"{k}: {_cell(v)}" for k, v in a.example.items()) if a is not None else ""
    lo, hi = r.window
    return _env.get_template("repro.md.j2").render(
        r=r, example=md(example), moments=r.timeline[:rows], more_moments=max(0, len(r.timeline) - rows),
        t=t, wall=wall, logs=logs, faults=[(n, f) for n, f in enumerate(r.faults, 1)],
        wall_lo=clock.wall_text(lo), wall_hi=clock.wall_text(hi), files=files_of(r),
        yaml_fence=fence((r.checked.minimal if r.checked is not None else None) or r.minimal or ""),
        minimal_command=r.minimal_command)


def _cell(v: Any) -> str:
    from harness.report.jinja_env import cell

    return cell(v)


def report_md(r: Repro) -> str:
    """``render`` cut to fit ``MD_MAX_CHARS``: fewer log lines and timeline rows until it does."""
    log_lines, rows = MD_LOG_LINES, MD_MOMENTS
    text = render(r, log_lines, rows)
    while len(text) > MD_MAX_CHARS and (log_lines > 2 or rows > 10):
        log_lines, rows = max(2, log_lines // 2), max(10, rows // 2)
        text = render(r, log_lines, rows)
    return text


def summary(r: Repro, files: list[tuple[str, str]]) -> dict[str, Any]:
    """``repro.json``: what REPORT.md says, for a program."""
    a = r.anomaly
    return {
        "format": 1, "run": r.run_dir.name, "scenario": r.name, "status": r.status,
        "unknown_because": r.unknown_because,
        "anomaly": None if a is None else {"check": a.check, "example": a.number, "count": a.count, "found": a.example,
                                           "ops": [s.describe(r.clock) for s in a.spans]},
        "fired": dict(r.fired), "window_s": list(r.window), "window": r.window_says,
        "versions": dict(r.versions), "features": r.features,
        "api_versions": {x.api: {f"v{v}": n for v, n in sorted(x.versions.items())} for x in r.api_versions},
        "transactions": [asdict(t) for t in r.txns],
        "faults": [{"label": f.label, "start_s": f.start_s, "end_s": f.end_s} for f in r.faults],
        "command": r.command, "minimal_command": r.minimal_command or None,
        "minimized": None if r.checked is None else {"file": CHECKED_FILE if r.checked.minimal else None,
                                                     "command": r.checked.command or None, "says": r.checked.says},
        "files": [f for f, _ in files], "notes": r.notes,
    }


def candidates_md(record: dict[str, Any]) -> str:
    """``candidates.md``: ``eos-chaos minimize``'s record (``minimize.json``) as a table, one row per
    candidate tried, its run folders relative to this folder."""
    said = {True: "**yes**", False: "no", None: "not decided"}
    lines = [f"# Candidates tried by `eos-chaos minimize` on run `{record['run']}`", "",
             f"Checks a run must fire to reproduce: {', '.join(f'`{c}`' for c in record['checks'])}. Seed "
             f"{record['seed']}, Kafka {record['kafka_version'] or 'the default'}, transaction.version "
             f"{record['transaction_version'] if record['transaction_version'] is not None else 'the default'}, "
             f"{record['backend']} backend; at most {record['tries']} runs a candidate, {record['max_runs']} in all: "
             f"{record['runs']} used; {record['stopped_because']}.", "",
             "| # | step | taken out | kept | runs | reproduced | run folders |", "|---|---|---|---|---|---|---|"]
    for c in record["candidates"]:
        runs = ", ".join(f"`{r['run_dir']}`" + (f" ({', '.join(r['fired'])})" if r["fired"] else " (none fired)")
                         for r in c["runs"] if r["run_dir"])
        lines.append(f"| {c['number']} | {c['step']} | {md(c['removed'])} | {md(c['kept'])} | {len(c['runs'])} | "
                     f"{said.get(c['reproduced'], '?')}{md(': ' + c['note']) if c['note'] else ''} | {md(runs) or '–'} |")
    m = record.get("minimal")
    lines += ["", f"Minimal: candidate {m['candidate']}, `{m['file']}`: `{m['command']}`" if m else
              "Minimal: none (nothing reproduced)."]
    return "\n".join(lines) + "\n"


def check_out_folder(path: Path, flag: str) -> Path:
    """``path`` as the output folder: new, empty, or one an earlier ``repro`` wrote (its files are
    replaced); ``ConfigError`` for a folder holding other files."""
    from harness.rundir.runfolder import check_out

    check_out(path, flag, "folder", resumable=True)
    if path.is_dir() and any(path.iterdir()) and not (path / SUMMARY_JSON).is_file():
        raise ConfigError(f"{flag} {path} holds files, and not an earlier eos-chaos repro's ({SUMMARY_JSON}); "
                          f"{flag} takes a new folder, an empty one, or one an earlier repro wrote")
    return path


def write(r: Repro, out: Path) -> list[Path]:
    """Write ``REPORT.md``, ``repro.json`` and the excerpts into ``out`` (made if missing; an earlier
    repro's files there are removed first); the paths written."""
    _remove_earlier(out)
    make_folder(out)
    files = files_of(r)
    written = [write_output(out / REPORT_MD, report_md(r)),
               write_output(out / SUMMARY_JSON, orjson.dumps(summary(r, files), option=orjson.OPT_INDENT_2,
                                                            default=str).decode() + "\n")]
    if r.wire:
        written.append(write_output(out / WIRE_FILE, "".join(e.line + "\n" for e in r.wire)))
    if r.history_lines:
        written.append(write_output(out / HISTORY_FILE, "\n".join(r.history_lines) + "\n"))
    for lg in r.logs:
        make_folder((out / lg.file).parent)
        written.append(write_output(out / lg.file, "\n".join(lg.clipped.lines) + "\n"))
    c = r.checked
    if c is not None and c.minimal:
        written.append(write_output(out / CHECKED_FILE, c.minimal))
    elif r.minimal:
        written.append(write_output(out / MINIMAL_FILE, r.minimal))
    if c is not None:
        written += [write_output(out / CANDIDATES_FILE, c.table),
                    write_output(out / MINIMIZE_JSON, orjson.dumps(c.record, option=orjson.OPT_INDENT_2,
                                                                   default=str).decode() + "\n")]
    return written


def _remove_earlier(out: Path) -> None:
    """An earlier repro's files in ``out`` (as its ``repro.json`` lists them): another run's excerpts
    must not stay beside this one's."""
    earlier = read_json_object(out / SUMMARY_JSON) if out.is_dir() else None
    for name in (earlier or {}).get("files") or []:
        p = (out / str(name)).resolve()
        if p.is_relative_to(out.resolve()) and p.is_file():
            p.unlink()
