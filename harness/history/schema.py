"""The schema of a history line (pydantic), checked as each line is loaded: a line that does not fit
is bad input, named by ``file:line``, field, what was expected and what was found; never a crash
inside a check, never a finding.

Scalars are strict (``"5"`` is not a number, a list is not a value); containers are JSON arrays.
Which ``value`` shape a line must have depends on its ``f`` and ``type`` (see ``model``); the values
of events the checker only reports (faults, the Spark job's events, ``lso``) are not constrained.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    TypeAdapter,
    ValidationError,
    model_validator,
)

from harness.history.model import (
    AGGREGATE,
    AGGREGATES,
    APP_CONTRACT,
    APP_EXIT,
    APP_READY,
    APP_START,
    APP_STRAY,
    COMPLETIONS,
    EXPECT,
    FAULT,
    FENCED,
    GROUP_OFFSETS,
    IDENTITY,
    INIT,
    INVOKE,
    JOIN,
    LSO,
    MAP,
    MAX_OFFSET,
    MAX_PARTITION,
    MODEL,
    NO_ORDER,
    OK,
    PER_KEY,
    POLL,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    RECREATED,
    RETIRED,
    SCAN,
    SEND,
    SPARK_EVENTS,
    TEXT,
    TXN,
    WINDOWED,
)

#: every op kind a history may hold
KINDS = (TXN, SEND, INIT, POLL, SCAN, GROUP_OFFSETS, FENCED, RETIRED, RECREATED, FAULT, LSO, *SPARK_EVENTS,
         APP_CONTRACT, EXPECT, APP_READY, APP_EXIT, APP_STRAY, APP_START)
#: the kinds that are an invoke and its completion (the rest are one-line events)
PAIRED = (TXN, SEND, INIT, POLL)

Partition = Annotated[StrictInt, Field(ge=0, le=MAX_PARTITION)]
Offset = Annotated[StrictInt, Field(ge=0, le=MAX_OFFSET)]
Text = StrictStr


def _topic_partition(key: str) -> str:
    topic, dash, part = key.rpartition("-")
    if not (topic and dash and part.isdigit()):
        raise ValueError('a "topic-partition" key, like "t-0"')
    if int(part) > MAX_PARTITION:
        raise ValueError(f"a partition in 0..{MAX_PARTITION} after the last '-' of the key")
    return key


TopicPartition = Annotated[StrictStr, AfterValidator(_topic_partition)]
Records = dict[TopicPartition, list[tuple[Offset, Text]]]
#: an app's output as a read got it: ``[offset, value, key]``, value and key null for a null
AppRecords = dict[TopicPartition, list[tuple[Offset, Text | None, Text | None]]]


class Line(BaseModel):
    """The fields every line has, and the typed extras some carry (anything else is kept as is)."""

    model_config = ConfigDict(extra="allow")

    time: Annotated[StrictInt, Field(ge=0)]
    process: Annotated[StrictStr, Field(min_length=1)]
    type: Literal["invoke", "ok", "fail", "info"]
    f: Literal[KINDS]  # type: ignore[valid-type]
    index: Annotated[StrictInt, Field(ge=0)] | None = None
    error: StrictStr | None = None
    txn_id: StrictStr | None = None
    commit_at: StrictInt | None = None
    offsets: dict[TopicPartition, Offset] | None = None
    isolation: Literal["read_committed", "read_uncommitted"] | None = None
    batch: StrictInt | None = None
    keys: list[StrictStr | None] | None = None
    app: Annotated[StrictStr, Field(min_length=1)] | None = None
    #: per send, what the app's feeder wrote: [payload, timestamp ms, headers [[name, value], ...]]
    records: list[tuple[StrictStr | None, Annotated[StrictInt, Field(ge=0)],
                        list[tuple[StrictStr, StrictStr]] | None]] | None = None


#: The kinds of contract an app declares, the orders a map contract keeps, an aggregate's functions
#: (the scenario's ``contract``, harness/workloads/registry.py ``ContractSettings``, takes the same)
ContractKind = Literal["map", "aggregate", "windowed", "model", "join"]
Order = Literal["per-key", "none"]
Aggregate = Literal["count", "sum", "min", "max"]
#: How the feeder encodes an input topic's keys and values (``model.FORMATS``)
Format = Literal["text", "json", "bytes"]
#: a ``module:function`` a contract names (the runner imports it; the checker never does)
FUNCTION_SPEC = r"[A-Za-z_][\w.]*:[A-Za-z_]\w*"
#: The forms of a windowed contract's output keys ``window_key`` names without a function of the user's
WINDOW_KEY_FORMS = ("time-windowed", "text")


def _window_key(v: str) -> str:
    if v in WINDOW_KEY_FORMS or re.fullmatch(FUNCTION_SPEC, v):
        return v
    raise ValueError(f"{v!r} is not a form of windowed key; allowed: {', '.join(WINDOW_KEY_FORMS)}, or a "
                     "module:function of yours that decodes a key into [key, window start ms]")


#: How a windowed contract's output keys are read: Kafka Streams' TimeWindowedSerializer bytes
#: (``time-windowed``), ``key@start`` text, or a user's ``module:function`` (the runner applies it to
#: every output key after the run and records each decoding; the checker reads those)
WindowKey = Annotated[StrictStr, AfterValidator(_window_key)]


def window_key_function(how: str) -> str | None:
    """The user's ``module:function`` a ``window_key`` names (None: one of ``WINDOW_KEY_FORMS``)."""
    return None if how in WINDOW_KEY_FORMS else how


