"""The executor-side exactly-once sink (``sink: executor``): every task writes its input partition's
share of a micro-batch in its own Kafka transaction, from the executor it runs on.

- ``transactional.id`` = ``eos-spark-<query>-<input topic>-<partition>``: stable per (query, input
  partition), so any later attempt of the same task (a retry, a speculative copy, the replay of the
  batch by a new driver) fences every older one in ``init_transactions``.
- The transaction carries, with the outputs, one marker: key ``<query>/<input topic-partition>``,
  value ``marker_value(query, batch, process, {tp: [start, end)})``, written to the marker topic's
  partition of the same number as the input partition (one writer per marker partition: so after
  ``init_transactions`` no open transaction holds that partition's last stable offset back).
- After ``init_transactions`` the task reads its partition's last committed marker and ``decide``s:
  a batch at or below it is committed already (skip); a range that starts before the marker's end
  would write some offsets twice (refuse: the task fails); else write.

The argument for why this is exactly-once, case by case: docs/SPARK.md.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.history.model import (
    OK,
    SPARK_BATCH,
    SPARK_FAULT,
    SPARK_SKIP,
    marker_value,
    parse_marker,
    spark_value,
    tp_key,
)

#: The executor fault armed by the nemesis (clusters/spark/standalone.py's executors; chaos/faults/spark_standalone.py).
EXECUTOR_ARM_FILE = "arm-executor.json"
#: Reading a marker partition's tail: how many offsets back the first look starts (doubled until a
#: marker of this key is found or the partition's start is reached).
MARKER_WINDOW = 16
MARKER_READ_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Marker:
    """A committed per-partition marker: ``batch`` wrote input offsets [start, end) of ``tp``."""

    batch: int
    start: int
    end: int
    process: str


class SinkConflict(RuntimeError):
    """A batch whose range overlaps what the partition's marker says is committed: writing it would
    write some input records twice. Never expected; the task fails rather than write."""


def decide(last: Marker | None, batch: int, start: int, end: int) -> str:
    """``"skip"`` (the batch is committed already), ``"write"``, or SinkConflict. ``last``: the
    partition's last committed marker (None: none yet). A marker of a later batch also means
    skip: batches commit in order per partition, so this batch committed before it."""
    if last is not None and last.batch >= batch:
        return "skip"
    if last is not None and start < last.end:
        raise SinkConflict(f"batch {batch} reads [{start}, {end}) but batch {last.batch} committed up to {last.end} "
                           f"(by {last.process}): offsets {start}..{last.end - 1} would be written twice")
    return "write"


def marker_key(query: str, tp: str) -> str:
    return f"{query}/{tp}"


def parse_partition_marker(value: str) -> tuple[str, Marker]:
    """A per-partition marker's (tp, Marker)."""
    _, batch, process, ranges = parse_marker(value)
    ((tp, (start, end)),) = ranges.items()
    return tp, Marker(batch, int(start), int(end), process)


def transactional_id(query: str, tp: str) -> str:
    return f"eos-spark-{query}-{tp}"


@dataclass(frozen=True)
class TaskSpec:
    """What a task needs from the driver (pickled into the closure): where to record, what to write."""

    run_dir: str
    t0_ns: int
    bootstrap: str
    query: str
    #: the driver incarnation's process name (``spark-job-0.3``)
    process: str
    job_dir: str
    output: str
    markers: str
    batch: int
    #: ``{"topic-partition": [start, end)}`` of this batch, from Spark's offset log
    ranges: dict[str, list[int]]
    seed: int
    library: str
    client: dict[str, Any]
    settings: dict[str, Any]


