"""The Spark engine's summary: the counts of eight checks and four figures from one query over the
writes and every read (``summary``), which most Spark checks consult before running a query of their
own (harness/checker/spark_engine.py), and whose per-value table ``g0`` and ``g1c`` reuse
(harness/checker/spark_cycles.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from harness.checker.spark_history import SparkHistory, packed_pos, rows_in, with_poll_times
from harness.history import store
from harness.history.model import FAIL, INFO, OK

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: Partitions of the summary's grouping by value: 8 per core, and more for a large history, so
#: that none holds more than ``SUMMARY_ROWS_PER_PARTITION`` rows (an executor of 512 MB ran out of
#: heap at 24M rows per partition, on 100M values) nor more than ``VALUES_PER_SUMMARY_PARTITION``
#: values: then every value of a partition fits Spark's first-level hash map of the aggregation
#: (generated code, one probe), sized for them by ``FAST_MAP_BITS``; past it, each new value also
#: costs a miss there and a lookup in the generic map. At 10M values, 64 partitions and 2^18
#: entries took the summary's Spark tasks from 31.5 s of CPU to 22.8 s (16 partitions, 2^16).
SORTED_PARTITIONS_PER_CORE = 8
SUMMARY_ROWS_PER_PARTITION = 3_000_000
VALUES_PER_SUMMARY_PARTITION = 160_000
FAST_MAP_BITS = "spark.sql.codegen.aggregate.fastHashMap.capacityBit"


def _summary_partitions(h: SparkHistory) -> int:
    return max(h.spark.sparkContext.defaultParallelism * SORTED_PARTITIONS_PER_CORE, -(-h.rows // SUMMARY_ROWS_PER_PARTITION),
               -(-h.n_values // VALUES_PER_SUMMARY_PARTITION))


def fast_map_bits(h: SparkHistory) -> int:
    """``FAST_MAP_BITS`` for the summary's partitions: room for a quarter more than their values,
    between Spark's default (16) and 20 (a bigger map only costs its memory)."""
    per_partition = -(-h.n_values // _summary_partitions(h))
    return min(20, max(16, int(per_partition * 1.25).bit_length()))


def _vid_range(h: SparkHistory) -> Any:
    """A column that puts each value in one of the summary's partitions by its id's range, without
    sampling the data as ``repartitionByRange`` would (a pass over it): ids are dense, ``0 .. rows of
    the values table``. Spark places a row by the hash of its partitioning column, so each range is
    named by a number whose hash lands in that range's partition."""
    from pyspark.sql import functions as F

    n = _summary_partitions(h)
    probe = h.spark.range(64 * n).select("id", F.pmod(F.hash("id"), F.lit(n)).alias("p")).groupBy("p").agg(F.min("id"))
    key_of: dict[int, int] = {int(p): int(i) for p, i in probe.collect()}
    size = max(1, -(-h.n_values // n))
    if len(key_of) < n:  # never with 64 candidates per partition; then hashes of the range numbers
        return (F.col("vid") / size).cast("long")
    return F.element_at(F.array(*(F.lit(key_of[i]) for i in range(n))), (F.col("vid") / size).cast("int") + 1)


#: The bits of a row of the summary's union (``summary``), OR-ed per value and then per transaction:
#: what kind of read it is, and for a write, whether it was acknowledged and its transaction's
#: outcome (a write whose transaction is not in the transactions table has none of those).
POLLED, FINAL_COMMITTED, CV_ON_WRITTEN, WRITTEN, ACKED, OUT_OK, OUT_FAIL, OUT_INFO, IN_TXN = (1 << i for i in range(9))
#: And what the summary derives per value from them and its positions (``per_vid``'s ``f``).
PRECOMMITTED, HAS_FC, HAS_CV, DUP, ONE_CV_POS, MULTI_POS = (1 << i for i in range(9, 15))
_OUTCOME_BIT = {OK: OUT_OK, FAIL: OUT_FAIL, INFO: OUT_INFO}


def _written_tids(h: SparkHistory) -> set[int]:
    """The topic ids some send wrote to, read batch by batch from the writes' one small-integer
    column on the driver (memory stays flat; a Spark job for it cost more to plan than to run)."""
    import pyarrow.parquet as pq

    tids: set[int] = set()
    for batch in pq.ParquetFile(store.table_file(h.run_dir, "writes")).iter_batches(columns=["tid"], batch_size=1 << 20):
        tids.update(int(t) for t in np.unique(batch.column(0).to_numpy(zero_copy_only=False)))
    return tids


def summary(h: SparkHistory) -> dict[str, Any]:
    """The counts of eight checks and four figures in one query (``_summary``), computed on first use
    and kept on ``h``."""
    if h.summary_counts is None:
        h.summary_counts = _summary(h)
    return h.summary_counts


def _summary(h: SparkHistory) -> dict[str, Any]:
    """The counts of eight checks and four figures in one query: the writes and every read meet once,
    grouped by value (one shuffle); that per-value table is grouped again by transaction and by
    position (two smaller shuffles), and both sum to one row.

    A count here is exact under the conditions it states; each check uses it only to find nothing
    (``0``) and otherwise runs its own query, which also picks the examples. The conditions:
    each value written at most once (``multi_written``) for the per-transaction counts, each value
    at one position (``multi_positioned``) for ``inconsistent``.

    The rows that meet are narrow: value, transaction, position, one time (a write's commit, a
    poll's completion) and the bits above; the shuffle and the hashing of ~4 rows per value are
    most of the engine's time."""
    from pyspark.sql import functions as F

    per_vid = _per_value(h, _meeting_rows(h))
    by_pos = (per_vid.where(F.col("at").isNotNull()).select("at").repartition(_summary_partitions(h), "at")
              .groupBy("at").count().agg(_total(F.col("count") > 1).alias("inconsistent")))
    try:
        row = _per_txn_totals(per_vid).crossJoin(by_pos).first()
        assert row is not None  # aggregates without grouping have one row
        counts = {k: int(v) for k, v in row.asDict().items()}
    except BaseException:
        per_vid.unpersist()
        raise
    if counts["multi_positioned"] or counts["inconsistent"]:
        per_vid.unpersist()
    else:  # each value's writer, position and first poll: g0 and g1c's (spark_cycles.prepare)
        h.per_value = per_vid
    # every read is a poll, in the final read_committed scan, or neither
    counts["n_unc"] = rows_in(h.run_dir, "reads") - counts["n_poll"] - counts["n_fc"]
    return counts


def _bits(flags: dict[int, Any]) -> Any:
    """A column OR-ing each ``bit`` whose condition holds."""
    from pyspark.sql import functions as F

    out = F.lit(0)
    for bit, cond in flags.items():
        out = out.bitwiseOR(F.when(cond, F.lit(bit)).otherwise(F.lit(0)))
    return out


def _meeting_rows(h: SparkHistory) -> DataFrame:
    """The writes and every read as one narrow table (value, transaction, position, time ``t``, bits
    ``k``), its rows placed by their value's range (``bucket``) in the summary's partitions."""
    from pyspark.sql import functions as F

    written_tids = sorted(_written_tids(h))
    # a transaction's bits are made once per transaction, before it is shipped to the writes
    tx = h.tx.select("txn", "w_commit_at", _bits({IN_TXN: F.col("w_is_txn"),
                                                  **{bit: F.col("w_out") == out for out, bit in _OUTCOME_BIT.items()}}).alias("tk"))
    w = h.raw_writes.join(tx, "txn", "left").select(
        "vid", "txn", packed_pos(F.col("tid"), F.col("partition"), F.col("offset")).alias("pos"), F.col("w_commit_at").alias("t"),
        _bits({WRITTEN: F.lit(True), ACKED: F.col("offset").isNotNull()}).bitwiseOR(F.coalesce("tk", F.lit(0))).alias("k"))
    r = with_poll_times(h).select(
        "vid", F.lit(None).cast("long").alias("txn"), "pos", F.col("done_at").alias("t"),
        _bits({POLLED: F.col("poll"), FINAL_COMMITTED: F.col("fc"),
               CV_ON_WRITTEN: F.col("cv") & F.col("tid").isin(written_tids)}).alias("k"))
    # Each value is a group of a few rows, grouped after one shuffle (Spark 4.0 still hashes them
    # twice there: it drops a sort put before the aggregation, and cannot skip the partial one).
    # Ranges of values, not hashes: a transaction's values are neighbours, so the next grouping (by
    # transaction) mostly happens before its shuffle.
    bucket = _vid_range(h).alias("bucket")
    return w.unionByName(r).withColumn("bucket", bucket).repartition(_summary_partitions(h), "bucket")


def _per_value(h: SparkHistory, u: DataFrame) -> DataFrame:
    """One row per value, kept (persisted) for the two groupings that follow: its counts, its position
    when it has one, its first poll's completion, and what else it is as bits (the cache costs by the
    column). Kept on for g0 and g1c while each value is at one place and each position holds one:
    each value's writer, position and first poll are theirs, so they need no grouping by value of their own."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    k = F.col("k").bitwiseAND
    kinds = F.col("kinds").bitwiseAND
    cv_pos = F.when(k(POLLED | FINAL_COMMITTED) > 0, F.col("pos"))
    return (u.groupBy("bucket", "vid").agg(
        F.max("txn").alias("txn"), F.bit_or("k").alias("kinds"), F.sum(k(WRITTEN)).alias("nw"), F.sum(k(POLLED)).alias("n_poll"),
        F.sum(k(FINAL_COMMITTED)).alias("n_fc"), F.min(F.when(k(WRITTEN) > 0, F.col("t"))).alias("commit_at"),
        F.min(F.when(k(WRITTEN) == 0, F.col("t"))).alias("first_poll"),
        F.min(cv_pos).alias("cv_lo"), F.max(cv_pos).alias("cv_hi"), F.min("pos").alias("lo"), F.max("pos").alias("hi"))
        .select("txn", F.shiftright("nw", WRITTEN.bit_length() - 1).alias("nw"), "n_poll",
                F.shiftright("n_fc", FINAL_COMMITTED.bit_length() - 1).alias("n_fc"),
                F.when(F.col("lo") == F.col("hi"), F.col("lo")).alias("at"), "first_poll",
                kinds(ACKED | CV_ON_WRITTEN | OUT_OK | OUT_FAIL | OUT_INFO | IN_TXN).bitwiseOR(_bits({
                    PRECOMMITTED: F.col("first_poll") < F.col("commit_at"), HAS_FC: kinds(FINAL_COMMITTED) > 0,
                    HAS_CV: kinds(POLLED | FINAL_COMMITTED) > 0, DUP: F.col("cv_lo") != F.col("cv_hi"),
                    ONE_CV_POS: F.col("cv_lo") == F.col("cv_hi"), MULTI_POS: F.col("lo") != F.col("hi")})).alias("f"))
        .persist(StorageLevel.MEMORY_AND_DISK))


def _total(cond: Any, of: Any = None) -> Any:
    """The sum of ``of`` (1 when None) over the rows where ``cond`` holds; 0 over none."""
    from pyspark.sql import functions as F

    return F.coalesce(F.sum(F.when(cond, F.lit(1) if of is None else of).otherwise(0)), F.lit(0))


def _per_txn_totals(per_vid: DataFrame) -> DataFrame:
    """``per_vid`` grouped by transaction, then summed to one row of the summary's per-transaction counts."""
    from pyspark.sql import functions as F

    def has(bit: int) -> Any:
        return F.col("f").bitwiseAND(bit) > 0

    def n(cond: Any) -> Any:
        return F.sum(cond.cast("long"))

    written = F.col("nw") > 0
    has_fc, has_cv = has(HAS_FC), has(HAS_CV)
    # a transaction's outcome: the bits of its values' writes (a value written once has its own
    # transaction's; the per-transaction counts are used only then)
    t = per_vid.groupBy("txn").agg(
        F.bit_or(F.col("f").bitwiseAND(OUT_OK | OUT_FAIL | OUT_INFO | IN_TXN)).alias("outcome"),
        F.sum("nw").alias("written"), n(has(ACKED)).alias("acked"), n(has(PRECOMMITTED)).alias("precommitted"),
        n(written & has_fc).alias("visible"), n(written & has_cv).alias("cv_values"), n(written & has_cv & ~has_fc).alias("seen_not_kept"),
        n(has(DUP)).alias("dup"), n(~written & has(CV_ON_WRITTEN)).alias("phantom"), n(has_fc).alias("committed"),
        n(F.col("nw") > 1).alias("multi_written"), n(has(MULTI_POS)).alias("multi_positioned"),
        F.sum(F.when(~(has_fc & has(ONE_CV_POS)), F.col("n_poll")).otherwise(0)).alias("polls_off_committed"),
        F.sum("n_poll").alias("n_poll"), F.sum("n_fc").alias("n_fc"))
    vis, wr = F.col("visible"), F.col("written")

    def out_is(bit: int) -> Any:
        return F.col("outcome").bitwiseAND(bit) > 0

    ok, fail, info_out, in_txn = out_is(OUT_OK), out_is(OUT_FAIL), out_is(OUT_INFO), out_is(IN_TXN)
    info = info_out & (wr > 0)
    return t.agg(
        _total(in_txn & (vis > 0) & (vis < wr)).alias("torn"),
        (_total(ok, wr - vis) + _total(info_out, F.col("seen_not_kept"))).alias("lost"),
        _total(fail, F.col("cv_values")).alias("aborted"),
        _total(info & (vis == wr)).alias("info_committed"), _total(info & (vis == 0)).alias("info_aborted"),
        _total(info & (vis > 0) & (vis < wr)).alias("info_torn"),
        # what there is to look at (``_nothing``): values of ok, fail and any transactions, acknowledged offsets
        (_total(ok, wr) + _total(info_out, F.col("cv_values"))).alias("ok_written"), _total(fail, wr).alias("fail_written"),
        _total(in_txn, wr).alias("txn_written"), _total(ok, F.col("acked")).alias("ok_acked"),
        *(F.coalesce(F.sum(c), F.lit(0)).alias(c) for c in (
            "dup", "phantom", "committed", "multi_written", "multi_positioned", "polls_off_committed", "acked", "precommitted",
            "written", "n_poll", "n_fc")))
