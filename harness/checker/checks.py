"""The anomaly checks, column-wise over the history's tables (no Python loop per value);
each check's record (harness/checker/catalog.py) says what its findings mean.

Each check takes the ``Tables`` and returns a ``Found``: how many anomalies and up to
``MAX_EXAMPLES`` examples that name the ops (history ``index``), processes, partitions and offsets
involved, so a person can find them in the history.

Views used throughout:
- *committed reads*: every reader poll (readers are read_committed by design — a reader configured
  otherwise is exactly what ``aborted-read`` exists to catch) and the final ``read_committed`` scan;
- *final committed*: the final ``read_committed`` scan alone — what Kafka kept, after heal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from harness.checker import copies
from harness.checker.arrays import NO_OFFSET, OUTCOME_CODES, Cols, build, span
from harness.history.model import FAIL, INFO, OK, TOPIC_SHIFT, Position, position
from harness.history.store import Tables, pack, unpack, values_at, with_values

MAX_EXAMPLES = 5

# Why a check had nothing to look at (``Found.skipped``): it counts 0 and says so, rather than pass
# for a check that looked and found nothing. Both engines give the same reasons.
NO_COMMITTED_READS = "no read_committed reads (no poll, no final read_committed scan)"
NO_OK_WRITES = "no value acknowledged committed (ok) or seen committed by a reader"
NO_FAILED_WRITES = "no value of a transaction that definitely aborted (fail)"
NO_TXN_WRITES = "no value written inside a transaction"
NO_POSITIONS = "no offset was read or acknowledged"
NO_ACKED_OFFSETS = "no offset acknowledged to a committed transaction"
NO_OFFSETS = "no offset was acknowledged to a writer"
NO_POLLS = "no polls (no reader in assign mode)"
NO_COMMITTED_RECORDS = "the final read_committed scan holds no record"
NO_SECOND_INSTANCE = "no transactional.id was initialised by a second instance (nothing was fenced)"
NO_COPIER = "no copier output in the final read_committed scan"


class HistoryError(ValueError):
    """A check cannot judge the history, for a reason in the history itself, as documented (an app
    input with no recorded expected outputs, a contract function that failed in the run, an input
    that is not an integer): the verdict is unknown, said as an error of the history ("history
    error: ..."), not as a crash of the check, which reads as a bug of eos-chaos."""


@dataclass
class Found:
    count: int
    examples: list[dict[str, Any]] = field(default_factory=list)
    #: set when the history holds nothing this check could look at (it then counts 0 but says so)
    skipped: str | None = None
    #: an app contract's check: the findings of each app it judged (0 included), by the app's name;
    #: ``app-pipeline``: each chain's end-to-end findings, by its last stage (None: not an app's check)
    by_app: dict[str, int] | None = None


def _examples(df: pd.DataFrame, cols: list[str] | None = None) -> list[dict[str, Any]]:
    rows = (df[cols] if cols else df).head(MAX_EXAMPLES)
    return [{str(k): _plain(v) for k, v in r.items()} for r in rows.to_dict("records")]


def _plain(v: Any) -> Any:
    """JSON-friendly scalars (numpy ints, pandas NA, arrays of positions)."""
    if v is pd.NA or (isinstance(v, float) and np.isnan(v)):
        return None
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, (np.ndarray, list, tuple)):
        return [_plain(x) for x in v]
    return v


def cols(t: Tables) -> Cols:
    """The numpy view of ``t`` (built on first use, then cached on the tables)."""
    if "cols" not in t.cache:
        t.cache["cols"] = build(t)
    built: Cols = t.cache["cols"]
    return built


def final_committed(t: Tables) -> pd.DataFrame:
    return t.reads[cols(t).fc]


