"""The ``Client``, ``Reader`` and ``GroupReader`` protocols over Kafka's own Java client: one JVM per
workload process (``harness/jvm/src/eoschaos/Bridge.java``) hosts its producers and consumers, and
this module talks to it over the JVM's stdin/stdout, one JSON object per line each way, one request
at a time. The workloads and the history they record stay the Python ones; the design, the error
mapping and where Java differs from librdkafka: docs/CLIENTS.md.

Records travel in bulk: ``send`` only buffers in Python; ``flush`` (or a full buffer) hands the
records to the JVM in one message, and ``flush``'s answer carries their offsets.

The JVM is this process's child in this process's group: a kill-workload or pause-workload fault
(``killpg``) hits it too, it inherits the process tags (``clusters/procs.py``: reclaimed like the
workload), and it halts when its stdin closes, i.e. when this process ends in any way.
"""

from __future__ import annotations

import atexit
import logging
import os
import select
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from harness.workloads.client import CALL_TIMEOUT_S, ClientError, ErrorFacts, OnOffset, Record
from harness.workloads.clients import java_build

log = logging.getLogger(__name__)

#: The JVM's flags: a small heap (one workload's clients), C1 only and serial GC for a fast start
#: on a small machine; the client's own log (slf4j-simple) to stderr, errors only, like librdkafka's
#: (silenced) log on the confluent side.
JVM_FLAGS = ("-Xmx128m", "-Xss512k", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-XX:-UsePerfData",
             "-Xshare:auto", "-Dorg.slf4j.simpleLogger.defaultLogLevel=error",
             "-Dorg.slf4j.simpleLogger.showDateTime=true")
#: The system property naming whose client a bridge JVM is (``procs.describe`` shows it).
OWNER_PROPERTY = "eos.chaos.client.of"
#: A JVM with its Kafka client classes starts in well under a second here; generous for a loaded machine.
START_TIMEOUT_S = 60.0
#: Past a call's own timeout, how long its answer may take (a flush's sends may each wait for
#: metadata up to max.block.ms first; a bridge that stays silent longer is broken).
ANSWER_MARGIN_S = 120.0
#: Records buffered by ``send`` before they go to the JVM without waiting for a flush.
SEND_CHUNK = 5000
#: How long closing a client may take (the consumer leaves its group: bounded to 5 s in the JVM).
CLOSE_TIMEOUT_S = 30.0
#: A wait that lasts longer than its slice by this much was frozen (SIGSTOP of the group): frozen
#: time does not count against a deadline, or every pause-workload fault would end in a bogus timeout.
FROZEN_SLACK_S = 1.0


class BridgeError(RuntimeError):
    """The bridge itself failed (died, stayed silent, or reported a bug of its own): never a Kafka
    error, so it is not a ``ClientError`` and takes the workload down, with the JVM's log above it."""


def facts_from(err: dict[str, Any]) -> ErrorFacts:
    """The ``ErrorFacts`` of an ``error`` object the bridge sent (its extra fields, like the Java
    exception class, are in the message already)."""
    return ErrorFacts(str(err["name"]), str(err["message"]), retriable=bool(err.get("retriable")),
                      fatal=bool(err.get("fatal")), txn_requires_abort=bool(err.get("txn_requires_abort")),
                      fenced=bool(err.get("fenced")), timed_out=bool(err.get("timed_out")))


def owner_name() -> str:
    """Whose client this is: the workload's name (its config file is named after it), else the pid."""
    arg = sys.argv[1] if len(sys.argv) > 1 else ""
    return Path(arg).stem if arg.endswith(".json") else f"pid {os.getpid()}"


def command(build: java_build.Build) -> list[str]:
    """The JVM's command line."""
    return [str(build.java), *JVM_FLAGS, f"-D{OWNER_PROPERTY}={owner_name()}", "-cp", build.classpath,
            java_build.MAIN_CLASS]


