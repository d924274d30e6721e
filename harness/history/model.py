"""The history's vocabulary: operation types, functions, and the shapes of their values.

One JSON object per line, Jepsen's model: every operation is an ``invoke`` followed by exactly one
completion from the same ``process`` with the same ``f``: ``ok`` (it happened), ``fail`` (it
definitely did not), ``info`` (unknown). Fields: ``time`` (ns, monotonic, since the run started;
the same clock in every process), ``process``, ``type``, ``f``, ``value``, ``error``, plus a few
per-``f`` extras named below. ``index`` is assigned when the per-process files are merged.
``store.read_ops`` reads each line into an ``Op`` (fields this module does not name stay in
``Op.extra``); ``sends_of`` gives the records a ``txn`` / ``send`` op wrote.

Check examples name places in a partition as ``Position`` objects ``{"topic", "partition", "offset"}``.

Values written are strings unique in the whole run. Shapes of ``value``:

- ``txn``: invoke ``[["send", topic, partition, value], ...]``; the ``ok`` completion repeats it
  with the offset Kafka returned appended to each send. Extras: ``txn_id`` (the transactional.id),
  ``commit_at`` (time ``commit_transaction`` was called), ``offsets`` (copier: the input offsets
  sent to the transaction, ``{"topic-partition": next offset}``).
- ``send`` (non-transactional producer): invoke ``[topic, partition, value]``, ok ``[..., offset]``.
- ``init``: value = the transactional.id.
- ``poll``: ok value ``{"topic-partition": [[offset, value], ...]}`` (only non-empty polls).
- ``scan``: the final read of every partition after heal; value as ``poll``; extra ``isolation``.
- ``group-offsets``: the copier group's committed offsets after heal ``{"topic-partition": offset}``.
- ``fenced``: a producer retired because Kafka fenced it (value: the error).
- ``retired``: a producer retired after another fatal error (value: the error).
- ``recreated``: a producer dropped after a transaction whose outcome was indefinite, so that the
  next incarnation's ``init_transactions`` fences what the old epoch may still have in flight
  (txn-producer setting ``recreate_on_indefinite``; value: why, ``outcome.indefinite``).
- ``lso``: after heal, per partition the seconds until its last stable offset reached its high
  watermark (null: not within the bound) ``{"bound_s": 90, "lag_s": {"topic-partition": 0.2}}``.
- ``fault``: nemesis events (process ``nemesis``), value ``{"kind", "targets", ...}``.
- ``spark-start``: a Spark job incarnation started (value ``{"query", "incarnation"}``).
- ``spark-batch``: a micro-batch the job finished ``{"query", "batch", "ranges", "records",
  "outcome", "ms"}``; ``ranges`` = ``{"topic-partition": [start, end)}`` from Spark's offset log.
  Transactional batches are also ``txn`` ops, with ``batch`` and ``ranges`` on the invoke.
- ``spark-skip``: a replayed micro-batch the job skipped because its marker is committed
  ``{"query", "batch", "last_committed"}``.
- ``spark-fault``: the job killed or froze itself at an armed point ``{"window", "signal", "batch"}``.
- ``spark-progress``: Spark's own figures of a finished micro-batch ``{"batch", "trigger_ms", "rows"}``
  (the whole trigger: planning, reading, ``foreachBatch``, the commit log).

An ``app`` (a user's own application, docs/APPS.md) is recorded by the harness around it:

- ``txn`` extra ``keys``: one record key per send (null for none); the app's feeder sets it.
- ``txn`` extra ``records``: one per send, ``[payload, timestamp ms, headers]``: what the app's feeder
  wrote as the record's value (text as is, JSON as its JSON text, bytes as base64; null for a null
  value), its timestamp, and its own headers (``[[name, value], ...]`` or null). The send's value is
  then the record's id, the header ``FEEDER_ID_HEADER`` every feeder record carries, so values stay
  unique however often a payload repeats; every reader of the app's inputs records that id as the
  value it read (``feeder_id``). The ``payloads`` table.
- ``app-contract``: the runner's one-line event naming an app and what it must do, value
  ``{"app", "contract": "map" | "aggregate", "inputs": [topic, ...], "outputs": [topic, ...],
  "function": "identity" | "module:function", "order": "per-key" | "none", "aggregates": {topic:
  "count" | "sum" | "min" | "max"}}`` (topics as the run names them).
- ``expect``: the outputs a ``map`` contract's function gives for input values, applied by the runner
  (never by the checker) ``{"app", "inputs": [[input value, [[topic, key, value], ...]], ...]}``.
- ``scan`` / ``poll`` extra ``app``: a read of the app's output topics; its records carry the key,
  ``{"topic-partition": [[offset, value, key], ...]}`` (value, key: null for a null). They are the
  ``app_outputs`` table, never ``reads``: output values need not be unique nor written by a
  recorded send, so only the contract checks judge them.
- ``app-stray``: the runner's one-line event ``{"app", "topics": {topic: records written}}`` naming the
  topics the app wrote to that it did not declare (judged by the app's contract check).
- ``app-start`` / ``app-ready`` / ``app-exit``: an instance's wrapper (process ``<app>-<n>.<k>``),
  one-line events: each start of the command ``{"pid"}`` (type ``info``), its readiness after that
  start ``{"how": what made it ready}`` (type ``ok``) and ``{"code": exit code, "signal": name or null,
  "after_ready": bool}`` (type ``info``).

A copier's output value is ``copy/<in topic>/<in partition>/<in offset>/<attempt>/<in value>``, so
the checker can pair outputs with inputs from the output alone; ``attempt`` (copier process and
transaction number) keeps values unique when an aborted copy is copied again.

The Spark job's output value is ``spark/<in topic>/<in partition>/<in offset>/<batch>/<process>/<in value>``
(``process`` keeps a replayed batch's values unique), and each of its transactions carries one
marker, key ``<query>/<batch>``, value ``spark-marker/<query>/<batch>/<process>/<ranges JSON>``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypedDict

INVOKE, OK, FAIL, INFO = "invoke", "ok", "fail", "info"
COMPLETIONS = (OK, FAIL, INFO)

TXN, SEND, INIT, POLL, SCAN, GROUP_OFFSETS, FENCED, RETIRED, FAULT, LSO = (
    "txn", "send", "init", "poll", "scan", "group-offsets", "fenced", "retired", "fault", "lso")
#: a producer dropped on purpose after an indefinite outcome (``recreate_on_indefinite``)
RECREATED = "recreated"
#: an app's contract (the runner's), and the outputs its ``map`` function gives per input value
APP_CONTRACT, EXPECT = "app-contract", "expect"
#: an app instance's wrapper: the app became ready (its readiness condition met), the app's command exited
APP_READY, APP_EXIT = "app-ready", "app-exit"
#: an app instance's wrapper started the app's command (again): its readiness is recorded anew
APP_START = "app-start"
#: the runner: topics the app wrote to that it did not declare (neither an output nor its own internal
#: ``{id}-...`` topics), with how many records each gained during the run
APP_STRAY = "app-stray"
#: How a check's ``error`` begins when the history, not the check, is at fault (harness.checker.checks.
#: HistoryError): its readers say "could not judge the history", not "crashed".
HISTORY_ERROR = "history error"


def is_history_error(error: object) -> bool:
    """A check's ``error`` is the history's fault (``HISTORY_ERROR``), not the check's crash."""
    return str(error or "").startswith(HISTORY_ERROR)
