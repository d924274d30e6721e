"""The checker's Spark engine: the same checks and figures as the default (numpy/pandas) engine,
as Spark DataFrame jobs over the run's Parquet history, so a history larger than memory can be
checked (``EOS_CHAOS_SPARK_MASTER`` points it at a real Spark cluster).

Counts, ``valid``, ``skipped`` and the figures in ``stats`` are the default engine's, exactly
(``tests/unit/test_spark_engine.py`` holds both engines to it). Examples name the same kind of
anomaly; where several exist, each engine picks its first five in history order, so the two can
pick different ones when the order is a tie.

Only the few rows an example shows, and the markers of the Spark job (one per micro-batch), are
brought to the driver.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial, wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from harness.checker import copies, figures, progress, run_checks, spark_cycles
from harness.checker import sparkjob_check as sc
from harness.checker.catalog import CATALOG, Check, Subject
from harness.checker.checks import (
    MAX_EXAMPLES,
    NO_COPIER,
    NO_SECOND_INSTANCE,
    Found,
    lso_stall_of,
)
from harness.checker.spark_history import SparkHistory, position_at, shipped, with_poll_times
from harness.checker.spark_summary import FAST_MAP_BITS, fast_map_bits, summary
from harness.checker.sparkjob_check import spark_stats
from harness.checker.verdict import Verdict
from harness.history import store
from harness.history.model import (
    ABORTED_ON_PURPOSE,
    COPY_PREFIX,
    FAIL,
    FAULT_START,
    INFO,
    MARKER_PREFIX,
    OFFSET_BITS,
    OK,
    PARTITION_BITS,
    POLL,
    SPARK_PREFIX,
    TXN,
    position,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

SHUFFLE_PARTITIONS_DEFAULT = 200  # Spark's, when the session sets none
#: The other queries' shuffle partitions: the session's, or one per this many rows if more.
ROWS_PER_SHUFFLE_PARTITION = 10_000_000
#: Settings for the check's duration (the session's own are put back after). The summary's one
#: cached table, uncompressed: choosing each column's encoding cost more than the summary's
#: aggregation (at 1M values its Spark tasks took 2.5 s of CPU instead of 3.1 s); it is read twice,
#: from memory, and spills to disk beyond it.
CHECK_CONF = {"spark.sql.inMemoryColumnarStorage.compressed": "false"}


def _rows(df: DataFrame, cols: list[str], order: list[str], h: SparkHistory | None = None) -> list[dict[str, Any]]:
    """The first ``MAX_EXAMPLES`` rows of ``df`` in ``order``; with ``h``, their ``value`` looked up
    after the cut (so only those few rows meet the values table)."""
    first = df.orderBy(*order).limit(MAX_EXAMPLES)
    if h is not None:
        first = h.value_of_few(first).orderBy(*order)
    return [{k: _plain(r[k]) for k in cols} for r in first.collect()]


def _plain(v: Any) -> Any:
    if isinstance(v, float) and np.isnan(v):
        return None
    return v


# ---------------------------------------------------------------------------------------------- checks
def _written_once(h: SparkHistory) -> bool:
    return bool(summary(h)["multi_written"] == 0)


def _no_lso_stall(h: SparkHistory) -> bool:
    return _written_once(h) and not (h.meta.get("lso") or {}).get("stalled_at")


def _unless(*zero: str, exact: Callable[[SparkHistory], bool] | None = None
            ) -> Callable[[Callable[[SparkHistory], Found]], Callable[[SparkHistory], Found]]:
    """A check that is skipped (count 0) when the summary's counts ``zero`` are all 0 and ``exact(h)``
    says those counts are exact for this history; otherwise its own query counts and picks examples."""

    def wrap(check: Callable[[SparkHistory], Found]) -> Callable[[SparkHistory], Found]:
        @wraps(check)
        def run(h: SparkHistory) -> Found:
            s = summary(h)
            if all(s[k] == 0 for k in zero) and (exact is None or exact(h)):
                return Found(0)
            return check(h)

        return run

    return wrap


@_unless("dup")
def duplicate(h: SparkHistory) -> Found:
    from pyspark.sql import functions as F

    dup = h.reads.where("cv").groupBy("vid").agg(F.countDistinct("pos").alias("n")).where("n > 1")
    n = dup.count()
    if not n:
        return Found(0)
    vids = [r.vid for r in dup.orderBy("vid").limit(MAX_EXAMPLES).collect()]
    positions = (h.reads.where(F.col("cv") & F.col("vid").isin(vids)).groupBy("vid", "topic", "partition", "offset")
                 .agg(F.min("row").alias("row")).orderBy("row").collect())
    writers = _first_writers(h, vids)
    values = {r.vid: r.value for r in h.values.where(F.col("vid").isin(vids)).collect()}
    examples = [{"value": values.get(v), "positions": [position(x.topic, x.partition, x.offset) for x in positions if x.vid == v],
                 "writer_op": writers[v].txn if v in writers else None,
                 "writer_process": writers[v].w_proc if v in writers else None} for v in vids]
    return Found(n, examples)


def _first_writers(h: SparkHistory, vids: list[int]) -> dict[int, Any]:
    """vid -> the first write of that value in history order (its transaction and process)."""
    from pyspark.sql import functions as F

    w = h.writes.where(F.col("vid").isin(vids))
    first = w.groupBy("vid").agg(F.min("row").alias("row")).join(w, ["vid", "row"]).collect()
    return {r.vid: r for r in first}


@_unless("lost", exact=_no_lso_stall)
def lost_write(h: SparkHistory) -> Found:
    from pyspark.sql import functions as F

    # committed: acknowledged (ok), or seen by a read_committed reader (info: the read proves it)
    seen = h.cv_vids.withColumn("seen", F.lit(True))
    committed = h.writes.join(seen, "vid", "left").where(
        (F.col("w_out") == OK) | ((F.col("w_out") == INFO) & F.col("seen").isNotNull()))
    missing = committed.drop("seen").join(h.fc_vids, "vid", "left_anti")
    stalled = (h.meta.get("lso") or {}).get("stalled_at") or {}
    if stalled:
        lso = h.spark.createDataFrame([(k, int(v)) for k, v in stalled.items()], "tp string, lso long")
        # where the value is: its acknowledged offset, else where a reader saw it
        seen_at = h.reads.where("cv").groupBy("vid").agg(F.max("offset").alias("seen_at"))
        missing = (missing.join(seen_at, "vid", "left").withColumn("at", F.coalesce("offset", "seen_at"))
                   .withColumn("tp", F.concat_ws("-", "topic", F.col("partition").cast("string")))
                   .join(F.broadcast(lso), "tp", "left")
                   .where(F.col("lso").isNull() | F.col("at").isNull() | (F.col("at") < F.col("lso"))))
    n = missing.count()
    ex = _rows(missing.withColumnRenamed("w_proc", "process"),
               ["value", "txn", "process", "topic", "partition", "offset"], ["row"], h) if n else []
    return Found(n, ex)


@_unless("aborted", exact=_written_once)
def aborted_read(h: SparkHistory) -> Found:
    from pyspark.sql import functions as F

    failed = h.writes.where(F.col("w_out") == FAIL).select("vid").distinct()
    seen = h.reads.where("cv").join(failed, "vid", "left_semi")
    n = seen.select("vid").distinct().count()
    if not n:
        return Found(0)
    reads = _first_reads(h, seen)
    writers = _first_writers(h, [r.vid for r in reads])
    examples = [{"value": r.value, "writer_op": writers[r.vid].txn if r.vid in writers else None,
                 "writer_process": writers[r.vid].w_proc if r.vid in writers else None, "read_op": r.op,
                 "reader": r.process, "topic": r.topic, "partition": r.partition, "offset": r.offset} for r in reads]
    return Found(n, examples)


def _first_reads(h: SparkHistory, seen: DataFrame) -> list[Any]:
    """The first ``MAX_EXAMPLES`` of each value's first read in ``seen``, in history order, with values."""
    from pyspark.sql import functions as F

    first = seen.groupBy("vid").agg(F.min("row").alias("row")).join(seen, ["vid", "row"])
    return h.value_of_few(first.orderBy("row").limit(MAX_EXAMPLES)).orderBy("row").collect()


