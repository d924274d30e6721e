"""Jepsen's cycle anomalies G0 and G1c (``g0``, ``g1c``), with Kafka's transactions taken for what
they are: intervals, not points. docs/CYCLES.md says why and proves what follows; in short:

Jepsen's Kafka checker draws ww (offset order in a partition), wr (a read of another's write),
process and realtime edges between transactions and asks Elle for cycles. Elle treats each
transaction as one instant; a Kafka transaction is not: its records land one by one between its
invoke and its commit. Two transactions that write two partitions in opposite orders form a ww
cycle (G0) on a correct Kafka, which is why Jepsen lets G0 (and, with ww edges, G1c) pass. Here the
graph is between *events* instead: each transaction's invoke, each record it appended (ordered in
its partition by offset), its commit, its ok completion; each read (a poll's completion, a copier
transaction's invoke: it polled before). Every edge is "happened before"; a cycle is a
contradiction. Between two observed instants (an invoke, a completion, a read) a path runs through
one partition only, so every cycle holds one of two short witnesses, each found by a running
maximum per partition:

- **g0**: a transaction ``T1`` completed ``ok`` at ``e1``; a transaction ``T2`` invoked at or after
  ``e1`` has a record before one of ``T1``'s in a partition. Cycle ``T1 -rt-> T2 -ww-> T1``
  (``-process`` when one process ran both, ``-realtime`` otherwise). One count per such ``T1``.
- **g1c**: a read ``R`` (a poll, or a copier's transaction) of ``T1``'s value was done by ``r``; a
  transaction ``T2`` invoked at or after ``r`` has a record before one of ``T1``'s
  (``T1 -wr-> R -rt-> T2 -ww-> T1``); or ``T2`` is ``R`` itself, a copier whose own record precedes
  ``T1``'s (``T1 -wr-> R -ww-> T1``, plain G1c); or ``T1`` was invoked at or after ``r``
  (``T1 -wr-> R -rt-> T1``). One count per (writer, reader) pair.

A value's place in the version order is its first offset in the final read_committed scan, as in
Jepsen (a duplicate further on is ``duplicate``'s). Only ``ok`` transactions have a completion that
bounds their records (an unknown or failed one may still land, which other checks judge).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pandas as pd

from harness.history.model import OFFSET_BITS, OK, Position

NEVER = np.iinfo(np.int64).max  # a time that never came (an op that never completed ok)
NO_SOURCE = np.iinfo(np.int64).min  # a record no recorded transaction wrote: bounds nothing

NO_OK_TXN = "no transaction completed ok (nothing whose completion bounds its records)"
NO_READS_OF_WRITES = "no poll and no copier read a value a recorded transaction wrote"

G0, G1C = "G0", "G1c"
WW, WR, REALTIME, PROCESS = "ww", "wr", "realtime", "process"


@dataclass(frozen=True)
class CycleOp:
    """A transaction or a poll in a cycle: its history index and process."""

    op: int
    process: str


@dataclass(frozen=True)
class Fact:
    """What a cycle says of a transaction: its op and process, its invoke time, its ok completion
    time (``NEVER`` if it did not complete ok)."""

    op: int
    process: str
    invoked: int
    ended: int


@dataclass(frozen=True)
class Record:
    """A record in the version order: its packed position and its writer (the engine's key of a
    transaction: a row of ``txns`` on the default engine, its op on Spark)."""

    pos: int
    txn: int


class Records(Protocol):
    """What an example needs of the version order and the transactions (each engine answers from its
    own tables); transactions are named by the engine's key."""

    def fact(self, txn: int) -> Fact:
        """The transaction's ``Fact``."""

    def of_txn(self, txn: int) -> list[Record]:
        """The transaction's records (first offsets of its values), by position."""

    def nearest_before(self, rec: Record, at_least: int, of: int | None = None) -> Record | None:
        """The record nearest below ``rec`` in its partition whose writer was invoked at or after
        ``at_least`` (and, with ``of``, was that transaction); None if there is none."""

    def position(self, pos: int) -> Position:
        """A packed position as a position object."""


@dataclass(frozen=True)
class Txns:
    """The facts of the ``txns`` table's transactions, by row (the default engine's keys)."""

    op: np.ndarray        # history index of the invoke
    process: pd.Series    # process name (looked up for the few transactions an example names)
    invoked: np.ndarray   # invoke time
    ended: np.ndarray     # ok completion time, NEVER if not ok

    def fact(self, row: int) -> Fact:
        return Fact(int(self.op[row]), str(self.process.iloc[row]), int(self.invoked[row]), int(self.ended[row]))


def txn_facts(txns: pd.DataFrame) -> Txns:
    """``Txns`` of the ``txns`` table, in the table's order."""
    ok = (txns["outcome"] == OK).to_numpy(bool) & txns["complete_time"].notna().to_numpy(bool)
    ended = np.full(len(txns), NEVER, dtype=np.int64)
    ended[ok] = txns["complete_time"].to_numpy()[ok].astype(np.int64)
    return Txns(txns["txn"].to_numpy(np.int64), txns["process"], txns["invoke_time"].to_numpy(np.int64), ended)


