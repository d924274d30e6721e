"""spark-copier: a PySpark Structured Streaming job as a team writes one, put under test as an ``app``
(docs/APPS.md): it copies each record of ``--input`` to ``--output`` (same key and value), reading
``read_committed`` from the earliest offset, one micro-batch after another, on ``local[2]``.

``--sink eos`` (the default) writes each micro-batch in one Kafka transaction of its own, from the
driver (``foreachBatch``), with a marker saying which batch it was; ``--sink kafka`` is Spark's
built-in Kafka sink, at least once: a driver killed after a batch's records went out and before
Spark's checkpoint recorded the batch done writes them again when the batch is replayed (the
negative control).

Why ``--sink eos`` is exactly once under a driver kill (an ``app`` instance is the driver; in local
mode the executors are its threads, so a kill takes all of them):

- One ``transactional.id`` per job instance (``--txn-id``, ``{id}-{instance}``), the same after a
  restart. The restarted driver's ``init_transactions`` fences every older incarnation (a frozen
  one that wakes up fails at its next transactional call) and ends the transaction it left open
  (aborted, or completed if its commit had been asked). A transactional.id per batch or per
  partition would not fence: a zombie with another id could still commit.
- Each batch's transaction holds its outputs and one marker, key ``--query``, value the batch id,
  on the job's own marker topic (``<id>-markers``: an ``{id}-`` topic is the app's own, not its
  output). Committed together or not at all.
- After ``init_transactions`` (so none of its transactions is open: the marker partition's last
  stable offset is its end) the driver reads the last committed marker. Spark replays a batch its
  checkpoint has in its offsets log but not its commit log, with the same offsets; a replayed batch
  at or below the marker was committed already and is skipped. A batch Spark recorded as done was
  committed before ``foreachBatch`` returned, so the marker is never behind by more than that one.
- A commit that fails (a transaction that must abort, a fenced producer) raises: the query stops,
  the job exits 1 and is started again (its wrapper), and the batch is replayed from the checkpoint.

``{python} spark_copier.py --bootstrap B --input T --output T --id ID --txn-id ID --checkpoint DIR``
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]  # not in its __all__

#: Each transactional call's timeout: generous, the cluster may be under faults.
CALL_TIMEOUT_S = 30.0
#: How often a commit that failed with a retriable error is tried again before the batch fails.
COMMIT_TRIES = 5
#: A micro-batch at most this often: a loaded 2-core machine runs three brokers beside the job.
TRIGGER = "1 second"
#: How often the main thread looks up from the query (SIGTERM, progress lines).
STOP_POLL_S = 2
#: Reading the last marker: the longest the job waits for the end of the marker partition.
MARKER_READ_TIMEOUT_S = 60.0


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="spark-copier", description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--input", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--id", required=True, help="the app's id: its marker topic is <id>-markers")
    p.add_argument("--txn-id", required=True, help="this instance's transactional.id, the same after a restart")
    p.add_argument("--checkpoint", required=True, help="Spark's checkpoint folder, kept across restarts")
    p.add_argument("--sink", choices=("eos", "kafka"), default="eos")
    p.add_argument("--query", default="spark-copier", help="the marker's key")
    p.add_argument("--jars", default="", help="the Kafka connector's jars, comma-separated (default: the harness's cache)")
    return p.parse_args(argv)  # a bad flag: argparse's usage and exit 2


def kafka_jars(given: str) -> str:
    """The spark-sql-kafka jars: given, or the harness's cache (fetched the first time)."""
    if given:
        return given
    from clusters.spark import spark_jars  # the harness's: a team's job would name its own

    return ",".join(str(j) for j in spark_jars.spark_kafka_ready() or spark_jars.ensure_spark())


def prepare() -> str:
    """The connector's jars in the harness's cache (``harness.apps.SHIPPED``'s build step)."""
    return kafka_jars("")


def session(jars: str, warehouse: str) -> Any:
    """A ``local[2]`` session on 127.0.0.1 with the Kafka connector; nothing written to the working
    folder (``warehouse``: a folder of the job's own)."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.appName("spark-copier").master("local[2]")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.driver.memory", "512m").config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.warehouse.dir", os.path.join(warehouse, "spark-warehouse"))
             .config("spark.jars", jars).getOrCreate())
    spark.sparkContext.setLogLevel("WARN")
    return spark


def marker_topic(bootstrap: str, name: str) -> str:
    """The job's marker topic, made if missing (one partition: one writer, the job's driver)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    if name not in admin.list_topics(timeout=CALL_TIMEOUT_S).topics:
        brokers = len(admin.list_topics(timeout=CALL_TIMEOUT_S).brokers)
        fut = admin.create_topics([NewTopic(name, 1, min(3, brokers))])[name]
        try:
            fut.result(CALL_TIMEOUT_S)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise
    return name