@_unless("precommitted")
def precommitted_read(h: SparkHistory) -> Found:
    """The default engine's check: polls that completed before their value's transaction invoked
    its commit (the earliest commit among the value's writes)."""
    from pyspark.sql import functions as F

    commit = (h.writes.where(F.col("w_commit_at").isNotNull()).groupBy("vid").agg(F.min("w_commit_at").alias("commit_invoked")))
    seen = (with_poll_times(h).where("poll").join(commit, "vid")
            .where(F.col("done_at") < F.col("commit_invoked")))
    n = seen.select("vid").distinct().count()
    if not n:
        return Found(0)
    examples = [{"value": r.value, "reader": r.process, "read_op": r.op, "read_done": r.done_at, "commit_invoked": r.commit_invoked,
                 "position": position(r.topic, r.partition, r.offset)} for r in _first_reads(h, seen)]
    return Found(n, examples)


@_unless("phantom")
def phantom_read(h: SparkHistory) -> Found:
    """The default engine's check: committed reads, on topics some recorded send wrote to, of values
    no recorded send wrote."""
    seen = (h.reads.where("cv").join(h.writes.select("tid").distinct(), "tid", "left_semi")
            .join(h.writes.select("vid"), "vid", "left_anti"))
    n = seen.select("vid").distinct().count()
    if not n:
        return Found(0)
    examples = [{"value": r.value, "reader": r.process, "read_op": r.op, "position": position(r.topic, r.partition, r.offset)}
                for r in _first_reads(h, seen)]
    return Found(n, examples)


def _visible_per_txn(h: SparkHistory, where: Any) -> DataFrame:
    from pyspark.sql import functions as F

    fc = h.fc_vids.withColumn("in_fc", F.lit(1))
    return (h.writes.where(where).join(fc, "vid", "left")
            .groupBy("txn").agg(F.count("*").alias("written"), F.sum(F.coalesce("in_fc", F.lit(0))).alias("visible")))


@_unless("torn", exact=_written_once)
def torn_transaction(h: SparkHistory) -> Found:
    from pyspark.sql import functions as F

    per = _visible_per_txn(h, F.col("w_is_txn") & F.col("w_known"))
    torn = per.where((F.col("visible") > 0) & (F.col("visible") < F.col("written")))
    n = torn.count()
    ex = _rows(torn.join(h.txns, "txn"), ["txn", "process", "outcome", "visible", "written"], ["txn"]) if n else []
    return Found(n, ex)


@_unless("inconsistent", "multi_positioned")
def inconsistent_offsets(h: SparkHistory) -> Found:
    from pyspark.sql import functions as F

    pairs = (h.reads.select("pos", "vid")
             .unionByName(h.writes.where(F.col("offset").isNotNull()).select("pos", "vid")).distinct())
    bad = pairs.groupBy("pos").agg(F.count("*").alias("n")).where("n > 1")
    n = bad.count()
    if not n:
        return Found(0)
    topics = {r.tid: r.topic for r in h.reads.select("tid", "topic").unionByName(h.writes.select("tid", "topic")).distinct().collect()}
    positions = [r.pos for r in bad.orderBy("pos").limit(MAX_EXAMPLES).collect()]
    vals = h.value_of_few(pairs.where(F.col("pos").isin(positions))).collect()
    examples = [{**position_at(topics, pos), "values": sorted({str(v.value) for v in vals if v.pos == pos})}
                for pos in positions]
    return Found(n, examples)


# a value not where its acknowledgement put it is at two positions
@_unless("multi_positioned")
def wrong_offset(h: SparkHistory) -> Found:
    """The default engine's check: an acknowledged write whose value is in the final committed
    scan, but not at the acknowledged offset, where no read saw anything."""
    from pyspark.sql import functions as F

    fc = h.reads.where("fc").select("vid", F.col("pos").alias("fpos"))
    acked = h.writes.where(F.col("offset").isNotNull()).select("vid", "row", "pos")
    per = (acked.join(fc, "vid").groupBy("vid", "row", "pos")
           .agg(F.max((F.col("fpos") == F.col("pos")).cast("int")).alias("hit"), F.min("fpos").alias("found")))
    bad = per.where(F.col("hit") == 0).join(h.reads.select("pos").distinct(), "pos", "left_anti")
    n = bad.count()
    if not n:
        return Found(0)
    first = bad.orderBy("row").limit(MAX_EXAMPLES).collect()
    rows = {r.row: r for r in h.value_of_few(h.writes.where(F.col("row").isin([r.row for r in first]))).collect()}
    topics = {r.tid: r.topic for r in h.reads.select("tid", "topic").distinct().collect()}
    examples = [{"value": rows[b.row].value, "txn": rows[b.row].txn, "process": rows[b.row].w_proc,
                 "acknowledged": position(rows[b.row].topic, rows[b.row].partition, rows[b.row].offset),
                 "found_at": position_at(topics, b.found)} for b in first]
    return Found(n, examples)