def topics_starting(t: Tables, prefix: str) -> list[int]:
    """The topic ids whose first record in the final read_committed scan has a value starting with
    ``prefix``: how the copiers' and the Spark job's checks find their output topics (a workload's
    output topic holds its kind of value only)."""
    if "first_committed" not in t.cache:  # per topic id, its first record's value: once for every check
        c = cols(t)
        rows = np.flatnonzero(c.fc)
        tids, first = np.unique(c.r_pos[rows] >> TOPIC_SHIFT, return_index=True)
        t.cache["first_committed"] = dict(zip(tids.tolist(), values_at(t, c.r_vid[rows[first]]).tolist()))
    firsts: dict[int, Any] = t.cache["first_committed"]
    return [tid for tid, value in firsts.items() if isinstance(value, str) and value.startswith(prefix)]


def _writes_at(t: Tables, rows: np.ndarray) -> pd.DataFrame:
    """Some writes with their transaction's outcome and process (for examples)."""
    w = with_values(t, t.writes.iloc[rows])
    tx = t.txns.set_index("txn")
    return w.assign(outcome=tx["outcome"].reindex(w["txn"]).to_numpy(), process=tx["process"].reindex(w["txn"]).to_numpy())


def _positions(df: pd.DataFrame) -> list[Position]:
    return [position(a, b, c) for a, b, c in zip(df["topic"], df["partition"], df["offset"])]


# ---------------------------------------------------------------------------------------------- checks
def duplicate(t: Tables) -> Found:
    """A value visible at more than one position to read_committed readers."""
    c = cols(t)
    if not c.cv.any():
        return Found(0, skipped=NO_COMMITTED_READS)
    lo, hi = span(c.r_vid[c.cv], c.r_pos[c.cv], c.n_values)
    dup = np.flatnonzero(lo < hi)
    if len(dup) == 0:
        return Found(0)
    examples = []
    for vid in dup[:MAX_EXAMPLES]:
        rows = with_values(t, t.reads[c.cv & (c.r_vid == vid)].drop_duplicates(["topic", "partition", "offset"]))
        w = _writes_at(t, np.flatnonzero(c.w_vid == vid))
        examples.append({"value": rows["value"].iloc[0], "positions": _positions(rows),
                         "writer_op": _plain(w["txn"].iloc[0]) if len(w) else None,
                         "writer_process": w["process"].iloc[0] if len(w) else None})
    return Found(len(dup), examples)


def lost_write(t: Tables) -> Found:
    """A committed value missing from the final committed scan: one of a transaction acknowledged
    committed (``ok``), or one a read_committed reader saw, which proves its transaction committed
    whatever its producer was told (``info``). Values at or past a partition's stalled LSO are not
    lost but unreadable; ``lso-stall`` reports them."""
    c = cols(t)
    committed = (c.w_out == OUTCOME_CODES[OK]) | ((c.w_out == OUTCOME_CODES[INFO]) & c.in_cv[c.w_vid])
    if not committed.any():
        return Found(0, skipped=NO_OK_WRITES)
    missing = committed & ~c.in_fc[c.w_vid]
    stalled_at = (t.meta.get("lso") or {}).get("stalled_at") or {}
    if stalled_at and missing.any():
        keys = t.writes["topic"].astype(str) + "-" + t.writes["partition"].astype(str)
        lso = keys.map(stalled_at).to_numpy(dtype=float, na_value=np.inf)  # inf: not stalled
        # where the value is: its acknowledged offset, else where a reader saw it
        seen_at = np.full(c.n_values, NO_OFFSET, dtype=np.int64)
        np.maximum.at(seen_at, c.r_vid[c.cv], c.r_off[c.cv])  # the highest, as the Spark engine takes
        at = np.where(c.w_off != NO_OFFSET, c.w_off, seen_at[c.w_vid])
        missing &= ~((at != NO_OFFSET) & (at >= lso))
    rows = np.flatnonzero(missing)
    if len(rows) == 0:  # the examples' frames cost a small history more than the check
        return Found(0)
    return Found(len(rows), _examples(_writes_at(t, rows[:MAX_EXAMPLES]),
                                      ["value", "txn", "process", "topic", "partition", "offset"]))


