"""Reading the history: merge the per-process JSON-lines files, pair invokes with completions, and
flatten into typed tables (pandas) that the checker works on column-wise. The tables are saved as
Parquet at the end of a run; ``load`` uses them while they are what the JSON lines give: same
layout, same flattening code, same history files (names, sizes, content hashes; ``sources``),
recorded in ``source.json`` beside them. Anything else rebuilds them, and says why.

This module is the only one that knows the Parquet layout (``history.parquet/``: one file per
table, ``values.parquet``, ``meta.json``, ``source.json``). The layout is versioned (``LAYOUT``, in ``meta.json``): a
folder of another layout is re-built from the JSON lines, or refused when they are gone.

A file cut off mid-line (a killed writer, a full disk) is read up to its last whole line; the
tables say so in ``meta['truncated']`` and the verdict repeats it.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import shutil
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pandas as pd

from harness.base.errors import ConfigError
from harness.history import model, schema, sources
from harness.history.model import (
    APP_CONTRACT,
    APP_STRAY,
    EXPECT,
    FAULT,
    FENCED,
    GROUP_OFFSETS,
    INFO,
    INIT,
    INVOKE,
    LSO,
    MAX_OFFSET,
    MAX_PARTITION,
    MAX_TOPICS,
    OFFSET_BITS,
    OK,
    PARTITION_BITS,
    POLL,
    READ_COMMITTED,
    RECREATED,
    RETIRED,
    SCAN,
    SEND,
    SPARK_EVENTS,
    TOPIC_BITS,
    TOPIC_SHIFT,
    TXN,
    Op,
    Send,
    error_names,
    sends_of,
    split_tp,
)
from harness.history.recorder import HISTORY_DIR
from harness.rundir.runfolder import read_json_object

log = logging.getLogger(__name__)

#: the fields every history line has (the rest depend on its ``f``)
REQUIRED = ("time", "process", "type", "f")
PARQUET_DIR = "history.parquet"
META_FILE = "meta.json"
#: what the tables were built from (``sources``): the hash, the flattening code's digests, each history file's key
SOURCE_FILE = "source.json"
VALUES_TABLE = "values"
#: The Parquet layout this code writes and reads. 1 (no number in meta.json): before the layout
#: was versioned; 2: + the ``faults`` and ``spark_events`` tables (no more ``meta.spark``) and
#: ``meta.errors_seen``; 3: the reads' ``pos`` packed with 11 bits of topic (``pack``), not 7;
#: 4: + the app tables ``keys``, ``app_outputs`` and ``app_expected``, ``meta.apps`` and ``meta.app_scans``;
#: 5: + ``payloads`` (what an app's feeder wrote per record id).
LAYOUT = 5
#: Earlier layouts read as they are when their JSON lines are gone, and the tables each lacks (read
#: empty): a layout that only added tables loses nothing it had.
OLDER_LAYOUTS: dict[int, tuple[str, ...]] = {4: ("payloads",)}
TABLES = ("ops", "txns", "writes", "reads", "inits", "group_offsets", "faults", "spark_events", "keys", "app_outputs",
          "app_expected", "payloads")
LOW_CARDINALITY = {"reads": ("process", "source", "isolation", "topic"), "writes": ("topic",),
                   "txns": ("process", "f", "outcome", "txn_id"), "ops": ("process", "type", "f"),
                   "app_outputs": ("app", "process", "source", "isolation", "topic"), "app_expected": ("app", "topic")}


#: Each table with no rows, built once and handed out as copies (``_table``): pandas takes
#: milliseconds to build an empty frame of string columns, and a small history leaves half its
#: tables empty; that was a fixed cost of every check of a small history (the selftest's 2,000).
_EMPTY: dict[str, pd.DataFrame] = {}


def _table(name: str, rows: int, frame: Callable[[], pd.DataFrame]) -> pd.DataFrame:
    """``frame()``, the table ``name`` of ``rows`` rows; with none, a copy of its empty frame
    (``frame()`` as it was the first time: an empty table has one shape)."""
    if rows:
        return frame()
    if name not in _EMPTY:
        _EMPTY[name] = frame()
    return _EMPTY[name].copy()


def _no_faults() -> pd.DataFrame:
    return empty_faults()


def _no_spark_events() -> pd.DataFrame:
    return _table("spark_events", 0, lambda: _spark_frame([]))


def _no_keys() -> pd.DataFrame:
    return _table("keys", 0, _Keys().frame)


def _no_app_outputs() -> pd.DataFrame:
    return _table("app_outputs", 0, _AppOutputs().frame)


def _no_app_expected() -> pd.DataFrame:
    return _table("app_expected", 0, _AppExpected().frame)


def _no_payloads() -> pd.DataFrame:
    return _table("payloads", 0, _Payloads().frame)


#: The tables an older layout may lack (``OLDER_LAYOUTS``), each as it is when empty.
_NO_TABLE: dict[str, Callable[[], pd.DataFrame]] = {"payloads": _no_payloads}


@dataclass
class Tables:
    """The history, flattened. Offsets are nullable integers (unknown for unacknowledged writes)."""

    ops: pd.DataFrame
    txns: pd.DataFrame
    writes: pd.DataFrame
    reads: pd.DataFrame
    inits: pd.DataFrame
    group_offsets: pd.DataFrame
    #: the nemesis's fault events: time, phase (start / stop), kind, detail (the rest of the value, JSON)
    faults: pd.DataFrame = field(default_factory=_no_faults)
    #: the Spark job's events, and the nemesis's faults on workloads (driver kills): time, process,
    #: f, type, detail (the value, JSON); ``spark_events`` gives them back as dicts
    spark_events: pd.DataFrame = field(default_factory=_no_spark_events)
    #: the key of each written value that has one (an app's feeder): value, key
    keys: pd.DataFrame = field(default_factory=_no_keys)
    #: the records reads of an app's output topics got (never in ``reads``): app, op, process,
    #: source (poll / scan), isolation, topic, partition, offset, value, key
    app_outputs: pd.DataFrame = field(default_factory=_no_app_outputs)
    #: the outputs a ``map`` contract's function gives per input value (``expect`` ops): app,
    #: input, seq, topic, key, value; an input that yields nothing has one row of seq -1 and no topic
    app_expected: pd.DataFrame = field(default_factory=_no_app_expected)
    #: what an app's feeder wrote per record (``txn`` extra ``records``): value (the record's id, as
    #: in ``writes``), payload (the value as recorded: text, JSON text or base64; None for a null),
    #: timestamp (ms), headers (the feeder's own, JSON text of ``[[name, value], ...]``, or None)
    payloads: pd.DataFrame = field(default_factory=_no_payloads)
    meta: dict[str, Any] = field(default_factory=dict)
    #: derived data a checker run computes once (never saved)
    cache: dict[str, Any] = field(default_factory=dict)
    #: every distinct value, at its ``vid`` (set by ``add_ids``; saved once instead of per row)
    values: pd.Series | None = None
    #: loaded from Parquet: ``values`` stays on disk (its strings are a tenth of a large history's
    #: memory, and only examples need them); ``values_at`` reads the few asked for
    values_file: Path | None = None
    #: the history files the tables were flattened from (``read_tables``) or verified against (``load``);
    #: None: built in memory (``save`` then records the folder's files as they are)
    source: sources.Files | None = None


def read_ops(run_dir: Path) -> tuple[list[Op], list[str]]:
    """All ops of all files, merged by time (then file order), with ``index`` assigned; and the
    files that ended in a partial line. Every line is checked against the schema (``schema``), and
    the merged history for what no single line shows (``_refuse_inconsistent``): ``ConfigError``
    names the file and line."""
    ops, truncated, _ = _read_ops(run_dir)
    return ops, truncated


def read_tables(run_dir: Path) -> Tables:
    """The run's tables flattened from its JSON lines (never from Parquet), with the keys of the
    files as they were read (``Tables.source``)."""
    ops, truncated, source = _read_ops(run_dir)
    tables = flatten(ops, truncated)
    tables.source = source
    return tables


def _read_ops(run_dir: Path) -> tuple[list[Op], list[str], sources.Files]:
    """``read_ops``, and the key of each file as read (``sources``)."""
    files = _history_files(run_dir)
    if not files:
        raise ConfigError(f"{run_dir} has no history ({HISTORY_DIR}/*.jsonl): not a run folder, or the run wrote nothing")
    lines: list[dict[str, Any]] = []
    where: list[tuple[int, int]] = []  # (file, line number) of each line, for errors about the merge
    truncated: list[str] = []
    keys: sources.Files = {}
    for k, path in enumerate(files):
        # a folder named like a history file, a file that cannot be read, a symlink out of the folder: refused
        data, keys[path.name] = sources.read(path, run_dir)
        raw = data.split(b"\n")
        if raw and raw[-1] == b"":
            raw.pop()
        elif raw:
            truncated.append(path.name)  # no newline at the end: the last line may be cut off
            raw.pop()
        for n, line in enumerate(raw):
            try:
                op = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                raise ConfigError(f"{path}:{n + 1}: not a JSON object ({exc})") from exc
            try:
                schema.validate(op)
            except schema.BadLine as exc:
                raise ConfigError(f"{path}:{n + 1}: {exc}") from None
            lines.append(op)
            where.append((k, n + 1))
    # stable: one process's ops keep their file order on ties
    order = sorted(range(len(lines)), key=lambda i: lines[i]["time"])
    _refuse_inconsistent(lines, order, [(files[k], n) for k, n in where])
    return [Op.from_json(lines[i], index=j) for j, i in enumerate(order)], truncated, keys


def _refuse_inconsistent(lines: list[dict[str, Any]], order: list[int], where: list[tuple[Path, int]]) -> None:
    """``ConfigError`` for what only the merged history shows: a completion of no invoke (for the
    kinds that have one, ``schema.PAIRED``), a line that is there twice, an ``index`` used twice."""
    outstanding: dict[str, str] = {}  # process -> the f of its open invoke
    indexes: dict[int, int] = {}
    previous: int | None = None
    for i in order:
        op = lines[i]

        def at(j: int) -> str:
            path, n = where[j]
            return f"{path}:{n}"

        if previous is not None and lines[previous]["time"] == op["time"] and lines[previous] == op:
            raise ConfigError(f"{at(i)}: the same line as {at(previous)} (a line is there twice)")
        previous = i
        if "index" in op and op["index"] is not None:
            if op["index"] in indexes:
                raise ConfigError(f"{at(i)}: op index {op['index']} is used again (first at {at(indexes[op['index']])})")
            indexes[op["index"]] = i
        process, f = op["process"], op["f"]
        if f not in schema.PAIRED:
            continue
        if op["type"] == INVOKE:
            outstanding[process] = f
        elif outstanding.get(process) == f:
            del outstanding[process]
        else:
            open_ = outstanding.get(process)
            raise ConfigError(f"{at(i)}: a {op['type']} completion of {f} by {process}, which has no {f} "
                              f"outstanding ({f'its open invoke is {open_}' if open_ else 'nothing open'}): "
                              "every completion follows its invoke by the same process")


def _history_files(run_dir: Path) -> list[Path]:
    return sources.history_files(run_dir / HISTORY_DIR)


def _pair(ops: Sequence[Op]) -> dict[int, Op | None]:
    """invoke index -> its completion (None: the process never completed it, i.e. unknown)."""
    outstanding: dict[str, Op] = {}
    pairs: dict[int, Op | None] = {}
    for op in ops:
        if op.type == INVOKE:
            outstanding[op.process] = op
            pairs[op.index] = None
        elif op.process in outstanding and outstanding[op.process].f == op.f:
            pairs[outstanding.pop(op.process).index] = op
    return pairs


@dataclass
class _Writes:
    """The ``writes`` table's columns as they are collected."""

    txn: list[int] = field(default_factory=list)
    send: list[Send] = field(default_factory=list)

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame({"txn": pd.array(self.txn, dtype="int64"), "value": _str([s.value for s in self.send]),
                             "topic": _str([s.topic for s in self.send]),
                             "partition": pd.array([s.partition for s in self.send], dtype="int64"),
                             "offset": pd.array([s.offset for s in self.send], dtype="Int64")})


