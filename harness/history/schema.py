"""The schema of a history line (pydantic), checked as each line is loaded: a line that does not fit
is bad input, named by ``file:line``, field, what was expected and what was found; never a crash
inside a check, never a finding.

Scalars are strict (``"5"`` is not a number, a list is not a value); containers are JSON arrays.
Which ``value`` shape a line must have depends on its ``f`` and ``type`` (see ``model``); the values
of events the checker only reports (faults, the Spark job's events, ``lso``) are not constrained.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictInt, StrictStr, TypeAdapter, ValidationError

from harness.history.model import (
    COMPLETIONS,
    FAULT,
    FENCED,
    GROUP_OFFSETS,
    INIT,
    INVOKE,
    LSO,
    MAX_OFFSET,
    MAX_PARTITION,
    OK,
    POLL,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    RECREATED,
    RETIRED,
    SCAN,
    SEND,
    SPARK_EVENTS,
    TXN,
)

#: every op kind a history may hold
KINDS = (TXN, SEND, INIT, POLL, SCAN, GROUP_OFFSETS, FENCED, RETIRED, RECREATED, FAULT, LSO, *SPARK_EVENTS)
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
}
_LINE = TypeAdapter(Line)
assert set(COMPLETIONS) | {INVOKE} == {"invoke", "ok", "fail", "info"}
assert {READ_COMMITTED, READ_UNCOMMITTED} == {"read_committed", "read_uncommitted"}


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
    shape = _VALUES.get((line["f"], line["type"])) or _VALUES.get((line["f"], None))
    if shape is not None:
        try:
            shape.validate_python(line.get("value"))
        except ValidationError as exc:
            raise _bad(exc, ("value",)) from None


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
