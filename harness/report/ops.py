"""From an anomaly to its ops: the history ops a check example names (the write, the read, the
commit or abort), with their times on the report's clock, the fault windows they ran in, and the
per-process lanes of ops around them.

Examples name ops by history ``index`` (``writer_op``, ``txn``, ``read_op``, ``op``, ...) or by the
value written (``value``, ``values``); this module looks them up in the history's tables, so run
folders checked before this existed render the same way. Nothing here changes the verdict."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from harness.history import store
from harness.history.model import FAIL, INFO, INVOKE, NEMESIS, OK, TXN
from harness.history.schema import PAIRED
from harness.report.clock import Clock

#: Example fields that name an op by its history index, and the part it played.
INDEX_ROLES = (("writer_op", "write"), ("txn", "write"), ("earlier_txn", "earlier write"), ("read_op", "read"),
               ("op", "read"))
#: Up to this many examples (over all checks) get their ops looked up and marked.
MAX_MARKED = 12


@dataclass
class OpSpan:
    """One op an example names, invoke to completion, in report seconds."""

    role: str
    index: int
    process: str
    f: str
    start_s: float
    end_s: float | None  # None: never completed (its outcome is unknown)
    outcome: str
    commit_s: float | None = None  # a transaction's commit_transaction call
    #: the index the example named (a read's completion; ``index`` is always the invoke's)
    named: int | None = None

    def describe(self, clock: Clock) -> str:
        """``write p1 txn #4: invoked t=0.004 s (06:18:19.004), commit called t=…, committed t=0.005 s (…)``."""
        parts = [f"{self.role} {self.process} {self.f} #{self.named if self.named is not None else self.index}: invoked {_at(self.start_s, clock)}"]
        if self.commit_s is not None:
            parts.append(f"commit called {_at(self.commit_s, clock)}")
        parts.append(f"{_ended(self)} {_at(self.end_s, clock)}" if self.end_s is not None else "never completed")
        return ", ".join(parts)


def _at(t_s: float, clock: Clock) -> str:
    wall = clock.wall_text(t_s)
    return f"t={t_s:.3f} s" + (f" ({wall})" if wall else "")


def _ended(span: OpSpan) -> str:
    if span.f == TXN:
        return {OK: "committed", FAIL: "aborted"}.get(span.outcome, "outcome unknown")
    return {OK: "done", FAIL: "failed"}.get(span.outcome, "outcome unknown")


@dataclass
class Marked:
    """One check example placed in time: its ops and the faults active while they ran."""

    label: str  # A1, A2, ... (in the order of the page's example tables)
    check: str
    example: int  # its place among the check's examples
    spans: list[OpSpan]
    #: fault numbers (F1 = 1) whose window overlaps any of the example's ops
    faults: list[int] = field(default_factory=list)
    #: (topic, partition) the example names, for the log excerpts
    partitions: list[tuple[str, int]] = field(default_factory=list)

    @property
    def start_s(self) -> float:
        return min(s.start_s for s in self.spans)

    @property
    def end_s(self) -> float:
        return max(s.end_s if s.end_s is not None else s.start_s for s in self.spans)


class HistoryColumns:
    """The columns of the history the lookups need: every op's index, time, process, type and f,
    and the transactions; the values written only when an example names one."""

    def __init__(self, ops: pd.DataFrame, txns: pd.DataFrame, txns_of_values: Callable[[list[str]], dict[str, int]]):
        self.ops = ops.sort_values("index", kind="stable").reset_index(drop=True)
        self.txns = txns.set_index("txn")
        self.txns_of_values = txns_of_values

    @classmethod
    def of_tables(cls, tables: store.Tables) -> HistoryColumns:
        """From the run's tables (``store.load``'s)."""
        ops_cols, tx_cols = ["index", "time", "process", "type", "f"], ["txn", "process", "f", "outcome", "invoke_time",
                                                                        "complete_time", "commit_at"]
        return cls(tables.ops[ops_cols], tables.txns[tx_cols], lambda values: _txns_of_values(tables, values))

    def span(self, index: int, role: str, clock: Clock) -> OpSpan | None:
        """The op at history ``index`` (a transaction by its invoke, any other op by its invoke or
        completion) from invoke to completion; None when the history has no such op."""
        if index in self.txns.index:
            tx = self.txns.loc[[index]].iloc[0]  # the row (by a list: a Series, never a frame, to the type checker)
            return OpSpan(role, index, str(tx["process"]), str(tx["f"]), clock.s(int(tx["invoke_time"])),
                          _maybe_s(tx["complete_time"], clock), str(tx["outcome"]), _maybe_s(tx["commit_at"], clock))
        if not 0 <= index < len(self.ops) or int(self.ops["index"].to_numpy()[index]) != index:
            return None
        op = self.ops.iloc[index]
        same = self.ops[(self.ops["process"] == op["process"]).to_numpy()]
        if op["type"] == INVOKE:
            after = same[same["index"] > index].head(1)
            done = after.iloc[0] if len(after) and after.iloc[0]["type"] != INVOKE else None
            invoke = op
        else:
            before = same[(same["index"] < index) & (same["type"] == INVOKE)].tail(1)
            invoke, done = (before.iloc[0] if len(before) else op), op
        return OpSpan(role, int(invoke["index"]), str(op["process"]), str(op["f"]), clock.s(int(invoke["time"])),
                      clock.s(int(done["time"])) if done is not None else None,
                      str(done["type"]) if done is not None else INFO)