def _process_order(h: SparkHistory) -> DataFrame:
    """Each process's rank in order of first appearance in the transactions table (the default
    engine's factorize order), for examples in the same order."""
    from pyspark.sql import functions as F

    return h.txns.groupBy("process").agg(F.min("txn").alias("proc_rank")).withColumnRenamed("process", "w_proc")


def _send_order(h: SparkHistory) -> tuple[bool, bool]:
    """Whether some committed send landed below the one sent before it in its transaction and
    partition, and whether some transaction's first record landed below the previous one's last in
    a producer's partition: one window over the records in (producer, partition, transaction, send)
    order serves both. The second is exact only when the first is False (each transaction's records
    then rise in send order, so its first is its lowest and its last its highest)."""
    if h.send_order is None:
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        w = Window.partitionBy("lane").orderBy("txn", "row")
        # the producers numbered in the transactions table, before it meets the writes (which then
        # carry a number, not a name)
        ok_txns = _with_proc_code(h.txns.where(F.col("outcome") == OK).select("txn", "process"), "process",
                                  _names(h, "txns", "process")).select("txn", "proc_code")
        sent = h.raw_writes.where(F.col("offset").isNotNull()).join(shipped(ok_txns, h.tx_shipped), "txn")
        sent = (sent.select(_lane().alias("lane"), "txn", "row", "offset")
                .withColumn("prev_txn", F.lag("txn").over(w)).withColumn("prev_offset", F.lag("offset").over(w)))
        lower = F.col("offset") < F.col("prev_offset")
        r = sent.agg(F.max((lower & (F.col("prev_txn") == F.col("txn"))).cast("int")).alias("within"),
                     F.max((lower & (F.col("prev_txn") != F.col("txn"))).cast("int")).alias("across")).first()
        h.send_order = (bool(r and r.within), bool(r and r.across))
    return h.send_order


def nonmonotonic_send(h: SparkHistory) -> Found:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    within, across = _send_order(h)
    if not within and not across:
        return Found(0)
    groups = (h.writes.where((F.col("w_out") == OK) & F.col("offset").isNotNull())
              .groupBy("w_proc", "tid", "partition", "topic", "txn")
              .agg(F.min("offset").alias("g_min"), F.max("offset").alias("g_max")))
    w = Window.partitionBy("w_proc", "tid", "partition").orderBy("txn")
    g = (groups.withColumn("earlier_max", F.lag("g_max").over(w)).withColumn("earlier_txn", F.lag("txn").over(w))
         .where(F.col("g_min") < F.col("earlier_max")))
    n = g.count()
    if not n:
        return Found(0)
    ex = _rows(g.join(_process_order(h), "w_proc").withColumnRenamed("w_proc", "process").withColumnRenamed("g_min", "offset"),
               ["process", "topic", "partition", "earlier_txn", "earlier_max", "txn", "offset"],
               ["proc_rank", "tid", "partition", "txn"])
    return Found(n, ex)


def int_nonmonotonic_send(h: SparkHistory) -> Found:
    """The default engine's check: within one committed transaction and partition, a send landed
    below the send before it (the ``row`` order of the writes is the order they were sent)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    if not _send_order(h)[0]:
        return Found(0)
    w = Window.partitionBy("txn", "tid", "partition").orderBy("row")
    sent = (h.writes.where((F.col("w_out") == OK) & F.col("offset").isNotNull())
            .withColumn("earlier_offset", F.lag("offset").over(w)))
    bad = sent.where(F.col("offset") < F.col("earlier_offset"))
    n = bad.count()
    ex = _rows(bad.withColumnRenamed("w_proc", "process"),
               ["process", "txn", "topic", "partition", "earlier_offset", "offset", "value"], ["txn", "tid", "partition", "row"], h)
    return Found(n, ex)


def _names(h: SparkHistory, table: str, column: str) -> list[str]:
    """The distinct names in a text column of a table (a superset: Parquet's dictionaries can hold
    names no row uses), read batch by batch on the driver: a process column is dictionary-encoded,
    so this reads small integers and a few names, where a Spark job cost more to plan than to run."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    names: set[str] = set()
    f = pq.ParquetFile(store.table_file(h.run_dir, table), read_dictionary=[column])
    for batch in f.iter_batches(columns=[column], batch_size=1 << 20):
        col = batch.column(0)
        names.update(col.dictionary.to_pylist() if pa.types.is_dictionary(col.type) else pc.unique(col).to_pylist())
    return sorted(n for n in names if n is not None)


def _with_proc_code(df: DataFrame, process: str, names: list[str]) -> DataFrame:
    """``df`` with ``proc_code``: its process's number among ``names`` (-1 for none), from a table
    shipped whole to every task: a run has few processes, a generated one (``selftest``) thousands,
    where a literal map in the query took longer to plan than the query to run."""
    from pyspark.sql import functions as F

    codes = df.sparkSession.createDataFrame([(n, i) for i, n in enumerate(names)], f"{process} string, proc_code long")
    return df.join(F.broadcast(codes), process, "left").withColumn("proc_code", F.coalesce(F.col("proc_code"), F.lit(-1).cast("long")))


def _lane() -> Any:
    """One long naming (process, topic, partition) from ``proc_code``, ``tid`` and ``partition``, so
    that a window over it sorts on two longs, not on a string first."""
    from pyspark.sql import functions as F

    return (F.shiftleft(F.col("proc_code"), 40).bitwiseOR(F.shiftleft(F.col("tid").cast("long"), 24))
            .bitwiseOR(F.col("partition").cast("long")))


def _polls_with_prev(h: SparkHistory) -> DataFrame:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    w = Window.partitionBy("process", "tid", "partition").orderBy("row")
    return h.reads.where("poll").withColumn("previous_offset", F.coalesce(F.lag("offset").over(w), F.lit(-1)))


