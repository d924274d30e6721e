"""``eos-chaos hunt`` without a cluster: what a seed draws (the same every time, always a valid
scenario, only faults that cannot make a correct client unsafe), the summary's figures on a
synthetic matrix (a finding and its clean twin), and the command through the matrix's fakes
(tests/unit/test_matrix.py): its files, its page, resume, bad input. (A real hunt: docs/HUNT.md.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner, Result

from harness.campaigns import hunt, hunt_landings
from harness.campaigns.matrix import Cell, Definition, Matrix, MatrixRun, RunKey
from harness.cli import app
from harness.run import scenario
from tests.unit.test_cli import WIDE, _restore_logging  # noqa: F401 - the fixture puts the loggers back
from tests.unit.test_matrix import Fakes, _levels_supported, install_fakes  # noqa: F401 - autouse fixture

SEEDS = hunt.seeds(20261126, 40)


def cli(*args: str) -> Result:
    return CliRunner(env=WIDE).invoke(app, ["hunt", *args])


def test_a_seed_draws_the_same_scenario_every_time_and_seeds_draw_different_ones() -> None:
    assert hunt.seeds(7, 3) == hunt.seeds(7, 3) != hunt.seeds(8, 3)
    assert hunt.draw(SEEDS[0], 100) == hunt.draw(SEEDS[0], 100)
    drawn = [hunt.draw(s, 100) for s in SEEDS]
    assert len({json.dumps(d["faults"]) for d in drawn}) == len(SEEDS)
    shapes = {json.dumps(d["workloads"][0]["settings"], sort_keys=True) for d in drawn}
    assert len(shapes) > len(SEEDS) // 2, "the workloads' shapes come from the seed too"


def test_every_drawn_scenario_loads_and_its_faults_keep_to_the_run(tmp_path: Path) -> None:
    kinds: set[tuple[str, str]] = set()
    for path in hunt.write_scenarios(tmp_path, SEEDS, 60):
        sc = scenario.load(str(path))  # the scenario format's every check
        assert sc.name == path.stem and sc.duration == 60
        ends = [(f.at, f.at + f.duration) for f in sc.faults]
        assert ends and ends[0][0] >= hunt.START_S[0] and ends[-1][1] <= 60 - hunt.QUIET_END_S
        assert all(a[1] <= b[0] for a, b in zip(ends, ends[1:], strict=False)), "one fault at a time"
        kinds |= {(f.kind, str(getattr(f, "target", ""))) for f in sc.faults}
    assert {k for k, _ in kinds} == {"hold-requests", "drop-api-responses", "error-responses", "latency",
                                     "pause-workload", "kill-workload", "kill", "restart"}
    assert {("kill", "coordinator"), ("kill", "leader"), ("restart", "coordinator"), ("restart", "leader")} <= kinds


def test_a_hold_lasts_until_it_delivers_what_it_holds_when_drawn() -> None:
    """A fault that ends first lets the held request go early (one hold in eight of the fourth draw
    was so), and most holds deliver after the client gave up."""
    late = holds = 0
    for s in SEEDS:
        d = hunt.draw(s, 100)
        timeout_ms = d["workloads"][0]["client"]["request.timeout.ms"]
        for f in d["faults"]:
            if f["kind"] != "hold-requests":
                continue
            delivered_ms = f["hold_ms"] if f["until"] == "timeout" else timeout_ms + f["hold_ms"]
            assert f["duration"] * 1000 >= delivered_ms + hunt.HOLD_MARGIN_S * 1000 - 50, (s, f)  # to a tenth of a second
            assert f["duration"] * 1000 >= timeout_ms + 1000, (s, f)
            holds += 1
            late += delivered_ms > timeout_ms
    assert holds and late / holds >= 0.8, (late, holds)


def test_errors_are_only_ones_that_say_the_request_did_nothing_and_copier_apis_only_with_a_copier_or_app() -> None:
    for s in SEEDS:
        d = hunt.draw(s, 100)
        copier = any(w["kind"] == "copier" for w in d["workloads"])
        app = any(w["kind"] == "app" for w in d["workloads"])
        for f in d["faults"]:
            if f["kind"] == "error-responses":
                assert f["error"] in hunt.RETRIABLE_ERRORS[f["api"]], f
                assert f["error"] not in ("DUPLICATE_SEQUENCE_NUMBER", "PRODUCER_FENCED", "INVALID_TXN_STATE")
            if f.get("api") in hunt.COPIER_APIS:
                assert copier or app, f
            if f["kind"] in ("pause-workload", "kill-workload"):
                assert {"copier": copier, "app": app}.get(f["workload"], True), f
            if f.get("of") == hunt.PRODUCER_TXN_ID:
                assert app, "the producers' coordinator is named only where the default is the app's"


def _matrix(outcomes: dict[tuple[str, int], str]) -> Matrix:
    """A finished hunt matrix: (client, seed) -> outcome, one Kafka version, transaction version 2."""
    names = sorted({f"out/scenarios/hunt-{seed}.yaml" for _, seed in outcomes})
    clients = sorted({c for c, _ in outcomes})
    m = Matrix(Definition(names, clients, [2], 1, 5, "local", None, ["4.4.0"]))
    for (client, seed), outcome in outcomes.items():
        name = f"out/scenarios/hunt-{seed}.yaml"
        valid: bool | str = "unknown" if outcome == "unknown" else outcome == "valid"
        found = {"torn-transaction": 2, "aborted-read": 1} if outcome == "invalid" else {}
        run = MatrixRun(name, client, "4.4.0", 2, 0, 99, f"runs/{client}/{seed}", valid, None, found, 100.0,
                        command=f"eos-chaos run {name} --library {client}")
        m.runs[RunKey(Cell(name, client, "4.4.0", 2), 0)] = run
    return m


def test_the_summary_counts_detection_over_the_judged_seeds_and_the_median_first_anomaly(tmp_path: Path) -> None:
    m = _matrix({("confluent-kafka", 1): "invalid", ("confluent-kafka", 2): "invalid", ("confluent-kafka", 3): "valid",
                 ("confluent-kafka", 4): "unknown", ("java@4.4.0", 1): "valid", ("java@4.4.0", 2): "valid",
                 ("java@4.4.0", 3): "valid", ("java@4.4.0", 4): "valid"})
    firsts = {tmp_path / "runs/confluent-kafka/1": 12.5, tmp_path / "runs/confluent-kafka/2": 30.5}
    lates = {tmp_path / "runs/confluent-kafka/1": {"EndTxn": 2, "Produce": 1}, tmp_path / "runs/confluent-kafka/2": {"EndTxn": 1}}
    s = hunt.summary(m, tmp_path, first_of=lambda d: firsts[d], late_of=lambda d: lates.get(d, {}),
                     landed_of=lambda d: hunt_landings.Landings())
    exposed, safe = s["columns"]
    assert (exposed["client"], exposed["found"], exposed["judged"], exposed["unknown"]) == ("confluent-kafka", 2, 3, 1)
    assert exposed["detection_rate"] == 0.667 and exposed["median_first_anomaly_s"] == 21.5
    assert exposed["checks"] == {"aborted-read": 2, "torn-transaction": 2}
    assert [r["seed"] for r in exposed["runs"]] == [1, 2, 3, 4] and exposed["runs"][0]["replay"].startswith("eos-chaos run")
    # the clean twin: a client that stayed valid in every seed
    assert (safe["found"], safe["detection_rate"], safe["checks"], safe["median_first_anomaly_s"]) == (0, 0.0, {}, None)
    assert all(r["replay"] is None for r in safe["runs"])
    page = hunt.page(s, "hunt-x")
    assert "| confluent-kafka | 4.4.0 | 2 | 4 | 2 | 1 | 67% | aborted-read (2), torn-transaction (2) | 21.5 s | 0.5 |" in page
    assert "| java@4.4.0 | 4.4.0 | 2 | 4 | 0 | 0 | 0% | - | - | 0 |" in page
    assert "| 1 | invalid | torn-transaction: 2, aborted-read: 1 | 12.5 s | EndTxn 2, Produce 1 | - | `eos-chaos run" in page


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Fakes:
    return install_fakes(monkeypatch, tmp_path)


def test_the_command_writes_the_scenarios_the_matrix_and_its_page_and_resumes(fakes: Fakes, tmp_path: Path) -> None:
    seeds = hunt.seeds(3, 2)
    fakes.outcome = lambda source, lib, seed: "invalid" if lib == "confluent-kafka" and str(seeds[0]) in source else "valid"
    out = tmp_path / "h"
    r = cli("--seeds", "2", "--seed", "3", "--duration", "30", "--clients", "confluent-kafka,java@4.4.0",
            "--transaction-versions", "2", "--out", str(out))
    assert r.exit_code == 1, r.output
    assert sorted(p.name for p in (out / "scenarios").iterdir()) == sorted(f"hunt-{s}.yaml" for s in seeds)
    assert yaml.safe_load((out / "scenarios" / f"hunt-{seeds[0]}.yaml").read_text()) == hunt.draw(seeds[0], 30)
    s = json.loads((out / hunt.HUNT_JSON).read_text())
    assert [(c["client"], c["found"], c["judged"]) for c in s["columns"]] == [("confluent-kafka", 1, 2), ("java@4.4.0", 0, 2)]
    assert "found something in 1 of 2 judged seeds (50%)" in r.output and (out / hunt.HUNT_MD).is_file()
    assert (out / "matrix.json").is_file() and len(fakes.runs) == 4
    again = cli("--seeds", "2", "--duration", "30", "--clients", "confluent-kafka,java@4.4.0", "--transaction-versions",
                "2", "--out", str(out))
    assert again.exit_code == 1 and len(fakes.runs) == 4, "a resume runs nothing finished"


@pytest.mark.parametrize(("args", "message"), [
    (["--duration", "5"], "--duration 5: give 20 to 3600 seconds"),
    (["--clients", "teleport"], "--clients"),
    (["--transaction-versions", "7"], "--transaction-versions"),
])
def test_bad_input_is_exit_2_naming_the_flag_and_nothing_is_written(args: list[str], message: str, fakes: Fakes,
                                                                    tmp_path: Path) -> None:
    r = cli("--seeds", "1", "--out", str(tmp_path / "h"), *args)
    assert r.exit_code == 2 and message in r.output, r.output
    assert fakes.runs == [] and fakes.events == []


@pytest.mark.parametrize("where", ["new", "empty", "default"])
def test_a_refused_hunt_leaves_no_folder_and_the_corrected_command_runs(where: str, fakes: Fakes, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A refused hunt left its folder with the drawn scenarios in it, which then refused the
    corrected command ("holds other files but no matrix.json")."""
    monkeypatch.setenv("EOS_CHAOS_RESULTS", str(tmp_path / "results"))
    (tmp_path / "results").mkdir()
    out = tmp_path / "h"
    if where == "empty":
        out.mkdir()
    where_args = [] if where == "default" else ["--out", str(out)]
    r = cli("--seeds", "1", "--duration", "30", "--clients", "teleport", *where_args)
    assert r.exit_code == 2 and "--clients" in r.output, r.output
    assert list((tmp_path / "results").iterdir()) == [] and (list(out.iterdir()) == [] if where == "empty"
                                                               else not out.exists())
    if where != "default":
        r = cli("--seeds", "1", "--duration", "30", *where_args)
        assert r.exit_code == 0 and (out / "matrix.json").is_file(), r.output