def aborted_read(t: Tables) -> Found:
    """A read_committed reader saw a value of a transaction that definitely aborted (``fail``)."""
    c = cols(t)
    if not c.cv.any():
        return Found(0, skipped=NO_COMMITTED_READS)
    if not (c.w_out == OUTCOME_CODES[FAIL]).any():
        return Found(0, skipped=NO_FAILED_WRITES)
    failed = np.zeros(c.n_values, dtype=bool)
    failed[c.w_vid[c.w_out == OUTCOME_CODES[FAIL]]] = True
    seen = c.cv & failed[c.r_vid]
    vids = np.unique(c.r_vid[seen])
    if len(vids) == 0:
        return Found(0)
    first = _first_reads(c, seen)
    reads = with_values(t, t.reads.iloc[first[:MAX_EXAMPLES]])
    w = _writes_at(t, np.flatnonzero(np.isin(c.w_vid, c.r_vid[first[:MAX_EXAMPLES]])))
    by_value = w.drop_duplicates("value").set_index("value")
    examples = [{"value": r["value"], "writer_op": _plain(by_value["txn"].get(r["value"])),
                 "writer_process": by_value["process"].get(r["value"]), "read_op": _plain(r["op"]),
                 "reader": r["process"], "topic": r["topic"], "partition": _plain(r["partition"]),
                 "offset": _plain(r["offset"])} for r in reads.to_dict("records")]
    return Found(len(vids), examples)


def _first_reads(c: Cols, seen: np.ndarray) -> np.ndarray:
    """The rows of ``seen`` (a mask over reads) that are each value's first, in history order."""
    return pd.DataFrame({"vid": c.r_vid[seen], "row": np.flatnonzero(seen)}).drop_duplicates("vid")["row"].to_numpy()


def precommitted_read(t: Tables) -> Found:
    """A read_committed poll that completed before the commit of the value's transaction was even
    invoked (Jepsen's ``precommitted-read``): one count per value. Times are the history's (one
    monotonic clock for every process of a run); a transaction whose commit was never invoked has
    nothing to compare with here (reading its values is ``aborted-read``'s or ``lost-write``'s)."""
    c = cols(t)
    if not c.poll.any():
        return Found(0, skipped=NO_POLLS)
    m = c.w_is_txn & (c.w_tix >= 0)
    commit_at = np.full(c.n_values, np.iinfo(np.int64).max, dtype=np.int64)  # max: never invoked
    if m.any():
        at = t.txns["commit_at"].to_numpy(dtype="float64", na_value=np.nan)[c.w_tix[m]]
        known = ~np.isnan(at)
        np.minimum.at(commit_at, c.w_vid[m][known], at[known].astype(np.int64))
    polls = np.flatnonzero(c.poll)
    done_at = poll_times(t, polls)
    invoked = commit_at[c.r_vid[polls]]
    early = polls[(done_at < invoked) & (invoked != np.iinfo(np.int64).max)]
    vids = np.unique(c.r_vid[early])
    if len(vids) == 0:
        return Found(0)
    mask = np.zeros(len(c.r_vid), dtype=bool)
    mask[early] = True
    first = _first_reads(c, mask)
    reads = with_values(t, t.reads.iloc[first[:MAX_EXAMPLES]])
    ex = [{"value": r["value"], "reader": r["process"], "read_op": _plain(r["op"]), "read_done": _plain(d),
           "commit_invoked": _plain(commit_at[v]), "position": position(r["topic"], r["partition"], r["offset"])}
          for r, d, v in zip(reads.to_dict("records"), poll_times(t, first[:MAX_EXAMPLES]), c.r_vid[first[:MAX_EXAMPLES]])]
    return Found(len(vids), ex)


def poll_times(t: Tables, rows: np.ndarray) -> np.ndarray:
    """Per read row of ``rows``, the time its op completed (the ops table's ``time`` at the read's
    ``op``); the maximum where the ops table does not have it (a synthetic history)."""
    if "op_times" not in t.cache:  # per op index, its time: once for every check that asks
        ops = t.ops
        times = np.full(int(ops["index"].max()) + 1 if len(ops) else 0, np.iinfo(np.int64).max, dtype=np.int64)
        times[ops["index"].to_numpy(np.int64)] = ops["time"].to_numpy(np.int64)
        t.cache["op_times"] = times
    times = t.cache["op_times"]
    op = t.reads["op"].to_numpy()[rows].astype(np.int64)
    inside = (op >= 0) & (op < len(times))  # a synthetic history's scans name ops past the table
    out = np.full(len(op), np.iinfo(np.int64).max, dtype=np.int64)
    out[inside] = times[op[inside]]
    return out