def nonmonotonic_poll(h: SparkHistory) -> Found:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    lean = _with_proc_code(h.reads.where("poll"), "process", _names(h, "reads", "process")).select(_lane().alias("lane"), "row", "offset")
    prev = lean.withColumn("prev", F.lag("offset").over(Window.partitionBy("lane").orderBy("row")))
    n = h.nonmonotonic_polls = prev.where(F.col("offset") <= F.col("prev")).count()
    if not n:
        return Found(0)
    bad = _polls_with_prev(h).where((F.col("previous_offset") >= 0) & (F.col("offset") <= F.col("previous_offset")))
    ex = _rows(bad, ["process", "op", "topic", "partition", "previous_offset", "offset"], ["row"]) if n else []
    return Found(n, ex)


def poll_skip(h: SparkHistory) -> Found:
    """Committed records strictly between two consecutive polled offsets, counted with one running
    count per partition: queries for "< offset" sort before a committed record at that offset,
    queries for "<= previous" after it."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    if _no_poll_skip(h):
        return Found(0)
    polls = _polls_with_prev(h).where(F.col("offset") > F.col("previous_offset"))
    if polls.limit(1).count() == 0 or h.reads.where("fc").limit(1).count() == 0:
        return Found(0)
    committed = h.reads.where("fc").select("tid", "partition", F.col("offset").alias("at"), F.lit(1).alias("tie"),
                                            F.lit(1).alias("is_fc"), F.lit(None).cast("long").alias("qrow"),
                                            F.lit(None).cast("string").alias("q"))
    upto = polls.select("tid", "partition", F.col("offset").alias("at"), F.lit(0).alias("tie"), F.lit(0).alias("is_fc"),
                        F.col("row").alias("qrow"), F.lit("cur").alias("q"))
    after = polls.select("tid", "partition", F.col("previous_offset").alias("at"), F.lit(2).alias("tie"),
                         F.lit(0).alias("is_fc"), F.col("row").alias("qrow"), F.lit("prev").alias("q"))
    w = Window.partitionBy("tid", "partition").orderBy("at", "tie").rowsBetween(Window.unboundedPreceding, 0)
    counted = (committed.unionByName(upto).unionByName(after).withColumn("below", F.sum("is_fc").over(w))
               .where(F.col("q").isNotNull()))
    per = counted.groupBy("qrow").agg(F.sum(F.when(F.col("q") == "cur", F.col("below")).otherwise(-F.col("below")))
                                      .alias("committed_skipped"))
    bad = per.where("committed_skipped > 0").join(polls, F.col("qrow") == F.col("row"))
    n = bad.count()
    ex = _rows(bad, ["process", "op", "topic", "partition", "previous_offset", "offset", "committed_skipped"], ["row"]) if n else []
    return Found(n, ex)


def _no_poll_skip(h: SparkHistory) -> bool:
    """No poll skipped a committed record, known without ordering the polls: when every reader's
    polls of a partition rise (``nonmonotonic-poll`` found none) and each lands on a committed record,
    the records a reader skipped up to its last poll of a partition are the committed records up to
    there minus its polls there. Readers start at offset 0."""
    from pyspark.sql import functions as F

    if summary(h)["polls_off_committed"] or (h.nonmonotonic_polls is None and nonmonotonic_poll(h).count) or h.nonmonotonic_polls:
        return False
    keys = h.reads.where("poll").groupBy("process", "tid", "partition").agg(F.max("offset").alias("hi"))
    k = F.broadcast(keys)
    upto = h.reads.where("fc").join(k, ["tid", "partition"]).where(F.col("offset") <= F.col("hi")).count()
    return bool(upto == summary(h)["n_poll"])


def zombie_commit(h: SparkHistory) -> Found:
    from pyspark.sql import functions as F

    inits = h.inits.where((F.col("outcome") == OK) & F.col("complete_time").isNotNull()).select(
        "process", "txn_id", "complete_time")
    newer = inits.select(F.col("process").alias("process_newer"), "txn_id", F.col("complete_time").alias("t_newer"))
    pairs = inits.join(newer, "txn_id").where((F.col("process") != F.col("process_newer"))
                                              & (F.col("t_newer") > F.col("complete_time")))
    if pairs.limit(1).count() == 0:
        return Found(0, skipped=NO_SECOND_INSTANCE)
    fenced = pairs.groupBy("process").agg(F.min_by("process_newer", "t_newer").alias("newer"),
                                          F.min("t_newer").alias("fenced_at"))
    late = (h.txns.where(F.col("f") == TXN).join(fenced, "process")
            .where(F.coalesce("commit_at", "invoke_time") > F.col("fenced_at")))
    if late.limit(1).count() == 0:
        return Found(0)
    seen = (h.writes.join(late.select("txn"), "txn", "left_semi").join(h.cv_vids, "vid", "left_semi")
            .select("txn").distinct().withColumn("visible", F.lit(True)))
    bad = (late.join(seen, "txn", "left").withColumn("visible", F.coalesce("visible", F.lit(False)))
           .where((F.col("outcome") == OK) | F.col("visible")))
    n = bad.count()
    ex = _rows(bad, ["txn", "process", "txn_id", "outcome", "visible", "newer", "fenced_at", "commit_at"], ["txn"]) if n else []
    return Found(n, ex)


def copy_exactly_once(h: SparkHistory) -> Found:
    """The default engine's check: values in the copiers' output topics that are not copies are not
    judged, a malformed copy is a finding (harness/checker/copies.py)."""
    from pyspark.sql import functions as F

    copy_topics = h.prefixed_topics(COPY_PREFIX)
    if not copy_topics:
        return Found(0, skipped=NO_COPIER)
    fc = h.reads.where("fc")
    parts, well_formed = copies.spark_copy(F.col("value"))
    out = (h.value_of(fc.where(F.col("topic").isin(copy_topics))).where(F.col("value").startswith(copies.PREFIX))
           .withColumn("well_formed", well_formed))
    # try_cast: never an error, should the optimizer move a cast before the filter (ANSI casts raise)
    src = out.where("well_formed").select(
        F.get(parts, 1).alias("topic"), F.get(parts, 2).try_cast("long").alias("partition"),
        F.get(parts, 3).try_cast("long").alias("offset"),
        F.col("topic").alias("out_topic"), F.col("partition").alias("out_partition"),
        F.col("offset").alias("out_offset"), F.col("row").alias("out_row"))
    # the input topics and, under none, the malformed copies: one job
    per_topic = out.groupBy(F.when(F.col("well_formed"), F.get(parts, 1)).alias("topic")).count().collect()
    in_topics = [r.topic for r in per_topic if r.topic is not None]
    n_malformed = sum(r["count"] for r in per_topic if r.topic is None)
    key = ["topic", "partition", "offset"]
    inputs = (fc.where(F.col("topic").isin(in_topics)).groupBy(*key).agg(F.min("row").alias("row"))
              .join(fc.select(*key, "row", "vid"), key + ["row"]))
    n_out = src.groupBy(*key).agg(F.count("*").alias("outputs"))
    merged = inputs.join(n_out, key, "left").withColumn("outputs", F.coalesce("outputs", F.lit(0)))
    has_groups = h.groups.limit(1).count() > 0
    if has_groups:
        g = h.groups.select("topic", F.col("partition").cast("long").alias("partition"), F.col("offset").alias("group_offset"))
        merged = merged.join(g, ["topic", "partition"], "left")
        expected = (F.when(F.col("group_offset").isNull(), -1)
                    .when(F.col("offset") < F.col("group_offset"), 1).otherwise(0))
    else:
        merged = merged.withColumn("group_offset", F.lit(None).cast("long"))
        expected = F.lit(-1)
    merged = merged.withColumn("expected", expected)
    bad = merged.where(F.when(F.col("expected") >= 0, F.col("outputs") != F.col("expected")).otherwise(F.col("outputs") > 1))
    orphans = src.join(inputs.select(*key), key, "left_anti")
    n_bad, n_orphans = bad.count(), orphans.count()
    ex = _rows(bad, ["topic", "partition", "offset", "value", "outputs", "expected", "group_offset"], ["row"], h) if n_bad else []
    ex += [{"orphan_output": position(r.out_topic, r.out_partition, r.out_offset), "copies": position(r.topic, r.partition, r.offset)}
           for r in orphans.orderBy("out_row").limit(MAX_EXAMPLES).collect()]
    ex += [{"malformed_copy": position(r.topic, r.partition, r.offset), "value": r.value}
           for r in out.where(~F.col("well_formed")).orderBy("row").limit(MAX_EXAMPLES).collect()] if n_malformed else []
    return Found(n_bad + n_orphans + n_malformed, ex[:MAX_EXAMPLES])


class _Tally:
    """A check's findings by kind of anomaly: the total, and up to ``MAX_EXAMPLES`` examples of each kind."""

    def __init__(self) -> None:
        self.count = 0
        self.examples: list[dict[str, Any]] = []

    def found(self, kind: str, n: int, rows: list[dict[str, Any]]) -> None:
        self.count += n
        self.examples.extend({"anomaly": kind, **r} for r in rows[:MAX_EXAMPLES])


