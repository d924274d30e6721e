"""The ``Client`` protocol over confluent-kafka (librdkafka), and how its exceptions become
``ErrorFacts``: the only module of the workloads' transaction path that knows confluent-kafka."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition

from clusters.kafka.health import QUIET
from harness.history.model import feeder_id
from harness.kafka.reads import value_of
from harness.workloads.client import ClientError, ErrorFacts, OnOffset, Record, WireRecord

#: Codes meaning "a newer instance of this transactional.id exists": retire this producer.
FENCED_CODES = {KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH}
#: How many causes deep ``kafka_exception`` looks for the KafkaException behind an error.
MAX_CAUSE_DEPTH = 5


def kafka_error(exc: BaseException) -> KafkaError | None:
    """The ``KafkaError`` a ``KafkaException`` carries (None: not one, or it carries none)."""
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return exc.args[0]
    return None


def kafka_exception(exc: BaseException | None) -> KafkaException | None:
    """The KafkaException behind ``exc``: itself, or the cause of the ``SystemError`` that
    confluent-kafka's ``flush()`` raises when a fatal error (a fence) is pending while it serves the
    delivery callbacks ("<built-in function isinstance> returned a result with an exception set";
    seen in spark-zombie-driver on compose)."""
    seen = 0
    while exc is not None and seen < MAX_CAUSE_DEPTH:
        if isinstance(exc, KafkaException):
            return exc
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


def facts_of(err: KafkaError) -> ErrorFacts:
    """What ``err`` says, as plain data."""
    return ErrorFacts(str(err.name()), str(err.str()), retriable=bool(err.retriable()), fatal=bool(err.fatal()),
                      txn_requires_abort=bool(err.txn_requires_abort()), fenced=err.code() in FENCED_CODES,
                      timed_out=err.code() == KafkaError._TIMED_OUT)


def error_facts(exc: BaseException) -> ErrorFacts:
    """What ``exc`` says, as plain data: the KafkaError behind it (a ``SystemError`` caused by a
    KafkaException included), else only its type and message."""
    found = kafka_exception(exc) or exc
    err = kafka_error(found)
    return facts_of(err) if err is not None else ErrorFacts(type(found).__name__, str(found))


def describe(exc: BaseException) -> str:
    """``exc`` as the history records an error: ``NAME: message``."""
    return error_facts(exc).describe()


@contextmanager
def client_errors() -> Iterator[None]:
    """Raise what confluent-kafka raises for a failed call as ``ClientError`` (a ``SystemError``
    with a KafkaException behind it included); other exceptions pass unchanged."""
    try:
        yield
    except (KafkaException, SystemError) as caught:
        exc = kafka_exception(caught)
        if exc is None:
            raise
        raise ClientError(error_facts(exc)) from caught


def _delivery_report(on_offset: OnOffset) -> Callable[[KafkaError | None, Any], None]:
    """librdkafka's delivery callback handing each acknowledged record's value and offset to ``on_offset``."""

    def delivered(err: KafkaError | None, msg: Any) -> None:
        if err is None:
            on_offset(msg.value(), msg.offset())

    return delivered


def _delivery_by_id(record_id: bytes | None, on_offset: OnOffset) -> Callable[[KafkaError | None, Any], None]:
    """A delivery callback handing the acknowledged feeder record's id (its header, as sent) and
    offset to ``on_offset``: its value may repeat, its id does not. The id is the one it was sent
    with, not read back from the report: a delivery report carries no headers (confluent-kafka
    2.16.1: ``msg.headers()`` is None), and an id looked for there left every shaped feeder's
    offset unrecorded. None (no id header): its value."""

    def delivered(err: KafkaError | None, msg: Any) -> None:
        if err is None:
            on_offset(record_id if record_id is not None else msg.value(), msg.offset())

    return delivered


class ConfluentClient:
    """A transactional ``confluent_kafka.Producer`` behind the ``Client`` protocol."""

    def __init__(self, bootstrap: str, txn_id: str, transaction_timeout_ms: int,
                 overrides: dict[str, Any] | None = None) -> None:
        conf: dict[str, Any] = {
            "bootstrap.servers": bootstrap, "transactional.id": txn_id,
            "transaction.timeout.ms": transaction_timeout_ms,
            "linger.ms": 5, "socket.connection.setup.timeout.ms": 5000, "logger": QUIET,
            **(overrides or {}),
        }
        self.producer = Producer(conf)
        self._on_offset: OnOffset | None = None
        self._delivered: Callable[[KafkaError | None, Any], None] | None = None

    def init(self, timeout_s: float) -> None:
        with client_errors():
            self.producer.init_transactions(timeout_s)

    def begin(self) -> None:
        with client_errors():
            self.producer.begin_transaction()

    def send(self, topic: str, partition: int, value: bytes, key: bytes | None, on_offset: OnOffset) -> None:
        # The hot path (once per record; `bench producer` measures it): one delivery callback per
        # transaction's on_offset rather than a closure per record, and no context manager per call.
        if on_offset is not self._on_offset:
            self._on_offset, self._delivered = on_offset, _delivery_report(on_offset)
        try:
            self.producer.produce(topic, value, key, partition=partition, on_delivery=self._delivered)
        except BufferError:
            with client_errors():
                while True:
                    self.producer.poll(0.1)  # local queue full: let deliveries drain
                    try:
                        self.producer.produce(topic, value, key, partition=partition, on_delivery=self._delivered)
                        return
                    except BufferError:
                        continue
        except (KafkaException, SystemError):
            with client_errors():
                raise

    def send_record(self, topic: str, partition: int, record: WireRecord, on_offset: OnOffset) -> None:
        key, value, headers, timestamp_ms = record
        found = feeder_id(headers)
        delivered = _delivery_by_id(found.encode() if found is not None else None, on_offset)
        while True:
            try:
                with client_errors():
                    self.producer.produce(topic, value, key, partition=partition, on_delivery=delivered,
                                          headers=headers, timestamp=timestamp_ms)
                return
            except BufferError:
                with client_errors():
                    self.producer.poll(0.1)  # local queue full: let deliveries drain

    def flush(self, timeout_s: float) -> None:
        with client_errors():
            self.producer.flush(timeout_s)

    def send_offsets(self, offsets: dict[tuple[str, int], int], group_metadata: object, timeout_s: float) -> None:
        positions = [TopicPartition(t, p, o) for (t, p), o in offsets.items()]
        with client_errors():
            self.producer.send_offsets_to_transaction(positions, group_metadata, timeout_s)

    def commit(self, timeout_s: float) -> None:
        with client_errors():
            self.producer.commit_transaction(timeout_s)

    def abort(self, timeout_s: float) -> None:
        with client_errors():
            self.producer.abort_transaction(timeout_s)

    def close(self) -> None:
        """Serve what is left without waiting. A fenced or fatal producer raises even on this, and
        must not take the workload process down with it (the incident replay
        incident-broker-outage found that)."""
        try:
            self.producer.flush(0)
        except (KafkaException, SystemError):  # SystemError: see kafka_exception
            pass


class _Consumer:
    """What both readers share: a read_committed ``confluent_kafka.Consumer``, its polls, its close."""

    def __init__(self, bootstrap: str, group: str, conf: dict[str, Any], overrides: dict[str, Any] | None) -> None:
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                                  "isolation.level": "read_committed", "logger": QUIET, **conf, **(overrides or {})})

    def poll(self, max_records: int, timeout_s: float) -> list[Record]:
        with client_errors():
            msgs = self.consumer.consume(max_records, timeout_s)
        return [(str(m.topic()), int(m.partition() or 0), int(m.offset() or 0), value_of(m))
                for m in msgs if m.error() is None]

    def close(self) -> None:
        try:
            self.consumer.close()
        except KafkaException:
            pass  # a broken consumer is being dropped anyway


class ConfluentReader(_Consumer):
    """The ``Reader`` protocol: assign mode, from offset 0."""

    def __init__(self, bootstrap: str, group: str, partitions: list[tuple[str, int]],
                 overrides: dict[str, Any] | None = None) -> None:
        # group.id only because librdkafka wants one; assign mode commits nothing to it
        super().__init__(bootstrap, group, {}, overrides)
        self.consumer.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t, p in partitions])


class ConfluentGroupReader(_Consumer):
    """The ``GroupReader`` protocol: subscribe mode in ``group``, from its committed offsets."""

    def __init__(self, bootstrap: str, group: str, topics: list[str], overrides: dict[str, Any] | None = None) -> None:
        # a group without committed offsets starts from the beginning of the input
        super().__init__(bootstrap, group, {"auto.offset.reset": "earliest"}, overrides)
        self.consumer.subscribe(topics)

    def positions(self) -> dict[tuple[str, int], int]:
        with client_errors():
            return {(tp.topic, tp.partition): tp.offset for tp in self.consumer.position(self.consumer.assignment())}

    def group_metadata(self) -> object:
        with client_errors():
            return self.consumer.consumer_group_metadata()

    def rewind(self, timeout_s: float) -> None:
        with client_errors():
            assigned = self.consumer.assignment()
            if not assigned:
                return
            for tp in self.consumer.committed(assigned, timeout=timeout_s):
                self.consumer.seek(TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else OFFSET_BEGINNING))
