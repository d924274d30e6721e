"""The anomaly checks of DESIGN.md, column-wise over the history's tables (no Python loop per value).

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
from typing import Any, Callable

import numpy as np
import pandas as pd

from harness.history.model import COPY_PREFIX, FAIL, INFO, OK, POLL, READ_COMMITTED, SCAN
from harness.history.store import Tables

MAX_EXAMPLES = 5


@dataclass
class Found:
    count: int
    examples: list[dict[str, Any]] = field(default_factory=list)


def _examples(df: pd.DataFrame, cols: list[str] | None = None) -> list[dict[str, Any]]:
    rows = (df[cols] if cols else df).head(MAX_EXAMPLES)
    return [{k: _plain(v) for k, v in r.items()} for r in rows.to_dict("records")]


def _plain(v: Any) -> Any:
    """JSON-friendly scalars (numpy ints, pandas NA, arrays of positions)."""
    if v is pd.NA or (isinstance(v, float) and np.isnan(v)):
        return None
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, (np.ndarray, list, tuple)):
        return [_plain(x) for x in v]
    return v


def prepare(t: Tables) -> Tables:
    """Give every value an integer id (``vid``), shared by writes and reads: membership and joins
    on integers are ~500x faster than on strings (pandas ``isin`` on string columns). Idempotent."""
    if "vid" not in t.writes.columns or "vid" not in t.reads.columns:
        n = len(t.writes)
        codes, _ = pd.factorize(pd.concat([t.writes["value"], t.reads["value"]], ignore_index=True))
        tids, _ = pd.factorize(pd.concat([t.writes["topic"], t.reads["topic"]], ignore_index=True))
        t.writes = t.writes.assign(vid=codes[:n].astype(np.int64), tid=tids[:n].astype(np.int64))
        t.reads = t.reads.assign(vid=codes[n:].astype(np.int64), tid=tids[n:].astype(np.int64))
        # (topic, partition, offset) as one int64: 7 bits of topic, 16 of partition, 40 of offset
        t.reads["pos"] = position(t.reads["tid"], t.reads["partition"], t.reads["offset"])
    return t


def position(tid: pd.Series, partition: pd.Series, offset: pd.Series) -> np.ndarray:
    return ((tid.to_numpy(np.int64) << 56) | (partition.to_numpy(np.int64) << 40) | offset.to_numpy(np.int64))


def committed_reads(t: Tables) -> pd.DataFrame:
    r = t.reads
    return r[(r["source"] == POLL) | ((r["source"] == SCAN) & (r["isolation"] == READ_COMMITTED))]


def final_committed(t: Tables) -> pd.DataFrame:
    r = t.reads
    return r[(r["source"] == SCAN) & (r["isolation"] == READ_COMMITTED)]


def _writes_with_outcome(t: Tables) -> pd.DataFrame:
    return t.writes.merge(t.txns[["txn", "process", "outcome", "f"]], on="txn", how="left")


# ---------------------------------------------------------------------------------------------- checks
def duplicate(t: Tables) -> Found:
    """A value visible at more than one position to read_committed readers."""
    r = committed_reads(prepare(t))
    pos = r[["vid", "pos"]].drop_duplicates()
    counts = pos["vid"].value_counts(sort=False)
    dup = counts[counts > 1]
    if dup.empty:
        return Found(0)
    ex = r[r["vid"].isin(dup.index[:MAX_EXAMPLES])].drop_duplicates(["vid", "topic", "partition", "offset"])
    ex = ex.groupby("value", sort=False).apply(
        lambda g: [f"{a}-{b}@{c}" for a, b, c in zip(g["topic"], g["partition"], g["offset"])], include_groups=False)
    w = _writes_with_outcome(t)
    writers = w[w["vid"].isin(dup.index[:MAX_EXAMPLES])].drop_duplicates("value").set_index("value")
    examples = [{"value": v, "positions": p, "writer_op": _plain(writers["txn"].get(v)),
                 "writer_process": writers["process"].get(v)} for v, p in ex.items()]
    return Found(int(len(dup)), examples)


def lost_write(t: Tables) -> Found:
    """A value of a transaction acknowledged committed (``ok``) missing from the final committed scan."""
    w = _writes_with_outcome(t)
    ok = w[w["outcome"] == OK]
    lost = ok[~ok["vid"].isin(final_committed(prepare(t))["vid"])]
    return Found(len(lost), _examples(lost, ["value", "txn", "process", "topic", "partition", "offset"]))


def aborted_read(t: Tables) -> Found:
    """A read_committed reader saw a value of a transaction that definitely aborted (``fail``)."""
    w = _writes_with_outcome(prepare(t))
    failed = w[w["outcome"] == FAIL][["vid", "txn", "process"]].rename(columns={"process": "writer_process"})
    seen = committed_reads(t).merge(failed, on="vid")
    values = seen.drop_duplicates("value")
    return Found(len(values), _examples(values.rename(columns={"op": "read_op", "process": "reader", "txn": "writer_op"}),
                                       ["value", "writer_op", "writer_process", "read_op", "reader", "topic", "partition", "offset"]))


def torn_transaction(t: Tables) -> Found:
    """Some but not all values of one transaction are in the final committed scan."""
    w = _writes_with_outcome(prepare(t))
    w = w[w["f"] == "txn"]
    visible = w["vid"].isin(final_committed(t)["vid"])
    per = pd.DataFrame({"txn": w["txn"], "visible": visible}).groupby("txn")["visible"].agg(["sum", "size"])
    torn = per[(per["sum"] > 0) & (per["sum"] < per["size"])]
    tx = t.txns.set_index("txn").loc[torn.index]
    ex = pd.DataFrame({"txn": torn.index, "process": tx["process"].values, "outcome": tx["outcome"].values,
                       "visible": torn["sum"].values, "written": torn["size"].values})
    return Found(len(torn), _examples(ex))


def inconsistent_offsets(t: Tables) -> Found:
    """One partition offset observed (read, or acknowledged to a writer) holding different values."""
    prepare(t)
    acked = t.writes[t.writes["offset"].notna()]
    apos = position(acked["tid"], acked["partition"], acked["offset"].astype("int64"))
    pairs = pd.DataFrame({"pos": np.concatenate([t.reads["pos"].to_numpy(), apos]),
                          "vid": np.concatenate([t.reads["vid"].to_numpy(), acked["vid"].to_numpy()])}).drop_duplicates()
    n = pairs["pos"].value_counts(sort=False)
    bad_pos = n[n > 1]
    if bad_pos.empty:
        return Found(0)
    reads = t.reads[["topic", "partition", "offset", "vid", "value", "pos"]]
    acked_rows = acked[["topic", "partition", "offset", "vid", "value"]].astype({"offset": "int64"}).assign(pos=apos)
    allpos = pd.concat([reads, acked_rows], ignore_index=True)
    distinct = allpos[allpos["pos"].isin(bad_pos.index[:MAX_EXAMPLES])].drop_duplicates(["pos", "vid"])
    bad = distinct.groupby(["topic", "partition", "offset"]).size()
    keys = bad.index[:MAX_EXAMPLES]
    ex = distinct.set_index(["topic", "partition", "offset"]).loc[keys].groupby(level=[0, 1, 2])["value"].agg(list)
    return Found(len(bad_pos), [{"topic": k[0], "partition": int(k[1]), "offset": int(k[2]), "values": v} for k, v in ex.items()])


def nonmonotonic_send(t: Tables) -> Found:
    """One producer's later transaction landed at lower offsets in a partition than its earlier one."""
    w = _writes_with_outcome(t)
    w = w[(w["outcome"] == OK) & w["offset"].notna()]
    if w.empty:
        return Found(0)
    per = w.groupby(["process", "topic", "partition", "txn"])["offset"].agg(["min", "max"]).reset_index()
    per = per.sort_values(["process", "topic", "partition", "txn"])
    prev_max = per.groupby(["process", "topic", "partition"])["max"].shift()
    prev_txn = per.groupby(["process", "topic", "partition"])["txn"].shift()
    # assign before filtering: pandas aligns an assigned Series to an empty frame by adopting its index
    bad = per.assign(earlier_txn=prev_txn, earlier_max=prev_max)[prev_max.notna() & (per["min"] < prev_max)]
    return Found(len(bad), _examples(bad.rename(columns={"min": "offset"}),
                                     ["process", "topic", "partition", "earlier_txn", "earlier_max", "txn", "offset"]))


