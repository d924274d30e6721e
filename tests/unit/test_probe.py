"""The external cluster's checks before any fault, on real sockets and processes (no Kafka): a
broker that does not answer on its listener, a node whose broker is not up, and a listener the
cluster advertises differently are exit 2 naming the node and its inventory line, and change nothing."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from clusters.backends.external import inventory, probe
from clusters.backends.external.probe import SeenBrokers
from harness.base.errors import ClusterError, EnvironmentProblem
from tests.external_nodes import broker, local_inventory, pids_of, proc_state, sleepers


@contextmanager
def listening(n: int) -> Iterator[list[int]]:
    """``n`` sockets on 127.0.0.1 that accept connections and never answer (a port, no broker)."""
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        socks.append(s)
    try:
        yield [int(s.getsockname()[1]) for s in socks]
    finally:
        for s in socks:
            s.close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_listener_nobody_listens_on_is_named() -> None:
    port = _closed_port()
    assert probe.listener_problem(f"127.0.0.1:{port}") == f"nothing listens on its listener 127.0.0.1:{port} (connection refused)"
    with listening(1) as (open_port,):
        assert probe.listener_problem(f"127.0.0.1:{open_port}") is None


def test_a_port_that_accepts_but_is_no_broker_is_named() -> None:
    with listening(1) as (port,):
        t0 = time.monotonic()
        with pytest.raises(ClusterError, match=f"127.0.0.1:{port} accepts connections but gave no Kafka Metadata answer"):
            probe.read_advertised(f"127.0.0.1:{port}", timeout=1.0)
        assert time.monotonic() - t0 < 10


def _nodes(tmp_path: Path, ports: list[int]) -> tuple[inventory.ResolvedNode, ...]:
    return inventory.load(local_inventory(tmp_path, ["1", "2", "3"], ports=ports)).resolved()


def test_listener_mismatches_name_each_node(tmp_path: Path) -> None:
    nodes = _nodes(tmp_path, [9092, 9093, 9094])
    same = SeenBrokers({1: "127.0.0.1:9092", 2: "127.0.0.1:9093", 3: "127.0.0.1:9094"})
    assert probe.listener_mismatches(nodes, same, nodes[0]) == []
    off = SeenBrokers({1: "127.0.0.1:9092", 2: "10.0.0.2:9093", 4: "127.0.0.1:9095"})
    assert probe.listener_mismatches(nodes, off, nodes[0]) == [
        (2, "node 2: the inventory says 127.0.0.1:9093, the cluster advertises 10.0.0.2:9093 on that listener"),
        (3, "node 3: not in the Metadata that 127.0.0.1:9092 answers (brokers there: 1, 2, 4); is it a broker of "
            "this cluster?"),
        (1, "node 4 is in the cluster's Metadata (127.0.0.1:9095) but not in the inventory: add it, or the proxies "
            "would not front it"),
    ]


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[inventory.Inventory, dict[int, object], list[int]]]:
    """Three local "brokers" (sleep processes) each with a port that accepts connections."""
    import subprocess

    with sleepers(3) as args, listening(3) as ports:
        procs = [subprocess.Popen(["sleep", a]) for a in args]
        inv = inventory.load(local_inventory(tmp_path, args, ports=ports))
        brokers = {n.id: broker(n, tmp_path / "kh") for n in inv.resolved()}
        try:
            yield inv, brokers, ports  # type: ignore[misc]
        finally:
            for p in procs:
                p.kill()
                p.wait()


def _as_inventory_says(inv: inventory.Inventory) -> SeenBrokers:
    return SeenBrokers({n.id: n.listeners.client for n in inv.resolved()}, "cid")


def test_a_whole_cluster_passes_and_nothing_changes(cluster: tuple[inventory.Inventory, dict, list[int]]) -> None:
    inv, brokers, _ = cluster
    assert probe.preflight(inv, brokers, lambda _: _as_inventory_says(inv)).cluster_id == "cid"


def test_a_paused_broker_is_exit_2_naming_the_node_and_line(cluster: tuple[inventory.Inventory, dict, list[int]]) -> None:
    inv, brokers, _ = cluster
    brokers[2].run("pause")
    try:
        with pytest.raises(EnvironmentProblem) as exc:
            probe.preflight(inv, brokers, lambda _: _as_inventory_says(inv))
        assert exc.value.exit_code == 2
        assert (f"node 2 (local): its broker is paused before the run (a run starts on a whole cluster; "
                f"`eos-chaos cluster heal --inventory FILE` starts or resumes it) ({inv.path}:9)") in str(exc.value)
        assert "node 1" not in str(exc.value) and "node 3" not in str(exc.value)
        match = inv.node(2).broker.process
        assert match is not None and [proc_state(p) for p in pids_of(match.match)] == ["T"]  # read, left as it was
    finally:
        brokers[2].run("resume")


def test_a_broker_not_listening_and_a_mismatch_are_exit_2(tmp_path: Path,
                                                          cluster: tuple[inventory.Inventory, dict, list[int]]) -> None:
    inv, brokers, ports = cluster
    says = _as_inventory_says(inv)
    wrong = SeenBrokers({**says.brokers, 3: "kafka-3:9092"})
    with pytest.raises(EnvironmentProblem) as exc:
        probe.preflight(inv, brokers, lambda _: wrong)
    assert (f"node 3: the inventory says 127.0.0.1:{ports[2]}, the cluster advertises kafka-3:9092 on that listener "
            f"({inv.path}:14)") in str(exc.value)
    assert str(exc.value).count("node 3: the inventory says") == 1  # said once, not once per listener asked

    def no_kafka(address: str) -> SeenBrokers:
        return probe.read_advertised(address, timeout=0.5)

    with pytest.raises(EnvironmentProblem, match=r"node 1 \(local\): 127.0.0.1:\d+ accepts connections but gave no Kafka"):
        probe.preflight(inv, brokers, no_kafka)


def test_an_unreachable_node_is_named_before_anything_else(tmp_path: Path) -> None:
    with sleepers(1) as args:
        inv = inventory.load(local_inventory(tmp_path, args, control="{docker: {container: no-such-eos-container}}"))
        b = broker(inv.node(1), tmp_path / "kh")
        with pytest.raises(EnvironmentProblem, match=r"node 1 \(docker no-such-eos-container\): "):
            probe.preflight(inv, {1: b}, lambda _: SeenBrokers({}))