def spark_exactly_once(h: SparkHistory) -> Found:
    """The default engine's check (harness/checker/sparkjob_check.py): outputs and inputs joined in Spark;
    the markers (one per micro-batch) and ranges collected."""
    import pandas as pd
    from pyspark.sql import functions as F

    from harness.history.model import SPARK_START

    out_topics, marker_topics = h.prefixed_topics(SPARK_PREFIX), h.prefixed_topics(MARKER_PREFIX)
    ran = any(ev["f"] == SPARK_START for ev in h.events)
    if not out_topics and not marker_topics and not ran:
        return Found(0, skipped="no Spark job ran in this history")
    outputs = _spark_outputs(h, out_topics)
    fc = h.reads.where("fc")
    mk = h.value_of(fc.where(F.col("topic").isin(marker_topics))).orderBy("row").select("value").toPandas()
    markers = sc._split(mk["value"], ["prefix", "query", "batch", "process", "ranges"]).astype({"batch": "int64"})
    ranges_pd = sc._ranges(markers, h.events)
    key = ["topic", "partition", "offset"]
    inputs = h.value_of(_spark_inputs(h, outputs))
    n_out = outputs.groupBy(*key).agg(F.count("*").alias("outputs"))
    merged = inputs.join(n_out, key, "left").withColumn("outputs", F.coalesce("outputs", F.lit(0)))
    tally = _Tally()
    dup = merged.where("outputs > 1")
    n = dup.count()
    tally.found("duplicate-output", n, _rows(dup, key + ["value", "outputs"], ["row"]) if n else [])
    ranges = h.spark.createDataFrame(ranges_pd[sc.RANGE_COLUMNS] if len(ranges_pd) else pd.DataFrame(
        {"query": pd.Series(dtype="str"), "batch": pd.Series(dtype="int64"), "tp": pd.Series(dtype="str"),
         "start": pd.Series(dtype="int64"), "end": pd.Series(dtype="int64")}),
        "query string, batch long, tp string, start long, end long")
    if len(ranges_pd):
        m = merged.withColumn("tp", F.concat_ws("-", "topic", F.col("partition").cast("string")))
        covered = m.join(F.broadcast(ranges), "tp").where((F.col("offset") >= F.col("start")) & (F.col("offset") < F.col("end")))
        missing = covered.where("outputs = 0")
        first = missing.groupBy(*key).agg(F.min("row").alias("row"), F.min_by("query", "batch").alias("query"),
                                          F.min("batch").alias("batch")).join(inputs.select(*key, "value"), key)
        n = first.count()
        tally.found("missing-output", n, _rows(first, key + ["value", "query", "batch"], ["row"]) if n else [])
    joined = outputs.join(inputs.select(*key, "value"), key, "left")
    orphan = joined.where(F.col("value").isNull() | (F.col("value") != F.col("in_value")))
    n = orphan.count()
    rows = _rows(orphan, key + ["batch", "process", "out_topic", "out_partition", "out_offset"], ["out_row"]) if n else []
    tally.found("orphan-output", n, [{**{k: r[k] for k in key + ["batch", "process"]},
                                      "output": position(r["out_topic"], r["out_partition"], r["out_offset"])} for r in rows])
    if len(markers):
        _marker_findings(h, tally, outputs, merged, markers, ranges_pd, ranges)
    return Found(tally.count, tally.examples[:MAX_EXAMPLES])


