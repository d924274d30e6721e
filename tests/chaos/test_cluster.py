"""Each backend against real Kafka and real Toxiproxy: routing, kill, cut, pause (once per backend)."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Producer

from clusters.backends.protocol import Cluster, NodeState
from clusters.kafka.health import QUIET, admin_client
from clusters.kafka.topology import Listener
from harness.base.wait import wait_until
from harness.campaigns.smoke import run_smoke
from harness.kafka.admin import create_topic, partition_isr
from harness.kafka.reads import read_all
from tests.chaos.kafka_helpers import replicated, writes

pytestmark = pytest.mark.chaos

#: A follower that stops fetching leaves the ISR after replica.lag.time.max.ms (10 s, clusters/kafka/render.py)
#: plus the leader's ISR-check period (half of it); 60 s leaves room for a loaded 2-core machine.
ISR_CHANGE_TIMEOUT_S = 60.0
#: A paused broker misses heartbeats and is fenced after broker.session.timeout.ms (9 s default);
#: the probe's metadata requests may go to the paused broker and time out (each costs its 5 s), so
#: generous: 60 s ran out on a loaded machine with the node already fenced.
FENCE_TIMEOUT_S = 150.0


def topic_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def test_status_reports_addresses_and_nodes(cluster: Cluster) -> None:
    s = cluster.status().to_json()
    assert s["backend"] == cluster.backend and s["kafka_version"]
    assert s["bootstrap"] == cluster.bootstrap and s["direct_bootstrap"] == cluster.direct_bootstrap
    assert all(a.startswith("127.") for a in (s["bootstrap"] + "," + s["direct_bootstrap"]).split(",")), "loopback only"
    assert len(set(s["bootstrap"].split(",")) | set(s["direct_bootstrap"].split(","))) == 6
    assert s["toxiproxy"].startswith("http://127.")
    assert [(n["id"], n["state"]) for n in s["nodes"]] == [(1, "up"), (2, "up"), (3, "up")]
    assert all(n["pid"] for n in s["nodes"]), "each node's JVM pid (the container's main process for compose)"
    assert s["active_controller"] in (1, 2, 3)
    assert len(cluster.toxiproxy.proxies()) == 15


def test_transaction_over_all_partitions_is_read_back_whole_through_the_proxies(cluster: Cluster) -> None:
    topic, parts = topic_name("whole"), 6
    create_topic(admin_client(cluster.direct_bootstrap), topic, parts)
    p = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": topic, "logger": QUIET})
    p.init_transactions(60)
    committed = [f"c{i}" for i in range(2 * parts)]
    p.begin_transaction()
    for i, v in enumerate(committed):
        p.produce(topic, v.encode(), partition=i % parts)
    p.commit_transaction(60)
    aborted = [f"a{i}" for i in range(parts)]
    p.begin_transaction()
    for i, v in enumerate(aborted):
        p.produce(topic, v.encode(), partition=i)
    p.flush(30)
    p.abort_transaction(60)

    back = read_all(cluster.bootstrap, topic, parts, "read_committed")
    assert sorted(back.values()) == sorted(committed)
    assert all(len(back.records[n]) == 2 for n in range(parts)), back.records
    # The aborted records were really written: a read_uncommitted reader sees them.
    assert set(aborted) <= set(read_all(cluster.bootstrap, topic, parts, "read_uncommitted").values())


# 59 s: make library. make test runs the same smoke scenario (transactions through a leader's kill -9
# and restart) as the README's example (test_docs_examples.py), `smoke` killed mid-run and reclaimed
# (test_local_errors.py), and the smoke's summary on hand-made tables (tests/unit/test_smoke_check.py)
@pytest.mark.library
def test_kill_leader_while_committing_keeps_every_committed_value(cluster: Cluster) -> None:
    result = run_smoke(cluster, duration=25.0)
    assert result.killed_node is not None and result.nemesis_error is None, result.nemesis_error
    assert result.committed > 0
    assert result.passed, result.summary()


def test_cutting_one_directed_internal_link_drops_exactly_that_follower(cluster: Cluster) -> None:
    admin = admin_client(cluster.direct_bootstrap)
    topic = topic_name("cut")
    create_topic(admin, topic, 3)
    replicated(cluster.direct_bootstrap, topic)  # every follower fetching before the cut
    md = admin.list_topics(topic=topic, timeout=10).topics[topic].partitions
    leader = md[0].leader
    follower = next(r for r in md[0].replicas if r != leader)
    # a partition led by the follower: the reverse direction (leader -> follower) must stay untouched
    reverse = next((p.id for p in md.values() if p.leader == follower), None)
    link = cluster.topology.link(follower, leader, Listener.INTERNAL)
    with writes(cluster.bootstrap, topic):
        _cut_and_heal(cluster, admin, topic, leader, follower, reverse, link.name)


def _cut_and_heal(cluster: Cluster, admin, topic: str, leader: int, follower: int,  # type: ignore[no-untyped-def]
                  reverse: int | None, link: str) -> None:
    cluster.toxiproxy.set_enabled(link, False)
    wait_until(lambda: follower not in partition_isr(admin, topic, 0), timeout=ISR_CHANGE_TIMEOUT_S,
               what=f"node {follower} to leave the ISR of {topic}-0 after cutting {link}",
               state=lambda: f"isr {partition_isr(admin, topic, 0)}")
    assert sorted(admin.list_topics(timeout=10).brokers) == [1, 2, 3], "the cut follower must stay registered"
    if reverse is not None:
        assert leader in partition_isr(admin, topic, reverse), "the reverse direction was cut too"

    cluster.toxiproxy.set_enabled(link, True)
    wait_until(lambda: follower in partition_isr(admin, topic, 0), timeout=ISR_CHANGE_TIMEOUT_S,
               what=f"node {follower} to rejoin the ISR of {topic}-0 after healing {link}",
               state=lambda: f"isr {partition_isr(admin, topic, 0)}")
    assert cluster.toxiproxy.unhealed() == []


def test_pause_then_resume_and_the_cluster_is_healthy_again(cluster: Cluster) -> None:
    admin = admin_client(cluster.direct_bootstrap)
    node = 3
    cluster.pause(node)
    assert cluster.node_state(node) is NodeState.PAUSED
    # proof the pause bit: the controller fences the silent broker
    wait_until(lambda: node not in admin.list_topics(timeout=5).brokers, timeout=FENCE_TIMEOUT_S,
               what=f"paused node {node} to be fenced", state=lambda: f"brokers {sorted(admin.list_topics(timeout=5).brokers)}")
    cluster.resume(node)
    assert cluster.node_state(node) is NodeState.UP
    cluster.wait_healthy()