def _maybe_s(t: Any, clock: Clock) -> float | None:
    return None if pd.isna(t) else clock.s(int(t))


def _first_txn(writes: pd.DataFrame, key: str) -> dict[str, int]:
    first = writes.drop_duplicates(key)
    return {str(k): int(t) for k, t in zip(first[key], first["txn"])}


def _txns_of_values(tables: store.Tables, values: list[str]) -> dict[str, int]:
    """value -> the transaction (invoke index) that wrote it: by the writes' values when they carry
    them, else by their value ids (the values of Parquet-loaded tables stay on disk)."""
    if not values:
        return {}
    writes = tables.writes
    if "value" in writes.columns:
        return _first_txn(writes[writes["value"].isin(values)], "value")
    by_vid = store.vids_of(tables, values)
    mine = writes.loc[writes["vid"].isin(list(by_vid)), ["txn", "vid"]]
    return _first_txn(mine.assign(value=mine["vid"].map(by_vid)), "value")


def example_spans(ex: dict[str, Any], history: HistoryColumns, clock: Clock) -> list[OpSpan]:
    """The ops ``ex`` names, by index first, then (when no write is named) the writes of its values."""
    spans: list[OpSpan] = []
    seen: set[int] = set()

    def add(index: Any, role: str) -> None:
        if isinstance(index, (int, np.integer)) and not isinstance(index, bool) and int(index) not in seen:
            span = history.span(int(index), role, clock)
            if span is not None:
                span.named = int(index)
                seen.add(span.index)
                spans.append(span)

    for key, role in INDEX_ROLES:
        add(ex.get(key), role)
    for op in ex.get("ops") or []:  # a cycle's ops (g0, g1c)
        add(op, "in the cycle")
    if not any(s.role == "write" for s in spans):
        values = [v for v in [ex.get("value"), *(ex.get("values") or [])] if isinstance(v, str)]
        for value, txn in history.txns_of_values(values).items():
            add(txn, f"write of {value}")
    return spans


def active_faults(start_s: float, end_s: float, windows: list[tuple[float, float]]) -> list[int]:
    """The fault numbers (1-based) whose window ``(start, end)`` overlaps ``[start_s, end_s]``."""
    return [n for n, (a, b) in enumerate(windows, 1) if a <= end_s and start_s <= b]


@dataclass
class Bar:
    """One op on a process's lane: invoke to completion, clipped to the view."""

    process: str
    f: str
    index: int
    start_s: float
    end_s: float
    outcome: str  # ok / fail / info, or "open": not completed within the view


def lane_bars(history: HistoryColumns, clock: Clock, lo_s: float, hi_s: float) -> list[Bar]:
    """Each process's ops between ``lo_s`` and ``hi_s`` as bars (the nemesis's events are not ops
    of a client: its faults are drawn across all lanes instead)."""
    lo_ns, hi_ns = clock.zero_ns + lo_s * 1e9, clock.zero_ns + hi_s * 1e9
    t = history.ops["time"].to_numpy(np.int64)
    sel = history.ops.iloc[np.searchsorted(t, lo_ns, "left"):np.searchsorted(t, hi_ns, "right")]
    sel = sel[(sel["process"] != NEMESIS).to_numpy()]
    bars: list[Bar] = []
    open_: dict[str, tuple[float, str, int]] = {}
    for idx, tm, proc, typ, f in zip(sel["index"], sel["time"], sel["process"].astype(str), sel["type"].astype(str),
                                     sel["f"].astype(str)):
        at = clock.s(int(tm))
        if typ == INVOKE:
            open_[proc] = (at, f, int(idx))
            continue
        # an event of no invoke (fenced, scan, ...) is an instant; a completion whose invoke came
        # before the view starts at the view's left edge
        start, f0, first = open_.pop(proc, (lo_s if f in PAIRED else at, f, int(idx)))
        bars.append(Bar(proc, f0, first, start, at, typ))
    bars += [Bar(p, f, i, s, hi_s, "open") for p, (s, f, i) in open_.items()]
    return bars