def _polls(t: Tables) -> pd.DataFrame:
    """Reader polls in history order, offsets in the order each poll returned them."""
    r = t.reads
    return r[r["source"] == POLL]


def nonmonotonic_poll(t: Tables) -> Found:
    """One reader (assign mode) went backwards, or re-read an offset, in a partition."""
    p = _polls(t)
    if p.empty:
        return Found(0)
    prev = p.groupby(["process", "topic", "partition"], sort=False)["offset"].shift()
    bad = p.assign(previous_offset=prev)[prev.notna() & (p["offset"] <= prev)]
    return Found(len(bad), _examples(bad, ["process", "op", "topic", "partition", "previous_offset", "offset"]))


def poll_skip(t: Tables) -> Found:
    """Between two records one reader got in a row from a partition, a committed record it never got.
    Readers start at offset 0, so the first record they get counts as following offset -1."""
    p = _polls(prepare(t))
    fc = final_committed(t)
    if p.empty or fc.empty:
        return Found(0)
    # Positions are sortable int64s (topic, partition, offset): the committed records strictly
    # between two consecutive polled offsets of one partition are counted by one searchsorted.
    committed = np.unique(fc["pos"].to_numpy())
    cur = p["offset"].to_numpy(np.int64)
    prev = p.groupby(["process", "tid", "partition"], sort=False)["offset"].shift().fillna(-1).to_numpy(np.int64)
    base = p["pos"].to_numpy() - cur
    lo = np.searchsorted(committed, base + prev, side="right")
    hi = np.searchsorted(committed, base + cur, side="left")
    missed = np.where(cur > prev, hi - lo, 0)
    bad = p[missed > 0].assign(previous_offset=prev[missed > 0], committed_skipped=missed[missed > 0])
    return Found(int(missed.astype(bool).sum()),
                 _examples(bad, ["process", "op", "topic", "partition", "previous_offset", "offset", "committed_skipped"]))