def last_marker(bootstrap: str, topic: str, query: str) -> int | None:
    """The batch id of the last committed marker of ``query`` (None: none yet), read_committed to
    the partition's end (its last stable offset)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{query}-marker-reader", "enable.auto.commit": False,
                  "isolation.level": "read_committed", "enable.partition.eof": True})
    c.assign([TopicPartition(topic, 0, 0)])  # OFFSET_BEGINNING's number is -2; offset 0 is the start here
    last: int | None = None
    deadline = time.monotonic() + MARKER_READ_TIMEOUT_S
    try:
        while time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is None:
                continue
            err = m.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    return last
                raise KafkaException(err)
            if (m.key() or b"").decode() == query:
                last = int(json.loads(m.value() or b"{}")["batch"])
        raise TimeoutError(f"the end of {topic} not reached within {MARKER_READ_TIMEOUT_S:.0f}s")
    finally:
        c.close()


def _bytes(v: bytearray | bytes | None) -> bytes | None:
    return None if v is None else bytes(v)


class EosSink:
    """``foreachBatch``'s function: each micro-batch in one transaction with its marker."""

    def __init__(self, a: argparse.Namespace) -> None:
        self.a = a
        self.markers = marker_topic(a.bootstrap, f"{a.id}-markers")
        self.producer = Producer({"bootstrap.servers": a.bootstrap, "transactional.id": a.txn_id, "linger.ms": 5,
                                  "transaction.timeout.ms": 60_000})
        self.producer.init_transactions(CALL_TIMEOUT_S)  # fences older incarnations, ends what they left open
        self.done = last_marker(a.bootstrap, self.markers, a.query)
        print(f"eos sink: transactional.id {a.txn_id}, last committed batch {self.done}", flush=True)

    def write(self, df: Any, batch_id: int) -> None:
        if self.done is not None and batch_id <= self.done:
            print(f"batch {batch_id} committed already (marker {self.done}): skipped", flush=True)
            return
        rows = df.select("key", "value").collect()
        p = self.producer
        p.begin_transaction()
        for r in rows:  # Spark gives binary columns as bytearray; the client takes bytes
            p.produce(self.a.output, key=_bytes(r["key"]), value=_bytes(r["value"]))
        p.produce(self.markers, key=self.a.query.encode(), value=json.dumps({"batch": batch_id}).encode(), partition=0)
        self._commit()
        self.done = batch_id
        print(f"batch {batch_id} committed: {len(rows)} records", flush=True)

    def _commit(self) -> None:
        for attempt in range(COMMIT_TRIES):
            try:
                self.producer.commit_transaction(CALL_TIMEOUT_S)
                return
            except KafkaException as exc:
                err = exc.args[0]
                if err.txn_requires_abort():
                    self.producer.abort_transaction(CALL_TIMEOUT_S)
                    raise  # the batch fails; Spark's restart replays it
                if not err.retriable() or attempt == COMMIT_TRIES - 1:
                    raise


def main(argv: list[str] | None = None) -> None:
    a = parse(sys.argv[1:] if argv is None else argv)
    spark = session(kafka_jars(a.jars), os.path.dirname(os.path.abspath(a.checkpoint)))
    source = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", a.bootstrap)
              .option("subscribe", a.input).option("startingOffsets", "earliest")
              .option("kafka.isolation.level", "read_committed").option("failOnDataLoss", "false").load())
    writer = source.select("key", "value").writeStream.option("checkpointLocation", a.checkpoint).trigger(
        processingTime=TRIGGER)
    if a.sink == "kafka":
        query = (writer.format("kafka").option("kafka.bootstrap.servers", a.bootstrap)
                 .option("topic", a.output).start())
    else:
        query = writer.foreachBatch(EosSink(a).write).start()
    print(f"copying from {a.input} to {a.output} ({a.sink} sink)", flush=True)

    stopping: list[int] = []
    # the handler only says so: a call into the JVM from inside it could cut across the main thread's
    signal.signal(signal.SIGTERM, lambda signum, frame: stopping.append(signum))
    last = None
    while query.isActive and not stopping:
        query.awaitTermination(STOP_POLL_S)
        progress = query.lastProgress
        if progress and progress["batchId"] != last:
            last = progress["batchId"]
            print(f"batch {last}: {progress['numInputRows']} rows", flush=True)
    if stopping:
        query.stop()
    failed = query.exception()
    spark.stop()
    if failed is not None:
        print(f"the query failed: {failed}", flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
