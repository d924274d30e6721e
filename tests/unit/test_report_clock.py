"""The report's wall clock: t=0 anchored on run.log's line at the schedule's start, not on the
"workloads started" line that comes before the readiness wait."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from harness.report.clock import clock_of
from harness.rundir.journal import Journal

RUN_LOG = """\
2026-11-25 20:19:56,539 INFO    MainThread harness.run.runner: using the local cluster that is up
2026-11-25 20:19:57,122 INFO    MainThread harness.run.runner: workloads started: app-0, app-feeder
2026-11-25 20:19:59,755 INFO    MainThread harness.run.readiness: workloads ready: app-0 after 2.6s
2026-11-25 20:19:59,755 INFO    MainThread harness.run.runner: running 40s
2026-11-25 20:20:05,756 INFO    fault-kill@6.0 chaos.nemesis: nemesis: kill {'node': 2}
"""


def _journal(started: str = "2026-11-25T20:19:56+0000") -> Journal:
    return Journal(scenario="s", source="s", resolved={}, seed=1, backend="local", started=started, schedule_t0_s=3.216)


def test_t0_is_the_running_line_not_the_workloads_started_line(tmp_path: Path) -> None:
    (tmp_path / "run.log").write_text(RUN_LOG)
    clock = clock_of(tmp_path, _journal())
    assert clock.wall_zero == datetime(2026, 11, 25, 20, 19, 59, 755000)
    assert "schedule's start" in clock.wall_basis


def test_an_older_run_log_anchors_on_its_workloads_started_line(tmp_path: Path) -> None:
    (tmp_path / "run.log").write_text("2026-11-20 06:18:19,004 INFO    MainThread harness.runner: workloads started: p\n")
    assert clock_of(tmp_path, _journal()).wall_zero == datetime(2026, 11, 20, 6, 18, 19, 4000)


def test_without_the_line_the_journal_start_to_the_second(tmp_path: Path) -> None:
    (tmp_path / "run.log").write_text(RUN_LOG.replace("running 40s", "something else"))
    clock = clock_of(tmp_path, _journal())
    assert clock.wall_zero == datetime(2026, 11, 25, 20, 19, 59, 216000)
    assert "journal" in clock.wall_basis
