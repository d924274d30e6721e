"""Small Kafka helpers shared by the smoke run and the real-cluster tests: topics, a transactional
writer that classifies every outcome, and a whole-topic read-back."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Callable, Iterable

from confluent_kafka import (
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

from clusters.health import QUIET
from harness.errors import HarnessError, WaitTimeout
from harness.wait import wait_until

#: Creating a topic with RF 3 takes well under a second on a healthy cluster.
TOPIC_TIMEOUT_S = 60.0
#: A commit normally takes tens of ms; a broker kill moves leaders and coordinators in ~10-20 s
#: (broker.session.timeout.ms 9 s + election). Longer than that, the outcome is "unknown".
COMMIT_TIMEOUT_S = 30.0
#: Producer's own bound on a transaction: larger than a broker outage we inject in the smoke run,
#: smaller than the read-back deadline, so a stuck transaction is aborted by the coordinator in time.
TRANSACTION_TIMEOUT_MS = 60_000
READ_BACK_TIMEOUT_S = 120.0


def create_topic(admin: AdminClient, name: str, partitions: int, replication: int = 3,
                 config: dict[str, str] | None = None) -> None:
    """Create ``name`` (with topic ``config``) and wait until every partition has a leader."""
    futures = admin.create_topics([NewTopic(name, partitions, replication, config=config or {})], operation_timeout=30)
    try:
        futures[name].result(timeout=TOPIC_TIMEOUT_S)
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise HarnessError(f"could not create topic {name}: {exc}") from exc

    def ready() -> bool:
        md = admin.list_topics(topic=name, timeout=5)
        t = md.topics.get(name)
        return bool(t and t.error is None and len(t.partitions) == partitions and all(p.leader >= 0 for p in t.partitions.values()))

    wait_until(ready, timeout=TOPIC_TIMEOUT_S, what=f"topic {name} to have a leader for all {partitions} partitions")


def partition_leader(admin: AdminClient, topic: str, partition: int) -> int:
    md = admin.list_topics(topic=topic, timeout=10)
    return md.topics[topic].partitions[partition].leader


def partition_isr(admin: AdminClient, topic: str, partition: int) -> list[int]:
    md = admin.list_topics(topic=topic, timeout=10)
    return sorted(md.topics[topic].partitions[partition].isrs)


@dataclass
class TxnLedger:
    """What a writer knows of its transactions: definitely committed, definitely not, unknown."""

    ok: list[list[str]] = field(default_factory=list)
    fail: list[list[str]] = field(default_factory=list)
    info: list[list[str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    producers: int = 0

    def committed_values(self) -> list[str]:
        return [v for txn in self.ok for v in txn]


CALL_TIMEOUT_S = 30.0  # per transactional call; generous because brokers may be down or slow


def kafka_error(exc: BaseException) -> KafkaError | None:
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return exc.args[0]
    return None


def kafka_exception(exc: BaseException) -> KafkaException | None:
    """The KafkaException behind ``exc``: itself, or the cause of the ``SystemError`` that
    confluent-kafka's ``flush()`` raises when a fatal error (a fence) is pending while it serves the
    delivery callbacks ("<built-in function isinstance> returned a result with an exception set";
    seen in spark-zombie-driver on compose)."""
    seen = 0
    while exc is not None and seen < 5:
        if isinstance(exc, KafkaException):
            return exc
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
        seen += 1
    return None


def commit_with_retries(producer: Producer, timeout: float = CALL_TIMEOUT_S,
                        on_retry: Callable[[KafkaError], None] | None = None) -> None:
    """Retry a retriable commit for a while, then give up. A commit that timed out goes on in the
    background; calling commit again resumes it (librdkafka: "retry call to resume") -- the right
    handling. ``on_retry`` sees each retriable error before the retry."""
    give_up = time.monotonic() + 3 * CALL_TIMEOUT_S
    while True:
        try:
            producer.commit_transaction(timeout)
            return
        except KafkaException as exc:
            err = kafka_error(exc)
            if err is not None and err.retriable() and not err.txn_requires_abort() and time.monotonic() < give_up:
                if on_retry is not None:
                    on_retry(err)
                continue
            raise


class TxnWriter:
    """A transactional producer that writes batches of unique values and classifies each outcome.

    Classification (DESIGN.md): an error before or during commit followed by a successful abort is
    ``fail``; a commit that returns is ``ok``; anything else (fatal/fenced during commit, a commit
    that keeps timing out, an abort that fails) is ``info``. After a fatal error the producer is
    replaced; ``init_transactions`` of the new one fences the old epoch.
    """

    def __init__(self, bootstrap: str, transactional_id: str | None = None, extra: dict[str, object] | None = None) -> None:
        self.bootstrap = bootstrap
        self.transactional_id = transactional_id or f"eos-chaos-{uuid.uuid4().hex[:8]}"
        self.extra = extra or {}
        self.ledger = TxnLedger()
        self._producer: Producer | None = None

    def _new_producer(self, deadline: float) -> Producer:
        conf: dict[str, object] = {
            "bootstrap.servers": self.bootstrap,
            "transactional.id": self.transactional_id,
            "transaction.timeout.ms": TRANSACTION_TIMEOUT_MS,
            "linger.ms": 5,
            "socket.connection.setup.timeout.ms": 5000,
            "logger": QUIET,
            **self.extra,
        }
        p = Producer(conf)
        self.ledger.producers += 1

        def init() -> bool:
            try:
                p.init_transactions(max(1.0, min(COMMIT_TIMEOUT_S, deadline - time.monotonic())))
                return True
            except KafkaException as exc:
                err = kafka_error(exc)
                if err is not None and (err.fatal() or not err.retriable()):
                    raise HarnessError(f"init_transactions failed: {err}") from exc
                raise

        wait_until(init, timeout=max(5.0, deadline - time.monotonic()), what=f"init_transactions of {self.transactional_id}")
        return p

    def write(self, topic: str, values: list[str], partitions: Iterable[int], deadline: float) -> str:
        """One transaction writing ``values`` round-robin over ``partitions``; returns ok/fail/info."""
        parts = list(partitions)
        if self._producer is None:
            self._producer = self._new_producer(deadline + COMMIT_TIMEOUT_S)
        p = self._producer
        committing = False
        try:
            p.begin_transaction()
            for i, v in enumerate(values):
                self._produce(p, topic, v, parts[i % len(parts)])
            committing = True
            self._commit(p)
            self.ledger.ok.append(values)
            return "ok"
        except KafkaException as exc:
            err = kafka_error(exc)
            self.ledger.errors.append(f"{'commit' if committing else 'produce'}: {err or exc}")
            aborted = False
            if err is not None and not err.fatal():
                try:
                    p.abort_transaction(COMMIT_TIMEOUT_S)
                    aborted = True
                except KafkaException as abort_exc:
                    self.ledger.errors.append(f"abort: {kafka_error(abort_exc) or abort_exc}")
            if not aborted:
                self._retire()  # fatal, fenced, or stuck: a fresh producer fences this one
            if aborted or not committing:
                # Without a commit request the coordinator can only abort (or time out) this
                # transaction; after a successful abort it is definitely gone.
                self.ledger.fail.append(values)
                return "fail"
            self.ledger.info.append(values)  # the commit may or may not have happened
            return "info"

    def _produce(self, p: Producer, topic: str, value: str, partition: int) -> None:
        while True:
            try:
                p.produce(topic, value=value.encode(), partition=partition)
                return
            except BufferError:
                p.poll(0.1)  # local queue full: let deliveries drain

    def _commit(self, p: Producer) -> None:
        commit_with_retries(p)

    def _retire(self) -> None:
        if self._producer is not None:
            try:
                self._producer.flush(0)
            except Exception:  # noqa: BLE001 - a broken producer is being dropped anyway
                pass
        self._producer = None

    def close(self) -> None:
        self._retire()


@dataclass
class ReadBack:
    """Everything a reader saw in a whole-topic scan: partition -> [(offset, value)]."""

    records: dict[int, list[tuple[int, str]]]
    end_offsets: dict[int, int]

    def values(self) -> list[str]:
        return [v for recs in self.records.values() for _, v in recs]


def lso_lag(bootstrap: str, topic: str, partitions: int, bound: float) -> tuple[dict[int, float | None], dict[int, int]]:
    """Per partition: seconds until its last stable offset reached its high watermark (no open
    transaction), measured from now, None if it had not within ``bound`` seconds; and, for those,
    the LSO it was stuck at."""
    group = f"eos-chaos-lso-{uuid.uuid4().hex[:8]}"
    base = {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False, "logger": QUIET}
    committed = Consumer({**base, "isolation.level": "read_committed"})
    uncommitted = Consumer({**base, "isolation.level": "read_uncommitted"})
    lag: dict[int, float | None] = {p: None for p in range(partitions)}
    stuck: dict[int, int] = {}
    t0 = time.monotonic()
    try:
        while any(v is None for v in lag.values()) and time.monotonic() - t0 < bound:
            for p in [p for p, v in lag.items() if v is None]:
                tp = TopicPartition(topic, p)
                lso = committed.get_watermark_offsets(tp, timeout=5)[1]
                hw = uncommitted.get_watermark_offsets(tp, timeout=5)[1]
                if lso == hw:
                    lag[p] = round(time.monotonic() - t0, 3)
                    stuck.pop(p, None)
                else:
                    stuck[p] = lso
            if any(v is None for v in lag.values()):
                time.sleep(0.2)  # polling the broker's offsets: there is no event to wait on
        return lag, stuck
    finally:
        committed.close()
        uncommitted.close()


def read_all(bootstrap: str, topic: str, partitions: int, isolation: str = "read_committed",
             timeout: float = READ_BACK_TIMEOUT_S, stable: bool = True) -> ReadBack:
    """Read every partition of ``topic`` from offset 0 to its end.

    For read_committed the end is the last stable offset; with ``stable`` we require it to equal
    the high watermark (no transaction left open) within ``timeout``. Without (a transaction is
    known to hang), the scan reads up to the LSO as it stands.
    """
    group = f"eos-chaos-readback-{uuid.uuid4().hex[:8]}"
    base = {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
            "enable.partition.eof": True, "auto.offset.reset": "earliest", "logger": QUIET}
    consumer = Consumer({**base, "isolation.level": isolation})
    probe = Consumer({**base, "isolation.level": "read_uncommitted"})
    try:
        tps = [TopicPartition(topic, p, 0) for p in range(partitions)]
        deadline = time.monotonic() + timeout
        end: dict[int, int] = {}

        def ends_settled() -> bool:
            # Queried with the reader's isolation, the end is the LSO (read_committed) or the HW.
            ends = {tp.partition: consumer.get_watermark_offsets(tp, timeout=5)[1] for tp in tps}
            highs = {tp.partition: probe.get_watermark_offsets(tp, timeout=5)[1] for tp in tps}
            end.clear()
            end.update(ends)
            return ends == highs or not stable

        wait_until(ends_settled, timeout=timeout, what=f"the last stable offset of every partition of {topic} "
                   "to reach its high watermark (no open transaction)", state=lambda: f"end offsets {end}")
        consumer.assign(tps)
        records: dict[int, list[tuple[int, str]]] = {p: [] for p in range(partitions)}
        done = {p for p, off in end.items() if off == 0}
        while len(done) < partitions:
            if time.monotonic() > deadline:
                pos = {tp.partition: tp.offset for tp in consumer.position(tps)}
                raise WaitTimeout(f"read-back of {topic} did not reach the end offsets {end} within {timeout:.0f}s; positions {pos}")
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            err = msg.error()
            part, offset = int(msg.partition() or 0), int(msg.offset() or 0)
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    if offset >= end[part]:
                        done.add(part)
                    continue
                raise HarnessError(f"read-back of {topic} failed: {err}")
            records[part].append((offset, (msg.value() or b"").decode()))
        return ReadBack(records=records, end_offsets=end)
    finally:
        consumer.close()
        probe.close()