@dataclass
class _Reads:
    """The ``reads`` table's columns as they are collected (one row per record a read got)."""

    op: list[int] = field(default_factory=list)
    process: list[str] = field(default_factory=list)
    source: list[str] = field(default_factory=list)
    isolation: list[str] = field(default_factory=list)
    topic: list[str] = field(default_factory=list)
    partition: list[int] = field(default_factory=list)
    offset: list[int] = field(default_factory=list)
    value: list[str] = field(default_factory=list)

    def add(self, op: Op, source: str) -> None:
        """The records of a ``poll`` / ``scan`` op: ``{"topic-partition": [[offset, value], ...]}``."""
        iso = op.isolation or READ_COMMITTED
        for key, recs in (op.value or {}).items():
            topic, part = split_tp(key)
            n = len(recs)
            self.op.extend([op.index] * n)
            self.process.extend([op.process] * n)
            self.source.extend([source] * n)
            self.isolation.extend([iso] * n)
            self.topic.extend([topic] * n)
            self.partition.extend([part] * n)
            self.offset.extend(r[0] for r in recs)
            self.value.extend(r[1] for r in recs)

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame({"op": pd.array(self.op, dtype="int64"), "process": _str(self.process),
                             "source": _str(self.source), "isolation": _str(self.isolation), "topic": _str(self.topic),
                             "partition": pd.array(self.partition, dtype="int64"),
                             "offset": pd.array(self.offset, dtype="int64"), "value": _str(self.value)})


