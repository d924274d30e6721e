"""`make test`'s two parts (tests/suite.sh) and the small CPU share the unit part gets beside the
real-cluster part (tests/low_cpu.sh).

The suite script is driven with stand-in tools in a BIN folder of their own (a ruff, a mypy and a
pytest that exit as told and record how they were called): what is judged is the script's own
logic, which part runs, what runs again alone, and the exit code. The cgroup is the kernel's."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "tests" / "suite.sh"
LOW_CPU = REPO / "tests" / "low_cpu.sh"

# A pytest that exits with $UNIT_RC for the unit part, $RERUN_RC for the run again alone (--lf),
# $COMPOSE_RC for the compose backend's real-cluster session and $CHAOS_RC for any other, printing a
# FAILED line when it fails, as pytest's summary does. Each call is recorded with the backends it got.
FAKE_PYTEST = """#!/usr/bin/env bash
echo "backends=${EOS_CHAOS_BACKENDS:-} $*" >> "$CALLS"
case "$*" in
  *--lf*) rc=$RERUN_RC ;;
  *"not chaos"*) rc=$UNIT_RC ;;
  *) [ "${EOS_CHAOS_BACKENDS:-}" = compose ] && rc=$COMPOSE_RC || rc=$CHAOS_RC ;;
esac
[ "$rc" = 1 ] && echo "FAILED tests/unit/test_x.py::test_waits - a deadline"
echo "ERROR    kafka.net.transport:transport.py:125 a captured log line, not a failure"
[ "$rc" = 1 ] && echo "=== 1 failed, 2 passed in 0.10s ===" || echo "=== 3 passed in 0.10s ==="
exit $rc
"""


def _suite(tmp_path: Path, *, parts: str = "beside", lint: int = 0, unit: int = 0, rerun: int = 0,
           chaos: int = 0, compose: int = 0, backends: str = "local,compose") -> tuple[int, str, list[str]]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, body in (("pytest", FAKE_PYTEST), ("ruff", f"#!/bin/sh\nexit {lint}\n"), ("mypy", "#!/bin/sh\nexit 0\n")):
        (bin_dir / name).write_text(body)
        (bin_dir / name).chmod(0o755)
    calls = tmp_path / "calls"
    calls.write_text("")
    work = tmp_path / "work"
    (work / "tests").mkdir(parents=True, exist_ok=True)
    # a clean environment: make test's own (ENGINE_FIRST, JUNIT, exported functions) must not leak in
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}
    env |= {"BIN": str(bin_dir), "TEST_PARTS": parts, "PYTEST_ARGS": "-q -k waits",
           "LOW_CPU": "env", "CALLS": str(calls), "UNIT_RC": str(unit), "RERUN_RC": str(rerun),
           "CHAOS_RC": str(chaos), "COMPOSE_RC": str(compose), "EOS_CHAOS_BACKENDS": backends}
    proc = subprocess.run(["bash", str(SUITE)], cwd=work, env=env, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    return proc.returncode, proc.stdout, calls.read_text().splitlines()


def test_a_unit_test_that_failed_beside_and_passes_alone_is_listed_and_the_suite_passes(tmp_path: Path) -> None:
    rc, out, calls = _suite(tmp_path, unit=1, rerun=0)
    assert rc == 0, out
    assert "failed beside the real-cluster tests" in out and "  FAILED tests/unit/test_x.py::test_waits" in out, out
    assert "passed alone: starved there, not broken" in out, out
    rerun = [c for c in calls if "--lf" in c]
    assert len(rerun) == 1 and "-k waits" in rerun[0] and "cache_dir=.pytest_cache/unit-part" in rerun[0], calls


def test_its_twin_failing_alone_too_fails_the_suite(tmp_path: Path) -> None:
    rc, out, _ = _suite(tmp_path, unit=1, rerun=1)
    assert rc == 1 and "lint and unit tests exit 1" in out, out
    assert "passed alone" not in out, out


def test_a_failure_with_nothing_recorded_to_run_again_is_not_taken_for_a_pass(tmp_path: Path) -> None:
    rc, out, _ = _suite(tmp_path, unit=1, rerun=5)
    assert rc == 1 and "recorded no failed test to run again" in out, out


@pytest.mark.parametrize("parts", ["serial", "parallel"])
def test_only_the_starved_part_runs_again(tmp_path: Path, parts: str) -> None:
    rc, out, calls = _suite(tmp_path, parts=parts, unit=1, rerun=0)
    assert rc == 1 and not [c for c in calls if "--lf" in c], (out, calls)


def test_a_lint_failure_fails_the_suite_and_is_never_run_again(tmp_path: Path) -> None:
    rc, out, calls = _suite(tmp_path, lint=1, unit=1, rerun=0)
    assert rc == 1 and "lint failed" in out and "lint and unit tests exit 3" in out, out
    assert not [c for c in calls if "--lf" in c], calls


def test_a_real_cluster_failure_fails_the_suite_and_both_parts_ran(tmp_path: Path) -> None:
    rc, out, calls = _suite(tmp_path, chaos=1)
    assert rc == 1 and "real-cluster tests exit 1" in out, out
    assert len(calls) == 3, calls  # the unit tests, and the two backends' sessions


@pytest.mark.parametrize(("parts", "part", "log"), [("beside", "chaos", "chaos-tests.log"),
                                                   ("beside", "compose", "chaos-compose.log"),
                                                   ("serial", "chaos", "chaos-tests.log"),
                                                   ("serial", "unit", "unit-tests.log")])
def test_what_failed_is_said_again_at_the_end_of_the_output(tmp_path: Path, parts: str, part: str, log: str) -> None:
    # a CI shows the output's tail, and beside, the unit part's log came after the real-cluster tests:
    # CI said "real-cluster tests exit 1" and nothing of which (stop 48)
    rc, out, _ = _suite(tmp_path, parts=parts, **{part: 1})  # type: ignore[arg-type]
    tail = out.split("how each part's pytest sessions ended")[-1]
    assert rc == 1 and f"  {log}: FAILED tests/unit/test_x.py::test_waits - a deadline" in tail, out
    assert f"  {log}: === 1 failed, 2 passed in 0.10s ===" in tail, out
    # its clean twin: every session's count, no failure
    rc, out, _ = _suite(tmp_path, parts=parts)
    tail = out.split("how each part's pytest sessions ended")[-1]
    assert rc == 0 and "FAILED" not in tail and f"  {log}: === 3 passed in 0.10s ===" in tail, out
    assert "captured log line" not in tail, out  # a log's ERROR lines are not pytest's (run 55)


@pytest.mark.parametrize("parts", ["beside", "parallel"])
def test_side_by_side_each_backend_is_a_session_of_its_own_and_either_failing_fails_the_suite(
        tmp_path: Path, parts: str) -> None:
    rc, out, calls = _suite(tmp_path, parts=parts)
    assert rc == 0, out
    chaos = sorted(c.split()[0] for c in calls if "not chaos" not in c)
    assert chaos == ["backends=compose", "backends=local"], calls
    assert "the compose backend's real-cluster tests run beside the local backend's" in out, out
    rc, out, _ = _suite(tmp_path, parts=parts, compose=1)
    assert rc == 1 and "the local backend's real-cluster tests exit 0, the compose backend's 1" in out, out
    # a selection that leaves one backend's session empty is not a failure, both empty is exit 5
    assert _suite(tmp_path, parts=parts, compose=5)[0] == 0
    assert _suite(tmp_path, parts=parts, chaos=5, compose=5, unit=5)[0] == 5


@pytest.mark.parametrize(("parts", "backends", "sessions"), [("serial", "local,compose", ["backends=local,compose"]),
                                                            ("beside", "local", ["backends=local"]),
                                                            ("beside", "local,compose,external",
                                                             ["backends=compose", "backends=local,external"])])
def test_one_session_runs_what_cannot_be_split(tmp_path: Path, parts: str, backends: str, sessions: list[str]) -> None:
    rc, out, calls = _suite(tmp_path, parts=parts, backends=backends)
    assert rc == 0, out
    assert sorted(c.split()[0] for c in calls if "not chaos" not in c) == sessions, calls


def test_a_selection_that_leaves_both_parts_empty_is_exit_5_and_one_part_empty_is_fine(tmp_path: Path) -> None:
    assert _suite(tmp_path, unit=5, chaos=5, compose=5)[0] == 5
    assert _suite(tmp_path, unit=5, chaos=0)[0] == 0


def test_an_unknown_parts_value_is_exit_2_naming_the_allowed(tmp_path: Path) -> None:
    rc, out, calls = _suite(tmp_path, parts="both")
    assert rc == 2 and "allowed: serial, parallel, beside" in out and calls == [], out


def _can_make_a_cpu_cgroup() -> bool:
    return subprocess.run([str(LOW_CPU), "--check"], capture_output=True, timeout=30).returncode == 0


@pytest.mark.skipif(not _can_make_a_cpu_cgroup(), reason="no CPU cgroup can be made here (not root, or no cpu controller)")
def test_a_command_runs_in_a_cpu_cgroup_of_an_eighth_weight_which_is_removed_after() -> None:
    # the command reads its own cgroup, and the weight of it
    script = ("line=$(grep -E ':(cpu|cpu,cpuacct|cpuacct,cpu)?:|^0::' /proc/self/cgroup | grep -m1 low-cpu); "
              "echo \"$line\"; d=$(awk '$3==\"cgroup\" && $4 ~ /(^|,)cpu(,|$)/ {print $2; exit}' /proc/mounts); "
              "[ -z \"$d\" ] && d=$(awk '$3==\"cgroup2\" {print $2; exit}' /proc/mounts); "
              "cat \"$d${line##*:}\"/cpu.shares 2>/dev/null || cat \"$d${line##*:}\"/cpu.weight; exit 7")
    proc = subprocess.run([str(LOW_CPU), "bash", "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 7, proc  # the command's own exit code
    line, weight = proc.stdout.split()
    assert "eos-chaos-low-cpu-" in line and weight in ("128", "12"), proc.stdout
    group = line.split(":")[-1]
    assert not any(Path(m).joinpath(group.lstrip("/")).exists()
                   for m in ("/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup")), group


def _marked(argv: list[str]) -> list[int]:
    """The processes running exactly ``argv`` (not the wrapper nor the shell that name it in theirs)."""
    want = "\0".join(argv) + "\0"
    out = []
    for p in Path("/proc").iterdir():
        try:
            if p.name.isdigit() and (p / "cmdline").read_bytes().decode() == want:
                out.append(int(p.name))
        except OSError:
            continue
    return out


@pytest.mark.skipif(not _can_make_a_cpu_cgroup(), reason="no CPU cgroup can be made here (not root, or no cpu controller)")
def test_a_sigterm_to_the_wrapper_ends_the_commands_children_too() -> None:
    from harness.base.wait import wait_until

    # a `bash -c` ended by SIGTERM leaves its child running; the wrapper signals the whole group
    child = ["sleep", "2999.25"]
    wrapper = subprocess.Popen([str(LOW_CPU), "bash", "-c", f"{' '.join(child)}; true"])
    try:
        wait_until(lambda: len(_marked(child)) > 0, timeout=30, what="the command's child to start")
        wrapper.terminate()
        wrapper.wait(timeout=60)
        wait_until(lambda: not _marked(child), timeout=30, what="the command's child to end",
                   state=lambda: f"still running: {_marked(child)}")
    finally:
        for pid in _marked(child):
            os.kill(pid, 9)
