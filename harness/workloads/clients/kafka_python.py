"""The ``Client`` protocol over kafka-python (pure Python), and how its exceptions become
``ErrorFacts``: the only module of the workloads that knows kafka-python. Findings and the error
mapping: docs/CLIENTS-PYTHON.md.

kafka-python's ``commit_transaction``, ``abort_transaction`` and ``send_offsets_to_transaction``
take no timeout and wait for ever (3.0.12), and a second ``commit_transaction`` while one is in
progress is an invalid state transition. So each of these calls runs in a thread of its own
(``_Calls``): the caller waits at most its timeout, a call that timed out goes on, and calling it
again waits for the same call instead of starting another -- what librdkafka ("retry call to
resume") and Java's producer do for a retried commit.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka import errors as kerrors
from kafka.structs import OffsetAndMetadata

from harness.history.model import feeder_id
from harness.workloads.client import ClientError, ErrorFacts, OnOffset, Record
from harness.workloads.clients.setting_names import java_names

#: Errors meaning "a newer instance of this transactional.id exists": retire this producer.
FENCED_ERRORS = (kerrors.ProducerFencedError, kerrors.InvalidProducerEpochError)
#: How long ``positions`` may wait for a position the consumer does not know yet (the protocol's
#: call takes no timeout; after a poll the positions are known and it returns at once).
POSITION_TIMEOUT_MS = 10_000


def facts_of(exc: BaseException, txn_state: Any = None) -> ErrorFacts:
    """What ``exc`` says, as plain data. ``txn_state``: the producer's transaction manager after the
    call, whose state says what the exception alone does not (kafka-python raises a bare
    ``KafkaError("Cannot execute transactional method because we are in an error state: ...")``
    for every call after a failure, with the real error only in that state)."""
    underlying = txn_state.last_error if txn_state is not None and txn_state.has_error() else None
    name = getattr(exc, "message", None) or type(exc).__name__  # broker errors: the protocol's name
    message = " ".join(str(a) for a in exc.args) or getattr(exc, "description", None) or type(exc).__name__
    fenced = isinstance(exc, FENCED_ERRORS) or isinstance(underlying, FENCED_ERRORS)
    fatal = fenced or (txn_state is not None and bool(txn_state.has_fatal_error()))
    return ErrorFacts(str(name), str(message), retriable=bool(getattr(exc, "retriable", False)) and not fatal,
                      fatal=fatal, txn_requires_abort=txn_state is not None and bool(txn_state.has_abortable_error()),
                      fenced=fenced, timed_out=isinstance(exc, kerrors.KafkaTimeoutError))


@contextmanager
def client_errors(txn_state: Any = None) -> Iterator[None]:
    """Raise what kafka-python raises for a failed call as ``ClientError``; other exceptions (bugs,
    and ``ValueError``/``TypeError`` for bad arguments) pass unchanged."""
    try:
        yield
    except kerrors.KafkaError as exc:
        raise ClientError(facts_of(exc, txn_state)) from exc


class _Call:
    """One blocking call running in its own thread; ``wait`` for it at most so long."""

    def __init__(self, fn: Callable[[], None]) -> None:
        self.error: BaseException | None = None
        self.done = threading.Event()
        self._fn = fn
        threading.Thread(target=self._run, daemon=True, name="kafka-python-call").start()

    def _run(self) -> None:
        try:
            self._fn()
        except BaseException as exc:  # handed to the caller's thread, which raises it
            self.error = exc
        finally:
            self.done.set()


class _Calls:
    """kafka-python's calls that take no timeout, each in a thread, one of a kind at a time: a call
    that timed out goes on, and the next call of that kind waits for it instead of starting another."""

    def __init__(self) -> None:
        self._pending: dict[str, _Call] = {}

    def run(self, kind: str, fn: Callable[[], None], timeout_s: float) -> None:
        call = self._pending.get(kind) or _Call(fn)
        self._pending[kind] = call
        if not call.done.wait(timeout_s):
            raise kerrors.KafkaTimeoutError(f"{kind} did not finish within {timeout_s:g}s; it goes on, call again to wait for it")
        del self._pending[kind]
        if call.error is not None:
            raise call.error


def _settings(overrides: dict[str, Any] | None) -> dict[str, Any]:
    """A workload's ``client:`` settings as kafka-python's keyword names: its names are Java's with
    ``_`` for ``.``, so ``isolation.level`` and ``isolation_level`` both work; librdkafka's name of
    a setting is read as Java's (``setting_names.java_names``)."""
    return {k.replace(".", "_"): v for k, v in java_names(overrides or {}).items()}


def _servers(bootstrap: str) -> list[str]:
    return [s.strip() for s in bootstrap.split(",") if s.strip()]