@dataclass
class _Keys:
    """The ``keys`` table's columns: the key of each written value that has one."""

    value: list[str] = field(default_factory=list)
    key: list[str | None] = field(default_factory=list)

    def add(self, sends: list[Send], keys: list[str | None]) -> None:
        for s, k in zip(sends, keys):
            self.value.append(s.value)
            self.key.append(k)

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame({"value": _str(self.value), "key": _str(self.key)})


@dataclass
class _Payloads:
    """The ``payloads`` table's columns: per record an app's feeder wrote, what it wrote."""

    value: list[str] = field(default_factory=list)
    payload: list[str | None] = field(default_factory=list)
    timestamp: list[int] = field(default_factory=list)
    headers: list[str | None] = field(default_factory=list)

    def add(self, sends: list[Send], records: list[list[Any]]) -> None:
        for s, (payload, timestamp, headers) in zip(sends, records):
            self.value.append(s.value)
            self.payload.append(payload)
            self.timestamp.append(timestamp)
            self.headers.append(None if headers is None else json.dumps(headers, separators=(",", ":")))

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame({"value": _str(self.value), "payload": _str(self.payload),
                             "timestamp": pd.array(self.timestamp, dtype="Int64"), "headers": _str(self.headers)})


@dataclass
class _AppOutputs(_Reads):
    """The ``app_outputs`` table's columns: one row per record a read of an app's output got, its
    records ``[offset, value, key]`` (value and key may be null)."""

    app: list[str] = field(default_factory=list)
    key: list[str | None] = field(default_factory=list)

    def add(self, op: Op, source: str) -> None:
        super().add(op, source)
        for recs in (op.value or {}).values():
            self.app.extend([str(op.app)] * len(recs))
            self.key.extend(r[2] if len(r) > 2 else None for r in recs)

    def frame(self) -> pd.DataFrame:
        reads = super().frame()
        return pd.concat([pd.DataFrame({"app": _str(self.app)}), reads, pd.DataFrame({"key": _str(self.key)})], axis=1)


@dataclass
class _AppExpected:
    """The ``app_expected`` table's columns, from ``expect`` ops: per input its outputs (``map``) or
    contributions (``by``: the amount as text in ``value``), a model's table (``input`` null), or a
    join's alternatives (``via``: the table write it joins, null for none)."""

    app: list[str] = field(default_factory=list)
    input: list[str | None] = field(default_factory=list)
    seq: list[int] = field(default_factory=list)
    topic: list[str | None] = field(default_factory=list)
    key: list[str | None] = field(default_factory=list)
    value: list[str | None] = field(default_factory=list)
    via: list[str | None] = field(default_factory=list)

    def add(self, op: Op) -> None:
        """``{"app", "inputs": [[input value, [[topic, key, value], ...]], ...]}``, ``{"app", "table":
        [[topic, key, value], ...], "inputs": N}`` or ``{"app", "join": [[stream value, table value
        or null, [[topic, key, value], ...]], ...]}``."""
        app = str(op.value["app"])
        if "table" in op.value:
            self._rows(app, None, None, op.value["table"], empty=False)
        for value, outputs in op.value.get("inputs") if isinstance(op.value.get("inputs"), list) else []:
            self._rows(app, value, None, outputs)
        for value, via, outputs in op.value.get("join") or []:
            self._rows(app, value, via, outputs)

    def _rows(self, app: str, value: str | None, via: str | None, outputs: list[list[Any]], empty: bool = True) -> None:
        rows = [(k, *o) for k, o in enumerate(outputs)] or ([(-1, None, None, None)] if empty else [])
        for seq, topic, key, out in rows:
            self.app.append(app)
            self.input.append(value)
            self.seq.append(seq)
            self.topic.append(topic)
            self.key.append(key)
            self.value.append(out if out is None or isinstance(out, str) else str(out))
            self.via.append(via)

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame({"app": _str(self.app), "input": _str(self.input),
                             "seq": pd.array(self.seq, dtype="int64"), "topic": _str(self.topic),
                             "key": _str(self.key), "value": _str(self.value), "via": _str(self.via)})


@dataclass
class _AppOps:
    """What a history's ops say of its apps under test: the output records reads got, the final
    scans of their outputs, their contracts, the contract function's outputs (``expect``) or why it
    gave none, the writes to their topics by workloads that are not theirs (``app-stray``)."""

    outputs: _AppOutputs = field(default_factory=_AppOutputs)
    expected: _AppExpected = field(default_factory=_AppExpected)
    contracts: list[dict[str, Any]] = field(default_factory=list)
    scans: dict[str, set[str]] = field(default_factory=dict)
    stray: dict[str, dict[str, int]] = field(default_factory=dict)
    #: app -> why its contract function gave no outputs
    function_errors: dict[str, str] = field(default_factory=dict)
    #: app -> how many committed inputs its model was given
    model_inputs: dict[str, int] = field(default_factory=dict)
    #: app -> its output keys as its ``window_key`` function decoded them: key as recorded -> [key, start]
    window_keys: dict[str, dict[str, list[Any]]] = field(default_factory=dict)
    #: app -> its app-contract op (a second one is refused)
    contract_ops: dict[str, Op] = field(default_factory=dict)
    #: app -> the first expect or app-stray op about it (one about an app with no contract is refused)
    about: dict[str, Op] = field(default_factory=dict)

    def add(self, op: Op) -> bool:
        """Take ``op`` when it is one of these (True); False for any other op."""
        f = op.f
        if ((f == POLL and op.type == OK) or f == SCAN) and op.app is not None:
            self.outputs.add(op, POLL if f == POLL else SCAN)
            if f == SCAN:
                self.scans.setdefault(op.app, set()).add(op.isolation or READ_COMMITTED)
        elif f == APP_CONTRACT:
            _refuse_second_contract(op, self.contract_ops)
            self.contracts.append(dict(op.value))
        elif f == EXPECT:
            self.about.setdefault(str(op.value["app"]), op)
            self.expected.add(op)
            if op.value.get("error"):
                self.function_errors[str(op.value["app"])] = str(op.value["error"])
            if "table" in op.value:
                self.model_inputs[str(op.value["app"])] = int(op.value["inputs"])
            if "window_keys" in op.value:
                self.window_keys.setdefault(str(op.value["app"]), {}).update(
                    (str(raw), [key, int(start)]) for raw, key, start in op.value["window_keys"])
        elif f == APP_STRAY:
            self.about.setdefault(str(op.value["app"]), op)
            self.stray.setdefault(op.value["app"], {}).update(op.value["topics"])
        else:
            return False
        return True

    def meta(self) -> dict[str, Any]:
        """The tables' ``meta`` entries of the apps (none for a history without one)."""
        return {**({"apps": self.contracts, "app_scans": {a: sorted(i) for a, i in sorted(self.scans.items())}}
                   if self.contracts or self.scans else {}),
                **({"app_stray": self.stray} if self.stray else {}),
                **({"app_function_errors": self.function_errors} if self.function_errors else {}),
                **({"app_model_inputs": self.model_inputs} if self.model_inputs else {}),
                **({"app_window_keys": self.window_keys} if self.window_keys else {})}