def test_a_dry_run_prints_what_each_seed_draws_and_writes_nothing(fakes: Fakes, tmp_path: Path) -> None:
    r = cli("--seeds", "2", "--seed", "3", "--dry-run", "--out", str(tmp_path / "h"))
    assert r.exit_code == 0, r.output
    assert all(f"hunt-{s}.yaml: Drawn by eos-chaos hunt from seed {s}" in r.output for s in hunt.seeds(3, 2))
    assert "nothing started (--dry-run)" in r.output
    assert not (tmp_path / "h").exists() and fakes.runs == []


def test_a_late_request_is_one_delivered_after_its_client_gave_up(tmp_path: Path) -> None:
    """Delivered after the client closed its connection, or held past its request timeout: late. Its
    clean twins: held within the timeout with the client still there, and a request answered by the
    proxy itself (never delivered)."""
    (tmp_path / "scenario.json").write_text(json.dumps({"workloads": [
        {"kind": "txn-producer", "client": {"request.timeout.ms": 1000}}, {"kind": "reader"}]}))

    def deliver(api: str, held_ms: float, gone: bool) -> dict[str, object]:
        return {"event": "deliver", "api": api, "held_ms": held_ms, "client_gone": gone, "unix_us": 1}

    events = [deliver("EndTxn", 300, True), deliver("EndTxn", 1100, False), deliver("Produce", 1000, False),
              deliver("EndTxn", 900, False), deliver("AddPartitionsToTxn", 50, False),
              {"event": "respond", "api": "EndTxn", "held_ms": 5000, "client_gone": True, "unix_us": 1}]
    (tmp_path / "wire-events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    assert hunt.late_requests(tmp_path) == {"EndTxn": 2, "Produce": 1}
    (tmp_path / "wire-events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events[3:]))
    assert hunt.late_requests(tmp_path) == {}
    (tmp_path / "scenario.json").unlink()
    assert hunt.late_requests(tmp_path) == {}, "a folder cut short has no count, and no error"


def test_a_resumed_hunt_keeps_the_scenario_files_its_runs_ran(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A later version of the draw may draw a seed differently: the folder's file is what ran, so it is
    kept (with a warning), and only a missing one is drawn."""
    first, second = hunt.write_scenarios(tmp_path, [11, 12], 60)
    older = first.read_text().replace("hunt-11", "hunt-11 as an older draw wrote it")
    first.write_text(older)
    second.unlink()
    with caplog.at_level("WARNING"):
        again = hunt.write_scenarios(tmp_path, [11, 12], 60)
    assert again == [first, second] and first.read_text() == older
    assert yaml.safe_load(second.read_text()) == hunt.draw(12, 60)
    assert "draws seed 11 differently" in caplog.text and "seed 12" not in caplog.text
