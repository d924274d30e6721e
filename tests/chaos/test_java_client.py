"""The workloads on Kafka's own Java client (the bridge of harness/workloads/clients/java.py) against
real Kafka, on the session cluster: txn-baseline valid on the newest 4.x (transaction.version 2
capable); txn-baseline's workloads with a copier pipeline folded in, whose copier is killed -9 (its
JVM with it), valid on the newest 3.x (classic protocol); and the aborted-read negative control
caught with a Java reader configured read_uncommitted. Three short runs (~25 s each plus the final
reads) cover both releases and every workload kind a Java client runs."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from clusters.backends import procs
from clusters.backends.backends import Backend
from clusters.backends.protocol import Cluster
from clusters.builds import pins
from harness.run import runner, scenario
from harness.run.scenario import Scenario
from harness.rundir.runfolder import new_run_dir
from harness.workloads.clients import DEFAULT_JAVA_VERSION

pytestmark = pytest.mark.chaos

#: txn-baseline's producers and reader, plus a copier pipeline (the producers also feed its input)
#: whose copier is killed -9 early and restarted (its JVM dies with it). The copier leaves its group
#: by session timeout only (it was killed): 6 s instead of 45, so its successor copies within the run.
BASELINE_WITH_COPIER = """\
name: java-baseline-copier
description: txn-baseline's workloads with a copier pipeline folded in; the copier is killed -9 once
duration: 20
topics: [eos-a, eos-b, eos-in, eos-out]
workloads:
  - kind: txn-producer
    count: 2
    settings: {values_per_txn: 6, abort_share: 0.1, topics: [eos-a, eos-b, eos-in]}
  - kind: copier
    count: 1
    settings: {input: eos-in, output: eos-out, abort_share: 0.1}
    client: {session.timeout.ms: 6000}
  - kind: reader
    count: 1
faults:
  - {at: 7, kind: kill-workload, workload: copier, duration: 1}
"""
#: The client runs on the host with either backend: one backend is enough here.
LOCAL_ONLY = "the Java client runs on the host whatever the backend: once (local) is enough"


def run(cluster: Cluster, sc: Scenario, library: str, duration: float) -> runner.RunResult:
    if cluster.backend != "local":
        pytest.skip(LOCAL_ONLY)
    # the faults a run this short reaches (with_duration refuses to cut any off): what ran before
    sc = sc.model_copy(update={"faults": [f for f in sc.faults if f.at < duration]})
    sc = sc.with_library(library).with_duration(duration)
    assert {w.library for w in sc.workloads} == {library}
    result = runner.run(sc, Backend(cluster.backend), random.randrange(2**31), new_run_dir(f"pytest-{sc.name}-java"),
                        cluster=cluster)
    v = result.verdict.to_json()
    print(json.dumps({k: v[k] for k in ("valid", "stats", "run")}, default=str)[:2000])
    assert v["run"]["healed"] is True and v["run"]["nemesis_errors"] == [], v["run"]
    assert not [t for t in procs.tagged_processes() if t.cluster_id == cluster.cluster_id
                and procs.describe(t.pid).startswith("java client JVM")], \
        "a workload's Java client outlived the run"
    return result


def anomalies(v: dict) -> dict[str, int]:
    return {k: c["count"] for k, c in v["checks"].items() if c["count"]}


# in `make library` since the app scenarios came into `make test`: the Java bridge's producer, reader and
# copier stay there through the two tests below (3.x, and the default release's reader)
@pytest.mark.library
def test_txn_baseline_is_valid_on_java(cluster: Cluster) -> None:
    v = run(cluster, scenario.load("txn-baseline"), f"java@{DEFAULT_JAVA_VERSION}", 20).verdict.to_json()
    assert v["valid"] is True, anomalies(v)
    assert v["stats"]["txn"]["ok"] >= 20 and v["stats"]["faults"] >= 1, v["stats"]


def test_a_killed_java_copier_copies_exactly_once_on_3x(cluster: Cluster, tmp_path: Path) -> None:
    path = tmp_path / "java-baseline-copier.yaml"
    path.write_text(BASELINE_WITH_COPIER)
    result = run(cluster, scenario.load(str(path)), f"java@{pins.JAVA_CLIENT_3X_VERSION}", 20)
    v = result.verdict.to_json()
    assert v["valid"] is True, anomalies(v)
    assert v["stats"]["faults"] == 1 and v["checks"]["copy-exactly-once"].get("skipped") is None, v["stats"]
    ops = [json.loads(line) for line in (result.run_dir / "history" / "copier-0.jsonl").read_text().splitlines()]
    inits = [k for k, o in enumerate(ops) if o["type"] == "invoke" and o["f"] == "init"]
    assert len(inits) >= 2, "the copier was not restarted"  # a new OS process: its incarnations count from 0 again
    after = [o for o in ops[inits[-1]:] if o["type"] == "ok" and o["f"] == "txn"]
    assert after, "the restarted copier committed nothing"


def test_a_java_reader_with_read_uncommitted_is_caught_reading_aborted_values(cluster: Cluster) -> None:
    sc = scenario.load("negative-aborted-read")
    assert any(w.client.get("isolation.level") == "read_uncommitted" for w in sc.workloads)
    v = run(cluster, sc, f"java@{DEFAULT_JAVA_VERSION}", 15).verdict.to_json()
    assert v["valid"] is False and v["checks"]["aborted-read"]["count"] > 0, anomalies(v)