def phantom_read(t: Tables) -> Found:
    """A read_committed reader saw a value no process of the run ever sent (Jepsen's garbage read).
    Only topics some recorded send wrote to are looked at: a topic that only an unrecorded writer
    fills (Spark's own Kafka sink, the ``sink: builtin`` negative control) has nothing to compare with."""
    c = cols(t)
    if not c.cv.any():
        return Found(0, skipped=NO_COMMITTED_READS)
    written = np.zeros(c.n_values, dtype=bool)
    written[c.w_vid] = True
    seen = c.cv & ~written[c.r_vid]  # normally none: the topic test then looks at a few rows, not all
    maybe = np.flatnonzero(seen)
    seen[maybe] = np.isin(c.r_pos[maybe] >> TOPIC_SHIFT, np.unique(c.w_tid))
    vids = np.unique(c.r_vid[seen])
    if len(vids) == 0:
        return Found(0)
    reads = with_values(t, t.reads.iloc[_first_reads(c, seen)[:MAX_EXAMPLES]])
    examples = [{"value": r["value"], "reader": r["process"], "read_op": _plain(r["op"]),
                 "position": position(r["topic"], r["partition"], r["offset"])}
                for r in reads.to_dict("records")]
    return Found(len(vids), examples)


def torn_transaction(t: Tables) -> Found:
    """Some but not all values of one transaction are in the final committed scan."""
    c = cols(t)
    m = c.w_is_txn & (c.w_tix >= 0)
    if not m.any():
        return Found(0, skipped=NO_TXN_WRITES)
    n_tx = len(t.txns)
    total = np.bincount(c.w_tix[m], minlength=n_tx)
    visible = np.bincount(c.w_tix[m], weights=c.in_fc[c.w_vid[m]], minlength=n_tx)
    torn = np.flatnonzero((visible > 0) & (visible < total))
    if len(torn) == 0:
        return Found(0)
    tx = t.txns.iloc[torn[:MAX_EXAMPLES]]
    ex = pd.DataFrame({"txn": tx["txn"].to_numpy(), "process": tx["process"].to_numpy(), "outcome": tx["outcome"].to_numpy(),
                       "visible": visible[torn[:MAX_EXAMPLES]].astype(int), "written": total[torn[:MAX_EXAMPLES]]})
    return Found(len(torn), _examples(ex))


def inconsistent_offsets(t: Tables) -> Found:
    """One partition offset observed (read, or acknowledged to a writer) holding different values."""
    c = cols(t)
    acked = c.w_off != NO_OFFSET
    if not len(c.r_vid) and not acked.any():
        return Found(0, skipped=NO_POSITIONS)
    apos = _acked_positions(c, acked)
    avid = c.w_vid[acked]
    # Each value's lowest and highest position (over reads and acknowledged writes, without
    # concatenating them: memory); values seen at several positions contribute all of theirs. Two
    # different values on one position then show up as equal neighbours once sorted.
    lo, hi = span(c.r_vid, c.r_pos, c.n_values)
    np.minimum.at(lo, avid, apos)
    np.maximum.at(hi, avid, apos)
    seen = np.flatnonzero(lo <= hi)
    p_all, v_all = lo[seen], seen
    multi = lo < hi  # per value, not per read: two 28M-row gathers of lo and hi were this check's peak
    multi_r, multi_w = multi[c.r_vid], multi[avid]  # normally none: duplicated values only
    del multi
    if multi_r.any() or multi_w.any():
        extra = np.unique(np.stack([np.concatenate([c.r_pos[multi_r], apos[multi_w]]),
                                    np.concatenate([c.r_vid[multi_r], avid[multi_w]])], axis=1), axis=0)
        keep = extra[:, 0] != lo[extra[:, 1]]  # each value's lowest position is in already
        p_all = np.concatenate([p_all, extra[keep, 0]])
        v_all = np.concatenate([v_all, extra[keep, 1]])
    del lo, hi
    order = np.argsort(p_all, kind="stable")
    p_sorted = p_all[order]
    del p_all  # each temporary goes once used: this check's peak is the checker's
    v_sorted = v_all[order]
    del v_all, order
    clash = (p_sorted[1:] == p_sorted[:-1]) & (v_sorted[1:] != v_sorted[:-1])
    bad_pos = np.unique(p_sorted[1:][clash])
    if len(bad_pos) == 0:
        return Found(0)
    examples = []
    for b in bad_pos[:MAX_EXAMPLES]:
        vids = np.concatenate([c.r_vid[c.r_pos == b], avid[apos == b]])
        values: list[Any] = values_at(t, vids).tolist()
        examples.append({**_position_at(t, int(b)), "values": sorted({str(v) for v in values})})
    return Found(len(bad_pos), examples)


