"""The shipped apps under faults against real Kafka (docs/APPS.md, "The shipped apps"): a Kafka
Streams app on exactly_once_v2 and Kafka's own TransactionalMessageCopier stay exactly-once under
instance kills, a broker kill, the coordinator's kill and slow links, and each one's negative control
is caught by its contract's check; so is the Python service's (its valid run is the README's
example, tests/chaos/test_docs_examples.py). Kafka's WordCountDemo's topology (the shipped rebuild,
its topic names fixed in its code) runs on those names kept, and the windowed count and the
stream-table join are judged by their contracts. The Streams app's at_least_once control, the valid
copier, the Go service's two scenarios and the PySpark
job's run in `make library`, with every other `app-*` scenario of the library, and so do the Flink
job's (docs/FLINK.md)."""

from __future__ import annotations

import pytest

from clusters.backends.protocol import Cluster
from tests.chaos.test_scenarios import anomalies, run_full_local_only
from tests.chaos.test_transaction_version import _events

pytestmark = pytest.mark.chaos

ONCE = "an app is a local process on either backend, and its faults are on its processes: once is enough"


def _kinds(v: dict, check: str) -> set[str]:
    return {e["kind"] for e in v["checks"][check]["examples"]}


# 68 s: make library. make test keeps a Kafka Streams app on exactly_once_v2 under kills (the word
# count below), and app-aggregate's findings on hand-written histories (tests/unit)
@pytest.mark.library
def test_a_kafka_streams_app_on_exactly_once_v2_keeps_every_count_and_sum_exact(cluster: Cluster) -> None:
    v = run_full_local_only(cluster, "app-streams-count-sum", ONCE).verdict.to_json()
    assert v["valid"] is True and v["as_expected"] is True, anomalies(v)
    assert "skipped" not in v["checks"]["app-aggregate"], v["checks"]["app-aggregate"]
    assert v["run"]["app"]["drain"]["drained"] is True, v["run"]["app"]


# 73 s: in make library (the suite's 30-minute budget); make test keeps the Streams app's valid run,
# and the copier's and the Python service's negative controls, each caught by its contract's check
@pytest.mark.library
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


# The Flink job: 83 MB of jars, ~30 s to build cold, a MiniCluster JVM per start and two kills each
# run (about 2 and 1.5 min): `make library`. The scenarios are docs/FLINK.md's.
@pytest.mark.library
def test_a_flink_job_with_an_exactly_once_kafka_sink_writes_each_input_once_in_order(cluster: Cluster) -> None:
    result = run_full_local_only(cluster, "app-flink", ONCE)
    v = result.verdict.to_json()
    assert v["valid"] is True and v["as_expected"] is True, anomalies(v)
    assert "skipped" not in v["checks"]["app-map"], v["checks"]["app-map"]
    assert v["run"]["app"]["drain"]["drained"] is True, v["run"]["app"]
    # each kill -9 was a job restart from a retained checkpoint, not a fresh start from offset 0
    log = (result.run_dir / "workloads" / "app-0.log").read_text()
    assert log.count("flink-job: starting") == 3 and log.count("restoring from ") == 2, log[-3000:]


@pytest.mark.library
def test_the_same_flink_job_with_an_at_least_once_sink_is_caught_writing_twice(cluster: Cluster) -> None:
    v = run_full_local_only(cluster, "app-flink-alos", ONCE).verdict.to_json()
    assert v["valid"] is False and v["as_expected"] is True, anomalies(v)
    assert set(anomalies(v)) == {"app-map"}, anomalies(v)  # the feeder's own input stays exactly-once
    # the replay since the last checkpoint: copies of committed inputs, nothing aborted or invented
    assert _kinds(v, "app-map") == {"duplicate"}, v["checks"]["app-map"]["examples"]


# Issue 39's topologies. The check names of the windowed and join contracts (DESIGN39 section 3)
WINDOWED_CHECK = "app-windowed"
JOIN_CHECK = "app-join"