class Bridge:
    """One JVM serving this process's Java clients of one kafka-clients version."""

    def __init__(self, build: java_build.Build) -> None:
        self.build = build
        t0 = time.monotonic()
        # stderr inherited: the JVM's log lands in the workload's log. Same process group (no new
        # session): killpg of the workload reaches the JVM.
        self.proc = subprocess.Popen(command(build), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None,
                                     close_fds=True)
        self._next = 0
        self._lock = threading.Lock()
        self._buf = b""
        hello = self.request("hello", START_TIMEOUT_S)
        self.startup_s = time.monotonic() - t0
        self.kafka_clients = str(hello["kafka_clients"])
        log.info(f"java client JVM pid {self.proc.pid}: kafka-clients {self.kafka_clients} on Java {hello['java']}, "
                 f"answering after {self.startup_s * 1000:.0f} ms")

    def request(self, op: str, wait_s: float, **args: Any) -> Any:
        """Send one request and return its ``ok`` result; ``ClientError`` for a failed client call
        (with the acknowledged offsets, if any, in ``partial``), ``BridgeError`` for a broken bridge."""
        answer = self.exchange(op, wait_s, **args)
        if "error" in answer:
            raise BridgeClientError(facts_from(answer["error"]), answer.get("offsets"))
        return answer.get("ok")

    def exchange(self, op: str, wait_s: float, **args: Any) -> dict[str, Any]:
        """Send one request and return the whole answer (``ok`` or ``error``)."""
        with self._lock:
            self._next += 1
            ident = self._next
            if self.proc.stdin is None or self.proc.poll() is not None:
                raise BridgeError(f"the java client JVM (pid {self.proc.pid}) is gone (exit {self.proc.returncode}); "
                                  "its output is in this workload's log")
            try:
                self.proc.stdin.write(orjson.dumps({"id": ident, "op": op, **args}) + b"\n")
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError) as exc:
                raise BridgeError(f"cannot write to the java client JVM (pid {self.proc.pid}): {exc}") from exc
            line = self._read_line(op, wait_s)
        answer: dict[str, Any] = orjson.loads(line)
        if "bug" in answer:
            raise BridgeError(f"the java client bridge failed on {op}: {answer['bug']} (stack trace in this workload's log)")
        if answer.get("id") != ident:
            raise BridgeError(f"the java client bridge answered request {answer.get('id')} to request {ident} ({op})")
        return answer

    def _read_line(self, op: str, wait_s: float) -> bytes:
        """One answer line within ``wait_s`` of running time (time frozen by SIGSTOP excluded)."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        waited = 0.0
        while b"\n" not in self._buf:
            if waited > wait_s:
                self.kill()
                raise BridgeError(f"no answer from the java client JVM (pid {self.proc.pid}) to {op} within {wait_s:.0f}s; "
                                  f"last state: {len(self._buf)} bytes of a partial answer; killed it")
            t = time.monotonic()
            readable, _, _ = select.select([fd], [], [], 1.0)
            slept = time.monotonic() - t
            waited += slept if slept < 1.0 + FROZEN_SLACK_S else 1.0
            if readable:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    code = self.proc.wait(timeout=CLOSE_TIMEOUT_S)
                    raise BridgeError(f"the java client JVM (pid {self.proc.pid}) exited ({code}) during {op}; "
                                      "its output is in this workload's log")
                self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=CLOSE_TIMEOUT_S)

    def shutdown(self) -> None:
        """Close its stdin (the JVM halts on end of input) and reap it; kill it if it lingers."""
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self.kill()


class BridgeClientError(ClientError):
    """A ``ClientError`` from the bridge, with the offsets of the records a failed flush did get
    acknowledged (send order; None: not acknowledged)."""

    def __init__(self, facts: ErrorFacts, partial: list[int | None] | None = None) -> None:
        super().__init__(facts)
        self.partial = partial


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


@dataclass
class _Pending:
    """Records handed to the client but not yet acknowledged: what to tell ``on_offset`` per record."""

    records: list[tuple[str, int, str | None, str]] = field(default_factory=list)
    callbacks: list[tuple[bytes, OnOffset]] = field(default_factory=list)


class JavaClient:
    """A transactional ``KafkaProducer`` (in the bridge JVM) behind the ``Client`` protocol."""

    def __init__(self, version: str, bootstrap: str, txn_id: str, transaction_timeout_ms: int,
                 overrides: dict[str, Any] | None = None) -> None:
        self.bridge = bridge(version)
        conf = producer_config(bootstrap, txn_id, transaction_timeout_ms, overrides or {})
        self.handle = int(self.bridge.request("producer.open", CLOSE_TIMEOUT_S, config=conf))
        self.buffer = _Pending()       # sent by the workload, not yet handed to the JVM
        self.in_flight: list[tuple[bytes, OnOffset]] = []  # handed to the JVM, not yet reported

    def _call(self, op: str, timeout_s: float, **args: Any) -> Any:
        return self.bridge.request(op, timeout_s + ANSWER_MARGIN_S, h=self.handle, timeout=timeout_s, **args)

    def init(self, timeout_s: float) -> None:
        self._call("producer.init", timeout_s)

    def begin(self) -> None:
        self.buffer, self.in_flight = _Pending(), []  # the JVM forgets the last transaction's records too
        self._call("producer.begin", 0)

    def send(self, topic: str, partition: int, value: bytes, key: bytes | None, on_offset: OnOffset) -> None:
        self.buffer.records.append((topic, partition, None if key is None else key.decode("latin-1"), value.decode()))
        self.buffer.callbacks.append((value, on_offset))
        if len(self.buffer.records) >= SEND_CHUNK:
            records, self.in_flight = self._take()
            self._call("producer.send", 0, records=records)

    def _take(self) -> tuple[list[tuple[str, int, str | None, str]], list[tuple[bytes, OnOffset]]]:
        """The buffered records to hand over, and every callback they and earlier ones await."""
        records, waiting = self.buffer.records, self.in_flight + self.buffer.callbacks
        self.buffer = _Pending()
        return records, waiting

    def flush(self, timeout_s: float) -> None:
        records, waiting = self._take()
        self.in_flight = []
        if not records and not waiting:
            return
        try:
            offsets = self._call("producer.flush", timeout_s, records=records)
        except BridgeClientError as exc:
            _report(waiting, exc.partial or [])
            raise
        _report(waiting, offsets)

    def send_offsets(self, offsets: dict[tuple[str, int], int], group_metadata: object, timeout_s: float) -> None:
        if not isinstance(group_metadata, GroupToken):
            raise TypeError(f"send_offsets needs the group metadata of a JavaGroupReader, not {type(group_metadata).__name__}")
        self._call("producer.send_offsets", timeout_s, offsets=[[t, p, o] for (t, p), o in offsets.items()],
                   group=group_metadata.consumer, token=group_metadata.token)

    def commit(self, timeout_s: float) -> None:
        self._call("producer.commit", timeout_s)

    def abort(self, timeout_s: float) -> None:
        self._call("producer.abort", timeout_s)

    def close(self) -> None:
        _close(self.bridge, self.handle)


def _report(waiting: list[tuple[bytes, OnOffset]], offsets: list[int | None]) -> None:
    """``on_offset`` for every acknowledged record (offsets in send order, None: not acknowledged)."""
    for (value, on_offset), offset in zip(waiting, offsets):
        if offset is not None:
            on_offset(value, offset)


def _close(b: Bridge, handle: int) -> None:
    """Close a client in the JVM; never raises (a broken bridge or client is being dropped anyway)."""
    try:
        b.request("close", CLOSE_TIMEOUT_S, h=handle)
    except (ClientError, BridgeError) as exc:
        log.info(f"closing java client {handle}: {exc}")


@dataclass(frozen=True)
class GroupToken:
    """``GroupReader.group_metadata()`` of the Java client: a snapshot of the consumer's
    ``groupMetadata()`` kept in the JVM, named by consumer handle and token."""

    consumer: int
    token: int


class _JavaConsumer:
    """What both readers share: a ``KafkaConsumer`` in the bridge JVM, its polls, its close."""

    def __init__(self, version: str, conf: dict[str, Any], **spec: Any) -> None:
        self.bridge = bridge(version)
        self.handle = int(self.bridge.request("consumer.open", CLOSE_TIMEOUT_S, config=conf, **spec))

    def _call(self, op: str, timeout_s: float, **args: Any) -> Any:
        return self.bridge.request(op, timeout_s + ANSWER_MARGIN_S, h=self.handle, **args)

    def poll(self, max_records: int, timeout_s: float) -> list[Record]:
        rows = self._call("consumer.poll", timeout_s, max=max_records, timeout=timeout_s)
        return [(str(t), int(p), int(o), str(v)) for t, p, o, v in rows]

    def close(self) -> None:
        _close(self.bridge, self.handle)


class JavaReader(_JavaConsumer):
    """The ``Reader`` protocol: assign mode, from offset 0 (no group: Java needs none for it)."""

    def __init__(self, version: str, bootstrap: str, group: str, partitions: list[tuple[str, int]],
                 overrides: dict[str, Any] | None = None) -> None:
        # ``group`` is the protocol's (harness/workloads/clients: every reader is opened alike); unused
        super().__init__(version, consumer_config(bootstrap, None, overrides or {}), assign=[[t, p] for t, p in partitions])


class JavaGroupReader(_JavaConsumer):
    """The ``GroupReader`` protocol: subscribe mode in ``group``, from its committed offsets."""

    def __init__(self, version: str, bootstrap: str, group: str, topics: list[str],
                 overrides: dict[str, Any] | None = None) -> None:
        super().__init__(version, consumer_config(bootstrap, group, overrides or {}), subscribe=list(topics))

    def positions(self) -> dict[tuple[str, int], int]:
        return {(str(t), int(p)): int(o) for t, p, o in self._call("consumer.positions", CALL_TIMEOUT_S)}

    def group_metadata(self) -> object:
        return GroupToken(self.handle, int(self._call("consumer.group_metadata", 0)))

    def rewind(self, timeout_s: float) -> None:
        self._call("consumer.rewind", timeout_s, timeout=timeout_s)


def client_facts(version: str, exception: dict[str, Any]) -> ErrorFacts:
    """How the bridge of ``version`` maps ``exception`` (``{"class", "message", "cause"}``, built in
    the JVM) to ``ErrorFacts``, without a producer: the unit tests' view of the mapping."""
    return facts_from(bridge(version).request("facts", START_TIMEOUT_S, exception=exception))