def wrong_offset(t: Tables) -> Found:
    """A value in the final committed scan, but not at the offset its delivery report gave, and that
    offset empty: no read saw anything there. (Another value seen at that offset is
    ``inconsistent-offsets``; the value nowhere is ``lost-write``.)"""
    c = cols(t)
    if not (c.w_off != NO_OFFSET).any():
        return Found(0, skipped=NO_OFFSETS)
    fc_vid, fc_pos = c.r_vid[c.fc], c.r_pos[c.fc]
    lo, hi = span(fc_vid, fc_pos, c.n_values)
    del fc_vid, fc_pos  # the final scan's rows: needed again only for a value at several positions
    acked = np.flatnonzero((c.w_off != NO_OFFSET) & c.in_fc[c.w_vid])
    v = c.w_vid[acked]
    apos = _acked_positions(c, acked)
    one = (lo == hi)[v]  # per value first: two gathers of 9M int64 were this check's peak
    del hi
    wrong = one & (lo[v] != apos)
    if (~one).any():  # a value at several positions (a duplicate): is the acknowledged one among them?
        cand = pd.DataFrame({"vid": v[~one], "pos": apos[~one], "i": np.flatnonzero(~one)})
        there = pd.DataFrame({"vid": c.r_vid[c.fc], "pos": c.r_pos[c.fc]}).drop_duplicates()
        hit = cand.merge(there, on=["vid", "pos"], how="left", indicator=True)
        wrong[hit.loc[hit["_merge"] == "left_only", "i"].to_numpy()] = True
    bad = np.flatnonzero(wrong)
    bad = bad[~_present(apos[bad], c.r_pos)]  # only where the acknowledged offset is empty
    if len(bad) == 0:
        return Found(0)
    w = _writes_at(t, acked[bad[:MAX_EXAMPLES]])
    found = lo[v[bad[:MAX_EXAMPLES]]]
    ex = [{"value": r["value"], "txn": _plain(r["txn"]), "process": r["process"],
           "acknowledged": position(r["topic"], r["partition"], r["offset"]),
           "found_at": _position_at(t, int(f))}
          for r, f in zip(w.to_dict("records"), found)]
    return Found(len(bad), ex)


def _present(needles: np.ndarray, haystack: np.ndarray) -> np.ndarray:
    """Per needle (a few), whether ``haystack`` (tens of millions) holds it: one hashed pass over the
    haystack. ``np.isin`` sorts both (numpy 2.4 took 18 s for 28M reads, even with no needle)."""
    if not len(needles):
        return np.zeros(0, dtype=bool)
    found = np.unique(haystack[pd.Series(haystack).isin(needles).to_numpy()])
    return np.isin(needles, found)


def _acked_positions(c: Cols, rows: np.ndarray) -> np.ndarray:
    """The packed positions (as the reads' ``pos``) Kafka acknowledged for the writes ``rows``."""
    packed: np.ndarray = pack(c.w_tid[rows], c.w_part[rows], c.w_off[rows])
    return packed


def _position_at(t: Tables, pos: int) -> Position:
    """A packed position as a position object."""
    tid, partition, offset = unpack(pos)
    return position(_topic_of(t, tid), partition, offset)


