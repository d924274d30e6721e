"""Topics named as the app names them, on the session's cluster (docs/APPS.md, "Topics the app names
itself"): an app whose topic names are fixed in its own code runs on kept-name topics with their own
partitions and config, judged valid, over a leftover an earlier run left that the run replaced with
a clean topic, and deletes them at its end (so the next test keeping the name gets a clean one); a
kept-name topic holding someone else's records is refused, exit 2, before anything is written, with
nothing left running; and a config Kafka refuses is exit 2 naming the topic."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer, TopicCollection

from clusters.backends import procs
from clusters.backends.backends import Backend
from clusters.backends.protocol import Cluster
from clusters.kafka.health import admin_client
from harness.base.errors import ConfigError
from harness.history.model import SCAN
from harness.kafka.admin import create_topic
from harness.kafka.kept_topics import KEPT_DIR
from harness.pytest_plugin.app_fixture import app_scenario
from harness.run import runner
from harness.run.scenario import Scenario
from harness.rundir.runfolder import new_run_dir

pytestmark = pytest.mark.chaos

ONCE = "topics are made by the runner the same way on either backend: once is enough (make library runs it on both)"
IN, OUT = "eos-kept-in", "eos-kept-out"
#: The app: topic names fixed in its code, as Kafka's WordCountDemo has them. It says what it finds
#: of its topics (partitions, the output's retention) before it copies, then runs the shipped copier.
APP = f"""
    import os, sys
    from confluent_kafka.admin import AdminClient, ConfigResource
    bootstrap, app_id = os.environ["EOS_CHAOS_APP_BOOTSTRAP"], os.environ["EOS_CHAOS_APP_ID"]
    admin = AdminClient({{"bootstrap.servers": bootstrap}})
    topics = admin.list_topics(timeout=30).topics
    for t in ("{IN}", "{OUT}"):
        print(f"topic {{t}}: {{len(topics[t].partitions)}} partitions", flush=True)
    res = ConfigResource("TOPIC", "{OUT}")
    print(f"{OUT} retention.ms={{admin.describe_configs([res])[res].result(30)['retention.ms'].value}}", flush=True)
    os.execv(sys.executable, [sys.executable, "-m", "harness.apps.py_copier", "--bootstrap", bootstrap,
                              "--input", "{IN}", "--output", "{OUT}", "--group", app_id,
                              "--txn-id", app_id + "-" + os.environ["EOS_CHAOS_APP_INSTANCE"]])
"""
#: Kept-name input with fewer partitions than the scenario's 3, output with more and its own config:
#: a reader, scan or drain that assumed the scenario's 3 would miss the output's partitions 3 and 4
#: (missing outputs) or ask the input for a partition it lacks.
TOPICS: list[str | dict[str, Any]] = [{"name": IN, "keep_name": True, "partitions": 2},
                                      {"name": OUT, "keep_name": True, "partitions": 5,
                                       "config": {"retention.ms": 7_200_000}}]


def _scenario(tmp_path: Path, **kw: Any) -> Scenario:
    (tmp_path / "app.py").write_text(textwrap.dedent(APP))
    fields = app_scenario("kept-names", ["{python}", "app.py"], [IN], [OUT], {"kind": "map", "order": "per-key"},
                          {"log": "copying from"}, cwd=tmp_path, duration=8, faults=[], topics=kw.pop("topics", TOPICS),
                          feeder={"values_per_txn": 10, "abort_share": 0.2, "keys": 16, "rate": 200}, **kw)
    return Scenario.model_validate(fields)


def _run(cluster: Cluster, sc: Scenario) -> runner.RunResult:
    if cluster.backend != "local":
        pytest.skip(ONCE)
    return runner.run(sc, Backend(cluster.backend), random.randrange(2**31), new_run_dir("pytest-kept"), cluster=cluster)


def _topic(cluster: Cluster, name: str, partitions: int, records: int) -> str:
    """``name`` made with ``records`` records written to it (not by the feeder); its topic id."""
    admin = admin_client(cluster.direct_bootstrap)
    create_topic(admin, name, partitions)
    p = Producer({"bootstrap.servers": cluster.direct_bootstrap})
    for n in range(records):
        p.produce(name, value=f"left-{n}".encode(), partition=n % partitions)
    assert p.flush(30) == 0
    return str(admin.describe_topics(TopicCollection([name]))[name].result(30).topic_id)


def _on_cluster(cluster: Cluster) -> set[str]:
    return set(admin_client(cluster.direct_bootstrap).list_topics(timeout=30).topics)


def _scans(run_dir: Path) -> dict[str, dict[str, list[Any]]]:
    """The run's final scans, read_committed: the runner's (input) and the app's (output)."""
    out: dict[str, dict[str, list[Any]]] = {}
    for line in (run_dir / "history" / "runner.jsonl").read_text().splitlines():
        op = json.loads(line)
        if op.get("f") == SCAN and op.get("isolation") == "read_committed":
            out["app" if op.get("app") else "runner"] = op["value"]
    return out


