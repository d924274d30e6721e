"""The heal journal of an external cluster on real processes, no Kafka: ``sleep`` processes stand for
brokers. A change is on disk before its command runs; a runner SIGKILLed mid-fault leaves a paused
and a killed broker that ``eos-chaos cluster heal --inventory FILE`` puts back; replaying a change
already undone is harmless; a second runner on the same cluster is refused while the first lives."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from clusters.backends.external import inventory, node_heal
from clusters.backends.external.heal_journal import HealJournal, JournalBusy, NodeChanges, UndoStep, folder_for, replay
from clusters.backends.protocol import NodeState
from harness.cli import app
from tests.external_nodes import broker, local_inventory, pids_of, proc_state, sleepers

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "state"
    monkeypatch.setenv("EOS_CHAOS_STATE", str(d))
    return d


def _brokers(inv: inventory.Inventory, tmp_path: Path) -> dict[int, object]:
    return {n.id: broker(n, tmp_path / "kh") for n in inv.resolved()}


def test_the_intent_is_on_disk_before_the_command_runs(tmp_path: Path, state: Path) -> None:
    seen = tmp_path / "seen.jsonl"
    f = tmp_path / "inventory.yaml"
    inv0 = "name: intent\nnodes:\n  - {id: 1, host: h, listeners: {client: \"h:1\"}, control: {local: {}}, broker: "
    f.write_text(inv0 + "{commands: {status: \"echo up\", pause: \"true\"}}}\n")
    journal_file = folder_for(inventory.load(f), state) / "journal.jsonl"
    f.write_text(inv0 + f"{{commands: {{status: \"echo up\", pause: \"cat {journal_file} > {seen}\"}}}}}}\n")
    inv = inventory.load(f)
    j = HealJournal(folder_for(inv, state))
    j.lock()
    try:
        NodeChanges(j, _brokers(inv, tmp_path)).change(1, "pause", {"fault": "pause", "at": 12})  # type: ignore[arg-type]
    finally:
        j.unlock()
    lines = [json.loads(x) for x in seen.read_text().splitlines()]
    assert [(x["op"], x["node"], x["what"], x["detail"]) for x in lines] == [("apply", 1, "pause", {"fault": "pause", "at": 12})]
    assert [x["op"] for x in map(json.loads, journal_file.read_text().splitlines())] == ["apply", "done"]


RUNNER = """
import os, sys, time
from pathlib import Path
from clusters.backends.external import inventory, transport, lifecycle
from clusters.backends.external.heal_journal import HealJournal, NodeChanges, folder_for
inv = inventory.load(Path(sys.argv[1]))
brokers = {n.id: lifecycle.Broker(n, transport.for_node(n, Path("kh")), transport.control_for(n)) for n in inv.resolved()}
j = HealJournal(folder_for(inv))
j.lock()
changes = NodeChanges(j, brokers)
changes.change(1, "pause", {"fault": "pause"})
changes.change(2, "kill", {"fault": "kill"})
print("faulted", flush=True)
time.sleep(600)
"""


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The command as a user runs it: its own process (a heal after the runner's SIGKILL)."""
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=120, check=False)


def _cli_here(*args: str) -> Result:
    """The command in this process (typer's CliRunner): the same code, without a second interpreter's start."""
    return CliRunner(env={"COLUMNS": "300"}).invoke(app, list(args))


def test_a_runner_killed_mid_fault_is_healed_by_cluster_heal(tmp_path: Path, state: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "EOS_CHAOS_STATE": str(state)}
    with sleepers(2) as args:
        procs = [subprocess.Popen(["sleep", a]) for a in args]
        f = local_inventory(tmp_path, args)
        runner = subprocess.Popen([sys.executable, "-c", RUNNER, str(f)], stdout=subprocess.PIPE, text=True, env=env,
                                  cwd=tmp_path)
        try:
            assert runner.stdout is not None and runner.stdout.readline().strip() == "faulted"
            busy = _cli_here("cluster", "heal", "--inventory", str(f))  # the runner lives: refused
            assert busy.exit_code == 2 and f"held by pid {runner.pid}" in busy.output, busy.output
        finally:
            runner.send_signal(signal.SIGKILL)
            runner.wait()
        assert proc_state(procs[0].pid) == "T" and procs[1].wait(timeout=5) == -9  # left faulted

        dry = _cli_here("cluster", "heal", "--inventory", str(f), "--dry-run")
        assert dry.exit_code == 0 and "[dry-run] node 2 (local): sh -c" in dry.output, dry.output
        assert proc_state(procs[0].pid) == "T" and not pids_of(f"sleep {args[1]}")  # a dry run changes nothing

        r = _cli("cluster", "heal", "--inventory", str(f), env=env)
        assert r.returncode == 0, r.stdout + r.stderr
        assert proc_state(procs[0].pid) in "RS" and len(pids_of(f"sleep {args[1]}")) == 1  # resumed; started again
        assert "node 2: undo kill (change 3" in r.stdout and "node 1: undo pause (change 1" in r.stdout
        assert r.stdout.index("undo kill") < r.stdout.index("undo pause")  # newest first
        assert "every node up, nothing left to undo" in r.stdout and "journal healed; kept as" in r.stdout

        again = _cli_here("cluster", "heal", "--inventory", str(f))  # twice: harmless
        assert again.exit_code == 0 and ": undo " not in again.output, again.output
        assert len(pids_of(f"sleep {args[1]}")) == 1
        procs[0].kill()
        procs[0].wait()


