"""Every fault kind, applied through the nemesis exactly as a scenario applies it, has the effect it
claims on the real cluster — and is gone when the fault ends.

Network toxics are observed at the TCP level on one client link: a raw Kafka ApiVersions request
through node 1's client proxy (latency shows in the round trip, bandwidth in a large request's
time, reset-peer as a reset, blackhole and drop-responses as silence, slicer as an intact answer in
many pieces, a cut as a refused connection, flap as both). Partitions and process faults are
observed in Kafka's own metadata over the DIRECT listener: who is registered (a broker that cannot
heartbeat the controller is fenced) and who is in the ISR.
"""

from __future__ import annotations

import os
import socket
import struct
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from chaos import faults
from chaos.nemesis import Nemesis
from chaos.targets import TargetDefaults
from clusters.backends import procs
from clusters.backends.protocol import Cluster, NodeState
from clusters.kafka.health import admin_client
from harness.base.wait import wait_until
from harness.history.recorder import Recorder
from harness.kafka.admin import create_topic, partition_isr
from harness.run.supervisor import Supervisor
from harness.workloads.common import WorkloadConfig
from tests.chaos.kafka_helpers import replicated, writes

pytestmark = pytest.mark.chaos

#: Fencing takes broker.session.timeout.ms (9 s) plus the controller's check; ISR changes take
#: replica.lag.time.max.ms (10 s, clusters/kafka/render.py) plus half of it. Generous for 2 loaded cores.
METADATA_CHANGE_TIMEOUT_S = 60.0
PROBE_TIMEOUT_S = 3.0
#: What a cut client link looks like from the client: refused on the local backend (the proxy stops
#: listening); on compose Docker's port publishing accepts the connection first and then closes it.
CUT = {"local": "refused", "compose": "reset"}


# ---------------------------------------------------------------- a raw Kafka request, timed
@dataclass
class Probe:
    outcome: str  # ok | refused | reset | silent
    seconds: float
    chunks: int = 0
    answer: bytes = b""


def api_versions(addr: str, client_id: bytes = b"eos-probe", timeout: float = PROBE_TIMEOUT_S) -> Probe:
    """ApiVersions v0 through ``addr``: what came back, how long it took, in how many reads."""
    host, port = addr.rsplit(":", 1)
    body = struct.pack(">hhih", 18, 0, 7, len(client_id)) + client_id
    t0 = time.monotonic()
    chunks, data = 0, b""
    try:
        with socket.create_connection((host, int(port)), timeout=timeout) as s:
            s.settimeout(timeout)
            s.sendall(struct.pack(">i", len(body)) + body)
            need = None
            while need is None or len(data) < need:
                got = s.recv(65536)
                if not got:
                    return Probe("reset", time.monotonic() - t0, chunks)
                chunks += 1
                data += got
                if need is None and len(data) >= 4:
                    need = 4 + struct.unpack(">i", data[:4])[0]
    except ConnectionRefusedError:
        return Probe("refused", time.monotonic() - t0)
    except ConnectionResetError:
        return Probe("reset", time.monotonic() - t0, chunks)
    except TimeoutError:
        return Probe("silent", time.monotonic() - t0, chunks)
    assert struct.unpack(">i", data[4:8])[0] == 7, "correlation id"
    return Probe("ok", time.monotonic() - t0, chunks, data)


def client_addr(cluster: Cluster, node: int) -> str:
    return cluster.bootstrap.split(",")[node - 1]


# ---------------------------------------------------------------- faults through the nemesis
@pytest.fixture
def topic(cluster: Cluster) -> str:
    name = f"effects-{uuid.uuid4().hex[:6]}"
    create_topic(admin_client(cluster.direct_bootstrap), name, 3)
    return name


@pytest.fixture
def nemesis(cluster: Cluster, topic: str, tmp_path: Path) -> Iterator[Nemesis]:
    with Recorder(tmp_path, "nemesis") as rec:
        yield Nemesis(cluster, Supervisor(tmp_path, dict(os.environ)), rec, defaults=TargetDefaults(topic=topic))


