"""spark-job: the PySpark Structured Streaming job under test, end-to-end exactly-once.

It reads the input topic through Spark's Kafka connector (read_committed) and writes, inside
``foreachBatch``, **one Kafka transaction per micro-batch**: one output record per input record
(the value names its source partition and offset, ``model.spark_value``) plus one marker record
(query, batch id, offset ranges) in the compacted marker topic. The ``transactional.id`` is stable
across restarts, so a new incarnation's ``init_transactions`` fences the previous one; it then reads
the last committed marker and skips any replayed batch at or below it. That closes the window
Spark's own Kafka sink leaves open (a kill after the sink wrote, before Spark's commit log: the
batch runs again and writes again), which ``sink: builtin`` keeps open as the negative control.

Runs as its own process group (Python driver + its JVM) under the harness's supervisor, which
restarts it from its checkpoint after it dies. The nemesis arms a fault by writing ``arm.json`` in
the job's folder: at the next matching point the job records ``spark-fault`` and SIGKILLs or
SIGSTOPs its whole group (``window``: ``in-txn`` after half the batch is written, ``after-commit``
after the transaction committed and before Spark's commit log).

Settings: ``registry.SparkJobSettings`` (``input``, ``output``, ``markers`` topics, ``sink``, ...).
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException

from harness.history.model import (
    OK,
    READ_COMMITTED,
    SPARK_BATCH,
    SPARK_FAULT,
    SPARK_PROGRESS,
    SPARK_SKIP,
    SPARK_START,
    marker_key,
    marker_value,
    parse_marker,
    spark_value,
    tp_key,
)
from harness.history.recorder import Recorder
from harness.kafka.reads import read_all
from harness.rundir.runfolder import write_json
from harness.workloads.client import Client
from harness.workloads.common import Retired, StopFlag, Txn, WorkloadConfig, drop, init, new_producer, transaction
from harness.workloads.registry import SparkJobSettings

#: Where the job finds a standalone cluster's master (set by the runner for ``spark: standalone``)
#: and what it asks of it (clusters/spark/standalone.py's EXECUTOR_CONF, as JSON)
ENV_JOB_MASTER, ENV_JOB_CONF = "EOS_CHAOS_SPARK_JOB_MASTER", "EOS_CHAOS_SPARK_JOB_CONF"

ARM_FILE = "arm.json"
#: The driver's last finished micro-batch (committed, or a replay skipped), with its pid: the runner
#: waits for a restarted driver's first one before it ends the run (``Supervisor.await_recovered``).
PROGRESS_FILE = "progress.json"
WINDOWS = ("in-txn", "after-commit")
SIGNALS = {"kill": signal.SIGKILL, "stop": signal.SIGSTOP}
#: Reading the marker topic to its end at start: one fetch on a healthy cluster; generous because a
#: fault may be on.
MARKER_READ_TIMEOUT_S = 120.0
#: With ``speculation``: a copy of a task is started once half the batch's tasks are done and it has
#: run twice their median, at least one second (Spark's defaults wait for 75 % and 1.5x, too
#: late for micro-batches of three tasks).
SPECULATION_CONF = {"spark.speculation.quantile": "0.5", "spark.speculation.multiplier": "2",
                    "spark.speculation.minTaskRuntime": "1s"}


def job_dir(run_dir: Path, name: str) -> Path:
    return run_dir / "spark" / name


def transactional_id(name: str) -> str:
    return f"eos-spark-{name}"


def mark_progress(d: Path, batch: int) -> None:
    write_json(d / PROGRESS_FILE, {"pid": os.getpid(), "batch": batch})


def next_incarnation(d: Path) -> int:
    """0 for the job's first process, then 1, 2, ...: counted in a file (under a lock: a zombie's
    successor may start while the zombie lives)."""
    d.mkdir(parents=True, exist_ok=True)
    with open(d / "incarnations", "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        fh.seek(0)
        n = len(fh.read().split())
        fh.write(f"{os.getpid()}\n")
        return n


def last_committed_batch(bootstrap: str, topic: str, partitions: int, query: str) -> int:
    """The highest batch id with a committed marker of ``query`` (-1: none). Called after
    ``init_transactions``, which completed any transaction an older incarnation left open, so the
    marker topic's last stable offset is at its end."""
    back = read_all(bootstrap, topic, partitions, READ_COMMITTED, timeout=MARKER_READ_TIMEOUT_S)
    markers = [parse_marker(v) for recs in back.records.values() for _, v in recs]
    return max((batch for q, batch, _, _ in markers if q == query), default=-1)


