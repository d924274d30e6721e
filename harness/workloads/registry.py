"""Every workload kind in one place: the module its processes run (``python -m MODULE CONFIG.json``),
its settings (a pydantic model: names, defaults, bounds), how many processes one scenario entry
makes, whether the supervisor restarts a process that dies and how its recovery shows, and what
else a run does for it (a Spark application's pyspark and cluster, a compacted topic, a consumer
group made unique and read back at the end). ``harness.run.scenario`` validates settings with it,
``harness.run.runner`` names the processes and prepares the run with it, ``harness.run.supervisor``
starts and restarts them with it: none of them names a kind. Adding a kind: docs/ADDING.md."""

from __future__ import annotations

import difflib
import re
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from harness.history.model import (
    AGGREGATES,
    APP,
    APP_FEEDER,
    APP_READER,
    APP_READY,
    COPIER,
    IDENTITY,
    NO_ORDER,
    PROGRESS_OPS,
    SPARK_JOB,
    TXN_PRODUCER,
)
from harness.history.schema import FUNCTION_SPEC, PIPED_CONTRACTS, Aggregate, AppContract, ContractKind, Format, Order, TimeWindows, WindowKey
from harness.workloads import app_args
from harness.workloads.client import CALL_TIMEOUT_S, TRANSACTION_TIMEOUT_MS
from harness.workloads.clients import CLIENTS, DEFAULT_LIBRARY, LIBRARIES, parse
from harness.workloads.txn_ids import transactional_id

#: The kinds a scenario may name (``workloads[].kind``, ``faults[].workload``).
KindName = Literal["txn-producer", "reader", "copier", "zombie", "spark-job", "app"]
#: A txn-producer process runs at most this many producers (``producers``): each is a few librdkafka
#: threads and connections; more than this is better spread over processes (``count``).
MAX_PRODUCERS = 64
#: Upper bound when transactions are sized by time (``txn_ms``): keeps one history line reasonable,
#: and a whole transaction within librdkafka's local queue (queue.buffering.max.messages, 100000).
MAX_VALUES_PER_TXN = 50_000
#: The setting ``--producers`` sets: a kind's ``threads_setting`` that runs transactional producers
#: side by side (the txn-producer's).
PRODUCERS = "producers"
#: The copier's consumer group unless its settings name one (the runner makes it unique per run).
COPIER_GROUP = "eos-chaos-copier"
#: An app's id unless its settings name one (the runner makes it unique per run).
APP_ID = "eos-chaos-app"
#: The process names of an app's feeder and of the reader of its output (one app per scenario):
#: ``APP_FEEDER``, ``APP_READER`` (harness/history/model.py: the checker tells kinds by them).
#: The feeder's transactions are small and quick: one left open by a kill is aborted by its
#: coordinator within this, well before the drain ends.
FEEDER_TRANSACTION_TIMEOUT_MS = 20_000

