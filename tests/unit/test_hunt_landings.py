"""A hunt's seeds that found nothing are counted with the faults they landed inside open transactions,
from hand-made run folders (journal.json with fault hits): each rule of ``inside_transaction`` fires
alone with a clean twin beside it, and the summary and its page total them over the empty seeds only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.campaigns import hunt, hunt_landings
from harness.campaigns.matrix import Cell, Definition, Matrix, MatrixRun, RunKey
from harness.rundir.journal import FaultHit, FaultRun, Journal
from harness.rundir.runfolder import RunFolder


def _fault(kind: str, hit: dict[str, Any] | None, **detail: Any) -> FaultRun:
    return FaultRun(kind=kind, planned=0, start_s=10.0, end_s=12.0, detail=detail,
                    hit=None if hit is None else FaultHit(aimed_at="x", **hit))


#: each inside-a-transaction rule firing, and its clean twin
INSIDE = [
    _fault("hold-requests", {"txns_open": 1, "requests": {"hold": 2}, "hit": True}, api=["EndTxn"], target="coordinator"),
    _fault("kill", {"txns_open": 2, "txns_open_at_start": 1, "hit": True}, target="coordinator", node=2),
    _fault("kill-workload", None, workload="app-0", in_transaction={"open": ["eos-app-1"], "known": ["eos-app-1"]}),
]
OUTSIDE = [
    _fault("hold-requests", {"txns_open": 3, "requests": {"hold": 0}, "hit": False}, api=["EndTxn"]),  # caught nothing
    _fault("drop-api-responses", {"txns_open": 0, "requests": {"drop-response": 1}, "hit": True}, api="Produce"),  # none open
    _fault("kill", {"txns_open": 2, "txns_open_at_start": 0, "hit": True}, target="leader", of="hunt-in/0"),  # opened later
    _fault("kill-workload", None, workload="app-0", in_transaction={"open": [], "known": ["eos-app-1"]}),  # wait ran out
    _fault("pause-workload", {"txns_open": 0, "txns_open_at_start": 0, "hit": False}, workload="txn-producer-0"),
]


def _run_folder(d: Path, faults: list[FaultRun], errors: list[str] | None = None) -> Path:
    d.mkdir(parents=True)
    Journal(scenario="hunt-1", source="hunt-1.yaml", resolved={}, seed=1, backend="local", faults=faults,
            nemesis_errors=errors or []).save(RunFolder(d))
    return d


@pytest.mark.parametrize("f", INSIDE, ids=lambda f: f.kind)
def test_a_fault_inside_an_open_transaction_is_counted(f: FaultRun) -> None:
    assert hunt_landings.inside_transaction(f) is True


@pytest.mark.parametrize("f", OUTSIDE, ids=lambda f: f"{f.kind}-{f.detail}")
def test_its_clean_twin_is_not(f: FaultRun) -> None:
    assert hunt_landings.inside_transaction(f) is False


def test_a_run_folder_gives_its_faults_and_landings_by_what_they_were(tmp_path: Path) -> None:
    x = hunt_landings.landings(_run_folder(tmp_path / "r", [*INSIDE, *OUTSIDE]))
    assert (x.faults, x.recorded, x.hit_nothing, x.landed) == (8, 6, 2, 3)
    assert x.in_transaction == {"hold-requests EndTxn": 1, "kill coordinator": 1, "kill-workload app": 1}
    assert hunt_landings.landings(tmp_path / "missing") == hunt_landings.Landings(), "a folder cut short: no count, no error"
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "journal.json").write_text("{not json")
    assert hunt_landings.landings(tmp_path / "broken") == hunt_landings.Landings()


def _matrix(tmp_path: Path, outcomes: dict[int, tuple[str, list[FaultRun]]]) -> Matrix:
    names = sorted(f"out/scenarios/hunt-{seed}.yaml" for seed in outcomes)
    m = Matrix(Definition(names, ["java@4.4.0"], [2], 1, 5, "local", None, ["4.4.0"]))
    for seed, (outcome, faults) in outcomes.items():
        name = f"out/scenarios/hunt-{seed}.yaml"
        _run_folder(tmp_path / f"runs/{seed}", faults)
        valid: bool | str = "unknown" if outcome == "unknown" else outcome == "valid"
        found = {"torn-transaction": 1} if outcome == "invalid" else {}
        m.runs[RunKey(Cell(name, "java@4.4.0", "4.4.0", 2), 0)] = MatrixRun(
            name, "java@4.4.0", "4.4.0", 2, 0, 99, f"runs/{seed}", valid, None, found, 100.0,
            command=f"eos-chaos run {name}")
    return m


def test_the_summary_counts_every_empty_seed_with_its_landings_and_links_a_findings_kit(tmp_path: Path) -> None:
    m = _matrix(tmp_path, {1: ("invalid", [*INSIDE]), 2: ("valid", [INSIDE[0], INSIDE[1], *OUTSIDE]),
                           3: ("valid", OUTSIDE), 4: ("unknown", INSIDE)})
    (tmp_path / "runs/1/repro").mkdir()
    (tmp_path / "runs/1/repro/REPORT.md").write_text("# a kit\n")
    s = hunt.summary(m, tmp_path, first_of=lambda d: 20.0, late_of=lambda d: {})
    (c,) = s["columns"]
    assert c["nothing_found"] == {"seeds": 2, "faults": 12, "in_transaction": 2, "median_in_transaction": 1, "failed": 0,
                                  "seeds_without_landing": 1, "between_brokers": 0, "between_brokers_in_transaction": 0,
                                  "by_fault": {"hold-requests EndTxn": 1, "kill coordinator": 1}}, \
        "the finding's and the unknown seed's landings are not evidence of an empty search"
    runs = {r["seed"]: r for r in c["runs"]}
    assert runs[2]["landings"]["landed"] == 2 and runs[3]["landings"] == {
        "faults": 5, "recorded": 4, "hit_nothing": 2, "landed": 0, "in_transaction": {}, "between_brokers": 0,
        "landed_between_brokers": 0, "failed": 0}
    assert runs[1]["kit"] == "runs/1/repro/REPORT.md" and runs[2]["kit"] is None
    page = hunt.page(s, "hunt-x")
    assert ("Nothing found in 2 seeds. Their 12 faults landed 2 times inside an open transaction (median 1 a seed; "
            "1 seeds landed none): hold-requests EndTxn 1, kill coordinator 1.") in page
    assert "| 3 | valid | - | - | - | 5 (0) | - | - |" in page
    assert "| 2 | valid | - | - | - | 7 (2: hold-requests EndTxn 1, kill coordinator 1) | - | - |" in page
    assert "[REPORT.md](runs/1/repro/REPORT.md), then `eos-chaos minimize runs/1`" in page


def test_a_seed_whose_fault_failed_says_so_and_is_not_counted_as_a_whole_search(tmp_path: Path) -> None:
    """A fault that failed at its time (the hunt's held WriteTxnMarkers, whose partition was not
    renamed to the run's) did not run: the seed's row and the column's sentence say how many, rather
    than count the seed as having tried all it drew; its twin, a seed whose faults all ran, says none."""
    error = "hold-requests at 2.3s: LookupError: no metadata for hunt-in-0"
    assert hunt_landings.landings(_run_folder(tmp_path / "f", OUTSIDE[:2], [error])).failed == 1
    assert hunt_landings.landings(_run_folder(tmp_path / "ok", OUTSIDE[:2])).failed == 0
    m = _matrix(tmp_path / "m", {1: ("valid", OUTSIDE[:2]), 2: ("valid", OUTSIDE[:2])})
    _run_folder(tmp_path / "m/runs/1-failed", OUTSIDE[:2], [error])
    key = next(k for k in m.runs if k.cell.scenario.endswith("hunt-1.yaml"))
    m.runs[key].run_dir = "runs/1-failed"
    s = hunt.summary(m, tmp_path / "m", first_of=lambda d: 1.0, late_of=lambda d: {})
    assert s["columns"][0]["nothing_found"]["failed"] == 1
    page = hunt.page(s, "h")
    assert "| 1 | valid | - | - | - | 2 (0); 1 failed | - | - |" in page and "| 2 | valid | - | - | - | 2 (0) | - | - |" in page
    assert "1 fault of their scenarios failed and did not run (the runs' reports say why)" in page


def test_a_column_where_every_seed_found_something_says_nothing_of_empty_seeds(tmp_path: Path) -> None:
    s = hunt.summary(_matrix(tmp_path, {1: ("invalid", INSIDE)}), tmp_path, first_of=lambda d: 1.0, late_of=lambda d: {})
    assert s["columns"][0]["nothing_found"]["seeds"] == 0 and "Nothing found in" not in hunt.page(s, "h")


def test_repro_kits_are_written_for_findings_only_and_a_kit_that_fails_is_skipped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.report import loaded, repro, repro_md

    m = _matrix(tmp_path, {1: ("invalid", INSIDE), 2: ("valid", OUTSIDE), 3: ("invalid", INSIDE)})
    gathered: list[Path] = []

    def gather(d: Path, verdict: object) -> object:
        gathered.append(d)
        if d.name == "3":
            raise ValueError("no history")
        return d

    monkeypatch.setattr(loaded, "read_verdict", lambda d: None)
    monkeypatch.setattr(repro, "gather", gather)
    monkeypatch.setattr(repro_md, "write", lambda r, out: [(out.mkdir(), out / "REPORT.md")[1].write_text("kit")])
    assert hunt.repro_kits(m, tmp_path) == [tmp_path / "runs/1/repro"]
    assert sorted(p.name for p in gathered) == ["1", "3"], "a valid run gets no kit"
    gathered.clear()
    assert hunt.repro_kits(m, tmp_path) == [] and [p.name for p in gathered] == ["3"], "a kit already there is kept"
