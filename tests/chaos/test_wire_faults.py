"""Request-aware faults on a real cluster, through the wire proxy on the clients' links
(clusters/wire/kwire, docs/WIRE-FAULTS.md), applied by the nemesis as a scenario applies them, and
healed as every run heals (heal-all: rules cleared, held requests delivered; a frozen proxy
restarted).

The KAFKA-17754 mechanism: the client's EndTxn (commit) is held; the client times out, closes its
connection and moves on; the held request reaches the broker *after* that, and the broker acts on
it. The wire proxy's event log shows the delivery after the client left and the broker's answer;
a read_committed consumer shows the broker committed. The clean twin: the proxy in the path with no
rule changes nothing (a commit takes milliseconds and no event is logged).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import struct
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from chaos import faults
from chaos.heal import heal_all
from chaos.nemesis import Nemesis
from chaos.targets import TargetDefaults
from clusters.backends.protocol import Cluster
from clusters.kafka.health import admin_client
from clusters.wire.wire_api import Rule
from harness.base.wait import wait_until
from harness.history.recorder import Recorder
from harness.kafka.admin import create_topic
from harness.run.supervisor import Supervisor
from tests.chaos.test_fault_effects import fault_on  # the fault on inside a block, ended by the nemesis

# what a late EndTxn of the same producer epoch can do (KAFKA-17754; Jepsen's Bufstream analysis),
# precommitted-read among it (CI: the late commit committed the next transaction while it was open)
from tests.chaos.test_kip890 import LATE_COMMIT_ANOMALIES

pytestmark = pytest.mark.chaos

#: librdkafka gives up on a request after socket.timeout.ms and then closes the connection
#: (socket.max.fails 1): short, so the held EndTxn's client leaves within seconds.
SOCKET_TIMEOUT_MS = 3000


@pytest.fixture
def txn() -> str:
    return f"wire-{uuid.uuid4().hex[:6]}"


@pytest.fixture
def nemesis(cluster: Cluster, txn: str, tmp_path: Path) -> Iterator[Nemesis]:
    create_topic(admin_client(cluster.direct_bootstrap), txn, 1)
    with Recorder(tmp_path, "nemesis") as rec:
        nem = Nemesis(cluster, Supervisor(tmp_path, dict(os.environ)), rec,
                      defaults=TargetDefaults(topic=txn, transactional_id=txn))
        yield nem
        nem.stop.set()
    assert cluster.wire.unhealed() == []


def producer(cluster: Cluster, txn: str) -> Producer:
    p = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": txn, "linger.ms": 0,
                  "socket.timeout.ms": SOCKET_TIMEOUT_MS, "enable.idempotence": True})
    p.init_transactions(60)
    return p


def committed_values(cluster: Cluster, topic: str) -> list[str]:
    """Every value a read_committed reader sees in ``topic``'s partition 0 up to its last stable offset."""
    c = Consumer({"bootstrap.servers": cluster.direct_bootstrap, "group.id": f"check-{uuid.uuid4().hex[:6]}",
                  "isolation.level": "read_committed", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        seen: list[str] = []
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                if seen:
                    break
                continue
            if m.error() is None:
                seen.append(m.value().decode())
        return seen
    finally:
        c.close()


def wire_events(cluster: Cluster, txn: str) -> list[dict[str, Any]]:
    """The event log's lines about ``txn``'s requests."""
    path = cluster.wire_events
    lines = path.read_text().splitlines() if path.exists() else []
    return [ev for ev in map(json.loads, lines) if (ev.get("details") or {}).get("transactional_id") == txn]


def test_a_held_commit_reaches_the_broker_after_the_client_gave_up(cluster: Cluster, nemesis: Nemesis, txn: str) -> None:
    p = producer(cluster, txn)
    p.begin_transaction()
    p.produce(txn, b"v1", partition=0)
    p.flush(30)
    with fault_on(nemesis, kind="hold-requests", api="EndTxn", of=txn, until="client-gone", hold_ms=500):
        with pytest.raises(KafkaException) as info:
            p.commit_transaction(1)  # gives up before librdkafka's request timeout closes the connection
        err = info.value.args[0]
        assert err.retriable() and not err.fatal(), err  # the commit's outcome is unknown to the client: info

        def first_answered() -> dict[str, Any] | None:
            events = wire_events(cluster, txn)
            first = next((e for e in events if e["event"] == "match"), None)
            return next((e for e in events if first and e["event"] == "response"
                         and (e["conn"], e["correlation_id"]) == (first["conn"], first["correlation_id"])), None)

        answer = wait_until(first_answered, timeout=30, what=f"the first held EndTxn of {txn} to be answered by the broker",
                            state=lambda: str(wire_events(cluster, txn)))
        events = [e for e in wire_events(cluster, txn) if (e["conn"], e["correlation_id"]) == (answer["conn"], answer["correlation_id"])]
        match, deliver = (next(e for e in events if e["event"] == what) for what in ("match", "deliver"))
        # held from the match, delivered only after the client closed that connection, answered by the broker
        assert match["action"] == "hold" and match["details"]["committed"] is True
        assert deliver["client_gone"] is True and deliver["held_ms"] >= SOCKET_TIMEOUT_MS - 500, deliver
        assert answer["to_client"] is False and answer["error"] == "NONE", answer
        # the late EndTxn committed the transaction whose commit the client saw time out
        assert committed_values(cluster, txn) == ["v1"]
    assert cluster.wire.unhealed() == []  # the fault's own heal removed the rule and delivered the rest
    # the client retries its commit (as it must after a timeout): the broker says it is done
    p.commit_transaction(30)
    assert committed_values(cluster, txn) == ["v1"]


def test_error_responses_answer_endtxn_without_the_broker(cluster: Cluster, nemesis: Nemesis, txn: str) -> None:
    p = producer(cluster, txn)
    p.begin_transaction()
    p.produce(txn, b"v1", partition=0)
    p.flush(30)
    heal = faults.parse({"at": 0, "kind": "error-responses", "api": "EndTxn", "of": txn, "count": 1,
                         "error": "CONCURRENT_TRANSACTIONS"}).apply(nemesis._context())
    try:
        p.commit_transaction(30)  # librdkafka retries CONCURRENT_TRANSACTIONS: the second EndTxn passes
    finally:
        heal()
    events = wire_events(cluster, txn)
    answered = [e for e in events if e["event"] == "respond" and e["api"] == "EndTxn"]
    assert len(answered) == 1 and answered[0]["synthesized"] is True, events
    assert committed_values(cluster, txn) == ["v1"]


def test_with_no_rule_the_proxy_changes_nothing(cluster: Cluster, txn: str) -> None:
    before = cluster.wire.stats()
    create_topic(admin_client(cluster.direct_bootstrap), txn, 1)
    p = producer(cluster, txn)
    for i in range(5):
        p.begin_transaction()
        p.produce(txn, f"v{i}".encode(), partition=0)
        started = time.monotonic()
        p.commit_transaction(30)
        assert time.monotonic() - started < 5
    assert committed_values(cluster, txn) == [f"v{i}" for i in range(5)]
    after = cluster.wire.stats()
    passed = sum(s["requests"] for s in after.links.values()) - sum(s["requests"] for s in before.links.values())
    assert passed >= 5 * 2 and after.rules == [] and after.held == 0  # every commit went through it
    assert wire_events(cluster, txn) == []


def _api_versions_request(corr: int) -> bytes:
    body = struct.pack(">hhih", 18, 0, corr, 5) + b"probe"
    return struct.pack(">i", len(body)) + body


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        assert chunk, f"connection closed after {len(buf)} of {n} bytes"
        buf += chunk
    return buf


def _hold_one_api_versions(cluster: Cluster) -> socket.socket:
    """A rule holding ApiVersions on node 1's client link until the client leaves, and a client
    connection whose ApiVersions request it holds."""
    cluster.wire.add_rule(Rule(apis=("ApiVersions",), action="hold", links=("client-to-n1",), until="client-gone"))
    host, port = cluster.bootstrap.split(",")[0].rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=10)
    sock.sendall(_api_versions_request(77))
    wait_until(lambda: cluster.wire.stats().held == 1, timeout=10, what="the wire proxy to hold the ApiVersions request",
               state=lambda: str(cluster.wire.stats()))
    return sock


def test_heal_all_clears_the_rules_and_delivers_what_is_held(cluster: Cluster) -> None:
    sock = _hold_one_api_versions(cluster)
    with sock:
        assert heal_all(cluster) == []
        answer = _recv_exactly(sock, 8)  # delivered by the heal, answered by the broker, to the client still there
        assert struct.unpack(">i", answer[4:])[0] == 77
    assert cluster.wire.unhealed() == []


def test_heal_escalates_to_restarting_a_frozen_wire_proxy(cluster: Cluster, caplog: pytest.LogCaptureFixture) -> None:
    frozen_wire_proxy_is_restarted_by_the_heal(cluster, caplog)


def frozen_wire_proxy_is_restarted_by_the_heal(cluster: Cluster, caplog: pytest.LogCaptureFixture) -> None:
    """A wire proxy frozen (SIGSTOP; paused container) while it holds a request: the heal escalates
    to restarting it, and the new one carries the link (tests/chaos/test_wire_between_brokers.py runs
    it with every link between brokers through the proxy too)."""
    sock = _hold_one_api_versions(cluster)
    if cluster.backend == "local":
        os.kill(int(cluster.status().extra["wire_pid"]), signal.SIGSTOP)
    else:
        cluster.container("wire").pause()  # type: ignore[attr-defined]
    with sock, caplog.at_level(logging.INFO, logger="chaos.heal"):
        problems = heal_all(cluster)
    said = [r.getMessage() for r in caplog.records]
    assert problems == [], problems
    assert any("escalating to wire proxy 'restart'" in m for m in said), said
    assert cluster.wire.unhealed() == []
    host, port = cluster.bootstrap.split(",")[0].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as again:  # the new proxy carries the link
        again.sendall(_api_versions_request(78))
        assert struct.unpack(">i", _recv_exactly(again, 8)[4:])[0] == 78


#: A txn-producer whose commits the wire proxy holds until librdkafka gives up on them (its
#: socket.timeout.ms) and closes the connection; each late EndTxn then reaches the coordinator.
#: librdkafka sends EndTxn v1 (no epoch bump per transaction, KIP-890 part 2 needs v5), so a late
#: commit that lands while the producer's next transaction is open commits that one, half-written:
#: KAFKA-17754. Whether it lands inside the next transaction is a matter of timing, so this run
#: may be valid or show exactly that (see the test).
LATE_COMMITS = """\
name: late-commits
description: EndTxn held until the client gave up on it, then delivered (the KAFKA-17754 mechanism).
duration: 16
workloads:
  - kind: txn-producer
    count: 1
    settings: {values_per_txn: 3, abort_share: 0.0, commit_timeout_s: 1}
    client: {socket.timeout.ms: 2000}
  - kind: reader
    count: 1
faults:
  - {at: 3, kind: hold-requests, api: EndTxn, until: client-gone, hold_ms: 300, count: 2, duration: 10}
expect:
  min_ok_txns: 5
  errors: [_TIMED_OUT]
"""


def test_a_scenario_with_late_commits_records_them_and_heals(run_scenario, cluster: Cluster,  # type: ignore[no-untyped-def]
                                                            tmp_path: Path) -> None:
    path = tmp_path / "late-commits.yaml"
    path.write_text(LATE_COMMITS)
    since_us = time.time() * 1e6
    v = run_scenario(str(path))
    # the clients met _TIMED_OUT (the commits the proxy held) and the run healed
    assert v["stats"]["errors_seen"].get("_TIMED_OUT", 0) >= 1, v.summary()
    assert v["stats"]["txn"]["ok"] >= 5 and v["valid"] in (True, False), v.summary()
    assert v["run"]["healed"] and v["run"]["nemesis_errors"] == [], v["run"]
    # valid, or only what a late commit of the same epoch causes
    assert set(v.anomalies) <= LATE_COMMIT_ANOMALIES, v.summary()
    lines = cluster.wire_events.read_text().splitlines()
    late = [e for e in map(json.loads, lines) if e["unix_us"] >= since_us and e["event"] == "deliver"
            and e["client_gone"] and e["details"]["transactional_id"] == "eos-txn-producer-0"]
    assert 1 <= len(late) <= 2, late  # count: 2 -- delivered after the producer had closed the connection
    # the run on the session's shared cluster keeps its own slice of the proxy's events
    kept = [json.loads(x) for x in (v.run_dir / "wire-events.jsonl").read_text().splitlines()]
    assert kept and min(e["unix_us"] for e in kept) >= since_us and all(e in kept for e in late), kept[:3]