def zombie_commit(t: Tables) -> Found:
    """A transaction of an older instance of a transactional.id that committed (``ok``) or became
    visible, although its commit started after a newer instance had finished ``init_transactions``."""
    inits = t.inits[(t.inits["outcome"] == OK) & t.inits["complete_time"].notna()]
    if inits.empty:
        return Found(0)
    # For each instance (process), the first later init of the same transactional.id by another process.
    i = inits.sort_values("complete_time")[["process", "txn_id", "complete_time"]]
    pairs = i.merge(i, on="txn_id", suffixes=("", "_newer"))
    pairs = pairs[(pairs["process"] != pairs["process_newer"]) & (pairs["complete_time_newer"] > pairs["complete_time"])]
    fenced_at = pairs.groupby("process").agg(newer=("process_newer", "first"), fenced_at=("complete_time_newer", "min"))
    tx = t.txns[t.txns["f"] == "txn"].merge(fenced_at, left_on="process", right_index=True)
    started = tx["commit_at"].fillna(tx["invoke_time"])
    late = tx[started > tx["fenced_at"]]
    if late.empty:
        return Found(0)
    prepare(t)
    w = t.writes[t.writes["txn"].isin(late["txn"])]
    seen_txns = set(w.loc[w["vid"].isin(committed_reads(t)["vid"]), "txn"])
    bad = late[(late["outcome"] == OK) | late["txn"].isin(seen_txns)].assign(visible=lambda d: d["txn"].isin(seen_txns))
    return Found(len(bad), _examples(bad, ["txn", "process", "txn_id", "outcome", "visible", "newer", "fenced_at", "commit_at"]))


def copy_exactly_once(t: Tables) -> Found:
    """Every committed input has exactly one committed output (none at or above the group's committed
    offset, when the history has it), and every committed output copies a committed input."""
    fc = final_committed(t)
    out = fc[fc["value"].str.startswith(COPY_PREFIX + "/")]
    if out.empty:
        return Found(0)
    parts = out["value"].str.split("/", n=5, expand=True)
    src = pd.DataFrame({"topic": parts[1], "partition": parts[2].astype("int64"), "offset": parts[3].astype("int64"),
                        "value": parts[5], "out_topic": out["topic"].values, "out_partition": out["partition"].values,
                        "out_offset": out["offset"].values})
    in_topics = set(src["topic"])
    inputs = fc[fc["topic"].isin(in_topics)][["topic", "partition", "offset", "value"]].drop_duplicates(["topic", "partition", "offset"])
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
    ex += [{"orphan_output": f"{r['out_topic']}-{r['out_partition']}@{r['out_offset']}",
            "copies": f"{r['topic']}-{r['partition']}@{r['offset']}"} for r in orphans.head(MAX_EXAMPLES).to_dict("records")]
    return Found(len(bad_inputs) + len(orphans), ex[:MAX_EXAMPLES])


#: Name in verdict.json -> check. Order is the order of DESIGN.md's table.
CHECKS: dict[str, Callable[[Tables], Found]] = {
    "duplicate": duplicate,
    "lost-write": lost_write,
    "aborted-read": aborted_read,
    "torn-transaction": torn_transaction,
    "inconsistent-offsets": inconsistent_offsets,
    "nonmonotonic-send": nonmonotonic_send,
    "nonmonotonic-poll": nonmonotonic_poll,
    "poll-skip": poll_skip,
    "zombie-commit": zombie_commit,
    "copy-exactly-once": copy_exactly_once,
}

__all__ = ["CHECKS", "Found", "committed_reads", "final_committed", "prepare", "INFO"]
