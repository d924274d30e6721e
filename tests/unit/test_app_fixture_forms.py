"""``app_under_test`` takes every contract form issue 39 added (docs/reference/pytest-plugin.md):
the scenario it builds (``app_scenario``) from the settings of the shipped topologies' scenarios, a
word count by a derived key on kept topic names, a windowed count, a stream-table join, and a model
of the word count, loads, keeps its contract whole, and passes the preflight that tries each user
function on sample inputs before anything starts (harness/phases/user_functions.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.base.errors import ConfigError
from harness.phases import app_run
from harness.pytest_plugin.app_fixture import app_scenario
from harness.run import scenario
from harness.workloads.registry import AppSettings

ROOT = Path(__file__).resolve().parents[2]

#: a model of the word count, as a user's own module would hold it: the committed lines (per input
#: topic, by partition then offset) -> each word's count
MODEL = '''
from harness.apps.functions import java_words


def counts(inputs):
    table = {}
    for record in inputs["streams-plaintext-input"]:
        for word in java_words(record["value"]):
            table[("streams-wordcount-output", word)] = table.get(("streams-wordcount-output", word), 0) + 1
    return table
'''


def _fixture_fields(name: str, cwd: Path, **change: Any) -> dict[str, Any]:
    """What ``app_under_test(...)`` builds from the shipped scenario ``name``'s app settings and topics."""
    sc = scenario.load(name)
    (w,) = sc.workloads
    s = dict(w.settings)
    args = {k: s.pop(k) for k in ("command", "inputs", "outputs", "contract", "ready")}
    s.pop("cwd", None)
    fields = app_scenario(f"fixture-{name}", **args, instances=w.count, cwd=cwd, topics=sc.topics.entries(), **s)
    for k, v in change.items():
        fields["workloads"][0]["settings"][k] = v
    return fields


@pytest.mark.parametrize("name, kind", [("app-streams-wordcount", "aggregate"), ("app-streams-windowed", "windowed"),
                                        ("app-streams-join", "join")])
def test_the_fixture_takes_each_topology_contract_of_the_shipped_apps(tmp_path: Path, name: str, kind: str) -> None:
    fields = _fixture_fields(name, ROOT)
    sc = scenario.Scenario.model_validate(fields)
    s = AppSettings.model_validate(sc.workloads[0].settings)
    assert s.contract.kind == kind
    assert s.contract == AppSettings.model_validate(scenario.load(name).workloads[0].settings).contract
    app_run.preflight(sc)  # every function of the contract and the feeder tried on samples: no error


def test_the_fixture_keeps_the_topic_names_an_app_names_itself() -> None:
    sc = scenario.Scenario.model_validate(_fixture_fields("app-streams-wordcount", ROOT))
    assert {t for t in sc.topics if sc.topics.spec(t).keep_name} == {"streams-plaintext-input", "streams-wordcount-output"}


def test_the_fixture_takes_a_model_and_its_preflight_refuses_a_broken_one(tmp_path: Path) -> None:
    (tmp_path / "wc_model.py").write_text(MODEL)
    contract = {"kind": "model", "function": "wc_model:counts", "monotone": True, "output_serde": {"value": "long"}}
    sc = scenario.Scenario.model_validate(_fixture_fields("app-streams-wordcount", tmp_path, contract=contract))
    assert AppSettings.model_validate(sc.workloads[0].settings).contract.kind == "model"
    app_run.preflight(sc)
    (tmp_path / "wc_model.py").write_text(MODEL.replace('record["value"]', 'record["nope"]'))
    # tried on the feeder's own first lines (its generator's), not on samples of the harness's making
    with pytest.raises(ConfigError, match=r"wc_model:counts: raised KeyError: 'nope'.*the feeder's generator made"):
        app_run.preflight(sc)
