"""``eos-chaos bench spark``: the Spark EOS job on a healthy cluster at a steady input rate, with one
sink (``driver``, ``executor``, ``builtin``) on ``local[2]`` or a standalone Spark cluster. Per run:
records/s through the sink at steady state (the batches between a warm-up and the first fault),
Spark's own micro-batch time (p50, p95 of its progress reports), and the time from each fault to the
next committed batch: a driver kill two thirds into the run (the transactional sinks; Spark's own
sink would write the replay twice) and, on a standalone cluster, an executor kill half-way."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from clusters.backends.backends import Backend
from clusters.backends.protocol import Cluster
from harness.base.errors import HarnessError
from harness.run import runner
from harness.run.scenario import Scenario
from harness.rundir.run_verdict import SparkFigures

#: Seconds after the job's first batch that are not counted (executors starting, the first jobs
#: compiled): steady state begins after.
WARMUP_S = 15.0
#: The shortest run on a standalone cluster that leaves batches between its warm-up and its faults.
STANDALONE_MIN_S = 150.0


INPUT_TOPIC = "spark-in"


def scenario(seconds: float, rate: int, sink: str = "driver", spark: str = "local", values_per_txn: int = 50) -> Scenario:
    """The job and its input; its faults late in the run, so the steady batches before them
    dominate the micro-batch time. ``values_per_txn``: the input's transaction size; at 50 the
    producer, not the sink, sets the pace (~750 values/s here), larger ones feed a sink faster."""
    faults: list[dict[str, Any]] = []
    # a standalone cluster's first batch comes ~40 s after the job starts (docs/SPARK.md): its faults
    # come later in the run, and it needs a longer one (STANDALONE_MIN_S)
    executor_at, driver_at = (0.6, 0.8) if spark == "standalone" else (0.5, 2 / 3)
    if spark == "standalone" and sink != "builtin":
        faults.append({"at": round(seconds * executor_at), "kind": "kill-executor"})
    if sink != "builtin":
        faults.append({"at": round(seconds * driver_at), "kind": "kill-driver"})
    settings: dict[str, Any] = {"input": INPUT_TOPIC, "output": "spark-out", "sink": sink}
    if sink != "builtin":
        settings["markers"] = "spark-markers"
    return Scenario.model_validate({
        "name": "bench-spark", "description": "benchmark", "duration": seconds, "spark": spark,
        "topics": [INPUT_TOPIC, "spark-out", "spark-markers"], "partitions": 3,
        "workloads": [{"kind": "txn-producer", "settings": {"topics": [INPUT_TOPIC], "values_per_txn": values_per_txn, "rate": rate,
                                                           "abort_share": 0.1}},
                      {"kind": "spark-job", "settings": settings}],
        "faults": faults, "expect": {"valid": True, "min_spark_batches": 3 if spark == "standalone" else 5}})


def steady_window_ns(events: list[dict[str, Any]]) -> tuple[int, int] | None:
    """The steady state: from ``WARMUP_S`` after the job's first committed batch to the first fault
    (or the last batch), in run time (ns); None when the run left no such window."""
    batches = sorted(e["time"] for e in events if e["f"] == "spark-batch" and e.get("outcome") == "ok")
    faults = [e["time"] for e in events if e["f"] == "fault" and e.get("phase") == "start"]
    if not batches:
        return None
    start = batches[0] + int(WARMUP_S * 1e9)
    end = min(faults) if faults else batches[-1]
    return (start, end) if end > start else None


def steady_records_per_s(run_dir: Path) -> dict[str, float | None]:
    """Records/s the sink committed in the steady window (``steady_window_ns``), from the batches'
    own events, next to the input's pace over the same window: values of the input producer's
    committed transactions. A sink that keeps up shows the input's pace; only a sink slower than
    its input shows its own capacity (``records_per_s`` well under ``input_per_s``)."""
    from harness.history import store
    from harness.history.model import OK

    ops, truncated = store.read_ops(run_dir)
    tables = store.flatten(ops, truncated)
    events = store.spark_events(tables)
    window = steady_window_ns(events)
    if window is None:
        return {"records_per_s": None, "input_per_s": None}
    start, end = window
    seconds = (end - start) / 1e9
    n = sum(int(e.get("records", 0)) for e in events
            if e["f"] == "spark-batch" and e.get("outcome") == "ok" and start < e["time"] <= end)
    txns = tables.txns
    done = txns[(txns["outcome"] == OK) & (txns["complete_time"] > start) & (txns["complete_time"] <= end)]
    w = tables.writes
    # a run's topics carry its run's suffix (``spark-in.run1``)
    committed_inputs = int((w["txn"].isin(done["txn"]) & (w["topic"].str.partition(".")[0] == INPUT_TOPIC)).sum())
    return {"records_per_s": round(n / seconds, 1), "input_per_s": round(committed_inputs / seconds, 1)}


def bench(cluster: Cluster, run_dir: Path, seconds: float, rate: int, sink: str = "driver",
          spark: str = "local", values_per_txn: int = 50) -> dict[str, Any]:
    result = runner.run(scenario(seconds, rate, sink, spark, values_per_txn), Backend(cluster.backend), 1, run_dir, cluster=cluster)
    v = result.verdict
    s = v.figures.spark or SparkFigures()
    if v.valid is not True or not v.as_expected:
        raise HarnessError(f"a benchmark run must be valid and as expected; this one was valid={v.valid}, "
                           f"{s.batches} batches (at least {3 if spark == 'standalone' else 5} wanted): {run_dir}")
    recovery = [r for r in s.restart_to_first_batch_s if r is not None]
    after_executor = [r for r in s.executor_kill_to_batch_s if r is not None]
    return {"trigger_ms_p50": s.trigger_ms.get("p50"), "trigger_ms_p95": s.trigger_ms.get("p95"),
            "restart_to_first_batch_s": recovery[0] if recovery else None,
            "executor_kill_to_batch_s": after_executor[0] if after_executor else None, "batches": s.batches,
            **steady_records_per_s(result.run_dir), "run_dir": str(run_dir)}


def median_of(samples: list[dict[str, Any]]) -> dict[str, Any]:
    keys = ("trigger_ms_p50", "trigger_ms_p95", "restart_to_first_batch_s", "executor_kill_to_batch_s", "records_per_s", "input_per_s")
    return {k: statistics.median(have) if (have := [s[k] for s in samples if s.get(k) is not None]) else None for k in keys}
