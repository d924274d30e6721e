"""The readers' figures Jepsen reports, over time (``stats.unseen`` and ``stats.realtime_lag``):
informational, never failing. The Spark engine computes the same numbers (``spark_engine.py``) and
finishes them with this module's ``unseen_of`` / ``lag_of``; both work in whole nanoseconds on the
history's clock, so that they agree to the last digit.

- ``unseen``: at each step's end, the values of transactions acknowledged committed (``ok``) by
  then that no read_committed poll had returned yet, in the partitions the readers poll (a copier's
  output that nobody reads is not counted). ``final`` is what no poll ever returned.
- ``realtime_lag``: at each poll, how far behind the head its reader was in each partition the
  poll got records of: the time since the earliest acknowledged commit above the reader's position
  there (the highest offset it has got so far) that it had not read yet; 0 when it had read
  everything acknowledged. Per step, the worst reader; per reader, its worst. A reader that gets
  nothing from a partition is not measured there (the history records records, not assignments).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from harness.checker.arrays import NO_OFFSET, OUTCOME_CODES, Cols
from harness.history.model import OFFSET_BITS, OK, PARTITION_BITS

#: At most this many points per series: a run of any length gives a readable line and a small verdict.
MAX_POINTS = 100
NEVER = np.iinfo(np.int64).max
NS = 1_000_000_000


def step_ns(end_ns: int) -> int:
    """The series' step: whole seconds, so that ``MAX_POINTS`` steps cover ``end_ns``."""
    return max(1, -(-int(end_ns) // (MAX_POINTS * NS))) * NS


def unseen_of(step: int, acked: np.ndarray, seen: np.ndarray, final: int) -> dict[str, Any]:
    """``unseen`` from how many acknowledged values were acked in each step (``acked[k]``: the
    values whose ack time // step is k) and how many were first seen (the later of its ack and its
    first poll) in each."""
    n = max(len(acked), len(seen))
    count = np.cumsum(np.pad(acked, (0, n - len(acked)))) - np.cumsum(np.pad(seen, (0, n - len(seen))))
    return {**_series(step, np.arange(1, n + 1), count.astype(np.int64)), "final": final}


def lag_of(step: int, worst: dict[int, int], by_reader: dict[str, int]) -> dict[str, Any]:
    """``realtime_lag`` from the worst lag (ns) of each step that had polls, and of each reader."""
    steps = np.array(sorted(worst), dtype=np.int64)
    seconds = np.round(np.array([worst[int(k)] for k in steps], dtype=np.float64) / NS, 3)
    return {**_series(step, steps + 1, seconds),
            "by_reader": {name: round(by_reader[name] / NS, 3) for name in sorted(by_reader)}}


def _series(step: int, ends: np.ndarray, values: np.ndarray) -> dict[str, Any]:
    """``[[seconds, value], ...]`` at the ends of steps ``ends`` (in steps of ``step`` ns)."""
    def plain(v: Any) -> int | float:
        return int(v) if np.issubdtype(type(v), np.integer) else round(float(v), 3)

    return {"step_s": step // NS, "series": [[int(e) * step // NS, plain(v)] for e, v in zip(ends, values)],
            "max": plain(values.max()) if len(values) else None}


# ----------------------------------------------------------------------------- the default engine
def reader_figures(c: Cols, complete_time: np.ndarray, poll_times: Callable[[np.ndarray], np.ndarray],
                   reads: pd.DataFrame) -> dict[str, Any]:
    """``stats``' ``unseen`` and ``realtime_lag`` (None each when there is nothing to measure: no
    poll, no acknowledged commit). ``complete_time``: per transaction row; ``poll_times``: the
    completion times of the given read rows (``NEVER`` where not known); ``reads``: the reads
    table (``op``, ``process``)."""
    polls = np.flatnonzero(c.poll)
    time = poll_times(polls)
    polls, time = polls[time != NEVER], time[time != NEVER]
    if not len(polls):
        return {"unseen": None, "realtime_lag": None}
    op = reads["op"].to_numpy(np.int64)[polls]
    procs = reads["process"]
    if isinstance(procs.dtype, pd.CategoricalDtype):  # as loaded from Parquet: codes, not 28M strings
        reader, names = procs.cat.codes.to_numpy(np.int64)[polls], [str(n) for n in procs.cat.categories]
    else:
        reader, uniques = pd.factorize(procs.iloc[polls].to_numpy())
        names = [str(n) for n in uniques]
    vid, tp, off, ack = committed_acks(c, complete_time)
    r_tp = c.r_pos[polls] >> OFFSET_BITS
    read = np.isin(tp, np.unique(r_tp))  # only the partitions some reader polls
    vid, tp, off, ack = vid[read], tp[read], off[read], ack[read]
    first = np.full(c.n_values, NEVER, dtype=np.int64)
    np.minimum.at(first, c.r_vid[polls], time)
    known = off != NO_OFFSET
    return {"unseen": _unseen(ack, first[vid]),
            "realtime_lag": _lag(time, reader, names, op, r_tp, c.r_off[polls],
                                 tp[known], off[known], ack[known])}


def committed_acks(c: Cols, complete_time: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The values of transactions acknowledged committed: value id, (topic, partition) key (a read
    position's ``pos >> OFFSET_BITS``), the offset Kafka acknowledged (``NO_OFFSET`` if none) and
    the ack time (the transaction's completion)."""
    ok = (c.w_out == OUTCOME_CODES[OK]) & c.w_is_txn & (c.w_tix >= 0)
    tp = (c.w_tid[ok].astype(np.int64) << PARTITION_BITS) | c.w_part[ok].astype(np.int64)
    return c.w_vid[ok], tp, c.w_off[ok], complete_time[c.w_tix[ok]]


def _unseen(ack: np.ndarray, first_poll: np.ndarray) -> dict[str, Any] | None:
    if not len(ack):
        return None
    polled = first_poll != NEVER
    end = max(int(ack.max()), int(first_poll[polled].max(initial=0)))
    step = step_ns(end)
    seen_at = np.maximum(ack, first_poll)[polled]  # polled before its ack (info, then a late ok): seen from its ack
    return unseen_of(step, np.bincount(ack // step), np.bincount(seen_at // step), final=int((~polled).sum()))


def _lag(time: np.ndarray, reader: np.ndarray, names: list[str], op: np.ndarray, tp: np.ndarray, offset: np.ndarray,
         c_tp: np.ndarray, c_off: np.ndarray, c_ack: np.ndarray) -> dict[str, Any]:
    """Polled records (history order; ``reader``: an index into ``names``) and acknowledged
    committed values (partition, offset, ack)."""
    # one row per poll and partition (its records are contiguous): the highest offset it got there
    starts = np.flatnonzero(np.r_[True, (op[1:] != op[:-1]) | (tp[1:] != tp[:-1])])
    time, reader, tp, got = time[starts], reader[starts], tp[starts], np.maximum.reduceat(offset, starts)
    # the reader's position: the highest offset it has got in that partition so far
    position = pd.Series(got).groupby((reader.astype(np.int64) << 32) | tp, sort=False).cummax().to_numpy(np.int64)
    # per partition by offset, the earliest ack at or above each (a suffix minimum); then the first above each position
    order = np.lexsort((c_off, c_tp))
    k_tp, k_off = c_tp[order], c_off[order]
    earliest = pd.Series(c_ack[order][::-1]).groupby(k_tp[::-1], sort=False).cummin().to_numpy(np.int64)[::-1]
    at = np.searchsorted((k_tp << OFFSET_BITS) | k_off, (tp << OFFSET_BITS) | position, side="right")
    behind_since = np.full(len(at), NEVER, dtype=np.int64)
    inside = np.flatnonzero(at < len(k_tp))
    same = inside[k_tp[at[inside]] == tp[inside]]
    behind_since[same] = earliest[at[same]]
    lag = np.where(behind_since < time, time - behind_since, 0)
    step = step_ns(int(time.max()))
    steps, first = np.unique(time // step, return_inverse=True)
    worst = np.zeros(len(steps), dtype=np.int64)
    np.maximum.at(worst, first, lag)
    per_reader = np.full(len(names), -1, dtype=np.int64)  # -1: a reader (category) that polled nothing
    np.maximum.at(per_reader, reader, lag)
    return lag_of(step, dict(zip(steps.tolist(), worst.tolist())),
                  {name: lag for name, lag in zip(names, per_reader.tolist()) if lag >= 0})