def test_replaying_a_change_already_undone_is_harmless(tmp_path: Path, state: Path) -> None:
    with sleepers(2) as args:
        procs = [subprocess.Popen(["sleep", a]) for a in args]
        inv = inventory.load(local_inventory(tmp_path, args))
        brokers = _brokers(inv, tmp_path)
        j = HealJournal(folder_for(inv, state))
        j.lock()
        try:
            changes = NodeChanges(j, brokers)  # type: ignore[arg-type]
            changes.change(1, "pause")
            os.kill(procs[0].pid, signal.SIGCONT)  # healed behind the journal's back
            j.apply(2, "kill", (UndoStep(action="start"),))  # an intent whose kill never ran (a crash between)
            assert [a.what for a in j.open_changes()] == ["pause", "kill"]
            assert replay(j, brokers) == []  # type: ignore[arg-type]
            assert j.open_changes() == [] and procs[1].poll() is None  # node 2 left alone: it was up
            assert pids_of(f"sleep {args[1]}") == [procs[1].pid]  # not started a second time
            assert proc_state(procs[0].pid) in "RS"
            assert replay(j, brokers) == []  # type: ignore[arg-type]  # and again: nothing open, nothing run
            assert j.retire() is not None and not j.path.exists()
        finally:
            j.unlock()
            for p in procs:
                p.kill()
                p.wait()


def test_a_torn_last_line_is_set_aside_and_the_rest_replayed(tmp_path: Path, state: Path) -> None:
    with sleepers(1) as args:
        proc = subprocess.Popen(["sleep", args[0]])
        inv = inventory.load(local_inventory(tmp_path, args))
        j = HealJournal(folder_for(inv, state))
        j.lock()
        NodeChanges(j, _brokers(inv, tmp_path)).change(1, "pause")  # type: ignore[arg-type]
        with j.path.open("a") as f:
            f.write('{"v":1,"seq":3,"op":"apply","id":3,"ti')  # SIGKILL mid-write
        j.unlock()
        r = node_heal.heal(inv, state)
        assert r.left == [] and proc_state(proc.pid) in "RS"
        assert any("cannot be read (torn by a crash mid-write); set aside" in line for line in r.did)
        proc.kill()
        proc.wait()


def test_a_second_owner_is_refused_while_the_first_lives(tmp_path: Path, state: Path) -> None:
    inv = inventory.load(local_inventory(tmp_path, ["1"]))
    first, second = HealJournal(folder_for(inv, state)), HealJournal(folder_for(inv, state))
    first.lock()
    try:
        with pytest.raises(JournalBusy, match=f"held by pid {os.getpid()} on "):
            second.lock()
    finally:
        first.unlock()
    second.lock()  # free once the first lets go
    second.unlock()


def test_a_broker_that_cannot_start_is_left_named_and_exit_2(tmp_path: Path, state: Path) -> None:
    f = tmp_path / "inventory.yaml"
    f.write_text("name: nostart\nnodes:\n  - {id: 1, host: h, listeners: {client: \"h:1\"}, control: {local: {}}, "
                 "broker: {commands: {status: \"echo down\"}}}\n")
    r = node_heal.heal(inventory.load(f), state)
    assert r.left == ["node 1 (local) cannot start its broker: its inventory entry gives no preset that does and no "
                      "`commands.start`"], r.left
    assert node_heal.sweep({}).left == [] and NodeState.DOWN.value == "down"


def test_heal_of_a_cluster_already_whole_changes_nothing(tmp_path: Path, state: Path) -> None:
    with sleepers(1) as args:
        proc = subprocess.Popen(["sleep", args[0]])
        t0 = time.monotonic()
        r = node_heal.heal(inventory.load(local_inventory(tmp_path, args)), state)
        assert r.left == [] and r.did == ["node 1 (local): up"] and r.kept is None
        assert proc.poll() is None and time.monotonic() - t0 < 10
        proc.kill()
        proc.wait()
