"""What every workload process shares: its config, stop handling, and one recorded transaction
(begin, sends, commit or abort) through the ``Client`` protocol, with the outcome
``harness.workloads.outcome`` prescribes.

Each workload runs as its own OS process (``python -m harness.workloads.<name> CONFIG.json``) so a
fault can SIGKILL or SIGSTOP it. A SIGTERM asks it to finish the operation in hand and exit.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.base import lifeline
from harness.history.model import FAIL, INIT, OK, RECREATED, TXN
from harness.history.recorder import Recorder
from harness.workloads.client import (
    CALL_TIMEOUT_S,
    TRANSACTION_TIMEOUT_MS,
    Client,
    ClientError,
    ErrorFacts,
    GroupReader,
    HeadersClient,
    Reader,
    WireRecord,
)
from harness.workloads.clients import DEFAULT_LIBRARY, open_group_reader, open_producer, open_reader
from harness.workloads.outcome import Phase, classify, indefinite, retry_commit, should_abort

#: How long a commit is retried in all (each call bounded by its own timeout): past this, the
#: outcome of the commit is unknown and the producer retires.
COMMIT_GIVE_UP_S = 3 * CALL_TIMEOUT_S


@dataclass
class WorkloadConfig:
    run_dir: str
    name: str                     # file name of this process's history, and prefix of its process ids
    bootstrap: str
    topics: list[str]
    partitions: int               # every topic's, unless ``topic_partitions`` gives its own
    seed: int = 0
    #: safety net: exit by itself this long after start even if nobody sends SIGTERM
    max_seconds: float = 3600.0
    settings: dict[str, Any] = field(default_factory=dict)
    client: dict[str, Any] = field(default_factory=dict)  # the library's own settings (negative controls)
    #: the client library (``NAME`` or ``NAME@VERSION``, see harness/workloads/clients)
    library: str = DEFAULT_LIBRARY
    #: the scenario's topic names -> the run's (an app's ``{topic:NAME}``)
    topic_names: dict[str, str] = field(default_factory=dict)
    #: how many processes the scenario entry has (an app's ``{instances}``)
    instances: int = 1
    #: the run's topic names -> their partitions, for topics whose entry gives its own
    topic_partitions: dict[str, int] = field(default_factory=dict)

    def partitions_of(self, topic: str) -> int:
        """How many partitions the run's topic ``topic`` has."""
        return self.topic_partitions.get(topic, self.partitions)

    @classmethod
    def from_argv(cls) -> WorkloadConfig:
        if len(sys.argv) != 2:
            raise SystemExit(f"usage: python -m {sys.argv[0]} CONFIG.json")
        return cls(**json.loads(Path(sys.argv[1]).read_text()))


class StopFlag:
    """Set by SIGTERM/SIGINT, the runner's death (harness/base/lifeline.py), the safety deadline or
    ``set()`` (a thread that failed); loops check it between operations. ``signals=False``: none of
    the process's handlers (a test driving a workload's loop in-process)."""

    def __init__(self, max_seconds: float, signals: bool = True) -> None:
        self._deadline = time.monotonic() + max_seconds
        self._flag = False
        if signals:
            signal.signal(signal.SIGTERM, self._set)
            signal.signal(signal.SIGINT, self._set)
            lifeline.watch(self.set)

    def _set(self, signum: int, frame: object) -> None:
        self._flag = True

    def set(self) -> None:
        self._flag = True

    def __bool__(self) -> bool:
        return self._flag or time.monotonic() > self._deadline


#: How often the main thread wakes while its producers run: it must keep handling SIGTERM.
JOIN_SLICE_S = 0.5


