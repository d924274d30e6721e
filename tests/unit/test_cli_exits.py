"""How ``eos-chaos`` ends, as a process (no cluster): the one exit-code table at the end of every
``--help``; a reader that closes the pipe early changes no code; a Ctrl-C while the modules load is
one line and 130; JSON is never coloured, even on a terminal; ``bench checker`` bounds ``--values``
and removes its temporary folder when it is signalled. The real ``.venv/bin/eos-chaos`` runs in a
subprocess where the process is what is tested (signals, pipes, a terminal)."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer

from harness.base.errors import HarnessError
from harness.cli import app, exits, guard, summary
from tests.chaos.cli_helpers import sigint_on
from tests.unit.test_cli import _restore_logging, cli  # noqa: F401 - the fixture puts the loggers back after each invocation

CLI = str(Path(sys.executable).parent / "eos-chaos")
#: Long enough for the slowest command here on a busy 2-core machine; none waits on anything.
DEADLINE_S = 60.0


def isolated_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment of a subprocess that can touch nothing of this machine's: no cluster record,
    its own results folder and temporary folder."""
    for d in ("state", "results", "tmp"):
        (tmp_path / d).mkdir(exist_ok=True)
    return {**os.environ, "EOS_CHAOS_STATE": str(tmp_path / "state"), "EOS_CHAOS_RESULTS": str(tmp_path / "results"),
            "TMPDIR": str(tmp_path / "tmp"), **extra}


# ---- one table, at the end of every help ----

