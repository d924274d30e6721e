"""What every workload process shares: its config, stop handling, error classification, and one
recorded transaction (begin, produce, commit or abort) with the outcome DESIGN.md prescribes.

Each workload runs as its own OS process (``python -m harness.workloads.<name> CONFIG.json``) so a
fault can SIGKILL or SIGSTOP it. A SIGTERM asks it to finish the operation in hand and exit.
"""

from __future__ import annotations

import json
import random
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from confluent_kafka import KafkaError, KafkaException, Producer

from harness import lifeline
from harness.history.model import FAIL, FENCED, INFO, INIT, OK, RETIRED, TXN
from harness.history.recorder import Recorder
from harness.kafka_io import CALL_TIMEOUT_S, commit_with_retries, kafka_error, kafka_exception

#: A commit normally takes tens of ms; leader/coordinator moves after a broker kill take ~10-20 s
#: (broker.session.timeout.ms 9 s + election). Past this, the outcome of a commit is "unknown".
#: Larger than the outages our scenarios inject, so transactions survive them rather than expire
#: (the incident scenario that wants expiry sets its own, smaller, value).
TRANSACTION_TIMEOUT_MS = 60_000
#: Codes meaning "a newer instance of this transactional.id exists": retire this producer.
FENCED_CODES = {KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH}


@dataclass
class WorkloadConfig:
    run_dir: str
    name: str                     # file name of this process's history, and prefix of its process ids
    bootstrap: str
    topics: list[str]
    partitions: int
    seed: int = 0
    #: safety net: exit by itself this long after start even if nobody sends SIGTERM
    max_seconds: float = 3600.0
    settings: dict[str, Any] = field(default_factory=dict)
    client: dict[str, Any] = field(default_factory=dict)  # librdkafka overrides (negative controls)

    @classmethod
    def from_argv(cls) -> "WorkloadConfig":
        if len(sys.argv) != 2:
            raise SystemExit(f"usage: python -m {sys.argv[0]} CONFIG.json")
        return cls(**json.loads(Path(sys.argv[1]).read_text()))


class Stop:
    """Set by SIGTERM/SIGINT, the runner's death (harness/lifeline.py) or the safety deadline;
    loops check it between operations."""

    def __init__(self, max_seconds: float) -> None:
        self._deadline = time.monotonic() + max_seconds
        self._flag = False
        signal.signal(signal.SIGTERM, self._set)
        signal.signal(signal.SIGINT, self._set)
        lifeline.watch(lambda: self._set(signal.SIGTERM, None))

    def _set(self, signum: int, frame: object) -> None:
        self._flag = True

    def __bool__(self) -> bool:
        return self._flag or time.monotonic() > self._deadline


def is_fenced(err: KafkaError | None) -> bool:
    return err is not None and (err.code() in FENCED_CODES or err.fatal())


def describe(exc: BaseException) -> str:
    err = kafka_error(exc)
    return f"{err.name()}: {err.str()}" if err is not None else f"{type(exc).__name__}: {exc}"


def drop(producer: Producer) -> None:
    """Let go of a producer: serve what is left without waiting. A fenced or fatal producer raises
    even on this, and must not take the workload process down with it (the incident replay
    incident-broker-outage found that)."""
    try:
        producer.flush(0)
    except (KafkaException, SystemError):  # SystemError: see kafka_io.kafka_exception
        pass


class Retired(Exception):
    """This producer instance cannot go on (fenced, fatal, or stuck); start a new process id."""


def new_producer(cfg: WorkloadConfig, txn_id: str, extra: dict[str, Any] | None = None) -> Producer:
    from clusters.health import QUIET

    conf: dict[str, Any] = {
        "bootstrap.servers": cfg.bootstrap, "transactional.id": txn_id,
        "transaction.timeout.ms": cfg.settings.get("transaction_timeout_ms", TRANSACTION_TIMEOUT_MS),
        "linger.ms": 5, "socket.connection.setup.timeout.ms": 5000, "logger": QUIET,
        **(extra or {}), **cfg.client,
    }
    return Producer(conf)


def init(rec: Recorder, process: str, producer: Producer, txn_id: str) -> None:
    """``init_transactions``, recorded; raises ``Retired`` when it fails (the caller starts over)."""
    rec.invoke(process, INIT, txn_id)
    try:
        producer.init_transactions(CALL_TIMEOUT_S)
    except KafkaException as exc:
        # Nothing was written by this instance yet, so a failed init changes nothing: fail.
        rec.complete(process, FAIL, INIT, txn_id, error=describe(exc))
        raise Retired(describe(exc)) from exc
    rec.complete(process, OK, INIT, txn_id)


def produce(producer: Producer, topic: str, value: bytes, partition: int, on_delivery: Callable[..., None],
            key: bytes | None = None) -> None:
    while True:
        try:
            producer.produce(topic, value, key, partition=partition, on_delivery=on_delivery)
            return
        except BufferError:
            producer.poll(0.1)  # local queue full: let deliveries drain


