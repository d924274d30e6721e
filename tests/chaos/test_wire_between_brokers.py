"""Request-aware faults between brokers, on a real cluster: a coordinator's WriteTxnMarkers held on
its link to a partition leader, and on its link to itself (the partition it leads), then healed.

A commit's markers go from the transaction coordinator to each partition's leader after the client
was told the commit succeeded. Held, they keep the partition's last stable offset (LSO) below its
high watermark: a read_committed reader sees nothing of the transaction. The wire proxy's event
log records the held request (link, the marker's producer id and result). The heal is proven as a
run proves it: no rule, nothing held (``WireProxy.unhealed``), and every partition's LSO at its
high watermark (``harness.kafka.reads.lso_lag``). A planted broken heal (it records the fault's end
but leaves the rule) must fail that proof, naming the rule, the held request and the stuck LSO.

The links between brokers go through the wire proxy only on a cluster that opted in
(``--wire-between-brokers``): the session cluster makes way for one that did, for this module's tests.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from chaos import faults, targets
from chaos.heal import heal_all
from chaos.nemesis import Nemesis
from chaos.targets import TargetDefaults
from clusters.backends import artifacts, backends
from clusters.backends.backends import Backend
from clusters.backends.protocol import Cluster
from clusters.kafka.health import admin_client
from harness.base.wait import wait_until
from harness.history.recorder import Recorder
from harness.kafka.admin import create_topic
from harness.kafka.reads import lso_lag
from harness.run.supervisor import Supervisor
from harness.rundir.runfolder import new_run_dir
from tests.chaos.test_wire_faults import frozen_wire_proxy_is_restarted_by_the_heal

#: `make library`, not `make test`: a cluster with the routing is a cluster of its own, so the module
#: costs two cluster starts beside its ~25 s of tests (the session cluster makes way and comes back):
#: 138 s at load 12 on 2 cores, about a minute idle, over the default suite's 40 s for a new test.
#: The routing, the refusals and the frozen proxy's restart have unit tests without a cluster
#: (tests/unit/test_topology.py, test_wire_between_brokers.py, test_kill_frees_listeners.py).
pytestmark = [pytest.mark.chaos, pytest.mark.library]

#: As long as a heal may take to let the held markers through and the LSO catch up (they are
#: written at once; the bound covers a loaded machine's scheduling).
HEALED_WITHIN_S = 20.0
#: How long the planted broken heal is given to (not) move the LSO: a real heal moves it in well
#: under a second.
BROKEN_HEAL_GRACE_S = 3.0
PARTITIONS = 3


@pytest.fixture(scope="module")
def routed(session_cluster: Cluster, arts: artifacts.Artifacts) -> Iterator[Cluster]:
    """A cluster whose links between brokers go through the wire proxy, in the session cluster's
    place (one cluster at a time); the session cluster comes back after the module."""
    if session_cluster.backend != "local":
        pytest.skip("the compose backend's wire proxy carries only the clients' links (docs/WIRE-FAULTS.md)")
    session_cluster.stop()
    try:
        with backends.new_cluster(Backend.local, arts, new_run_dir("pytest-wire-between-brokers"),
                                  session_cluster.topology.port_base, wire_between_brokers=True,
                                  transaction_version=session_cluster.transaction_version) as cluster:
            assert "n1-to-n1-internal" in cluster.wire.stats().links  # every link, each node's to itself too
            yield cluster
    finally:
        session_cluster.start()


@pytest.fixture
def cluster(routed: Cluster) -> Iterator[Cluster]:
    """The routed cluster, healed and healthy again after each test, whatever the test did."""
    yield routed
    assert heal_all(routed) == []


@pytest.fixture
def setup(cluster: Cluster, tmp_path: Path) -> Iterator[tuple[Nemesis, str]]:
    txn = f"markers-{uuid.uuid4().hex[:6]}"
    create_topic(admin_client(cluster.direct_bootstrap), txn, PARTITIONS)
    with Recorder(tmp_path, "nemesis") as rec:
        nem = Nemesis(cluster, Supervisor(tmp_path, dict(os.environ)), rec,
                      defaults=TargetDefaults(topic=txn, transactional_id=txn))
        yield nem, txn
        nem.stop.set()
    assert heal_all(cluster) == []


def heal_proof(cluster: Cluster, topic: str, within: float) -> list[str]:
    """What keeps the cluster from its healed state: wire rules and held requests, and partitions of
    ``topic`` whose LSO did not reach the high watermark within ``within`` seconds. Empty = healed."""
    lag, stuck = lso_lag(cluster.direct_bootstrap, {topic: PARTITIONS}, within)
    return cluster.wire.unhealed() + [f"{t}/{p}: LSO stuck at {stuck.get((t, p))}" for (t, p), v in lag.items() if v is None]


def committed(cluster: Cluster, topic: str) -> list[str]:
    """Every value a read_committed reader sees in ``topic`` (all partitions), sorted."""
    c = Consumer({"bootstrap.servers": cluster.direct_bootstrap, "group.id": f"check-{uuid.uuid4().hex[:6]}",
                  "isolation.level": "read_committed", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, part, 0) for part in range(PARTITIONS)])
        seen: list[str] = []
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None and seen:
                break
            if m is not None and m.error() is None:
                seen.append(m.value().decode())
        return sorted(seen)
    finally:
        c.close()


def marker_events(cluster: Cluster, link: str) -> list[dict[str, Any]]:
    lines = cluster.wire_events.read_text().splitlines() if cluster.wire_events.exists() else []
    return [e for e in map(json.loads, lines) if e.get("link") == link and e.get("api") == "WriteTxnMarkers"]


def test_commit_markers_held_between_brokers_and_to_itself_wait_for_the_heal(setup: tuple[Nemesis, str]) -> None:
    nem, txn = setup
    cluster = nem.cluster
    admin = admin_client(cluster.direct_bootstrap)
    p = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": txn, "linger.ms": 0})
    p.init_transactions(60)
    coordinator = targets.transaction_coordinator(admin, txn)
    leaders = {part: targets.leader(admin, txn, part) for part in range(PARTITIONS)}
    other = next((part for part, n in leaders.items() if n != coordinator), None)
    own = next((part for part, n in leaders.items() if n == coordinator), None)
    assert other is not None, f"every partition of {txn} is led by the coordinator {coordinator}: {leaders}"
    ctx = nem._context()
    heals = {}
    for part in (other, own):
        if part is not None:  # leaders spread over the nodes: usually one is the coordinator itself
            fault = faults.parse({"at": 0, "kind": "hold-requests", "api": "WriteTxnMarkers", "result": "commit",
                                  "peer": "leader", "peer_of": f"{txn}/{part}", "hold_ms": 600_000})
            heals[part] = fault.apply(ctx)
    links = {part: cluster.topology.link(coordinator, leaders[part], "internal", wire=True).name for part in heals}
    p.begin_transaction()
    for part in heals:
        p.produce(txn, f"v{part}".encode(), partition=part)
    p.commit_transaction(30)  # the coordinator answers after PrepareCommit; the markers follow

    for link in links.values():
        held = wait_until(lambda link=link: next((e for e in marker_events(cluster, link) if e["event"] == "match"), None),
                          timeout=20, what=f"the coordinator's commit markers to be held on {link}",
                          state=lambda: str(cluster.wire.stats().links))
        entry = held["details"]["entries"][0]
        assert held["action"] == "hold" and entry["committed"] is True and txn in entry["topics"], held
    held_now = heal_proof(cluster, txn, BROKEN_HEAL_GRACE_S)  # the markers are held: no LSO moves past the commit
    assert all(f"{txn}/{part}: LSO stuck at 0" in held_now for part in links), held_now

    if own is not None:  # the coordinator's own partition: its link to itself, healed first
        heals.pop(own)()
        lag, _ = lso_lag(cluster.direct_bootstrap, {txn: PARTITIONS}, BROKEN_HEAL_GRACE_S + 2)
        assert lag[(txn, own)] is not None and lag[(txn, other)] is None, lag  # only the healed link's marker landed
    # the planted broken heal: it says the fault ended but leaves the rule and what it holds
    ctx.end("hold-requests", links=[links[other]])
    broken = heal_proof(cluster, txn, BROKEN_HEAL_GRACE_S)
    assert any("WriteTxnMarkers on " + links[other] in b for b in broken), broken
    assert "wire proxy: 1 request(s) held" in broken and f"{txn}/{other}: LSO stuck at 0" in broken, broken

    started = time.monotonic()
    heals.pop(other)()  # the real heal: the rule removed, the held markers delivered
    assert heal_proof(cluster, txn, HEALED_WITHIN_S) == []
    assert committed(cluster, txn) == sorted(f"v{part}" for part in links)
    delivered = [e for e in marker_events(cluster, links[other]) if e["event"] in ("deliver", "response")]
    assert [e["event"] for e in delivered] == ["deliver", "response"], delivered
    assert delivered[1]["to_client"] is True and time.monotonic() - started < HEALED_WITHIN_S
    p.flush(10)


def test_heal_restarts_a_frozen_wire_proxy_that_carries_every_link(cluster: Cluster,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    """With 21 links (and the brokers' connections on them) the restarted proxy once could not bind
    its addresses: the old one was reported gone while a thread of it still closed its sockets
    (clusters/backends/procs.py: alive)."""
    frozen_wire_proxy_is_restarted_by_the_heal(cluster, caplog)
