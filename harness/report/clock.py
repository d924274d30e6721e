"""The report's clock: which instant is t=0, and the wall-clock time of any instant of the history.

The history's own clock counts from the runner's start (``recorder.run_t0``), before the cluster
came up; the fault schedule (``eos-chaos run … --dry-run``, ``journal.schedule``) counts from the
moment the workloads were started and the nemesis began (``journal.schedule_t0_s``). The report
uses the schedule's zero whenever the run recorded it, so a fault planned ``at: 8`` shows up
near t=8 s on every figure and table, and planned and actual starts compare directly.

Wall-clock times (to line a report up with broker logs, which are stamped in local time) come
from ``run.log``'s "running Ns" line, written just before ``journal.schedule_t0_s`` is taken (in
runs made before the readiness wait: the "workloads started" line); without it, from
``journal.started`` (to the second, so up to a second early)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from harness.rundir.journal import Journal

#: What t=0 is when the run recorded its schedule's start; the dry-run plan says the same words.
SCHEDULE_ZERO = ("t=0 is when every workload is ready (its first finished transaction, copy or micro-batch) "
                 "and the nemesis begins its schedule (the zero of the dry-run plan)")
#: What t=0 is for runs made before the schedule's start was recorded.
RUNNER_ZERO = "t=0 is the runner's start (this run did not record when its schedule began)"
#: run.log's line just before ``journal.schedule_t0_s`` was taken (harness/run/runner.py: "running
#: 40s"; before the runner moved to harness/run/ and waited for its workloads to be ready, the
#: "workloads started" line of ``harness.runner``). The moved runner's "workloads started" line
#: comes before the readiness wait (seconds before t=0), so it is no anchor.
_STARTED_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) \S+ +\S+ "
                           r"(?:harness\.run\.runner: running \d+s$|harness\.runner: workloads started)")
_LOG_STAMP = "%Y-%m-%d %H:%M:%S,%f"


@dataclass(frozen=True)
class Clock:
    """Run-relative seconds and wall-clock times of history instants (ns on the history's clock)."""

    #: the history-clock ns that is t=0
    zero_ns: int
    #: what t=0 is, as the page says it
    basis: str
    #: the local wall-clock time at t=0, None when the folder records none
    wall_zero: datetime | None = None
    #: where ``wall_zero`` came from
    wall_basis: str = "not recorded"

    def s(self, t_ns: float) -> float:
        """Seconds since t=0 of history instant ``t_ns``."""
        return (t_ns - self.zero_ns) / 1e9

    @property
    def wall_zero_ns(self) -> int | None:
        """``wall_zero`` as ns since 1970-01-01 on the same (local) wall clock, for numpy's datetimes."""
        return None if self.wall_zero is None else (self.wall_zero - datetime(1970, 1, 1)) // timedelta(microseconds=1) * 1000

    def wall_at(self, t_s: float) -> datetime | None:
        """The local wall-clock time at report second ``t_s`` (None: unknown)."""
        return None if self.wall_zero is None else self.wall_zero + timedelta(seconds=t_s)

    def wall_text(self, t_s: float | None) -> str:
        """``06:18:26.087`` (milliseconds), or empty when unknown."""
        w = None if t_s is None else self.wall_at(t_s)
        return "" if w is None else w.strftime("%H:%M:%S.%f")[:-3]


def clock_of(run_dir: Path, journal: Journal | None) -> Clock:
    """The clock of the run in ``run_dir``: the schedule's zero if recorded, else the runner's start."""
    zero_s = journal.schedule_t0_s if journal is not None else None
    zero_ns = int(round(zero_s * 1e9)) if zero_s is not None else 0
    basis = SCHEDULE_ZERO if zero_s is not None else RUNNER_ZERO
    if zero_s is not None:
        basis += f"; the runner started {zero_s:.1f} s before (the cluster's start-up)"
    anchor = _workloads_started(run_dir / "run.log") if zero_s is not None else None
    if anchor is not None:
        return Clock(zero_ns, basis, anchor, "run.log's line at the schedule's start (to a few ms)")
    started = _journal_started(journal)
    if started is not None:
        return Clock(zero_ns, basis, started + timedelta(seconds=zero_ns / 1e9), "journal.json's start (to the second)")
    return Clock(zero_ns, basis)


def _workloads_started(run_log: Path) -> datetime | None:
    """The local time run.log stamped on its line at the schedule's start (``_STARTED_LINE``; the
    run's first 2000 lines)."""
    try:
        with run_log.open(encoding="utf-8", errors="replace") as f:
            for _, line in zip(range(2000), f):
                m = _STARTED_LINE.match(line)
                if m:
                    return datetime.strptime(m.group(1), _LOG_STAMP)
    except OSError:
        return None
    return None


def _journal_started(journal: Journal | None) -> datetime | None:
    try:
        return datetime.strptime(journal.started, "%Y-%m-%dT%H:%M:%S%z").replace(tzinfo=None) if journal else None
    except ValueError:
        return None