def _topic_of(t: Tables, tid: int) -> str:
    hit = t.reads.loc[t.reads["tid"] == tid, "topic"]
    return str(hit.iloc[0]) if len(hit) else str(t.writes.loc[t.writes["tid"] == tid, "topic"].iloc[0])


def nonmonotonic_send(t: Tables) -> Found:
    """One producer's later transaction landed at lower offsets in a partition than its earlier one."""
    c = cols(t)
    m = np.flatnonzero((c.w_out == OUTCOME_CODES[OK]) & (c.w_off != NO_OFFSET))
    if len(m) == 0:
        return Found(0, skipped=NO_ACKED_OFFSETS)
    # built in place, temporaries dropped once used: at 10M values each is 80 MB
    key = c.w_proc[m] << 40
    key |= c.w_tid[m] << 16
    key |= c.w_part[m]
    txn = c.w_txn[m]
    # writes come in transaction order (as flattened): a stable sort by key alone keeps it within a key
    order = np.argsort(key, kind="stable") if (txn[1:] >= txn[:-1]).all() else np.lexsort((txn, key))
    del txn
    k = key[order]
    del key
    m = m[order]
    del order
    txn, off = c.w_txn[m], c.w_off[m]
    # groups = one transaction's records in one partition; min/max offset per group
    start = np.flatnonzero(np.r_[True, (k[1:] != k[:-1]) | (txn[1:] != txn[:-1])])
    g_key, g_txn = k[start], txn[start]
    del k, txn
    g_min, g_max = np.minimum.reduceat(off, start), np.maximum.reduceat(off, start)
    del off
    same = g_key[1:] == g_key[:-1]
    bad = np.flatnonzero(same & (g_min[1:] < g_max[:-1])) + 1
    if len(bad) == 0:
        return Found(0)
    rows = m[start[bad[:MAX_EXAMPLES]]]
    w = _writes_at(t, rows)
    ex = [{"process": r["process"], "topic": r["topic"], "partition": _plain(r["partition"]),
           "earlier_txn": _plain(g_txn[b - 1]), "earlier_max": _plain(g_max[b - 1]), "txn": _plain(g_txn[b]),
           "offset": _plain(g_min[b])} for r, b in zip(w.to_dict("records"), bad[:MAX_EXAMPLES])]
    return Found(len(bad), ex)


def int_nonmonotonic_send(t: Tables) -> Found:
    """Within one committed transaction, a send to a partition landed at a lower offset than the
    send before it to that partition (Jepsen's ``int-nonmonotonic-send``): one count per such send.
    The writes table keeps each transaction's sends in the order they were sent."""
    c = cols(t)
    m = np.flatnonzero((c.w_out == OUTCOME_CODES[OK]) & (c.w_off != NO_OFFSET))
    if len(m) == 0:
        return Found(0, skipped=NO_ACKED_OFFSETS)
    order = np.lexsort((m, c.w_part[m], c.w_tid[m], c.w_txn[m]))  # send order within (txn, partition)
    rows = m[order]
    txn, tid, part, off = c.w_txn[rows], c.w_tid[rows], c.w_part[rows], c.w_off[rows]
    same = (txn[1:] == txn[:-1]) & (tid[1:] == tid[:-1]) & (part[1:] == part[:-1])
    bad = np.flatnonzero(same & (off[1:] < off[:-1])) + 1
    if len(bad) == 0:
        return Found(0)
    w = _writes_at(t, rows[bad[:MAX_EXAMPLES]])
    ex = [{"process": r["process"], "txn": _plain(r["txn"]), "topic": r["topic"], "partition": _plain(r["partition"]),
           "earlier_offset": _plain(off[b - 1]), "offset": _plain(off[b]), "value": r["value"]}
          for r, b in zip(w.to_dict("records"), bad[:MAX_EXAMPLES])]
    return Found(len(bad), ex)


