"""The local backend's parts without a cluster (clusters/backends/local/): its brokers as real
processes (a stand-in that logs Kafka's started line, or dies as a misconfigured broker does), its
node folders and configs, and its ownership record read back by ``attach``."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from clusters.backends import procs
from clusters.backends.artifacts import Artifacts
from clusters.backends.built_cluster import STARTED_MESSAGE
from clusters.backends.local import LocalCluster
from clusters.backends.local.layout import NodeLayout
from clusters.backends.local.nodes import BrokerProcesses
from clusters.backends.protocol import NodeState
from clusters.backends.sidecars import Sidecars
from clusters.kafka.topology import Topology
from harness.base.errors import ClusterError

#: A broker stand-in: appends Kafka's started line to the server.log beside its server.properties
#: (argv[1]) and sleeps; with argv[2] == "crash" it says why on stdout and exits 1 instead.
STAND_IN = f"""
import pathlib, sys, time
props = pathlib.Path(sys.argv[1])
if sys.argv[2] == "crash":
    print("ClassNotFoundException: org.example.NoSuchAuthorizer", flush=True)
    sys.exit(1)
with open(props.parent / "server.log", "a") as log:
    log.write("[KafkaRaftServer nodeId=1] {STARTED_MESSAGE}\\n")
time.sleep(300)
"""


class StandInLayout(NodeLayout):
    """The local layout, with the stand-in for the broker's JVM."""

    mode = "start"

    def broker_command(self, n: int) -> list[str]:
        return [sys.executable, "-c", STAND_IN, str(self.server_properties(n)), self.mode]


def _arts(tmp_path: Path) -> Artifacts:
    return Artifacts("4.0.0", tmp_path / "kafka" / "libs", tmp_path / "toxiproxy", tmp_path / "jdk" / "bin" / "java",
                     tmp_path / "kwire")


@pytest.fixture(autouse=True)
def own_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EOS_CHAOS_STATE", str(tmp_path / "state"))


def _brokers(tmp_path: Path, cluster_id: str, layout: NodeLayout, spawned: list[int]) -> BrokerProcesses:
    def env() -> dict[str, str]:
        return procs.tags(cluster_id, os.getpid())

    side = Sidecars(tmp_path, env, lambda: cluster_id)
    return BrokerProcesses(layout, lambda: cluster_id, env, side.is_ours, lambda: spawned.append(1), threading.RLock())


@pytest.fixture
def layout(tmp_path: Path) -> StandInLayout:
    return StandInLayout(_arts(tmp_path), tmp_path / "run", Topology(), {})


@pytest.fixture
def brokers(tmp_path: Path, layout: StandInLayout) -> Iterator[tuple[BrokerProcesses, list[int]]]:
    spawned: list[int] = []
    b = _brokers(tmp_path, "local-test-a", layout, spawned)
    try:
        yield b, spawned
    finally:
        b.kill_all()
        for t in procs.tagged_processes():
            if t.cluster_id == "local-test-a":
                procs.kill_hard(t.pid, "stand-in")


def test_a_broker_that_logs_started_is_up_and_answers_every_signal(brokers: tuple[BrokerProcesses, list[int]]) -> None:
    nodes, spawned = brokers
    pid = nodes.spawn(1)
    nodes.wait_started(1, offset=0)
    assert nodes.state(1) is NodeState.UP and nodes.pid(1) == pid and spawned == [1]
    assert nodes.state(2) is NodeState.DOWN
    nodes.pause(1)
    assert nodes.state(1) is NodeState.PAUSED
    nodes.resume(1)
    assert nodes.state(1) is NodeState.UP
    nodes.restart(1)  # waits for a second started line, past the first
    assert nodes.state(1) is NodeState.UP and nodes.pid(1) != pid and spawned == [1, 1]
    assert nodes.layout.server_log(1).read_text().count(STARTED_MESSAGE) == 2
    nodes.kill(1)
    assert nodes.state(1) is NodeState.DOWN and nodes.pid(1) == 0