def _fault_row(op: Op) -> tuple[int, str | None, str | None, str]:
    """A nemesis ``fault`` event as a row of the ``faults`` table: the rest of its value as JSON text."""
    v = dict(op.value or {})
    kind, phase = v.pop("kind", None), v.pop("phase", None)
    return op.time, None if phase is None else str(phase), None if kind is None else str(kind), json.dumps(v, default=str)


def fault_events(faults: pd.DataFrame) -> list[dict[str, Any]]:
    """The ``faults`` table back as the nemesis recorded it: ``{"time", "value": {"kind", "phase", ...}}``,
    in time order."""
    out = []
    for time, phase, kind, detail in zip(faults["time"], faults["phase"], faults["kind"], faults["detail"]):
        value = {**({"kind": kind} if isinstance(kind, str) else {}), **({"phase": phase} if isinstance(phase, str) else {}),
                 **json.loads(detail)}
        out.append({"time": int(time), "value": value})
    return sorted(out, key=lambda e: e["time"])


def _faults_frame(rows: list[tuple[int, str | None, str | None, str]]) -> pd.DataFrame:
    return pd.DataFrame({"time": pd.array([r[0] for r in rows], dtype="int64"), "phase": _str([r[1] for r in rows]),
                         "kind": _str([r[2] for r in rows]), "detail": _str([r[3] for r in rows])})


_SparkRow = tuple[int, str, str, str, str]


def _spark_frame(rows: list[_SparkRow]) -> pd.DataFrame:
    return pd.DataFrame({"time": pd.array([r[0] for r in rows], dtype="int64"), "process": _str([r[1] for r in rows]),
                         "f": _str([r[2] for r in rows]), "type": _str([r[3] for r in rows]),
                         "detail": _str([r[4] for r in rows])})


def spark_events(t: Tables) -> list[dict[str, Any]]:
    """The Spark job's events in history order, each ``{"time", "process", "f", "type", **value}``
    (parsed once per ``Tables``)."""
    if "spark_events" not in t.cache:
        t.cache["spark_events"] = spark_events_of(t.spark_events)
    events: list[dict[str, Any]] = t.cache["spark_events"]
    return events


