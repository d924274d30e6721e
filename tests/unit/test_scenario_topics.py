"""A scenario's topics as the app names them: an entry is a name or a mapping {name, keep_name,
partitions, config}; ``sc.topics`` stays the names; the run keeps a kept name as written and gives
each topic its own partitions everywhere; bad entries are refused at file:line; and a kept-name
topic already on a cluster is replaced only when an eos-chaos run wrote it (harness/kafka/kept_topics.py)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from concurrent.futures import Future
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from clusters.backends.procs import ProcessId, this_process
from harness.base.errors import ConfigError
from harness.kafka import kept_topics
from harness.kafka.kept_topics import KEPT_DIR, KeptTopics
from harness.run import runner, scenario
from harness.workloads.common import WorkloadConfig
from harness.workloads.registry import TxnProducerSettings
from harness.workloads.txn_producer import keyed_sends, pick_sends
from tests.unit.test_scenario import _load_error

APP = """name: word-count
description: x
partitions: 3
topics:
  - app-in
  - {name: streams-plaintext-input, keep_name: true, partitions: 2}
  - {name: streams-wordcount-output, keep_name: true, config: {cleanup.policy: compact, retention.ms: 60000}}
  - {name: app-table, partitions: 1, config: {cleanup.policy: compact}}
workloads:
  - kind: app
    settings:
      command: ["{python}", -m, my_app, --out, "{topic:streams-wordcount-output}"]
      inputs: [streams-plaintext-input]
      outputs: [streams-wordcount-output]
      ready: {log: started}
      contract: {kind: map}
faults:
  - {at: 5, kind: kill, target: leader, of: streams-plaintext-input/1}
  - {at: 9, kind: kill, target: leader, of: app-in/2}
