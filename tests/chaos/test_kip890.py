"""KAFKA-17754's answer per client, kept as tests (docs/KIP890.md): on the session cluster (Kafka
4.4.0, transaction.version 2 by default), ``kip890-late-commit-tight`` tears transactions of a
client that does not speak KIP-890 part 2 and leaves Java 4.x valid. A late EndTxn lands by timing,
so a client's exposure is a rate (the matrix measured it); one run of 100 s is expected, not
certain, to show it. Behind the `library` marker: ~2 min a run, run by `make library`."""

from __future__ import annotations

import json
import random

import pytest

from clusters.backends import Backend
from clusters.base import Cluster
from harness import runner, scenario
from harness.runfolder import new_run_dir

pytestmark = [pytest.mark.chaos, pytest.mark.library]

#: what a late EndTxn of the same producer epoch can do to the next transaction
LATE_COMMIT_ANOMALIES = {"torn-transaction", "aborted-read", "lost-write"}


def hunt(cluster: Cluster, name: str, library: str) -> runner.RunResult:
    if cluster.backend != "local":
        pytest.skip("the client is what is tested, the same against either backend: run once (local)")
    sc = scenario.load(name).with_library(library)
    result = runner.run(sc, Backend(cluster.backend), random.randrange(2**31), new_run_dir(f"pytest-{name}"),
                        cluster=cluster)
    v = result.verdict
    assert v["run"]["healed"] is True and v["run"]["nemesis_errors"] == [], v["run"]
    assert v["run"]["transaction_version"] == 2, "the session cluster must run KIP-890 part 2"
    return result


def late_commits_landed(result: runner.RunResult) -> list[dict]:
    """EndTxn requests the wire proxy held until the client had gone, that the coordinator then
    accepted: each committed whatever transaction of that epoch was open when it arrived."""
    events = [json.loads(x) for x in (result.run_dir / "wire-events.jsonl").read_text().splitlines()]
    return [e for e in events if e["event"] == "response" and e["api"] == "EndTxn" and e["client_gone"]
            and e["error"] == "NONE"]


def anomalies(v: dict) -> set[str]:
    return {k for k, c in v["checks"].items() if c["count"]}


@pytest.mark.parametrize("library", ["confluent-kafka", "java@3.9.2"])
def test_a_client_without_kip890_has_transactions_torn_by_late_commits(cluster: Cluster, library: str) -> None:
    result = hunt(cluster, "kip890-late-commit-tight", library)
    v = result.verdict
    assert late_commits_landed(result), "no late EndTxn was accepted: the faults missed"
    assert v["valid"] is False and anomalies(v) <= LATE_COMMIT_ANOMALIES, anomalies(v)
    assert "torn-transaction" in anomalies(v) or "aborted-read" in anomalies(v), anomalies(v)


def test_java_4x_on_transaction_version_2_stays_valid_under_late_commits(cluster: Cluster) -> None:
    result = hunt(cluster, "kip890-late-commit-tight", "java@4.4.0")
    v = result.verdict
    held = [json.loads(x) for x in (result.run_dir / "wire-events.jsonl").read_text().splitlines()]
    late = [e for e in held if e["event"] == "deliver" and e["api"] == "EndTxn" and e["client_gone"]]
    assert late and all(e["version"] >= 5 for e in late), "the faults must have delivered late EndTxn v5"
    assert v["valid"] is True, anomalies(v)