def prefix_max(src: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Per record (``pos`` sorted), the latest writer invoke time among the records at or below it in
    its partition: what a record's writer must have finished after, were the log in time order."""
    return pd.Series(src).groupby(pos >> OFFSET_BITS, sort=False).cummax().to_numpy(np.int64)


def latest_before(rec_tix: np.ndarray, pm: np.ndarray, invoked: np.ndarray) -> np.ndarray:
    """Per transaction row, the latest invoke among the writers of records at or below any of its
    records (its own invoke at least): ``M`` of docs/CYCLES.md."""
    m = invoked.copy()
    has = rec_tix >= 0
    np.maximum.at(m, rec_tix[has], pm[has])
    return m


def _name(family: str, steps: list[dict[str, Any]]) -> str:
    kinds = {s["kind"] for s in steps}
    return family + ("-realtime" if REALTIME in kinds else "-process" if PROCESS in kinds else "")


def _time_step(a: CycleOp, b: CycleOp, done: int, invoked: int, done_key: str) -> dict[str, Any]:
    """``a`` was done (completed, or read what it read) by ``done``, before ``b`` was invoked."""
    return {"kind": PROCESS if a.process == b.process else REALTIME, "from": a.op, "to": b.op, done_key: int(done),
            "invoked": int(invoked)}


def _ww_step(recs: Records, a: CycleOp, b: CycleOp, earlier: Record, later: Record) -> dict[str, Any]:
    return {"kind": WW, "from": a.op, "to": b.op, "earlier": recs.position(earlier.pos), "later": recs.position(later.pos)}


def _cycle(family: str, ops: list[CycleOp], steps: list[dict[str, Any]]) -> dict[str, Any]:
    return {"anomaly": _name(family, steps), "ops": [o.op for o in ops], "processes": [o.process for o in ops],
            "steps": steps}


def _op(f: Fact) -> CycleOp:
    return CycleOp(f.op, f.process)


def _witness(recs: Records, of: int, at_least: int, only: int | None = None) -> tuple[Record, Record] | None:
    """A record of transaction ``of`` and one nearest below it whose writer was invoked at or after
    ``at_least`` (``only``: written by that transaction), the first such by position."""
    for later in recs.of_txn(of):
        earlier = recs.nearest_before(later, at_least, only)
        if earlier is not None:
            return earlier, later
    return None


def g0_example(recs: Records, txn: int) -> dict[str, Any]:
    """The cycle of a transaction whose ok completion a later one's record contradicts."""
    f1 = recs.fact(txn)
    found = _witness(recs, txn, f1.ended)
    if found is None:
        raise AssertionError(f"op {f1.op}: no record contradicts its completion (the engines disagree)")
    earlier, later = found
    f2 = recs.fact(earlier.txn)
    t1, t2 = _op(f1), _op(f2)
    return _cycle(G0, [t1, t2], [_time_step(t1, t2, f1.ended, f2.invoked, "completed"),
                                  _ww_step(recs, t2, t1, earlier, later)])


@dataclass(frozen=True)
class Read:
    """A read of transaction ``writer``'s value by ``reader`` (a poll, or the copier's transaction
    ``reader_txn``; -1 for a poll), done by ``done``; what it got, ``value`` at ``pos``."""

    writer: int
    reader: CycleOp
    reader_txn: int
    done: int
    value: str
    pos: int


def g1c_example(recs: Records, read: Read) -> dict[str, Any]:
    """The cycle of a read whose value's writer could not have committed before it: its shortest
    form (the writer invoked after the read; the copier's own record first; another writer's)."""
    f1, r = recs.fact(read.writer), read.reader
    t1 = _op(f1)
    wr = {"kind": WR, "from": t1.op, "to": r.op, "value": read.value, "position": recs.position(read.pos)}
    if f1.invoked >= read.done:
        return _cycle(G1C, [t1, r], [wr, _time_step(r, t1, read.done, f1.invoked, "read_by")])
    if read.reader_txn >= 0:
        own = _witness(recs, read.writer, read.done, read.reader_txn)
        if own is not None:
            return _cycle(G1C, [t1, r], [wr, _ww_step(recs, r, t1, *own)])
    found = _witness(recs, read.writer, read.done)
    if found is None:
        raise AssertionError(f"op {r.op}: no record contradicts its read of op {t1.op} (the engines disagree)")
    earlier, later = found
    f2 = recs.fact(earlier.txn)
    t2 = _op(f2)
    return _cycle(G1C, [t1, r, t2], [wr, _time_step(r, t2, read.done, f2.invoked, "read_by"),
                                      _ww_step(recs, t2, t1, earlier, later)])
