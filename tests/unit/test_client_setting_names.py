"""``client:`` settings across libraries: librdkafka's name of a setting read as Java's by the
clients that follow Java's names, and a setting a Go bridge or kafka-python does not take refused
when the scenario loads (it used to fail every run of the cell at its first client open)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from harness.base.errors import ConfigError
from harness.base.paths import REPO_ROOT
from harness.run import scenario
from harness.workloads.clients import check_settings, gobridge, kafka_python
from harness.workloads.clients.setting_names import FRANZ_GO_SETTINGS, SARAMA_SETTINGS, java_names, unknown

BOTH = {"socket.timeout.ms": 2000, "request.timeout.ms": 2000}


def _go_known(path: str) -> set[str]:
    text = (REPO_ROOT / "harness" / "workloads" / "clients" / "go_src" / path).read_text()
    block = re.search(r"var known = \[\]string\{(.*?)\}", text, re.S)
    assert block, path
    return set(re.findall(r'"([^"]+)"', block.group(1)))


@pytest.mark.parametrize(("go_file", "listed"), [("franz/franz.go", FRANZ_GO_SETTINGS), ("sarama/sarama.go", SARAMA_SETTINGS)])
def test_the_python_lists_are_the_bridges_own(go_file: str, listed: frozenset[str]) -> None:
    assert _go_known(go_file) == set(listed)


def test_librdkafkas_name_is_read_as_javas_and_javas_wins() -> None:
    assert java_names({"socket.timeout.ms": 1500}) == {"request.timeout.ms": 1500}
    assert java_names({"socket.timeout.ms": 1500, "request.timeout.ms": 3000}) == {"request.timeout.ms": 3000}
    assert java_names({"linger.ms": 5}) == {"linger.ms": 5}


def test_go_and_kafka_python_clients_get_one_request_timeout() -> None:
    conf = gobridge.producer_config("b:1", "t", 60000, dict(BOTH))
    assert conf["request.timeout.ms"] == 2000 and "socket.timeout.ms" not in conf
    assert gobridge.consumer_config("b:1", None, {"socket.timeout.ms": 1000})["request.timeout.ms"] == 1000
    assert kafka_python._settings(dict(BOTH)) == {"request_timeout_ms": 2000}


@pytest.mark.parametrize("library", ["franz-go@1.18.1", "franz-go", "sarama", "kafka-python"])
def test_a_scenario_giving_both_names_runs_on_every_strict_client(library: str) -> None:
    check_settings(library, dict(BOTH))
    scenario.load("kip890-late-commit-tight").with_library(library)


@pytest.mark.parametrize("library", ["franz-go", "sarama", "kafka-python"])
def test_a_setting_the_client_does_not_take_is_refused_naming_it_and_what_it_takes(library: str) -> None:
    with pytest.raises(ValueError, match=r"client setting no\.such\.setting: not taken by .*; it takes .*linger\.ms"):
        check_settings(library, {"no.such.setting": 1, **BOTH})


def test_kafka_python_takes_its_own_keyword_spelling_too() -> None:
    assert unknown({"isolation_level": "read_committed", "isolation.level": "x"}, {"isolation_level"}) == []


def test_clients_that_check_for_themselves_are_not_second_guessed() -> None:
    check_settings("confluent-kafka", {"no.such.setting": 1})
    check_settings("java@4.4.0", {"no.such.setting": 1})


def test_the_refusal_names_the_scenario_line_and_the_flag(tmp_path: Path) -> None:
    data = yaml.safe_load((REPO_ROOT / "harness/scenarios/kip890-late-commit-tight.yaml").read_text())
    data["workloads"][0]["client"]["fetch.min.bytes"] = 1
    data["workloads"][0]["library"] = "sarama"
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(ConfigError, match=rf"{path}:\d+: workloads\[0\]: client setting fetch\.min\.bytes: not taken by sarama"):
        scenario.load(str(path))
    del data["workloads"][0]["library"]
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(ConfigError, match=r"--library franz-go: client setting fetch\.min\.bytes: not taken by franz-go"):
        scenario.load(str(path)).with_library("franz-go")
