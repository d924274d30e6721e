"""``g0`` and ``g1c`` on the default engine (numpy over the tables); what they find and why it is a
contradiction: harness/checker/cycles.py and docs/CYCLES.md."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from harness.checker.arrays import span
from harness.checker.checks import MAX_EXAMPLES, NO_COMMITTED_RECORDS, Found, _position_at, cols, poll_times
from harness.checker.copies import copy_input
from harness.checker.cycles import (
    NEVER,
    NO_OK_TXN,
    NO_READS_OF_WRITES,
    NO_SOURCE,
    CycleOp,
    Fact,
    Read,
    Record,
    Txns,
    g0_example,
    g1c_example,
    latest_before,
    prefix_max,
    txn_facts,
)
from harness.history.model import COPY_PREFIX, OFFSET_BITS, TOPIC_SHIFT, Position
from harness.history.store import Tables, pack, values_at


@dataclass
class VersionOrder:
    """Each partition's records in offset order (a value at its first offset of the final
    read_committed scan), their writers, and each transaction's ``M``."""

    t: Tables
    tx: Txns
    pos: np.ndarray       # sorted
    vid: np.ndarray
    rec_tix: np.ndarray   # writer's row in txns, -1: no recorded writer
    src: np.ndarray       # writer's invoke time, NO_SOURCE without one
    m: np.ndarray         # per transaction row: latest invoke of a writer at or below its records
    writer: np.ndarray    # per value id: its writer's row in txns, -1: none

    def fact(self, txn: int) -> Fact:
        return self.tx.fact(txn)

    def of_txn(self, txn: int) -> list[Record]:
        return [Record(int(self.pos[i]), txn) for i in np.flatnonzero(self.rec_tix == txn)]

    def nearest_before(self, rec: Record, at_least: int, of: int | None = None) -> Record | None:
        at = int(np.searchsorted(self.pos, rec.pos))
        start = int(np.searchsorted(self.pos, (rec.pos >> OFFSET_BITS) << OFFSET_BITS))
        hit = self.src[start:at] >= at_least
        if of is not None:
            hit &= self.rec_tix[start:at] == of
        found = np.flatnonzero(hit)
        if not len(found):
            return None
        j = start + int(found[-1])
        return Record(int(self.pos[j]), int(self.rec_tix[j]))

    def position(self, pos: int) -> Position:
        return _position_at(self.t, pos)


def version_order(t: Tables) -> VersionOrder:
    """``VersionOrder`` of ``t``, built once per check run."""
    if "version_order" not in t.cache:
        t.cache["version_order"] = _build(t)
    vo: VersionOrder = t.cache["version_order"]
    return vo


def _build(t: Tables) -> VersionOrder:
    c = cols(t)
    tx = txn_facts(t.txns)
    writer = np.full(c.n_values, -1, dtype=np.int64)
    known = c.w_tix >= 0
    writer[c.w_vid[known]] = c.w_tix[known]
    fc = np.flatnonzero(c.fc)
    vid, pos = c.r_vid[fc], c.r_pos[fc]
    if c.in_fc.sum() < len(fc):  # a value there twice: its first offset only (a later copy is a duplicate's)
        lo, _ = span(vid, pos, c.n_values)
        first = pos == lo[vid]
        vid, pos = vid[first], pos[first]
    if len(pos) > 1 and not (pos[1:] >= pos[:-1]).all():
        order = np.argsort(pos, kind="stable")
        vid, pos = vid[order], pos[order]
    one = np.r_[True, pos[1:] != pos[:-1]] if len(pos) else np.zeros(0, dtype=bool)  # a position once
    vid, pos = vid[one], pos[one]
    rec_tix = writer[vid]
    src = np.full(len(pos), NO_SOURCE, dtype=np.int64)
    src[rec_tix >= 0] = tx.invoked[rec_tix[rec_tix >= 0]]
    m = latest_before(rec_tix, prefix_max(src, pos), tx.invoked)
    return VersionOrder(t, tx, pos, vid, rec_tix, src, m, writer)


def g0(t: Tables) -> Found:
    """A transaction that completed ok before another was invoked, yet has a record after one of
    the other's in a partition (Jepsen's G0-process / G0-realtime, judged with transactions as
    intervals). One count per such transaction."""
    vo = version_order(t)
    if not len(vo.pos):
        return Found(0, skipped=NO_COMMITTED_RECORDS)
    done = vo.tx.ended != NEVER
    if not done.any():
        return Found(0, skipped=NO_OK_TXN)
    bad = np.flatnonzero(done & (vo.m >= vo.tx.ended))
    return Found(len(bad), [g0_example(vo, int(i)) for i in bad[:MAX_EXAMPLES]])


def g1c(t: Tables) -> Found:
    """A read (a poll, or a copier's transaction) of a value whose writer could not have committed
    before it: a transaction invoked after the read has a record before one of the writer's, or
    the writer itself was invoked after it (Jepsen's G1c, -process, -realtime). One count per
    (writer, reader) pair."""
    vo = version_order(t)
    reads = [r for r in (_poll_reads(t, vo), _copier_reads(t, vo)) if r is not None]
    if not reads:
        return Found(0, skipped=NO_READS_OF_WRITES)
    # the few contradicted reads, then a table of them alone
    bad = pd.concat([r.rows(np.flatnonzero(r.contradicted(vo.m))) for r in reads], ignore_index=True)
    if bad.empty:
        return Found(0)
    pairs = (bad.assign(writer_op=vo.tx.op[bad["writer"].to_numpy(np.int64)])
             .sort_values(["reader_op", "writer_op", "pos"], kind="stable").drop_duplicates(["writer", "reader_op"]))
    first = pairs.head(MAX_EXAMPLES)
    values = values_at(t, first["vid"].to_numpy(np.int64))
    examples = [g1c_example(vo, Read(int(r["writer"]), CycleOp(int(r["reader_op"]), str(r["reader_process"])),
                                     int(r["reader_txn"]), int(r["done"]), str(v), int(r["pos"])))
                for r, v in zip(first.to_dict("records"), values)]
    return Found(len(pairs), examples)