def offset_ranges(checkpoint: Path, batch: int) -> dict[str, list[int]]:
    """``{"topic-partition": [start, end)}`` of micro-batch ``batch``, from Spark's offset log (the
    write-ahead log Spark writes before it runs the batch): ends in ``offsets/<batch>``, starts in
    ``offsets/<batch-1>`` or, for the first batch, the source's initial offsets."""
    def offsets_in(path: Path) -> dict[str, int]:
        lines = path.read_text().splitlines()
        obj = json.loads(lines[-1])
        return {tp_key(t, int(p)): int(o) for t, parts in obj.items() for p, o in parts.items()}

    end = offsets_in(checkpoint / "offsets" / str(batch))
    prev = checkpoint / "offsets" / str(batch - 1)
    start = offsets_in(prev) if batch > 0 and prev.exists() else offsets_in(checkpoint / "sources" / "0" / "0")
    return {tp: [start.get(tp, 0), end[tp]] for tp in sorted(end)}


class Arming:
    """The nemesis's armed fault, if any, fired at the first point of its window."""

    def __init__(self, d: Path, rec: Recorder, process: str) -> None:
        self.path, self.rec, self.process = d / ARM_FILE, rec, process

    def fire_if_armed(self, window: str, batch: int) -> None:
        try:
            arm = json.loads(self.path.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return
        if arm.get("window") not in (window, "any"):
            return
        os.replace(self.path, self.path.with_name(f"fired-{time.time_ns()}.json"))
        self.rec.event(self.process, SPARK_FAULT, {"window": window, "signal": arm["signal"], "batch": batch})
        # the whole driver: this Python process and its JVM (the supervisor made us a group leader)
        os.killpg(os.getpgrp(), SIGNALS[arm["signal"]])


@dataclass
class Batches:
    """The job's ways to write a micro-batch (``foreachBatch``'s body, by ``sink``: ``driver``,
    ``executor``, ``builtin``), and what they share: the incarnation's recorder, armed fault, and,
    for the driver's transactions, its producer and the last batch committed before it started."""

    cfg: WorkloadConfig
    settings: SparkJobSettings
    #: the job's folder (``job_dir``): its checkpoint, armed faults, progress
    d: Path
    process: str
    rec: Recorder
    producer: Client | None = None
    #: the highest batch id with a committed marker (-1: none); a replay at or below it is skipped
    last: int = -1

    def __post_init__(self) -> None:
        self.arming = Arming(self.d, self.rec, self.process)
        self.query, self.checkpoint, self.txn_id = self.cfg.name, self.d / "checkpoint", transactional_id(self.cfg.name)

    def body(self) -> Callable[[Any, int], None]:
        """``foreachBatch``'s body for the job's ``sink``."""
        return {"driver": self.transactional, "executor": self.executor, "builtin": self.builtin}[self.settings.sink]

    def transactional(self, df: Any, batch: int) -> None:
        """The batch's records and its marker in one transaction of the driver's producer; a replay
        of a batch already committed is skipped."""
        query, process, rec = self.query, self.process, self.rec
        t0 = time.monotonic()
        if batch <= self.last:
            rec.event(process, SPARK_SKIP, {"query": query, "batch": batch, "last_committed": self.last})
            mark_progress(self.d, batch)
            return
        ranges = offset_ranges(self.checkpoint, batch)
        rows = df.selectExpr("topic", "partition", "offset", "CAST(value AS STRING) AS value").collect()
        sends = [(self.settings.output, int(r.partition),
                  spark_value(r.topic, int(r.partition), int(r.offset), batch, process, r.value or "")) for r in rows]
        sends.append((self.settings.markers or "", 0, marker_value(query, batch, process, ranges)))
        keys = {len(sends) - 1: marker_key(query, batch).encode()}
        pause = (len(sends) // 2, lambda: self.arming.fire_if_armed("in-txn", batch))
        assert self.producer is not None  # the driver's sink made one before the query started
        try:
            outcome = transaction(rec, process, self.producer, Txn(self.txn_id, sends, pause=pause, keys=keys,
                                                                   invoke_extra={"batch": batch, "ranges": ranges}))
        except Retired as exc:
            rec.event(process, SPARK_BATCH, {"query": query, "batch": batch, "ranges": ranges, "records": len(rows),
                                             "outcome": "retired", "ms": _ms(t0)})
            raise RuntimeError(f"batch {batch}: producer retired ({exc}); the driver exits for a restart") from exc
        rec.event(process, SPARK_BATCH, {"query": query, "batch": batch, "ranges": ranges, "records": len(rows),
                                         "outcome": outcome, "ms": _ms(t0)})
        if outcome != OK:
            raise RuntimeError(f"batch {batch}: transaction {outcome}; the driver exits for a restart")
        self.last = batch
        mark_progress(self.d, batch)
        self.arming.fire_if_armed("after-commit", batch)

    def builtin(self, df: Any, batch: int) -> None:
        """Spark's own Kafka sink: plain (non-transactional) sends, at-least-once across restarts."""
        t0 = time.monotonic()
        ranges = offset_ranges(self.checkpoint, batch)
        out = df.selectExpr("partition", f"concat_ws('/', 'spark', topic, CAST(partition AS STRING), "
                            f"CAST(offset AS STRING), '{batch}', '{self.process}', CAST(value AS STRING)) AS value")
        self.arming.fire_if_armed("in-txn", batch)
        n = out.count()
        (out.write.format("kafka").option("kafka.bootstrap.servers", self.cfg.bootstrap)
         .option("topic", self.settings.output).save())
        self.rec.event(self.process, SPARK_BATCH, {"query": self.query, "batch": batch, "ranges": ranges, "records": n,
                                                   "outcome": OK, "ms": _ms(t0)})
        mark_progress(self.d, batch)
        self.arming.fire_if_armed("after-commit", batch)

    def executor(self, df: Any, batch: int) -> None:
        """Each task writes its input partition in its own transaction (harness/sparkjob/sink.py)."""
        from functools import partial

        from harness.history.recorder import run_t0
        from harness.sparkjob.sink import TaskSpec, write_partition

        cfg = self.cfg
        ranges = offset_ranges(self.checkpoint, batch)
        self.arming.fire_if_armed("in-txn", batch)  # the batch is planned, nothing written yet
        spec = TaskSpec(run_dir=str(Path(cfg.run_dir).absolute()), t0_ns=run_t0(), bootstrap=cfg.bootstrap,
                        query=self.query, process=self.process, job_dir=str(self.d.absolute()), output=self.settings.output,
                        markers=self.settings.markers or "", batch=batch, ranges=ranges, seed=cfg.seed,
                        library=cfg.library, client=cfg.client, settings=cfg.settings)
        (df.selectExpr("topic", "partition", "offset", "CAST(value AS STRING) AS value")
         .foreachPartition(partial(write_partition, spec)))
        mark_progress(self.d, batch)
        self.arming.fire_if_armed("after-commit", batch)


def main() -> None:
    cfg = WorkloadConfig.from_argv()
    s = SparkJobSettings.model_validate(cfg.settings)
    d = job_dir(Path(cfg.run_dir), cfg.name)
    incarnation = next_incarnation(d)
    process = f"{cfg.name}.{incarnation}"
    stop = StopFlag(cfg.max_seconds)
    with Recorder(Path(cfg.run_dir), process) as rec:
        rec.event(process, SPARK_START, {"query": cfg.name, "incarnation": incarnation, "pid": os.getpid(), "sink": s.sink})
        batches = Batches(cfg, s, d, process, rec)
        if s.sink == "driver":
            batches.producer = producer = new_producer(cfg, batches.txn_id)
            init(rec, process, producer, batches.txn_id)  # fences every older incarnation first
            # markers: the scenario requires it for the transactional sink, the only one that writes it
            batches.last = last_committed_batch(cfg.bootstrap, s.markers or "", cfg.partitions_of(s.markers or ""), cfg.name)
        q = (input_stream(cfg, s, d).writeStream.queryName(cfg.name.replace("-", "_"))
             .option("checkpointLocation", str(batches.checkpoint))
             .trigger(processingTime=f"{s.trigger_ms} milliseconds")
             .foreachBatch(batches.body())
             .start())
        reported = -1
        try:
            while not stop and q.isActive:
                q.awaitTermination(1)
                reported = report_progress(q, rec, process, reported)
        finally:
            failure = q.exception()
            if q.isActive:
                q.stop()  # waits for the batch in hand
            if batches.producer is not None:
                drop(batches.producer)
        if failure is not None:
            raise SystemExit(f"query {cfg.name} failed: {str(failure)[:2000]}")


def input_stream(cfg: WorkloadConfig, s: SparkJobSettings, d: Path) -> Any:
    """The job's Spark session's stream of the input topic (read_committed, from the earliest offset)."""
    from harness.sparkjob.session import session

    conf = {"spark.task.maxFailures": str(s.task_max_failures), "spark.speculation": str(s.speculation).lower(),
            **SPECULATION_CONF, **json.loads(os.environ.get(ENV_JOB_CONF) or "{}")}
    spark = session(f"eos-chaos-{cfg.name}", kafka=True, tmp_dir=d / "tmp",
                    master=os.environ.get(ENV_JOB_MASTER) or None, conf=conf)
    return (spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", cfg.bootstrap)
            .option("subscribe", s.input)
            .option("startingOffsets", "earliest")
            .option("kafka.isolation.level", "read_committed")
            .option("maxOffsetsPerTrigger", s.max_offsets_per_trigger)
            .load())


def report_progress(q: Any, rec: Recorder, process: str, reported: int) -> int:
    """Record Spark's own figures of each micro-batch finished since the last call (``spark-progress``:
    the whole trigger's time, not only our ``foreachBatch``); returns the last batch id recorded."""
    for p in q.recentProgress:
        batch = int(p["batchId"])
        if batch > reported and int(p.get("numInputRows", 0)) > 0:
            rec.event(process, SPARK_PROGRESS, {"batch": batch, "trigger_ms": p["durationMs"].get("triggerExecution"),
                                                "rows": p["numInputRows"]})
            reported = batch
    return reported


def _ms(t0: float) -> float:
    return round((time.monotonic() - t0) * 1000, 1)


if __name__ == "__main__":
    try:
        main()
    except (KafkaException, Retired) as exc:  # init or the marker read failed: the supervisor restarts us
        raise SystemExit(f"spark-job: {exc}") from exc
