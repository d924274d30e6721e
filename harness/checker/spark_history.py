"""The Spark engine's view of a run's history (harness/checker/spark_engine.py): its Parquet tables as
Spark DataFrames with the columns the checks share, and the few helpers every Spark check uses
(packed positions, row counts from the Parquet footers). Both ``spark_engine`` and ``spark_cycles``
import it; it imports neither."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.history import store
from harness.history.model import OFFSET_BITS, POLL, READ_COMMITTED, SCAN, TOPIC_SHIFT, TXN, position

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: A table of up to this many rows (the transactions: ~170k per million values) is broadcast to
#: every task rather than shuffled with the table it is joined to; beyond it, memory would not stay flat.
BROADCAST_ROWS = 5_000_000


class SparkHistory:
    """The run's tables as Spark DataFrames, with the columns the checks share."""

    def __init__(self, spark: SparkSession, run_dir: Path) -> None:
        from pyspark.sql import functions as F

        self.spark, self.run_dir = spark, run_dir
        self.meta: dict[str, Any] = store.read_meta(run_dir)
        self.events = store.spark_events_of(store.read_table(run_dir, "spark_events"))

        def rd(table: str) -> DataFrame:
            return spark.read.parquet(str(store.table_file(run_dir, table)))

        self.txns = rd("txns")
        self.inits = rd("inits")
        self.groups = rd("group_offsets")
        ops = rd("ops").select(F.col("index").alias("op"), F.col("time").alias("done_at"))
        #: each op's completion time by its index (polls' times): shipped whole while it fits
        self.op_times = F.broadcast(ops) if rows_in(run_dir, "ops") <= BROADCAST_ROWS else ops
        self.faults = rd("faults")
        self.values = rd(store.VALUES_TABLE)
        tx = self.txns.select("txn", F.col("outcome").alias("w_out"), (F.col("f") == TXN).alias("w_is_txn"),
                              F.col("process").alias("w_proc"), F.lit(True).alias("w_known"),
                              F.when(F.col("f") == TXN, F.col("commit_at")).alias("w_commit_at"))
        # one row per transaction: shipped whole to every task while it fits (no shuffle of the writes)
        self.tx_shipped = rows_in(run_dir, "txns") <= BROADCAST_ROWS
        self.tx = shipped(tx, self.tx_shipped)
        w = rd("writes")
        self.writes = (w.join(self.tx, "txn", "left")
                       .withColumn("w_known", F.coalesce("w_known", F.lit(False)))
                       .withColumn("pos", packed_pos(F.col("tid"), F.col("partition"), F.col("offset"))))
        r = rd("reads")
        self.raw_writes = w
        self.reads = (r.withColumn("poll", F.col("source") == POLL)
                      .withColumn("fc", (F.col("source") == SCAN) & (F.col("isolation") == READ_COMMITTED))
                      .withColumn("cv", F.col("poll") | F.col("fc")))
        self.fc_vids = self.reads.where("fc").select("vid").distinct()
        self.cv_vids = self.reads.where("cv").select("vid").distinct()
        #: the summary's counts (harness/checker/spark_summary.py), once computed
        self.summary_counts: dict[str, Any] | None = None
        #: rows of the two large tables, and values (from their footers): size the shuffles
        self.rows = rows_in(run_dir, "writes") + rows_in(run_dir, "reads")
        self.n_values = rows_in(run_dir, store.VALUES_TABLE)
        #: each topic's first committed value (``prefixed_topics``), once looked up
        self.first_values: list[tuple[str, str]] | None = None
        #: ``nonmonotonic_poll``'s count, once it ran (``poll_skip`` needs it)
        self.nonmonotonic_polls: int | None = None
        #: ``_send_order``: (a send below the one before it in its transaction, a transaction below
        #: the one before it), once looked at
        self.send_order: tuple[bool, bool] | None = None
        #: ``g0`` and ``g1c``'s shared frames (harness/checker/spark_cycles.py): one row per transaction is kept
        self.cycles: dict[str, Any] = {}
        #: the summary's cached per-value table, kept after it only for ``spark_cycles.prepare`` (which
        #: drops it), and only while every value is at one place and every position holds one (``spark_summary``)
        self.per_value: DataFrame | None = None

    def drop_per_value(self) -> None:
        if self.per_value is not None:
            self.per_value.unpersist()
            self.per_value = None

    def release(self) -> None:
        """Nothing else is cached: each check reads the Parquet files again, which costs less than
        keeping tens of millions of rows in the JVM (and keeps its memory flat)."""
        self.drop_per_value()
        if "m" in self.cycles:
            self.cycles["m"].unpersist()

    def value_of(self, df: DataFrame) -> DataFrame:
        return df.join(self.values, "vid", "left")

    def value_of_few(self, df: DataFrame) -> DataFrame:
        """``value_of`` for a handful of rows (examples): they are collected, and only their values
        are read (``values.parquet`` is in ``vid`` order, so Parquet skips the other row groups)."""
        from pyspark.sql import functions as F

        rows = df.collect()
        vids = sorted({r.vid for r in rows})
        few = self.spark.createDataFrame(rows, df.schema)
        return self.values.where(F.col("vid").isin(vids)).join(F.broadcast(few), "vid")

    def prefixed_topics(self, prefix: str) -> list[str]:
        """Topics whose first committed record's value starts with ``prefix/`` (how the default engine
        finds the copiers' and the Spark job's output topics)."""
        if self.first_values is None:
            from pyspark.sql import functions as F

            # the first rows by number only (no string carried through the aggregation), then those
            # few rows read back by ``row``: the reads are stored in ``row`` order, so Parquet skips
            # every other row group
            rows = [r.row for r in self.reads.where("fc").groupBy("tid").agg(F.min("row").alias("row")).collect()]
            firsts = self.reads.where(F.col("row").isin(rows)).select("topic", "vid")
            self.first_values = [(r.topic, r.value) for r in self.value_of_few(firsts).select("topic", "value").collect()]
        return [topic for topic, value in self.first_values if value.startswith(prefix + "/")]


def packed_pos(tid: Any, part: Any, off: Any) -> Any:
    """A column of the packed position (topic id, partition, offset) as one long, as ``store.pack`` packs it."""
    from pyspark.sql import functions as F

    return (F.shiftleft(tid.cast("long"), TOPIC_SHIFT).bitwiseOR(F.shiftleft(part.cast("long"), OFFSET_BITS))
            .bitwiseOR(off.cast("long")))


def position_at(topics: dict[int, str], pos: int) -> Any:
    """A packed position (``packed_pos``) as a position object; ``topics``: topic id -> name."""
    tid, partition, offset = store.unpack(pos)
    return position(topics.get(tid, str(tid)), partition, offset)


def rows_in(run_dir: Path, table: str) -> int:
    """Rows of one table, from its Parquet footer (nothing is read)."""
    import pyarrow.parquet as pq

    return int(pq.ParquetFile(store.table_file(run_dir, table)).metadata.num_rows)


def shipped(df: DataFrame, ship: bool) -> DataFrame:
    from pyspark.sql import functions as F

    return F.broadcast(df) if ship else df


def with_poll_times(h: SparkHistory) -> DataFrame:
    """The reads with ``done_at``: when a poll's op completed (null for the final scans)."""
    from pyspark.sql import functions as F

    polls = h.reads.where("poll").join(h.op_times, "op", "left")
    return polls.unionByName(h.reads.where(~F.col("poll")).withColumn("done_at", F.lit(None).cast("long")))