class KafkaPythonClient:
    """A transactional ``kafka.KafkaProducer`` behind the ``Client`` protocol, set up like the
    confluent-kafka client: acks=all, idempotence, the workload's transaction.timeout.ms."""

    def __init__(self, bootstrap: str, txn_id: str, transaction_timeout_ms: int,
                 overrides: dict[str, Any] | None = None) -> None:
        conf: dict[str, Any] = {
            "bootstrap_servers": _servers(bootstrap), "transactional_id": txn_id,
            "transaction_timeout_ms": transaction_timeout_ms, "enable_idempotence": True, "acks": "all",
            "linger_ms": 5, **_settings(overrides),
        }
        with client_errors():
            self.producer = KafkaProducer(**conf)
        # kafka-python's transaction manager: its state after a failed call is the only place that
        # says whether the failure was fatal or abortable (facts_of)
        self._txn = self.producer._transaction_manager
        self._calls = _Calls()
        self._pending: list[tuple[bytes, Any, OnOffset]] = []

    def init(self, timeout_s: float) -> None:
        # init_transactions waits max_block_ms; the producer's other blocking calls are ours
        self.producer.config["max_block_ms"] = int(timeout_s * 1000)
        with client_errors(self._txn):
            self.producer.init_transactions()

    def begin(self) -> None:
        with client_errors(self._txn):
            self.producer.begin_transaction()

    def send(self, topic: str, partition: int, value: bytes, key: bytes | None, on_offset: OnOffset) -> None:
        with client_errors(self._txn):
            future = self.producer.send(topic, value=value, key=key, partition=partition)
        self._pending.append((value, future, on_offset))

    def flush(self, timeout_s: float) -> None:
        """Wait for every record sent, then report the acknowledged ones' offsets from this thread
        (kafka-python completes futures on its network thread; reporting here keeps ``on_offset``
        in the caller's thread, as with confluent-kafka). A failed record is not an error of the
        flush: the producer is then in an abortable state, and the commit says so."""
        with client_errors(self._txn):
            self.producer.flush(timeout_s)
        pending, self._pending = self._pending, []
        for value, future, on_offset in pending:
            if future.succeeded():
                on_offset(value, future.value.offset)

    def send_offsets(self, offsets: dict[tuple[str, int], int], group_metadata: object, timeout_s: float) -> None:
        # a partition the consumer has no position in yet has a negative one: nothing to commit
        positions = {TopicPartition(t, p): OffsetAndMetadata(o, "", -1) for (t, p), o in offsets.items() if o >= 0}
        with client_errors(self._txn):
            self._calls.run("send_offsets_to_transaction",
                            lambda: self.producer.send_offsets_to_transaction(positions, group_metadata), timeout_s)

    def commit(self, timeout_s: float) -> None:
        with client_errors(self._txn):
            self._calls.run("commit_transaction", self.producer.commit_transaction, timeout_s)

    def abort(self, timeout_s: float) -> None:
        self._pending.clear()  # an aborted transaction's records are reported by nobody
        with client_errors(self._txn):
            self._calls.run("abort_transaction", self.producer.abort_transaction, timeout_s)

    def close(self) -> None:
        """Let go without waiting: kafka-python's close flushes first, and a flush of records that
        cannot be acknowledged now raises; its network thread is then stopped without sending them."""
        try:
            self.producer.close(timeout=0)
        except kerrors.KafkaError:
            self.producer._sender.force_close()


def _value_or_id(r: Any) -> str:
    """A consumed record's value as the history records it: the feeder's id when it carries one
    (as ``harness.kafka.reads.value_of``, over kafka-python's record)."""
    found = feeder_id(r.headers)
    return found if found is not None else (r.value or b"").decode()


class _Consumer:
    """What both readers share: a read_committed ``kafka.KafkaConsumer``, its polls, its close."""

    def __init__(self, bootstrap: str, conf: dict[str, Any], overrides: dict[str, Any] | None) -> None:
        settings = {"bootstrap_servers": _servers(bootstrap), "enable_auto_commit": False,
                    "isolation_level": "read_committed", **conf, **_settings(overrides)}
        with client_errors():
            self.consumer = KafkaConsumer(**settings)

    def poll(self, max_records: int, timeout_s: float) -> list[Record]:
        with client_errors():
            batches = self.consumer.poll(timeout_ms=int(timeout_s * 1000), max_records=max_records)
        return [(str(r.topic), int(r.partition), int(r.offset), _value_or_id(r))
                for records in batches.values() for r in records]

    def close(self) -> None:
        try:
            self.consumer.close(autocommit=False, timeout_ms=0)
        except kerrors.KafkaError:
            pass  # a broken consumer is being dropped anyway


class KafkaPythonReader(_Consumer):
    """The ``Reader`` protocol: assign mode, from offset 0, no group."""

    def __init__(self, bootstrap: str, group: str, partitions: list[tuple[str, int]],
                 overrides: dict[str, Any] | None = None) -> None:
        # no group.id: kafka-python, unlike librdkafka, needs none in assign mode
        super().__init__(bootstrap, {"group_id": None, "auto_offset_reset": "earliest"}, overrides)
        assigned = [TopicPartition(t, p) for t, p in partitions]
        with client_errors():
            self.consumer.assign(assigned)
            self.consumer.seek_to_beginning(*assigned)


class KafkaPythonGroupReader(_Consumer):
    """The ``GroupReader`` protocol: subscribe mode in ``group``, from its committed offsets."""

    def __init__(self, bootstrap: str, group: str, topics: list[str], overrides: dict[str, Any] | None = None) -> None:
        # a group without committed offsets starts from the beginning of the input
        super().__init__(bootstrap, {"group_id": group, "auto_offset_reset": "earliest"}, overrides)
        with client_errors():
            self.consumer.subscribe(topics)

    def positions(self) -> dict[tuple[str, int], int]:
        out: dict[tuple[str, int], int] = {}
        with client_errors():
            for tp in self.consumer.assignment():
                pos = self.consumer.position(tp, timeout_ms=POSITION_TIMEOUT_MS)
                out[(tp.topic, tp.partition)] = -1 if pos is None else int(pos)
        return out

    def group_metadata(self) -> object:
        with client_errors():
            return self.consumer.group_metadata()

    def rewind(self, timeout_s: float) -> None:
        with client_errors():
            for tp in self.consumer.assignment():
                committed = self.consumer.committed(tp, timeout_ms=int(timeout_s * 1000))
                if committed is None:
                    self.consumer.seek_to_beginning(tp)
                else:
                    self.consumer.seek(tp, committed)