#: the kinds of contract an app declares (``app-contract``'s ``contract``)
MAP, AGGREGATE = "map", "aggregate"
#: issue 39's forms: windowed aggregates, a user's model of the final table, a stream-table join
WINDOWED, MODEL, JOIN = "windowed", "model", "join"
#: the check that judges an app by each kind of contract (harness/checker/catalog.py); a pipeline's
#: chain is judged end to end by ``PIPELINE_CHECK``
CONTRACT_CHECKS = {MAP: "app-map", AGGREGATE: "app-aggregate", MODEL: "app-model", WINDOWED: "app-windowed",
                   JOIN: "app-join"}
PIPELINE_CHECK = "app-pipeline"
#: a windowed output key: Kafka Streams' TimeWindowedSerializer (key bytes + 8-byte start) or ``key@start``
TIME_WINDOWED, TEXT_WINDOW = "time-windowed", "text"
#: a ``map`` contract's function when none is named: one output per input, same key and value
IDENTITY = "identity"
#: a ``map`` contract's ``order``: per output key, outputs keep their inputs' order / no order asked
PER_KEY, NO_ORDER = "per-key", "none"
#: the running aggregates an ``aggregate`` contract may declare per output topic
COUNT, SUM, MIN, MAX = "count", "sum", "min", "max"
AGGREGATES = (COUNT, SUM, MIN, MAX)
SPARK_START, SPARK_BATCH, SPARK_SKIP, SPARK_FAULT, SPARK_PROGRESS = (
    "spark-start", "spark-batch", "spark-skip", "spark-fault", "spark-progress")