"""


def _load(tmp_path: Path, text: str = APP) -> scenario.Scenario:
    f = tmp_path / "sc.yaml"
    f.write_text(text)
    return scenario.load(str(f))


# ---------------------------------------------------------------------------------------- the schema
def test_topics_are_names_with_each_entrys_own_settings_beside_them(tmp_path: Path) -> None:
    sc = _load(tmp_path)
    assert sc.topics == ["app-in", "streams-plaintext-input", "streams-wordcount-output", "app-table"]
    assert all(isinstance(t, str) for t in sc.topics)
    assert sc.topic_partitions() == {"app-in": 3, "streams-plaintext-input": 2, "streams-wordcount-output": 3,
                                     "app-table": 1}
    assert sc.kept_topics() == ["streams-plaintext-input", "streams-wordcount-output"]
    # YAML's number is written as Kafka reads a config value: text
    assert sc.topics.spec("streams-wordcount-output").config == {"cleanup.policy": "compact", "retention.ms": "60000"}
    assert sc.topics.spec("app-in").plain and not sc.topics.spec("app-table").plain


def test_a_scenario_is_written_back_as_its_file_holds_it_and_read_again_the_same(tmp_path: Path) -> None:
    sc = _load(tmp_path)
    dumped = sc.model_dump(mode="json")["topics"]
    assert dumped == ["app-in", {"name": "streams-plaintext-input", "keep_name": True, "partitions": 2},
                      {"name": "streams-wordcount-output", "keep_name": True,
                       "config": {"cleanup.policy": "compact", "retention.ms": "60000"}},
                      {"name": "app-table", "partitions": 1, "config": {"cleanup.policy": "compact"}}]
    again = scenario.Scenario.model_validate(sc.model_dump())  # what run_scenario's overrides and minimize do
    assert again.topics == sc.topics and again.topics.specs == sc.topics.specs


def test_a_scenario_of_bare_names_reads_and_writes_as_before(tmp_path: Path) -> None:
    sc = _load(tmp_path, "name: s\ndescription: x\npartitions: 4\nworkloads: [{kind: txn-producer}]\n")
    assert sc.topics == ["eos-a", "eos-b"] and sc.model_dump()["topics"] == ["eos-a", "eos-b"]
    assert sc.topic_partitions() == {"eos-a": 4, "eos-b": 4} and sc.kept_topics() == []


def test_the_run_keeps_a_kept_name_as_written_and_tags_the_others(tmp_path: Path) -> None:
    sc = runner.physical(_load(tmp_path), "r1")
    assert sc.topics == ["app-in.r1", "streams-plaintext-input", "streams-wordcount-output", "app-table.r1"]
    assert sc.topic_partitions() == {"app-in.r1": 3, "streams-plaintext-input": 2, "streams-wordcount-output": 3,
                                     "app-table.r1": 1}
    assert sc.topics.spec("app-table.r1").config == {"cleanup.policy": "compact"}
    assert [getattr(f, "of", None) for f in sc.faults] == ["streams-plaintext-input/1", "app-in.r1/2"]
    assert sc.workloads[0].settings["outputs"] == ["streams-wordcount-output"]
    assert runner.run_names(_load(tmp_path), "r1")["streams-wordcount-output"] == "streams-wordcount-output"


def test_every_workload_process_is_told_each_topics_own_partitions(tmp_path: Path) -> None:
    sc = runner.physical(_load(tmp_path), "r1")
    configs = runner.workload_configs(sc, tmp_path, "127.0.0.1:1", 1)
    assert {name for _, name, _ in [(k, c.name, n) for k, c, n in configs]} >= {"app-0", "app-feeder", "app-reader"}
    for _, cfg, _ in configs:
        assert cfg.partitions_of("streams-plaintext-input") == 2 and cfg.partitions_of("app-table.r1") == 1
        assert cfg.partitions_of("app-in.r1") == 3


@pytest.mark.parametrize("body, expected", [
    ("topics:\n  - a\n  - {name: b, kep_name: true}\n",
     "FILE:7: topics[1].kep_name: unknown key (allowed: name, keep_name, partitions, config); did you mean 'keep_name'?"),
    ("topics:\n  - a\n  - {name: b, partitions: 0}\n", "FILE:7: topics[1].partitions: should be greater than or equal to 1"),
    ("topics:\n  - a\n  - {name: b, partitions: 65}\n", "FILE:7: topics[1].partitions: should be less than or equal to 64"),
    ("topics:\n  - a\n  - 5\n",
     "FILE:7: topics[1]: 5 is not a topic; a topic is a name, or a mapping {name, keep_name, partitions, config}"),
    ("topics:\n  - a\n  - {keep_name: true}\n", "FILE:7: topics[1].name: missing (required)"),
    ("topics:\n  - a\n  - {name: b, config: {retention.ms: [1]}}\n",
     "FILE:7: topics[1].config: retention.ms: [1] is not a topic config value; a value is text, a number or true/false"),
    ("topics:\n  - a\n  - {name: __consumer_offsets, keep_name: true}\n",
     "FILE:7: topics[1].name: '__consumer_offsets' begins with '__', as Kafka's own topics do; a kept name may not"),
    ("topics:\n  - a\n  - {name: a, keep_name: true}\n", "FILE:7: topics[1].name: 'a' is listed twice; a topic is listed once"),
    ("topics:\n  - a\n  - {name: 'b c', keep_name: true}\n", "FILE:7: topics[1].name: 'b c' is not a Kafka topic name"),
    ("topics:\n  - a\n  - {name: b, partitions: 2}\nfaults:\n  - {at: 5, kind: kill, target: leader, of: b/2}\n",
     "FILE:9: faults[0] (kill at 5s) of: 'b/2': topic b has partitions 0 to 1"),
])
def test_a_bad_topic_entry_is_refused_at_its_line_with_what_is_allowed(tmp_path: Path, body: str, expected: str) -> None:
    msg = _load_error(tmp_path, body)
    assert expected in msg, msg


def test_a_kept_name_may_be_as_long_as_kafka_allows_and_a_tagged_one_leaves_room_for_the_tag(tmp_path: Path) -> None:
    long = "x" * 249
    sc = _load(tmp_path, f"name: s\ndescription: x\ntopics:\n  - {{name: {long}, keep_name: true}}\n"
                         "workloads: [{kind: txn-producer}]\n")
    assert sc.topics == [long]
    msg = _load_error(tmp_path, f"topics:\n  - {{name: {long}, partitions: 1}}\n")
    assert "FILE:6: topics[0].name: 249 characters" in msg and "keep_name: true keeps it as written, up to 249" in msg, msg


# ------------------------------------------------------------------------------ partitions in the sends
def test_a_producers_draws_are_those_of_before_when_every_topic_has_the_scenarios_partitions() -> None:
    cfg = WorkloadConfig(run_dir="-", name="p", bootstrap="-", topics=["a", "b"], partitions=3,
                         topic_partitions={"a": 3, "b": 3})
    s = TxnProducerSettings.model_validate({})
    sends = pick_sends(cfg, s, random.Random(5), "v", 200)
    r = random.Random(5)  # what pick_sends drew before topics had their own partitions
    assert [(t, p) for t, p, _ in sends] == list(zip(r.choices(["a", "b"], k=200), r.choices(range(3), k=200), strict=True))


def test_sends_go_to_the_partitions_their_own_topic_has() -> None:
    cfg = WorkloadConfig(run_dir="-", name="p", bootstrap="-", topics=["a", "b"], partitions=3,
                         topic_partitions={"a": 1, "b": 6})
    s = TxnProducerSettings.model_validate({"keys": 40})
    drawn = {(t, p) for t, p, _ in pick_sends(cfg, s, random.Random(1), "v", 2000)}
    assert drawn == {("a", 0)} | {("b", p) for p in range(6)}
    keyed, _ = keyed_sends(cfg, s, random.Random(1), [str(i) for i in range(2000)])
    assert {(t, p) for t, p, _ in keyed} == {("a", 0)} | {("b", p) for p in range(6)}


# ------------------------------------------------------------------- a kept-name topic already there
class FakeAdmin:
    """The admin calls KeptTopics makes, over topics held in memory: name -> (id, records per partition)."""

    def __init__(self, topics: dict[str, tuple[str, dict[int, int]]]) -> None:
        self.topics = topics
        self.deleted: list[str] = []

    @staticmethod
    def _done(value: Any) -> Future[Any]:
        f: Future[Any] = Future()
        f.set_result(value)
        return f

    def describe_topics(self, collection: Any) -> dict[str, Future[Any]]:
        (name,) = collection.topic_names
        if name not in self.topics:
            f: Future[Any] = Future()
            f.set_exception(KafkaException(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)))
            return {name: f}
        tid, records = self.topics[name]
        return {name: self._done(SimpleNamespace(topic_id=tid, partitions=[SimpleNamespace(id=p) for p in records]))}

    def list_offsets(self, wanted: dict[Any, Any], request_timeout: float) -> dict[Any, Future[Any]]:
        out = {}
        for tp, spec in wanted.items():
            latest = type(spec).__name__ == "LatestSpec"
            out[tp] = self._done(SimpleNamespace(offset=self.topics[tp.topic][1][tp.partition] if latest else 0))
        return out

    def delete_topics(self, names: list[str], operation_timeout: float) -> dict[str, Future[Any]]:
        for n in names:
            self.topics.pop(n, None)
            self.deleted.append(n)
        return {n: self._done(None) for n in names}

    def list_topics(self, topic: str, timeout: float) -> Any:
        return SimpleNamespace(topics={})


def _record(cluster_dir: Path, name: str, topic_id: str, pid: str) -> None:
    (cluster_dir / KEPT_DIR).mkdir(parents=True, exist_ok=True)
    (cluster_dir / KEPT_DIR / f"{name}.json").write_text(json.dumps({"topic": name, "topic_id": topic_id, "pid": pid,
                                                                     "run_dir": "/runs/earlier"}))


def _dead_process() -> str:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    who = ProcessId.of(p.pid)
    p.wait()
    assert who is not None and not who.alive
    return str(who)


def test_the_offsets_a_fake_admin_answers_are_read_as_latest_and_earliest() -> None:
    admin = FakeAdmin({"t": ("id1", {0: 5, 1: 0})})
    found = KeptTopics(admin, ["t"], Path("/nonexistent"))._found("t")  # type: ignore[arg-type]
    assert found is not None and found.records == {0: 5, 1: 0} and not found.empty


def test_a_topic_with_records_no_run_recorded_is_refused_and_nothing_is_deleted(tmp_path: Path) -> None:
    admin = FakeAdmin({"words": ("id1", {0: 7, 1: 0, 2: 3}), "other": ("id2", {0: 0})})
    with pytest.raises(ConfigError) as e:
        KeptTopics(admin, ["other", "words"], tmp_path).claim()  # type: ignore[arg-type]
    msg = str(e.value)
    assert "kept-name topic words already holds 10 records" in msg and "partitions 0, 2 (topic id id1)" in msg, msg
    assert "no eos-chaos run on this cluster wrote" in msg
    assert admin.deleted == []  # not even the empty one: every topic is checked before any is deleted


def test_an_empty_topic_is_replaced(tmp_path: Path) -> None:
    admin = FakeAdmin({"words": ("id1", {0: 0, 1: 0})})
    replaced = KeptTopics(admin, ["words"], tmp_path).claim()  # type: ignore[arg-type]
    assert admin.deleted == ["words"] and replaced == ["words: no record (topic id id1)"]


def test_a_topic_a_finished_run_recorded_is_replaced_and_its_record_removed(tmp_path: Path) -> None:
    admin = FakeAdmin({"words": ("id1", {0: 40})})
    _record(tmp_path, "words", "id1", _dead_process())
    KeptTopics(admin, ["words"], tmp_path).claim()  # type: ignore[arg-type]
    assert admin.deleted == ["words"] and not (tmp_path / KEPT_DIR / "words.json").exists()


def test_a_topic_made_again_by_someone_else_since_the_record_is_refused(tmp_path: Path) -> None:
    admin = FakeAdmin({"words": ("id-new", {0: 40})})
    _record(tmp_path, "words", "id-old", _dead_process())  # the run's topic was deleted; this one is another's
    with pytest.raises(ConfigError, match="already holds 40 records"):
        KeptTopics(admin, ["words"], tmp_path).claim()  # type: ignore[arg-type]
    assert admin.deleted == []


def test_a_topic_of_a_run_still_running_is_refused_even_when_empty(tmp_path: Path) -> None:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        who = ProcessId.of(sleeper.pid)
        assert who is not None
        admin = FakeAdmin({"words": ("id1", {0: 0})})
        _record(tmp_path, "words", "id1", str(who))
        with pytest.raises(ConfigError, match=f"in use by another run on this cluster \\(process {sleeper.pid}"):
            KeptTopics(admin, ["words"], tmp_path).claim()  # type: ignore[arg-type]
        assert admin.deleted == []
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_topic_this_process_recorded_is_its_own_to_replace(tmp_path: Path) -> None:
    """The pytest plugin runs one test's run after another in one process: an earlier run's topic
    it failed to delete is no other run's."""
    admin = FakeAdmin({"words": ("id1", {0: 9})})
    _record(tmp_path, "words", "id1", str(this_process()))
    KeptTopics(admin, ["words"], tmp_path).claim()  # type: ignore[arg-type]
    assert admin.deleted == ["words"]


