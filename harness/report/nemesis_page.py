"""The report of a pytest test that used only the plugin's ``nemesis`` fixture (no eos-chaos
workload, so no history of transactions and no verdict): which faults ran when, the nodes' lanes,
whether the cluster was healed after them, and links to the logs of the cluster they hit.

The fixture leaves ``nemesis.json`` (what the test was, when it started on the history's clock, the
cluster and the heal's outcome) and ``history/nemesis.jsonl`` (the fault events) in its run folder.
Links to the cluster's logs are relative (``../<cluster run>/nodes/n1/server.log``): they work in the
results folder and in a zip of it."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

from harness.base.errors import ConfigError
from harness.report.data import fault_windows
from harness.report.jinja_env import ENV
from harness.report.logs import LogLink, log_links
from harness.rundir.runfolder import REPORT, read_json_object, unreadable, write_output

#: What the fixture records beside the fault events.
META_FILE = "nemesis.json"
EVENTS = Path("history") / "nemesis.jsonl"


def _events(run_dir: Path, zero_ns: int) -> list[dict[str, Any]]:
    """The fault events of ``history/nemesis.jsonl``, their times from the test's start."""
    out: list[dict[str, Any]] = []
    path = run_dir / EVENTS
    if not path.exists():
        return out
    try:
        text = path.read_text(encoding="utf-8", errors="replace")  # a bad byte spoils its line only
    except OSError as exc:
        raise unreadable(path, exc) from None
    for line in text.splitlines():
        try:
            op = json.loads(line)
        except ValueError:
            continue  # a line cut off by a killed process: the rest still tells the story
        if isinstance(op, dict) and op.get("f") == "fault" and isinstance(op.get("time"), int):
            out.append({"time": int(op["time"]) - zero_ns, "value": op.get("value") or {}})
    return out


def cluster_logs(run_dir: Path, cluster_dir: Path | None) -> list[LogLink]:
    """The cluster's logs as links relative to ``run_dir`` (the cluster's run folder is a sibling
    in the results folder), then the fault events themselves."""
    links = log_links(run_dir, cluster_dir)
    events = run_dir / EVENTS
    if events.exists():
        links.append(LogLink(quote(EVENTS.as_posix()), EVENTS.as_posix(), "the fault events", events.stat().st_size, events))
    return links


def render(run_dir: Path, title: str | None = None) -> str:
    from harness.report.plots import faults_svg

    meta = read_json_object(run_dir / META_FILE)
    if meta is None:
        raise ConfigError(f"{run_dir} has no {META_FILE}: not the run folder of a test's nemesis fixture")
    zero_ns = int(meta.get("t0_ns") or 0)
    faults = fault_windows(_events(run_dir, zero_ns))
    end_s = max([float(meta.get("ended_ns", zero_ns) - zero_ns) / 1e9, *(f.end_s or f.start_s for f in faults), 1.0])
    node_ids = sorted({n for f in faults for n in f.nodes} | {1, 2, 3})
    cluster_dir = Path(meta["cluster_dir"]) if meta.get("cluster_dir") else None
    return ENV.get_template("nemesis.html.j2").render(
        title=title or meta.get("test") or run_dir.name, meta=meta, faults=faults, end_s=end_s,
        timeline=faults_svg(faults, node_ids, end_s, f"seconds since the test began ({meta.get('started', '?')})"),
        logs=cluster_logs(run_dir, cluster_dir), generated=time.strftime("%Y-%m-%d %H:%M:%S %Z"))


def is_nemesis_run(run_dir: Path) -> bool:
    return (run_dir / META_FILE).is_file()


def write_nemesis_report(run_dir: Path, title: str | None = None, out: Path | None = None) -> Path:
    """Write ``run_dir/report.html`` (or ``out``) for a test's nemesis run folder, atomically;
    return its path. ``title``: default the test's id."""
    return write_output(out or run_dir / REPORT, render(run_dir, title))
