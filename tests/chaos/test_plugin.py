"""The plugin's fixtures on a real cluster, as a user's own test uses them (the longer example
docs/howto/pytest-plugin.md points to; the README's own runs in test_docs_examples.py): your
transactional code, a fault on the node that leads your partition, and a check that every
committed transaction is read back exactly once, in order. The fixture heals the
cluster after the block and fails the test if it cannot."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

pytestmark = pytest.mark.chaos


def commit(producer: Producer, value: str, topic: str) -> None:
    """One transaction, retried as librdkafka asks: a retriable commit error is committed again,
    an abortable one is aborted and the whole transaction written again."""
    while True:
        producer.begin_transaction()
        producer.produce(topic, value.encode())
        try:
            while True:
                try:
                    producer.commit_transaction(120)
                    return
                except KafkaException as exc:
                    if not exc.args[0].retriable():
                        raise
        except KafkaException as exc:
            if not exc.args[0].txn_requires_abort():
                raise
            producer.abort_transaction(120)


def test_my_transactions_survive_a_leader_kill(kafka_cluster, nemesis) -> None:  # type: ignore[no-untyped-def]
    if kafka_cluster.backend != "local":
        pytest.skip("the fixtures are backend-independent (kafka_cluster is this suite's session cluster); once is enough")
    topic = f"orders-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 3)])[topic].result(60)
    producer = Producer({"bootstrap.servers": kafka_cluster.bootstrap, "transactional.id": topic})
    producer.init_transactions(120)

    with nemesis.fault("kill", target="leader", of=f"{topic}/0"):  # down until the block ends
        for i in range(20):
            commit(producer, f"order-{i}", topic)
    producer.flush(30)

    consumer = Consumer({"bootstrap.servers": kafka_cluster.bootstrap, "group.id": topic,
                         "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    seen: list[str] = []
    deadline = time.monotonic() + 120
    while len(seen) < 20 and time.monotonic() < deadline:
        msg = consumer.poll(1)
        if msg is not None and msg.error() is None:
            seen.append(msg.value().decode())
    consumer.close()
    assert seen == [f"order-{i}" for i in range(20)], f"read back within 120 s: {seen}"


def test_overlapping_faults_on_one_link_and_a_fault_that_cannot_be_applied(kafka_cluster, nemesis) -> None:  # type: ignore[no-untyped-def]
    """Two latency faults on one link are on together (each with toxics of its own names), a
    fault that cannot be put in place fails the line that asked for it, and a coordinator needs
    its transactional.id."""
    from harness.pytest_plugin import FaultNotApplied

    if kafka_cluster.backend != "local":
        pytest.skip("the fixtures are backend-independent; the toxics' names are tested once")
    link = "client-to-n1"
    nemesis.inject("latency", duration=120, target=1, listeners="client", params={"latency_ms": 20})
    with nemesis.fault("latency", target=1, listeners="client", params={"latency_ms": 30}):
        names = [t["name"] for t in kafka_cluster.toxiproxy.toxics(link)]
        assert len(names) == 4 and len(set(names)) == 4, names  # 2 faults x 2 streams, Toxiproxy took all
    assert kafka_cluster.toxiproxy.toxics(link) == []  # the block's heal ended both
    with pytest.raises(FaultNotApplied, match="no-such-topic"):
        nemesis.inject("kill", target="leader", of="no-such-topic/0")
    with pytest.raises(ValueError, match="needs of="):
        nemesis.resolve("coordinator")
