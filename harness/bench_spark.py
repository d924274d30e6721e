"""``eos-chaos bench spark``: the Spark EOS job on a healthy cluster at a steady input rate, its driver
killed once mid-run. Per run: Spark's own micro-batch time (median of the batches, from its progress
reports) and the time from the kill until a batch went through again."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from clusters.backends import Backend
from clusters.base import Cluster
from harness import runner
from harness.scenario import Scenario


def scenario(seconds: float, rate: int) -> Scenario:
    """The job and its input; one driver kill (wherever the batch is) two thirds into the run, so
    the steady batches before it dominate the micro-batch time."""
    return Scenario.model_validate({
        "name": "bench-spark", "description": "benchmark", "duration": seconds,
        "topics": ["spark-in", "spark-out", "spark-markers"], "partitions": 3,
        "workloads": [{"kind": "txn-producer", "settings": {"topics": ["spark-in"], "values_per_txn": 50, "rate": rate,
                                                           "abort_share": 0.1}},
                      {"kind": "spark-job", "settings": {"input": "spark-in", "output": "spark-out", "markers": "spark-markers"}}],
        "faults": [{"at": round(seconds * 2 / 3), "kind": "kill-driver"}],
        "expect": {"valid": True, "min_spark_batches": 5}})


def bench(cluster: Cluster, run_dir: Path, seconds: float, rate: int) -> dict[str, Any]:
    result = runner.run(scenario(seconds, rate), Backend(cluster.backend), 1, run_dir, cluster=cluster)
    v = result.verdict
    s = v["stats"]["spark"]
    if v["valid"] is not True or not v["as_expected"]:
        raise AssertionError(f"the benchmark run must be valid and as expected: {run_dir}")
    recovery = [r for r in s["restart_to_first_batch_s"] if r is not None]
    return {"trigger_ms_p50": s["trigger_ms"]["p50"], "trigger_ms_p95": s["trigger_ms"]["p95"],
            "restart_to_first_batch_s": recovery[0] if recovery else None, "batches": s["batches"],
            "records_per_s": round(s["records"] / seconds, 1), "run_dir": str(run_dir)}


def median_of(samples: list[dict[str, Any]]) -> dict[str, Any]:
    keys = ("trigger_ms_p50", "trigger_ms_p95", "restart_to_first_batch_s", "records_per_s")
    return {k: statistics.median(s[k] for s in samples if s[k] is not None) for k in keys}