@contextmanager
def fault_on(nem: Nemesis, **fields: Any) -> Iterator[None]:
    """The fault on (for up to 10 minutes) inside the block; ended through the nemesis after it,
    and its own ending must leave every link clean."""
    fault = faults.parse({"at": 0, "duration": 600, **fields})
    th = threading.Thread(target=nem._guarded, args=(fault,), daemon=True)
    th.start()
    wait_until(lambda: nem.active_faults() or nem.errors or None, timeout=60, what=f"the nemesis to start {fields}")
    assert nem.errors == []
    try:
        yield
    finally:
        nem.stop.set()
        th.join(timeout=300)
    assert not th.is_alive() and nem.errors == [] and nem.active_faults() == []
    assert nem.cluster.toxiproxy.unhealed() == []


def _until(probe: Any, ok: Any, what: str, timeout: float = 30) -> Any:
    """Probe until ``ok(result)``; the result that satisfied it."""
    last: list[Any] = []

    def step() -> Any:
        r = probe()
        last[:] = [r]
        return r if ok(r) else None

    return wait_until(step, timeout=timeout, what=what, state=lambda: repr(last[0]) if last else "no probe yet")


# ---------------------------------------------------------------- network toxics on one client link
def test_baseline_probe_is_fast_and_whole(cluster: Cluster) -> None:
    p = api_versions(client_addr(cluster, 1))
    assert p.outcome == "ok" and p.seconds < 1.0, p


def test_latency_shows_in_the_round_trip(cluster: Cluster, nemesis: Nemesis) -> None:
    with fault_on(nemesis, kind="latency", target=1, listeners="client", params={"latency_ms": 400, "jitter_ms": 0}):
        p = _until(lambda: api_versions(client_addr(cluster, 1)), lambda p: p.outcome == "ok" and p.seconds >= 0.8,
                   "a round trip of >= 0.8 s (400 ms each way)")
        assert p.seconds < PROBE_TIMEOUT_S
    assert api_versions(client_addr(cluster, 1)).seconds < 0.8


def test_bandwidth_caps_a_large_request(cluster: Cluster, nemesis: Nemesis) -> None:
    big = b"x" * 16_000  # a 16 kB client id: the request's size is what the cap acts on
    assert api_versions(client_addr(cluster, 1), big).seconds < 1.0
    with fault_on(nemesis, kind="bandwidth", target=1, listeners="client", params={"rate_kbps": 4}):
        _until(lambda: api_versions(client_addr(cluster, 1), big, timeout=30),
               lambda p: p.outcome == "ok" and p.seconds >= 3.0, "16 kB at 4 kB/s to take >= 3 s", timeout=90)


@pytest.mark.parametrize("kind, outcome", [("reset-peer", "reset"), ("blackhole", "silent"), ("drop-responses", "silent")])
def test_connection_toxics(cluster: Cluster, nemesis: Nemesis, kind: str, outcome: str) -> None:
    with fault_on(nemesis, kind=kind, target=1, listeners="client"):
        _until(lambda: api_versions(client_addr(cluster, 1)), lambda p: p.outcome == outcome, f"{kind}: {outcome}")
    assert api_versions(client_addr(cluster, 1)).outcome == "ok"


def test_slicer_delivers_the_same_answer_in_pieces(cluster: Cluster, nemesis: Nemesis) -> None:
    whole = api_versions(client_addr(cluster, 1))
    with fault_on(nemesis, kind="slicer", target=1, listeners="client",
                  params={"average_size": 32, "size_variation": 8, "delay_us": 20_000}):
        p = _until(lambda: api_versions(client_addr(cluster, 1)), lambda p: p.outcome == "ok" and p.chunks >= 3,
                   "the answer in >= 3 pieces")
        assert p.answer == whole.answer


def test_partition_cut_refuses_connections(cluster: Cluster, nemesis: Nemesis) -> None:
    cut = CUT[cluster.backend]
    with fault_on(nemesis, kind="partition", partition="clients-from-node", target=1, listeners="client"):
        _until(lambda: api_versions(client_addr(cluster, 1)), lambda p: p.outcome == cut, f"a {cut} connection")
        assert api_versions(client_addr(cluster, 2)).outcome == "ok", "only node 1's client link is cut"
    assert api_versions(client_addr(cluster, 1)).outcome == "ok"


