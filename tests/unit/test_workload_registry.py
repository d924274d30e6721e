"""The registry of workload kinds: what each kind runs, how many processes a scenario entry makes,
which the supervisor restarts, and how a bad setting is reported (file, line, what is allowed)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from harness.base.errors import ConfigError
from harness.run import scenario, supervisor
from harness.run.runner import workload_configs
from harness.workloads import registry


@pytest.mark.parametrize("name", sorted(registry.KINDS))
def test_every_kind_runs_a_module_that_exists(name: str) -> None:
    assert importlib.util.find_spec(registry.kind(name).module) is not None


def test_the_supervisor_starts_and_restarts_what_the_registry_says() -> None:
    assert supervisor.MODULES == registry.modules()
    assert supervisor.RESTARTED == ("spark-job",)


def test_an_entry_makes_count_processes_and_the_zombie_two_with_the_second_started_later(tmp_path: Path) -> None:
    sc = scenario.Scenario(name="s", description="-", workloads=[
        scenario.Workload(kind="txn-producer", count=2, settings={"values_per_txn": 3}),
        scenario.Workload(kind="zombie", count=1, settings={"txn_id": "z"})])
    made = [(kind, cfg.name, cfg.settings, now) for kind, cfg, now in workload_configs(sc, tmp_path, "b:1", 7)]
    assert made == [("txn-producer", "txn-producer-0", {"values_per_txn": 3}, True),
                    ("txn-producer", "txn-producer-1", {"values_per_txn": 3}, True),
                    ("zombie", "zombie-first", {"txn_id": "z", "role": "first"}, True),
                    ("zombie", "zombie-second", {"txn_id": "z", "role": "second"}, False)]


def test_two_entries_of_a_kind_number_their_processes_on_and_a_second_zombie_entry_is_refused(tmp_path: Path) -> None:
    sc = scenario.Scenario(name="s", description="-", workloads=[
        scenario.Workload(kind="txn-producer", count=2, settings={"values_per_txn": 15}),
        scenario.Workload(kind="copier", settings={"input": "eos-a", "output": "eos-b"}),
        scenario.Workload(kind="txn-producer", settings={"values_per_txn": 3})])
    made = [(cfg.name, cfg.settings.get("values_per_txn")) for _, cfg, _ in workload_configs(sc, tmp_path, "b:1", 7)]
    assert made == [("txn-producer-0", 15), ("txn-producer-1", 15), ("copier-0", None), ("txn-producer-2", 3)]
    zombie = "  - {kind: zombie}\n"
    msg = _load(tmp_path, zombie + zombie)
    assert "bad.yaml:6: workloads[1].kind: a second zombie entry" in msg, msg


def test_defaults_are_the_ones_the_workloads_always_used() -> None:
    t = registry.TxnProducerSettings()
    assert (t.values_per_txn, t.abort_share, t.transactional, t.transaction_timeout_ms, t.commit_timeout_s) == \
        (6, 0.1, True, 60_000, 30.0)
    c = registry.CopierSettings(input="i", output="o")
    assert (c.group, c.abort_share, c.batch) == ("eos-chaos-copier", 0.1, 50)
    s = registry.SparkJobSettings(input="i", output="o")
    assert (s.sink, s.trigger_ms, s.max_offsets_per_trigger) == ("driver", 1000, 5000)


def _load(tmp_path: Path, workloads: str) -> str:
    f = tmp_path / "bad.yaml"
    f.write_text("name: bad\ndescription: x\ntopics: [a, b]\nworkloads:\n" + workloads)
    with pytest.raises(ConfigError) as info:
        scenario.load(str(f))
    return str(info.value)


def test_a_setting_out_of_bounds_names_file_line_setting_and_bound(tmp_path: Path) -> None:
    msg = _load(tmp_path, "  - kind: reader\n  - kind: txn-producer\n    settings: {values_per_txn: 0}\n")
    assert f"{tmp_path / 'bad.yaml'}:7:" in msg, msg
    assert "txn-producer setting values_per_txn: 0: should be greater than or equal to 1" in msg, msg


def test_an_unknown_setting_lists_the_allowed_ones_and_the_closest(tmp_path: Path) -> None:
    msg = _load(tmp_path, "  - kind: copier\n    settings: {input: a, output: b, abort_shar: 0.1}\n")
    assert "copier setting abort_shar: unknown (allowed: transaction_timeout_ms, input, output, group, " \
           "abort_share, batch); did you mean 'abort_share'?" in msg, msg


def test_a_missing_setting_and_a_topic_the_scenario_lacks_are_reported(tmp_path: Path) -> None:
    assert "copier setting output: required" in _load(tmp_path, "  - kind: copier\n    settings: {input: a}\n")
    msg = _load(tmp_path, "  - kind: copier\n    settings: {input: a, output: c}\n")
    assert "a copier workload needs settings ['output'], each one of the scenario's topics ['a', 'b']" in msg, msg


def test_a_reader_takes_no_settings(tmp_path: Path) -> None:
    msg = _load(tmp_path, "  - kind: reader\n    settings: {batch: 5}\n")
    assert "reader setting batch: unknown (allowed: none)" in msg, msg


# What the runner reads from the registry instead of naming kinds (harness/run/runner.py).

COPIER_AND_SPARK = scenario.Scenario(name="s", description="-", topics=["in", "out", "marks"], workloads=[
    scenario.Workload(kind="txn-producer", settings={"topics": ["in"]}),
    scenario.Workload(kind="copier", settings={"input": "in", "output": "out"}),
    scenario.Workload(kind="spark-job", settings={"input": "in", "output": "out", "markers": "marks"})])


def test_a_run_makes_the_consumer_group_a_workload_defaults_to_its_own_and_keeps_one_given() -> None:
    from harness.run.runner import physical

    tagged = physical(COPIER_AND_SPARK, "r1")
    assert tagged.workloads[1].settings == {"input": "in.r1", "output": "out.r1", "group": "eos-chaos-copier.r1"}
    assert tagged.target_defaults().group == "eos-chaos-copier.r1"  # the group-coordinator role's default
    given = COPIER_AND_SPARK.model_copy(update={"workloads": [
        scenario.Workload(kind="copier", settings={"input": "in", "output": "out", "group": "mine"})]})
    assert physical(given, "r1").workloads[0].settings["group"] == "mine"
    assert "group" not in physical(COPIER_AND_SPARK, "r1").workloads[2].settings  # the Spark job has none


def test_the_markers_topic_is_the_one_created_compacted() -> None:
    from harness.run.runner import compacted_topics

    assert compacted_topics(COPIER_AND_SPARK) == {"marks"}
    assert compacted_topics(scenario.load("txn-baseline")) == set()


def test_the_final_reads_record_the_committed_offsets_of_the_consuming_workloads_group(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.phases import kind_run as phases_base
    from harness.phases import table
    from harness.run import runner

    asked: list[tuple[str, list[tuple[str, int]]]] = []

    class Offsets:
        """The group's offsets as ``GroupOffsets`` gives them: 5 on every partition asked."""

        def __init__(self, bootstrap: str, group: str) -> None:
            self.group = group

        def __enter__(self) -> Offsets:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

        def committed(self, tps: list[Any], timeout: float) -> dict[tuple[str, int], int]:
            asked.append((self.group, [(tp.topic, tp.partition) for tp in tps]))
            return {(tp.topic, tp.partition): 5 for tp in tps}

    events: list[tuple[str, Any]] = []
    rec = type("Rec", (), {"event": lambda self, process, f, value, **kw: events.append((f, value))})()
    monkeypatch.setattr(runner, "lso_lag", lambda *a: ({}, {}))
    monkeypatch.setattr(runner, "read_all", lambda *a, **kw: type("Back", (), {"records": {}})())
    monkeypatch.setattr(phases_base, "GroupOffsets", Offsets)
    cluster = type("C", (), {"direct_bootstrap": "127.0.0.1:1"})()

    def final_reads(sc: scenario.Scenario) -> None:
        """The runner's final reads, then each kind's (a consuming kind's: its group's offsets)."""
        runner.final_reads(cluster, sc, rec)  # type: ignore[arg-type]
        ctx = SimpleNamespace(cluster=cluster, rec=rec)
        for r in table.for_scenario(sc):
            r.final_reads(ctx, False)  # type: ignore[arg-type]

    sc = physical_of(COPIER_AND_SPARK)
    final_reads(sc)
    assert asked == [("eos-chaos-copier.r1", [("in.r1", p) for p in range(sc.partitions)])]
    assert events[-1] == ("group-offsets", {f"in.r1-{p}": 5 for p in range(sc.partitions)})
    asked.clear()
    final_reads(physical_of(scenario.load("txn-baseline")))
    assert asked == []  # no workload consumes in a group


def physical_of(sc: scenario.Scenario) -> scenario.Scenario:
    from harness.run.runner import physical

    return physical(sc, "r1")
