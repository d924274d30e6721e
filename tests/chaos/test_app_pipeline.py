"""A pipeline of two apps against real Kafka (docs/APPS.md, "Pipelines"): the shipped Python copier
twice, the second reading the first's output, each stage's instance killed -9 while the other runs
on; each hop judged by its own contract and the chain end to end. Its negative control (the second
stage without transactions) is caught on that stage's hop and end to end, blamed on that stage."""

from __future__ import annotations

import pytest

from clusters.backends.protocol import Cluster
from tests.chaos.test_scenarios import anomalies, run_full_local_only

pytestmark = pytest.mark.chaos

ONCE = "an app is a local process on either backend, and its faults are on its processes: once is enough"


# 96 s here (the cluster's start aside): over make test's 40 s budget for a new chaos test, so in
# make library with its negative control (73 s); the pipeline's checks fire on hand-written
# histories in tests/unit/test_app_pipeline.py
@pytest.mark.library
def test_a_pipeline_of_two_copiers_is_exact_per_hop_and_end_to_end_with_each_stage_killed(cluster: Cluster) -> None:
    v = run_full_local_only(cluster, "app-pipeline-copiers", ONCE).verdict.to_json()
    assert v["valid"] is True and v["as_expected"] is True, anomalies(v)
    for name in ("app-map", "app-pipeline"):
        assert "skipped" not in v["checks"][name] and "error" not in v["checks"][name], v["checks"][name]
    stages = v["run"]["app"]["stages"]
    assert set(stages) == {"copy", "forward"} and all(s["drain"]["drained"] for s in stages.values()), stages


# 73 s here: make library
@pytest.mark.library
def test_a_pipeline_whose_second_stage_copies_without_transactions_is_caught_and_blamed_on_it(cluster: Cluster) -> None:
    v = run_full_local_only(cluster, "app-pipeline-copiers-unsafe", ONCE).verdict.to_json()
    assert v["valid"] is False and v["as_expected"] is True, anomalies(v)
    assert set(anomalies(v)) == {"app-map", "app-pipeline"}, anomalies(v)
    assert {e["app"] for e in v["checks"]["app-map"]["examples"]} == {"forward"}, v["checks"]["app-map"]["examples"]
    assert {tuple(e["blame"]) for e in v["checks"]["app-pipeline"]["examples"]} == {("forward",)}, \
        v["checks"]["app-pipeline"]["examples"]
