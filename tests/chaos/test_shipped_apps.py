"""The shipped apps under faults against real Kafka (docs/APPS.md, "The shipped apps"): a Kafka
Streams app on exactly_once_v2 and Kafka's own TransactionalMessageCopier stay exactly-once under
instance kills, a broker kill, the coordinator's kill and slow links, and each one's negative control
is caught by its contract's check; so is the Python service's (its valid run is the README's
example, tests/chaos/test_docs_examples.py). The Go service's two scenarios and the PySpark job's run
in `make library`, with every other `app-*` scenario of the library."""

from __future__ import annotations

import pytest

from clusters.backends.protocol import Cluster
from tests.chaos.test_scenarios import anomalies, run_full_local_only

pytestmark = pytest.mark.chaos

ONCE = "an app is a local process on either backend, and its faults are on its processes: once is enough"


def _kinds(v: dict, check: str) -> set[str]:
    return {e["kind"] for e in v["checks"][check]["examples"]}


def test_a_kafka_streams_app_on_exactly_once_v2_keeps_every_count_and_sum_exact(cluster: Cluster) -> None:
    v = run_full_local_only(cluster, "app-streams-count-sum", ONCE).verdict.to_json()
    assert v["valid"] is True and v["as_expected"] is True, anomalies(v)
    assert "skipped" not in v["checks"]["app-aggregate"], v["checks"]["app-aggregate"]
    assert v["run"]["app"]["drain"]["drained"] is True, v["run"]["app"]


def test_the_same_streams_app_on_at_least_once_is_caught_counting_twice(cluster: Cluster) -> None:
    v = run_full_local_only(cluster, "app-streams-count-sum-alos", ONCE).verdict.to_json()
    assert v["valid"] is False and v["as_expected"] is True, anomalies(v)
    assert set(anomalies(v)) == {"app-aggregate"}, anomalies(v)  # the feeder's own input stays exactly-once
    # counted twice: an update above the exact count or sum, not merely a count that fell short
    assert "overshoot" in _kinds(v, "app-aggregate"), v["checks"]["app-aggregate"]["examples"]


# 63 s: make test keeps this app's negative control (a group per instance, caught) and the valid
# Python and Streams apps; the valid copier runs in make library
@pytest.mark.library
def test_kafkas_transactional_message_copier_copies_each_input_once(cluster: Cluster) -> None:
    v = run_full_local_only(cluster, "app-kafka-copier", ONCE).verdict.to_json()
    assert v["valid"] is True and v["as_expected"] is True, anomalies(v)
    assert "skipped" not in v["checks"]["app-map"], v["checks"]["app-map"]


def test_the_copier_misconfigured_with_a_group_per_instance_is_caught_copying_twice(cluster: Cluster) -> None:
    v = run_full_local_only(cluster, "app-kafka-copier-own-groups", ONCE).verdict.to_json()
    assert v["valid"] is False and v["as_expected"] is True, anomalies(v)
    assert set(anomalies(v)) == {"app-map"} and "duplicate" in _kinds(v, "app-map"), v["checks"]["app-map"]


def test_the_python_services_negative_control_without_transactions_is_caught(cluster: Cluster) -> None:
    v = run_full_local_only(cluster, "app-py-copier-unsafe", ONCE).verdict.to_json()
    assert v["valid"] is False and v["as_expected"] is True, v["checks"]["app-map"]
    assert set(anomalies(v)) == {"app-map"}, anomalies(v)
    assert {"duplicate", "aborted-input"} <= _kinds(v, "app-map"), v["checks"]["app-map"]["examples"]


# each ~6-8 min on this machine (a Spark driver's start takes 100 s under load, and the faults wait
# for its output after each restart): make library's
@pytest.mark.library
def test_a_users_pyspark_job_with_its_own_transactional_sink_copies_each_input_once(cluster: Cluster) -> None:
    v = run_full_local_only(cluster, "app-pyspark-copier", ONCE).verdict.to_json()
    assert v["valid"] is True and v["as_expected"] is True, anomalies(v)
    assert "skipped" not in v["checks"]["app-map"], v["checks"]["app-map"]
    assert v["run"]["app"]["drain"]["drained"] is True, v["run"]["app"]


@pytest.mark.library
def test_the_same_job_on_sparks_built_in_kafka_sink_is_caught_writing_a_replayed_batch_twice(cluster: Cluster) -> None:
    v = run_full_local_only(cluster, "app-pyspark-copier-kafka-sink", ONCE).verdict.to_json()
    assert v["valid"] is False and v["as_expected"] is True, anomalies(v)
    assert set(anomalies(v)) == {"app-map"} and "duplicate" in _kinds(v, "app-map"), v["checks"]["app-map"]
