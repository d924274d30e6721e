"""``g0`` and ``g1c`` on the Spark engine: the default engine's (harness/checker/cycle_checks.py) as
DataFrame jobs. Each transaction's ``M`` (docs/CYCLES.md) is made once for both checks and kept (a
row per transaction, ``_latest``): from the summary's per-value table, which already has each value's
writer, position and first poll (``prepare``, right after the summary), then one window per Kafka
partition for the running maximum; an example's few records are looked up by small queries.
Transactions are named by their op (``txn``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.checker.checks import MAX_EXAMPLES, NO_COMMITTED_RECORDS, Found
from harness.checker.copies import spark_copy
from harness.checker.cycles import NEVER, NO_OK_TXN, NO_READS_OF_WRITES, CycleOp, Fact, Read, Record, g0_example, g1c_example
from harness.checker.spark_history import BROADCAST_ROWS, SparkHistory, packed_pos, position_at, rows_in
from harness.checker.spark_summary import HAS_FC, summary
from harness.history.model import COPY_PREFIX, OFFSET_BITS, OK, Position

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def _invoked(h: SparkHistory) -> DataFrame:
    """Each transaction's invoke time as ``src`` (shipped whole to every task while it fits)."""
    from pyspark.sql import functions as F

    invoked = h.txns.select("txn", F.col("invoke_time").alias("src"))
    return F.broadcast(invoked) if rows_in(h.run_dir, "txns") <= BROADCAST_ROWS else invoked


def _upto() -> Any:
    """A record's partition, in offset order, up to the record."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    return (Window.partitionBy(F.shiftright("pos", OFFSET_BITS)).orderBy("pos")
            .rowsBetween(Window.unboundedPreceding, Window.currentRow))


def _writers(h: SparkHistory) -> DataFrame:
    """Each value's recorded writer ``txn`` and its invoke ``src`` (a value is written once: the
    history format refuses a reused one, ``store._refuse_reused_values``)."""
    return h.raw_writes.select("vid", "txn").join(_invoked(h), "txn")


def _records(h: SparkHistory) -> DataFrame:
    """The version order: per position of the final read_committed scan (a value at its first
    offset), the value, its writer ``txn`` (null: none recorded) and the writer's invoke ``src``.
    For the examples' few records and the copier's reads; ``M`` is ``_latest``'s."""
    if "records" not in h.cycles:
        from pyspark.sql import functions as F

        fc = h.reads.where("fc").select("vid", "pos", "row")
        if _one_place_each(h):  # the final scan is the version order as it is
            one = fc.dropDuplicates(["pos"]).select("pos", "vid")
        else:
            first = fc.join(fc.groupBy("vid").agg(F.min("pos").alias("pos")), ["vid", "pos"])
            one = first.groupBy("pos").agg(F.min_by("vid", "row").alias("vid"))  # the default engine's: the first read there
        h.cycles["records"] = one.join(_writers(h), "vid", "left")
    found: DataFrame = h.cycles["records"]
    return found


def _summary_counts(h: SparkHistory) -> dict[str, Any] | None:
    try:
        return summary(h)
    except Exception:  # noqa: BLE001 - the summary's own failure is reported by the checks that need it
        return None


def _one_place_each(h: SparkHistory) -> bool:
    """Every value is at one position and every position holds one value (the summary's counts):
    the final scan is then the version order as it is, a value in it once."""
    s = _summary_counts(h)
    return s is not None and s["multi_positioned"] == 0 and s["inconsistent"] == 0


def _per_value_rows(h: SparkHistory) -> DataFrame:
    """A row per value with a recorded writer: ``txn``, ``src``, its position in the final scan
    (``pos``, null: not there), its polls (``polled``) and the first one's completion
    (``first_poll``). From the summary's cached per-value table when it kept it (every value at
    one place: it has all of these, grouped once, in well-sized partitions); otherwise the version
    order and the polls by writer, from the Parquet files."""
    from pyspark.sql import functions as F

    none = F.lit(None).cast("long")
    if h.per_value is not None:
        return (h.per_value.where(F.col("txn").isNotNull())
                .select("txn", F.when(F.col("f").bitwiseAND(HAS_FC) > 0, F.col("at")).alias("pos"),
                        F.col("n_poll").alias("polled"), "first_poll")
                .join(_invoked(h), "txn"))
    records = _records(h).where(F.col("txn").isNotNull()).select("txn", "src", "pos", F.lit(0).cast("long").alias("polled"),
                                                                 none.alias("first_poll"))
    polls = (h.reads.where("poll").join(h.op_times, "op", "left").join(_writers(h), "vid")
             .select("txn", "src", none.alias("pos"), F.lit(1).cast("long").alias("polled"), F.col("done_at").alias("first_poll")))
    return records.unionByName(polls)


