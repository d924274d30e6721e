"""The topics a run created on an external cluster, in its journal: each marked deleted from what the
clean-up could not delete (one topic's failure, the whole clean-up's failure), and left unmarked
(None) when no clean-up ran; the report lists them with their state."""

from __future__ import annotations

from pathlib import Path

from harness.report import write_report
from harness.run.runner import mark_deleted
from harness.rundir.journal import Journal, RunTopic
from tests.unit.test_report import make_run, text


def _topics() -> list[RunTopic]:
    return [RunTopic(name="eos-a.r1"), RunTopic(name="eos-a.r1x"), RunTopic(name="eos-b.r1")]


def test_a_topic_the_clean_up_could_not_delete_is_marked_so_and_the_others_deleted() -> None:
    topics = _topics()
    mark_deleted(topics, ["topic eos-a.r1: TOPIC_AUTHORIZATION_FAILED", "group g.r1: denied"])
    assert [(t.name, t.deleted) for t in topics] == [("eos-a.r1", False), ("eos-a.r1x", True), ("eos-b.r1", True)]
    clean = _topics()  # its clean twin: nothing failed, everything deleted
    mark_deleted(clean, [])
    assert all(t.deleted is True for t in clean)


def test_a_clean_up_that_failed_as_a_whole_deleted_none() -> None:
    topics = _topics()
    mark_deleted(topics, ["KafkaException: broker transport failure"])
    assert [t.deleted for t in topics] == [False, False, False]


def test_a_run_killed_before_its_clean_up_leaves_its_topics_unmarked_in_the_journal() -> None:
    read = Journal.model_validate({"scenario": "s", "source": "s", "resolved": {}, "seed": 1, "backend": "external",
                                   "run_topics": [{"name": "eos-a.r1"}]})
    assert read.run_topics == [RunTopic(name="eos-a.r1", deleted=None)]


def test_the_report_lists_each_topic_with_its_state(tmp_path: Path) -> None:
    facts = {"kafka_version": "4.1.1", "cluster_id": "q1Zx", "inventory": "/etc/staging.yaml"}
    topics = [{"name": "eos-a.r1", "deleted": True}, {"name": "eos-b.r1", "deleted": False}, {"name": "eos-c.r1"}]
    run_dir = make_run(tmp_path, name="run-ext-topics", journal_fields={"cluster": facts, "run_topics": topics})
    page = text(write_report(run_dir).read_text())
    assert "eos-a.r1 (deleted)" in page and "eos-b.r1 (not deleted)" in page, page
    assert "eos-c.r1 (not deleted: the run ended before its clean-up)" in page, page
    bare = make_run(tmp_path, name="run-ext-none", journal_fields={"cluster": facts})  # its twin: no topics, no row
    assert "topics the run created" not in text(write_report(bare).read_text())
