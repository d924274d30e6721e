"""The ``Client``, ``Reader`` and ``GroupReader`` protocols over Kafka's own Java client: one JVM per
workload process (``harness/workloads/clients/java_src/eoschaos/Bridge.java``) hosts its producers and consumers, and
this module talks to it over the JVM's stdin/stdout, one JSON object per line each way, one request
at a time (the protocol's Python side, shared with the Go bridges, is ``bridged.py``). The
workloads and the history they record stay the Python ones; the design, the error mapping and where
Java differs from librdkafka: docs/CLIENTS.md.

The JVM is this process's child in this process's group: a kill-workload or pause-workload fault
(``killpg``) hits it too, it inherits the process tags (``clusters/backends/procs.py``: reclaimed like the
workload), and it halts when its stdin closes, i.e. when this process ends in any way.
"""

from __future__ import annotations

import atexit
import logging
import threading
from typing import Any

from harness.workloads.client import CALL_TIMEOUT_S, ErrorFacts
from harness.workloads.clients import java_build
from harness.workloads.clients.bridged import SEND_CHUNK as SEND_CHUNK
from harness.workloads.clients.bridged import START_TIMEOUT_S, BridgedClient, BridgedConsumer, BridgedGroupMember, LineBridge, facts_from, owner_name
from harness.workloads.clients.bridged import BridgeClientError as BridgeClientError
from harness.workloads.clients.bridged import BridgeError as BridgeError
from harness.workloads.clients.bridged import GroupToken as GroupToken

log = logging.getLogger(__name__)

#: The JVM's flags: a small heap (one workload's clients), C1 only and serial GC for a fast start
#: on a small machine; the client's own log (slf4j-simple) to stderr, errors only, like librdkafka's
#: (silenced) log on the confluent side.
JVM_FLAGS = ("-Xmx128m", "-Xss512k", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-XX:-UsePerfData",
             "-Xshare:auto", "-Dorg.slf4j.simpleLogger.defaultLogLevel=error",
             "-Dorg.slf4j.simpleLogger.showDateTime=true")
#: The system property naming whose client a bridge JVM is (``procs.describe`` shows it).
OWNER_PROPERTY = "eos.chaos.client.of"


def command(build: java_build.Build) -> list[str]:
    """The JVM's command line."""
    return [str(build.java), *JVM_FLAGS, f"-D{OWNER_PROPERTY}={owner_name()}", "-cp", build.classpath,
            java_build.MAIN_CLASS]


class Bridge(LineBridge):
    """One JVM serving this process's Java clients of one kafka-clients version."""

    def __init__(self, build: java_build.Build) -> None:
        self.build = build
        super().__init__(command(build), "java client JVM")
        self.kafka_clients = str(self.hello["kafka_clients"])
        log.info(f"java client JVM pid {self.proc.pid}: kafka-clients {self.kafka_clients} on Java {self.hello['java']}, "
                 f"answering after {self.startup_s * 1000:.0f} ms")


_bridges: dict[str, Bridge] = {}
_bridges_lock = threading.Lock()


def bridge(version: str) -> Bridge:
    """This process's JVM for kafka-clients ``version``, started at first use."""
    with _bridges_lock:
        b = _bridges.get(version)
        if b is None or b.proc.poll() is not None:
            b = _bridges[version] = Bridge(java_build.ready(version) or java_build.ensure(version))
        return b


@atexit.register
def _shutdown_all() -> None:
    for b in list(_bridges.values()):
        b.shutdown()


def producer_config(bootstrap: str, txn_id: str, transaction_timeout_ms: int, overrides: dict[str, Any]) -> dict[str, Any]:
    """The Java producer's settings, mirroring ``ConfluentClient``'s: idempotent, acks=all (implied
    by transactions in both), linger.ms 5, a 5 s connection set-up timeout; each blocking call
    bounded by the workloads' call timeout (max.block.ms; librdkafka takes it per call); records
    expire no later than the transaction would (librdkafka caps message.timeout.ms at
    transaction.timeout.ms; Java needs delivery.timeout.ms >= linger.ms + request.timeout.ms)."""
    return {
        "bootstrap.servers": bootstrap, "transactional.id": txn_id, "transaction.timeout.ms": transaction_timeout_ms,
        "enable.idempotence": True, "acks": "all", "linger.ms": 5, "socket.connection.setup.timeout.ms": 5000,
        "max.block.ms": int(CALL_TIMEOUT_S * 1000), "delivery.timeout.ms": max(transaction_timeout_ms, 30_000 + 5),
        **overrides,
    }


def consumer_config(bootstrap: str, group: str | None, overrides: dict[str, Any]) -> dict[str, Any]:
    """The Java consumer's settings, mirroring ``_Consumer``'s: read_committed, no auto-commit."""
    conf: dict[str, Any] = {"bootstrap.servers": bootstrap, "enable.auto.commit": False,
                            "isolation.level": "read_committed", "auto.offset.reset": "earliest"}
    if group is not None:
        conf["group.id"] = group
    return {**conf, **overrides}


class JavaClient(BridgedClient):
    """A transactional ``KafkaProducer`` (in the bridge JVM) behind the ``Client`` protocol."""

    GROUP_READER = "JavaGroupReader"

    def _open_bridge(self, version: str) -> Bridge:
        return bridge(version)

    def _config(self, bootstrap: str, txn_id: str, transaction_timeout_ms: int, overrides: dict[str, Any]) -> dict[str, Any]:
        return producer_config(bootstrap, txn_id, transaction_timeout_ms, overrides)


class JavaReader(BridgedConsumer):
    """The ``Reader`` protocol: assign mode, from offset 0 (no group: Java needs none for it)."""

    def __init__(self, version: str, bootstrap: str, group: str, partitions: list[tuple[str, int]],
                 overrides: dict[str, Any] | None = None) -> None:
        # ``group`` is the protocol's (harness/workloads/clients: every reader is opened alike); unused
        super().__init__(bridge(version), consumer_config(bootstrap, None, overrides or {}),
                         assign=[[t, p] for t, p in partitions])


class JavaGroupReader(BridgedGroupMember):
    """The ``GroupReader`` protocol: subscribe mode in ``group``, from its committed offsets."""

    def __init__(self, version: str, bootstrap: str, group: str, topics: list[str],
                 overrides: dict[str, Any] | None = None) -> None:
        super().__init__(bridge(version), consumer_config(bootstrap, group, overrides or {}), subscribe=list(topics))


def client_facts(version: str, exception: dict[str, Any]) -> ErrorFacts:
    """How the bridge of ``version`` maps ``exception`` (``{"class", "message", "cause"}``, built in
    the JVM) to ``ErrorFacts``, without a producer: the unit tests' view of the mapping."""
    return facts_from(bridge(version).request("facts", START_TIMEOUT_S, exception=exception))