def test_what_the_run_created_is_recorded_then_deleted_at_its_end(tmp_path: Path) -> None:
    admin = FakeAdmin({})
    with kept_topics.kept(admin, ["words"], tmp_path) as k:  # type: ignore[arg-type]
        admin.topics["words"] = ("id9", {0: 0})  # as create_topic makes it
        k.created_one("words", tmp_path / "run")
        mark = json.loads((tmp_path / KEPT_DIR / "words.json").read_text())
        assert mark["topic_id"] == "id9" and mark["pid"] == str(this_process()) and mark["run_dir"] == str(tmp_path / "run")
    assert admin.deleted == ["words"] and not (tmp_path / KEPT_DIR / "words.json").exists()


@pytest.mark.parametrize("body, expected", [
    ("topics:\n  - {name: a, partitions: 4}\n  - b\nworkloads:\n  - kind: copier\n    settings: {input: a, output: b}\n",
     "FILE:8: workloads[0].settings.output: 'b' has 3 partitions, fewer than its input 'a''s 4: a copier writes each "
     "record to the partition of the number it was read from; give b at least 4"),
    ("topics:\n  - a\n  - b\n  - {name: m, partitions: 1}\nworkloads:\n  - kind: spark-job\n"
     "    settings: {input: a, output: b, markers: m, sink: executor}\n",
     "FILE:9: workloads[0].settings.markers: 'm' has 1 partitions, fewer than its input 'a''s 3"),
])
def test_a_topic_written_partition_for_partition_needs_the_inputs_partitions(tmp_path: Path, body: str, expected: str) -> None:
    msg = _load_error(tmp_path, body, head="name: s\ndescription: x\n")
    assert expected in msg, msg


def test_an_output_with_more_partitions_than_its_input_is_fine(tmp_path: Path) -> None:
    sc = _load(tmp_path, "name: s\ndescription: x\ntopics:\n  - a\n  - {name: b, partitions: 5}\n"
                         "workloads:\n  - kind: copier\n    settings: {input: a, output: b}\n")
    assert sc.topic_partitions() == {"a": 3, "b": 5}