SPARK_EVENTS = (SPARK_START, SPARK_BATCH, SPARK_SKIP, SPARK_FAULT, SPARK_PROGRESS)

READ_COMMITTED, READ_UNCOMMITTED = "read_committed", "read_uncommitted"
COPY_PREFIX = "copy"
SPARK_PREFIX, MARKER_PREFIX = "spark", "spark-marker"
NEMESIS = "nemesis"
#: a ``fault`` event's ``phase``: the fault began / was healed
FAULT_START, FAULT_STOP = "start", "stop"
#: A ``fault`` event's value may list under this key the Kafka errors the fault's own requests were
#: answered with (``retry-rotation-after-failover``'s retried InitProducerId). ``error_names`` counts
#: each as ``<kind>/<NAME>``: a fault's finding, apart from the same error met by a workload's client
#: (a producer a pump fenced may meet PRODUCER_FENCED whatever the fault found).
FAULT_ERRORS = "errors_met"
#: how a workload describes an abort it chose (not an error any client met)
ABORTED_ON_PURPOSE = "aborted on purpose"

#: The header every record of an app's feeder carries: its id, unique in the run (the send's value in
#: the history); readers of the feeder's topics take it as the record's value (docs/APPS.md, "The feeder").
FEEDER_ID_HEADER = "eos-chaos-id"
#: How the feeder encodes a record's key and value (``app-contract``'s ``formats``, per input topic):
#: UTF-8 text, JSON text, or bytes as they are (recorded as base64)
TEXT, JSON, BYTES = "text", "json", "bytes"
FORMATS = (TEXT, JSON, BYTES)


def feeder_id(headers: Sequence[tuple[str, bytes | str | None]] | None) -> str | None:
    """The feeder's id among a record's ``headers`` (None: not a feeder record)."""
    for name, value in headers or ():
        if name == FEEDER_ID_HEADER and value is not None:
            return value if isinstance(value, str) else value.decode("utf-8", "replace")
    return None


#: An app's companions (harness/workloads/registry.py names them): the txn-producer feeding its
#: input, and the reader of its output.
APP_FEEDER, APP_READER = "app-feeder", "app-reader"
TXN_PRODUCER, COPIER, SPARK_JOB, APP = "txn-producer", "copier", "spark-job", "app"
#: What a process of each kind finishes (``finished``) to show that it is making progress: a
#: transaction (or a plain send), a copy, a micro-batch. The run waits for the first before its
#: schedule starts (harness/run/readiness.py), a fault aimed at a workload for one since the
#: previous fault on it (chaos/nemesis.py), and the checker for one while the faults ran
#: (harness/checker/progress.py). An app shows it by its output, read by its ``APP_READER``.
PROGRESS_OPS: dict[str, tuple[str, ...]] = {TXN_PRODUCER: (TXN, SEND), COPIER: (TXN,), SPARK_JOB: (SPARK_BATCH,)}


#: A txn-producer process may run several transactional producers (setting ``producers``), each a
#: process of its own in the history (``<workload>.<incarnation>``, one numbering for all of them)
#: with a transactional.id of its own: the first the workload's (``eos-<workload>``), the k-th
#: ``eos-<workload>~<k>`` (with ``-<j>`` added where needed so that Kafka places it on the first's
#: coordinator: a fault on that coordinator hits every producer of the process).
PRODUCER_SEP = "~"


def among_producers_of(txn_id: str, of: str) -> bool:
    """``txn_id`` is ``of`` or the transactional.id of a producer that runs beside ``of``'s in its
    txn-producer process (``<of>~<k>...``), which shares its coordinator."""
    return txn_id == of or txn_id.startswith(of + PRODUCER_SEP)


