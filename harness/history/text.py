"""``history.txt``: the history as a person greps it (Jepsen's habit), one line per op in time
order: time, wall-clock time (when known), process, type, f, what it carried, error::

    12.004311  06:18:30.004  txn-producer-0.0  invoke  txn   eos-a-1=txn-producer-0.0-3-0 eos-b-0=...
    12.009870  06:18:30.009  txn-producer-0.0  ok      txn   eos-a-1@17=txn-producer-0.0-3-0 ...

It lives at the run folder's root, beside ``history/`` (the JSON lines it is made from) and
``history.parquet/`` (the tables), as Jepsen's store keeps ``history.txt`` beside its results. It
is written from the run's tables as already loaded (the checker's), batch by batch, so it adds one
batch to memory, plus the run's distinct values as one Arrow string array when they were still on
disk; a line names at most ``MAX_RECORDS`` records (a final scan holds every record of the run)
and says how many more.
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
from harness.history.model import FAULT, INIT, INVOKE

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


def _batches(df: pd.DataFrame, key: str) -> Iterator[dict[str, np.ndarray]]:
    """The records of ``df`` (writes or reads, in ``key`` order), ``BATCH`` rows at a time: key,
    topic, partition, offset (NaN: unknown) and vid."""
    for start in range(0, len(df), BATCH):
        part = df.iloc[start:start + BATCH]
        yield {key: part[key].to_numpy(np.int64), "topic": part["topic"].to_numpy(object),
               "partition": part["partition"].to_numpy(np.int64),
               "offset": part["offset"].to_numpy(np.float64, na_value=np.nan), "vid": part["vid"].to_numpy(np.int64)}


def _records(values: Callable[[np.ndarray], list[Any]]) -> Any:
    """A renderer of (topic, partition, offset, vid) rows as (``topic-partition``, ``@offset`` or
    empty when unknown, value): an invoke's line leaves the offset out (it was not known yet)."""
    def render(cols: dict[str, np.ndarray], rows: np.ndarray) -> list[tuple[str, str, str]]:
        vals = values(cols["vid"][rows]) if len(rows) else []
        offs = cols["offset"][rows]
        return [(f"{t}-{p}", "" if o is None or o != o else f"@{int(o)}", str(v))
                for t, p, o, v in zip(cols["topic"][rows], cols["partition"][rows], offs, vals)]
    return render


def write_history_text(run_dir: Path, tables: store.Tables, zero_ns: int = 0, wall_zero_ns: int | None = None,
                       zero_says: str = "t=0 is the runner's start") -> Path:
    """Write ``run_dir/history.txt`` from the run's ``tables`` (``store.load``'s); ``zero_ns``: the
    history-clock instant that is t=0, ``wall_zero_ns``: its wall-clock time (ns since the epoch,
    local time), for the second column."""
    store.add_ids(tables)  # the records carry value ids (tables flattened but not saved have none yet)
    values = store.values_of(tables)
    writes = _Grouped(_batches(tables.writes, "txn"), "txn", _records(values))
    reads = _Grouped(_batches(tables.reads, "op"), "op", _records(values))
    inits = dict(zip(tables.inits["op"].tolist(), tables.inits["txn_id"].tolist()))
    faults = iter(store.fault_events(tables.faults))
    out = run_dir / HISTORY_TEXT
    tmp = out.with_name(f".{out.name}.tmp{os.getpid()}")
    ops = tables.ops
    with tmp.open("w", encoding="utf-8") as f:
        f.write(f"# {run_dir.name}: {len(ops)} ops in time order. {zero_says}.\n"
                "# seconds  wall-clock  process  type  f  records (topic-partition@offset=value) / value  error\n")
        open_: dict[str, int] = {}  # process -> its open invoke's index (a completion shows its invoke's writes)
        for start in range(0, len(ops), BATCH):
            batch = ops.iloc[start:start + BATCH]
            cols = {n: batch[n].tolist() for n in ("index", "process", "type", "f", "error")}
            last = cols["index"][-1]
            w, r = writes.upto(last), reads.upto(last)
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
                mine = r.get(i) or w.get(invoke)
                what = _what(mine, typ != INVOKE) if mine else _value(fn, invoke, inits, faults)
                wall = f"{walls[k][11:]}  " if walls is not None else ""
                lines.append(f"{secs[k]:12.6f}  {wall}{proc:<20} {typ:<6} {fn:<13} {what}"
                             f"{'  error=' + str(err) if isinstance(err, str) and err else ''}\n")
            f.writelines(lines)
    os.replace(tmp, out)
    return out


def _what(group: tuple[list[tuple[str, str, str]], int], offsets: bool) -> str:
    records, n = group
    shown = " ".join(f"{tp}{off if offsets else ''}={v}" for tp, off, v in records)
    return shown + (f" (+{n - len(records)} more)" if n > len(records) else "")


def _value(f: str, invoke: int, inits: dict[Any, Any], faults: Iterator[dict[str, Any]]) -> str:
    """What an op without records carried: an init's transactional.id, a fault event's kind and detail."""
    if f == INIT:
        return str(inits.get(invoke, ""))
    if f == FAULT:
        event = next(faults, None)
        return json.dumps(event["value"], separators=(",", ":"), default=str) if event else ""
    return ""