def _latest(h: SparkHistory) -> DataFrame:
    """Per transaction (``txn``): ``m``, the latest invoke among the writers of records at or below
    any of its records, its own at least; ``polled``, the polls of its values, and ``first_poll``,
    the earliest completion of one (a poll is contradicted only if ``m`` reaches it). Kept (a row
    per transaction) for both checks.

    The records' running maximum of ``src`` is one window per Kafka partition in offset order; the
    rows without a position skip it (all of them in one window partition would be one task)."""
    if "m" not in h.cycles:
        from pyspark import StorageLevel
        from pyspark.sql import functions as F

        rows = _per_value_rows(h)
        placed = rows.where(F.col("pos").isNotNull()).withColumn("pm", F.max("src").over(_upto()))
        unplaced = rows.where(F.col("pos").isNull()).withColumn("pm", F.lit(None).cast("long"))
        per = placed.unionByName(unplaced).groupBy("txn").agg(
            F.max("pm").alias("pm"), F.sum("polled").alias("polled"), F.min("first_poll").alias("first_poll"))
        h.cycles["m"] = (h.txns.select("txn", "invoke_time").join(per, "txn", "left")
                         .select("txn", F.greatest("invoke_time", F.coalesce("pm", "invoke_time")).alias("m"),
                                 F.coalesce("polled", F.lit(0)).alias("polled"), "first_poll")
                         .persist(StorageLevel.MEMORY_AND_DISK))
    m: DataFrame = h.cycles["m"]
    return m


def prepare(h: SparkHistory) -> None:
    """``_latest``'s table, made while the summary's per-value table is cached (``check_run`` calls
    this right after the summary, then drops that table): g0 and g1c then read it."""
    from harness.checker import final_reads_missing

    if not final_reads_missing(h.meta):  # else both are skipped
        _latest(h).count()


class SparkRecords:
    """``cycles.Records`` by small queries (an example's few records and transactions)."""

    def __init__(self, h: SparkHistory) -> None:
        self.h = h
        self.facts: dict[int, Fact] = {}
        self.topics: dict[int, str] | None = None

    def fact(self, txn: int) -> Fact:
        if txn not in self.facts:
            from pyspark.sql import functions as F

            r = self.h.txns.where(F.col("txn") == txn).first()
            assert r is not None, f"op {txn} is not a transaction"
            ended = r.complete_time if r.outcome == OK and r.complete_time is not None else NEVER
            self.facts[txn] = Fact(int(r.txn), str(r.process), int(r.invoke_time), int(ended))
        return self.facts[txn]

    def of_txn(self, txn: int) -> list[Record]:
        from pyspark.sql import functions as F

        rows = _records(self.h).where(F.col("txn") == txn).select("pos").distinct().orderBy("pos").collect()
        return [Record(int(r.pos), txn) for r in rows]

    def nearest_before(self, rec: Record, at_least: int, of: int | None = None) -> Record | None:
        from pyspark.sql import functions as F

        lo = (rec.pos >> OFFSET_BITS) << OFFSET_BITS
        cond = (F.col("pos") >= lo) & (F.col("pos") < rec.pos) & (F.col("src") >= at_least)
        if of is not None:
            cond &= F.col("txn") == of
        r = _records(self.h).where(cond).orderBy(F.col("pos").desc()).select("pos", "txn").first()
        return None if r is None else Record(int(r.pos), int(r.txn))

    def position(self, pos: int) -> Position:
        if self.topics is None:
            tids = self.h.reads.select("tid", "topic").unionByName(self.h.raw_writes.select("tid", "topic")).distinct()
            self.topics = {int(r.tid): str(r.topic) for r in tids.collect()}
        found: Position = position_at(self.topics, pos)
        return found


def g0(h: SparkHistory) -> Found:
    from pyspark.sql import functions as F

    s = _summary_counts(h)  # the final scan's reads counted there; else found by a scan of the reads
    if not (s["n_fc"] if s is not None else h.reads.where("fc").limit(1).count()):
        return Found(0, skipped=NO_COMMITTED_RECORDS)
    ok = h.txns.where((F.col("outcome") == OK) & F.col("complete_time").isNotNull())
    if ok.limit(1).count() == 0:
        return Found(0, skipped=NO_OK_TXN)
    # M once for both checks: the version order's window and joins are their cost (a row per
    # transaction is kept)
    m = _latest(h).select("txn", "m")
    if rows_in(h.run_dir, "txns") <= BROADCAST_ROWS:
        m = F.broadcast(m)
    bad = ok.select("txn", "complete_time").join(m, "txn").where(F.col("m") >= F.col("complete_time"))
    n = bad.count()
    if not n:
        return Found(0)
    recs = SparkRecords(h)
    return Found(n, [g0_example(recs, int(r.txn)) for r in bad.orderBy("txn").limit(MAX_EXAMPLES).collect()])