def finished(op: Mapping[str, Any]) -> bool:
    """A history line (decoded JSON) of an op that finished: ``ok``; an abort the workload chose (a
    producer whose every transaction aborts on purpose is running all the same); or an event
    (``info``, no invoke) that says its outcome was ``ok`` (a Spark micro-batch)."""
    kind, value = op.get("type"), op.get("value")
    return (kind == OK or (kind == FAIL and op.get("error") == ABORTED_ON_PURPOSE)
            or (kind == INFO and isinstance(value, dict) and value.get("outcome") == OK))


def workload_of(process: str) -> str | None:
    """The workload process a history process belongs to: ``copier-0.3`` (its fourth incarnation)
    -> ``copier-0``; a Spark task's ``spark-job-0.1~t3`` -> ``spark-job-0``. None for a name that is
    not ``<workload>.<incarnation>`` (the runner's, the final reads', the nemesis's)."""
    head, dot, _ = process.partition(".")
    return head if dot and head else None


def kind_of(workload: str) -> str:
    """The kind of a workload process, from the name the registry gives it (``<kind>-<n>``; the
    app's feeder is a txn-producer): ``copier-1`` -> ``copier``. A name of another shape (a role's
    ``zombie-first``, a kind's own name, a test's ``p1``) is its own kind."""
    if workload == APP_FEEDER:
        return TXN_PRODUCER
    head, _, tail = workload.rpartition("-")
    return head if head and tail.isdigit() else workload


def tp_key(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def split_tp(key: str) -> tuple[str, int]:
    """``"in-3"`` -> ``("in", 3)`` (topic names may contain dashes; the partition is after the last)."""
    topic, _, part = key.rpartition("-")
    return topic, int(part)


def copy_value(topic: str, partition: int, offset: int, value: str, attempt: str) -> str:
    return f"{COPY_PREFIX}/{topic}/{partition}/{offset}/{attempt}/{value}"


def spark_value(topic: str, partition: int, offset: int, batch: int, process: str, value: str) -> str:
    return f"{SPARK_PREFIX}/{topic}/{partition}/{offset}/{batch}/{process}/{value}"


def marker_key(query: str, batch: int) -> str:
    return f"{query}/{batch}"


def marker_value(query: str, batch: int, process: str, ranges: dict[str, list[int]]) -> str:
    return f"{MARKER_PREFIX}/{query}/{batch}/{process}/{json.dumps(ranges, sort_keys=True, separators=(',', ':'))}"


def parse_marker(value: str) -> tuple[str, int, str, dict[str, list[int]]]:
    """``marker_value``'s parts: (query, batch, process, ranges)."""
    _, query, batch, process, ranges = value.split("/", 4)
    return query, int(batch), process, json.loads(ranges)


#: A position packed into one int64, ordered as (topic id, partition, offset): 11 bits of topic id,
#: 12 of partition, 40 of offset, and the sign bit clear. A history past these limits is refused
#: (``store``), never packed into positions that overlap another topic's.
TOPIC_BITS, PARTITION_BITS, OFFSET_BITS = 11, 12, 40
MAX_TOPICS, MAX_PARTITION, MAX_OFFSET = 1 << TOPIC_BITS, (1 << PARTITION_BITS) - 1, (1 << OFFSET_BITS) - 1
#: the shift of the topic id; ``pos >> OFFSET_BITS`` is (topic id, partition) as one number
TOPIC_SHIFT = PARTITION_BITS + OFFSET_BITS


class Position(TypedDict):
    """One place in a partition, as check examples name it (JSON: an object, never ``"t-0@5"``)."""

    topic: str
    partition: int
    offset: int


def position(topic: str, partition: int, offset: int) -> Position:
    """A ``Position`` of plain Python values (numpy / pandas scalars would not serialise)."""
    return {"topic": str(topic), "partition": int(partition), "offset": int(offset)}


#: The op fields every line may carry; anything else a line holds is kept in ``Op.extra``.
_FIELDS = ("index", "time", "process", "type", "f", "value", "error", "txn_id", "commit_at", "offsets", "isolation",
           "commit_retries", "aborts_refused", "abort_error", "batch", "ranges", "keys", "app", "records")
_FIELD_SET = frozenset(_FIELDS)
_UNSET: dict[str, Any] = dict.fromkeys(_FIELDS)


@dataclass(frozen=True)
class Op:
    """One line of the history (see the module docstring for each ``f``'s ``value`` and extras)."""

    index: int
    time: int
    process: str
    type: str
    f: str
    value: Any = None
    error: str | None = None
    txn_id: str | None = None
    commit_at: int | None = None
    offsets: dict[str, int] | None = None
    isolation: str | None = None
    commit_retries: list[str] | None = None
    aborts_refused: list[str] | None = None
    abort_error: str | None = None
    batch: int | None = None
    ranges: dict[str, list[int]] | None = None
    #: a ``txn``'s record keys, one per send (an app's feeder)
    keys: list[str | None] | None = None
    #: the app whose output a ``scan`` / ``poll`` read
    app: str | None = None
    #: a ``txn``'s records as the app's feeder wrote them, one per send: [payload, timestamp, headers]
    records: list[list[Any]] | None = None
    #: fields of the line this model does not name (kept, so nothing a workload wrote is lost)
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, line: Mapping[str, Any], index: int | None = None) -> Op:
        """The op of one decoded JSON line; ``index`` overrides the line's own (merging assigns it)."""
        fields = dict(_UNSET)
        extra = {}
        for k, v in line.items():
            if k in _FIELD_SET:
                fields[k] = v
            else:
                extra[k] = v
        fields.update(index=index if index is not None else int(line.get("index", -1)), process=str(line["process"]),
                      extra=extra)
        # A history has millions of lines: filling the instance's dict directly is 4x faster than
        # the frozen dataclass's __init__ (one object.__setattr__ per field); the fields are the same.
        op = object.__new__(cls)
        op.__dict__.update(fields)
        return op

    def to_json(self) -> dict[str, Any]:
        """The op as the recorder writes it (fields that are unset left out), with its ``index``."""
        out = {k: getattr(self, k) for k in _FIELDS}
        return {**{k: v for k, v in out.items() if v is not None or k in ("value",)}, **self.extra}