def test_flap_cuts_and_heals_over_and_over(cluster: Cluster, nemesis: Nemesis) -> None:
    seen: set[str] = set()
    want = {"ok", CUT[cluster.backend]}
    with fault_on(nemesis, kind="flap", partition="clients-from-node", target=1, listeners="client", period=1):
        deadline = time.monotonic() + 30
        while not want <= seen and time.monotonic() < deadline:
            # a probe that straddles a cut may also see its connection closed (reset)
            seen.add(api_versions(client_addr(cluster, 1), timeout=1).outcome)
            time.sleep(0.2)  # probe pacing, not synchronisation: the flap period is 1 s
    assert want <= seen, seen


# ---------------------------------------------------------------- partitions, in Kafka's metadata
def registered(cluster: Cluster) -> list[int]:
    return sorted(admin_client(cluster.direct_bootstrap).list_topics(timeout=10).brokers)


@pytest.mark.parametrize("kind, clients_cut", [("isolate-node", True), ("majority-minority", False)])
def test_a_node_cut_from_its_peers_is_fenced(cluster: Cluster, nemesis: Nemesis, kind: str, clients_cut: bool) -> None:
    with fault_on(nemesis, kind="partition", partition=kind, target=2, listeners="all"):
        wait_until(lambda: 2 not in registered(cluster), timeout=METADATA_CHANGE_TIMEOUT_S,
                   what=f"node 2 to be fenced by the controller ({kind})", state=lambda: f"registered {registered(cluster)}")
        assert (api_versions(client_addr(cluster, 2)).outcome == CUT[cluster.backend]) is clients_cut
    wait_until(lambda: registered(cluster) == [1, 2, 3], timeout=METADATA_CHANGE_TIMEOUT_S,
               what="node 2 to register again", state=lambda: f"registered {registered(cluster)}")


def test_bridge_keeps_the_bridge_node_in_every_isr(cluster: Cluster, nemesis: Nemesis, topic: str) -> None:
    admin = admin_client(cluster.direct_bootstrap)
    replicated(cluster.direct_bootstrap, topic)  # every follower fetching before the cut
    with writes(cluster.direct_bootstrap, topic), fault_on(nemesis, kind="partition", partition="bridge", target=1, listeners="internal"):
        # nodes 2 and 3 no longer replicate from each other: some ISR loses one of them
        def isrs() -> list[list[int]]:
            return [partition_isr(admin, topic, p) for p in range(3)]
        wait_until(lambda: any(len(i) < 3 for i in isrs()), timeout=METADATA_CHANGE_TIMEOUT_S,
                   what="an ISR to lose node 2 or 3 across the bridge", state=lambda: f"isrs {isrs()}")
        assert all(1 in i for i in isrs()), f"the bridge node must stay in every ISR: {isrs()}"
        assert registered(cluster) == [1, 2, 3], "INTERNAL links only: every node still reaches the controller"


# ---------------------------------------------------------------- process faults
def pid_of(cluster: Cluster, node: int) -> int | None:
    return next(n.pid for n in cluster.status().nodes if n.id == node)


def leads(cluster: Cluster, topic: str, node: int) -> list[int]:
    md = admin_client(cluster.direct_bootstrap).list_topics(topic=topic, timeout=10).topics[topic].partitions
    return [p.id for p in md.values() if p.leader == node]


@pytest.mark.parametrize("kind", ["kill", "stop"])
def test_kill_and_stop_take_the_node_down_and_it_comes_back(cluster: Cluster, nemesis: Nemesis, topic: str,
                                                            kind: str) -> None:
    before = pid_of(cluster, 3)
    with fault_on(nemesis, kind=kind, target=3):
        wait_until(lambda: cluster.node_state(3) is NodeState.DOWN or None, timeout=60, what=f"node 3 down after {kind}")
        if kind == "stop":
            # SIGTERM is a controlled shutdown: leadership moved away as the process exited, long
            # before a killed node's session would time out (9 s)
            wait_until(lambda: leads(cluster, topic, 3) == [] or None, timeout=3, what="node 3 to lead nothing",
                       state=lambda: f"leads {leads(cluster, topic, 3)}")
        wait_until(lambda: 3 not in registered(cluster), timeout=METADATA_CHANGE_TIMEOUT_S,
                   what="node 3 to leave the registered brokers", state=lambda: f"registered {registered(cluster)}")
    assert cluster.node_state(3) is NodeState.UP and pid_of(cluster, 3) != before


