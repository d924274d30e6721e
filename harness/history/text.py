"""``history.txt``: the history as a person greps it (Jepsen's habit), one line per op in time
order: time, wall-clock time (when known), process, type, f, what it carried, error::

    12.004311  06:18:30.004  txn-producer-0.0  invoke  txn   eos-a-1=txn-producer-0.0-3-0 eos-b-0=...
    12.009870  06:18:30.009  txn-producer-0.0  ok      txn   eos-a-1@17=txn-producer-0.0-3-0 ...

A record with a key (an app's feeder and output, docs/APPS.md) is ``topic-partition@offset[key]=value``
(``null``: a null key or value). The app's own events: ``app-contract`` the contract as compact JSON
(``meta["apps"]``), ``app-stray`` the topics it wrote to undeclared (``meta["app_stray"]``),
``expect`` how many inputs the expected outputs cover (``app_expected``: per app,
over all its ``expect`` lines, which the tables do not tell apart), the reads of its output
(``app_outputs``) as any read's. An ``app-ready`` / ``app-exit`` value is in no table: the line
names the instance's history file that holds it.

It lives at the run folder's root, beside ``history/`` (the JSON lines it is made from) and
``history.parquet/`` (the tables), as Jepsen's store keeps ``history.txt`` beside its results. It
is written from the run's tables as already loaded (the checker's), batch by batch, so it adds one
batch to memory, plus the run's distinct values as one Arrow string array when they were still on
disk, and a hash index of the ``keys`` table's values when an app's feeder wrote keys; a line
names at most ``MAX_RECORDS`` records (a final scan holds every record of the run) and says how
many more.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.history import store
from harness.history.model import APP_CONTRACT, APP_EXIT, APP_READY, APP_STRAY, EXPECT, FAULT, INIT, INVOKE
from harness.history.recorder import HISTORY_DIR

HISTORY_TEXT = "history.txt"
#: Records named per line; the rest are counted.
MAX_RECORDS = 6
BATCH = 65_536


@dataclass
class _Grouped:
    """A table whose rows are in the order of ``key`` (an op index), read batch by batch: the first
    ``MAX_RECORDS`` rows of each key as text, and how many rows it has."""

    batches: Iterator[dict[str, np.ndarray]]
    key: str
    render: Any  # (numpy columns of a batch, row indexes) -> [(topic-partition, @offset, value)]
    pending: dict[str, np.ndarray] | None = None
    #: the last key given and its rows so far: only it may go on in the next batch
    last: tuple[int, int] = (-1, 0)

    def upto(self, last: int) -> dict[int, tuple[list[tuple[str, str, str]], int]]:
        """The rows of every key up to ``last`` not yet given."""
        out: dict[int, tuple[list[tuple[str, str, str]], int]] = {}
        while True:
            if self.pending is None:
                self.pending = next(self.batches, None)
                if self.pending is None:
                    return out
            cols = self.pending
            keys = cols[self.key]
            cut = int(np.searchsorted(keys, last, "right"))
            self._take({n: c[:cut] for n, c in cols.items()}, out)
            if cut < len(keys):
                self.pending = {n: c[cut:] for n, c in cols.items()}
                return out
            self.pending = None

    def _take(self, cols: dict[str, np.ndarray], out: dict[int, tuple[list[tuple[str, str, str]], int]]) -> None:
        keys = cols[self.key]
        if not len(keys):
            return
        uniq, first, counts = np.unique(keys, return_index=True, return_counts=True)
        rank = np.arange(len(keys)) - np.repeat(first, counts)
        before = np.where(uniq == self.last[0], self.last[1], 0)
        rank += np.repeat(before, counts)
        shown = np.flatnonzero(rank < MAX_RECORDS)
        texts = self.render(cols, shown)
        totals = (before + counts).tolist()
        self.last = (int(uniq[-1]), totals[-1])
        for k, n in zip(uniq.tolist(), totals):
            out[k] = (out[k][0] if k in out else [], n)  # a key's rows may span two batches
        for i, t in zip(shown.tolist(), texts):
            out[int(keys[i])][0].append(t)


def _batches(df: pd.DataFrame, key: str, more: dict[str, Any]) -> Iterator[dict[str, np.ndarray]]:
    """The records of ``df`` (writes, reads or an app's output reads, in ``key`` order), ``BATCH``
    rows at a time: key, topic, partition, offset (NaN: unknown) and the columns ``more`` names
    (column -> numpy dtype, ``vid``; or None, an app's record ``value`` and ``key``: kept as the
    table's own array, whose strings are made for the records shown only)."""
    for start in range(0, len(df), BATCH):
        part = df.iloc[start:start + BATCH]
        yield {key: part[key].to_numpy(np.int64), "topic": part["topic"].to_numpy(object),
               "partition": part["partition"].to_numpy(np.int64),
               "offset": part["offset"].to_numpy(np.float64, na_value=np.nan),
               **{c: part[c].to_numpy(dtype) if dtype is not None else part[c].array for c, dtype in more.items()}}


def _text(v: Any) -> str:
    """A record's key or value as the line shows it: ``null`` for none (None, or a column's NA / NaN)."""
    return "null" if v is None or v is pd.NA or v != v else str(v)


def keyed(key: Any, value: Any) -> str:
    """What follows a keyed record's ``topic-partition@offset``: ``[key]=value`` (``null``: none)."""
    return f"[{_text(key)}]={_text(value)}"


def _records(values: Callable[[np.ndarray], list[Any]], keys: Callable[[np.ndarray], list[Any]] | None = None) -> Any:
    """A renderer of (topic, partition, offset, vid) rows as (``topic-partition``, ``@offset`` or
    empty when unknown, ``=value``, or ``[key]=value`` when ``keys`` has the value's key)."""
    def render(cols: dict[str, np.ndarray], rows: np.ndarray) -> list[tuple[str, str, str]]:
        vids = cols["vid"][rows]
        vals = values(vids) if len(rows) else []
        found = keys(vids) if keys is not None and len(rows) else [_UNKEYED] * len(vals)
        return [(f"{t}-{p}", "" if o is None or o != o else f"@{int(o)}", f"={v}" if k is _UNKEYED else f"[{k}]={v}")
                for t, p, o, v, k in zip(cols["topic"][rows], cols["partition"][rows], cols["offset"][rows], vals, found)]
    return render


#: no key recorded for the value (not a keyed send)
_UNKEYED = object()


def _keys_of(tables: store.Tables) -> Callable[[np.ndarray], list[Any]] | None:
    """A lookup of the keys of written values by value id (the ``keys`` table: an app's feeder), or
    None when no write has one: each key as the line shows it, ``_UNKEYED`` for a value written
    without. Matched once, in Arrow (no Python string per row): every value's row in the ``keys``
    table, a number per value id."""
    if not len(tables.keys):
        return None
    import pyarrow as pa
    import pyarrow.compute as pc

    row = pc.fill_null(pc.index_in(_every_value(tables), value_set=pa.array(tables.keys["value"])), -1).to_numpy()
    keys = pa.array(tables.keys["key"])

    def lookup(vids: np.ndarray) -> list[Any]:
        at = row[vids]
        found = keys.take(pa.array(np.maximum(at, 0))).to_pylist()
        return [_text(k) if a >= 0 else _UNKEYED for a, k in zip(at.tolist(), found)]
    return lookup


def _every_value(tables: store.Tables) -> Any:
    """Every distinct value at its value id, as Arrow: from memory, or read from the values file (a
    copy beside ``store.values_of``'s, dropped once the keys are matched)."""
    import pyarrow as pa
    import pyarrow.parquet as pq_io

    if tables.values is not None:
        return pa.array(tables.values)
    return pq_io.read_table(tables.values_file, columns=["value"]).column("value")


def _app_records(cols: dict[str, Any], rows: np.ndarray) -> list[tuple[str, str, str]]:
    """A renderer of an app's output records (``app_outputs``: value and key are columns, either may
    be null; kept as the table holds them and made Python strings for the rows shown only)."""
    return [(f"{t}-{p}", f"@{int(o)}", keyed(k, v))
            for t, p, o, v, k in zip(cols["topic"][rows], cols["partition"][rows], cols["offset"][rows],
                                     cols["value"][rows], cols["key"][rows])]


def write_history_text(run_dir: Path, tables: store.Tables, zero_ns: int = 0, wall_zero_ns: int | None = None,
                       zero_says: str = "t=0 is the runner's start") -> Path:
    """Write ``run_dir/history.txt`` from the run's ``tables`` (``store.load``'s); ``zero_ns``: the
    history-clock instant that is t=0, ``wall_zero_ns``: its wall-clock time (ns since the epoch,
    local time), for the second column."""
    store.add_ids(tables)  # the records carry value ids (tables flattened but not saved have none yet)
    values = store.values_of(tables)
    ids = {"vid": np.int64}
    writes = _Grouped(_batches(tables.writes, "txn", ids), "txn", _records(values, _keys_of(tables)))
    reads = _Grouped(_batches(tables.reads, "op", ids), "op", _records(values))
    app_reads = _Grouped(_batches(tables.app_outputs, "op", {"value": None, "key": None}), "op", _app_records)
    said = _Values(tables)
    out = run_dir / HISTORY_TEXT
    tmp = out.with_name(f".{out.name}.tmp{os.getpid()}")
    ops = tables.ops
    with tmp.open("w", encoding="utf-8") as f:
        f.write(f"# {run_dir.name}: {len(ops)} ops in time order. {zero_says}.\n"
                "# seconds  wall-clock  process  type  f  records (topic-partition@offset=value, keyed: "
                "topic-partition@offset[key]=value, null: none) / value  error\n")
        open_: dict[str, int] = {}  # process -> its open invoke's index (a completion shows its invoke's writes)
        for start in range(0, len(ops), BATCH):
            batch = ops.iloc[start:start + BATCH]
            cols = {n: batch[n].tolist() for n in ("index", "process", "type", "f", "error")}
            last = cols["index"][-1]
            w, r, a = writes.upto(last), reads.upto(last), app_reads.upto(last)
            times = batch["time"].to_numpy(np.int64)
            secs = ((times - zero_ns) / 1e9).tolist()
            walls = (np.datetime_as_string((times - zero_ns + wall_zero_ns).astype("datetime64[ns]"), unit="ms")
                     if wall_zero_ns is not None else None)
            lines = []
            for k, (i, proc, typ, fn, err) in enumerate(zip(cols["index"], cols["process"], cols["type"], cols["f"],
                                                            cols["error"])):
                invoke = i if typ == INVOKE else open_.pop(proc, i)
                if typ == INVOKE:
                    open_[proc] = i
                mine = r.get(i) or a.get(i) or w.get(invoke)
                what = _what(mine, typ != INVOKE) if mine else said.of(fn, invoke, proc)
                wall = f"{walls[k][11:]}  " if walls is not None else ""
                lines.append(f"{secs[k]:12.6f}  {wall}{proc:<20} {typ:<6} {fn:<13} {what}"
                             f"{'  error=' + str(err) if isinstance(err, str) and err else ''}\n")
            f.writelines(lines)
    os.replace(tmp, out)
    return out


def _what(group: tuple[list[tuple[str, str, str]], int], offsets: bool) -> str:
    records, n = group
    shown = " ".join(f"{tp}{off if offsets else ''}{v}" for tp, off, v in records)
    return shown + (f" (+{n - len(records)} more)" if n > len(records) else "")


class _Values:
    """What an op without records carried, from the tables: an init's transactional.id, a fault
    event's kind and detail, an app's contract, the inputs the ``expect`` lines cover, the topics an
    app wrote to undeclared. Each kind's
    ops come in history order, as the tables keep them."""

    def __init__(self, tables: store.Tables) -> None:
        self.inits = dict(zip(tables.inits["op"].tolist(), tables.inits["txn_id"].tolist()))
        self.faults = iter(store.fault_events(tables.faults))
        self.contracts = iter(tables.meta.get("apps") or [])
        # one app-stray line per app that wrote to topics it did not declare (meta: app -> topic -> records)
        self.strays = iter({"app": a, "topics": t} for a, t in (tables.meta.get("app_stray") or {}).items())
        self.expects = int((tables.ops["f"] == EXPECT).sum())
        self.expects_seen = 0
        expected = tables.app_expected
        # an input's first row: seq 0, or -1 (yields none); a join's per alternative, a model's table none
        per_input = expected[(expected["seq"].to_numpy(np.int64) <= 0) & expected["input"].notna().to_numpy(bool)]
        per_input = per_input.drop_duplicates(["app", "input"])
        self.inputs = per_input.groupby(per_input["app"].astype(str), sort=True).size().to_dict()

    def of(self, f: str, invoke: int, process: str) -> str:
        if f == INIT:
            return str(self.inits.get(invoke, ""))
        if f == FAULT:
            event = next(self.faults, None)
            return _json(event["value"] if event else None)
        if f == APP_CONTRACT:
            return _json(next(self.contracts, None))
        if f == APP_STRAY:
            return _json(next(self.strays, None))
        if f == EXPECT:
            self.expects_seen += 1
            covered = ", ".join(f"app {a}: {n} inputs" for a, n in self.inputs.items())
            if self.expects == 1:
                return covered
            return f"{covered} over {self.expects} expect lines (this one: {self.expects_seen} of {self.expects})"
        if f in (APP_READY, APP_EXIT):
            return f"(its value: {HISTORY_DIR}/{process.rpartition('.')[0] or process}.jsonl)"
        return ""


def _json(value: Any) -> str:
    """``value`` as compact JSON; empty for none."""
    return "" if value is None else json.dumps(value, separators=(",", ":"), default=str)