def nonmonotonic_poll(t: Tables) -> Found:
    """One reader (assign mode) went backwards, or re-read an offset, in a partition."""
    c = cols(t)
    if not c.poll.any():
        return Found(0, skipped=NO_POLLS)
    bad = np.flatnonzero(c.poll & (c.r_prev >= 0) & (c.r_off <= c.r_prev))
    if len(bad) == 0:
        return Found(0)
    ex = t.reads.iloc[bad[:MAX_EXAMPLES]].assign(previous_offset=c.r_prev[bad[:MAX_EXAMPLES]])
    return Found(len(bad), _examples(ex, ["process", "op", "topic", "partition", "previous_offset", "offset"]))


def poll_skip(t: Tables) -> Found:
    """Between two records one reader got in a row from a partition, a committed record it never got.
    Readers start at offset 0, so the first record they get counts as following offset -1."""
    c = cols(t)
    if not c.poll.any():
        return Found(0, skipped=NO_POLLS)
    if not c.fc.any():
        return Found(0, skipped=NO_COMMITTED_RECORDS)
    # Positions sort as (topic, partition, offset): the committed records strictly between two
    # consecutive polled offsets of one partition are counted by one searchsorted.
    committed = np.sort(c.r_pos[c.fc])
    idx = np.flatnonzero(c.poll)
    cur, prev = c.r_off[idx], c.r_prev[idx]
    base = c.r_pos[idx] - cur
    missed = np.where(cur > prev, np.searchsorted(committed, base + cur, side="left")
                      - np.searchsorted(committed, base + prev, side="right"), 0)
    bad = idx[missed > 0]
    if len(bad) == 0:
        return Found(0)
    ex = t.reads.iloc[bad[:MAX_EXAMPLES]].assign(previous_offset=c.r_prev[bad[:MAX_EXAMPLES]],
                                                   committed_skipped=missed[missed > 0][:MAX_EXAMPLES])
    return Found(len(bad), _examples(ex, ["process", "op", "topic", "partition", "previous_offset", "offset", "committed_skipped"]))


def zombie_commit(t: Tables) -> Found:
    """A transaction of an older instance of a transactional.id that committed (``ok``) or became
    visible, although its commit started after a newer instance had finished ``init_transactions``."""
    inits = t.inits[(t.inits["outcome"] == OK) & t.inits["complete_time"].notna()]
    if not inits["txn_id"].duplicated().any():  # no id initialised twice: the merge below would find no pair
        return Found(0, skipped=NO_SECOND_INSTANCE)
    # For each instance (process), the first later init of the same transactional.id by another process.
    i = inits.sort_values("complete_time")[["process", "txn_id", "complete_time"]]
    pairs = i.merge(i, on="txn_id", suffixes=("", "_newer"))
    pairs = pairs[(pairs["process"] != pairs["process_newer"]) & (pairs["complete_time_newer"] > pairs["complete_time"])]
    if pairs.empty:
        return Found(0, skipped=NO_SECOND_INSTANCE)
    fenced_at = pairs.groupby("process").agg(newer=("process_newer", "first"), fenced_at=("complete_time_newer", "min"))
    tx = t.txns[t.txns["f"] == "txn"].merge(fenced_at, left_on="process", right_index=True)
    started = tx["commit_at"].fillna(tx["invoke_time"])
    late = tx[started > tx["fenced_at"]]
    if late.empty:
        return Found(0)
    c = cols(t)
    w_late = np.isin(c.w_txn, late["txn"].to_numpy())
    seen_txns = set(c.w_txn[w_late & c.in_cv[c.w_vid]].tolist())
    bad = late[(late["outcome"] == OK) | late["txn"].isin(seen_txns)].assign(visible=lambda d: d["txn"].isin(seen_txns))
    return Found(len(bad), _examples(bad, ["txn", "process", "txn_id", "outcome", "visible", "newer", "fenced_at", "commit_at"]))