def side_by_side(n: int, body: Callable[[int], None], stop: StopFlag, name: str) -> None:
    """``body(k)`` for each k below ``n``, each in a thread of its own (n = 1: in this thread, as a
    workload of one client always ran). The first exception one raises sets ``stop``, so the others
    finish the operation in hand and end, and is raised here once they all have."""
    if n == 1:
        body(0)
        return
    failed: list[BaseException] = []

    def run(k: int) -> None:
        try:
            body(k)
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread, which raises it
            failed.append(exc)
            stop.set()

    threads = [threading.Thread(target=run, args=(k,), name=f"{name}-{k}", daemon=True) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        while t.is_alive():
            t.join(JOIN_SLICE_S)
    if failed:
        raise failed[0]


class Retired(Exception):
    """This producer instance cannot go on (fenced, fatal, or stuck); start a new process id."""


def new_producer(cfg: WorkloadConfig, txn_id: str) -> Client:
    """A transactional producer for ``txn_id`` with the workload's settings and client overrides."""
    timeout_ms = int(cfg.settings.get("transaction_timeout_ms", TRANSACTION_TIMEOUT_MS))  # registry.Settings
    return open_producer(cfg.library, cfg.bootstrap, txn_id, timeout_ms, cfg.client)


def new_reader(cfg: WorkloadConfig) -> Reader:
    """A read_committed reader of every partition of the workload's topics, from offset 0."""
    parts = [(t, p) for t in cfg.topics for p in range(cfg.partitions_of(t))]
    return open_reader(cfg.library, cfg.bootstrap, f"eos-chaos-{cfg.name}", parts, cfg.client)


def new_group_reader(cfg: WorkloadConfig, group: str, topics: list[str]) -> GroupReader:
    """A read_committed member of consumer group ``group`` subscribed to ``topics``."""
    return open_group_reader(cfg.library, cfg.bootstrap, group, topics, cfg.client)


def drop(producer: Client) -> None:
    """Let go of a producer without waiting (never raises)."""
    producer.close()


def init(rec: Recorder, process: str, producer: Client, txn_id: str) -> None:
    """``init_transactions``, recorded; raises ``Retired`` when it fails (the caller starts over)."""
    rec.invoke(process, INIT, txn_id)
    try:
        producer.init(CALL_TIMEOUT_S)
    except ClientError as exc:
        outcome = classify(Phase.INIT, exc.facts)
        rec.complete(process, outcome.type, INIT, txn_id, error=exc.facts.describe())
        raise Retired(exc.facts.describe()) from exc
    rec.complete(process, OK, INIT, txn_id)


def commit_with_retries(producer: Client, timeout_s: float, on_retry: Callable[[ErrorFacts], None]) -> None:
    """Retry a retriable commit for a while (``COMMIT_GIVE_UP_S``), then give up (raise). A commit
    that timed out goes on in the background; calling commit again resumes it (librdkafka: "retry
    call to resume") -- the right handling. ``on_retry`` sees each retried error before the retry."""
    give_up = time.monotonic() + COMMIT_GIVE_UP_S
    while True:
        try:
            producer.commit(timeout_s)
            return
        except ClientError as exc:
            if retry_commit(exc.facts) and time.monotonic() < give_up:
                on_retry(exc.facts)
                continue
            raise


@dataclass(frozen=True)
class Txn:
    """One transaction to run (``transaction``): its id, its sends, and how to run it.

    ``abort``: abort it on purpose (``fail``). ``before_commit`` (the copier's ``send_offsets``)
    returns extra fields to record; it raises ``ClientError`` for a failed call, classified like the
    transaction's own. ``pause`` = (k, fn): after the first k sends are written, call fn (the
    zombie waits there). ``gap_s``: between two sends, flush what was sent and wait this long (an
    application that works between its writes): the transaction is then open, with some of its
    partitions added and written, for most of its life -- what a late EndTxn must hit to tear it
    (KAFKA-17754). ``hold_s``: keep the transaction open this long after its records are written,
    before the commit (an application that processes slowly; what a crash must be able to hit).
    ``commit_timeout_s``: each commit call's timeout; a timed-out commit is retried (and, with
    ``abort_after_commit_timeout``, an abort is tried first, as applications wrongly do: librdkafka
    refuses it while the commit is in progress). Retried errors are recorded as ``commit_retries``,
    refused aborts as ``aborts_refused``. ``sole_writer``: no other process uses this
    ``transactional.id`` while this one lives (see ``outcome.classify``: a fence during commit is
    then a definite abort). ``keys``: record keys by send index (a compacted topic needs them);
    ``invoke_extra``: fields recorded with the invoke (the Spark job's batch id and offset ranges,
    an app feeder's keys). ``encode``: a value's bytes (UTF-8 text unless given: an app feeder's
    8-byte integers). ``recreate_on_indefinite``: when the transaction's outcome was indefinite
    (``outcome.indefinite``: a call timed out, the commit was retried, or the outcome is unknown),
    record a ``recreated`` event saying why and retire this producer even if the transaction
    committed, so that the next one's ``init_transactions`` fences whatever this epoch may still
    have in flight."""

    txn_id: str
    sends: list[tuple[str, int, str]]
    abort: bool = False
    before_commit: Callable[[], dict[str, Any]] | None = None
    pause: tuple[int, Callable[[], None]] | None = None
    hold_s: float = 0.0
    gap_s: float = 0.0
    commit_timeout_s: float = CALL_TIMEOUT_S
    abort_after_commit_timeout: bool = False
    sole_writer: bool = False
    keys: dict[int, bytes] | None = None
    invoke_extra: dict[str, Any] | None = None
    recreate_on_indefinite: bool = False
    encode: Callable[[str], bytes] | None = None
    #: an app feeder's records, one per send (the send's value is its id): sent with their headers
    #: and timestamps by a ``HeadersClient``, in place of the value encoded
    wire: list[WireRecord] | None = None


@dataclass
class _Under:
    """What one transaction met so far: its phase, when its commit began, the fields its
    completion gets, its retried commits and refused aborts, and every error."""

    phase: Phase = Phase.BEFORE_COMMIT
    commit_at: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    retries: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    met: list[ErrorFacts] = field(default_factory=list)


def transaction(rec: Recorder, process: str, producer: Client, txn: Txn) -> str:
    """One recorded transaction; returns its outcome (``ok``, or ``fail`` when aborted). Outcomes of
    errors: ``outcome.classify``; how it runs: ``Txn``. Raises ``Retired`` after recording when
    this producer must be replaced."""
    sends = txn.sends
    rec.invoke(process, TXN, [["send", t, p, v] for t, p, v in sends], txn_id=txn.txn_id, **(txn.invoke_extra or {}))
    offsets: dict[bytes, int] = {}
    # what each acknowledgement is matched by: the value's bytes, or a feeder record's id
    encoded = [txn.encode(v) if txn.encode is not None else v.encode() for _, _, v in sends]
    u = _Under()

    def on_retry(facts: ErrorFacts) -> None:
        u.met.append(facts)
        u.retries.append(facts.describe())
        if txn.abort_after_commit_timeout and facts.timed_out:
            try:
                producer.abort(CALL_TIMEOUT_S)
            except ClientError as abort_exc:
                u.met.append(abort_exc.facts)
                u.refused.append(abort_exc.facts.describe())  # then the commit is retried: the right handling

    try:
        if _write(rec, process, producer, txn, encoded, offsets.__setitem__, u):  # bytes keys: no decode per record
            return FAIL
        u.phase = Phase.COMMIT
        u.commit_at = rec.now()
        commit_with_retries(producer, txn.commit_timeout_s, on_retry)
    except ClientError as exc:
        return _failed(rec, process, producer, txn, u, exc)
    done = [["send", t, p, v, offsets.get(b)] for (t, p, v), b in zip(sends, encoded)]
    u.extra.update(_retried(u.retries, u.refused))
    rec.complete(process, OK, TXN, done, txn_id=txn.txn_id, commit_at=u.commit_at, **u.extra)
    if txn.recreate_on_indefinite:
        _recreate_if_indefinite(rec, process, OK, u.met, bool(u.retries))
    return OK


def _write(rec: Recorder, process: str, producer: Client, txn: Txn, encoded: list[bytes],
           delivered: Callable[[bytes, int], None], u: _Under) -> bool:
    """Begin the transaction and write its records; True when it was aborted on purpose (recorded)."""
    producer.begin()
    # One send per record, not a batch call: the delivery reports of produce_batch
    # (confluent-kafka 2.16.1) carry wrong offsets -- the checker flagged them as
    # inconsistent-offsets and nonmonotonic-send the one time we tried it.
    for k, (t, p, _) in enumerate(txn.sends):
        if txn.pause is not None and k == txn.pause[0]:
            producer.flush(CALL_TIMEOUT_S)
            txn.pause[1]()
        if txn.gap_s and k:
            producer.flush(CALL_TIMEOUT_S)
            time.sleep(txn.gap_s)  # simulated work between writes, not a wait on anything
        if txn.wire is not None:
            _shaped(producer).send_record(t, p, txn.wire[k], delivered)
        else:
            producer.send(t, p, encoded[k], (txn.keys or {}).get(k), delivered)
    if txn.before_commit is not None:
        u.extra = txn.before_commit()
    if txn.abort:
        # Write the records first: librdkafka's abort purges what is still queued, and an abort
        # of records that never reached the log would test nothing (readers must skip them).
        producer.flush(CALL_TIMEOUT_S)
        producer.abort(CALL_TIMEOUT_S)
        rec.complete(process, FAIL, TXN, None, error="aborted on purpose", txn_id=txn.txn_id, **u.extra)
        return True
    producer.flush(CALL_TIMEOUT_S)  # serves the delivery reports: the offsets Kafka returned
    if txn.hold_s:
        time.sleep(txn.hold_s)  # simulated processing time, not a wait on anything
    return False


def _shaped(producer: Client) -> HeadersClient:
    """``producer`` as a client that sends headers and timestamps (the feeder runs on one)."""
    if not isinstance(producer, HeadersClient):
        raise TypeError(f"{type(producer).__name__} cannot send records with headers (the app's feeder needs it)")
    return producer


def _failed(rec: Recorder, process: str, producer: Client, txn: Txn, u: _Under, exc: ClientError) -> str:
    """A call of the transaction failed: abort it where that is right, record the outcome, and
    retire the producer (``Retired``) when it cannot go on; the outcome's type otherwise."""
    extra = u.extra
    extra.update(_retried(u.retries, u.refused))
    aborted = abort_fenced = False
    if should_abort(u.phase, exc.facts):
        try:
            producer.abort(CALL_TIMEOUT_S)
            aborted = True
        except ClientError as abort_exc:
            u.met.append(abort_exc.facts)  # an abort that timed out may still be on its way too
            extra["abort_error"] = abort_exc.facts.describe()
            abort_fenced = abort_exc.facts.fenced
    u.met.append(exc.facts)
    outcome = classify(u.phase, exc.facts, sole_writer=txn.sole_writer, aborted=aborted, abort_fenced=abort_fenced)
    error = exc.facts.describe()
    rec.complete(process, outcome.type, TXN, None, error=error, txn_id=txn.txn_id, commit_at=u.commit_at, **extra)
    if outcome.event is not None:
        rec.event(process, outcome.event, error)  # fenced or fatal: retired for that reason
    elif txn.recreate_on_indefinite:
        _recreate_if_indefinite(rec, process, outcome.type, u.met, bool(u.retries))
    if outcome.retire:
        raise Retired(error) from exc
    return outcome.type


def _recreate_if_indefinite(rec: Recorder, process: str, outcome_type: str, met: list[ErrorFacts],
                            commit_retried: bool) -> None:
    """Record why and raise ``Retired`` when the transaction's outcome was indefinite
    (``outcome.indefinite``); nothing otherwise."""
    reason = indefinite(outcome_type, met, commit_retried)
    if reason is not None:
        rec.event(process, RECREATED, reason)
        raise Retired(f"recreated: {reason}")


def _retried(retries: list[str], refused: list[str]) -> dict[str, list[str]]:
    """The fields a transaction's completion gets for its retried commit calls (none: none)."""
    return {k: v for k, v in (("commit_retries", retries), ("aborts_refused", refused)) if v}
