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

from clusters.backends import Backend
from clusters.base import Cluster
from harness import runner
from harness.errors import HarnessError
from harness.scenario import Scenario

#: Seconds after the job's first batch that are not counted (executors starting, the first jobs
#: compiled): steady state begins after.
WARMUP_S = 15.0
#: The shortest run on a standalone cluster that leaves batches between its warm-up and its faults.
STANDALONE_MIN_S = 150.0


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
    settings: dict[str, Any] = {"input": "spark-in", "output": "spark-out", "sink": sink}
    if sink != "builtin":
        settings["markers"] = "spark-markers"
    return Scenario.model_validate({
        "name": "bench-spark", "description": "benchmark", "duration": seconds, "spark": spark,
        "topics": ["spark-in", "spark-out", "spark-markers"], "partitions": 3,
        "workloads": [{"kind": "txn-producer", "settings": {"topics": ["spark-in"], "values_per_txn": values_per_txn, "rate": rate,
                                                           "abort_share": 0.1}},
                      {"kind": "spark-job", "settings": settings}],
        "faults": faults, "expect": {"valid": True, "min_spark_batches": 3 if spark == "standalone" else 5}})


def steady_records_per_s(run_dir: Path) -> float | None:
    """Records/s the sink committed between ``WARMUP_S`` after its first batch and the first fault
    (or the end): from the batches' own events."""
    from harness.history import store

    ops, truncated = store.read_ops(run_dir)
    events = store.spark_events(store.flatten(ops, truncated))
    batches = sorted((e["time"], int(e.get("records", 0))) for e in events if e["f"] == "spark-batch" and e.get("outcome") == "ok")
    faults = [e["time"] for e in events if e["f"] == "fault" and e.get("phase") == "start"]
    if not batches:
        return None
    start = batches[0][0] + int(WARMUP_S * 1e9)
    end = min(faults) if faults else batches[-1][0]
    n = sum(r for t, r in batches if start < t <= end)
    return round(n / ((end - start) / 1e9), 1) if end > start else None


def bench(cluster: Cluster, run_dir: Path, seconds: float, rate: int, sink: str = "driver",
          spark: str = "local", values_per_txn: int = 50) -> dict[str, Any]:
    result = runner.run(scenario(seconds, rate, sink, spark, values_per_txn), Backend(cluster.backend), 1, run_dir, cluster=cluster)
    v = result.verdict
    s = v["stats"]["spark"]
    if v["valid"] is not True or not v["as_expected"]:
        raise HarnessError(f"a benchmark run must be valid and as expected; this one was valid={v['valid']}, "
                           f"{s['batches']} batches (at least {3 if spark == 'standalone' else 5} wanted): {run_dir}")
    recovery = [r for r in s["restart_to_first_batch_s"] if r is not None]
    after_executor = [r for r in s.get("executor_kill_to_batch_s", []) if r is not None]
    return {"trigger_ms_p50": s["trigger_ms"]["p50"], "trigger_ms_p95": s["trigger_ms"]["p95"],
            "restart_to_first_batch_s": recovery[0] if recovery else None,
            "executor_kill_to_batch_s": after_executor[0] if after_executor else None, "batches": s["batches"],
            "records_per_s": steady_records_per_s(result.run_dir), "run_dir": str(run_dir)}


def median_of(samples: list[dict[str, Any]]) -> dict[str, Any]:
    keys = ("trigger_ms_p50", "trigger_ms_p95", "restart_to_first_batch_s", "executor_kill_to_batch_s", "records_per_s")
    return {k: statistics.median(have) if (have := [s[k] for s in samples if s.get(k) is not None]) else None for k in keys}