class Send(NamedTuple):
    """One record a ``txn`` or ``send`` op wrote: where to, what, and the offset Kafka acknowledged."""

    topic: str
    partition: int
    value: str
    offset: int | None = None


def _send(micro: list[Any], acked: list[Any] | None) -> Send:
    """``[topic, partition, value]`` and its acknowledgement ``[topic, partition, value, offset]``."""
    topic, partition, value = micro[0], micro[1], micro[2]
    offset = acked[3] if acked is not None and len(acked) > 3 else None
    return Send(str(topic), int(partition), str(value), None if offset is None else int(offset))


def sends_of(invoke: Op, done: Op | None = None) -> list[Send]:
    """The records a ``txn`` / ``send`` invoke wrote, with the offsets its ``ok`` completion ``done``
    acknowledged (None for each when the op did not complete ok). Transaction micro-ops are
    ``["send", topic, partition, value(, offset)]``."""
    acked = done.value if done is not None and done.type == OK and done.value is not None else None
    if invoke.f == TXN:
        micro = [list(m[1:]) for m in invoke.value or []]
        acks = [list(a[1:]) for a in acked] if acked is not None else []
    else:
        micro = [list(invoke.value)]
        acks = [list(acked)] if acked is not None else []
    return [_send(m, acks[k] if k < len(acks) else None) for k, m in enumerate(micro)]


def error_names(op: Op) -> list[str]:
    """The names of every error ``op`` reports (its error, a failed abort's, each retried commit's
    and each refused abort's): the text before the first ':' (workloads write "NAME: message"). A
    fault event's own (``FAULT_ERRORS``) are named ``<kind>/<NAME>``."""
    msgs = [op.error, op.abort_error, *(op.commit_retries or []), *(op.aborts_refused or [])]
    names = [m.split(":", 1)[0].strip() for m in msgs if isinstance(m, str) and m and m != ABORTED_ON_PURPOSE]
    if op.f == FAULT and isinstance(op.value, dict) and isinstance(met := op.value.get(FAULT_ERRORS), list):
        names += [f"{op.value.get('kind')}/{name}" for name in met if isinstance(name, str) and name]
    return names
