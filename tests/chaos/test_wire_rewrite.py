"""Broker address rewriting against a real cluster (docs/WIRE-FAULTS.md, Address rewriting): a wire
proxy started here in front of the session cluster's brokers, one link per broker, rewriting every
broker address to its own listeners. A confluent-kafka client bootstrapped at those listeners reads
and writes transactionally (consume, produce, offsets in the transaction, commit: Metadata,
FindCoordinator for the transaction and the group, Produce, Fetch), and every broker it ever
connects to is one of the proxy's listeners. The negative control: the same proxy without the map
hands the client the brokers' own advertised addresses, which the check would catch.

The brokers of the built-in backends advertise their Toxiproxy listeners, so a client that leaves
the rewriting proxy shows as a connection to one of those (127.10.x.x), never to 127.0.0.1.
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from clusters.backends.protocol import Cluster
from clusters.kafka.health import admin_client
from clusters.wire import kwire_build
from clusters.wire.wire_api import Advertised, RewriteCounts, WireProxy
from harness.base.wait import wait_until
from harness.kafka.admin import create_topic

pytestmark = pytest.mark.chaos

VALUES = 30


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Front:
    """The proxy started here: its listeners by node id, its API, its event log."""

    listens: dict[int, str]
    wire: WireProxy
    events: Path

    @property
    def bootstrap(self) -> str:
        return ",".join(self.listens.values())


def _front(cluster: Cluster, tmp: Path, rewrite: bool) -> Iterator[Front]:
    if cluster.backend != "local":
        pytest.skip("the proxy started here reaches the brokers' client sockets on the local backend only")
    nodes = cluster.topology.node_ids
    upstream = {n: cluster.wire.stats().links[f"client-to-n{n}"]["upstream"] for n in nodes}
    listens = {n: f"127.0.0.1:{_free_port()}" for n in nodes}
    api, events = f"127.0.0.1:{_free_port()}", tmp / "front-events.log"
    cmd = [str(kwire_build.build_kwire()), "-api", api, "-events", str(events)]
    cmd += [a for n in nodes for a in ("-link", f"front-n{n}={listens[n]}={upstream[n]}")]
    cmd += Advertised.of(listens).args() if rewrite else []
    with open(tmp / "front.log", "ab") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    wire = WireProxy(f"http://{api}")
    try:
        wait_until(lambda: wire.ping() or None, timeout=10, what="the wire proxy started here")
        yield Front(listens, wire, events)
    finally:
        proc.kill()
        proc.wait()
        wire.close()


@pytest.fixture
def front(cluster: Cluster, tmp_path: Path) -> Iterator[Front]:
    yield from _front(cluster, tmp_path, rewrite=True)


@pytest.fixture
def plain_front(cluster: Cluster, tmp_path: Path) -> Iterator[Front]:
    yield from _front(cluster, tmp_path, rewrite=False)


class Seen:
    """Every broker address a librdkafka client reported in its statistics (``nodename``)."""

    def __init__(self) -> None:
        self.addrs: set[str] = set()

    def __call__(self, stats: str) -> None:
        self.addrs |= {b["nodename"] for b in json.loads(stats)["brokers"].values() if b.get("nodename")}


def _metadata_brokers(client: Producer | Consumer) -> set[str]:
    return {f"{b.host}:{b.port}" for b in client.list_topics(timeout=30).brokers.values()}


def _copy_transactionally(front: Front, topic_in: str, topic_out: str, seen: Seen) -> None:
    """Read every value of topic_in through the proxy and write it to topic_out, in transactions that
    also commit the group's offsets: the coordinator's FindCoordinator, Produce and Fetch on each leader."""
    txn = f"rewrite-{uuid.uuid4().hex[:6]}"
    common = {"bootstrap.servers": front.bootstrap, "statistics.interval.ms": 100, "stats_cb": seen}
    consumer = Consumer({**common, "group.id": txn, "isolation.level": "read_committed",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    producer = Producer({**common, "transactional.id": txn, "linger.ms": 0})
    producer.init_transactions(60)
    consumer.subscribe([topic_in])
    copied, deadline = 0, time.monotonic() + 60
    try:
        while copied < VALUES and time.monotonic() < deadline:
            batch = consumer.consume(10, 1.0)
            if not batch:
                continue
            producer.begin_transaction()
            for m in batch:
                producer.produce(topic_out, m.value(), partition=m.partition() or 0)
            producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                                 consumer.consumer_group_metadata(), 30)
            producer.commit_transaction(30)
            copied += len(batch)
        assert copied == VALUES, f"copied {copied} of {VALUES} within 60 s"
        producer.poll(0.3)  # the last statistics
        consumer.poll(0.3)
        assert _metadata_brokers(producer) == set(front.listens.values())
    finally:
        consumer.close()


def _committed(bootstrap: str, topic: str) -> list[bytes]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex[:6]}",
                  "isolation.level": "read_committed", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(3)])
        out: list[bytes] = []
        deadline = time.monotonic() + 20
        while len(out) < VALUES and time.monotonic() < deadline:
            out += [m.value() or b"" for m in c.consume(100, 0.5) if m.error() is None]
        return out
    finally:
        c.close()


def test_a_transactional_client_behind_the_rewriting_proxy_never_reaches_a_broker_around_it(
        cluster: Cluster, front: Front) -> None:
    topic_in, topic_out = f"rw-in-{uuid.uuid4().hex[:6]}", f"rw-out-{uuid.uuid4().hex[:6]}"
    admin = admin_client(cluster.direct_bootstrap)
    for t in (topic_in, topic_out):
        create_topic(admin, t, 3)
    seed = Producer({"bootstrap.servers": cluster.direct_bootstrap})
    for i in range(VALUES):
        seed.produce(topic_in, str(i).encode(), partition=i % 3)
    assert seed.flush(30) == 0
    seen = Seen()
    _copy_transactionally(front, topic_in, topic_out, seen)
    # the client met no address but the proxy's: bootstrap and every broker it learned
    assert seen.addrs and seen.addrs <= set(front.listens.values()), seen.addrs
    assert sorted(_committed(cluster.direct_bootstrap, topic_out)) == sorted(str(i).encode() for i in range(VALUES))
    stats = front.wire.stats()
    assert all(stats.links[f"front-n{n}"]["connections"] > 0 for n in front.listens), stats.links
    assert all(c.rewritten > 0 and c == RewriteCounts(c.rewritten) for c in stats.rewrite.values()), stats.rewrite
    assert front.wire.rewrite_problems() == []
    assert "rewrite-failed" not in front.events.read_text()


def test_without_the_map_the_client_learns_the_brokers_own_addresses(cluster: Cluster, plain_front: Front) -> None:
    # the negative control of the check above: a proxy that does not rewrite lets the client out
    p = Producer({"bootstrap.servers": plain_front.bootstrap})
    brokers = _metadata_brokers(p)
    assert brokers and not brokers & set(plain_front.listens.values()), brokers
    assert brokers == set(cluster.bootstrap.split(","))
