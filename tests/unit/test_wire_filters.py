"""Filters on the wire proxy's rules (``transactional_id``, ``min_producer_epoch``, ``result``): the
fault fields reach the rule's JSON and the fault's start event, a filter on an API whose requests
cannot carry it is refused (in a scenario: file and line, exit 2), and the Python table of which
API carries what is the Go proxy's."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from chaos import faults
from chaos.targets import TargetDefaults
from clusters.wire import wire_api
from clusters.wire.wire_api import Rule
from tests.unit.test_cli import _restore_logging, cli  # noqa: F401 - the logging fixture applies to every test
from tests.unit.test_faults import events, nemesis, run_one  # noqa: F401 - events is a fixture
from tests.unit.test_scenario import _load_error

ROOT = Path(__file__).resolve().parents[2]
BOUNDARY = {"api": "EndTxn", "transactional_id": "eos-txn-producer-0", "min_producer_epoch": 32766, "result": "abort"}


def test_the_filters_reach_the_rule_s_json_and_the_fault_s_start_event(tmp_path: Path, events: Any) -> None:  # noqa: F811
    nem, cluster = nemesis(tmp_path)
    run_one(nem, kind="hold-requests", target=2, hold_ms=9000, count=1, **BOUNDARY)
    rule = cluster.calls[0][1]
    assert rule == Rule(apis=("EndTxn",), action="hold", links=("client-to-n2",), hold_ms=9000, count=1,
                        transactional_id="eos-txn-producer-0", min_producer_epoch=32766, result="abort")
    assert rule.to_json() == {"apis": ["EndTxn"], "action": "hold", "links": ["client-to-n2"], "hold_ms": 9000,
                              "until": "timeout", "error": "", "count": 1, "transactional_id": "eos-txn-producer-0",
                              "min_producer_epoch": 32766, "result": "abort"}
    assert events()[0] == {"type": "info", "kind": "hold-requests", "phase": "start", "links": ["client-to-n2"],
                           "nodes": [2], "target": 2, "of": None, "api": ["EndTxn"], "transactional_id": "eos-txn-producer-0",
                           "min_producer_epoch": 32766, "result": "abort"}


def test_the_app_s_ids_are_named_by_its_run_id_and_without_an_app_it_is_an_error(
        tmp_path: Path, events: Any) -> None:  # noqa: F811
    # a Kafka Streams app's transactional.ids are its application.id (the run's app id), then a
    # process id it draws: "{id}*" is every one of them, the prefix the Go proxy matches
    nem, cluster = nemesis(tmp_path)
    nem.defaults = TargetDefaults(transactional_id="eos-chaos-app-r7*")
    run_one(nem, kind="hold-requests", target=2, api="EndTxn", transactional_id="{id}*", result="commit")
    assert cluster.calls[0][1].transactional_id == "eos-chaos-app-r7*"
    assert events()[0]["transactional_id"] == "eos-chaos-app-r7*"
    nem.defaults = TargetDefaults(transactional_id="eos-txn-producer-0")
    nem._guarded(faults.parse({"at": 0, "duration": 0.01, "kind": "hold-requests", "target": 2,
                               "transactional_id": "{id}*"}))
    assert nem.errors == ["hold-requests at 0.0s: LookupError: hold-requests of '{id}*': {id} is an app's id, "
                          "and the run has no app"]


def test_an_unfiltered_rule_is_sent_as_a_proxy_from_before_filters_takes_it() -> None:
    # a cluster started before keeps its proxy binary, which refuses fields it does not know
    assert Rule(apis=("EndTxn",), action="hold", result="any").to_json() == {
        "apis": ["EndTxn"], "action": "hold", "links": [], "hold_ms": 0, "until": "timeout", "error": "", "count": 0}


@pytest.mark.parametrize("data, said", [
    ({"kind": "hold-requests", "api": "Produce", "result": "abort"},
     "result: 'abort' filters requests of EndTxn, WriteTxnMarkers; Produce requests do not carry it"),
    ({"kind": "error-responses", "api": ["EndTxn", "InitProducerId"], "min_producer_epoch": 5},
     "min_producer_epoch: 5 filters requests of EndTxn, AddOffsetsToTxn, AddPartitionsToTxn, TxnOffsetCommit, WriteTxnMarkers; "
     "InitProducerId requests do not carry it"),
    ({"kind": "drop-api-responses", "api": "Metadata", "transactional_id": "t"},
     "transactional_id: 't' filters requests of EndTxn,"),
    ({"kind": "hold-requests", "min_producer_epoch": 32768}, "min_producer_epoch: Input should be less than or equal to 32767"),
    ({"kind": "hold-requests", "result": "maybe"}, "result: Input should be 'commit', 'abort' or 'any'"),
    ({"kind": "hold-requests", "transactional_id": ""}, "transactional_id: String should have at least 1 character"),
])
def test_a_filter_an_api_cannot_carry_is_refused(data: dict[str, Any], said: str) -> None:
    with pytest.raises(ValidationError) as info:
        faults.parse({"at": 0, **data})
    assert "; ".join(faults.problems(info.value)).startswith(said), faults.problems(info.value)


def test_in_a_scenario_the_refusal_names_file_and_line(tmp_path: Path) -> None:
    msg = _load_error(tmp_path, "duration: 30\nfaults:\n  - {at: 5, kind: hold-requests, api: Produce, result: commit}\n")
    assert "FILE:7: faults[0] (hold-requests at 5s): result: 'commit' filters requests of EndTxn, WriteTxnMarkers; Produce requests " \
           "do not carry it" in msg, msg


def test_at_the_command_line_it_is_exit_2(tmp_path: Path) -> None:
    f = tmp_path / "sc.yaml"
    f.write_text("name: s\ndescription: x\nworkloads:\n  - kind: txn-producer\nduration: 30\nfaults:\n"
                 "  - {at: 5, kind: hold-requests, api: [EndTxn, AddOffsetsToTxn], result: abort}\n")
    r = cli("run", str(f), "--dry-run")
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    assert f"{f.name}:7" in r.output and "AddOffsetsToTxn requests do not carry it" in r.output, r.output


def test_the_python_table_of_filters_is_the_proxy_s() -> None:
    rules_go = (ROOT / "clusters" / "wire" / "kwire" / "rules.go").read_text()
    table = rules_go.split("var filterAPIs")[1].split("\n}\n")[0]
    go = {name: tuple(re.findall(r"api(\w+)", apis)) for name, apis in re.findall(r'"(\w+)":\s*\{([^}]*)\}', table)}
    assert go == wire_api.FILTER_APIS


def test_a_proxy_older_than_filters_is_named_as_such(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.base.errors import FaultError

    def old_proxy(*args: Any, **kwargs: Any) -> Any:
        raise FaultError('wire proxy POST /rules answered 400: rule: json: unknown field "transactional_id"')

    proxy = wire_api.WireProxy("http://127.0.0.1:1")
    monkeypatch.setattr(proxy, "_call", old_proxy)
    with pytest.raises(FaultError, match="this cluster's wire proxy is older than the rule: .*cluster down"):
        proxy.add_rule(Rule(apis=("EndTxn",), action="hold", transactional_id="t"))