def _paths(cmd: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every command and group of the click tree (typer's own click), as the words that name it."""
    yield path
    for name, sub in getattr(cmd, "commands", {}).items():  # a group's
        yield from _paths(sub, (*path, name))


def test_every_commands_help_ends_with_the_exit_code_table() -> None:
    paths = list(_paths(typer.main.get_command(app)))
    assert len(paths) >= 25 and ("cluster", "status") in paths and ("bench", "checker") in paths, paths
    table = exits.table_lines()
    for path in paths:
        r = cli(*path, "--help")
        assert r.exit_code == 0, (path, r.output)
        lines = [line.strip() for line in r.stdout.splitlines() if line.strip()]
        assert lines[-len(table):] == table, f"eos-chaos {' '.join(path)} --help ends with {lines[-len(table):]}"


def test_every_code_the_cli_gives_is_in_the_table() -> None:
    codes = {code for code, _ in exits.TABLE}
    assert codes == {0, 1, 2, 3, 130}
    assert {*summary.EXIT_CODES.values(), HarnessError.exit_code, guard.EXIT_INTERRUPTED, guard.EXIT_INTERNAL} <= codes


# ---- cluster status: no cluster is not a finding ----

def test_cluster_status_with_no_cluster_is_exit_2_and_says_so_in_its_help(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EOS_CHAOS_STATE", str(tmp_path / "state"))
    r = cli("cluster", "status", "--backend", "compose")
    assert r.exit_code == 2 and "no compose cluster is up" in r.stdout, r.output
    assert "Exit 2: no cluster of the backend is up" in " ".join(cli("cluster", "status", "--help").stdout.split())


# ---- a reader that closes the pipe early ----

def _to_a_closed_pipe(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``eos-chaos ARGS | head -c0``, made certain: the pipe's reader is gone before the command
    writes, so every write to stdout fails (EPIPE), however little it prints."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run([CLI, *args], stdout=write, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                              env=env, timeout=DEADLINE_S, check=False)
    finally:
        os.close(write)


@pytest.mark.parametrize(("args", "code"), [
    (["scenarios", "--json"], 0),  # the command's own code: it did its work
    (["cluster", "status", "--json"], 2),  # no cluster: its own code, not the pipe's
    (["check", "{dup}"], 1),  # a finding stays a finding
])
def test_a_reader_that_leaves_early_changes_no_exit_code_and_prints_no_traceback(args: list[str], code: int,
                                                                                 tmp_path: Path) -> None:
    if "{dup}" in args:
        from tests.unit.test_report import make_run

        args = [str(make_run(tmp_path, "duplicate", "dup")) if a == "{dup}" else a for a in args]
    r = _to_a_closed_pipe(args, isolated_env(tmp_path))
    assert r.returncode == code, r.stderr
    assert "Traceback" not in r.stderr and "BrokenPipe" not in r.stderr and "internal error" not in r.stderr, r.stderr


# ---- Ctrl-C while the modules load ----

# A suite started in the background (``make test &``, a CI runner's job) hands its children SIGINT
# ignored, and an ignored Ctrl-C is what a background job should get (eos-chaos keeps it so): these
# children get SIGINT at its default, as a command typed at a terminal does (tests/chaos/cli_helpers.py).
as_at_a_terminal = sigint_on


#: What ``-X importtime`` writes before each import's figures (PYTHONPROFILEIMPORTTIME=1).
IMPORT_TIME = "import time:"


@pytest.mark.parametrize("delay", [0.0, 0.1, 0.2])
def test_ctrl_c_while_the_command_loads_is_one_line_and_exit_130(delay: float, tmp_path: Path) -> None:
    """The console script imports the commands' modules (about a second) before ``main`` could
    catch anything; they now load inside it. The delays count from the console script's first
    import of ours (``harness.cli``, as ``-X importtime`` reports it): before that the interpreter
    itself is starting (``site``), which a loaded machine can stretch past any fixed delay, and a
    Ctrl-C there is the interpreter's, not the command's."""
    env = {**isolated_env(tmp_path), "PYTHONPROFILEIMPORTTIME": "1"}
    # unbuffered: communicate() below reads the pipe itself, and a buffered reader here had read past
    # the line it returned, so the rest began inside an import's line ("ecoder", not a line of ours)
    p = subprocess.Popen([CLI, "scenarios"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                         bufsize=0, env=env, preexec_fn=as_at_a_terminal)
    assert p.stderr is not None
    before = []
    while line := p.stderr.readline().decode():  # bounded: the process ends, or reaches harness.cli
        before.append(line)
        if line.startswith(IMPORT_TIME) and line.rstrip().endswith("harness.cli"):
            break
    time.sleep(delay)
    p.send_signal(signal.SIGINT)
    out, rest = (b.decode() for b in p.communicate(timeout=DEADLINE_S))
    err = "".join(line for line in [*before, *rest.splitlines(keepends=True)] if not line.startswith(IMPORT_TIME))
    assert p.returncode == 130, (out, err)
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert len(err.strip().splitlines()) == 1 and "interrupted" in err, err


# ---- JSON on a terminal ----

def _on_a_terminal(args: list[str], env: dict[str, str]) -> tuple[int, str]:
    """``eos-chaos ARGS`` with stdout a pseudo-terminal (as a person runs it): exit code, stdout."""
    leader, follower = pty.openpty()
    try:
        p = subprocess.Popen([CLI, *args], stdout=follower, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env)
        os.close(follower)
        follower = -1
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the terminal's other end is closed, the command is over
                break
            if not chunk:
                break
            chunks.append(chunk)
        p.wait(timeout=DEADLINE_S)
        return p.returncode, b"".join(chunks).decode()
    finally:
        os.close(leader)
        if follower != -1:
            os.close(follower)


@pytest.mark.parametrize("force", [{}, {"FORCE_COLOR": "1"}])
def test_json_on_a_terminal_has_no_colour_codes(force: dict[str, str], tmp_path: Path) -> None:
    code, said = _on_a_terminal(["cluster", "status", "--json"], isolated_env(tmp_path, TERM="xterm-256color", **force))
    assert code == 2, said
    assert "\x1b[" not in said, repr(said)
    assert json.loads(said) == {"backend": "local", "up": False, "nodes": [], "spark": None}


# ---- bench checker: --values bounded, its temporary folder removed when signalled ----

@pytest.mark.parametrize("values", ["100000001", "1000000000000"])
def test_bench_checker_refuses_more_than_100m_values_before_anything(values: str) -> None:
    r = cli("bench", "checker", "--values", values)
    assert r.exit_code == 2, r.output
    assert "--values" in r.output and "100000000" in r.output


def test_bench_checker_on_the_spark_engine_without_pyspark_is_exit_2_naming_the_extra(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Refused before a history is built, not a measuring step's traceback. Its twin: the default
    engine does not need PySpark (the --values test above gets as far as its bound)."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pyspark" else real(name, *a))
    r = cli("bench", "checker", "--engine", "spark", "--values", "1000")
    assert r.exit_code == 2, r.output
    assert "needs PySpark" in r.output and "eos-chaos[spark]" in r.output and "Traceback" not in r.output


def test_bench_checker_help_states_the_bound() -> None:
    assert "at most 100M" in " ".join(cli("bench", "checker", "--help").stdout.split())


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signalled_bench_checker_removes_its_temporary_folder_and_exits_130(sig: signal.Signals, tmp_path: Path) -> None:
    env = isolated_env(tmp_path)
    tmp = tmp_path / "tmp"
    # runs enough that the benchmark is still going when its first folder appears
    p = subprocess.Popen([CLI, "bench", "checker", "--values", "1000", "--runs", "10"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=env, preexec_fn=as_at_a_terminal)
    try:
        deadline = time.monotonic() + DEADLINE_S
        while not list(tmp.glob("eos-chaos-bench-checker-*")):
            assert p.poll() is None and time.monotonic() < deadline, "no temporary folder appeared"
            time.sleep(0.02)
        p.send_signal(sig)
        out, err = p.communicate(timeout=DEADLINE_S)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=DEADLINE_S)
    assert p.returncode == 130, (out, err)
    assert "Traceback" not in err, err
    assert list(tmp.iterdir()) == [], "the benchmark left its temporary folder"


def _marked(mark: str) -> list[int]:
    """The processes whose environment holds ``mark``: what a test's subprocess started, wherever it
    was reparented."""
    found = []
    for entry in os.scandir("/proc"):
        try:
            if entry.name.isdigit() and mark.encode() in Path(entry.path, "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue  # gone meanwhile, or not ours to read
    return found


def _spark_jvm(pids: list[int]) -> bool:
    """One of ``pids`` is a Spark JVM (its launcher done)."""
    def cmdline(pid: int) -> bytes:
        try:
            return Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return b""
    return any(b"org.apache.spark.deploy.SparkSubmit" in cmdline(pid) for pid in pids)


def test_sigterm_during_a_spark_check_takes_the_jvm_down_and_is_one_line_and_exit_130(tmp_path: Path) -> None:
    """A real local Spark session (slow: one case). It gave a py4j traceback and "internal error",
    or exit 130 with the JVM left running."""
    pytest.importorskip("pyspark")
    from tests.unit.test_report import make_run

    run = make_run(tmp_path, name="run")
    mark = f"EOS_CHAOS_TEST_MARK={tmp_path}"
    env = isolated_env(tmp_path, SPARK_LOCAL_IP="127.0.0.1", EOS_CHAOS_TEST_MARK=str(tmp_path))
    p = subprocess.Popen([CLI, "check", "--engine", "spark", str(run)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, text=True, env=env)
    try:
        deadline = time.monotonic() + 2 * DEADLINE_S  # a JVM's start, on a busy machine
        while not _spark_jvm(_marked(mark)):
            assert p.poll() is None and time.monotonic() < deadline, "no Spark JVM appeared"
            time.sleep(0.1)
        time.sleep(1.0)  # the session starting, or the check under way: either must end the same way
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=DEADLINE_S)
    finally:
        if p.poll() is None:  # it hung (the old code, with its JVM left): that is a failure too
            p.kill()
            p.wait(timeout=DEADLINE_S)
        end = time.monotonic() + 5.0  # an orphan's last moments
        while _marked(mark) and time.monotonic() < end:
            time.sleep(0.1)
        left = _marked(mark)
        for pid in left:  # not to leave them to the machine, whatever the verdict
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert p.returncode == 130, (out, err)
    assert "Traceback" not in err and "py4j" not in err and "internal error" not in err, err
    assert err.count("interrupted;") == 1 and "taken down" in err.split("interrupted;")[1], err
    assert left == [], "the Spark JVM was left running"


def test_take_down_ends_the_process_tree_pyspark_started_and_nothing_else() -> None:
    """``jvm_down.take_down`` without a JVM: children marked as PySpark's (``pyspark-shell`` in their
    command line) and what they started get SIGTERM, then SIGKILL; another child is left alone."""
    from harness.sparkjob import jvm_down

    if jvm_down.our_jvms():
        pytest.skip("a Spark session of this process is up (take_down would end it)")
    stubborn = "import signal, subprocess, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); " \
               "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"
    marked = subprocess.Popen([sys.executable, "-c", stubborn, "pyspark-shell"])
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        deadline = time.monotonic() + DEADLINE_S
        while len(jvm_down.our_jvms()) < 2:  # the marked one and its child
            assert time.monotonic() < deadline, "the marked process tree did not appear"
            time.sleep(0.05)
        tree = jvm_down.our_jvms()
        assert marked.pid in tree and other.pid not in tree
        assert sorted(jvm_down.take_down(deadline_s=1.0)) == sorted(tree)
        assert marked.poll() is not None and other.poll() is None
        grandchild = next(pid for pid in tree if pid != marked.pid)
        state = Path(f"/proc/{grandchild}/stat")
        assert not state.exists() or state.read_bytes().rsplit(b")", 1)[1].split()[0] == b"Z", "its child lives on"
    finally:
        for p in (marked, other):
            if p.poll() is None:
                p.kill()
            p.wait(timeout=DEADLINE_S)