def test_kafkas_wordcount_topology_runs_on_its_fixed_topics_and_counts_every_word_once(
        cluster: Cluster) -> None:
    result = run_full_local_only(cluster, "app-streams-wordcount", ONCE)
    v = result.verdict.to_json()
    assert v["valid"] is True and v["as_expected"] is True, anomalies(v)
    assert "skipped" not in v["checks"]["app-aggregate"], v["checks"]["app-aggregate"]
    assert v["run"]["app"]["drain"]["drained"] is True, v["run"]["app"]
    # each kill waited for a transaction of the app to be open (in_transaction), then landed; its stop
    # record lists the transactions it left open: a kill inside a transaction, on the record
    events = [op["value"] for op in _events(result.run_dir)
              if op["f"] == "fault" and op["value"].get("kind") == "kill-workload"]
    starts = [e for e in events if e.get("phase") == "start"]
    kills = [e for e in events if e.get("phase") == "stop"]
    assert len(kills) == 2 and all("open_transactions" in k for k in kills), kills
    assert all(s["in_transaction"]["open"] for s in starts), starts
    assert any(k["open_transactions"] for k in kills), (starts, kills)


# The word count's negative control: ~85 s here, in `make library` (`make test` keeps the valid run,
# and app-aggregate's derived-key findings fire on hand-written histories in tests/unit)
@pytest.mark.library
def test_the_wordcount_on_at_least_once_is_caught_counting_words_twice(cluster: Cluster) -> None:
    v = run_full_local_only(cluster, "app-streams-wordcount-alos", ONCE).verdict.to_json()
    assert v["valid"] is False and v["as_expected"] is True, anomalies(v)
    assert set(anomalies(v)) == {"app-aggregate"}, anomalies(v)  # the feeder's lines stay exactly-once
    assert "overshoot" in _kinds(v, "app-aggregate"), v["checks"]["app-aggregate"]["examples"]


@pytest.mark.library
def test_a_windowed_count_on_exactly_once_v2_keeps_every_window_exact_and_drops_what_is_past_grace(
        cluster: Cluster) -> None:
    v = run_full_local_only(cluster, "app-streams-windowed", ONCE).verdict.to_json()
    assert v["valid"] is True and v["as_expected"] is True, anomalies(v)
    assert "skipped" not in v["checks"][WINDOWED_CHECK], v["checks"][WINDOWED_CHECK]


@pytest.mark.library
def test_the_windowed_count_on_at_least_once_is_caught_counting_twice(cluster: Cluster) -> None:
    v = run_full_local_only(cluster, "app-streams-windowed-alos", ONCE).verdict.to_json()
    assert v["valid"] is False and v["as_expected"] is True, anomalies(v)
    assert set(anomalies(v)) == {WINDOWED_CHECK}, anomalies(v)
    assert "overshoot" in _kinds(v, WINDOWED_CHECK), v["checks"][WINDOWED_CHECK]["examples"]


@pytest.mark.library
def test_a_stream_table_join_on_exactly_once_v2_joins_each_order_once_with_a_committed_region(
        cluster: Cluster) -> None:
    v = run_full_local_only(cluster, "app-streams-join", ONCE).verdict.to_json()
    assert v["valid"] is True and v["as_expected"] is True, anomalies(v)
    assert "skipped" not in v["checks"][JOIN_CHECK], v["checks"][JOIN_CHECK]


@pytest.mark.library
def test_the_join_on_at_least_once_is_caught_joining_aborted_orders_and_regions(cluster: Cluster) -> None:
    v = run_full_local_only(cluster, "app-streams-join-alos", ONCE).verdict.to_json()
    assert v["valid"] is False and v["as_expected"] is True, anomalies(v)
    assert set(anomalies(v)) == {JOIN_CHECK}, anomalies(v)  # the feeder's own input stays exactly-once
    # read_uncommitted: an aborted order joined, an order joined with an aborted region
    assert {"aborted-input", "aborted-table"} <= _kinds(v, JOIN_CHECK), v["checks"][JOIN_CHECK]["examples"]


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