class TimeWindows(BaseModel):
    """A windowed contract's windows (Kafka Streams' ``TimeWindows``): ``size_ms`` long, one every
    ``advance_ms`` (the size: tumbling; less: hopping), records up to ``grace_ms`` behind stream time
    still counted."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    size_ms: Annotated[StrictInt, Field(gt=0)]
    advance_ms: Annotated[StrictInt, Field(gt=0)] | None = None
    grace_ms: Annotated[StrictInt, Field(ge=0)] = 0

    @property
    def advance(self) -> int:
        return self.advance_ms if self.advance_ms is not None else self.size_ms

    @model_validator(mode="after")
    def _fits(self) -> TimeWindows:
        if self.advance > self.size_ms:
            raise ValueError(f"advance_ms {self.advance} above size_ms {self.size_ms}: windows would leave gaps")
        return self


#: the contracts a pipeline's later stage may have (docs/APPS.md, "Pipelines": each is judged per
#: input record, so it composes with its upstream stage's expected outputs)
PIPED_CONTRACTS = (MAP, AGGREGATE)


class AppContract(BaseModel):
    """An app's contract as the run records it (the ``app-contract`` op's value, ``model``) and the
    checker and the report read it (``contracts``): the app, what it reads and writes, and what it
    must do with its input."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    app: Annotated[StrictStr, Field(min_length=1)]
    contract: ContractKind
    inputs: Annotated[list[Text], Field(min_length=1)]
    outputs: Annotated[list[Text], Field(min_length=1)]
    function: Annotated[StrictStr, Field(min_length=1)] = IDENTITY
    order: Order = "none"
    aggregates: dict[Text, Aggregate] = {}
    #: the feeder's format per input topic (``text`` where not named): how its payloads decode
    formats: dict[Text, Format] = {}

    def format_of(self, topic: str) -> str:
        """How the feeder encoded ``topic``'s keys and values (``text`` unless recorded)."""
        return self.formats.get(topic, TEXT)
    #: aggregate / windowed: ``module:function`` deriving (topic, key, amount) contributions of an input
    by: Annotated[StrictStr, Field(pattern=FUNCTION_SPEC)] | None = None
    window: TimeWindows | None = None
    window_key: WindowKey = "time-windowed"
    #: model: the final value of a key only ever grows (an update that goes back is a finding)
    monotone: bool = False
    #: join: the input topic of the stream and the one of the table
    stream: Text | None = None
    table: Text | None = None
    #: a pipeline's later stage: the app whose outputs it reads (its inputs are among them), fed by
    #: that app, not by a feeder (docs/APPS.md, "Pipelines")
    upstream: Annotated[StrictStr, Field(min_length=1)] | None = None

    def value(self) -> dict[str, Any]:
        """The ``app-contract`` op's value: the fields of its kind (a map contract's function and
        order, an aggregate's aggregates and ``by``, ...)."""
        v: dict[str, Any] = {"app": self.app, "contract": self.contract, "inputs": list(self.inputs),
                             "outputs": list(self.outputs)}
        if self.contract == MAP:
            v.update(function=self.function, order=self.order)
        if self.contract in (AGGREGATE, WINDOWED):
            v["aggregates"] = dict(self.aggregates)
            v.update({"by": self.by} if self.by else {})
        if self.contract == WINDOWED:
            v.update(window=self.window.model_dump(exclude_none=True) if self.window else None, window_key=self.window_key)
        if self.contract == MODEL:
            v.update(function=self.function, monotone=self.monotone)
        if self.contract == JOIN:
            v.update(function=self.function, stream=self.stream, table=self.table)
        if self.formats:
            v["formats"] = dict(self.formats)
        if self.upstream:
            v["upstream"] = self.upstream
        return v

    @model_validator(mode="after")
    def _complete(self) -> AppContract:
        kind = self.contract
        if kind == MAP and self.function == IDENTITY and len(self.outputs) != 1:
            raise ValueError(f"one output topic for the identity function, not {len(self.outputs)}")
        if kind not in (AGGREGATE, WINDOWED) and (self.aggregates or self.by):
            raise ValueError("aggregates and by only in an aggregate or windowed contract")
        if kind in (AGGREGATE, WINDOWED) and (not self.aggregates or not set(self.aggregates) <= set(self.outputs)):
            raise ValueError(f"an {kind} contract's aggregates: an aggregate for one or more of its outputs")
        if (kind == WINDOWED) != (self.window is not None):
            raise ValueError("window: required in a windowed contract, and only there")
        if kind in (MODEL, JOIN) and not re.fullmatch(FUNCTION_SPEC, self.function):
            raise ValueError(f"a {kind} contract's function: module:function, not {self.function!r}")
        if (kind == JOIN) != (self.stream is not None and self.table is not None):
            raise ValueError("stream and table: both required in a join contract, and only there")
        if kind == JOIN and (self.stream == self.table or not {self.stream, self.table} <= set(self.inputs)):
            raise ValueError(f"a join's stream and table: two of its inputs {self.inputs}, not {self.stream}, {self.table}")
        if not set(self.formats) <= set(self.inputs):
            raise ValueError(f"formats: only of input topics, not {sorted(set(self.formats) - set(self.inputs))}")
        if self.upstream is not None and (kind not in PIPED_CONTRACTS or self.formats):
            raise ValueError(f"a stage with an upstream app: a {' or '.join(PIPED_CONTRACTS)} contract of text inputs, "
                             f"not {kind}{' with formats' if self.formats else ''}")
        return self


