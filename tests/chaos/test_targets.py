"""Role targets against a real cluster: the coordinators we compute are the ones Kafka's own tools
report (kafka-transactions / kafka-consumer-groups --describe, over DIRECT)."""

from __future__ import annotations

import re
import subprocess
import uuid

import pytest
from confluent_kafka import Consumer, Producer

from chaos.targets import group_coordinator, leader, transaction_coordinator
from clusters.backends.protocol import Cluster
from clusters.builds.jdk import find_java
from clusters.kafka.health import QUIET, admin_client
from clusters.kafka.kafka_release import fetch_kafka_tools
from harness.kafka.admin import create_topic

pytestmark = pytest.mark.chaos


def kafka_tool(main_class: str, *args: str) -> str:
    tools = fetch_kafka_tools()
    proc = subprocess.run([str(find_java()[0]), "-cp", f"{tools}/*", main_class, *args], capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_transaction_and_group_coordinators_match_kafkas_tools(cluster: Cluster) -> None:
    admin = admin_client(cluster.direct_bootstrap)
    topic, txn_id, group = (f"targets-{uuid.uuid4().hex[:6]}", f"tx-{uuid.uuid4().hex[:6]}", f"g-{uuid.uuid4().hex[:6]}")
    create_topic(admin, topic, 3)
    assert leader(admin, topic, 0) in cluster.topology.node_ids

    p = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": txn_id, "logger": QUIET})
    p.init_transactions(60)
    p.begin_transaction()
    p.produce(topic, b"x", partition=0)
    p.commit_transaction(60)
    out = kafka_tool("org.apache.kafka.tools.TransactionsCommand", "--bootstrap-server", cluster.direct_bootstrap,
                     "describe", "--transactional-id", txn_id)
    reported = int(out.strip().splitlines()[1].split()[0])  # first column of the row: CoordinatorId
    assert transaction_coordinator(admin, txn_id) == reported, out

    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "logger": QUIET,
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    msg = None
    for _ in range(60):
        msg = c.poll(1.0)
        if msg is not None and msg.error() is None:
            break
    assert msg is not None and msg.error() is None
    c.commit(message=msg, asynchronous=False)
    try:
        out = kafka_tool("org.apache.kafka.tools.consumer.group.ConsumerGroupCommand", "--bootstrap-server",
                         cluster.direct_bootstrap, "--describe", "--group", group, "--state")
    finally:
        c.close()
    m = re.search(r"\((\d+)\)", out)
    assert m and group_coordinator(admin, group) == int(m[1]), out
