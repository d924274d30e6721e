"""``bench checker``'s history of producers and a reader (``synthetic``), built column-wise straight
into the history's tables (no op objects), as a valid run leaves it: 4 producers, transactions of 6
values (one per partition of a 6-partition topic), 10% aborted, each transaction end taking an offset
for its control marker; one reader polling every committed record in batches of 500; the final
read_committed and read_uncommitted scans. ``harness/bench/checker.py`` saves and times it, and
``harness/bench/copier_history.py`` adds a copier to it."""

from __future__ import annotations

import numpy as np
import pandas as pd

from harness.history import store
from harness.history.model import FAIL, OK, POLL, READ_COMMITTED, READ_UNCOMMITTED, SCAN

PARTITIONS = 6
PRODUCERS = 4
ABORT_EVERY = 10  # every 10th transaction aborted
POLL_BATCH = 500


def synthetic(n_values: int) -> store.Tables:
    """The valid history of ``n_values`` values (rounded down to whole transactions, at least one)."""
    n_txn = max(1, n_values // PARTITIONS)
    n = n_txn * PARTITIONS
    i = np.arange(n, dtype=np.int64)
    txn = i // PARTITIONS
    part = i % PARTITIONS
    offset = 2 * txn  # one record of each transaction per partition, then its marker
    aborted_txn = (np.arange(n_txn) % ABORT_EVERY) == ABORT_EVERY - 1
    committed = ~aborted_txn[txn]
    values = pd.Series(np.char.add("v", i.astype(str)), dtype="str")
    proc_of_txn = pd.Series(np.char.add("p", (np.arange(n_txn) % PRODUCERS).astype(str)), dtype="str")
    t_inv = np.arange(n_txn, dtype=np.int64) * 1000
    txns = pd.DataFrame({
        "txn": np.arange(n_txn, dtype=np.int64), "process": proc_of_txn, "f": "txn",
        "outcome": np.where(aborted_txn, FAIL, OK), "invoke_time": t_inv,
        "complete_time": pd.array(t_inv + 900, dtype="Int64"), "commit_at": pd.array(t_inv + 500, dtype="Int64"),
        "txn_id": np.char.add("tx-", (np.arange(n_txn) % PRODUCERS).astype(str)), "error": None})
    writes = pd.DataFrame({"txn": txn, "value": values, "topic": "t", "partition": part,
                           "offset": pd.array(np.where(committed, offset, -1), dtype="Int64")})
    writes.loc[~committed, "offset"] = pd.NA

    def view(mask: np.ndarray, source: str, iso: str, process: str, op: np.ndarray) -> pd.DataFrame:
        # records of each partition in offset order
        order = np.lexsort((offset[mask], part[mask]))
        return pd.DataFrame({"op": op[order], "process": process, "source": source, "isolation": iso, "topic": "t",
                             "partition": part[mask][order], "offset": offset[mask][order],
                             "value": values[mask].to_numpy()[order]})

    c_count = int(committed.sum())
    poll_ops = np.arange(c_count, dtype=np.int64) // POLL_BATCH + n_txn
    reads = pd.concat([
        view(committed, POLL, READ_COMMITTED, "r0", poll_ops),
        view(committed, SCAN, READ_COMMITTED, "final", np.full(c_count, 10**12, dtype=np.int64)),
        view(np.ones(n, dtype=bool), SCAN, READ_UNCOMMITTED, "final", np.full(n, 10**12 + 1, dtype=np.int64)),
    ], ignore_index=True)
    inits = pd.DataFrame({"op": np.arange(PRODUCERS, dtype=np.int64), "process": [f"p{k}" for k in range(PRODUCERS)],
                          "txn_id": [f"tx-{k}" for k in range(PRODUCERS)], "outcome": OK,
                          "invoke_time": np.zeros(PRODUCERS, dtype=np.int64), "complete_time": pd.array([1] * PRODUCERS, dtype="Int64")})
    ops = pd.DataFrame({"index": pd.array([], dtype="int64"), "time": pd.array([], dtype="int64"), "process": [],
                        "type": [], "f": [], "error": []})
    groups = pd.DataFrame({"topic": pd.Series([], dtype="str"), "partition": pd.array([], dtype="int64"),
                           "offset": pd.array([], dtype="int64")})
    return store.Tables(ops, txns, writes, reads, inits, groups,
                        meta={"ops": int(n_txn * 2 + poll_ops.max(initial=0) + 2), "truncated": [], "fenced": [],
                              "duration_ns": int(t_inv[-1] + 1000)})