def _spark_outputs(h: SparkHistory, out_topics: list[str]) -> DataFrame:
    """The Spark job's outputs in the final scan, their values parsed: the input's position and
    value, the batch, the process and its query."""
    from pyspark.sql import functions as F

    p = F.split("value", "/", 7)
    outputs = h.value_of(h.reads.where("fc").where(F.col("topic").isin(out_topics))).select(
        F.get(p, 1).alias("topic"), F.get(p, 2).cast("long").alias("partition"), F.get(p, 3).cast("long").alias("offset"),
        F.get(p, 4).cast("long").alias("batch"), F.get(p, 5).alias("process"), F.get(p, 6).alias("in_value"),
        F.col("topic").alias("out_topic"), F.col("partition").alias("out_partition"), F.col("offset").alias("out_offset"),
        F.col("row").alias("out_row"))
    return outputs.withColumn("query", F.regexp_extract("process", r"^(.*)\.[^.]*$", 1))


def _spark_inputs(h: SparkHistory, outputs: DataFrame) -> DataFrame:
    """The first committed read of each position of the job's input topics (those its outputs copy,
    and those its batches' ranges name)."""
    from pyspark.sql import functions as F

    fc = h.reads.where("fc")
    key = ["topic", "partition", "offset"]
    in_topics = set(r.topic for r in outputs.select("topic").distinct().collect())
    for ev in h.events:
        for tp in (ev.get("ranges") or {}) if ev["f"] == "spark-batch" else ():
            in_topics.add(tp.rpartition("-")[0])
    return (fc.where(F.col("topic").isin(sorted(in_topics))).groupBy(*key).agg(F.min("row").alias("row"))
            .join(fc.select(*key, "row", "vid"), key + ["row"]))


def _marker_findings(h: SparkHistory, tally: _Tally, outputs: DataFrame, merged: DataFrame, markers: Any, ranges_pd: Any,
                     ranges: DataFrame) -> None:
    """What the job's markers (one per micro-batch) show: outputs outside their batch's ranges,
    gaps between markers, batches written by several incarnations, inputs no range covers."""
    import pandas as pd
    from pyspark.sql import functions as F

    key = ["topic", "partition", "offset"]
    o = (outputs.where(F.col("query").isin(sorted(set(markers["query"]))))
         .withColumn("tp", F.concat_ws("-", "topic", F.col("partition").cast("string")))
         .join(F.broadcast(ranges), ["query", "batch", "tp"], "left"))
    outside = o.where(F.col("start").isNull() | (F.col("offset") < F.col("start")) | (F.col("offset") >= F.col("end")))
    n = outside.count()
    tally.found("outside-range", n, _rows(outside, key + ["query", "batch", "process", "start", "end"], ["out_row"]) if n else [])
    executor = sc.per_partition_queries(h.events)
    gaps, multi = sc.marker_problems(markers, ranges_pd, executor)
    tally.found("marker-gap", len(gaps), gaps)
    per_batch = outputs.groupBy("query", "batch", "topic", "partition").agg(F.countDistinct("process").alias("incarnations"))
    out_multi = per_batch.where("incarnations > 1").select("query", "batch", "incarnations").toPandas()
    both = pd.concat([multi, out_multi]).drop_duplicates(["query", "batch"]) if len(out_multi) else multi
    tally.found("batch-incarnations", len(both), sc._records(both, ["query", "batch", "incarnations"]))
    bounds = sc.uncovered_bounds(ranges_pd, executor)
    if len(bounds):
        b = h.spark.createDataFrame(bounds, "query string, tp string, upto long")
        m = merged.withColumn("tp", F.concat_ws("-", "topic", F.col("partition").cast("string")))
        below = m.join(F.broadcast(b), "tp").where(F.col("offset") < F.col("upto"))
        covered = (below.join(F.broadcast(ranges), ["query", "tp"])
                   .where((F.col("offset") >= F.col("start")) & (F.col("offset") < F.col("end")))
                   .select("query", *key).distinct())
        left = below.join(covered, ["query", *key], "left_anti")
        n = left.count()
        tally.found("uncovered-input", n, _rows(left, key + ["value", "query", "upto"], key) if n else [])


def lso_stall(h: SparkHistory) -> Found:
    return lso_stall_of(h.meta)


def _has(df: DataFrame) -> bool:
    return df.limit(1).count() > 0


def _there_is(h: SparkHistory, what: Subject) -> bool:
    """The history holds ``what`` (a ``_nothing`` subject): from the summary's totals, which for
    the per-transaction subjects are exact only while each value is written once; otherwise by a
    query of its own."""
    from pyspark.sql import functions as F

    s = summary(h)
    reads = {"cv": s["n_poll"] + s["n_fc"], "polls": s["n_poll"], "fc": s["n_fc"], "offsets": s["acked"]}
    if what in reads:
        return bool(reads[what])
    if what == "positions":
        return bool(s["n_poll"] + s["n_fc"] + s["n_unc"]) or _has(h.raw_writes.where(F.col("offset").isNotNull()))
    if _written_once(h):
        return bool(s[{"ok": "ok_written", "fail": "fail_written", "txn": "txn_written", "acked": "ok_acked"}[what]])
    if what == "ok":
        return _has(h.writes.where(F.col("w_out") == OK)) or _has(
            h.writes.where(F.col("w_out") == INFO).join(h.cv_vids, "vid", "left_semi"))
    cond = {"fail": F.col("w_out") == FAIL, "txn": F.col("w_is_txn") & F.col("w_known"),
            "acked": (F.col("w_out") == OK) & F.col("offset").isNotNull()}[what]
    return _has(h.writes.where(cond))


