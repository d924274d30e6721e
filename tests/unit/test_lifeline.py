"""A workload started through the lifeline stops by itself when its runner is SIGKILLed: at once
when it acts on its stop flag, after the grace (with its whole process group) when it does not."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from clusters.backends import procs
from harness.base import lifeline
from harness.base.wait import wait_until

ROOT = Path(__file__).resolve().parents[2]

#: Starts one workload-like child through the lifeline, as the supervisor does, prints its pid, waits.
RUNNER = textwrap.dedent("""\
    import os, sys, time
    from pathlib import Path
    from clusters.backends import procs
    from harness.base import lifeline
    line = lifeline.handoff()
    p = procs.spawn([sys.executable, "-c", sys.argv[1], sys.argv[2]], Path(sys.argv[2]) / "child.log", cwd=Path.cwd(),
                    env={**os.environ, **line.env}, pass_fds=line.pass_fds)
    print(p.pid, flush=True)
    time.sleep(600)
""")
#: Checks its stop flag between operations, as every workload loop does.
COOPERATIVE = textwrap.dedent("""\
    import sys, time
    from pathlib import Path
    from harness.workloads.common import StopFlag
    stop = StopFlag(3600)
    while not stop:
        time.sleep(0.05)
    (Path(sys.argv[1]) / "stopped").write_text("by its stop flag")
""")
#: Stuck in an operation that never ends, with a grandchild in its group (as a Spark driver's JVM).
STUCK = textwrap.dedent("""\
    import subprocess, sys, time
    from pathlib import Path
    from harness.workloads.common import StopFlag
    StopFlag(3600)
    g = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    (Path(sys.argv[1]) / "grandchild").write_text(str(g.pid))
    time.sleep(600)
""")


def _start_runner(child: str, tmp_path: Path) -> tuple[subprocess.Popen[str], int]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    runner = subprocess.Popen([sys.executable, "-c", RUNNER, child, str(tmp_path)], env=env, cwd=ROOT,
                              stdout=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    assert runner.stdout is not None
    return runner, int(runner.stdout.readline())


def _kill_runner(runner: subprocess.Popen[str]) -> float:
    runner.kill()
    runner.wait(timeout=10)
    return time.monotonic()


def _gone_within(pid: int, seconds: float, tmp_path: Path) -> None:
    wait_until(lambda: not procs.alive(pid), timeout=seconds, what=f"pid {pid} to exit after its runner died",
               state=lambda: (tmp_path / "child.log").read_text() if (tmp_path / "child.log").exists() else "no log")


def test_child_stops_by_its_flag_when_the_runner_is_killed(tmp_path: Path) -> None:
    runner, child = _start_runner(COOPERATIVE, tmp_path)
    try:
        time.sleep(1.0)
        assert procs.alive(child), "a child whose runner lives must go on"
        _kill_runner(runner)
        _gone_within(child, 3.0, tmp_path)
        assert (tmp_path / "stopped").read_text() == "by its stop flag"
        assert "lifeline closed" in (tmp_path / "child.log").read_text()
    finally:
        runner.kill()
        procs.signal_pid(child, signal.SIGKILL)


def test_child_stuck_in_an_operation_is_ended_with_its_group_after_the_grace(tmp_path: Path) -> None:
    runner, child = _start_runner(STUCK, tmp_path)
    grandchild = 0
    try:
        wait_until(lambda: (tmp_path / "grandchild").exists(), timeout=30, what="the child's grandchild to start")
        grandchild = int((tmp_path / "grandchild").read_text())
        killed_at = _kill_runner(runner)
        _gone_within(child, lifeline.LOST_GRACE_S + 3.0, tmp_path)
        assert time.monotonic() - killed_at >= lifeline.LOST_GRACE_S - 0.5, "the operation in hand gets its grace"
        _gone_within(grandchild, 3.0, tmp_path)
        assert not (tmp_path / "stopped").exists()
    finally:
        runner.kill()
        for pid in (child, grandchild):
            if pid:
                procs.signal_pid(pid, signal.SIGKILL)


def test_a_process_without_a_line_is_not_watched(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(lifeline.ENV_FD, raising=False)
    assert lifeline.watch(lambda: None) is False


def test_a_line_that_names_no_open_fd_is_refused_with_a_warning(monkeypatch: pytest.MonkeyPatch,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv(lifeline.ENV_FD, "987654")
    assert lifeline.watch(lambda: None) is False
    assert "names no open file descriptor" in caplog.text
    assert lifeline.ENV_FD not in os.environ