def copy_exactly_once(t: Tables) -> Found:
    """Every committed input has exactly one committed output (none at or above the group's committed
    offset, when the history has it), and every committed output copies a committed input.

    The copiers' output topics are those whose first committed record is a copy (``copy/...``,
    harness/checker/copies.py). A value there that is not a copy is another workload's (one that
    writes into the same topic) and not judged here: its writer's checks judge it. A copy that does
    not parse names no input: a malformed copy, one finding each (example ``malformed_copy``: its
    position, and its ``value``)."""
    # Copies live in the copiers' output topics: test each topic's first record, then only those.
    copy_tids = topics_starting(t, copies.PREFIX)
    if not copy_tids:
        return Found(0, skipped=NO_COPIER)
    fc = final_committed(t)
    out = with_values(t, fc[fc["tid"].isin(copy_tids)])
    out = out[out["value"].str.startswith(copies.PREFIX, na=False).to_numpy(bool)]
    parsed = copies.copy_input(out["value"])
    well_formed = np.zeros(len(out), dtype=bool)
    well_formed[parsed.at] = True
    malformed, copied = out[~well_formed], out.iloc[parsed.at]
    src = pd.DataFrame({"topic": parsed.topic.to_pandas().to_numpy(), "partition": parsed.partition, "offset": parsed.offset,
                        "out_topic": copied["topic"].to_numpy(), "out_partition": copied["partition"].to_numpy(),
                        "out_offset": copied["offset"].to_numpy()})
    in_topics = set(src["topic"])
    inputs = with_values(t, fc[fc["topic"].isin(in_topics)])[["topic", "partition", "offset", "value"]].drop_duplicates(
        ["topic", "partition", "offset"])
    n_out = src.groupby(["topic", "partition", "offset"]).size().rename("outputs")
    merged = inputs.merge(n_out, left_on=["topic", "partition", "offset"], right_index=True, how="left").fillna({"outputs": 0})
    g = t.group_offsets
    if not g.empty:
        merged = merged.merge(g.rename(columns={"offset": "group_offset"}), on=["topic", "partition"], how="left")
        below = merged["group_offset"].notna() & (merged["offset"] < merged["group_offset"])
        above = merged["group_offset"].notna() & ~below
        expected = np.where(below, 1, np.where(above, 0, -1))
    else:
        merged["group_offset"] = pd.NA
        expected = np.full(len(merged), -1)
    # -1: no group offset known for that partition, so only "more than one" is an anomaly.
    wrong = np.where(expected >= 0, merged["outputs"].to_numpy() != expected, merged["outputs"].to_numpy() > 1)
    bad_inputs = merged[wrong].assign(expected=expected[wrong])
    known = src.merge(inputs[["topic", "partition", "offset"]], how="left", indicator=True)
    orphans = known[known["_merge"] == "left_only"]
    ex = _examples(bad_inputs, ["topic", "partition", "offset", "value", "outputs", "expected", "group_offset"])
    ex += [{"orphan_output": position(r["out_topic"], r["out_partition"], r["out_offset"]),
            "copies": position(r["topic"], r["partition"], r["offset"])} for r in orphans.head(MAX_EXAMPLES).to_dict("records")]
    ex += [{"malformed_copy": position(r["topic"], r["partition"], r["offset"]), "value": r["value"]}
           for r in malformed.head(MAX_EXAMPLES).to_dict("records")]
    return Found(len(bad_inputs) + len(orphans) + len(malformed), ex[:MAX_EXAMPLES])


def lso_stall(t: Tables) -> Found:
    """After heal, a partition whose last stable offset did not reach its high watermark within the
    bound: a transaction left hanging. Examples name the partition and how long it lagged."""
    return lso_stall_of(t.meta)


def lso_stall_of(meta: dict[str, Any]) -> Found:
    """``lso_stall`` from the history's meta alone (the LSO measurement the runner recorded)."""
    lso = meta.get("lso")
    if not lso:
        return Found(0, skipped="the history has no LSO measurement (runs before it existed, or synthetic)")
    bound = lso.get("bound_s")
    at = lso.get("stalled_at") or {}
    stalled = [{"partition": tp, "lagged_s": f">{bound}" if lag is None else lag, "bound_s": bound, "lso": at.get(tp)}
               for tp, lag in sorted(lso.get("lag_s", {}).items()) if lag is None or lag > bound]
    return Found(len(stalled), stalled[:MAX_EXAMPLES])
