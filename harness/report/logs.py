"""The run's logs, one click from the report: relative links to the log files inside the run folder
(so they still work when the folder is zipped as a CI artifact), and for each anomaly placed in
time, the broker log lines that mention its partitions around that time.

Where the logs are (harness/rundir/runfolder.py, clusters/backends/local/, clusters/backends/compose/): ``run.log``,
``nodes/n<id>/server.log`` (+ ``stdout.log``), ``workloads/<name>.log``, ``toxiproxy.log``,
``wire.log``; ``history.txt`` (harness/history/text.py) is linked with them."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from urllib.parse import quote

from harness.report.clock import Clock
from harness.report.logclip import stamp_of
from harness.report.ops import Marked

#: What is linked, in this order: (glob inside the run folder, what it is).
LOG_FILES = (("run.log", "the harness's narrative of the run"), ("history.txt", "the history, one op a line"),
             ("nodes/*/server.log", "broker log"), ("nodes/*/stdout.log", "broker stdout"),
             ("workloads/*.log", "workload log"), ("toxiproxy.log", "Toxiproxy"), ("wire.log", "wire proxy"),
             ("spark-cluster/*.log", "Spark standalone cluster"))
#: Excerpts: lines this far either side of an anomaly's ops, at most ``MAX_LINES`` per broker, each cut.
AROUND_S = 10.0
MAX_LINES = 12
MAX_LINE_CHARS = 400
#: Matches kept in memory per broker and anomaly before the nearest ``MAX_LINES`` are picked.
_KEEP = 400


@dataclass(frozen=True)
class LogLink:
    href: str  # relative to the page's folder, URL-quoted
    path: str  # as shown
    what: str
    size: int
    file: Path  # where it is (to read excerpts from)


def log_links(run_dir: Path, cluster_dir: Path | None = None) -> list[LogLink]:
    """Every log file of the run that exists inside its folder (a link that would leave it, through
    a symbolic link, is left out); with ``cluster_dir``, the shared cluster's after them, linked
    relative to ``run_dir`` (both folders are in the results folder, and in a zip of it)."""
    links = _links_in(run_dir, Path("."))
    if cluster_dir is not None and cluster_dir.is_dir() and cluster_dir.resolve() != run_dir.resolve():
        links += _links_in(cluster_dir, Path(os.path.relpath(cluster_dir, run_dir)), shown=f"{cluster_dir.name}/")
    return links


def _links_in(folder: Path, up: Path, shown: str = "") -> list[LogLink]:
    root = folder.resolve()
    links: list[LogLink] = []
    for pattern, what in LOG_FILES:
        for path in sorted(folder.glob(pattern)):
            if path.is_file() and path.resolve().is_relative_to(root):
                rel = path.relative_to(folder).as_posix()
                links.append(LogLink(quote((up / rel).as_posix()), shown + rel, what, path.stat().st_size, path))
    return links


@dataclass
class Excerpt:
    """Broker log lines mentioning an anomaly's partitions around its time."""

    label: str  # the anomaly's A<n>
    log: LogLink
    partitions: list[str]
    lines: list[str] = field(default_factory=list)


def excerpts(run_dir: Path, marked: list[Marked], clock: Clock, cluster_dir: Path | None = None) -> list[Excerpt]:
    """For each anomaly that names a partition, the broker log lines (from each ``server.log``)
    that mention it within ``AROUND_S`` of its ops; none without wall-clock times."""
    targets = [m for m in marked if m.partitions]
    if clock.wall_zero is None or not targets:
        return []
    found: list[Excerpt] = []
    for log in (lk for lk in log_links(run_dir, cluster_dir) if lk.path.endswith("/server.log")):
        found += _scan(log.file, log, targets, clock)
    return [e for e in found if e.lines]


def partitions_named(names: list[str]) -> str:
    """A regular expression finding any of the partition names ``names`` (``topic-3``) in a line:
    a partition's name, not a prefix of another's (t-1 in t-10) or the tail of a longer topic's."""
    return r"(?<![\w.-])(?:" + "|".join(map(re.escape, names)) + r")(?!\d)"


@dataclass
class _Target:
    excerpt: Excerpt
    pattern: re.Pattern[str]
    lo: datetime
    hi: datetime
    at: datetime
    hits: list[tuple[datetime, str]] = field(default_factory=list)


def _target(m: Marked, log: LogLink, clock: Clock) -> _Target:
    names = [f"{t}-{p}" for t, p in m.partitions]
    pattern = re.compile(partitions_named(names))
    at, end = clock.wall_at(m.start_s), clock.wall_at(m.end_s)
    assert at is not None and end is not None  # excerpts() asked for a wall clock
    pad = timedelta(seconds=AROUND_S)
    return _Target(Excerpt(m.label, log, names), pattern, at - pad, end + pad, at)


def _scan(path: Path, log: LogLink, marked: list[Marked], clock: Clock) -> list[Excerpt]:
    """One pass over a broker log for all anomalies; stops past the last window (logs are in time order)."""
    targets = [_target(m, log, clock) for m in marked]
    last = max(t.hi for t in targets)
    stamp: datetime | None = None
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            for line in f:
                now = stamp_of(line)
                if now is not None:
                    stamp = now
                    if stamp > last:
                        break
                if stamp is None:
                    continue
                for t in targets:
                    if t.lo <= stamp <= t.hi and len(t.hits) < _KEEP and t.pattern.search(line):
                        t.hits.append((stamp, line.rstrip("\n")[:MAX_LINE_CHARS]))
    except OSError:
        return []
    for t in targets:
        nearest = sorted(t.hits, key=lambda h: abs((h[0] - t.at).total_seconds()))[:MAX_LINES]
        t.excerpt.lines = [text for _, text in sorted(nearest, key=lambda h: h[0])]
    return [t.excerpt for t in targets]
