"""``history.txt``: the history as a person greps it (Jepsen's habit), one line per op in time
order: time, wall-clock time (when known), process, type, f, what it carried, error::

    12.004311  06:18:30.004  txn-producer-0.0  invoke  txn   eos-a-1=txn-producer-0.0-3-0 eos-b-0=...
    12.009870  06:18:30.009  txn-producer-0.0  ok      txn   eos-a-1@17=txn-producer-0.0-3-0 ...

It lives at the run folder's root, beside ``history/`` (the JSON lines it is made from) and
``history.parquet/`` (the tables it is read from), as Jepsen's store keeps ``history.txt`` beside
its results. It is streamed from the Parquet tables batch by batch, so memory stays bounded by
one batch plus the run's distinct values (an Arrow string array); a line names at most
``MAX_RECORDS`` records (a final scan holds every record of the run) and says how many more.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

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

    batches: Iterator[Any]
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
                batch = next(self.batches, None)
                if batch is None:
                    return out
                self.pending = {n: c.to_numpy(zero_copy_only=False) for n, c in zip(batch.schema.names, batch.columns)}
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


def _records(values: Any) -> Any:
    """A renderer of (topic, partition, offset, vid) rows as (``topic-partition``, ``@offset`` or
    empty when unknown, value): an invoke's line leaves the offset out (it was not known yet)."""
    def render(cols: dict[str, np.ndarray], rows: np.ndarray) -> list[tuple[str, str, str]]:
        vals = values.take(cols["vid"][rows]).to_pylist() if len(rows) else []
        offs = cols["offset"][rows]
        return [(f"{t}-{p}", "" if o is None or o != o else f"@{int(o)}", str(v))
                for t, p, o, v in zip(cols["topic"][rows], cols["partition"][rows], offs, vals)]
    return render


def write_history_text(run_dir: Path, zero_ns: int = 0, wall_zero_ns: int | None = None,
                       zero_says: str = "t=0 is the runner's start") -> Path:
    """Write ``run_dir/history.txt`` from the run's Parquet history (made first if missing or
    stale); ``zero_ns``: the history-clock instant that is t=0, ``wall_zero_ns``: its wall-clock
    time (ns since the epoch, local time), for the second column."""
    import pyarrow.parquet as pq

    store.ensure_parquet(run_dir)
    values = pq.read_table(store.table_file(run_dir, store.VALUES_TABLE), columns=["value"]).column("value")
    rec_cols = ["topic", "partition", "offset", "vid"]
    writes = _Grouped(pq.ParquetFile(store.table_file(run_dir, "writes")).iter_batches(BATCH, columns=["txn", *rec_cols]),
                      "txn", _records(values))
    reads = _Grouped(pq.ParquetFile(store.table_file(run_dir, "reads")).iter_batches(BATCH, columns=["op", *rec_cols]),
                     "op", _records(values))
    inits = dict(zip(*(store.read_table(run_dir, "inits", columns=["op", "txn_id"])[c] for c in ("op", "txn_id"))))
    faults = iter(store.fault_events(store.read_table(run_dir, "faults")))
    out = run_dir / HISTORY_TEXT
    tmp = out.with_name(f".{out.name}.tmp{os.getpid()}")
    ops = pq.ParquetFile(store.table_file(run_dir, "ops"))
    with tmp.open("w", encoding="utf-8") as f:
        f.write(f"# {run_dir.name}: {ops.metadata.num_rows} ops in time order. {zero_says}.\n"
                "# seconds  wall-clock  process  type  f  records (topic-partition@offset=value) / value  error\n")
        open_: dict[str, int] = {}  # process -> its open invoke's index (a completion shows its invoke's writes)
        for batch in ops.iter_batches(BATCH, columns=["index", "time", "process", "type", "f", "error"]):
            # to_numpy then tolist: Arrow's to_pylist of a dictionary column is ten times slower
            cols = {n: c.to_numpy(zero_copy_only=False).tolist() for n, c in zip(batch.schema.names, batch.columns)}
            last = cols["index"][-1]
            w, r = writes.upto(last), reads.upto(last)
            times = np.array(cols["time"], dtype=np.int64)
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
                             f"{'  error=' + str(err) if err else ''}\n")
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