def _dead_process() -> str:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    who = procs.ProcessId.of(p.pid)
    p.wait()
    return str(who)


def test_an_app_with_its_topic_names_in_its_code_runs_on_clean_kept_topics_of_their_own_partitions(
        cluster: Cluster, tmp_path: Path) -> None:
    marks = Path(cluster.run_dir) / KEPT_DIR
    # what an earlier run killed -9 leaves: its kept topic, with records, recorded as that run's
    old_id = _topic(cluster, IN, 1, 7)
    marks.mkdir(parents=True, exist_ok=True)
    (marks / f"{IN}.json").write_text(json.dumps({"topic": IN, "topic_id": old_id, "pid": _dead_process(),
                                                  "run_dir": str(tmp_path / "killed-run")}))
    result = _run(cluster, _scenario(tmp_path))
    v = result.verdict.to_json()
    assert v["valid"] is True, v["checks"]
    log = (result.run_dir / "workloads" / "app-0.log").read_text()
    assert f"topic {IN}: 2 partitions" in log and f"topic {OUT}: 5 partitions" in log, log
    assert f"{OUT} retention.ms=7200000" in log, log
    scans = _scans(result.run_dir)
    # the input fresh: its 2 partitions (no tag), none of the leftover's records
    assert sorted(scans["runner"]) == [f"{IN}-0", f"{IN}-1"], sorted(scans["runner"])
    values = [r[1] for recs in scans["runner"].values() for r in recs]
    assert values and not [x for x in values if x.startswith("left-")], values[:5]
    # the output: all 5 partitions read, and records in those past the scenario's 3
    assert sorted(scans["app"]) == [f"{OUT}-{p}" for p in range(5)], sorted(scans["app"])
    assert scans["app"][f"{OUT}-3"] or scans["app"][f"{OUT}-4"], {k: len(x) for k, x in scans["app"].items()}
    # taken away at the end, with their records: the next test keeping the names gets clean topics
    assert not {IN, OUT} & _on_cluster(cluster)
    assert not list(marks.glob("*.json")), list(marks.iterdir())


def test_a_kept_topic_holding_records_no_run_wrote_is_refused_before_anything_is_written(
        cluster: Cluster, tmp_path: Path) -> None:
    if cluster.backend != "local":
        pytest.skip(ONCE)
    _topic(cluster, IN, 2, 3)  # someone's own topic of that name, on a cluster the run did not start
    before = _on_cluster(cluster)
    try:
        with pytest.raises(ConfigError) as e:
            _run(cluster, _scenario(tmp_path))
        said = str(e.value)
        assert e.value.exit_code == 2
        assert f"kept-name topic {IN} already holds 3 records" in said and "no eos-chaos run" in said, said
        assert _on_cluster(cluster) == before  # no topic of the run made (its output, kept or tagged)
        ends = admin_client(cluster.direct_bootstrap).list_topics(topic=IN, timeout=30).topics[IN]
        assert len(ends.partitions) == 2  # the topic as it was: not deleted, not made again
        assert not [t for t in procs.tagged_processes() if "pytest-kept" in " ".join(procs.cmdline(t.pid))]
    finally:
        admin = admin_client(cluster.direct_bootstrap)
        admin.delete_topics([IN])[IN].result(30)


def test_a_topic_config_kafka_refuses_is_exit_2_naming_the_topic(cluster: Cluster, tmp_path: Path) -> None:
    topics: list[str | dict[str, Any]] = [IN, {"name": OUT, "config": {"retention.msec": 1000}}]
    with pytest.raises(ConfigError) as e:
        _run(cluster, _scenario(tmp_path, topics=topics))
    said = str(e.value)
    assert e.value.exit_code == 2 and f"topic {OUT}." in said and "retention.msec" in said, said
