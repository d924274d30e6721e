"""``g0`` and ``g1c`` on the Spark engine: the default engine's (harness/checker/cycle_checks.py) as
DataFrame jobs. The version order's running maximum is one window per partition; each transaction's
``M`` (docs/CYCLES.md) is kept for both checks (a row per transaction); an example's few records are
looked up by small queries. Transactions are named by their op (``txn``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.checker.checks import MAX_EXAMPLES, NO_COMMITTED_RECORDS, Found
from harness.checker.cycles import NEVER, NO_OK_TXN, NO_READS_OF_WRITES, Fact, Op, Read, Record, g0_example, g1c_example
from harness.history.model import COPY_PREFIX, OFFSET_BITS, OK, Position

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from harness.checker.spark_engine import SparkHistory


def _invoked(h: SparkHistory) -> DataFrame:
    """Each transaction's invoke time as ``src`` (shipped whole to every task while it fits)."""
    from pyspark.sql import functions as F

    from harness.checker.spark_engine import BROADCAST_ROWS, _rows_in

    invoked = h.txns.select("txn", F.col("invoke_time").alias("src"))
    return F.broadcast(invoked) if _rows_in(h.run_dir, "txns") <= BROADCAST_ROWS else invoked


def _upto() -> Any:
    """A record's partition, in offset order, up to the record."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    return (Window.partitionBy(F.shiftright("pos", OFFSET_BITS)).orderBy("pos")
            .rowsBetween(Window.unboundedPreceding, Window.currentRow))


def _per_value(h: SparkHistory) -> DataFrame:
    """When every value has one position (``_one_place_each``): per value, its position in the final
    scan (null: not there), its writer ``txn`` and ``src``, its polls (``polled``) and the first one's
    completion (``first_poll``), and ``pm`` at its position: the writes, the final scan and the polls
    meet in one grouping by value, where joins would shuffle each twice."""
    from pyspark.sql import functions as F

    none = F.lit(None).cast("long")
    writes = h.raw_writes.select("vid", "txn").join(_invoked(h), "txn").select(
        "vid", none.alias("pos"), "txn", "src", F.lit(0).alias("polled"), none.alias("done"))
    scan = h.reads.where("fc").select("vid", "pos", none.alias("txn"), none.alias("src"), F.lit(0).alias("polled"),
                                      none.alias("done"))
    polls = h.reads.where("poll").join(h.op_times, "op", "left").select(
        "vid", none.alias("pos"), none.alias("txn"), none.alias("src"), F.lit(1).alias("polled"), F.col("done_at").alias("done"))
    per = writes.unionByName(scan).unionByName(polls).groupBy("vid").agg(
        F.max("pos").alias("pos"), F.max("txn").alias("txn"), F.max("src").alias("src"), F.sum("polled").alias("polled"),
        F.min("done").alias("first_poll"))
    return per.withColumn("pm", F.when(F.col("pos").isNotNull(), F.max("src").over(_upto())))


def _records(h: SparkHistory) -> DataFrame:
    """The version order: per position of the final read_committed scan (a value at its first
    offset), the value, its writer ``txn`` (null: none recorded), the writer's invoke ``src`` and
    the running maximum ``pm`` of ``src`` up to it in its partition."""
    if "records" not in h.cycles:
        from pyspark.sql import functions as F

        if _one_place_each(h):
            records = _per_value(h).where(F.col("pos").isNotNull()).select("pos", "vid", "txn", "src", "pm")
        else:
            fc = h.reads.where("fc").select("vid", "pos", "row")
            first = fc.join(fc.groupBy("vid").agg(F.min("pos").alias("pos")), ["vid", "pos"])
            one = first.groupBy("pos").agg(F.min_by("vid", "row").alias("vid"))  # the default engine's: the first read there
            writers = h.raw_writes.select("vid", "txn").join(_invoked(h), "txn")
            records = one.join(writers, "vid", "left").withColumn("pm", F.max("src").over(_upto()))
        h.cycles["records"] = records
    found: DataFrame = h.cycles["records"]
    return found


def _one_place_each(h: SparkHistory) -> bool:
    """Every value is at one position and every position holds one value (the summary's counts):
    the final scan is then the version order as it is, a value in it once."""
    try:
        s = h.summary
    except Exception:  # noqa: BLE001 - the summary's own failure is reported by the checks that need it
        return False
    return bool(s["multi_positioned"] == 0 and s["inconsistent"] == 0)


def _latest(h: SparkHistory) -> DataFrame:
    """Per transaction (``txn``): ``m``, the latest invoke among the writers of records at or below
    any of its records, its own at least; ``polled``, the polls of its values, and ``first_poll``,
    the earliest completion of one (a poll is contradicted only if ``m`` reaches it). Kept (a row
    per transaction) for both checks."""
    if "m" not in h.cycles:
        from pyspark import StorageLevel
        from pyspark.sql import functions as F

        if _one_place_each(h):
            per = _per_value(h).where(F.col("txn").isNotNull()).groupBy("txn").agg(
                F.max("pm").alias("pm"), F.sum("polled").alias("polled"), F.min("first_poll").alias("first_poll"))
        else:
            below = _records(h).where(F.col("txn").isNotNull()).groupBy("txn").agg(F.max("pm").alias("pm"))
            polls = (h.reads.where("poll").join(h.op_times, "op", "left").join(h.raw_writes.select("vid", "txn"), "vid")
                     .groupBy("txn").agg(F.count("*").alias("polled"), F.min("done_at").alias("first_poll")))
            per = below.join(polls, "txn", "full")
        h.cycles["m"] = (h.txns.select("txn", "invoke_time").join(per, "txn", "left")
                         .select("txn", F.greatest("invoke_time", F.coalesce("pm", "invoke_time")).alias("m"),
                                 F.coalesce("polled", F.lit(0)).alias("polled"), "first_poll")
                         .persist(StorageLevel.MEMORY_AND_DISK))
    m: DataFrame = h.cycles["m"]
    return m


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
        from harness.checker.spark_engine import _position_at

        if self.topics is None:
            tids = self.h.reads.select("tid", "topic").unionByName(self.h.raw_writes.select("tid", "topic")).distinct()
            self.topics = {int(r.tid): str(r.topic) for r in tids.collect()}
        found: Position = _position_at(self.topics, pos)
        return found


def g0(h: SparkHistory) -> Found:
    from pyspark.sql import functions as F

    from harness.checker.spark_engine import BROADCAST_ROWS, _rows_in

    if h.reads.where("fc").limit(1).count() == 0:
        return Found(0, skipped=NO_COMMITTED_RECORDS)
    ok = h.txns.where((F.col("outcome") == OK) & F.col("complete_time").isNotNull())
    if ok.limit(1).count() == 0:
        return Found(0, skipped=NO_OK_TXN)
    # M once for both checks: the version order's window and joins are their cost (a row per
    # transaction is kept)
    m = _latest(h).select("txn", "m")
    if _rows_in(h.run_dir, "txns") <= BROADCAST_ROWS:
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
        writers = h.raw_writes.select("vid", F.col("txn").alias("writer"))
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

    from harness.checker.spark_engine import _pos, _prefixed_topics

    copy_topics = _prefixed_topics(h, COPY_PREFIX)
    if not copy_topics:
        return None
    outs = (h.raw_writes.where(F.col("topic").isin(copy_topics)).select("vid", F.col("txn").alias("reader_txn"))
            .join(h.txns.select(F.col("txn").alias("reader_txn"), F.col("process").alias("reader_process"),
                                F.col("invoke_time").alias("done")), "reader_txn"))
    parts = F.split("value", "/", 6)
    parsed = (h.value_of(outs).select("reader_txn", "reader_process", "done", F.get(parts, 0).alias("prefix"),
                                      F.get(parts, 1).alias("topic"), F.get(parts, 2).try_cast("long").alias("partition"),
                                      F.get(parts, 3).try_cast("long").alias("offset"), F.get(parts, 5).alias("input"))
              .where((F.col("prefix") == COPY_PREFIX) & F.col("partition").isNotNull() & F.col("offset").isNotNull()
                     & F.col("input").isNotNull()))
    tids = h.reads.select("tid", "topic").unionByName(h.raw_writes.select("tid", "topic")).distinct()
    at = parsed.join(F.broadcast(tids), "topic").select("*", _pos(F.col("tid"), F.col("partition"), F.col("offset")).alias("pos"))
    there = (at.join(_records(h).select("pos", "vid", F.col("txn").alias("writer")), "pos")
             .where(F.col("writer").isNotNull()))
    same = h.value_of(there).where(F.col("value") == F.col("input"))  # what it copied is there
    return same.select("writer", F.col("reader_txn").alias("reader_op"), "reader_process", "reader_txn", "done", "vid", "pos")


def g1c(h: SparkHistory) -> Found:
    from pyspark.sql import functions as F

    from harness.checker.spark_engine import BROADCAST_ROWS, _rows_in

    any_read, reads = _reads(h)
    if not any_read:
        return Found(0, skipped=NO_READS_OF_WRITES)
    if reads is None:
        return Found(0)
    m = _latest(h).select(F.col("txn").alias("writer"), "m")
    if _rows_in(h.run_dir, "txns") <= BROADCAST_ROWS:
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
    return Found(n, [g1c_example(recs, Read(int(r.writer), Op(int(r.reader_op), str(r.reader_process)), int(r.reader_txn),
                                            int(r.done), str(r.value), int(r.pos))) for r in rows])
