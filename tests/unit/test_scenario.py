"""Scenario files: the library loads, and bad input names the file, the field and what is allowed."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import scenario
from harness.errors import ConfigError


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
    assert f"{f}:4: workloads.0.kind" in msg and "'txn-producer'" in msg, msg
    assert f"{f}:5: workloads.0.cont: unknown key (allowed: kind, count, settings, client); did you mean 'count'?" in msg, msg
    assert "did you mean 'txn-producer'?" in msg, msg


@pytest.mark.parametrize("body, expected", [
    ("workloads:\n  - kind: txn-producer\nfaults:\n  - {at: 5, kind: kill-driver}\n",
     "faults ['kill-driver'] need a spark-job workload"),
    ("topics: [a, b]\nworkloads:\n  - kind: spark-job\n    settings: {input: a, output: b}\n",
     "needs settings ['markers'], each one of the scenario's topics"),
    ("topics: [a, b]\nworkloads:\n  - kind: spark-job\n    settings: {input: a, output: b, sink: kafka}\n",
     "sink: 'kafka'; allowed: transactional, builtin"),
    ("workloads:\n  - kind: txn-producer\nfaults:\n  - {at: 5, kind: kill, window: in-txn}\n",
     "`window` is for kill-driver and zombie-driver only"),
])
def test_spark_job_settings_and_driver_faults_are_checked(tmp_path: Path, body: str, expected: str) -> None:
    f = tmp_path / "spark.yaml"
    f.write_text("name: s\ndescription: x\n" + body)
    with pytest.raises(ConfigError) as info:
        scenario.load(str(f))
    assert expected in str(info.value) and str(f) in str(info.value), str(info.value)
