"""verdict.json (format 2) from the checker's verdict, the run journal and the expectation: run
facts under ``run``, never in ``stats``; ``as_expected`` fails on each unmet part and holds on the
clean twin; ``eos-chaos check`` re-assembles it from the folder, keeping the expectation and the
run facts, and an old folder without journal.json still checks. The journal ties the faults as
they ran to the schedule, and a run's narrative lands in its run.log."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from harness.base.errors import ConfigError
from harness.run import runner, verdict_file
from harness.run.scenario import Expect
from harness.rundir.journal import Journal, fault_runs
from harness.rundir.runfolder import RunFolder
from tests.unit.test_report import FAULTS, SECOND, make_run

FACTS = ("healed", "heal_problems", "nemesis_errors", "interrupted", "faulted_at_start", "workloads_killed_at_stop",
         "not_recovered", "transaction_version", "features")


def _checked(**stats: Any) -> dict[str, Any]:
    return {"format": 1, "valid": True, "engine": "default", "history": {"ops": 10, "truncated": []},
            "checks": {"duplicate": {"count": 0, "examples": []}},
            "stats": {"txn": {"ok": 50, "fail": 0, "info": 0}, "fenced": 1, "errors_seen": {}, "faults": 2, **stats}}


def _journal(**facts: Any) -> Journal:
    return Journal(scenario="s", source="s", resolved={}, seed=1, backend="local", **{"healed": True, **facts})


def test_the_run_facts_are_under_run_and_the_stats_hold_history_figures_only() -> None:
    v = verdict_file.assemble(_checked(), _journal(interrupted=True, faulted_at_start=["node 2 down"]), Expect().model_dump())
    assert v["format"] == 2 and set(v["run"]) == set(FACTS)
    assert v["run"]["interrupted"] is True and v["run"]["faulted_at_start"] == ["node 2 down"]
    assert not set(FACTS) & set(v["stats"]) and v["stats"]["faults"] == 2
    assert v["expected"]["valid"] is True and v["as_expected"] is True and "note" not in v


@pytest.mark.parametrize("journal, expect, stats, why", [
    (_journal(healed=False, heal_problems=["node 2: down"]), Expect(), {}, "a fault was not healed"),
    (_journal(nemesis_errors=["kill at 5s: LookupError"]), Expect(), {}, "a fault could not be applied"),
    (_journal(), Expect(valid=False), {}, "a negative control came out valid"),
    (_journal(), Expect(fires=["duplicate"]), {}, "the check that must fire did not"),
    (_journal(), Expect(min_ok_txns=51), {}, "too few transactions committed"),
    (_journal(), Expect(min_fenced=2), {}, "too few producers fenced"),
    (_journal(), Expect(min_recreated=1), {}, "no producer recreated after an indefinite outcome"),
    (_journal(), Expect(errors=["_TIMED_OUT"]), {}, "the incident's error was never met"),
    (_journal(), Expect(min_spark_batches=1), {}, "no Spark batch"),
    (_journal(not_recovered=["spark-job-0: driver pid 7 alive: True, last batch: None"]), Expect(), {},
     "a restarted driver finished no batch before the deadline (its replay was not judged)"),
])
def test_as_expected_fails_on_each_unmet_part(journal: Journal, expect: Expect, stats: dict[str, Any], why: str) -> None:
    assert verdict_file.assemble(_checked(**stats), journal, expect.model_dump())["as_expected"] is False, why


def test_as_expected_holds_when_every_part_is_met() -> None:
    expect = Expect(min_ok_txns=50, min_fenced=1, errors=["_TIMED_OUT"], min_spark_batches=1, min_recreated=1)
    v = verdict_file.assemble(_checked(errors_seen={"_TIMED_OUT": 1}, spark={"batches": 3}, recreated=1), _journal(),
                         expect.model_dump())
    assert v["as_expected"] is True


@pytest.mark.parametrize("valid", [True, False])
def test_a_hunt_takes_either_verdict_but_not_an_unmet_minimum(valid: bool) -> None:
    """``valid: null`` (the kip890-* hunts): a finding and a clean run are both answers; a run that
    committed too little or did not heal is not."""
    hunt = Expect(valid=None, min_ok_txns=50)
    assert verdict_file.assemble({**_checked(), "valid": valid}, _journal(), hunt.model_dump())["as_expected"] is True
    too_few = Expect(valid=None, min_ok_txns=51)
    assert verdict_file.assemble({**_checked(), "valid": valid}, _journal(), too_few.model_dump())["as_expected"] is False
    assert verdict_file.assemble({**_checked(), "valid": valid}, _journal(healed=False), hunt.model_dump())["as_expected"] is False


def test_the_checkers_typed_verdict_is_taken_through_to_json() -> None:
    from harness.checker.verdict import Verdict

    typed = Verdict.from_json(_checked())
    assert verdict_file.assemble(typed, _journal(), None)["run"]["healed"] is True


def test_check_keeps_the_expectation_and_the_run_facts(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, "duplicate", "rechecked")
    folder = RunFolder(run_dir)
    journal = Journal.load(folder)
    assert journal is not None
    journal.expected = Expect(valid=False, fires=["duplicate"]).model_dump()
    journal.interrupted = True
    journal.save(folder)
    folder.report.unlink(missing_ok=True)
    v = runner.rerun_check(run_dir).to_json()
    assert v == json.loads(folder.verdict.read_text())
    assert v["valid"] is False and v["expected"]["fires"] == ["duplicate"] and v["as_expected"] is True
    assert v["run"]["interrupted"] is True and v["stats"]["faults"] == 3  # the fault starts in the history
    assert folder.report.exists(), "check makes the report again"


def test_an_old_folder_without_a_journal_still_checks_and_says_what_it_lacks(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, "", "old")
    folder = RunFolder(run_dir)
    folder.journal.unlink()
    old = json.loads(folder.verdict.read_text())
    old["expected"] = Expect(min_ok_txns=1).model_dump()
    folder.verdict.write_text(json.dumps(old))
    v = runner.rerun_check(run_dir).to_json()
    assert v["run"] is None and "no journal.json" in v["note"]
    assert v["expected"]["min_ok_txns"] == 1 and v["as_expected"] is True  # the old verdict's expectation


def test_a_broken_journal_is_named(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path)
    folder.journal.write_text(json.dumps({"scenario": "s", "seed": "seven"}))
    with pytest.raises(ConfigError, match="journal.json: not a run journal"):
        Journal.load(folder)


def test_faults_as_they_ran_pair_start_with_stop_and_name_their_planned_entry() -> None:
    events = [{"time": at * SECOND, "f": "fault", "value": v} for at, v in FAULTS]
    schedule = [{"kind": "kill-leader", "at": 1.0}, {"kind": "partition", "at": 2.5}, {"kind": "pause", "at": 6.0}]
    runs = fault_runs(events, schedule)
    assert [(f.kind, f.planned, f.start_s, f.end_s) for f in runs] == [
        ("kill", 0, 2, 6), ("partition", 1, 3, 5), ("pause", 2, 7, None)]
    assert runs[0].detail["node"] == 2 and "phase" not in runs[0].detail


def test_faults_no_schedule_planned_have_no_planned_entry_and_repeats_share_theirs() -> None:
    events = [{"time": t * SECOND, "f": "fault", "value": {"kind": "kill", "phase": "start", "node": 1}} for t in (1, 2)]
    assert [f.planned for f in fault_runs(events, [{"kind": "kill", "at": 0.5, "every": 1}])] == [0, 0]
    assert [f.planned for f in fault_runs(events, [])] == [None, None]


def test_a_runs_narrative_lands_in_its_run_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def body(*args: Any) -> str:
        logging.getLogger("chaos.nemesis").info("nemesis: kill {'node': 2}")
        return "result"

    from clusters.backends.backends import Backend
    from harness.run import scenario

    monkeypatch.setattr(runner, "_run", body)
    assert runner.run(scenario.load("baseline"), Backend.local, 1, tmp_path / "run") == "result"
    logging.getLogger("harness.run.runner").info("after the run")
    said = (tmp_path / "run" / "run.log").read_text()
    assert "chaos.nemesis: nemesis: kill {'node': 2}" in said and "after the run" not in said


def test_the_report_reads_the_journal_and_still_shows_an_old_folder(tmp_path: Path) -> None:
    from harness.report import render
    from harness.report.data import load

    run_dir = make_run(tmp_path, "", "reported")
    folder = RunFolder(run_dir)
    journal = Journal.load(folder)
    assert journal is not None
    journal.healed, journal.heal_problems, journal.command = False, ["node 2: down"], "eos-chaos run from-the-journal"
    journal.save(folder)
    runner.rerun_check(run_dir)
    page = render(load(run_dir))
    assert "Not healed at the end: node 2: down" in page and "eos-chaos run from-the-journal" in page
    assert "Kafka</th><td>4.1.1" in page

    # a folder made before journals: format 1, the facts among the stats, no versions recorded
    folder.journal.unlink()
    old = json.loads(folder.verdict.read_text())
    old = {**old, "format": 1, "stats": {**old["stats"], "healed": False, "heal_problems": ["node 3: paused"]}}
    del old["run"]
    folder.verdict.write_text(json.dumps(old))
    page = render(load(run_dir))
    assert "Not healed at the end: node 3: paused" in page and "not recorded" in page