def spark_events_of(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows of a ``spark_events`` table as event dicts (see ``spark_events``)."""
    return [{"time": int(time), "process": str(process), "f": str(f), "type": str(type_), **json.loads(detail)}
            for time, process, f, type_, detail in zip(frame["time"], frame["process"], frame["f"], frame["type"],
                                                        frame["detail"])]


def empty_faults() -> pd.DataFrame:
    """A ``faults`` table of no events (histories without a nemesis)."""
    return _table("faults", 0, lambda: _faults_frame([]))


def _errors_seen(ops: Sequence[Op]) -> dict[str, int]:
    """How often the clients met each error, by name (``model.error_names``), sorted by name."""
    return dict(sorted(Counter(name for op in ops for name in error_names(op)).items()))


def flatten(ops: Sequence[Op], truncated: list[str] | None = None) -> Tables:
    """The tables of ``ops`` (merged and indexed, as ``read_ops`` gives them)."""
    pairs = _pair(ops)
    txn_rows: list[tuple[Any, ...]] = []
    writes = _Writes()
    reads = _Reads()
    keys = _Keys()
    payloads = _Payloads()
    app = _AppOps()
    init_rows: list[tuple[Any, ...]] = []
    group_rows: list[tuple[str, int, int]] = []
    fault_rows: list[tuple[int, str | None, str | None, str]] = []
    fenced: list[str] = []
    retired: list[str] = []
    recreated: list[str] = []
    lso: dict[str, Any] | None = None
    # the final scans that are in the history whole (a runner that died before them, or a line cut
    # off mid-scan, leaves them out): what the checks that judge from them need
    final_scans: set[str] = set()
    # the Spark job's own events, and the nemesis's faults on workloads (driver kills): few per run
    spark: list[_SparkRow] = []

    for op in ops:
        f, t = op.f, op.type
        if t == INVOKE and f in (TXN, SEND):
            done = pairs.get(op.index)
            txn_rows.append((op.index, op.process, f, done.type if done else INFO, op.time, done.time if done else None,
                             done.commit_at if done is not None and done.commit_at is not None else op.commit_at, op.txn_id, done.error if done else None))
            sends = sends_of(op, done)
            for s in sends:
                writes.txn.append(op.index)
                writes.send.append(s)
            if op.keys is not None:
                keys.add(sends, op.keys)
            if op.records is not None:
                payloads.add(sends, op.records)
        elif t == INVOKE and f == INIT:
            done = pairs.get(op.index)
            init_rows.append((op.index, op.process, op.value, done.type if done else INFO,
                              op.time, done.time if done else None))
        elif app.add(op):
            pass
        elif (f == POLL and t == OK) or f == SCAN:
            reads.add(op, POLL if f == POLL else SCAN)
            if f == SCAN and op.isolation:
                final_scans.add(op.isolation)
        elif f == GROUP_OFFSETS:
            group_rows += [(*split_tp(key), off) for key, off in (op.value or {}).items()]
        elif f == FENCED:
            fenced.append(op.process)
        elif f == RETIRED:
            retired.append(op.process)
        elif f == RECREATED:
            recreated.append(op.process)
        elif f == LSO:
            lso = op.value
        if f == FAULT:
            fault_rows.append(_fault_row(op))
        if f in SPARK_EVENTS or (f == FAULT and "workload" in (op.value or {})):
            spark.append((op.time, op.process, f, t, json.dumps(op.value or {}, default=str)))

    txns = _rows_frame("txns", txn_rows, *_ROW_TABLES["txns"])
    inits = _rows_frame("inits", init_rows, *_ROW_TABLES["inits"])
    groups = _rows_frame("group_offsets", group_rows, *_ROW_TABLES["group_offsets"])
    meta = {"ops": len(ops), "truncated": truncated or [], "fenced": sorted(set(fenced)), "retired": sorted(set(retired)),
            "recreated": sorted(set(recreated)), "lso": lso, "final_scans": sorted(final_scans),
            "errors_seen": _errors_seen(ops),
            "duration_ns": (ops[-1].time - ops[0].time) if ops else 0,
            **app.meta()}
    _refuse_lines_without_contract(app.about, app.contract_ops)
    written = writes.frame()
    _refuse_reused_values(written, txns)
    return Tables(_ops_frame(ops), txns, written, _table("reads", len(reads.op), reads.frame), inits, groups,
                  _table("faults", len(fault_rows), lambda: _faults_frame(fault_rows)),
                  _table("spark_events", len(spark), lambda: _spark_frame(spark)),
                  _table("keys", len(keys.value), keys.frame), _table("app_outputs", len(app.outputs.op), app.outputs.frame),
                  _table("app_expected", len(app.expected.app), app.expected.frame),
                  _table("payloads", len(payloads.value), payloads.frame), meta)


#: The tables ``flatten`` collects as rows: their columns, and the types of those not inferred.
_ROW_TABLES: dict[str, tuple[list[str], dict[str, Any]]] = {
    "txns": (["txn", "process", "f", "outcome", "invoke_time", "complete_time", "commit_at", "txn_id", "error"],
             {"txn": "int64", "invoke_time": "int64", "complete_time": "Int64", "commit_at": "Int64"}),
    "inits": (["op", "process", "txn_id", "outcome", "invoke_time", "complete_time"],
              {"op": "int64", "invoke_time": "int64", "complete_time": "Int64"}),
    "group_offsets": (["topic", "partition", "offset"], {"partition": "int64", "offset": "int64"}),
}


def _rows_frame(name: str, rows: Sequence[tuple[Any, ...]], columns: list[str], types: dict[str, Any]) -> pd.DataFrame:
    """The table ``name`` of ``rows``, as ``pd.DataFrame(rows, columns=columns).astype(types)`` gives
    it, column by column: the columns of ``types`` built in their type, the others' inferred (a
    frame's ``astype`` took milliseconds, a fixed cost of every small history). Empty, the
    frame ``astype`` gives, built once (an empty list would be inferred float, not object)."""
    if not rows:
        return _table(name, 0, lambda: pd.DataFrame([], columns=columns).astype(types))
    return pd.DataFrame({c: pd.array([r[i] for r in rows], dtype=types[c]) if c in types else [r[i] for r in rows]
                         for i, c in enumerate(columns)})


def _ops_frame(ops: Sequence[Op]) -> pd.DataFrame:
    """The ``ops`` table: every op's index, time, process, type, f and error."""
    return pd.DataFrame({
        "index": pd.array([o.index for o in ops], dtype="int64"),
        "time": pd.array([o.time for o in ops], dtype="int64"),
        "process": [o.process for o in ops],
        "type": [o.type for o in ops],
        "f": [o.f for o in ops],
        "error": [o.error for o in ops],
    })


def _op_named(op: Op) -> str:
    return f"op {op.index} ({op.process} {op.f}, at {op.time / 1e9:.6f} s)"


def _refuse_second_contract(op: Op, contracts: dict[str, Op]) -> None:
    """``ConfigError`` for a second ``app-contract`` of one app (else noted in ``contracts``): both
    were judged, and one contract judged the other's outputs (a false finding)."""
    app = str(op.value["app"])
    if app in contracts:
        raise ConfigError(f"app {app!r} has two contracts, {_op_named(contracts[app])} and {_op_named(op)}: a history "
                          "has one app-contract per app (the runner writes it once), else one would judge the "
                          "other's outputs")
    contracts[app] = op


def _refuse_lines_without_contract(about: dict[str, Op], contracts: dict[str, Op]) -> None:
    """``ConfigError`` for an ``expect`` or ``app-stray`` line about an app with no ``app-contract``:
    nothing could judge it (it was ignored, and the history passed for valid), and no run writes one
    (the runner records the contract first): an error of the history, not an unknown verdict."""
    for app, op in about.items():
        if app not in contracts:
            known = f"; the history's apps: {', '.join(map(repr, contracts))}" if contracts else ""
            raise ConfigError(f"{_op_named(op)} is about app {app!r}, which has no app-contract op{known}: an app's "
                              "expect and app-stray lines follow its contract (docs/APPS.md)")


def _refuse_reused_values(writes: pd.DataFrame, txns: pd.DataFrame) -> None:
    """``ConfigError`` naming the first value two sends wrote, and both ops: the history format wants
    each written value unique in a run, and a read of a reused one could not say which write it saw
    (a second, aborted write of a committed value would pass for an aborted read)."""
    again = writes["value"].duplicated(keep=False).to_numpy(bool)
    if not again.any():
        return
    value = writes["value"].to_numpy()[again][0]
    rows = writes[again & (writes["value"] == value).to_numpy(bool)].head(2)
    by_op: dict[int, Any] = {int(r["txn"]): r for r in txns[txns["txn"].isin(rows["txn"])].to_dict("records")}
    ops = [f"op {i} ({by_op[i]['process']} {by_op[i]['f']}, invoked at {int(by_op[i]['invoke_time']) / 1e9:.6f} s)"
           for i in rows["txn"].astype(int)]
    raise ConfigError(f"value {value!r} is written twice, by {' and by '.join(ops)}: every value a run writes must be "
                      "unique (the history format), or a read of it cannot say which write it saw")


def add_ids(t: Tables) -> Tables:
    """Integer ids the checker works on, stored with the tables (like Parquet's own dictionary
    encoding): ``vid`` per value (shared by writes and reads), ``tid`` per topic, and on reads
    ``pos`` = (topic, partition, offset) as one sortable int64. Idempotent."""
    if "vid" in t.writes.columns and "vid" in t.reads.columns and (t.values is not None or t.values_file is not None):
        return t
    n = len(t.writes)
    codes, uniques = pd.factorize(pd.concat([t.writes["value"], t.reads["value"]], ignore_index=True))
    t.values = pd.Series(uniques, dtype="str")
    tids, topics = pd.factorize(pd.concat([t.writes["topic"], t.reads["topic"]], ignore_index=True))
    t.writes = t.writes.assign(vid=codes[:n].astype(np.int64), tid=tids[:n].astype(np.int64))
    t.reads = t.reads.assign(vid=codes[n:].astype(np.int64), tid=tids[n:].astype(np.int64))
    acked = t.writes["offset"].dropna().to_numpy(np.int64)
    _refuse_unpackable(len(topics), np.concatenate([t.writes["partition"].to_numpy(np.int64),
                                                                t.reads["partition"].to_numpy(np.int64)]),
                       np.concatenate([acked, t.reads["offset"].to_numpy(np.int64)]))
    t.reads["pos"] = packed_position(t.reads["tid"], t.reads["partition"], t.reads["offset"])
    return t


def packed_position(tid: pd.Series, partition: pd.Series, offset: pd.Series) -> np.ndarray:
    """(topic id, partition, offset) -> int64 (``TOPIC_BITS`` / ``PARTITION_BITS`` / ``OFFSET_BITS``)."""
    packed: np.ndarray = pack(tid.to_numpy(np.int64), partition.to_numpy(np.int64), offset.to_numpy(np.int64))
    return packed


def pack(tid: Any, partition: Any, offset: Any) -> Any:
    """``packed_position`` of numpy arrays or ints (the caller has kept them within the limits).
    Arrays are packed in place of one int64 copy: at 10M values each temporary is 80 MB."""
    if not isinstance(tid, np.ndarray):
        return (tid << TOPIC_SHIFT) | (partition << OFFSET_BITS) | offset
    packed = tid.astype(np.int64)
    packed <<= TOPIC_SHIFT
    part = np.asarray(partition).astype(np.int64)
    part <<= OFFSET_BITS
    packed |= part
    del part
    packed |= np.asarray(offset, dtype=np.int64)
    return packed


def unpack(pos: int) -> tuple[int, int, int]:
    """A packed position's (topic id, partition, offset)."""
    pos = int(pos)
    return pos >> TOPIC_SHIFT, (pos >> OFFSET_BITS) & MAX_PARTITION, pos & MAX_OFFSET


def _refuse_unpackable(n_topics: int, partitions: np.ndarray, offsets: np.ndarray) -> None:
    """``ConfigError`` when a topic count, partition or offset would not fit its bits of a packed
    position (where it would spill into another topic's positions)."""
    limits = []
    if n_topics > MAX_TOPICS:
        limits.append(f"{n_topics} topics (at most {MAX_TOPICS})")
    if len(partitions) and (partitions.min() < 0 or partitions.max() > MAX_PARTITION):
        limits.append(f"partition {int(partitions.max() if partitions.max() > MAX_PARTITION else partitions.min())} "
                      f"(0..{MAX_PARTITION})")
    if len(offsets) and (offsets.min() < 0 or offsets.max() > MAX_OFFSET):
        limits.append(f"offset {int(offsets.max() if offsets.max() > MAX_OFFSET else offsets.min())} (0..{MAX_OFFSET})")
    if limits:
        raise ConfigError(f"the history has {'; '.join(limits)}: the checker names a position by one 64-bit "
                          f"number of {TOPIC_BITS} bits of topic, {PARTITION_BITS} of partition and {OFFSET_BITS} of "
                          "offset, and cannot judge a history beyond them")


def with_values(t: Tables, df: pd.DataFrame) -> pd.DataFrame:
    """``df`` (rows of reads or writes) with its ``value`` column, looked up by ``vid`` if absent."""
    if "value" in df.columns:
        return df
    return df.assign(value=values_at(t, df["vid"].to_numpy()))


#: Up to this many distinct values are read from ``values.parquet`` by a filter (row groups skipped:
#: the file is in ``vid`` order); more, and the whole table is loaded (and kept).
FEW_VALUES = 10_000


def values_at(t: Tables, vids: np.ndarray) -> np.ndarray:
    """The values of the value ids ``vids``."""
    if t.values is None:
        if t.values_file is None:
            raise ValueError("the tables have no values (add_ids sets them)")
        wanted = np.unique(vids)
        if len(wanted) > FEW_VALUES:
            t.values = pd.read_parquet(t.values_file, columns=["value"])["value"]
        else:
            few = pd.read_parquet(t.values_file, filters=[("vid", "in", wanted.tolist())]) if len(wanted) else None
            lookup = pd.Series(few["value"].to_numpy(), index=few["vid"].to_numpy()) if few is not None else pd.Series(dtype="str")
            return lookup.reindex(vids).to_numpy()
    return t.values.take(vids).to_numpy()


def vids_of(t: Tables, values: list[str]) -> dict[int, str]:
    """The value ids of ``values`` (those the history has): value id -> value."""
    if t.values is not None:
        found = t.values[t.values.isin(values)]
        return {int(i): str(v) for i, v in zip(found.index.to_numpy(np.int64), found)}
    if t.values_file is None:
        raise ValueError("the tables have no values (add_ids sets them)")
    few = pd.read_parquet(t.values_file, filters=[("value", "in", list(values))])
    return {int(i): str(v) for i, v in zip(few["vid"], few["value"])}


def values_of(t: Tables) -> Callable[[np.ndarray], list[Any]]:
    """A lookup of the values of many value ids, for a pass over the whole history: from the values
    in memory, or from the values file read once as one Arrow column (compact: a Python string is
    made only for a value asked for)."""
    if t.values is not None:
        in_memory = t.values.to_numpy()
        return lambda vids: list(in_memory[vids])
    if t.values_file is None:
        raise ValueError("the tables have no values (add_ids sets them)")
    import pyarrow.parquet as pq_io

    column = pq_io.read_table(t.values_file, columns=["value"]).column("value")
    return lambda vids: list(column.take(vids).to_pylist())


def _str(values: Sequence[str | None]) -> pd.Series:
    """A string column that stays a string column when empty (the checks use ``.str``)."""
    return pd.Series(values, dtype="str")


def save(tables: Tables, run_dir: Path) -> Path:
    """Write the tables as Parquet of the current ``LAYOUT`` (temp folder + rename: never half a set),
    with what they were built from (``SOURCE_FILE``: ``tables.source``; for tables built in memory,
    the folder's history files as they are now)."""
    add_ids(tables)
    # Few distinct values in many rows: dictionary-encoded (pandas categories) they take a byte or
    # two per row instead of a string each, on disk and once loaded.
    frames = {}
    for name in TABLES:
        df = getattr(tables, name)
        df = df.astype({c: "category" for c in LOW_CARDINALITY.get(name, ()) if c in df.columns})
        if name in ("reads", "writes"):
            # values once, in values.parquet at their id, not once per record that carries them;
            # ``row`` keeps the history order for engines that read the files in parallel (Spark)
            df = df.drop(columns=["value"], errors="ignore").astype({"tid": "int16", "partition": "int32"})
            df = df.assign(row=np.arange(len(df), dtype=np.int64))
            if "op" in df.columns:
                df = df.astype({"op": "int32"})  # history indexes stay far below 2**31
        frames[name] = df
    final = run_dir / PARQUET_DIR
    tmp = run_dir / f".{PARQUET_DIR}.tmp{os.getpid()}"
    tmp.mkdir(parents=True, exist_ok=True)
    import pyarrow.parquet as pq_io

    for name, df in frames.items():
        pq_io.write_table(_typed(df), _file(tmp, name))
    if tables.values is None and tables.values_file is not None:
        tables.values = pd.read_parquet(tables.values_file, columns=["value"])["value"]
    assert tables.values is not None  # add_ids set them
    pd.DataFrame({"vid": np.arange(len(tables.values), dtype=np.int64), "value": tables.values}).to_parquet(
        _file(tmp, VALUES_TABLE), index=False)
    (tmp / META_FILE).write_text(json.dumps({**tables.meta, "layout": LAYOUT}))
    source = tables.source if tables.source is not None else sources.keys_of(_history_files(run_dir), run_dir, {})
    _write_source(tmp, source)
    if final.exists():
        # whatever is there goes (a broken one included: a folder where meta.json belongs)
        shutil.rmtree(final)
    os.replace(tmp, final)
    return final


def _typed(df: pd.DataFrame) -> Any:
    """``df`` as Arrow, its text columns text even when the table is empty: pandas leaves an empty
    column of text without a type (Arrow ``null``, or ``double`` for an empty object column), and
    an engine that reads the schema (Spark) would then compare numbers with words."""
    import pyarrow as pa

    table = pa.Table.from_pandas(df, preserve_index=False)
    if len(df):
        return table
    for i, f in enumerate(table.schema):
        text = pa.types.is_null(f.type) or (isinstance(df[f.name].dtype, pd.CategoricalDtype) or df[f.name].dtype == object)
        if text and not pa.types.is_string(f.type):
            table = table.set_column(i, f.name, pa.array([], type=pa.string()))
    return table


def _file(folder: Path, table: str) -> Path:
    return folder / f"{table}.parquet"


_NO_META = object()


def _layout_found(run_dir: Path) -> object:
    """The layout number in the folder's ``meta.json`` (None: none written; ``_NO_META``: no file)."""
    meta = run_dir / PARQUET_DIR / META_FILE
    if not meta.exists():
        return _NO_META
    try:
        return (read_json_object(meta) or {}).get("layout")
    except ConfigError:
        return None  # a broken meta.json: rebuilt from the JSON lines, or refused without them


#: The modules whose code decides what the tables hold: a change to any of them rebuilds the tables.
FLATTENING = (sys.modules[__name__], model, schema)


@functools.cache
def _code() -> dict[str, str]:
    return sources.code_digests(FLATTENING)


def _write_source(folder: Path, files: sources.Files) -> None:
    """``folder``'s ``SOURCE_FILE``: what its tables were built from (a temporary file, then a rename)."""
    record = {"hash": sources.HASH, "code": _code(), "files": {n: k.to_json() for n, k in sorted(files.items())}}
    tmp = folder / f".{SOURCE_FILE}.tmp{os.getpid()}"
    tmp.write_text(json.dumps(record, indent=1))
    os.replace(tmp, folder / SOURCE_FILE)


def _recorded(run_dir: Path) -> tuple[sources.Files | None, str]:
    """The history files the run's Parquet was built from, as recorded; None and why when there is
    no usable record (made before records, by other code, a file that is not the record)."""
    path = run_dir / PARQUET_DIR / SOURCE_FILE
    try:
        record = read_json_object(path)
    except ConfigError as exc:
        return None, f"its {SOURCE_FILE} cannot be used ({exc})"
    if record is None:
        return None, f"it has no {SOURCE_FILE} (made before the tables were keyed by the files' content)"
    if record.get("hash") != sources.HASH:
        return None, f"its {SOURCE_FILE} has {record.get('hash')!r} hashes, this code {sources.HASH!r}"
    code = record.get("code")
    if code != _code():
        changed = sorted(n for n in _code() if not isinstance(code, dict) or code.get(n) != _code()[n])
        return None, f"the code that flattens the history changed since it was built ({', '.join(changed)})"
    try:
        return {str(n): sources.FileKey.from_json(k) for n, k in record["files"].items()}, ""
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        return None, f"its {SOURCE_FILE} cannot be used (not what this code writes: {exc!r})"


#: What a whole Parquet file begins and ends with; a file cut short (a full disk, a killed copy) has lost its end.
_PARQUET_MAGIC = b"PAR1"


def _damaged(folder: Path, lacking: tuple[str, ...] = ()) -> str | None:
    """Why a table file in ``folder`` cannot be read (missing, not a file, cut short), in words;
    None when each is there (but those its layout ``lacking``), whole as far as its first and last
    bytes tell (a cheap look, read only at each end; damage inside is found when read, ``load``)."""
    for name in (*(t for t in TABLES if t not in lacking), VALUES_TABLE):
        path = _file(folder, name)
        try:
            with path.open("rb") as f:
                head = f.read(len(_PARQUET_MAGIC))
                size = f.seek(0, os.SEEK_END)
                f.seek(max(0, size - len(_PARQUET_MAGIC)))
                tail = f.read()
        except FileNotFoundError:
            return f"its {path.name} is missing"
        except OSError as exc:
            return f"its {path.name} cannot be read ({exc.strerror or exc})"
        if size < 2 * len(_PARQUET_MAGIC) or head != _PARQUET_MAGIC or tail != _PARQUET_MAGIC:
            return f"its {path.name} is damaged (cut short or not Parquet: {size} bytes)"
    return None


def stale_because(run_dir: Path) -> str | None:
    """Why the run's Parquet tables are not what its JSON lines give (None: they are). They must be
    of this code's ``LAYOUT``, built by this code (``FLATTENING``), from the history files there now:
    the same names, sizes and contents (``sources.key_of``: a file whose stat is the one recorded is
    not read again). ``ConfigError`` for a history file that cannot be read, or is not the run's
    (``sources``). No JSON lines at all: the tables are all there is, used when of this ``LAYOUT``."""
    found = _layout_found(run_dir)
    if found is _NO_META:
        return f"there are no tables ({PARQUET_DIR}/{META_FILE})"
    files = _history_files(run_dir)
    if found != LAYOUT and (files or found not in OLDER_LAYOUTS):
        return f"its layout is {found if found is not None else 'unnumbered (1)'}, this code's {LAYOUT}"
    damaged = _damaged(run_dir / PARQUET_DIR, _lacking(found))
    if damaged is not None:
        if not files:
            raise _beyond_repair(run_dir, damaged)
        return damaged
    recorded, why = _recorded(run_dir)
    if not files:
        if recorded is None:
            log.info("%s: %s, and the JSON lines to rebuild it from are gone: used as it is", run_dir / PARQUET_DIR, why)
        return None
    if recorded is None:
        return why
    now = sources.keys_of(files, run_dir, recorded)
    changed = sources.differences(HISTORY_DIR, recorded, now)
    if changed:
        return "; ".join(changed)
    if now != recorded:  # the same content, with other stats (copied, touched, or hashed for the first time)
        try:
            _write_source(run_dir / PARQUET_DIR, now)  # so that the next load need not read the files again
        except OSError as exc:  # a folder this user may read but not write: hashed again next time
            log.debug("%s: not updated (%s)", run_dir / PARQUET_DIR / SOURCE_FILE, exc)
    return None


def parquet_is_current(run_dir: Path) -> bool:
    """The run's Parquet tables are what its JSON lines give (``stale_because``)."""
    return stale_because(run_dir) is None


def _beyond_repair(run_dir: Path, why: str) -> ConfigError:
    """The error of Parquet tables that cannot be read (``why``) with no JSON lines to rebuild them from."""
    return ConfigError(f"{run_dir / PARQUET_DIR}: {why}, and the JSON lines to rebuild it from "
                       f"({run_dir / HISTORY_DIR}/*.jsonl) are gone")


def _lacking(layout: object) -> tuple[str, ...]:
    """The tables a folder of ``layout`` does not have (an older one, ``OLDER_LAYOUTS``)."""
    return OLDER_LAYOUTS.get(layout, ()) if isinstance(layout, int) and layout != LAYOUT else ()


def _refuse_stale_layout(run_dir: Path) -> None:
    """``ConfigError`` when the folder's Parquet is of another layout, not one still read
    (``OLDER_LAYOUTS``), and no JSON lines are left to rebuild it."""
    found = _layout_found(run_dir)
    if found is not _NO_META and found != LAYOUT and found not in OLDER_LAYOUTS and not _history_files(run_dir):
        raise ConfigError(f"{run_dir / PARQUET_DIR}: history layout {found if found is not None else 'unnumbered (1)'}; "
                          f"this version reads layout {LAYOUT} (and {', '.join(map(str, OLDER_LAYOUTS))}) only, and the JSON lines to rebuild it from "
                          f"({run_dir / HISTORY_DIR}/*.jsonl) are gone")


#: glibc's ``mallopt`` parameter for the mmap threshold (malloc.h ``M_MMAP_THRESHOLD``).
_M_MMAP_THRESHOLD = -3
#: Allocations at least this big get pages of their own, given back to the system when freed.
MMAP_THRESHOLD = 128 * 1024


def _fixed_mmap_threshold() -> None:
    """Keep glibc's mmap threshold at 128 KiB. glibc raises it (up to 32 MiB) each time a big
    block is freed, after which the checker's numpy temporaries come from the heap and stay
    resident when freed: at 10M values the peak was 3.30 GB in two of three quiet runs (2.96 GB in
    the third), 2.88 GB in all three with the threshold fixed, for a check 2.1 s slower (13.0 s
    against 10.9 s; docs/BENCHMARKS.md). Nothing to do on another C library."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    except (OSError, AttributeError):
        pass  # not glibc (musl, macOS): their allocators do not move a threshold like this


def _lean_pool() -> Any:
    """Arrow's jemalloc pool, set to give freed memory back at once, where the build has it: with
    the default (mimalloc) a 10M-value history stayed 0.3 GB higher after loading, and peaked
    0.35 GB higher, from buffers freed but kept. numpy's memory is glibc's: see
    ``_fixed_mmap_threshold``."""
    import pyarrow as pa

    _fixed_mmap_threshold()

    try:
        pool = pa.jemalloc_memory_pool()
        pa.jemalloc_set_decay_ms(0)
        return pool
    except NotImplementedError:  # a pyarrow built without jemalloc
        return pa.default_memory_pool()


def load(run_dir: Path, persist: bool = False) -> Tables:
    """The run's tables: from Parquet when it is current (``stale_because``), else from the JSON
    lines (``persist``: then saved as the current Parquet too, for whatever reads the files next)."""
    pq = run_dir / PARQUET_DIR
    stale = stale_because(run_dir)
    if stale is None:
        import pyarrow as pa
        import pyarrow.parquet as pq_io

        lacking = _lacking(_layout_found(run_dir))

        def frame(name: str) -> pd.DataFrame:
            if name in lacking:
                return _NO_TABLE[name]()
            path = _file(pq, name)
            # ``row`` (the Spark engine's order) is the frame's order here: not read at all
            columns = [c for c in pq_io.read_schema(path).names if c != "row"]
            # split_blocks + self_destruct: arrow buffers are freed as columns convert (lower peak memory)
            df: pd.DataFrame = pq_io.read_table(path, columns=columns).to_pandas(split_blocks=True, self_destruct=True)
            return df

        before = pa.default_memory_pool()
        pa.set_memory_pool(_lean_pool())  # each buffer goes back to the pool that made it, whatever is set later
        try:
            frames: dict[str, Any] = {name: frame(name) for name in TABLES}
        except (OSError, pa.ArrowException) as exc:  # damaged inside, its ends whole (``_damaged``)
            if not _history_files(run_dir):
                raise _beyond_repair(run_dir, f"a table cannot be read ({exc})") from None
            return _rebuilt(run_dir, f"a table cannot be read ({exc})", persist)
        finally:
            pa.set_memory_pool(before)
        return Tables(**frames, meta=read_meta(run_dir), values_file=_file(pq, VALUES_TABLE),
                      source=_recorded(run_dir)[0])
    return _rebuilt(run_dir, stale, persist)


def _rebuilt(run_dir: Path, stale: str, persist: bool) -> Tables:
    """The tables from the JSON lines, the Parquet being ``stale`` (one line in the log says why)."""
    _refuse_stale_layout(run_dir)
    exists = (run_dir / PARQUET_DIR).exists()
    (log.info if exists else log.debug)("%s: %s; the history is read from its JSON lines%s", run_dir / PARQUET_DIR,
                                       stale, " and the tables saved again" if persist else "")
    tables = read_tables(run_dir)
    if persist:
        save(tables, run_dir)
    return tables


def ensure_parquet(run_dir: Path) -> None:
    """Write the run's Parquet first when it is missing or stale (``stale_because``; that conversion
    holds the history in memory once; runs write current Parquet at their end)."""
    stale = stale_because(run_dir)
    if stale is not None:
        _rebuilt(run_dir, stale, persist=True)


def read_meta(run_dir: Path) -> dict[str, Any]:
    """The history's ``meta`` saved with its current Parquet (without the layout number)."""
    meta = read_json_object(run_dir / PARQUET_DIR / META_FILE) or {}
    meta.pop("layout", None)
    return meta


def table_file(run_dir: Path, table: str) -> Path:
    """The Parquet file of one table (``TABLES``, or ``values``: ``vid`` -> ``value``), for engines that
    read the files themselves (Spark). Reads and writes carry ``vid`` instead of ``value`` and a ``row``
    (their order in the history). Call ``ensure_parquet`` first."""
    if table not in TABLES and table != VALUES_TABLE:
        raise ValueError(f"no table {table!r} in the history; tables: {', '.join(TABLES)}, {VALUES_TABLE}")
    return _file(run_dir / PARQUET_DIR, table)


def read_table(run_dir: Path, table: str, columns: list[str] | None = None,
               filters: list[tuple[str, str, Any]] | None = None) -> pd.DataFrame:
    """Some columns (and rows, by pyarrow ``filters``) of one table of the run's current Parquet."""
    return pd.read_parquet(table_file(run_dir, table), columns=columns, filters=filters)