def contracts(meta: Mapping[str, Any], kind: str | None = None) -> list[AppContract]:
    """The history's app contracts (``meta["apps"]``: the ``app-contract`` values, checked as each
    line was loaded), of ``kind`` (``map`` / ``aggregate``; None: every one)."""
    found = [a if isinstance(a, AppContract) else AppContract.model_validate(a) for a in meta.get("apps") or []]
    return [a for a in found if kind is None or a.contract == kind]


class AppStray(BaseModel):
    """An ``app-stray`` op's value: the topics an app wrote to without declaring them."""

    model_config = ConfigDict(extra="forbid", strict=True)
    app: Annotated[StrictStr, Field(min_length=1)]
    topics: dict[Annotated[StrictStr, Field(min_length=1)], Annotated[StrictInt, Field(ge=0)]]


_OUTPUT = tuple[Text, Text | None, Text | None]
#: a contribution a ``by`` function derives: (topic, key, amount)
_CONTRIBUTION = tuple[Text, Text | None, StrictInt]
_SEND = tuple[Literal["send"], Text, Partition, Text]
_ACKED = tuple[Literal["send"], Text, Partition, Text, Offset | None]
#: (f, type) -> the shape of ``value`` (type None: any type of that f); absent: not constrained
_VALUES: dict[tuple[str, str | None], TypeAdapter[Any]] = {
    (TXN, INVOKE): TypeAdapter(list[_SEND]),
    (TXN, OK): TypeAdapter(list[_SEND | _ACKED]),
    (SEND, INVOKE): TypeAdapter(tuple[Text, Partition, Text]),
    (SEND, OK): TypeAdapter(tuple[Text, Partition, Text, Offset]),
    (INIT, None): TypeAdapter(Text | None),
    (POLL, OK): TypeAdapter(Records | None),
    (SCAN, None): TypeAdapter(Records),
    (GROUP_OFFSETS, None): TypeAdapter(dict[TopicPartition, Offset]),
    (APP_CONTRACT, None): TypeAdapter(AppContract),
    (EXPECT, None): TypeAdapter(dict[Literal["app", "inputs", "error", "table", "join", "window_keys"], Any]),
    (APP_STRAY, None): TypeAdapter(AppStray),
}
#: the shapes of an app's reads (a line with ``app``), and of ``expect``'s inputs
_APP_VALUES: dict[tuple[str, str | None], TypeAdapter[Any]] = {
    (POLL, OK): TypeAdapter(AppRecords | None),
    (SCAN, None): TypeAdapter(AppRecords),
}
_EXPECTED = TypeAdapter(list[tuple[Text, list[_OUTPUT] | list[_CONTRIBUTION]]])
#: a model's expected final table, and a join's alternatives per stream input (docs/APPS.md)
_TABLE = TypeAdapter(list[_OUTPUT])
_JOIN = TypeAdapter(list[tuple[Text, Text | None, list[_OUTPUT]]])
#: a windowed contract's output keys as its ``window_key`` function decoded them: [key as recorded, key, start ms]
_WINDOW_KEYS = TypeAdapter(list[tuple[Text, Text, StrictInt]])
_LINE = TypeAdapter(Line)
assert set(COMPLETIONS) | {INVOKE} == {"invoke", "ok", "fail", "info"}
assert {READ_COMMITTED, READ_UNCOMMITTED} == {"read_committed", "read_uncommitted"}
assert (MAP, AGGREGATE, PER_KEY, NO_ORDER, AGGREGATES) == ("map", "aggregate", "per-key", "none",
                                                          ("count", "sum", "min", "max"))
