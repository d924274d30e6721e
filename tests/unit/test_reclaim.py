"""What runs that are over left behind, without a cluster: real tagged processes (``sleep``) whose
owner is dead, alive or detached; each rule fires on a leftover and stays silent on its clean twin."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from clusters.backends import procs, state
from clusters.backends.backends import Backend, reclaim, would_reclaim
from clusters.backends.protocol import ClusterStatus, NodeState, NodeStatus
from clusters.backends.reclaim import Leftover, Owner, Reclaimed, dead_runs_processes, kill_processes
from tests.chaos.cli_helpers import started_here


@pytest.fixture(autouse=True)
def own_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spawned: list[subprocess.Popen[bytes]]) -> None:
    """A state folder of the test's own (no record of a real cluster claims or hides anything), and
    only the test's own processes in sight: a reclaim here must never touch a real cluster's. What a
    test spawns says it was spawned by a process that has exited, as a run that is over leaves it:
    the owner and record rules alone decide here (a live spawner's processes: test_reclaim_race.py)."""
    monkeypatch.setenv("EOS_CHAOS_STATE", str(tmp_path / "state"))
    everything = procs.tagged_processes
    monkeypatch.setattr(procs, "tagged_processes",
                        lambda: [t for t in everything() if t.pid in {p.pid for p in spawned}])
    ended = subprocess.Popen(["sleep", "60"])
    spawner = procs.ProcessId.of(ended.pid)
    ended.kill()
    ended.wait()
    monkeypatch.setattr(procs, "this_process", lambda: spawner)


@pytest.fixture
def dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


@pytest.fixture
def spawned(tmp_path: Path) -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for p in started:
        p.kill()
        p.wait()


def _tagged_sleep(spawned: list[subprocess.Popen[bytes]], tmp_path: Path, cluster_id: str, owner: int) -> int:
    p = procs.spawn(["sleep", "300"], tmp_path / f"{cluster_id}.log", cwd=tmp_path, env=procs.tags(cluster_id, owner))
    spawned.append(p)
    return p.pid


def _record(backend: str, cluster_id: str, owner: int | None) -> None:
    state.save(state.ClusterRecord(backend=backend, cluster_id=cluster_id, run_dir="/nowhere", kafka_version="4.0.0",
                                   net=1, port_base=19092, api_port=18474, owner_pid=owner))


def _pids(found: list[procs.Tagged]) -> set[int]:
    return {t.pid for t in found}


def test_a_dead_owners_processes_are_leftovers_a_live_owners_are_not(
        spawned: list[subprocess.Popen[bytes]], tmp_path: Path, dead_pid: int) -> None:
    orphan = _tagged_sleep(spawned, tmp_path, "crashed-run", dead_pid)
    running = _tagged_sleep(spawned, tmp_path, "running-run", 1)  # pid 1 never dies
    found = _pids(dead_runs_processes("local"))
    assert orphan in found and running not in found


def test_detached_processes_are_leftovers_unless_a_record_claims_them(
        spawned: list[subprocess.Popen[bytes]], tmp_path: Path) -> None:
    unclaimed = _tagged_sleep(spawned, tmp_path, "forgotten-cluster-up", 0)
    claimed = _tagged_sleep(spawned, tmp_path, "cluster-up", 0)
    _record("local", "cluster-up", None)
    found = _pids(dead_runs_processes("local"))
    assert unclaimed in found and claimed not in found


def test_a_cluster_an_xdist_workers_record_claims_is_spared_by_every_other_start(
        spawned: list[subprocess.Popen[bytes]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``pytest -n 2 --eos-keep``: each worker records its (detached) cluster in a state folder of
    its own; the other worker's start, and a later run's, must not take it for a leftover."""
    kept = _tagged_sleep(spawned, tmp_path, "gw1-kept", 0)
    forgotten = _tagged_sleep(spawned, tmp_path, "forgotten-cluster-up", 0)
    monkeypatch.setenv("EOS_CHAOS_STATE", str(tmp_path / "state" / "xdist-gw1"))
    _record("local", "gw1-kept", None)
    for here in ("xdist-gw0", "", "xdist-gw1"):  # the other worker, a run after the session, gw1 itself
        monkeypatch.setenv("EOS_CHAOS_STATE", str(tmp_path / "state" / here))
        found = _pids(dead_runs_processes("local"))
        assert kept not in found and forgotten in found, here


def test_a_cluster_of_another_state_folder_is_left_to_its_own_eos_chaos(
        spawned: list[subprocess.Popen[bytes]], tmp_path: Path, dead_pid: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another eos-chaos beside this one (another user's ``cluster up``, a test suite's clusters in
    their own state folder): no record of ours claims its detached cluster, and its crashed run's
    owner is dead, yet they are its own start's or ``cluster down``'s to take, never ours."""
    monkeypatch.setenv("EOS_CHAOS_STATE", str(tmp_path / "elsewhere"))
    beside = _tagged_sleep(spawned, tmp_path, "cluster-up-beside", 0)
    beside_crashed = _tagged_sleep(spawned, tmp_path, "crashed-beside", dead_pid)
    monkeypatch.setenv("EOS_CHAOS_STATE", str(tmp_path / "state"))
    forgotten = _tagged_sleep(spawned, tmp_path, "forgotten-cluster-up", 0)
    crashed = _tagged_sleep(spawned, tmp_path, "crashed-run", dead_pid)
    untold = subprocess.Popen(["sleep", "300"], env={k: v for k, v in procs.tags("older-eos-chaos", 0).items()
                                                      if k != procs.ENV_STATE})
    spawned.append(untold)  # tagged by an eos-chaos that did not say its state folder: as before, ours
    found = _pids(dead_runs_processes("local"))
    assert {forgotten, crashed, untold.pid} <= found and not {beside, beside_crashed} & found
    monkeypatch.setenv("EOS_CHAOS_STATE", str(tmp_path / "elsewhere"))  # the other eos-chaos takes its own
    found = _pids(dead_runs_processes("local"))
    assert {beside, beside_crashed} <= found and not {forgotten, crashed} & found


def test_started_here_judges_a_tests_own_state_folder_and_sees_its_leak(
        spawned: list[subprocess.Popen[bytes]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real-cluster tests' "nothing left" (tests/chaos/cli_helpers.started_here): another
    eos-chaos run up beside the suite is not the test's, and a process its own run leaked is."""
    monkeypatch.setenv("EOS_CHAOS_STATE", str(tmp_path / "beside"))
    _tagged_sleep(spawned, tmp_path, "cluster-up-beside", 0)
    iso_env = {"EOS_CHAOS_STATE": str(tmp_path / "iso" / ".." / "iso")}  # another spelling of the folder
    assert started_here(iso_env) == []
    monkeypatch.setenv("EOS_CHAOS_STATE", str(tmp_path / "iso"))
    leak = _tagged_sleep(spawned, tmp_path, "leaked-by-the-test", 0)
    assert [t.pid for t in started_here(iso_env)] == [leak]


def test_a_cluster_another_backend_records_is_left_to_that_backend(
        spawned: list[subprocess.Popen[bytes]], tmp_path: Path, dead_pid: int) -> None:
    compose_workload = _tagged_sleep(spawned, tmp_path, "compose-run", dead_pid)
    _record("compose", "compose-run", dead_pid)
    assert compose_workload not in _pids(dead_runs_processes("local"))
    assert compose_workload in _pids(dead_runs_processes("compose"))


def test_reclaim_kills_and_names_what_it_killed_and_a_preview_touches_nothing(
        spawned: list[subprocess.Popen[bytes]], tmp_path: Path, dead_pid: int) -> None:
    orphan = _tagged_sleep(spawned, tmp_path, "crashed-run", dead_pid)
    preview = would_reclaim(Backend.local, None)
    assert Leftover("process", "sleep 300", orphan) in preview.items and procs.alive(orphan)
    gone = reclaim(Backend.local)
    assert Leftover("process", "sleep 300", orphan) in gone.items
    assert not procs.alive(orphan)
    assert f"process sleep 300 (pid {orphan})" in gone.lines()


def test_compose_reclaims_a_dead_runs_host_processes_without_an_engine(
        spawned: list[subprocess.Popen[bytes]], tmp_path: Path, dead_pid: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("clusters.backends.compose.engine.docker_answers", lambda timeout=10.0: False)
    workload = _tagged_sleep(spawned, tmp_path, "compose-run", dead_pid)
    assert workload in {item.pid for item in would_reclaim(Backend.compose, None)}
    assert workload in {item.pid for item in reclaim(Backend.compose)}
    assert not procs.alive(workload)


def test_nothing_left_reclaims_nothing(spawned: list[subprocess.Popen[bytes]], tmp_path: Path) -> None:
    _tagged_sleep(spawned, tmp_path, "running-run", 1)
    mine = [t for t in dead_runs_processes("local") if t.cluster_id == "running-run"]
    assert mine == [] and kill_processes(mine, "test") == Reclaimed()


@pytest.mark.parametrize("cmd, named", [
    (["/usr/bin/java", "-Xmx1g", "-cp", "libs/*", "kafka.Kafka", "/runs/r1/nodes/n2/server.properties"], "node 2"),
    (["java", "kafka.tools.StorageTool", "format", "-t", "id", "-c", "/r/nodes/n3/server.properties"],
     "storage formatter of node 3"),
    (["/cache/toxiproxy-server", "-host", "127.0.0.1", "-port", "18474"], "toxiproxy"),
    (["/cache/kwire/0123/kwire", "-api", "127.10.0.253:18475", "-link", "client-to-n1=a=b"], "wire proxy"),
    (["/venv/bin/python", "-m", "harness.workloads.reader", "/r/workloads/reader-0.json"], "workload reader-0"),
    (["/venv/bin/python", "-m", "harness.sparkjob.job", "/r/workloads/spark-job-0.json"], "workload spark-job-0"),
    (["java", "-cp", "x", "org.apache.spark.deploy.SparkSubmit", "pyspark-shell"], "spark driver JVM"),
    (["sleep", "300"], "sleep 300"),
    ([], "(gone)"),
])
def test_processes_are_named_by_what_they_run(cmd: list[str], named: str) -> None:
    assert procs.describe_cmdline(cmd) == named


def test_owner_states(dead_pid: int) -> None:
    assert Owner(None).to_json() == {"pid": None, "alive": None, "detached": True}
    assert Owner(1).to_json() == {"pid": 1, "alive": True, "detached": False} and not Owner(1).dead
    assert Owner(dead_pid).to_json() == {"pid": dead_pid, "alive": False, "detached": False}
    assert "dead" in str(Owner(dead_pid)) and "alive" in str(Owner(1)) and "detached" in str(Owner(None))


def test_status_json_carries_the_owner_and_what_would_be_reclaimed(dead_pid: int) -> None:
    s = ClusterStatus("local", "4.0.0", "b", "d", "t", [NodeStatus(1, NodeState.DOWN)], "/r", "cid",
                      owner=Owner(dead_pid), would_reclaim=Reclaimed([Leftover("link fault", "client-to-n1: disabled")]))
    j = s.to_json()
    assert j["owner"] == {"pid": dead_pid, "alive": False, "detached": False}
    assert j["would_reclaim"] == [{"kind": "link fault", "name": "client-to-n1: disabled", "pid": None}]
    assert j["nodes"] == [{"id": 1, "state": "down", "pid": None}]


def test_reclaimed_keeps_each_leftover_once_in_order() -> None:
    a, b = Leftover("container", "broker-1"), Leftover("process", "node 1", 42)
    both = Reclaimed([a]) + Reclaimed([b, a])
    assert both.items == [a, b] and len(both) == 2 and both.lines() == ["container broker-1", "process node 1 (pid 42)"]