# ---------------------------------------------------------------------------------------------- stats
def stats(h: SparkHistory) -> dict[str, Any]:
    """The default engine's ``stats`` (harness/checker/__init__.py), computed in Spark."""
    from pyspark.sql import functions as F

    s = summary(h)
    outcome = {r.outcome: r["count"] for r in h.txns.groupBy("outcome").count().collect()}
    if _written_once(h):
        iv: Any = {k: s[f"info_{k}"] for k in ("committed", "aborted", "torn")}
    else:  # a value written twice counts in each of its transactions
        per = _visible_per_txn(h, F.col("w_known")).join(h.txns.select("txn", "outcome"), "txn")
        info = per.where((F.col("outcome") == INFO) & (F.col("written") > 0))
        iv = info.agg(F.sum(F.when(F.col("visible") == F.col("written"), 1).otherwise(0)).alias("committed"),
                      F.sum(F.when(F.col("visible") == 0, 1).otherwise(0)).alias("aborted"),
                      F.sum(F.when((F.col("visible") > 0) & (F.col("visible") < F.col("written")), 1).otherwise(0)).alias("torn")).first()
    committed_values = s["committed"]
    ok_tx = h.txns.where(F.col("outcome") == OK)
    n_ok = int(outcome.get(OK, 0))
    lat = ok_tx.select(((F.col("complete_time") - F.coalesce("commit_at", "invoke_time")) / 1e6).alias("ms")).where(
        F.col("ms").isNotNull())
    duration_s = max(h.meta.get("duration_ns", 0) / 1e9, 1e-9)
    assert iv is not None  # an aggregate without grouping has one row
    spark = spark_stats(h.events)
    under_faults = progress_under_faults(h)
    return {
        **({"spark": spark} if spark is not None else {}),
        **({"progress_under_faults": under_faults} if under_faults is not None else {}),
        "txn": {k: int(outcome.get(k, 0)) for k in (OK, FAIL, INFO)},
        "info_resolved": {k: int(iv[k] or 0) for k in ("committed", "aborted", "torn")},
        "committed_values": int(committed_values),
        "written_values": s["written"],
        "fenced": len(h.meta.get("fenced", [])),
        "retired": len(h.meta.get("retired", [])),
        "recreated": len(h.meta.get("recreated", [])),
        "errors_seen": dict(h.meta.get("errors_seen") or {}),
        "faults": int(h.faults.where(F.col("phase") == FAULT_START).count()),
        "throughput": {"ok_txn_per_s": round(n_ok / duration_s, 2),
                       "committed_values_per_s": round(committed_values / duration_s, 2)},
        "commit_latency_ms": _spark_percentiles(lat),
        "reads": {"polled": s["n_poll"], "final_committed": s["n_fc"], "final_uncommitted": s["n_unc"]},
        **reader_figures(h),
    }


def progress_under_faults(h: SparkHistory) -> dict[str, Any] | None:
    """The default engine's ``progress_under_faults`` (harness/checker/progress.py): the
    transactions counted per process in Spark (``progress.txn_counts``), the rest as it does."""
    from pyspark.sql import functions as F

    events = store.fault_events(store.read_table(h.run_dir, "faults"))
    w = progress.fault_window(events)
    if w is None:
        return None
    done_at, end = F.col("complete_time"), F.lit(w.end)
    finished = (F.col("outcome") == OK) | ((F.col("outcome") == FAIL) & (F.col("error") == ABORTED_ON_PURPOSE))

    def count(cond: Any) -> Any:
        return F.sum(F.when(cond, 1).otherwise(0))

    rows = [(r.process, r.f, r.done_in, r.done_after, r.in_flight) for r in h.txns.groupBy("process", "f").agg(
        count(finished & (done_at >= w.start) & (done_at <= end)).alias("done_in"),
        count(finished & (done_at > end)).alias("done_after"),
        count((F.col("invoke_time") <= end) & (done_at.isNull() | (done_at >= w.start))).alias("in_flight")).collect()]
    app_times: list[int] = []
    apps = bool(h.meta.get("apps"))
    if apps:
        polls = h.spark.read.parquet(str(store.table_file(h.run_dir, "app_outputs"))).where(F.col("source") == POLL)
        app_times = [int(r.done_at) for r in polls.select("op").distinct().join(h.op_times, "op").collect()]
    return progress.figure(w, progress.tally(w, rows, h.events, app_times, apps, events), events)