assert (WINDOWED, MODEL, JOIN) == ("windowed", "model", "join")


class BadLine(ValueError):
    """A line that does not fit the schema: ``field``, what was expected, what was found."""

    def __init__(self, field: str, expected: str, found: str) -> None:
        super().__init__(f"field {field}: expected {expected}, found {found}")
        self.field, self.expected, self.found = field, expected, found


def validate(line: Any) -> None:
    """``BadLine`` unless ``line`` (one decoded JSON line) fits the schema."""
    if not isinstance(line, dict):
        raise BadLine("(the line)", "a JSON object", f"a JSON {_json_kind(line)}")
    try:
        _LINE.validate_python(line)
    except ValidationError as exc:
        raise _bad(exc, ()) from None
    shapes = _APP_VALUES if line.get("app") is not None else _VALUES
    shape = shapes.get((line["f"], line["type"])) or shapes.get((line["f"], None))
    if shape is not None:
        try:
            shape.validate_python(line.get("value"))
        except ValidationError as exc:
            raise _bad(exc, ("value",)) from None
    _validate_app_fields(line)


def _validate_app_fields(line: dict[str, Any]) -> None:
    """What the app's fields need beyond their own types: ``keys`` and ``records`` only on a ``txn``,
    one per send; ``app`` only on a read; an ``expect``'s input values and their outputs."""
    f = line["f"]
    for name, one in (("keys", "key"), ("records", "record")):
        per_send = line.get(name)
        if per_send is None:
            continue
        if f != TXN:
            raise BadLine(name, f"{name} only on a txn op (one per send)", f"{name} on a {f} op")
        sends = line.get("value")
        if isinstance(sends, list) and len(per_send) != len(sends):
            raise BadLine(name, f"one {one} per send ({len(sends)})", f"{len(per_send)} {name}")
    if line.get("app") is not None and f not in (SCAN, POLL):
        raise BadLine("app", "app only on a scan or poll op (a read of the app's output)", f"app on a {f} op")
    if f == EXPECT:
        value = line.get("value") or {}
        if not isinstance(value.get("app"), str) or not value["app"]:
            raise BadLine("value.app", "the app's name", _found(value.get("app")))
        _validate_expected(value)
        if value.get("error") is not None and not isinstance(value["error"], str):
            raise BadLine("value.error", "why the contract's function gave no outputs (text)", _found(value["error"]))


def _validate_expected(value: dict[str, Any]) -> None:
    """An ``expect``'s one form: ``inputs`` (per input, its outputs or contributions), ``table``
    (a model's final table, with ``inputs`` the count it was given), ``join`` (per stream input
    and table write, the outputs), or ``window_keys`` (each output key a ``window_key`` function
    decoded: as recorded, its key, its window's start)."""
    if "table" in value:
        if not isinstance(value.get("inputs"), int) or isinstance(value.get("inputs"), bool) or value["inputs"] < 0:
            raise BadLine("value.inputs", "a model's count of committed inputs (a number)", _found(value.get("inputs")))
    name = next((n for n in ("table", "join", "window_keys") if n in value), "inputs")
    shapes: dict[str, TypeAdapter[Any]] = {"table": _TABLE, "join": _JOIN, "window_keys": _WINDOW_KEYS, "inputs": _EXPECTED}
    shape = shapes[name]
    try:
        shape.validate_python(value.get(name))
    except ValidationError as exc:
        raise _bad(exc, ("value", name)) from None


def _bad(exc: ValidationError, under: tuple[str, ...]) -> BadLine:
    """The first error of ``exc`` as a ``BadLine`` (its place under ``under``)."""
    err = exc.errors(include_url=False)[0]
    loc = [*under, *(p for p in err["loc"] if not _is_union_branch(p))]
    field = "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else str(p)) for i, p in enumerate(loc)) or "value"
    msg = str(err["msg"])
    if err["type"] == "missing":
        return BadLine(field, "a value (the field is required)", "nothing")
    expected = msg.removeprefix("Input should be ").removeprefix("Value error, ")
    return BadLine(field, expected, _found(err.get("input")))


def _is_union_branch(p: object) -> bool:
    """pydantic names the branch of a union (``tuple[...]``, ``function-after[...]``) in ``loc``."""
    return isinstance(p, str) and ("[" in p or p in ("str", "int", "none"))


def _found(value: Any) -> str:
    text = json.dumps(value, default=str)
    return f"{text[:77]}..." if len(text) > 80 else text


def _json_kind(value: Any) -> str:
    return {list: "array", str: "string", int: "number", float: "number", bool: "boolean"}.get(type(value), "null")
