"""verdict.json is typed once (harness/rundir/run_verdict.py ``RunVerdict``): read back as it was
written, old format-1 folders still load, and a file that is not a verdict is refused naming the
file and the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.base.errors import ConfigError
from harness.run import verdict_file
from harness.run.scenario import Expect
from harness.rundir.journal import Journal
from harness.rundir.run_verdict import RunVerdict
from harness.rundir.runfolder import RunFolder


def _checked() -> dict[str, Any]:
    return {"format": 1, "valid": False, "unknown_because": [], "engine": "default", "history": {"ops": 10, "truncated": []},
            "checks": {"duplicate": {"count": 2, "examples": [{"value": "a"}]}, "lost-write": {"count": 0, "examples": []},
                       "g0": {"count": None, "examples": [], "error": "ValueError: x", "traceback": "..."}},
            "stats": {"txn": {"ok": 50, "fail": 1, "info": 0}, "fenced": 1, "errors_seen": {}, "faults": 2,
                      "reads": {"polled": 3, "final_committed": 40, "final_uncommitted": 41},
                      "throughput": {"ok_txn_per_s": 2.5, "committed_values_per_s": 10}, "committed_values": 40,
                      "spark": {"batches": 4, "replays_skipped": 1, "trigger_ms": {"p50": 10.0, "p95": None}}}}


def _journal() -> Journal:
    return Journal(scenario="s", source="s", resolved={}, seed=1, backend="local", healed=True,
                   nemesis_errors=["kill at 5s: LookupError"], features={"transaction.version": 2})


def test_a_written_verdict_reads_back_typed_and_as_it_was(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path)
    assembled = verdict_file.assemble(_checked(), _journal(), Expect(valid=False, fires=["duplicate"]).model_dump())
    written = verdict_file.write(assembled, folder)
    v = RunVerdict.load(folder)
    assert v is not None and v.to_json() == written.to_json() == assembled == json.loads(folder.verdict.read_text())
    assert v.format == 2 and v.valid is False and v.label == "invalid"
    assert v.as_expected is False  # the duplicate fired as expected, but a fault could not be applied
    assert v.counts() == {"duplicate": 2} and list(v.fired()) == ["duplicate"] and v.checks["g0"].error == "ValueError: x"
    assert v.figures.txn.ok == 50 and v.figures.reads["final_committed"] == 40 and v.figures.spark is not None
    assert v.figures.spark.replays_skipped == 1 and v.figures.throughput.ok_txn_per_s == 2.5
    assert v.facts is v.run and v.facts.healed is True and v.facts.transaction_version == 2
    assert v.facts.nemesis_errors == ["kill at 5s: LookupError"]
    # written again from what was read: the same file
    verdict_file.write(v.to_json(), folder)
    assert json.loads(folder.verdict.read_text()) == assembled


def test_a_format_1_verdict_still_loads_with_its_facts_among_its_figures(tmp_path: Path) -> None:
    old = _checked()
    old["stats"].update(healed=False, heal_problems=["node 2: down"], faults=[{"kind": "kill", "node": 2}])
    del old["unknown_because"], old["engine"], old["history"]
    v = RunVerdict.of(old, tmp_path / "verdict.json")
    assert v.run is None and v.facts.healed is False and v.facts.heal_problems == ["node 2: down"]
    assert v.history == {} and v.engine == "default" and v.to_json() == old


@pytest.mark.parametrize("change, field", [
    (lambda d: d.pop("valid"), "valid: Field required"),
    (lambda d: d.update(valid="yes"), "valid.bool"),
    (lambda d: d["checks"].update(duplicate={"count": "2"}), "checks.duplicate.count"),
    (lambda d: d["stats"]["txn"].update(ok="50"), "stats.txn.ok"),
    (lambda d: d["stats"].update(spark={"batches": [1]}), "stats.spark.batches"),
    (lambda d: d.update(format=2, run={"healed": "yes"}), "run.healed"),
    (lambda d: d["stats"].update(healed="yes"), "stats.healed"),  # a format-1 verdict's facts
])
def test_a_file_that_is_not_a_verdict_is_refused_naming_it_and_the_field(tmp_path: Path, change: Any, field: str) -> None:
    data = _checked()
    change(data)
    (tmp_path / "verdict.json").write_text(json.dumps(data))
    with pytest.raises(ConfigError) as refused:
        RunVerdict.load(RunFolder(tmp_path))
    assert str(refused.value).startswith(f"{tmp_path / 'verdict.json'}: not a verdict (") and field in str(refused.value)


def test_a_folder_without_a_verdict_has_none(tmp_path: Path) -> None:
    assert RunVerdict.load(RunFolder(tmp_path)) is None
