"""The history's tables as plain numpy arrays, built once per check run: the checks work on these
(integer ids, boolean masks, dense per-value lookups) and go back to the DataFrames only to write
the few examples of an anomaly. Membership by a dense ``bool[value id]`` lookup, grouping by
``ufunc.at`` / ``bincount`` over dense ids: no hashing of strings, no Python loop per value.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.history.model import FAIL, INFO, OK, POLL, READ_COMMITTED, SCAN, TXN
from harness.history.store import Tables, add_ids

OUTCOME_CODES = {OK: 0, FAIL: 1, INFO: 2}
NO_OFFSET = -1


@dataclass
class Cols:
    n_values: int
    # writes (one row per value written)
    w_txn: np.ndarray      # op index of the writing transaction
    w_tix: np.ndarray      # row of that transaction in ``txns`` (-1: none)
    w_out: np.ndarray      # outcome code (OUTCOME_CODES; -1 unknown)
    w_is_txn: np.ndarray   # written in a transaction (not a plain send)
    w_proc: np.ndarray     # process id (dense)
    w_vid: np.ndarray
    w_tid: np.ndarray
    w_part: np.ndarray
    w_off: np.ndarray      # offset Kafka acknowledged, NO_OFFSET if none
    # reads (one row per record a reader or a final scan got)
    r_vid: np.ndarray
    r_pos: np.ndarray
    r_off: np.ndarray
    r_prev: np.ndarray     # polls: offset this reader got before in the partition (-1 at first)
    poll: np.ndarray       # mask: reader polls
    fc: np.ndarray         # mask: the final read_committed scan
    cv: np.ndarray         # mask: committed view = polls + final read_committed scan
    in_fc: np.ndarray      # bool[value id]: in the final committed scan
    in_cv: np.ndarray      # bool[value id]: seen by a committed reader
    # transactions (one row per transaction or plain send, as in ``txns``)
    t_out: np.ndarray      # outcome code (OUTCOME_CODES; -1 unknown)


def build(t: Tables) -> Cols:
    add_ids(t)
    w, r, tx = t.writes, t.reads, t.txns
    n_values = int(max(w["vid"].max() if len(w) else -1, r["vid"].max() if len(r) else -1)) + 1
    w_tix = pd.Index(tx["txn"].to_numpy()).get_indexer(w["txn"].to_numpy()) if len(tx) else np.full(len(w), -1)
    tx_out = tx["outcome"].map(OUTCOME_CODES).fillna(-1).to_numpy(np.int8)
    tx_is_txn = (tx["f"] == TXN).to_numpy()
    tx_proc, _ = pd.factorize(tx["process"])
    known = w_tix >= 0
    safe = np.where(known, w_tix, 0)
    w_out = np.where(known, tx_out[safe] if len(tx) else -1, -1).astype(np.int8)
    w_is_txn = np.where(known, tx_is_txn[safe] if len(tx) else False, False)
    w_proc = np.where(known, tx_proc[safe] if len(tx) else -1, -1).astype(np.int64)
    w_off = w["offset"].fillna(NO_OFFSET).to_numpy(np.int64) if len(w) else np.zeros(0, np.int64)

    # pandas compares string columns in Arrow (fast); numpy would compare Python objects
    poll = (r["source"] == POLL).to_numpy(bool)
    fc = ((r["source"] == SCAN) & (r["isolation"] == READ_COMMITTED)).to_numpy(bool)
    cv = poll | fc
    r_vid = r["vid"].to_numpy(np.int64)
    r_off = r["offset"].to_numpy(np.int64)
    r_pos = r["pos"].to_numpy(np.int64)
    in_fc = np.zeros(n_values, dtype=bool)
    in_fc[r_vid[fc]] = True
    in_cv = np.zeros(n_values, dtype=bool)
    in_cv[r_vid[cv]] = True
    return Cols(n_values, w["txn"].to_numpy(np.int64), w_tix, w_out, w_is_txn, w_proc, w["vid"].to_numpy(np.int64),
                w["tid"].to_numpy(np.int64), w["partition"].to_numpy(np.int64), w_off,
                r_vid, r_pos, r_off, _prev_offsets(r, poll, r_pos, r_off), poll, fc, cv, in_fc, in_cv, tx_out)


def _prev_offsets(r: pd.DataFrame, poll: np.ndarray, r_pos: np.ndarray, r_off: np.ndarray) -> np.ndarray:
    """For each polled record, the offset the same reader got just before in that partition."""
    prev = np.full(len(r), -1, dtype=np.int64)
    idx = np.flatnonzero(poll)
    if len(idx) == 0:
        return prev
    # the reader of a record is the process of its poll op: factorize per op (few), not per record
    ops = r["op"].to_numpy()[idx]  # the column's own width (int32 from Parquet): no 28M-row int64 copy
    if len(ops) < 2 or (ops[1:] >= ops[:-1]).all():  # records in op order (as flattened): ops start where they change
        first = np.flatnonzero(np.r_[True, ops[1:] != ops[:-1]])
        inv = np.cumsum(np.r_[True, ops[1:] != ops[:-1]]) - 1
    else:
        _, first, inv = np.unique(ops, return_index=True, return_inverse=True)
    del ops
    op_proc, _ = pd.factorize(r["process"].iloc[idx[first]].to_numpy())
    proc_id = op_proc[inv]
    del inv
    # one key per (reader, topic-partition); a stable sort keeps each key's records in history order
    key = (proc_id.astype(np.int64) << 40) | (r_pos[idx] >> 40)
    del proc_id
    order = np.argsort(key, kind="stable")
    same = key[order]
    del key  # the temporaries go as soon as they are used: this is the checker's peak of memory
    same = same[1:] == same[:-1]
    off = r_off[idx[order]]
    p = np.full(len(order), -1, dtype=np.int64)
    p[1:][same] = off[:-1][same]
    del off, same
    prev[idx[order]] = p
    return prev


def span(ids: np.ndarray, keys: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per dense id: the smallest and largest key seen with it (max < min where never seen)."""
    lo = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    hi = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
    np.minimum.at(lo, ids, keys)
    np.maximum.at(hi, ids, keys)
    return lo, hi