class Settings(BaseModel):
    """Settings common to every kind that writes transactions."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: the producer's transaction.timeout.ms (the incident replay that wants expiry sets it small);
    #: at most the brokers' transaction.max.timeout.ms (15 min by default), else init fails
    transaction_timeout_ms: int = Field(TRANSACTION_TIMEOUT_MS, ge=1000, le=900_000)


class TxnProducerSettings(Settings):
    values_per_txn: int = Field(6, ge=1, le=MAX_VALUES_PER_TXN)
    #: share of transactions aborted on purpose
    abort_share: float = Field(0.1, ge=0, le=1)
    #: false: plain sends, one ``send`` op per value (the negative control for duplicates)
    transactional: bool = True
    #: a subset of the scenario's topics (empty: all of them)
    topics: list[str] = []
    #: pad values to this many bytes (benchmarks)
    value_bytes: int = Field(0, ge=0, le=1_000_000)
    #: size each transaction to take about this long instead (the count adapts to the last one's pace)
    txn_ms: float = Field(0, ge=0)
    #: keep each transaction open this long after its records are written, before the commit
    hold_ms: float = Field(0, ge=0)
    #: between two sends of a transaction, flush and wait this long (work between writes)
    send_gap_ms: float = Field(0, ge=0, le=60_000)
    #: each commit call's timeout (a timed-out commit is retried)
    commit_timeout_s: float = Field(CALL_TIMEOUT_S, gt=0, le=600)
    #: try an abort after a commit timed out, as applications wrongly do (librdkafka refuses it)
    abort_after_commit_timeout: bool = False
    #: no transaction for ``idle_ms`` after every ``idle_every`` transactions (0: never idle)
    idle_every: int = Field(0, ge=0)
    idle_ms: float = Field(0, ge=0)
    #: values per second at most (0: as fast as it goes)
    rate: float = Field(0, ge=0)
    #: record keys: each record gets one of ``k0`` .. ``k{keys-1}`` (seeded) and goes to the partition
    #: its key hashes to (murmur2, as Kafka's Java clients), so a key's records are in one partition
    #: in the order written; the ``txn`` op records them (``keys``). 0: no keys, random partitions
    keys: int = Field(0, ge=0, le=100_000)
    #: values are positive integers, distinct in the run, as decimal text or (``long``) 8 bytes
    #: big-endian: what an aggregating app's ``sum``, ``min`` and ``max`` read (an app's feeder)
    integer_values: bool = False
    value_serde: Literal["string", "long"] = "string"
    #: drop the producer after any transaction whose outcome was indefinite (a call timed out, the
    #: commit was retried, or its outcome is unknown) and init a new incarnation of the same
    #: transactional.id, whose epoch bump fences what the old epoch may still have in flight
    #: (KAFKA-17754: clients without KIP-890; docs/CLIENTS-PYTHON.md)
    recreate_on_indefinite: bool = False
    #: transactional producers this process runs side by side (threads), each with a transactional.id
    #: and process names of its own (docs/reference/scenario-format.md): a producer has one open
    #: transaction at a time, so more producers are more transactions in flight when a fault lands
    producers: int = Field(1, ge=1, le=MAX_PRODUCERS)
    #: an app's feeder: what it writes per input topic (generators, records files, formats), each
    #: record with the id header (docs/APPS.md, "The feeder"); an app's entry sets it
    feed: Feed | None = None


class ReaderSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


Serde = Literal["string", "long", "int", "bytes"]


class OutputSerde(BaseModel):
    """How an app's output keys and values are read: UTF-8 text, 8- / 4-byte big-endian integers
    (Kafka's LongSerializer / IntegerSerializer), recorded as decimal text, or bytes as base64 text
    (a windowed key of Kafka Streams' TimeWindowedSerializer: the default key of a windowed contract)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    key: Serde = "string"
    value: Serde = "string"


def _a(word: str) -> str:
    return f"{'an' if word[0] in 'aeiou' else 'a'} {word}"


class ContractSettings(BaseModel):
    """What an app must do with its input, as its scenario entry declares it (docs/APPS.md, "The
    contract"); the run records it as an ``AppContract`` (harness/history/schema.py: ``recorded``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: ContractKind
    #: ``map``: ``identity`` or ``module:function`` (input record -> its output records); ``model``:
    #: committed inputs -> the final table; ``join``: (stream record, table record or None) -> outputs
    function: str = IDENTITY
    order: Order = "none"
    #: ``aggregate`` / ``windowed``: output topic -> count, sum, min or max of the key's amounts
    aggregates: dict[str, Aggregate] = {}
    #: ``aggregate`` / ``windowed``: ``module:function``, input record -> [[topic, key, amount], ...]
    #: (default: the input's key, its value as the amount)
    by: str | None = None
    window: TimeWindows | None = None
    window_key: WindowKey = "time-windowed"
    monotone: bool = False
    stream: str | None = None
    table: str | None = None
    output_serde: OutputSerde = Field(default_factory=OutputSerde)

    @model_validator(mode="before")
    @classmethod
    def _windowed_keys_as_bytes(cls, data: Any) -> Any:
        """A windowed contract's keys of Kafka Streams' TimeWindowedSerializer (the default) are
        bytes: read as base64 unless the scenario says how."""
        if (isinstance(data, dict) and data.get("kind") == "windowed" and data.get("window_key", "time-windowed") != "text"
                and "key" not in (data.get("output_serde") or {})):
            return {**data, "output_serde": {**(data.get("output_serde") or {}), "key": "bytes"}}
        return data

    def recorded(self, app: str, inputs: list[str], outputs: list[str],
                 formats: Mapping[str, Format] | None = None, upstream: str | None = None) -> AppContract:
        """The contract as the run records it (``app-contract``) for ``app`` reading ``inputs`` and
        writing ``outputs`` (as the run names them), its feeder writing ``formats`` per input, or
        (a pipeline's later stage) app ``upstream`` writing its inputs."""
        return AppContract(app=app, contract=self.kind, inputs=list(inputs), outputs=list(outputs), function=self.function,
                           order=self.order, aggregates=dict(self.aggregates), by=self.by, window=self.window,
                           window_key=self.window_key, monotone=self.monotone, stream=self.stream, table=self.table,
                           formats=dict(formats or {}), upstream=upstream)

    def functions(self) -> list[str]:
        """The user's ``module:function``s this contract names (the runner applies them)."""
        return [f for f in (self.by, None if self.function == IDENTITY else self.function) if f]

    @model_validator(mode="after")
    def _fits_its_kind(self) -> ContractSettings:
        kind, only = self.kind, []
        only += [("aggregates", "aggregate or windowed")] if self.aggregates and kind not in ("aggregate", "windowed") else []
        only += [("by", "aggregate or windowed")] if self.by and kind not in ("aggregate", "windowed") else []
        only += [("order", "map")] if self.order != NO_ORDER and kind != "map" else []
        only += [("window", "windowed")] if self.window and kind != "windowed" else []
        only += [("monotone", "model")] if self.monotone and kind != "model" else []
        only += [("stream and table", "join")] if (self.stream or self.table) and kind != "join" else []
        only += [("function", "map, model or join")] if self.function != IDENTITY and kind not in ("map", "model", "join") else []
        if only:
            raise ValueError(f"{only[0][0]}: only in {_a(only[0][1])} contract, not {_a(kind)} one")
        for name, spec in (("function", None if self.function == IDENTITY else self.function), ("by", self.by)):
            if spec is not None and not re.fullmatch(FUNCTION_SPEC, spec):
                raise ValueError(f"{name}: {spec!r}; allowed: "
                                 + ("identity, or " if name == "function" and kind == "map" else "")
                                 + "module:function (an importable module, a function of it)")
        needs = {"aggregate": ["aggregates"], "windowed": ["aggregates", "window"], "model": ["function"],
                 "join": ["function", "stream", "table"]}.get(kind, [])
        missing = [n for n in needs if not getattr(self, n) or getattr(self, n) == IDENTITY]
        if missing:
            raise ValueError(f"{', '.join(missing)}: required in {_a(kind)} contract"
                             + (f" (output topic -> one of {', '.join(AGGREGATES)})" if "aggregates" in missing else ""))
        return self


class AppReady(BaseModel):
    """When an app instance is ready (the fault schedule starts when every workload is): exactly one of
    a line of its output matching ``log`` (a regular expression), its consumer group (``{id}``
    unless named) being Stable, or (``output: first``) a first record in an output topic."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    log: str | None = None
    group: str | None = None
    output: Literal["first"] | None = None

    @model_validator(mode="after")
    def _one_condition(self) -> AppReady:
        given = [k for k in ("log", "group", "output") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"ready: exactly one of log, group, output ({', '.join(given) or 'none'} given), e.g. "
                             "{log: 'State transition from REBALANCING to RUNNING'}, {group: stable}, {output: first}")
        if self.log is not None:
            try:
                re.compile(self.log)
            except re.error as exc:
                raise ValueError(f"ready.log: {self.log!r} is not a regular expression: {exc}") from None
        return self


class FeederInput(BaseModel):
    """One input topic's own input (``feeder.inputs.TOPIC``): what the feeder writes there, how fast
    and in what format, each defaulting to the feeder's."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    #: ``module:function(rnd: random.Random, seq: int) -> {"key", "value", "headers", "timestamp"}``
    generator: str | None = None
    #: a JSON-lines file of such records, replayed in order (a scenario file's: relative to that file)
    records: str | None = None
    #: records per second to this topic at most (0: as fast as it goes)
    rate: float | None = Field(None, ge=0)
    #: how keys and values are encoded: UTF-8 text, JSON text, or bytes as they are
    format: Format | None = None

    @model_validator(mode="after")
    def _one_source(self) -> FeederInput:
        if self.generator is not None and self.records is not None:
            raise ValueError("generator and records: one of them (a generator makes records, a file replays them)")
        if self.generator is not None and not re.fullmatch(FUNCTION_SPEC, self.generator):
            raise ValueError(f"generator: {self.generator!r}; allowed: module:function (an importable module, "
                             "a function of it taking (rnd, seq))")
        return self


class AppFeeder(FeederInput):
    """The app's input, written by the harness: seeded, keyed, some transactions aborted; by
    default values unique in the run on keys ``k0`` .. (integers for an aggregate contract), or
    what a generator of the user's or a file of records gives (docs/APPS.md, "The feeder")."""

    values_per_txn: int = Field(10, ge=1, le=10_000)
    abort_share: float = Field(0.2, ge=0, le=1)
    keys: int = Field(16, ge=1, le=100_000)
    #: input values per second at most, over the input topics without a rate of their own (0: as fast as it goes)
    rate: float = Field(200, ge=0)
    value_serde: Literal["string", "long"] = "string"
    #: per input topic (the scenario's name): its own generator, records, rate or format
    inputs: dict[str, FeederInput] = {}

    def source(self, topic: str) -> FeedSource:
        """What the feeder writes to input ``topic`` (the scenario's name)."""
        own = self.inputs.get(topic) or FeederInput.model_validate({})
        made = own.generator is not None or own.records is not None
        return FeedSource(generator=own.generator if made else self.generator,
                          records=own.records if made else self.records, rate=own.rate,
                          format=own.format or self.format or "text")

    def shaped(self) -> bool:
        """The user shapes the input: a generator, a records file, a format other than text."""
        sources = [self.source(t) for t in self.inputs] + [self.source("")]
        return any(s.generator or s.records or s.format != "text" for s in sources)


class FeedSource(BaseModel):
    """One input topic's source as the feeder process gets it (``AppFeeder.source``); rate None: it
    shares the feeder's ``rate`` with the other topics of none."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    generator: str | None = None
    records: str | None = None
    rate: float | None = None
    format: Format = "text"


class Feed(BaseModel):
    """An app feeder's input sources (txn-producer setting ``feed``, the app's entry sets it): per
    input topic, as the scenario names it; and where a generator is imported from (the app's folder)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    inputs: dict[str, FeedSource]
    path: str | None = None


TxnProducerSettings.model_rebuild()


class AppSettings(BaseModel):
    """A user's own application under test (docs/APPS.md): the command of one instance, the topics it
    reads and writes, when it is ready, and the contract its output is judged by."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    command: list[str] = Field(min_length=1)
    #: the working folder (a scenario file's: relative to that file)
    cwd: str | None = None
    env: dict[str, str] = {}
    inputs: list[str] = Field(min_length=1)
    outputs: list[str] = Field(min_length=1)
    #: the app's name in the history (its contract, its output's reads): a pipeline's stages tell
    #: themselves apart by it (docs/APPS.md, "Pipelines")
    name: str = Field(APP, pattern=r"^[a-z][a-z0-9-]{0,39}$")
    #: a pipeline's later stage: the ``name`` of the app (an earlier entry) whose outputs it reads;
    #: it has no feeder of its own
    upstream: str | None = None
    #: the app's id: the placeholder ``{id}`` (application.id, group, transactional.id prefix); by
    #: default made unique to the run (and to the stage: ``eos-chaos-app-<name>`` beside the first)
    id: str = APP_ID
    ready: AppReady
    ready_timeout_s: float = Field(120, gt=0, le=3600)
    #: after heal: how long the app may take to process what it was given
    drain_s: float = Field(60, gt=0, le=3600)
    #: on SIGTERM: how long the app may take to exit before it is killed
    stop_timeout_s: float = Field(30, gt=0, le=600)
    feeder: AppFeeder = Field(default_factory=lambda: AppFeeder.model_validate({}))
    contract: ContractSettings

    @model_validator(mode="after")
    def _topics(self) -> AppSettings:
        if self.upstream is not None and (self.contract.kind not in PIPED_CONTRACTS or "feeder" in self.model_fields_set):
            raise ValueError(f"upstream: a stage fed by app {self.upstream!r} has a {' or '.join(PIPED_CONTRACTS)} "
                             "contract and no feeder (its input is that app's output)")
        if self.upstream == self.name:
            raise ValueError(f"upstream: {self.upstream!r} is this app's own name")
        both = sorted(set(self.inputs) & set(self.outputs))
        if both:
            raise ValueError(f"inputs and outputs: {both} in both; an app reads its inputs and writes its outputs")
        stray = sorted(set(self.contract.aggregates) - set(self.outputs))
        if stray:
            raise ValueError(f"contract.aggregates: {stray} not in outputs {self.outputs}")
        c = self.contract
        if c.kind == "join" and (c.stream == c.table or not {c.stream, c.table} <= set(self.inputs)):
            raise ValueError(f"contract.stream and contract.table: two of the app's inputs {self.inputs}, "
                             f"not {c.stream!r} and {c.table!r}")
        if self.contract.function == IDENTITY and self.contract.kind == "map" and len(self.outputs) != 1:
            raise ValueError(f"contract: identity copies to one output topic; outputs has {len(self.outputs)} "
                             "(name a module:function for more)")
        self._feeder_fits()
        serde = self.contract.output_serde
        if self.contract.function == IDENTITY and self.contract.kind == "map" and (
                serde.value != self.feeder.value_serde or serde.key != "string"):
            # an identity app copies the feeder's bytes: read any other way, every output is "wrong"
            raise ValueError(f"contract.output_serde: identity copies the feeder's records as they are (keys string, "
                             f"values {self.feeder.value_serde}: feeder.value_serde), so its output is read the same "
                             f"way; output_serde is {{key: {serde.key}, value: {serde.value}}}: give "
                             f"{{key: string, value: {self.feeder.value_serde}}}, or name a module:function that "
                             "converts")
        return self


    def fed(self) -> bool:
        """The harness's feeder writes its inputs (else its upstream app does)."""
        return self.upstream is None

    def _feeder_fits(self) -> None:
        """``feeder.inputs`` names input topics; formats fit the serde and an identity copy."""
        stray = sorted(set(self.feeder.inputs) - set(self.inputs))
        if stray:
            raise ValueError(f"feeder.inputs: {stray} not in inputs {self.inputs}")
        formats = {t: self.feeder.source(t).format for t in self.inputs}
        if self.feeder.value_serde != "string" and set(formats.values()) != {"text"}:
            raise ValueError(f"feeder.value_serde: {self.feeder.value_serde} writes 8-byte integers, which only the "
                             f"text format's default values are; formats are {formats}")
        if self.contract.kind == "map" and self.contract.function == IDENTITY and "bytes" in formats.values():
            # the output is read as text: a copy of bytes that are not UTF-8 would read as a mismatch
            raise ValueError("feeder.format: bytes cannot be judged by an identity copy (its output is read as "
                             "text); name a module:function contract, or use format text or json")

    def feed(self) -> dict[str, Any]:
        """The feeder's ``feed`` setting: each input topic's source, and where generators import from."""
        path = self.cwd if self.cwd and "{" not in self.cwd else None
        return Feed(inputs={t: self.feeder.source(t) for t in self.inputs}, path=path).model_dump()


class AppReaderSettings(BaseModel):
    """The harness's own reader of an app's output topics (read_committed polls during the run)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    app: str
    outputs: list[str]
    output_serde: OutputSerde = Field(default_factory=OutputSerde)


class CopierSettings(Settings):
    input: str
    output: str
    group: str = COPIER_GROUP
    abort_share: float = Field(0.1, ge=0, le=1)
    #: input records per transaction at most
    batch: int = Field(50, ge=1, le=10_000)


class ZombieSettings(Settings):
    #: the transactional.id both instances use
    txn_id: str = "eos-zombie"
    #: set by the runner for each of the entry's two processes
    role: Literal["first", "second"] = "first"


class SparkJobSettings(Settings):
    input: str
    output: str
    #: the compacted topic of markers (the transactional sinks, driver and executor)
    markers: str | None = None
    #: driver: one Kafka transaction per micro-batch, written by the driver (``transactional``, its
    #: old name, still means it); executor: one per task, written by the executors
    #: (harness/sparkjob/sink.py); builtin: Spark's own at-least-once sink (the negative control)
    sink: Literal["driver", "executor", "builtin"] = "driver"
    max_offsets_per_trigger: int = Field(5000, ge=1)
    trigger_ms: int = Field(1000, ge=1)
    #: Spark's spark.task.maxFailures: attempts of a task before its batch fails (local mode: 1 try
    #: unless more are asked)
    task_max_failures: int = Field(4, ge=1, le=20)
    #: Spark's spark.speculation: slow tasks get a second, concurrent attempt
    speculation: bool = False
    #: false: the executor sink writes a replayed batch again instead of skipping what its marker
    #: says is committed (a deliberately unsafe sink: the negative control spark-executor-no-skip)
    skip_committed: bool = True

    @field_validator("sink", mode="before")
    @classmethod
    def _old_name(cls, v: Any) -> Any:
        return "driver" if v == "transactional" else v


@dataclass(frozen=True)
class ConsumerGroup:
    """A kind that commits a consumer group's offsets in its transactions (consume-transform-produce):
    the run records the group's committed offsets in the final reads, and ``copier-offsets`` judges them."""

    #: the setting naming the group
    group: str
    #: the setting naming the topic it consumes (whose offsets the group commits)
    input: str


#: One process of a scenario entry: (its kind, its name, its settings, started with the run?)
Process = tuple[str, str, dict[str, Any], bool]
#: A problem with a scenario entry's settings: where in them (keys, indexes), and what is wrong.
Problem = tuple[tuple[str | int, ...], str]


@dataclass(frozen=True)
class Kind:
    name: str
    #: what ``python -m`` runs for each process of this kind
    module: str
    settings: type[BaseModel]
    #: settings naming topics the scenario must declare (given the entry's settings), each a topic
    #: or a list of them
    topic_settings: tuple[str, ...] = ()
    #: which of ``topic_settings`` an entry with these settings needs (None: all of them)
    topics_needed: Callable[[dict[str, Any]], tuple[str, ...]] | None = None
    #: settings naming topics the runner creates compacted (the Spark job's markers: one per batch id, kept)
    compacted: tuple[str, ...] = ()
    #: the settings (given the entry's) naming topics it writes each record of its ``input`` to the
    #: partition of the number it was read from (the copier's output; the Spark job's output, and
    #: its executor sink's markers): each needs at least the input's partitions
    same_partition: Callable[[dict[str, Any]], tuple[str, ...]] | None = None
    #: the setting naming the consumer group it consumes in (the copier's ``group``, an app's ``id``):
    #: the runner makes its default unique to the run, and faults on the ``group-coordinator`` role
    #: default to the first such group
    group: str | None = None
    #: the group's default given the entry's settings (None: the setting's own default): an app's
    #: is its ``name``'s, so that the stages of a pipeline consume in groups of their own
    group_default: Callable[[dict[str, Any]], str] | None = None
    #: it commits that group's offsets in its transactions (the copier)
    consumes: ConsumerGroup | None = None
    #: a Spark application: pyspark must be importable before the run starts, and it is what a
    #: scenario's ``spark: standalone`` cluster runs
    spark: bool = False
    #: where a process of it says it made progress (``{"pid": ...}`` after each step), relative to
    #: the run folder, ``{name}`` its process name: after the supervisor restarted one, the run
    #: waits until its new process has written it (None: being alive again is recovery enough)
    progress_file: str | None = None
    #: the ops (``f``) whose first completion shows a process of it ready (an ``ok``, or an abort it
    #: chose): the run's fault schedule starts when every process is (harness/run/readiness.py).
    #: Empty: ready once started (a reader, the zombie's choreography)
    ready_ops: tuple[str, ...] = ()
    #: a boolean setting that, false, makes it send without transactions: only on a client library
    #: with ``plain_sends`` (harness/workloads/clients)
    plain_sends_setting: str | None = None
    #: an integer setting above 1 of which runs that many clients in one process, in threads: only on
    #: a client library with ``threads`` (harness/workloads/clients)
    threads_setting: str | None = None
    #: the supervisor restarts a process of this kind whenever it dies (the Spark driver: from its
    #: checkpoint)
    restarted: bool = False
    #: one process per role (setting ``role``) instead of ``count`` alike; only the first starts with
    #: the run, the nemesis's choreography (``Nemesis.zombie``) starts the others at their moment
    #: (the zombie's second instance)
    roles: tuple[str, ...] = ()
    #: the client libraries (``harness.workloads.clients.LIBRARIES``) its processes can run on
    libraries: tuple[str, ...] = LIBRARIES
    #: processes of other kinds one entry of it also runs (an app's feeder and output reader), given
    #: the entry's settings (as the run names topics)
    companions: Callable[[dict[str, Any]], list[Process]] | None = None
    #: the harness's own: a scenario cannot name it (it comes with another kind's entry)
    internal: bool = False
    #: a scenario has at most one entry of it, and why (None: as many as it likes)
    one_entry: str | None = None
    #: what is wrong with an entry's settings given the scenario's topics, beyond ``settings``
    #: (an app's placeholders naming topics the scenario does not have)
    problems: Callable[[dict[str, Any], list[str]], list[Problem]] | None = None
    #: what is wrong with the other entries given this one (index, every entry as (kind, settings),
    #: the scenario's topics): (the other entry's index, why); an app's topics written by another
    others_problems: Callable[[int, Sequence[tuple[str, dict[str, Any]]], list[str]], list[tuple[int, str]]] | None = None
    #: why a scenario's ``--library`` cannot reach it, said when no workload of the scenario can take one
    library_note: str | None = None
    #: the topics an entry writes, given its settings and what one that names none writes (the
    #: scenario's topics but an app's outputs); none: it writes nothing a scenario names
    writes: Callable[[dict[str, Any], list[str]], list[str]] | None = None
    #: a setting naming a working folder, which a scenario file's loader makes absolute (relative
    #: to the file's folder; none: the file's folder)
    cwd_setting: str | None = None
    #: its settings with the files they name made absolute, relative to a scenario file's folder
    #: (an app feeder's ``records``)
    files_from: Callable[[dict[str, Any], Path], dict[str, Any]] | None = None
    #: its transactions' ids start with its consumer group's name (an app's ``{id}``): what a
    #: fault on "the coordinator" of a scenario with it means (``default_transactional_id``)
    transactions_of_group: bool = False

    def processes(self, count: int, settings: dict[str, Any], first: int = 0) -> list[Process]:
        """(kind, process name, settings, start with the run?) for one scenario entry of ``count``,
        numbered from ``first``: the processes of an earlier entry of the same kind come before."""
        if self.roles:
            own = [(self.name, f"{self.name}-{role}", {**settings, "role": role}, i == 0) for i, role in enumerate(self.roles)]
        else:
            own = [(self.name, f"{self.name}-{i}", dict(settings), True) for i in range(first, first + count)]
        return own + (self.companions(settings) if self.companions else [])

    def required_topics(self, settings: dict[str, Any]) -> list[str]:
        """The settings of this entry that must each name one of the scenario's topics (or a list of them)."""
        return list(self.topics_needed(settings) if self.topics_needed else self.topic_settings)

    def run_settings(self, settings: dict[str, Any], tag: str) -> dict[str, Any]:
        """``settings`` for one run tagged ``tag``: a consumer group it defaults to made unique to the run."""
        if self.group is None or self.group in settings:
            return dict(settings)
        return {**settings, self.group: f"{self._default_group(settings)}.{tag}"}

    def _default_group(self, settings: dict[str, Any]) -> str:
        assert self.group is not None
        return self.group_default(settings) if self.group_default else str(self.settings.model_fields[self.group].default)

    def group_of(self, settings: dict[str, Any]) -> str | None:
        """The consumer group an entry with ``settings`` consumes in (None: it has none)."""
        if self.group is None:
            return None
        return str(settings.get(self.group, self._default_group(settings)))


def _integer_input(c: ContractSettings) -> bool:
    """Whether the feeder writes integers: an aggregate of the input's own values (no ``by``): a
    ``sum``, ``min`` or ``max`` reads them (a windowed count counts whatever they are)."""
    return c.by is None and (c.kind == "aggregate" or (c.kind == "windowed" and set(c.aggregates.values()) != {"count"}))


def reader_name(app: AppSettings) -> str:
    """The process name of the reader of ``app``'s output: ``APP_READER`` for the app the feeder
    feeds (the first of a pipeline: an instance's progress is what it reads), ``APP_READER-<name>``
    for a pipeline's later stages."""
    return APP_READER if app.fed() else f"{APP_READER}-{app.name}"


def instance_names(stages: list[tuple[AppSettings, int]]) -> dict[str, list[str]]:
    """Each app's instances' process names, by its ``name``: ``app-N``, numbered over the app
    entries (``(settings, count)``) in the order written, as ``Kind.processes`` numbers them."""
    out: dict[str, list[str]] = {}
    n = 0
    for app, count in stages:
        out[app.name] = [f"{APP}-{i}" for i in range(n, n + count)]
        n += count
    return out


def _app_companions(settings: dict[str, Any]) -> list[Process]:
    """An app's feeder (a txn-producer writing its keyed input; none for a pipeline's later stage,
    whose upstream app writes its input) and the reader of its output."""
    app = AppSettings.model_validate(settings)
    reader = {"app": app.name, "outputs": list(app.outputs), "output_serde": app.contract.output_serde.model_dump()}
    if not app.fed():
        return [(APP_READER, reader_name(app), reader, True)]
    feeder = {"topics": list(app.inputs), "values_per_txn": app.feeder.values_per_txn, "abort_share": app.feeder.abort_share,
              "keys": app.feeder.keys, "rate": app.feeder.rate, "value_serde": app.feeder.value_serde,
              "integer_values": _integer_input(app.contract), "transaction_timeout_ms": FEEDER_TRANSACTION_TIMEOUT_MS,
              "feed": app.feed()}
    return [("txn-producer", APP_FEEDER, feeder, True), (APP_READER, reader_name(app), reader, True)]


def _app_problems(settings: dict[str, Any], topics: list[str]) -> list[Problem]:
    """An app's placeholders (in its command, working folder and environment) that name what the
    scenario does not have (docs/APPS.md)."""
    texts: list[tuple[tuple[str | int, ...], str]] = [(("command", j), a) for j, a in enumerate(settings.get("command") or [])]
    texts += [(("cwd",), settings["cwd"])] if settings.get("cwd") else []
    texts += [(("env", k), v) for k, v in (settings.get("env") or {}).items()]
    return [(loc, problem) for loc, text in texts if (problem := app_args.problem(text, topics))]


def _app_topics_its_own(me: int, entries: Sequence[tuple[str, dict[str, Any]]], topics: list[str]) -> list[tuple[int, str]]:
    """No other workload writes the app's topics: its contract judges its outputs against the
    feeder's inputs alone (a pipeline stage's: its upstream app's outputs), so another writer's
    records read as the app's mistakes (a false finding). The stages of a pipeline fit together."""
    stages = _pipeline_problems(me, entries)
    if stages:
        return stages
    s = entries[me][1]
    outputs = list(s.get("outputs") or [])
    own = set(s.get("inputs") or []) | set(outputs)
    apps = [settings for kind_name, settings in entries if kind_name == APP]
    every_output = {t for a in apps for t in a.get("outputs") or []}
    others = [t for t in topics if t not in every_output]  # what a workload writes unless told (the runner)
    for j, (kind_name, settings) in enumerate(entries):
        writes = KINDS[kind_name].writes if kind_name in KINDS else None
        judged = own - set(s.get("inputs") or []) if _feeds(settings, s) else own  # an upstream app writes my inputs
        clash = sorted(judged & set(writes(settings, others) if writes is not None and j != me else []))
        if clash:
            mine = [t for t in topics if t not in own]
            return [(j, f"a {kind_name} workload writes {clash}, the app's own topics: the app's output is judged "
                        "against the feeder's input alone, so records of another writer would read as the app's "
                        f"mistakes; give it topics of its own ({', '.join(mine) if mine else 'add one to topics'})")]
    return []


def _feeds(writer: dict[str, Any], app: dict[str, Any]) -> bool:
    """``writer`` is the app whose outputs the app of settings ``app`` reads (its ``upstream``)."""
    return app.get("upstream") is not None and writer.get("name", APP) == app.get("upstream")


def _pipeline_problems(me: int, entries: Sequence[tuple[str, dict[str, Any]]]) -> list[tuple[int, str]]:
    """The apps of a scenario make one pipeline (docs/APPS.md, "Pipelines"): distinct names, one app
    fed by the harness's feeder (the first), each other one's ``upstream`` an earlier app with a
    ``map`` contract, and its inputs among that app's outputs."""
    apps = [(j, settings) for j, (kind_name, settings) in enumerate(entries) if kind_name == APP]
    s = entries[me][1]
    name, upstream = s.get("name", APP), s.get("upstream")
    earlier = {a.get("name", APP): a for j, a in apps if j < me}
    if name in earlier:
        return [(me, f"name: {name!r} is an earlier app's too; each app of a pipeline has a name of its own")]
    if upstream is None:
        fed = [j for j, a in apps if a.get("upstream") is None]
        if fed[0] != me:
            return [(me, f"a second app fed by the harness (no upstream): a scenario runs one pipeline, its first "
                         f"app fed; a later one names the app it reads (upstream: {apps[0][1].get('name', APP)})")]
        return []
    up = earlier.get(upstream)
    if up is None:
        return [(me, f"upstream: {upstream!r} is no earlier app's name; allowed: {', '.join(earlier) or 'none'}")]
    if (up.get("contract") or {}).get("kind") != "map":
        return [(me, f"upstream: app {upstream!r} has {_a(str((up.get('contract') or {}).get('kind')))} contract; a stage "
                     "another reads is a map (what each of its inputs makes is what the next stage reads)")]
    stray = sorted(set(s.get("inputs") or []) - set(up.get("outputs") or []))
    if stray:
        return [(me, f"inputs: {stray} not among app {upstream!r}'s outputs {up.get('outputs')}")]
    return []


def _feeder_files_from(settings: dict[str, Any], folder: Path) -> dict[str, Any]:
    """An app's settings with its feeder's ``records`` files (its own and each input's) absolute:
    relative ones are the scenario file's ``folder``'s."""
    feeder = settings.get("feeder")
    if not isinstance(feeder, dict):
        return settings

    def fixed(source: Any) -> Any:
        path = source.get("records") if isinstance(source, dict) else None
        if not isinstance(path, str) or Path(path).is_absolute():
            return source
        return {**source, "records": str(folder / path)}

    inputs = feeder.get("inputs")
    feeder = fixed(feeder)
    if isinstance(inputs, dict):
        feeder = {**feeder, "inputs": {t: fixed(v) for t, v in inputs.items()}}
    return {**settings, "feeder": feeder}


def _writes_output_and_markers(settings: dict[str, Any], unnamed: list[str]) -> list[str]:
    return [t for t in (settings.get("output"), settings.get("markers")) if isinstance(t, str)]


def _spark_job_same_partition(settings: dict[str, Any]) -> tuple[str, ...]:
    """The Spark job's sinks write a record to its input partition's number of the output (Spark's own
    sink partitions by key), and the executor sink a batch's marker too (the driver's: partition 0)."""
    sink = settings.get("sink", "driver")
    return ("output", "markers") if sink == "executor" else () if sink == "builtin" else ("output",)


def _spark_job_topics(settings: dict[str, Any]) -> tuple[str, ...]:
    # only the transactional sinks write markers
    transactional = settings.get("sink", "driver") in ("driver", "executor", "transactional")
    return ("input", "output", "markers") if transactional else ("input", "output")


KINDS: dict[str, Kind] = {k.name: k for k in (
    Kind("txn-producer", "harness.workloads.txn_producer", TxnProducerSettings, plain_sends_setting="transactional",
         threads_setting="producers", ready_ops=PROGRESS_OPS[TXN_PRODUCER],
         writes=lambda s, unnamed: list(s.get("topics") or unnamed)),
    Kind("reader", "harness.workloads.reader", ReaderSettings),
    Kind("copier", "harness.workloads.copier", CopierSettings, topic_settings=("input", "output"), group="group",
         same_partition=lambda s: ("output",),
         consumes=ConsumerGroup(group="group", input="input"), ready_ops=PROGRESS_OPS[COPIER], writes=_writes_output_and_markers),
    Kind("zombie", "harness.workloads.zombie", ZombieSettings, roles=("first", "second"), writes=lambda s, unnamed: unnamed),
    Kind("spark-job", "harness.sparkjob.job", SparkJobSettings, topic_settings=("input", "output", "markers"),
         topics_needed=_spark_job_topics, compacted=("markers",), spark=True, same_partition=_spark_job_same_partition,
         progress_file="spark/{name}/progress.json", restarted=True, libraries=(DEFAULT_LIBRARY,), ready_ops=PROGRESS_OPS[SPARK_JOB],
         writes=_writes_output_and_markers),
    Kind(APP, "harness.workloads.app_wrapper", AppSettings, topic_settings=("inputs", "outputs"), group="id",
         ready_ops=(APP_READY,), libraries=(DEFAULT_LIBRARY,), companions=_app_companions,
         group_default=lambda s: APP_ID if s.get("name", APP) == APP else f"{APP_ID}-{s['name']}", problems=_app_problems,
         cwd_setting="cwd", transactions_of_group=True, others_problems=_app_topics_its_own, files_from=_feeder_files_from,
         library_note=f"an app brings its own client; the harness's feeder and reader of it run on {DEFAULT_LIBRARY}"),
    Kind(APP_READER, "harness.workloads.app_reader", AppReaderSettings, libraries=(DEFAULT_LIBRARY,), internal=True),
)}
assert {k for k, v in KINDS.items() if not v.internal} == set(get_args(KindName)), \
    "every kind a scenario may name is registered"


def kind(name: str) -> Kind:
    """The registered kind ``name`` (KeyError: none; a validated scenario only names known ones)."""
    return KINDS[name]


def modules() -> dict[str, str]:
    """Kind name -> the module its processes run."""
    return {k.name: k.module for k in KINDS.values()}


def restarted() -> tuple[str, ...]:
    """The kinds the supervisor restarts when their process dies."""
    return tuple(k.name for k in KINDS.values() if k.restarted)


def spark_kinds() -> tuple[str, ...]:
    """The kinds that are Spark applications."""
    return tuple(k.name for k in KINDS.values() if k.spark)


def threads_kinds(setting: str = PRODUCERS) -> tuple[str, ...]:
    """The kinds whose ``threads_setting`` is ``setting`` (``--producers``: the txn-producer)."""
    return tuple(k.name for k in KINDS.values() if k.threads_setting == setting)


def default_transactional_id(entries: list[tuple[str, dict[str, Any]]]) -> str:
    """What a fault on "the coordinator" of a transaction means in a scenario of these (kind,
    settings) entries, without an ``of``: the transactions of the first kind whose ids start with
    its group (an app's: its transactional.ids start with its id, docs/APPS.md, whatever else they
    hold, a Streams app's process id), else the first txn-producer's transactional.id."""
    for name, settings in entries:
        if KINDS[name].transactions_of_group:
            return f"{KINDS[name].group_of(settings)}*"
    return transactional_id(f"{threads_kinds()[0]}-0")


def check_library(name: str, library: str, settings: dict[str, Any]) -> None:
    """Raise ValueError unless a ``name`` workload with ``settings`` can run on ``library``."""
    lib = parse(library)
    allowed = KINDS[name].libraries
    if lib.name not in allowed:
        raise ValueError(f"a {name} workload runs on {', '.join(allowed)} only, not {lib}")
    plain = KINDS[name].plain_sends_setting
    if plain is not None and settings.get(plain) is False and not lib.entry.plain_sends:
        able = [c.name for c in CLIENTS.values() if c.plain_sends]
        raise ValueError(f"a {name} with {plain}: false runs on {', '.join(able)} only, not {lib}")
    many = KINDS[name].threads_setting
    if many is not None and isinstance(settings.get(many), int) and settings[many] > 1 and not lib.entry.threads:
        able = [c.name for c in CLIENTS.values() if c.threads]
        raise ValueError(f"a {name} with {many}: {settings[many]} runs on {', '.join(able)} only, not {lib}: its "
                         "clients do not run side by side in threads of one process (a bridged client's bridge "
                         f"answers one call at a time, so they would take turns); use {many}: 1 and count: N for N processes")


def _is_model(t: Any) -> bool:
    return isinstance(t, type) and issubclass(t, BaseModel)


def _annotation_at(model: type[BaseModel], loc: tuple[Any, ...]) -> Any:
    """The type of the setting at ``loc`` (a pydantic error's: field names, list indexes, dict
    keys) in ``model``, ``X | None`` read as ``X``; None where it cannot be followed."""
    t: Any = model
    for step in loc:
        if get_origin(t) in (Union, types.UnionType):
            t = next((a for a in get_args(t) if a is not type(None)), None)
        if _is_model(t):
            field = t.model_fields.get(str(step))
            t = field.annotation if field is not None else None
        elif get_origin(t) in (list, tuple, set, frozenset):
            t = get_args(t)[0]
        elif get_origin(t) is dict:
            t = get_args(t)[1]
        else:
            return None
    if get_origin(t) in (Union, types.UnionType):
        t = next((a for a in get_args(t) if a is not type(None)), None)
    return t


def check_settings(name: str, settings: dict[str, Any]) -> None:
    """Raise ValueError saying, in the scenario's words, which of ``settings`` a ``name`` workload
    cannot take and what it allows."""
    model = KINDS[name].settings
    try:
        model.model_validate(settings)
    except ValidationError as exc:
        problems = [_problem(e, model) for e in exc.errors()]
        raise ValueError(f"{name} setting " + f"; {name} setting ".join(problems)) from None


def _problem(e: Any, model: type[BaseModel]) -> str:
    """One pydantic error about a settings dict as ``key: what is wrong; what is allowed``: for a
    nested key (``contract.order``), what its own model allows."""
    key = ".".join(str(x) for x in e["loc"]) or "settings"
    if e["type"] == "extra_forbidden":
        parent = _annotation_at(model, e["loc"][:-1])
        names = list(parent.model_fields) if _is_model(parent) else []
        close = difflib.get_close_matches(str(e["loc"][-1]), names, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return f"{key}: unknown (allowed: {', '.join(names) or 'none'}){hint}"
    if e["type"] == "literal_error":
        literal = _annotation_at(model, e["loc"])
        values = [str(a) for a in get_args(literal)] if get_origin(literal) is Literal else []
        close = difflib.get_close_matches(str(e["input"]), values, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        # else pydantic's own words (e.g. 'a' or 'b')
        allowed = ", ".join(values) or str(e.get("ctx", {}).get("expected", ""))
        return f"{key}: {e['input']!r}; allowed: {allowed}{hint}"
    if e["type"] == "missing":
        return f"{key}: required"
    return f"{key}: {e['input']!r}: {e['msg']}"