def last_marker(bootstrap: str, topic: str, partition: int, key: str,
                timeout: float = MARKER_READ_TIMEOUT_S) -> Marker | None:
    """The last committed marker with ``key`` in ``topic``/``partition`` (None: none). Reads the tail
    read_committed, from ever further back until one is found; requires the last stable offset to
    be the high watermark (no open transaction: else a committed marker past it would be missed)."""
    import uuid

    from confluent_kafka import Consumer, KafkaError, TopicPartition

    from clusters.kafka.health import QUIET
    from harness.base.errors import WaitTimeout
    from harness.base.wait import wait_until

    base = {"bootstrap.servers": bootstrap, "group.id": f"eos-chaos-marker-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False, "enable.partition.eof": True, "logger": QUIET}
    consumer = Consumer({**base, "isolation.level": "read_committed"})
    probe = Consumer({**base, "isolation.level": "read_uncommitted"})
    deadline = time.monotonic() + timeout
    try:
        tp = TopicPartition(topic, partition)
        ends: dict[str, int] = {}

        def settled() -> bool:
            ends["low"], ends["lso"] = consumer.get_watermark_offsets(tp, timeout=10)
            ends["high"] = probe.get_watermark_offsets(tp, timeout=10)[1]
            return ends["lso"] == ends["high"]

        wait_until(settled, timeout=timeout, what=f"{topic}-{partition}'s last stable offset to reach its high watermark",
                   state=lambda: f"offsets {ends}")
        low, high = ends["low"], ends["high"]
        window = MARKER_WINDOW
        while True:
            start = max(low, high - window)
            found: Marker | None = None
            if high > low:
                consumer.assign([TopicPartition(topic, partition, start)])
                while True:
                    if time.monotonic() > deadline:
                        raise WaitTimeout(f"reading {topic}-{partition} [{start}, {high}) for marker {key} took over "
                                          f"{timeout:.0f}s")
                    msg = consumer.poll(1.0)
                    if msg is None:
                        continue
                    err = msg.error()
                    if err is not None:
                        if err.code() == KafkaError._PARTITION_EOF:
                            break
                        raise RuntimeError(f"reading marker {key} from {topic}-{partition}: {err}")
                    if (msg.key() or b"").decode() == key:
                        found = parse_partition_marker((msg.value() or b"").decode())[1]
                consumer.unassign()
            if found is not None or start == low:
                return found
            window *= 4
    finally:
        consumer.close()
        probe.close()


def write_partition(spec: TaskSpec, rows: Iterable[Any]) -> None:
    """The body of one task: this micro-batch's rows of one input partition (rows of the Kafka
    source: topic, partition, offset, value), written in one transaction with their marker."""
    os.environ["EOS_CHAOS_RUN_T0"] = str(spec.t0_ns)  # the recorder's time zero: the run's
    from pyspark import TaskContext

    from harness.history.recorder import Recorder
    from harness.workloads.clients import open_producer
    from harness.workloads.common import Txn, drop, init, transaction

    data = [(str(r.topic), int(r.partition), int(r.offset), str(r.value or "")) for r in rows]
    if not data:
        return  # nothing committed in this range (aborted records, control records only): no marker
    tps = {tp_key(t, p) for t, p, _, _ in data}
    if len(tps) != 1:
        raise RuntimeError(f"a task of batch {spec.batch} holds rows of {sorted(tps)}; the sink wants one input "
                           "partition per task (the Kafka source's default)")
    (tp,) = tps
    start, end = spec.ranges[tp]
    ctx = TaskContext.get()
    attempt = ctx.taskAttemptId() if ctx is not None else 0
    # unique per task attempt: a retried attempt's values must differ from the one it replaces
    process = f"{spec.process}~t{attempt}"
    txn_id = transactional_id(spec.query, tp)
    partition = data[0][1]
    t0 = time.monotonic()
    with Recorder(Path(spec.run_dir), f"{spec.query}-exec-{os.getpid()}") as rec:
        producer = open_producer(spec.library, spec.bootstrap, txn_id,
                                 int(spec.settings.get("transaction_timeout_ms", 60_000)), spec.client)
        try:
            init(rec, process, producer, txn_id)  # fences every older attempt of this task
            last = last_marker(spec.bootstrap, spec.markers, partition, marker_key(spec.query, tp))
            unsafe = not spec.settings.get("skip_committed", True)  # the negative control's sink
            if not unsafe and decide(last, spec.batch, start, end) == "skip":
                rec.event(process, SPARK_SKIP, {"query": spec.query, "batch": spec.batch, "partition": tp,
                                                "last_committed": last.batch if last else -1})
                return
            sends = [(spec.output, p, spark_value(t, p, o, spec.batch, process, v)) for t, p, o, v in data]
            sends.append((spec.markers, partition, marker_value(spec.query, spec.batch, process, {tp: [start, end]})))
            keys = {len(sends) - 1: marker_key(spec.query, tp).encode()}
            arming = ExecutorArming(Path(spec.job_dir), rec, process)
            outcome = transaction(rec, process, producer, Txn(
                txn_id, sends, keys=keys, pause=(len(sends) // 2, lambda: arming.fire_if_armed(spec.batch, tp)),
                invoke_extra={"batch": spec.batch, "ranges": {tp: [start, end]}}))
            rec.event(process, SPARK_BATCH, {"query": spec.query, "batch": spec.batch, "ranges": {tp: [start, end]},
                                             "records": len(data), "outcome": outcome, "ms": round((time.monotonic() - t0) * 1000, 1),
                                             "partition": tp})
            if outcome != OK:
                raise RuntimeError(f"batch {spec.batch} {tp}: transaction {outcome}; the task fails and Spark retries it")
        finally:
            drop(producer)


class ExecutorArming:
    """An executor fault armed for the inside of a task's transaction (``arm-executor.json`` in the
    job's folder): the first task to reach its pause point takes it, records ``spark-fault`` and
    SIGKILLs (or SIGSTOPs) the executor JVM it runs under, then itself."""

    def __init__(self, d: Path, rec: Any, process: str) -> None:
        self.path, self.rec, self.process = d / EXECUTOR_ARM_FILE, rec, process

    def fire_if_armed(self, batch: int, tp: str) -> None:
        taken = self.path.with_name(f"fired-executor-{os.getpid()}-{time.time_ns()}.json")
        try:
            os.replace(self.path, taken)  # atomic: one task takes it
        except FileNotFoundError:
            return
        arm = json.loads(taken.read_text())
        jvm = executor_jvm()
        sig = {"kill": signal.SIGKILL, "stop": signal.SIGSTOP}[arm["signal"]]
        taken.write_text(json.dumps({**arm, "executor_pid": jvm, "worker_pid": os.getpid(), "batch": batch, "tp": tp}))
        self.rec.event(self.process, SPARK_FAULT, {"window": "in-txn", "signal": arm["signal"], "batch": batch,
                                                   "target": "executor", "executor_pid": jvm, "partition": tp})
        if jvm is not None:
            os.kill(jvm, sig)
        os.kill(os.getpid(), sig)  # this Python worker too: it must not go on to commit


def executor_jvm() -> int | None:
    """The executor JVM this Python worker runs under (an ancestor; None in local mode, where the
    driver's JVM runs the tasks)."""
    import psutil

    from clusters.backends.procs import SPARK_EXECUTOR_CLASS

    try:
        for p in psutil.Process().parents():
            if SPARK_EXECUTOR_CLASS in p.cmdline():
                return int(p.pid)
    except psutil.Error:
        return None
    return None