def test_a_node_restarted_by_another_process_is_found_by_its_tag_and_command_line(
        tmp_path: Path, layout: StandInLayout, brokers: tuple[BrokerProcesses, list[int]]) -> None:
    nodes, _ = brokers
    pid = nodes.spawn(2)
    nodes.wait_started(2, offset=0)
    other_handle = _brokers(tmp_path, "local-test-a", layout, [])  # knows no pid: an attached process's view
    assert other_handle.pid(2) == pid and other_handle.state(2) is NodeState.UP
    another_cluster = _brokers(tmp_path, "local-test-b", layout, [])  # same folders, another cluster's tag
    assert another_cluster.pid(2) == 0 and another_cluster.state(2) is NodeState.DOWN


def test_a_broker_that_exits_during_start_up_is_named_with_its_log(
        layout: StandInLayout, brokers: tuple[BrokerProcesses, list[int]]) -> None:
    nodes, _ = brokers
    layout.mode = "crash"
    nodes.spawn(3)
    with pytest.raises(ClusterError, match="node 3 .* exited during start-up") as info:
        nodes.wait_started(3, offset=0, timeout=60)
    assert "NoSuchAuthorizer" in str(info.value) and "stdout.log" in str(info.value)


def test_a_node_the_topology_lacks_is_refused_with_the_nodes_it_has(brokers: tuple[BrokerProcesses, list[int]]) -> None:
    nodes, _ = brokers
    with pytest.raises(ClusterError, match=r"no node 7; nodes are \[1, 2, 3\]"):
        nodes.pid(7)


def test_each_node_folder_gets_its_configs_and_the_broker_command_names_them(tmp_path: Path) -> None:
    layout = NodeLayout(_arts(tmp_path), tmp_path / "run", Topology(), {"log.retention.ms": "1234"})
    layout.render(2)
    d = tmp_path / "run" / "nodes" / "n2"
    assert sorted(p.name for p in d.iterdir()) == ["hosts", "log4j2.properties", "server.properties"]
    props = (d / "server.properties").read_text()
    assert "node.id=2" in props and f"log.dirs={d / 'data'}" in props and "log.retention.ms=1234" in props
    assert str(layout.server_log(2)) in (d / "log4j2.properties").read_text()
    cmd = layout.broker_command(2)
    assert cmd[0] == str(tmp_path / "jdk" / "bin" / "java") and cmd[-2:] == ["kafka.Kafka", str(d / "server.properties")]
    assert f"-Djdk.net.hosts.file={d / 'hosts'}" in cmd
    assert "-Xmx256m" in layout.java("kafka.tools.StorageTool", heap="256m")
    (d / "data").mkdir()
    layout.drop_data()
    assert not (d / "data").exists() and (d / "server.properties").exists()


@pytest.mark.parametrize("detached", [False, True])
def test_attach_reads_back_every_field_of_the_record_the_cluster_wrote(tmp_path: Path, detached: bool) -> None:
    c = LocalCluster(_arts(tmp_path), tmp_path / "run", Topology.at(19392, wire_between_brokers=True),
                     {"log.retention.ms": "1234"}, detached=detached, transaction_version=1)
    c.nodes.pids = {1: 11, 2: 22, 3: 33}
    c.proxies.side.tox_pid, c.proxies.side.wire_pid = 44, 55
    rec = c._record()
    assert rec.owner_pid == (None if detached else os.getpid()) and rec.node_pids == {"1": 11, "2": 22, "3": 33}
    back = LocalCluster.attach(rec)
    assert back._record() == rec
    assert back.cluster_id == c.cluster_id and back.nodes.pids == c.nodes.pids and back.detached is detached
    assert back.proxies.side.tox_pid == 44 and back.proxies.side.wire_pid == 55
    assert back.layout.node_dir(1) == c.layout.node_dir(1) and back.topology.port_base == 19392
