"""Every fault proves it hit something (issue 31), on the session cluster: a fault aimed at a
partition nobody writes hits nothing and says so, in the journal and the report; its twin, aimed at
the partition the producer writes, hits open transactions. And a fault aimed at a workload waits
for its progress first, saying how long. Short runs of a producer on one topic beside an idle one
(about 30 s each on the local backend)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from clusters.backends.backends import Backend
from clusters.backends.protocol import Cluster
from harness.run import runner
from harness.run.scenario import Scenario
from harness.rundir.runfolder import new_run_dir

pytestmark = pytest.mark.chaos


def run(cluster: Cluster, name: str, fault: dict[str, Any]) -> runner.RunResult:
    """A txn-producer writing ``busy`` for a few seconds, ``idle`` beside it, and ``fault`` once."""
    sc = Scenario.model_validate({
        "name": name, "description": "a producer on one topic, a fault aimed at one partition", "duration": 8,
        "topics": ["busy", "idle"], "partitions": 2,
        "workloads": [{"kind": "txn-producer", "settings": {"topics": ["busy"], "values_per_txn": 4, "abort_share": 0.1}}],
        "faults": [fault], "expect": {"valid": True, "min_ok_txns": 5}})
    result = runner.run(sc, Backend(cluster.backend), random.randrange(2**31), new_run_dir(f"pytest-{name}"),
                        cluster=cluster)
    v = result.verdict.to_json()
    assert v["valid"] is True and v["as_expected"] is True, {k: v.get(k) for k in ("unknown_because", "run", "stats")}
    assert v["run"]["nemesis_errors"] == [] and v["run"]["healed"] is True, v["run"]
    return result


def test_a_fault_aimed_at_an_idle_partition_hit_nothing_and_says_so(cluster: Cluster) -> None:
    result = run(cluster, "hit-idle-partition", {"at": 2, "kind": "latency", "target": "leader", "of": "idle/0",
                                                 "listeners": "client", "params": {"latency_ms": 50}, "duration": 3})
    [fault] = result.journal.faults
    assert fault.hit is not None and fault.hit.hit is False, fault
    assert fault.hit.txns_open == 0 and fault.hit.aimed_at.startswith("partition idle."), fault.hit
    assert result.verdict.to_json()["run"]["faults_hit"] == {"faults": 1, "hit_nothing": 1, "began_without_progress": 0}
    page = (result.run_dir / "report.html").read_text()
    assert "Most faults hit nothing: 1 of 1" in page and "hit-nothing" in page


def test_its_twin_aimed_at_the_partition_the_producer_writes_hit_open_transactions(cluster: Cluster) -> None:
    result = run(cluster, "hit-busy-partition", {"at": 2, "kind": "latency", "target": "leader", "of": "busy/0",
                                                 "listeners": "client", "params": {"latency_ms": 50}, "duration": 3})
    [fault] = result.journal.faults
    assert fault.hit is not None and fault.hit.hit is True, fault
    assert fault.hit.txns_open >= 1 and fault.hit.workloads == ["txn-producer-0"], fault.hit
    assert result.verdict.to_json()["run"]["faults_hit"]["hit_nothing"] == 0
    assert "Most faults hit nothing" not in (result.run_dir / "report.html").read_text()


def test_a_fault_aimed_at_a_workload_waits_for_its_progress_and_records_the_wait(cluster: Cluster) -> None:
    result = run(cluster, "progress-before-pause", {"at": 2, "kind": "pause-workload", "workload": "txn-producer",
                                                    "duration": 2})
    [fault] = result.journal.faults
    # it committed since the schedule began: the pause waited a moment at most, and began
    assert fault.waited_s is not None and fault.waited_s < 30 and not fault.wait_expired, fault
    assert fault.hit is not None and fault.hit.aimed_at == "workload txn-producer-0", fault.hit
    figure = result.verdict.to_json()["stats"]["progress_under_faults"]
    assert figure["idle"] == [] and figure["kinds"]["txn-producer"]["aimed_at"] is True, figure