def _reads(h: SparkHistory) -> tuple[bool, DataFrame | None]:
    """Whether any poll or copier read a recorded writer's value; and those reads that may be
    contradicted (the polls only when one of them is: ``_latest``'s ``first_poll``), as writer,
    reader_op, reader_process, reader_txn (-1 for a poll), done, vid, pos (the default engine's ``Reads``)."""
    from pyspark.sql import functions as F

    per = _latest(h)
    polled = (per.agg(F.sum("polled")).first() or [0])[0] or 0
    found = []
    if polled and per.where(F.col("m") >= F.col("first_poll")).limit(1).count():
        writers = _writers(h).select("vid", F.col("txn").alias("writer"))
        found.append(h.reads.where("poll").join(h.op_times, "op", "left").join(writers, "vid")
                     .select("writer", F.col("op").alias("reader_op"), F.col("process").alias("reader_process"),
                             F.lit(-1).cast("long").alias("reader_txn"), F.col("done_at").alias("done"), "vid", "pos"))
    copies = _copier_reads(h)
    if copies is not None:
        found.append(copies)
    return bool(polled) or copies is not None, None if not found else found[0] if len(found) == 1 else found[0].unionByName(found[1])


def _copier_reads(h: SparkHistory) -> DataFrame | None:
    """Each input a copier's transaction copied, done by its invoke, where the final scan holds that
    value there (the default engine's ``_copier_reads``)."""
    from pyspark.sql import functions as F

    copy_topics = h.prefixed_topics(COPY_PREFIX)
    if not copy_topics:
        return None
    outs = (h.raw_writes.where(F.col("topic").isin(copy_topics)).select("vid", F.col("txn").alias("reader_txn"))
            .join(h.txns.select(F.col("txn").alias("reader_txn"), F.col("process").alias("reader_process"),
                                F.col("invoke_time").alias("done")), "reader_txn"))
    parts, well_formed = spark_copy(F.col("value"))
    parsed = (h.value_of(outs).where(well_formed)
              .select("reader_txn", "reader_process", "done", F.get(parts, 1).alias("topic"),
                      F.get(parts, 2).try_cast("long").alias("partition"), F.get(parts, 3).try_cast("long").alias("offset"),
                      F.get(parts, 5).alias("input")))
    tids = h.reads.select("tid", "topic").unionByName(h.raw_writes.select("tid", "topic")).distinct()
    at = parsed.join(F.broadcast(tids), "topic").select("*", packed_pos(F.col("tid"), F.col("partition"), F.col("offset")).alias("pos"))
    there = (at.join(_records(h).select("pos", "vid", F.col("txn").alias("writer")), "pos")
             .where(F.col("writer").isNotNull()))
    same = h.value_of(there).where(F.col("value") == F.col("input"))  # what it copied is there
    return same.select("writer", F.col("reader_txn").alias("reader_op"), "reader_process", "reader_txn", "done", "vid", "pos")


def g1c(h: SparkHistory) -> Found:
    from pyspark.sql import functions as F

    any_read, reads = _reads(h)
    if not any_read:
        return Found(0, skipped=NO_READS_OF_WRITES)
    if reads is None:
        return Found(0)
    m = _latest(h).select(F.col("txn").alias("writer"), "m")
    if rows_in(h.run_dir, "txns") <= BROADCAST_ROWS:
        m = F.broadcast(m)
    bad = (reads.join(m, "writer")
           .where((F.col("m") >= F.col("done")) & F.col("done").isNotNull() & (F.col("writer") != F.col("reader_txn"))))
    pairs = bad.groupBy("reader_op", "writer").agg(F.min("pos").alias("pos"))
    n = pairs.count()
    if not n:
        return Found(0)
    first = (bad.join(pairs.orderBy("reader_op", "writer").limit(MAX_EXAMPLES), ["reader_op", "writer", "pos"])
             .dropDuplicates(["reader_op", "writer"]))
    rows = h.value_of_few(first).orderBy("reader_op", "writer").collect()
    recs = SparkRecords(h)
    return Found(n, [g1c_example(recs, Read(int(r.writer), CycleOp(int(r.reader_op), str(r.reader_process)), int(r.reader_txn),
                                            int(r.done), str(r.value), int(r.pos))) for r in rows])
