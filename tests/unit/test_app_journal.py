"""The journal's ``app`` is typed (``harness.rundir.journal.AppFacts``, issue 38) and its JSON is
what it was as a dict: journals stored from real runs (tests/unit/stored_journals/: a word count's,
with its instances' log digests and its function's inputs; an app that could not start) read
through the type and write back the same ``app``, key order included, and so does ``verdict.json``'s
``run.app``; facts written as the runner writes them (the drain skipped, a pipeline's stages) give
the JSON the runner wrote before the type."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.phases.app_phases import _written_at
from harness.rundir.journal import AppDrain, AppFacts, AppStageFacts, Journal
from harness.rundir.run_verdict import RunFacts
from harness.rundir.runfolder import RunFolder
from harness.workloads.registry import AppSettings
from tests.unit.test_app_history_text import SETTINGS

STORED = Path(__file__).parent / "stored_journals"


@pytest.mark.parametrize("name", ["app-streams-wordcount", "bad-app"])
def test_a_stored_journals_app_reads_through_its_type_and_writes_back_the_same(name: str, tmp_path: Path) -> None:
    raw: dict[str, Any] = json.loads((STORED / f"{name}.json").read_text())
    journal = Journal.model_validate(raw)
    assert isinstance(journal.app, AppFacts)
    dumped = journal.model_dump(mode="json")["app"]
    assert dumped == raw["app"] and json.dumps(dumped) == json.dumps(raw["app"])  # the same keys, in the same order
    assert journal.run_facts()["app"] == raw["app"]  # verdict.json's run.app
    assert RunFacts.model_validate({"app": raw["app"]}).app == journal.app
    # saved into a run folder and loaded again: the same app
    (tmp_path / "run").mkdir()
    journal.save(RunFolder(tmp_path / "run"))
    again = Journal.load(RunFolder(tmp_path / "run"))
    assert again is not None and again.app == journal.app
    assert json.loads((tmp_path / "run" / "journal.json").read_text())["app"] == raw["app"]


def test_the_stored_journals_facts_are_read_through_their_types() -> None:
    wc = Journal.model_validate(json.loads((STORED / "app-streams-wordcount.json").read_text())).app
    assert wc is not None and wc.drain is not None
    assert wc.drain.drained is True and wc.drain.took_s == 12.28 and wc.drain.last is None
    assert wc.exits == {"app-0": 0, "app-1": 0} and wc.expected_inputs == 1500 and wc.function_error is None
    assert wc.logs["app-0"].exception_count == 2 and wc.logs["app-0"].failed
    bad = Journal.model_validate(json.loads((STORED / "bad-app.json").read_text())).app
    assert bad is not None and bad.drain is None and bad.exits == {"app-0": 3} and bad.outputs_read is None
    assert bad.logs["app-0"].headline() == "FileNotFoundError: [Errno 2] No such file or directory: 'my-app.properties'"


def _stage(name: str, upstream: str | None = None) -> AppSettings:
    return AppSettings.model_validate({**SETTINGS, "name": name, **({"upstream": upstream} if upstream else {})})


def test_facts_written_as_the_runner_writes_them_give_the_json_it_wrote_before_the_type() -> None:
    # one app, the heal failed: the drain skipped, then the exits, then the final reads
    one = AppFacts(restarted_for_drain=[], drain=None)
    one.drain = AppDrain(drained=False, how="skipped: not healed")
    one.exits = {"app-0": 0}
    one.outputs_read = 7
    s = _stage("app")
    for at in _written_at(one, s, [s]):
        at.expected_inputs = 3
    assert json.dumps(Journal(scenario="x", source="x", resolved={}, seed=1, backend="local", app=one)
                      .model_dump(mode="json")["app"]) == json.dumps(
        {"restarted_for_drain": [], "drain": {"drained": False, "how": "skipped: not healed"},
         "exits": {"app-0": 0}, "outputs_read": 7, "expected_inputs": 3})
    # a pipeline: each stage's drain under stages, the first's at the top as well; a later stage's
    # function error under its name only
    copy, forward = _stage("copy"), _stage("forward", "copy")
    drained = AppDrain(drained=True, how="group g committed every input", took_s=1.5)
    two = AppFacts(restarted_for_drain=["app-1"], drain=drained,
                   stages={"copy": AppStageFacts(drain=drained), "forward": AppStageFacts(drain=drained)})
    for at in _written_at(two, copy, [copy, forward]):
        at.expected_inputs = 4
    for at in _written_at(two, forward, [copy, forward]):
        at.function_error = "boom"
    d = {"drained": True, "how": "group g committed every input", "took_s": 1.5}
    assert two.model_dump(mode="json") == {
        "restarted_for_drain": ["app-1"], "drain": d,
        "stages": {"copy": {"drain": d, "expected_inputs": 4}, "forward": {"drain": d, "function_error": "boom"}},
        "expected_inputs": 4}
    # a stage the drain did not record (the heal failed) is made when its first fact comes
    three = AppFacts()
    for at in _written_at(three, forward, [copy, forward]):
        at.expected_inputs = 0
    assert three.model_dump(mode="json") == {"stages": {"forward": {"expected_inputs": 0}}}