def reader_figures(h: SparkHistory) -> dict[str, Any]:
    """The default engine's ``unseen`` and ``realtime_lag`` (harness/checker/figures.py): the
    aggregates computed here, a row per step or reader collected, finished by the same code."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    polls = (h.reads.where("poll").join(h.op_times, "op")  # a poll whose op is not in the table has no time
             .withColumn("tp", F.shiftright("pos", OFFSET_BITS)))
    if polls.limit(1).count() == 0:
        return {"unseen": None, "realtime_lag": None}
    polled_tps = polls.select("tp").distinct()
    acks = (h.writes.where((F.col("w_out") == OK) & F.col("w_is_txn"))
            .join(h.txns.select("txn", F.col("complete_time").alias("ack")), "txn")
            .select("vid", "offset", "ack", F.shiftleft(F.col("tid").cast("long"), PARTITION_BITS)
                    .bitwiseOR(F.col("partition").cast("long")).alias("tp"))
            .join(F.broadcast(polled_tps), "tp", "left_semi"))
    # unseen: each acknowledged value's ack and first poll
    first = polls.groupBy("vid").agg(F.min("done_at").alias("first_poll"))
    seen = acks.join(first, "vid", "left")
    top = seen.agg(F.count("*").alias("n"), F.max("ack").alias("ack"), F.max("first_poll").alias("poll"),
                   F.sum(F.col("first_poll").isNull().cast("long")).alias("never")).first()
    unseen = None
    if top is not None and top["n"]:
        step = figures.step_ns(max(int(top["ack"]), int(top["poll"] or 0)))
        at = F.floor(F.greatest("ack", "first_poll") / step).cast("long")  # polled before its ack: seen from its ack
        ack_steps = _per_step(seen.select(F.floor(F.col("ack") / step).cast("long").alias("k")))
        seen_steps = _per_step(seen.where(F.col("first_poll").isNotNull()).select(at.alias("k")))
        unseen = figures.unseen_of(step, ack_steps, seen_steps, final=int(top["never"]))
    # realtime_lag: per poll and partition the highest offset it got; the reader's position is the
    # highest so far; the earliest ack above it comes from one window over positions and acks
    got = polls.groupBy("op", "tp").agg(F.max("offset").alias("got"), F.min("done_at").alias("time"),
                                        F.min("process").alias("process"))
    so_far = Window.partitionBy("process", "tp").orderBy("op").rowsBetween(Window.unboundedPreceding, Window.currentRow)
    positions = got.select("tp", "time", "process", F.max("got").over(so_far).alias("offset"), F.lit(0).alias("kind"),
                           F.lit(None).cast("long").alias("ack"))
    known = acks.where(F.col("offset").isNotNull()).select(
        "tp", F.lit(None).cast("long").alias("time"), F.lit(None).cast("string").alias("process"),
        F.col("offset").cast("long").alias("offset"), F.lit(1).alias("kind"), "ack")
    # offsets descending, a position before an ack at its own offset: the minimum so far is over the
    # acks strictly above each position
    above = (Window.partitionBy("tp").orderBy(F.col("offset").desc(), F.col("kind"))
             .rowsBetween(Window.unboundedPreceding, Window.currentRow))
    lags = (positions.unionByName(known).withColumn("behind_since", F.min("ack").over(above)).where(F.col("kind") == 0)
            .select("time", "process", F.when(F.col("behind_since") < F.col("time"), F.col("time") - F.col("behind_since"))
                    .otherwise(F.lit(0)).cast("long").alias("lag")))
    end = lags.agg(F.max("time")).first()
    step = figures.step_ns(int(end[0])) if end is not None and end[0] is not None else figures.NS
    worst = {int(r.k): int(r.lag) for r in lags.groupBy(F.floor(F.col("time") / step).cast("long").alias("k"))
             .agg(F.max("lag").alias("lag")).collect()}
    by_reader = {str(r.process): int(r.lag) for r in lags.groupBy("process").agg(F.max("lag").alias("lag")).collect()}
    return {"unseen": unseen, "realtime_lag": figures.lag_of(step, worst, by_reader) if worst else None}


def _per_step(df: DataFrame) -> Any:
    """How many rows of ``df`` have each step index ``k``, as an array indexed by ``k``."""
    import numpy as np

    counts = {int(r.k): int(r["count"]) for r in df.groupBy("k").count().collect()}
    out = np.zeros(max(counts, default=-1) + 1, dtype=np.int64)
    out[list(counts)] = list(counts.values())
    return out


def _spark_percentiles(lat: DataFrame) -> dict[str, float | None]:
    """Exact percentiles (Spark's ``percentile`` interpolates linearly, as numpy does)."""
    from pyspark.sql import functions as F

    r = lat.agg(F.percentile("ms", [0.5, 0.95, 0.99]).alias("q"), F.max("ms").alias("max")).first()
    if r is None or r.q is None:
        return {"p50": None, "p95": None, "p99": None, "max": None}
    return {"p50": round(r.q[0], 2), "p95": round(r.q[1], 2), "p99": round(r.q[2], 2), "max": round(r.max, 2)}


def check_run(run_dir: Path, spark: SparkSession, seconds: dict[str, float] | None = None) -> Verdict:
    """The verdict of ``run_dir``'s history, computed by Spark in ``spark`` (the same as
    ``checker.check``'s). The caller owns the session (``harness.sparkjob.session.checker_session``):
    the checker imports nothing of the project but the history. ``seconds``, when given, gets the
    wall time of each check, of the summary and of the figures (``stats``)."""
    store.ensure_parquet(run_dir)
    h = SparkHistory(spark, run_dir)
    shuffle = "spark.sql.shuffle.partitions"
    before = {k: spark.conf.get(k, None) for k in (shuffle, FAST_MAP_BITS, *CHECK_CONF)}
    spark.conf.set(shuffle, str(max(int(before[shuffle] or SHUFFLE_PARTITIONS_DEFAULT), -(-h.rows // ROWS_PER_SHUFFLE_PARTITION))))
    for k, v in {**CHECK_CONF, FAST_MAP_BITS: str(fast_map_bits(h))}.items():
        spark.conf.set(k, v)

    spent: dict[str, float] = {}

    def in_group(name: str, fn: Callable[[], Any]) -> Callable[[], Any]:
        def run() -> Any:
            # the check's Spark jobs carry its name (the Spark UI, the event log, ``bench checker``)
            spark.sparkContext.setJobGroup(name, f"eos-chaos check {name}")
            t0 = time.monotonic()
            try:
                return fn()
            finally:
                spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
                spent[name] = spent.get(name, 0.0) + time.monotonic() - t0  # g0's preparation and its run add up
                if seconds is not None:
                    seconds[name] = round(spent[name], 3)
        return run

    try:
        try:
            in_group("summary", lambda: summary(h))()
        except Exception:  # noqa: BLE001, S110 - each check that needs the summary fails on its own, with this error
            pass
        try:
            # while the summary's per-value table is still cached; then it is dropped
            in_group("g0", partial(spark_cycles.prepare, h))()
        except Exception:  # noqa: BLE001, S110 - g0 and g1c fail on their own, with this error
            pass
        finally:
            h.drop_per_value()
        return run_checks({name: in_group(name, partial(fn, h)) for name, fn in CHECKS.items()},
                          in_group("stats", partial(stats, h)), h.meta, engine="spark")
    finally:
        h.release()
        for key, was in before.items():
            if was is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, was)


def _nothing(needs: tuple[tuple[Subject, str], ...], check: Callable[[SparkHistory], Found]) -> Callable[[SparkHistory], Found]:
    """``check``, or ``Found(0, skipped=reason)`` when the history has nothing for it (its record's ``needs``)."""

    @wraps(check)
    def run(h: SparkHistory) -> Found:
        for what, reason in needs:
            if not _there_is(h, what):
                return Found(0, skipped=reason)
        return check(h)

    return run


class DefaultEngineOnly(Exception):
    """A check this engine does not run met a history it would have had to judge."""


def _default_engine_only(c: Check) -> Callable[[SparkHistory], Found]:
    """The stand-in of a check this engine does not run (its record's ``spark_missing``): on a history
    with nothing for it to judge, the default engine's reason (``nothing_to_judge``, from the meta
    alone); on a history with something, it fails with the record's reason, so the verdict is
    unknown, never valid for want of a look."""

    def run(h: SparkHistory) -> Found:
        reason = c.nothing_to_judge(h.meta) if c.nothing_to_judge is not None else None
        if reason is not None:
            return Found(0, skipped=reason)
        raise DefaultEngineOnly(f"{c.name}: {c.spark_missing}")

    return run


def _engine_check(c: Check) -> Callable[[SparkHistory], Found]:
    """This engine's way to run the check of record ``c``."""
    if c.spark is None:
        return _default_engine_only(c)
    check = c.spark_check()
    return _nothing(c.needs, check) if c.needs else check


#: The default engine's checks this engine does not run, and why (derived from the records).
DEFAULT_ENGINE_ONLY: dict[str, str] = {c.name: c.spark_missing or "" for c in CATALOG if c.spark is None}
#: Every check by name, in the records' order (harness/checker/catalog.py). Built last: a record
#: names its implementation here by ``"harness.checker.spark_engine:<function>"``, which resolves
#: to this module as imported so far.
CHECKS: dict[str, Callable[[SparkHistory], Found]] = {c.name: _engine_check(c) for c in CATALOG}
