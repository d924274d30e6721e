"""Two starts at once (``make test``'s two xdist workers, each starting a cluster of its own): one
start's reclaim must never kill a process the other has just spawned, before any record claims it
(CI once saw a node's storage format die with exit -9 so). Each "start" is a real process spawning
tagged ``sleep``s through ``procs.spawn`` while the other runs the reclaim a start runs; its twin:
when the spawning process has died, what it spawned is reclaimed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from clusters.backends import procs, reclaim

#: Rounds per start at least (then on until both have seen the other's processes): each spawns one detached, unrecorded process (as a ``cluster up`` or
#: ``--eos-keep`` start's storage formatters are) while the other start reclaims.
ROUNDS = 60
#: How long each round's process lives unrecorded: the storage format's window, shortened.
HOLD_S = 0.02
#: Both starts are past their imports and begin together, or give up (the test then fails).
READY_TIMEOUT_S = 20.0
RACE_TIMEOUT_S = 60.0

#: One start, run as ``python -c START <name> <prefix> <rounds> <folder> <mode>``. ``race``: each
#: round reclaims, spawns, holds, notes whether its process survived, stops it. ``crash``: spawns a
#: detached process and one it owns, prints their pids and dies by SIGKILL without stopping them.
START = r'''
import json, os, signal, sys, time
from pathlib import Path
from clusters.backends import procs, reclaim
from harness.base.wait import wait_until

name, prefix, rounds, folder, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4]), sys.argv[5]
mine = f"{prefix}{name}-"
everything = procs.tagged_processes
seen = set()  # the other start's processes this start's reclaims had in sight


def in_sight():
    """Only the race's processes: a reclaim here must never touch a real cluster's."""
    found = [t for t in everything() if t.cluster_id.startswith(prefix)]
    seen.update(t.pid for t in found if not t.cluster_id.startswith(mine))
    return found


procs.tagged_processes = in_sight
log = folder / f"{name}.log"
if mode == "crash":
    detached = procs.spawn(["sleep", "60"], log, cwd=folder, env=procs.tags(mine + "detached", 0))
    owned = procs.spawn(["sleep", "60"], log, cwd=folder, env=procs.tags(mine + "owned", os.getpid()))
    print(json.dumps([detached.pid, owned.pid]), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
(folder / f"ready-{name}").touch()
wait_until(lambda: len(list(folder.glob("ready-*"))) == 2, timeout=float(sys.argv[6]), what="the other start",
           interval=0.005)
killed = []
deadline = time.monotonic() + float(sys.argv[8])
i = 0
# at least ``rounds`` rounds, and on until both starts' reclaims have seen the other's processes (a
# fixed count let one start finish before the other began on a loaded machine: no race), or the deadline
while i < rounds or (len(list(folder.glob("seen-*"))) < 2 and time.monotonic() < deadline):
    if seen:
        (folder / f"seen-{name}").touch()
    reclaim.kill_processes(reclaim.dead_runs_processes("local"), "the race test")  # a start reclaims first
    p = procs.spawn(["sleep", "60"], log, cwd=folder, env=procs.tags(f"{mine}{i}", 0))  # no record claims it yet
    time.sleep(float(sys.argv[7]))
    if p.poll() is not None:
        killed.append({"round": i, "exit": p.returncode})
    p.kill()
    p.wait()
    i += 1
if seen:
    (folder / f"seen-{name}").touch()
print(json.dumps({"killed": killed, "seen": len(seen), "rounds": i}), flush=True)
'''


@pytest.fixture
def prefix(tmp_path: Path) -> Iterator[str]:
    """The cluster ids of this test's processes begin with it; whatever of them is left is killed."""
    ours = f"race-{uuid.uuid4().hex[:8]}-"
    yield ours
    for t in procs.tagged_processes():
        if t.cluster_id.startswith(ours):
            procs.kill_hard(t.pid, f"test process {t.pid}")


def _start(name: str, prefix: str, folder: Path, mode: str) -> subprocess.Popen[str]:
    env = dict(os.environ, EOS_CHAOS_STATE=str(folder / "state" / f"xdist-{name}"))  # no real record in sight
    return subprocess.Popen([sys.executable, "-c", START, name, prefix, str(ROUNDS), str(folder), mode,
                             str(READY_TIMEOUT_S), str(HOLD_S), str(RACE_TIMEOUT_S / 2)], env=env, stdout=subprocess.PIPE, text=True)


def test_a_start_never_kills_what_a_live_neighbour_start_just_spawned(tmp_path: Path, prefix: str) -> None:
    starts = {name: _start(name, prefix, tmp_path, "race") for name in ("gw0", "gw1")}
    try:
        said = {name: p.communicate(timeout=RACE_TIMEOUT_S)[0] for name, p in starts.items()}
    finally:
        for p in starts.values():
            p.kill()
            p.wait()
    for name, p in starts.items():
        assert p.returncode == 0, f"{name} exited {p.returncode}: {said[name]}"
        report = json.loads(said[name].strip().splitlines()[-1])
        assert report["killed"] == [], f"{name}'s processes were killed under it: {report['killed']}"
        # the race raced: the other start's unrecorded processes were in sight of this start's reclaims
        assert report["seen"] > 0, (f"{name}'s reclaims never saw the other start's processes in {report['rounds']} "
                                    f"rounds: no race happened")


def test_what_a_dead_start_spawned_is_reclaimed(tmp_path: Path, prefix: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EOS_CHAOS_STATE", str(tmp_path / "state"))  # no record claims anything
    everything = procs.tagged_processes
    monkeypatch.setattr(procs, "tagged_processes", lambda: [t for t in everything() if t.cluster_id.startswith(prefix)])
    crashed = _start("gw0", prefix, tmp_path, "crash")
    out, _ = crashed.communicate(timeout=RACE_TIMEOUT_S)
    assert crashed.returncode == -9, out
    left = set(json.loads(out))
    assert all(procs.alive(pid) for pid in left) and {t.pid for t in procs.tagged_processes()} == left
    gone = reclaim.kill_processes(reclaim.dead_runs_processes("local"), "the race test")
    assert {item.pid for item in gone} == left
    assert not any(procs.alive(pid) for pid in left)


def test_a_process_is_known_by_its_pid_and_start_time() -> None:
    me = procs.this_process()
    assert me.alive and procs.ProcessId.parse(str(me)) is not None
    assert procs.ProcessId.parse(str(me)) == procs.ProcessId(me.pid, round(me.started, 3))
    # another process that got this pid later (or earlier) is not this one
    assert not procs.ProcessId(me.pid, me.started - 10 * procs.SAME_START_S).alive
    ended = subprocess.Popen(["sleep", "60"])
    gone = procs.ProcessId.of(ended.pid)
    ended.kill()
    ended.wait()
    assert gone is not None and not gone.alive
    for broken in ("", "123", "x:1.0", "12:y"):
        assert procs.ProcessId.parse(broken) is None, broken