def transaction(rec: Recorder, process: str, producer: Producer, txn_id: str,
                sends: list[tuple[str, int, str]], abort: bool, rnd: random.Random,
                before_commit: Callable[[], dict[str, Any]] | None = None,
                pause: tuple[int, Callable[[], None]] | None = None, hold_s: float = 0.0,
                commit_timeout_s: float = CALL_TIMEOUT_S, abort_after_commit_timeout: bool = False,
                sole_writer: bool = False, keys: dict[int, bytes] | None = None,
                invoke_extra: dict[str, Any] | None = None) -> str:
    """One recorded transaction. Outcomes (DESIGN.md): committed -> ok; aborted on purpose, or an
    error before commit followed by a successful abort -> fail; fenced/fatal -> fail and the
    producer retires (during commit: info); a commit whose result is unknown (timeout, lost connection) -> info.
    ``before_commit`` (the copier's ``send_offsets_to_transaction``) returns extra fields to record.
    ``pause`` = (k, fn): after the first k sends are written, call fn (the zombie waits there).
    ``hold_s``: keep the transaction open this long after its records are written, before the
    commit (an application that processes slowly; what a crash must be able to hit).
    ``commit_timeout_s``: each commit call's timeout; a timed-out commit is retried (and, with
    ``abort_after_commit_timeout``, an abort is tried first, as applications wrongly do: librdkafka
    refuses it while the commit is in progress). Retried errors are recorded as ``commit_retries``,
    refused aborts as ``aborts_refused``.
    ``sole_writer``: no other process uses this ``transactional.id`` while this one lives (the
    txn-producer's incarnations follow one another). Then a fence during commit can only come from
    the coordinator aborting the transaction on its timeout (a completed or preparing commit is never
    timed out, and a retried EndTxn of a completed commit succeeds), so it is a definite abort:
    ``fail``, not ``info``. The checker holds us to it: a ``fail`` whose values are committed fires.
    ``keys``: record keys by send index (a compacted topic needs them); ``invoke_extra``: fields
    recorded with the invoke (the Spark job's batch id and offset ranges).
    Raises ``Retired`` after recording when this producer must be replaced."""
    rec.invoke(process, TXN, [["send", t, p, v] for t, p, v in sends], txn_id=txn_id, **(invoke_extra or {}))
    offsets: dict[bytes, int] = {}
    encoded = [v.encode() for _, _, v in sends]

    def delivered(err: KafkaError | None, msg: Any) -> None:
        if err is None:
            offsets[msg.value()] = msg.offset()  # bytes keys: no decode per record (the hot path)

    committing = False
    commit_at: int | None = None
    extra: dict[str, Any] = {}
    retries: list[str] = []
    refused: list[str] = []

    def on_retry(err: KafkaError) -> None:
        retries.append(f"{err.name()}: {err.str()}")
        if abort_after_commit_timeout and err.code() == KafkaError._TIMED_OUT:
            try:
                producer.abort_transaction(CALL_TIMEOUT_S)
            except KafkaException as abort_exc:
                refused.append(describe(abort_exc))  # then the commit is retried: the right handling

    try:
        producer.begin_transaction()
        # One produce() per record, not produce_batch: the delivery reports of produce_batch
        # (confluent-kafka 2.16.1) carry wrong offsets -- the checker flagged them as
        # inconsistent-offsets and nonmonotonic-send the one time we tried it.
        for k, (t, p, _) in enumerate(sends):
            if pause is not None and k == pause[0]:
                producer.flush(CALL_TIMEOUT_S)
                pause[1]()
            produce(producer, t, encoded[k], p, delivered, (keys or {}).get(k))
        if before_commit is not None:
            extra = before_commit()
        if abort:
            # Write the records first: librdkafka's abort purges what is still queued, and an abort
            # of records that never reached the log would test nothing (readers must skip them).
            producer.flush(CALL_TIMEOUT_S)
            producer.abort_transaction(CALL_TIMEOUT_S)
            rec.complete(process, FAIL, TXN, None, error="aborted on purpose", txn_id=txn_id, **extra)
            return FAIL
        producer.flush(CALL_TIMEOUT_S)  # serves the delivery reports: the offsets Kafka returned
        if hold_s:
            time.sleep(hold_s)  # simulated processing time, not a wait on anything
        committing = True
        commit_at = rec.now()
        commit_with_retries(producer, commit_timeout_s, on_retry)
    except (KafkaException, SystemError) as caught:
        exc = kafka_exception(caught)
        if exc is None:
            raise
        extra.update(_retried(retries, refused))
        err = kafka_error(exc)
        if is_fenced(err):
            # Before commit: this instance's transaction can only end aborted -> fail. During commit
            # the request may have been a retry of one that already committed (its response lost),
            # so a fence or fatal error there proves nothing -> info, resolved from the final reads.
            outcome = INFO if committing and not sole_writer else FAIL
            rec.complete(process, outcome, TXN, None, error=describe(exc), txn_id=txn_id, commit_at=commit_at, **extra)
            fenced = err is not None and err.code() in FENCED_CODES
            rec.event(process, FENCED if fenced else RETIRED, describe(exc))
            raise Retired(describe(exc)) from exc
        aborted = False
        if err is not None and (err.txn_requires_abort() or not committing):
            try:
                producer.abort_transaction(CALL_TIMEOUT_S)
                aborted = True
            except KafkaException as abort_exc:
                extra["abort_error"] = describe(abort_exc)
        if aborted or not committing:
            # Without a commit request the coordinator can only abort (or time out) this
            # transaction; after a successful abort it is definitely gone either way.
            rec.complete(process, FAIL, TXN, None, error=describe(exc), txn_id=txn_id, commit_at=commit_at, **extra)
            if not aborted:
                raise Retired(describe(exc)) from exc
            return FAIL
        rec.complete(process, INFO, TXN, None, error=describe(exc), txn_id=txn_id, commit_at=commit_at, **extra)
        raise Retired(describe(exc)) from exc
    done = [["send", t, p, v, offsets.get(b)] for (t, p, v), b in zip(sends, encoded)]
    extra.update(_retried(retries, refused))
    rec.complete(process, OK, TXN, done, txn_id=txn_id, commit_at=commit_at, **extra)
    return OK


def _retried(retries: list[str], refused: list[str]) -> dict[str, list[str]]:
    """The fields a transaction's completion gets for its retried commit calls (none: none)."""
    return {k: v for k, v in (("commit_retries", retries), ("aborts_refused", refused)) if v}
