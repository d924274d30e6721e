"""transaction.version on real Kafka, once per backend: the session cluster runs the release's
default level and its brokers support what the table says; the fault set-transaction-version
changes the level read back while transactions run, and its heal puts the old one back; a cluster
formatted at level 0 (the CLI, a second cluster at the alternative port base) reads back 0, and a
run asking another level is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from clusters.backends.backends import Backend
from clusters.backends.protocol import Cluster
from clusters.kafka import feature_levels as release
from harness.kafka import features
from harness.run import runner, scenario
from harness.run.scenario import Scenario
from harness.rundir.runfolder import new_run_dir
from tests.chaos.cli_helpers import run

pytestmark = pytest.mark.chaos

TV = features.TRANSACTION_VERSION
#: Away from the session clusters' port bases (19092 local, 29092 compose), as the error tests.
ALT_PORT_BASE = {"local": 19192, "compose": 29192}


def kafka_version(cluster: Cluster) -> str:
    return cluster.artifacts.kafka_version  # type: ignore[attr-defined, no-any-return]


def test_the_session_cluster_runs_its_releases_default_and_supports_the_tables_levels(cluster: Cluster) -> None:
    levels, default = release.transaction_versions(kafka_version(cluster))
    found = features.supported_and_finalized(cluster.direct_bootstrap)
    asked = cluster.transaction_version  # --eos-transaction-version, else None: the release's default
    assert features.finalized(cluster.direct_bootstrap)[TV] == (default if asked is None else asked) == cluster.feature_levels()[TV]
    assert found.finalized["metadata.version"] > 0
    lo, hi = found.supported.get(TV, (0, 0))
    assert tuple(range(lo, hi + 1)) == levels, found.supported


def _events(run_dir: Path) -> list[dict[str, Any]]:
    ops = []
    for f in (run_dir / "history").glob("*.jsonl"):
        ops += [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
    return sorted(ops, key=lambda op: op["time"])


def test_the_fault_changes_the_level_while_transactions_run_and_its_heal_restores_it(cluster: Cluster) -> None:
    before = features.finalized(cluster.direct_bootstrap)[TV]
    to = 0 if before else max(release.transaction_versions(kafka_version(cluster))[0])
    base = scenario.load("txn-baseline").model_dump()
    sc = Scenario.model_validate({**base, "name": "txn-set-transaction-version", "duration": 12,
                                  "faults": [{"at": 2, "kind": "set-transaction-version", "level": to, "duration": 6}],
                                  "expect": {"valid": True, "min_ok_txns": 20}})
    result = runner.run(sc, Backend(cluster.backend), 7, new_run_dir("pytest-set-transaction-version"), cluster=cluster)
    v = result.verdict.to_json()
    assert v["valid"] is True and v["as_expected"] is True, {k: v[k] for k in ("checks", "stats", "run")}
    assert v["run"]["transaction_version"] == before and result.journal.features[TV] == before
    ops = _events(result.run_dir)
    start = [op for op in ops if op["f"] == "fault" and op["value"].get("phase") == "start"]
    stop = [op for op in ops if op["f"] == "fault" and op["value"].get("phase") == "stop"]
    assert [s["value"]["before"] for s in start] == [before] and [s["value"]["after"] for s in start] == [to]
    assert [s["value"]["restored"] for s in stop] == [before]
    # transactions committed while the other level was in force
    during = [op for op in ops if op["f"] == "txn" and op["type"] == "ok" and start[0]["time"] < op["time"] < stop[0]["time"]]
    assert len(during) >= 5, len(during)
    assert features.finalized(cluster.direct_bootstrap)[TV] == before


def test_a_cluster_formatted_at_level_0_reads_back_0_and_a_run_asking_2_is_refused(
        cluster: Cluster, iso_env: dict[str, str]) -> None:
    if 2 not in release.transaction_versions(kafka_version(cluster))[0]:
        pytest.skip(f"Kafka {kafka_version(cluster)} has level 0 only")
    backend, base = cluster.backend, str(ALT_PORT_BASE[cluster.backend])
    up = run(["cluster", "up", "--backend", backend, "--port-base", base, "--transaction-version", "0"], iso_env, timeout=600)
    try:
        assert up.returncode == 0, up.stderr
        status = run(["cluster", "status", "--backend", backend, "--json"], iso_env)
        s = json.loads(status.stdout)
        assert (s["transaction_version"], s["transaction_version_formatted"]) == (0, 0), s
        assert s["features"]["metadata.version"] > 0 and s["features"][TV] == 0
        refused = run(["run", "txn-baseline", "--backend", backend, "--transaction-version", "2"], iso_env)
        assert refused.returncode == 2, refused.stderr
        assert "it runs at transaction.version 0 (--transaction-version), --transaction-version asks for 2" in refused.stderr
    finally:
        down = run(["cluster", "down", "--backend", backend], iso_env)
    assert down.returncode == 0, down.stderr