def test_pause_freezes_the_node_until_it_is_fenced(cluster: Cluster, nemesis: Nemesis) -> None:
    before = pid_of(cluster, 3)
    with fault_on(nemesis, kind="pause", target=3):
        wait_until(lambda: cluster.node_state(3) is NodeState.PAUSED or None, timeout=60, what="node 3 paused")
        wait_until(lambda: 3 not in registered(cluster), timeout=METADATA_CHANGE_TIMEOUT_S,
                   what="paused node 3 to miss heartbeats and be fenced", state=lambda: f"registered {registered(cluster)}")
        assert cluster.node_state(3) is NodeState.PAUSED, "fenced while its process lives on, frozen"
    assert cluster.node_state(3) is NodeState.UP and pid_of(cluster, 3) == before, "resumed, not restarted"


def test_restart_replaces_only_its_targets_process(cluster: Cluster, nemesis: Nemesis) -> None:
    before = {n: pid_of(cluster, n) for n in cluster.topology.node_ids}
    with fault_on(nemesis, kind="restart", target=2):
        wait_until(lambda: pid_of(cluster, 2) not in (None, before[2]) and cluster.node_state(2) is NodeState.UP or None,
                   timeout=180, what="node 2 to run as a new process")
    after = {n: pid_of(cluster, n) for n in cluster.topology.node_ids}
    assert after[1] == before[1] and after[3] == before[3], "restart touched only its target"


# in `make library` (35 s: three restarts one after the other); the restart of one node it repeats
# stays in `make test` above
@pytest.mark.library
def test_rolling_restart_replaces_every_process(cluster: Cluster, nemesis: Nemesis) -> None:
    before = {n: pid_of(cluster, n) for n in cluster.topology.node_ids}
    with fault_on(nemesis, kind="rolling-restart"):
        wait_until(lambda: all(pid_of(cluster, n) not in (None, before[n]) for n in cluster.topology.node_ids) or None,
                   timeout=600, what="every node to run as a new process", state=lambda: str(cluster.status().nodes))


# ---------------------------------------------------------------- workload faults
def test_kill_and_pause_workload(cluster: Cluster, nemesis: Nemesis, topic: str, tmp_path: Path) -> None:
    sup = nemesis.control
    assert isinstance(sup, Supervisor)
    sup.start("reader", WorkloadConfig(run_dir=str(tmp_path), name="reader-0", bootstrap=cluster.bootstrap,
                                       topics=[topic], partitions=3, seed=1, max_seconds=600))
    try:
        first = sup.procs["reader-0"].pid
        with fault_on(nemesis, kind="pause-workload", workload="reader"):
            wait_until(lambda: procs.stopped(first) or None, timeout=30, what="the reader to be stopped (SIGSTOP)")
        assert not procs.stopped(first) and sup.alive("reader-0")
        nemesis.stop.clear()
        # 3 s, ending by itself: a kill ended by the run's end is not restarted (a client gone for good)
        with fault_on(nemesis, kind="kill-workload", workload="reader", duration=3):
            wait_until(lambda: not procs.alive(first) or None, timeout=30, what="the reader to be killed")
            wait_until(lambda: sup.procs["reader-0"].pid != first and sup.alive("reader-0") or None, timeout=60,
                       what="the reader to run again as a new process")
        nemesis.stop.clear()
        with fault_on(nemesis, kind="kill-workload", workload="reader"):  # 600 s: past the end of the run
            wait_until(lambda: not sup.alive("reader-0") or None, timeout=30, what="the reader to be killed again")
        assert not sup.alive("reader-0"), "a kill that outlasts the run leaves the client gone, as a crash would"
    finally:
        sup.stop_all()
