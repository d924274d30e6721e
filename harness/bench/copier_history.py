"""``bench checker --copier``'s history: ``producer_history.synthetic``'s producers, and a copier (consume-
transform-produce) that copied every committed value, as a run of an exactly-once copier leaves it:
one copier transaction per committed producer transaction, invoked after it completed, each value
copied to the same partition and offset of the output topic ``o``
(``copy/t/<partition>/<offset>/copier.0-<n>/<value>``), every copy in the final read_committed scan.
It times what the copier costs the checks (``copy-exactly-once``, ``g1c``'s copier reads)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from harness.bench.producer_history import synthetic
from harness.history import store
from harness.history.model import COPY_PREFIX, OK, READ_COMMITTED, SCAN

COPIER, OUT_TOPIC = "copier.0", "o"


def copier_synthetic(n_values: int) -> store.Tables:
    t = synthetic(n_values)
    w = t.writes[t.writes["offset"].notna()]
    src = w["txn"].to_numpy(np.int64)
    part, off = w["partition"].to_numpy(np.int64), w["offset"].to_numpy(np.int64)
    done = t.txns.set_index("txn")["complete_time"].astype("int64")
    copied = np.unique(src)
    first_op = int(t.meta["ops"]) + 1  # the copier's ops after every other op of the history
    op_of = dict(zip(copied.tolist(), range(first_op, first_op + len(copied))))
    txn = np.array([op_of[s] for s in src.tolist()], dtype=np.int64)
    values = (COPY_PREFIX + "/t/" + pd.Series(part).astype(str) + "/" + pd.Series(off).astype(str) + f"/{COPIER}-"
              + pd.Series(src).astype(str) + "/" + w["value"].reset_index(drop=True).astype(str)).astype("str")
    writes = pd.DataFrame({"txn": txn, "value": values, "topic": OUT_TOPIC, "partition": part,
                           "offset": pd.array(off, dtype="Int64")})
    invoked = done.reindex(copied).to_numpy(np.int64) + 50  # after the copied transaction completed
    txns = pd.DataFrame({"txn": [op_of[s] for s in copied.tolist()], "process": COPIER, "f": "txn", "outcome": OK,
                         "invoke_time": invoked, "complete_time": pd.array(invoked + 40, dtype="Int64"),
                         "commit_at": pd.array(invoked + 30, dtype="Int64"), "txn_id": "eos-copier-0", "error": None})
    order = np.lexsort((off, part))
    scan = pd.DataFrame({"op": np.int64(10**12 + 2), "process": "final", "source": SCAN, "isolation": READ_COMMITTED,
                         "topic": OUT_TOPIC, "partition": part[order], "offset": off[order],
                         "value": values.to_numpy()[order]})
    t.writes = pd.concat([t.writes, writes], ignore_index=True)
    t.txns = pd.concat([t.txns, txns], ignore_index=True)
    t.reads = pd.concat([t.reads, scan], ignore_index=True)
    t.meta["ops"] = first_op + 2 * len(copied)
    return t