@dataclass
class Reads:
    """Reads of recorded writers' values, a row each: the writer's row in txns, when the read was
    done, the reader's transaction's row (a copier's; -1 for a poll); the rest is gathered for the
    few rows asked for (``rows``)."""

    writer: np.ndarray
    done: np.ndarray
    reader_txn: np.ndarray
    #: rows -> reader_op, reader_process, vid, pos of those rows
    rest: Callable[[np.ndarray], dict[str, Any]]

    def contradicted(self, m: np.ndarray) -> np.ndarray:
        """Which reads the writer's ``M`` contradicts (a reader's own value is not a read)."""
        late: np.ndarray = (m[self.writer] >= self.done) & (self.done != NEVER) & (self.writer != self.reader_txn)
        return late

    def rows(self, rows: np.ndarray) -> pd.DataFrame:
        return pd.DataFrame({"writer": self.writer[rows], "done": self.done[rows], "reader_txn": self.reader_txn[rows],
                             **self.rest(rows)})


def _strings(t: Tables, vids: np.ndarray) -> Any:
    """The values of ``vids`` as an Arrow array: taken from the values in memory without a Python
    string each (900k copies: 0.6 s less), else ``values_at``'s."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if t.values is not None and isinstance(t.values.array, pd.arrays.ArrowStringArray):
        return pc.take(pa.array(t.values.array), pa.array(vids, type=pa.int64()))
    return pa.array(values_at(t, vids), type=pa.string())


def _poll_reads(t: Tables, vo: VersionOrder) -> Reads | None:
    """Every polled record of a recorded writer's value, done by its poll's completion."""
    c = cols(t)
    rows = np.flatnonzero(c.poll)
    rows = rows[vo.writer[c.r_vid[rows]] >= 0]
    if not len(rows):
        return None

    def rest(some: np.ndarray) -> dict[str, Any]:
        at = rows[some]
        return {"reader_op": t.reads["op"].to_numpy(np.int64)[at], "reader_process": t.reads["process"].iloc[at].to_numpy(),
                "vid": c.r_vid[at], "pos": c.r_pos[at]}

    return Reads(vo.writer[c.r_vid[rows]], poll_times(t, rows), np.full(len(rows), -1, dtype=np.int64), rest)


def _copier_reads(t: Tables, vo: VersionOrder) -> Reads | None:
    """Every input a copier's transaction copied (its output values name them), done by the
    transaction's invoke (it polled them before), where the final scan holds that value there."""
    c = cols(t)
    if not len(c.w_tid) or not len(vo.pos):
        return None
    # the copiers' output topics as copy-exactly-once finds them: their first committed record is a copy
    fc = np.flatnonzero(c.fc)
    topic_of = pd.Series(c.r_pos[fc] >> TOPIC_SHIFT).drop_duplicates()  # each topic's first row (hashed, not sorted)
    tids, first = topic_of.to_numpy(), topic_of.index.to_numpy()
    firsts = values_at(t, c.r_vid[fc[first]])
    copy_tids = tids[[str(v).startswith(COPY_PREFIX + "/") for v in firsts]]
    rows = np.flatnonzero(np.isin(c.w_tid, copy_tids) & (c.w_tix >= 0))
    if not len(rows):
        return None
    import pyarrow as pa  # here: only a history with a copier needs Arrow's strings
    import pyarrow.compute as pc

    inputs = copy_input(_strings(t, c.w_vid[rows]))
    topics = t.reads[["topic", "tid"]].drop_duplicates("topic")  # an input is read in the final scan
    names = pa.array(topics["topic"].astype(str).tolist(), type=pa.string())
    known_at = pc.index_in(inputs.topic, value_set=names).to_numpy(zero_copy_only=False)
    known = ~np.isnan(known_at.astype("float64"))
    tid = topics["tid"].to_numpy(np.int64)[known_at[known].astype(np.int64)]
    rows = rows[inputs.at[known]]
    pos = pack(tid, inputs.partition[known], inputs.offset[known])
    at = np.minimum(np.searchsorted(vo.pos, pos), len(vo.pos) - 1)
    there = vo.pos[at] == pos
    # what it copied is there
    copied = inputs.value.take(pa.array(np.flatnonzero(known)[there], type=pa.int64()))
    there[there] = pc.equal(_strings(t, vo.vid[at[there]]), copied).to_numpy(zero_copy_only=False)
    at, rows = at[there], rows[there]
    writer = vo.rec_tix[at]
    mine = writer >= 0
    if not mine.any():
        return None
    at, reader = at[mine], c.w_tix[rows[mine]]

    def rest(some: np.ndarray) -> dict[str, Any]:
        return {"reader_op": vo.tx.op[reader[some]], "reader_process": vo.tx.process.iloc[reader[some]].to_numpy(),
                "vid": vo.vid[at[some]], "pos": vo.pos[at[some]]}

    return Reads(writer[mine], vo.tx.invoked[reader], reader, rest)
