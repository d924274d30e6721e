"""Scenario files: the library loads, and bad input names the file, the field and what is allowed."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.base.errors import ConfigError
from harness.run import scenario


@pytest.mark.parametrize("name", scenario.names())
def test_every_library_scenario_is_valid(name: str) -> None:
    sc = scenario.load(name)
    assert sc.name == name and sc.description


def test_the_library_has_the_workload_scenarios_and_negative_controls() -> None:
    assert {"txn-baseline", "copier-bounce", "zombie-fencing", "negative-duplicates", "negative-aborted-read"} <= set(scenario.names())
    for neg in ("negative-duplicates", "negative-aborted-read"):
        e = scenario.load(neg).expect
        assert e.valid is False and e.fires, f"{neg} must expect a check to fire"


def test_unknown_scenario_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="known: .*txn-baseline") as info:
        scenario.load("no-such-scenario")
    assert info.value.exit_code == 2


def test_unknown_key_and_bad_kind_name_file_and_field(tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text("name: bad\ndescription: x\nworkloads:\n  - kind: txn-producr\n    cont: 2\n")
    with pytest.raises(ConfigError) as info:
        scenario.load(str(f))
    msg = str(info.value)
    assert f"{f}:4: workloads[0].kind" in msg and "'txn-producer'" in msg, msg
    assert f"{f}:5: workloads[0].cont: unknown key (allowed: kind, count, settings, library, client); did you mean 'count'?" in msg, msg
    assert "did you mean 'txn-producer'?" in msg, msg


@pytest.mark.parametrize("body, expected", [
    ("workloads:\n  - kind: txn-producer\nfaults:\n  - {at: 5, kind: kill-driver}\n",
     "faults ['kill-driver'] need a spark-job workload"),
    ("topics: [a, b]\nworkloads:\n  - kind: spark-job\n    settings: {input: a, output: b}\n",
     "needs settings ['markers'], each one of the scenario's topics"),
    ("topics: [a, b]\nworkloads:\n  - kind: spark-job\n    settings: {input: a, output: b, sink: kafka}\n",
     "sink: 'kafka'; allowed: driver, executor, builtin"),
    ("topics: [a, b]\nworkloads:\n  - kind: spark-job\n    settings: {input: a, output: b, sink: builtin}\n"
     "faults:\n  - {at: 5, kind: kill-executor}\n",
     "faults ['kill-executor'] act on a standalone Spark cluster; set spark: standalone (it is local)"),
    ("spark: standalone\nworkloads:\n  - kind: txn-producer\n",
     "standalone: a Spark cluster runs a spark-job workload"),
    ("workloads:\n  - kind: txn-producer\nfaults:\n  - {at: 5, kind: kill, window: in-txn}\n",
     "`window` is for kill-driver, zombie-driver, kill-executor and pause-executor only"),
])
def test_spark_job_settings_and_driver_faults_are_checked(tmp_path: Path, body: str, expected: str) -> None:
    f = tmp_path / "spark.yaml"
    f.write_text("name: s\ndescription: x\n" + body)
    with pytest.raises(ConfigError) as info:
        scenario.load(str(f))
    assert expected in str(info.value) and str(f) in str(info.value), str(info.value)


def _load_error(tmp_path: Path, body: str, head: str = "name: s\ndescription: x\nworkloads:\n  - kind: txn-producer\n") -> str:
    """Why the scenario ``head + body`` is refused, its file named FILE."""
    f = tmp_path / "sc.yaml"
    f.write_text(head + body)
    with pytest.raises(ConfigError) as info:
        scenario.load(str(f))
    assert info.value.exit_code == 2
    return str(info.value).replace(str(f), "FILE")


def test_a_fault_past_the_end_is_rejected_naming_file_and_line(tmp_path: Path) -> None:
    msg = _load_error(tmp_path, "duration: 30\nfaults:\n  - {at: 5, kind: kill}\n  - {at: 50, kind: kill}\n")
    assert "FILE:8: faults[1] (kill at 50s) at: 50s is past the scenario's end (duration 30s)" in msg, msg


def test_a_fault_at_the_end_or_before_is_accepted(tmp_path: Path) -> None:
    f = tmp_path / "sc.yaml"
    f.write_text("name: s\ndescription: x\nworkloads:\n  - kind: txn-producer\nduration: 30\n"
                 "faults:\n  - {at: 5, kind: kill}\n  - {at: 30, kind: kill}\n")
    assert [x.at for x in scenario.load(str(f)).faults] == [5, 30]


@pytest.mark.parametrize("duration", [".inf", ".nan", "90000", "0"])
def test_a_duration_that_is_not_a_number_of_seconds_up_to_a_day_is_rejected(tmp_path: Path, duration: str) -> None:
    msg = _load_error(tmp_path, f"duration: {duration}\n")
    assert msg.startswith("invalid scenario:\n  FILE:5: duration: "), msg


@pytest.mark.parametrize("bound", ["5", ".inf", "4000"])
def test_an_lso_bound_outside_10_s_to_an_hour_is_rejected(tmp_path: Path, bound: str) -> None:
    msg = _load_error(tmp_path, f"lso_bound_s: {bound}\n")
    assert msg.startswith("invalid scenario:\n  FILE:5: lso_bound_s: "), msg


def test_the_lso_bound_defaults_to_90_s_and_the_negative_control_waits_less() -> None:
    assert scenario.load("txn-baseline").lso_bound_s == scenario.LSO_BOUND_S == 90
    hanging = scenario.load("negative-lso-stall")
    # its only producer's transaction outlives any bound: shortening the wait cannot hide the stall
    assert hanging.lso_bound_s == 10
    assert all(w.settings["transaction_timeout_ms"] > 1000 * scenario.LSO_BOUND_S
               for w in hanging.workloads if w.kind == "txn-producer")


@pytest.mark.parametrize("seconds", [float("inf"), float("nan"), 0.0, -1.0, 24 * 3600 + 1.0])
def test_the_duration_override_is_checked_and_names_its_flag(seconds: float) -> None:
    with pytest.raises(ConfigError, match=r"^--eos-duration .*at most 86400 seconds") as info:
        scenario.load("txn-baseline").with_duration(seconds, flag="--eos-duration")
    assert info.value.exit_code == 2


def test_the_duration_override_gives_a_scenario_of_that_length() -> None:
    sc = scenario.load("txn-baseline")  # faults at 8 and 25 s: 30 s cuts none off
    assert sc.with_duration(30).duration == 30 and sc.with_duration(24 * 3600).duration == 24 * 3600
    assert sc.duration == 45, "the original is left as it was"


@pytest.mark.parametrize("body, line, expected", [
    ("faults:\n  - {at: 5, kind: kill, target: leeder}\n", 6,
     "faults[0] (kill at 5s) target: 'leeder' is not a target; allowed: a node id (1, 2, 3) or random, all, leader,"),
    ("faults:\n  - {at: 5, kind: kill, target: 7}\n", 6, "faults[0] (kill at 5s) target: 7 is not a target"),
    ("faults:\n  - at: 5\n    kind: kil\n", 7, "faults[0] (kil at 5s) kind: 'kil' is not a fault kind; allowed: kill, "),
    ("faults:\n  - {at: 5}\n", 6, "faults[0].kind: missing; a fault needs a kind, one of: kill, "),
    ("faults:\n  - {at: 5, kind: kill, params: {latency_ms: 5}}\n", 6,
     ("faults[0] (kill at 5s) params: `params` is for latency, bandwidth, reset-peer, blackhole, slicer and "
      "drop-responses only, not kill")),
    ("faults:\n  - {at: 5, kind: kill-workload}\n", 6, "faults[0] (kill-workload at 5s) workload: missing (required)"),
    ("faults:\n  - {at: 5, kind: latency, listeners: clients}\n", 6,
     "faults[0] (latency at 5s) listeners: 'clients'; allowed: internal, controller, client, all; did you mean 'client'?"),
    ("faults:\n  - {at: 5, kind: partition, partition: directed, target: 1}\n", 6,
     "faults[0] (partition at 5s): a directed partition needs `peer` (the other end)"),
    ("faults:\n  - 5\n", 6, "faults[0]: should be a mapping (key: value), not int"),
])
def test_faults_are_named_in_the_scenario_s_own_words(tmp_path: Path, body: str, line: int, expected: str) -> None:
    msg = _load_error(tmp_path, body)
    assert f"FILE:{line}: {expected}" in msg, msg
    for internal in ("literal[", "function-after", "tagged-union", "instance of", ".0.", "Value error", "Input "):
        assert internal not in msg, msg


def test_kill_workload_names_the_allowed_workload_kinds(tmp_path: Path) -> None:
    msg = _load_error(tmp_path, "faults:\n  - {at: 5, kind: kill-workload, workload: readr}\n")
    assert "FILE:6: faults[0] (kill-workload at 5s) workload: 'readr'; allowed: txn-producer, reader, copier" in msg, msg


@pytest.mark.parametrize("text, what", [("- a\n- b\n", "not list"), ("", "not an empty file")])
def test_a_file_that_is_not_a_mapping_says_so(tmp_path: Path, text: str, what: str) -> None:
    f = tmp_path / "sc.yaml"
    f.write_text(text)
    with pytest.raises(ConfigError, match=f"{f}:1: a scenario is a mapping .*{what}"):
        scenario.load(str(f))


def test_an_existing_file_without_yaml_suffix_is_loaded(tmp_path: Path) -> None:
    f = tmp_path / "mine"
    f.write_text("name: mine\ndescription: x\nworkloads:\n  - kind: reader\n")
    assert scenario.load(str(f)).name == "mine"


@pytest.mark.parametrize("mix", ["{kinds: [[kill, 1]], duration: [.nan, 3]}", "{kinds: [[kill, 1]], gap: [1, .inf]}",
                                 "{kinds: [[kill, .nan]]}", "{kinds: [[kill, 1]], start: -1}"])
def test_a_mix_of_numbers_that_are_not_seconds_is_rejected(tmp_path: Path, mix: str) -> None:
    msg = _load_error(tmp_path, f"mix: {mix}\n")
    assert "FILE:5: mix." in msg, msg


def test_problems_of_overrides_are_in_the_scenarios_words() -> None:
    import pydantic

    data = {**scenario.load("txn-baseline").model_dump(), "faults": [{"at": 1, "kind": "kill", "target": "leeder"}]}
    with pytest.raises(pydantic.ValidationError) as info:
        scenario.Scenario.model_validate(data)
    said = scenario.problems(info.value, data)
    assert said and said[0].startswith("faults[0] (kill at 1s) target: 'leeder' is not a target"), said
    assert not any("literal[" in p or "faults.0" in p for p in said), said


def test_a_folder_given_as_a_scenario_says_so(tmp_path: Path) -> None:
    folder = tmp_path / "looks-like.yaml"
    folder.mkdir()
    with pytest.raises(ConfigError, match="is a folder, not a YAML file"):
        scenario.load(str(folder))


@pytest.mark.parametrize("library, expected", [
    ("nope", "unknown client library; allowed: confluent-kafka, java, kafka-python"),
    ("java@x", "expected java@MAJOR.MINOR.PATCH"),
    ("confluent-kafka@1.0.0", "only java, franz-go and sarama take a version"),
])
def test_bad_library_names_what_is_allowed(tmp_path: Path, library: str, expected: str) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(f"name: bad\ndescription: x\nworkloads:\n  - kind: txn-producer\n    library: {library!r}\n")
    with pytest.raises(ConfigError, match=expected) as info:
        scenario.load(str(f))
    assert info.value.exit_code == 2 and f"{f}:4: workloads[0]" in str(info.value)


def test_with_library_moves_every_workload_that_can_choose() -> None:
    sc = scenario.load("spark-broker-kill").with_library("java@3.9.1")
    libs = {w.kind: w.library for w in sc.workloads}
    assert libs["spark-job"] == "confluent-kafka", "the Spark job is bound to confluent-kafka"
    assert {k: v for k, v in libs.items() if k != "spark-job"} and all(
        v == "java@3.9.1" for k, v in libs.items() if k != "spark-job")
    with pytest.raises(ConfigError, match="--library: library 'nope'"):
        sc.with_library("nope")
