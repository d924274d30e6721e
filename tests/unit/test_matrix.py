"""``eos-chaos matrix`` without a cluster: cells and their seeds, bad input (exit 2, nothing
started), resume (finished runs skipped, a run cut short redone, a changed matrix refused unless it
only grows), one cluster per transaction version, matrix.json's schema, exit codes and the page in
every cell state. The runs are the soak's ``one_run`` replaced by a fake that writes a run folder
and returns the outcome a test chooses. (A real 2-cell matrix: tests/chaos/test_matrix.py.)"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from clusters.backends.backends import Backend
from clusters.builds import pins
from harness.base.errors import ConfigError
from harness.campaigns import matrix, soak
from harness.campaigns.matrix import Cell, Definition, Matrix, MatrixRun, RunKey
from harness.campaigns.soak import SoakRun
from harness.cli import app
from harness.report.matrix_page import STATES, render_matrix
from harness.run import runner, scenario
from harness.run.scenario import Scenario
from harness.rundir.runfolder import new_run_dir
from harness.workloads import clients
from harness.workloads.clients import java_build
from tests.unit.test_cli import WIDE, _restore_logging  # noqa: F401 - the fixture puts the loggers back after each invocation

#: ``clients.prepare`` itself (the ``fakes`` fixture replaces it).
PREPARE = clients.prepare
#: What new_cluster was called with (the fake below, which also takes the cluster-level keyword).
NEW_CLUSTER_CALLS: list[dict[str, Any]] = []


@pytest.fixture(autouse=True)
def _levels_supported(monkeypatch: pytest.MonkeyPatch) -> None:
    """``clusters.backends.backends.new_cluster`` with the ``transaction_version`` keyword of issue 15's
    cluster side (not in every build: the matrix refuses levels without it)."""

    def new_cluster(backend: Backend, arts: Any, run_dir: Path, port_base: int | None = None,
                    overrides: dict[str, str] | None = None, detached: bool = False,
                    transaction_version: int | None = None, wire_between_brokers: bool = False) -> str:
        NEW_CLUSTER_CALLS.append({"overrides": overrides, **({"transaction_version": transaction_version}
                                                             if transaction_version is not None else {}),
                                  **({"wire_between_brokers": True} if wire_between_brokers else {})})
        return "cluster"

    NEW_CLUSTER_CALLS.clear()
    monkeypatch.setattr(matrix.backends, "new_cluster", new_cluster)


def cli(*args: str) -> Result:
    return CliRunner(env=WIDE).invoke(app, ["matrix", *args])


class FakeCluster:
    """Stands in for a cluster: records starts and stops."""

    def __init__(self, name: str, events: list[str], kafka_version: str = pins.KAFKA_VERSION,
                 wire_between_brokers: bool = False) -> None:
        self.name, self.events = name, events
        self.artifacts = SimpleNamespace(kafka_version=kafka_version)  # the release it runs, as a real one carries it
        self.topology = SimpleNamespace(wire_between_brokers=wire_between_brokers)  # its links between brokers routed

    def start(self) -> None:
        self.events.append(f"start {self.name}")

    def stop(self) -> None:
        self.events.append(f"stop {self.name}")


class Fakes:
    """What the matrix started: clusters (by level) and runs (scenario, client, level, seed)."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.runs: list[tuple[str, str, Any, int]] = []
        #: (scenario, library, seed) -> "valid" | "invalid" | "unknown" | "error" | "interrupt"
        self.outcome: Callable[[str, str, int], str] = lambda s, lib, seed: "valid"
        self.shared: FakeCluster | None = None
        #: (scenario, library, seed) -> faults of the run that failed and did not run
        self.faults_failed: Callable[[str, str, int], int] = lambda s, lib, seed: 0
        #: the client libraries the matrix made ready (clients.prepare), with the flag it named
        self.prepared: list[tuple[list[str], str | None]] = []


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Fakes:
    return install_fakes(monkeypatch, tmp_path)


def install_fakes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Fakes:
    """The fakes in place of clusters, runs and builds (the ``fakes`` fixture; other test files' too)."""
    f = Fakes()
    monkeypatch.setenv("EOS_CHAOS_STATE", str(tmp_path / "state"))

    def level_cluster(backend: Backend, arts: Any, run_dir: Path, level: Any, overrides: dict[str, str],
                      wire_between_brokers: bool = False) -> FakeCluster:
        return FakeCluster(f"tv-{matrix.level_name(level)}" + (f" {overrides}" if overrides else ""), f.events)

    def one_run(sc: Scenario, source: str, backend: Backend, seed: int, parent: Path, cluster: FakeCluster) -> SoakRun:
        lib = sc.workloads[0].library
        level = cluster.name.split()[0].removeprefix("tv-")
        f.runs.append((source, lib, level, seed))
        run_dir = new_run_dir(sc.name, parent)
        (run_dir / "report.html").write_text("<html></html>")
        what = f.outcome(source, lib, seed)
        if what == "interrupt":
            return SoakRun(sc.name, seed, str(run_dir), None, None, {}, None, None, 1.0,
                           error="interrupted before its verdict", interrupted=True)
        if what == "error":
            return SoakRun(sc.name, seed, str(run_dir), None, None, {}, None, None, 1.0, error="ClusterError: no leader")
        valid: bool | str = {"valid": True, "invalid": False, "unknown": "unknown"}[what]
        run = SoakRun(sc.name, seed, str(run_dir), valid, valid is True, {"duplicate": 3, "lost-write": 1} if valid is False else {},
                      10.0, 60.0, 12.5)
        run.command = f"eos-chaos run {source} --backend {backend.value} --seed {seed} --duration 10"
        run.faults_failed = f.faults_failed(source, lib, seed)
        return run

    monkeypatch.setattr(matrix, "level_cluster", level_cluster)
    monkeypatch.setattr(matrix.clients, "prepare", lambda libs, flag=None: f.prepared.append((list(libs), flag)))
    monkeypatch.setattr(matrix.artifacts, "ensure", lambda *a, **kw: None)
    monkeypatch.setattr(matrix.artifacts, "ready", lambda *a, **kw: None)
    monkeypatch.setattr(soak, "one_run", one_run)
    monkeypatch.setattr(soak, "heal_all", lambda cluster: [])
    monkeypatch.setattr(runner, "cluster_that_is_up", lambda *a, **kw: f.shared)
    monkeypatch.setattr(runner, "prepare_attached", lambda cluster: [])
    return f


def definition(**kw: Any) -> Definition:
    base: dict[str, Any] = {"scenarios": "baseline,leader-kill", "clients_": "confluent-kafka,java@3.9.1",
                            "levels": "0,2", "seeds": 2, "master_seed": 5, "backend": Backend.local,
                            "duration": 40.0, "kafka_version": None}  # leader-kill's last fault is at 32 s
    return matrix.define(**{**base, **kw})[0]


# ---- cells and seeds ----

def test_cells_are_every_scenario_client_and_level_run_with_the_soaks_seeds() -> None:
    d = definition()
    kv = pins.KAFKA_VERSION
    assert d.cells()[:3] == [Cell("baseline", "confluent-kafka", kv, 0), Cell("baseline", "java@3.9.1", kv, 0),
                             Cell("leader-kill", "confluent-kafka", kv, 0)]
    assert len(d.cells()) == 8 and len(d.run_keys()) == 16 and [c.level for c in d.cells()] == [0] * 4 + [2] * 4
    draw = soak.seeds(5)
    assert d.run_seeds() == [draw(), draw()]
    assert definition(seeds=4).run_seeds()[:2] == d.run_seeds(), "more seeds keep the first ones"
    assert definition(master_seed=6).run_seeds() != d.run_seeds()


def test_a_client_is_normalised_and_default_is_kafkas_own_level() -> None:
    d = definition(clients_="java", levels="default,1")
    assert d.clients == ["java@4.4.0"] and d.levels == [None, 1]


@pytest.mark.parametrize(("kw", "message"), [
    ({"scenarios": "baseline,nope"}, r"--scenarios: unknown \['nope'\]; allowed: app-flink, app-flink-alos, app-go-copier, "),
    ({"scenarios": "baseline, baseline"}, "--scenarios: 'baseline' is given twice"),
    ({"scenarios": " , "}, "--scenarios is empty"),
    ({"clients_": "rust"}, "--clients: library 'rust': unknown client library; allowed: confluent-kafka, java"),
    ({"clients_": "java,java@4.4.0"}, r"--clients: 'java@4.4.0' is given twice \(the same as 'java'\)"),
    ({"clients_": "java@4"}, "expected java@MAJOR.MINOR.PATCH"),
    ({"levels": "0,3"}, "--transaction-versions: '3' is not a transaction version; allowed: 0, 1, 2 or default"),
    ({"levels": "2,2"}, "--transaction-versions: '2' is given twice"),
    ({"scenarios": "negative-duplicates", "clients_": "confluent-kafka,java"},
     "--clients java@4.4.0: a txn-producer with transactional: false runs on confluent-kafka only"),
])
def test_bad_input_names_the_flag_and_what_is_allowed(kw: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        definition(**kw)
    assert info.value.exit_code == 2


@pytest.mark.parametrize("args", [
    ["--scenarios", "baseline,nope"], ["--scenarios", "baseline", "--clients", "rust"],
    ["--scenarios", "baseline", "--transaction-versions", "4"], ["--scenarios", "baseline", "--seeds", "0"],
    ["--scenarios", "baseline", "--clients", "confluent-kafka,confluent-kafka"],
    ["--scenarios", "negative-duplicates", "--clients", "java@3.9.1"], ["--scenarios", "baseline", "--duration", "nan"],
])
def test_bad_input_on_the_command_line_is_exit_2_with_nothing_started(args: list[str], fakes: Fakes, tmp_path: Path) -> None:
    r = cli(*args, "--out", str(tmp_path / "m"))
    assert r.exit_code == 2, r.output
    assert "error" in r.output.lower() and "internal error" not in r.output
    assert fakes.events == [] and fakes.runs == [] and not (tmp_path / "m").exists()


def test_an_out_folder_that_is_a_file_or_holds_other_things_is_refused(fakes: Fakes, tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    assert "is a file, not a matrix folder" in cli("--scenarios", "baseline", "--out", str(tmp_path / "f")).output
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x").write_text("x")
    r = cli("--scenarios", "baseline", "--out", str(tmp_path / "d"))
    assert r.exit_code == 2 and "holds other files but no matrix.json" in r.output
    assert fakes.runs == []


def test_a_level_the_release_does_not_take_is_refused_before_anything_runs(fakes: Fakes, tmp_path: Path) -> None:
    # with no level the release takes: nothing could run (one it takes besides: an unsupported cell,
    # tests/unit/test_matrix_kafka_versions.py)
    r = cli("--scenarios", "baseline", "--transaction-versions", "2", "--kafka-version", "3.9.1",
            "--out", str(tmp_path / "m"))
    assert r.exit_code == 2 and "--transaction-versions" in r.output and "3.9" in r.output, r.output
    assert fakes.runs == [] and fakes.events == []


def test_the_level_reaches_new_cluster_only_when_it_is_not_the_default(tmp_path: Path) -> None:
    matrix.level_cluster(Backend.local, None, tmp_path, None, {})  # type: ignore[arg-type]
    matrix.level_cluster(Backend.local, None, tmp_path, 2, {"a": "b"})  # type: ignore[arg-type]
    matrix.level_cluster(Backend.local, None, tmp_path, None, {}, wire_between_brokers=True)  # type: ignore[arg-type]
    assert NEW_CLUSTER_CALLS == [{"overrides": {}}, {"overrides": {"a": "b"}, "transaction_version": 2},
                                 {"overrides": {}, "wire_between_brokers": True}]


# ---- running: clusters, exit codes, matrix.json ----

def test_one_cluster_per_level_up_for_its_runs_and_down_after(fakes: Fakes, tmp_path: Path) -> None:
    r = cli("--scenarios", "baseline,leader-kill", "--clients", "confluent-kafka,java@3.9.1",
            "--transaction-versions", "0,2", "--seeds", "2", "--seed", "5", "--out", str(tmp_path / "m"))
    assert r.exit_code == 0, r.output
    assert fakes.events == ["start tv-0", "stop tv-0", "start tv-2", "stop tv-2"]
    assert len(fakes.runs) == 16 and {x[2] for x in fakes.runs[:8]} == {"0"} and {x[2] for x in fakes.runs[8:]} == {"2"}
    draw = soak.seeds(5)
    seeds = [draw(), draw()]
    assert [x[3] for x in fakes.runs[:2]] == seeds and [x[3] for x in fakes.runs[2:4]] == seeds  # every cell the same seeds


def test_the_default_level_runs_on_the_cluster_that_is_up_and_other_levels_make_it_wait(fakes: Fakes, tmp_path: Path) -> None:
    fakes.shared = FakeCluster("tv-default shared", fakes.events)
    r = cli("--scenarios", "baseline", "--transaction-versions", "2,default", "--seed", "5", "--out", str(tmp_path / "m"))
    assert r.exit_code == 0, r.output
    # the default level first (on the cluster that is up), then it makes way, and comes back after
    assert fakes.events == ["stop tv-default shared", "start tv-2", "stop tv-2", "start tv-default shared"]
    assert [x[2] for x in fakes.runs] == ["default", "2"]


def test_a_default_level_cluster_of_its_own_goes_down_before_the_next_level(fakes: Fakes, tmp_path: Path) -> None:
    r = cli("--scenarios", "baseline", "--transaction-versions", "default,1", "--seed", "5", "--out", str(tmp_path / "m"))
    assert r.exit_code == 0, r.output
    assert fakes.events == ["start tv-default", "stop tv-default", "start tv-1", "stop tv-1"]


def test_a_scenario_with_broker_settings_gets_a_cluster_of_its_level_with_them(fakes: Fakes, tmp_path: Path) -> None:
    r = cli("--scenarios", "incident-txn-expiry,baseline", "--transaction-versions", "2", "--duration", "10",
            "--seed", "1", "--out", str(tmp_path / "m"))
    assert r.exit_code == 0, r.output
    starts = [e for e in fakes.events if e.startswith("start")]
    assert len(starts) == 2 and "start tv-2" in starts and "'transactional.id.expiration.ms': '5000'" in "".join(starts)
    assert [e.replace("start", "stop") for e in starts] == [e for e in fakes.events if e.startswith("stop")]


@pytest.mark.parametrize(("outcomes", "code"), [({}, 0), ({7: "invalid"}, 1), ({7: "unknown"}, 3), ({7: "error"}, 3),
                                                ({7: "unknown", 8: "invalid"}, 1)])
def test_exit_code_0_valid_1_a_finding_3_unknown(outcomes: dict[int, str], code: int, fakes: Fakes, tmp_path: Path) -> None:
    d = definition(scenarios="baseline", clients_="confluent-kafka", levels="default", seeds=2)
    seeds = d.run_seeds()
    fakes.outcome = lambda s, lib, seed: outcomes.get(7 if seed == seeds[0] else 8, "valid")
    r = cli("--scenarios", "baseline", "--seeds", "2", "--seed", "5", "--out", str(tmp_path / "m"))
    assert r.exit_code == code, r.output


def test_matrix_json_per_cell_counts_checks_rate_and_the_first_failing_seed(fakes: Fakes, tmp_path: Path) -> None:
    d = definition(scenarios="baseline", clients_="confluent-kafka,java@3.9.1", levels="2", seeds=3)
    seeds = d.run_seeds()
    fakes.outcome = lambda s, lib, seed: "invalid" if lib == "java@3.9.1" and seed != seeds[0] else "valid"
    r = cli("--scenarios", "baseline", "--clients", "confluent-kafka,java@3.9.1", "--transaction-versions", "2",
            "--seeds", "3", "--seed", "5", "--duration", "10", "--out", str(tmp_path / "m"))
    assert r.exit_code == 1, r.output
    assert "replay: eos-chaos run baseline --backend local --seed" in r.output
    data = json.loads((tmp_path / "m" / "matrix.json").read_text())
    assert set(data) == {"format", "definition", "run_seeds", "started", "seconds", "sessions", "stopped_because",
                         "healed_at_end", "heal_problems", "totals", "cells", "runs", "harness", "shard", "shares", "merged"}
    assert data["format"] == 3 and data["run_seeds"] == seeds and data["stopped_because"] == "every run done"
    assert data["definition"]["levels"] == [2] and data["definition"]["clients"] == ["confluent-kafka", "java@3.9.1"]
    assert data["totals"] == {"runs": 6, "wanted": 6, "valid": 4, "invalid": 2, "unknown": 0, "not_run": 0}
    ok, java = data["cells"]
    assert (ok["state"], ok["valid"], ok["reproduction_rate"], ok["first_failing"], ok["checks"]) == ("valid", 3, 0.0, None, {})
    assert (java["state"], java["runs"], java["invalid"], java["reproduction_rate"]) == ("invalid", 3, 2, 0.667)
    assert java["checks"] == {"duplicate": {"runs": 2, "anomalies": 6}, "lost-write": {"runs": 2, "anomalies": 2}}
    assert java["seconds"] == 37.5
    first = java["first_failing"]
    assert first["seed"] == seeds[1] and first["index"] == 1 and first["outcome"] == "invalid"
    assert first["replay"] == (f"eos-chaos run baseline --backend local --seed {seeds[1]} --duration 10 "
                               "--library java@3.9.1 --transaction-version 2")
    assert (tmp_path / "m" / first["report"]).exists() and not Path(first["report"]).is_absolute()
    run = data["runs"][0]
    assert set(run) == {"scenario", "client", "kafka_version", "transaction_version", "index", "seed", "run_dir", "valid", "as_expected",
                        "anomalies", "seconds", "error", "command", "faults_failed"}
    assert (ok["faults_failed"], ok["runs_with_failed_faults"]) == (0, 0)
    assert run["run_dir"].startswith(f"runs/kafka-{pins.KAFKA_VERSION}/tv-2/confluent-kafka/")
    assert Matrix.from_json(data).as_json()["cells"] == data["cells"]


def test_a_valid_cell_whose_faults_failed_says_how_many_in_matrix_json_and_on_its_page(fakes: Fakes,
                                                                                        tmp_path: Path) -> None:
    d = definition(scenarios="baseline", clients_="confluent-kafka,java@3.9.1", levels="2", seeds=3)
    seeds = d.run_seeds()
    # the Java cell's first two runs each lost a fault to an error (the journal's nemesis_errors)
    fakes.faults_failed = lambda s, lib, seed: 2 if lib == "java@3.9.1" and seed in seeds[:2] else 0
    r = cli("--scenarios", "baseline", "--clients", "confluent-kafka,java@3.9.1", "--transaction-versions", "2",
            "--seeds", "3", "--seed", "5", "--duration", "10", "--out", str(tmp_path / "m"))
    assert r.exit_code == 0, r.output  # valid: a failed fault is no finding, but the tables say it
    data = json.loads((tmp_path / "m" / "matrix.json").read_text())
    ok, java = data["cells"]
    assert (ok["state"], ok["faults_failed"], ok["runs_with_failed_faults"]) == ("valid", 0, 0)
    assert (java["state"], java["faults_failed"], java["runs_with_failed_faults"]) == ("valid", 4, 2)
    words = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", (tmp_path / "m" / "matrix.html").read_text()))
    assert "4 faults failed and did not run, in 2 runs" in words and "4 faults failed in 2 runs" in words, words
    assert "4 (2)" in words
    # its twin: nothing failed, nothing said
    fakes.faults_failed = lambda s, lib, seed: 0
    r = cli("--scenarios", "baseline", "--clients", "confluent-kafka", "--transaction-versions", "2",
            "--seeds", "1", "--seed", "5", "--duration", "10", "--out", str(tmp_path / "twin"))
    assert r.exit_code == 0, r.output
    assert "failed and did not run" not in (tmp_path / "twin" / "matrix.html").read_text()


def test_a_run_recorded_before_failed_faults_were_counted_loads_as_none_failed() -> None:
    d = definition(scenarios="baseline", clients_="confluent-kafka", levels="2", seeds=1)
    m = Matrix(d)
    cell = d.cells()[0]
    m.runs[RunKey(cell, 0)] = _run(cell, 0, "valid")
    data = m.as_json()
    for run in data["runs"]:
        del run["faults_failed"]
    assert Matrix.from_json(data).as_json()["cells"][0]["faults_failed"] == 0


# ---- resume ----

def test_resume_skips_finished_runs_and_redoes_the_one_cut_short(fakes: Fakes, tmp_path: Path) -> None:
    args = ["--scenarios", "baseline,leader-kill", "--seeds", "2", "--seed", "5", "--out", str(tmp_path / "m")]
    calls = 0

    def third_is_cut_short(s: str, lib: str, seed: int) -> str:
        nonlocal calls
        calls += 1
        return "interrupt" if calls == 3 else "valid"

    fakes.outcome = third_is_cut_short
    r = cli(*args)
    assert r.exit_code == 130, r.output
    assert "the same command with --out" in r.output
    data = json.loads((tmp_path / "m" / "matrix.json").read_text())
    assert data["stopped_because"] == "interrupted" and data["totals"]["runs"] == 2 and data["healed_at_end"] is True
    assert fakes.events == ["start tv-default", "stop tv-default"], "the cluster is taken down on Ctrl-C"
    assert len(list((tmp_path / "m" / "runs" / f"kafka-{pins.KAFKA_VERSION}" / "tv-default" / "confluent-kafka").iterdir())) == 3
    done = fakes.runs[:2]
    fakes.runs.clear()
    r = cli(*args[:-2], "--out", str(tmp_path / "m"))  # without --seed: the folder's master seed
    assert r.exit_code == 0, r.output
    assert len(fakes.runs) == 2 and not set(fakes.runs) & set(done), "finished runs are not run again"
    data = json.loads((tmp_path / "m" / "matrix.json").read_text())
    assert data["totals"]["runs"] == 4 and data["sessions"] == 2 and data["stopped_because"] == "every run done"
    kept = {r["run_dir"] for r in data["runs"]}
    folder = tmp_path / "m" / "runs" / f"kafka-{pins.KAFKA_VERSION}" / "tv-default" / "confluent-kafka"
    on_disk = {str(p.relative_to(tmp_path / "m")) for p in folder.iterdir()}
    assert on_disk == kept, "the folder of the run cut short was removed"


def test_redo_unknown_runs_again_only_the_runs_that_ended_unknown(fakes: Fakes, tmp_path: Path) -> None:
    args = ["--scenarios", "baseline", "--seeds", "3", "--seed", "5", "--out", str(tmp_path / "m")]
    seeds = definition(scenarios="baseline", clients_="confluent-kafka", levels="default", seeds=3).run_seeds()
    broken = {seeds[0]: "error", seeds[1]: "unknown"}  # a client that could not start; a run without a verdict
    fakes.outcome = lambda s, lib, seed: broken.get(seed, "invalid")
    assert cli(*args).exit_code == 1
    fakes.runs.clear()
    assert cli(*args).exit_code == 1 and fakes.runs == [], "a plain resume keeps unknown runs"
    fakes.outcome = lambda s, lib, seed: "valid"
    r = cli(*args, "--redo-unknown")
    assert r.exit_code == 1, r.output  # the third run's finding stays
    assert sorted(seed for *_, seed in fakes.runs) == sorted(seeds[:2])
    data = json.loads((tmp_path / "m" / "matrix.json").read_text())
    assert data["totals"] == {"runs": 3, "wanted": 3, "valid": 2, "invalid": 1, "unknown": 0, "not_run": 0}
    kept = {str(p.relative_to(tmp_path / "m" / "redone")) for p in (tmp_path / "m" / "redone").glob("runs/*/*/*/*")}
    assert len(kept) == 2 and not kept & {r["run_dir"] for r in data["runs"]}, "the unknown runs' folders are kept apart"


def test_nothing_left_to_run_starts_no_cluster(fakes: Fakes, tmp_path: Path) -> None:
    args = ["--scenarios", "baseline", "--seed", "5", "--out", str(tmp_path / "m")]
    assert cli(*args).exit_code == 0
    fakes.events.clear()
    r = cli(*args)
    assert r.exit_code == 0 and fakes.events == [] and "1/1 runs" in r.output


# ---- the clients, made ready before any cluster ----

@pytest.fixture
def java_builds(fakes: Fakes, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The real ``clients.prepare``, with the Java bridge's fetch and build replaced: a build is an
    event next to the clusters' starts; kafka-clients 9.9.9 is not on Maven Central, as
    ``java_build._missing`` says it."""
    monkeypatch.setattr(matrix.clients, "prepare", PREPARE)

    def ensure(version: str) -> None:
        if version == "9.9.9":
            raise ConfigError("library java@9.9.9: org.apache.kafka:kafka-clients:9.9.9 is not on Maven Central; "
                              "versions known here: 3.9.1, 4.4.0")
        fakes.events.append(f"build java {version}")

    monkeypatch.setattr(java_build, "ensure", ensure)
    return fakes.events


def test_a_client_release_that_does_not_exist_is_refused_before_any_cluster_starts(java_builds: list[str], fakes: Fakes,
                                                                                   tmp_path: Path) -> None:
    r = cli("--scenarios", "baseline", "--clients", "confluent-kafka,java@9.9.9", "--transaction-versions", "0",
            "--seed", "5", "--out", str(tmp_path / "m"))
    assert r.exit_code == 2, r.output
    assert "--clients: library java@9.9.9: org.apache.kafka:kafka-clients:9.9.9 is not on Maven Central" in r.output
    assert "versions known here" in r.output and "internal error" not in r.output
    assert fakes.events == [] and fakes.runs == [] and not (tmp_path / "m").exists()


def test_the_clients_are_built_before_the_first_cluster_starts(java_builds: list[str], fakes: Fakes, tmp_path: Path) -> None:
    r = cli("--scenarios", "baseline", "--clients", "java@3.9.1,java@4.4.0", "--transaction-versions", "0,2",
            "--seed", "5", "--out", str(tmp_path / "m"))
    assert r.exit_code == 0, r.output
    assert fakes.events == ["build java 3.9.1", "build java 4.4.0", "start tv-0", "stop tv-0", "start tv-2", "stop tv-2"]


# ---- --dry-run: the plan, nothing started ----

def test_a_dry_run_lists_cells_seeds_clusters_and_an_estimate_and_starts_nothing(fakes: Fakes, tmp_path: Path,
                                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    def no(*a: Any, **kw: Any) -> Any:
        raise AssertionError("a dry run must not fetch or start anything")

    for name in ("ensure", "ready"):  # no Kafka artifacts on this machine, as far as a dry run can tell
        monkeypatch.setattr(matrix.artifacts, name, no)
    monkeypatch.setattr(matrix, "level_cluster", no)
    monkeypatch.setattr(runner, "cluster_that_is_up", no)
    r = cli("--scenarios", "baseline,incident-txn-expiry", "--clients", "confluent-kafka,java@3.9.1",
            "--transaction-versions", "0,2", "--seeds", "2", "--seed", "5", "--duration", "10",
            "--out", str(tmp_path / "m"), "--dry-run")
    assert r.exit_code == 0, r.output
    assert fakes.events == [] and fakes.runs == [] and fakes.prepared == [] and not (tmp_path / "m").exists()
    text = r.stdout
    seeds = definition(seeds=2).run_seeds()
    assert "matrix of 8 cells x 2 seeds = 16 runs (16 to run), local backend, master seed 5" in text
    assert f"run seeds (the same in every cell): #1 {seeds[0]}, #2 {seeds[1]}" in text
    for cell in ("baseline / confluent-kafka", "baseline / java@3.9.1", "incident-txn-expiry / confluent-kafka",
                 "incident-txn-expiry / java@3.9.1"):
        assert text.count(f"     {cell}: seeds {seeds[0]}, {seeds[1]}") == 2, cell  # at each level
    clusters = [line for line in text.splitlines() if re.match(r"  \d\. ", line)]
    assert len(clusters) == 4, clusters  # per level: one with the scenario's broker settings, one without
    assert clusters[0].startswith(f"  1. local, Kafka {pins.KAFKA_VERSION}, transaction version 0, no broker settings")
    assert "transactional.id.expiration.ms=5000" in clusters[1] and "transaction version 0" in clusters[1]
    # 16 runs of 10 s, 10 s more each, 4 cluster starts of 20 s: 400 s
    assert "estimate: about 6 min 40 s = 160 s of scenarios + 16 runs x 10 s" in text
    assert "+ 4 cluster starts x 20 s" in text and "nothing started (--dry-run)" in text


def test_a_dry_run_says_the_default_level_runs_on_the_cluster_that_is_up_and_it_comes_back(fakes: Fakes,
                                                                                           tmp_path: Path) -> None:
    import os

    from clusters.backends import state

    # fakes points EOS_CHAOS_STATE at tmp_path/state; this process owns the record, so it is alive
    state.save(state.ClusterRecord(backend="local", cluster_id="c", run_dir="/up/there", kafka_version="4.0.0", net=10,
                                   port_base=19092, api_port=8474, owner_pid=os.getpid(), transaction_version=1))
    r = cli("--scenarios", "baseline", "--transaction-versions", "default,2", "--duration", "10", "--seed", "5",
            "--kafka-version", "4.0.0", "--dry-run")
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert any(line.startswith("  1. local, Kafka 4.0.0, transaction version 1 (as the cluster that is up was formatted)")
               and "the cluster that is up (run folder /up/there)" in line for line in lines), r.stdout
    assert "the local cluster that is up makes way for them, and is started again at the end" in r.stdout
    assert "+ 2 cluster starts x 20 s" in r.stdout  # the level-2 cluster, and the one that was up coming back
    r = cli("--scenarios", "baseline", "--kafka-version", "4.1.1", "--duration", "10", "--seed", "5", "--dry-run")
    # another release asked for: the cluster that is up runs no cell and makes way
    assert "the local cluster that is up runs Kafka 4.0.0 (run folder /up/there): no cell to run on it" in r.stdout
    assert "makes way for them, and is started again at the end" in r.stdout and "+ 2 cluster starts" in r.stdout


def test_a_dry_run_on_a_matrix_folder_lists_what_is_left(fakes: Fakes, tmp_path: Path) -> None:
    out = str(tmp_path / "m")
    assert cli("--scenarios", "baseline", "--seed", "5", "--duration", "10", "--out", out).exit_code == 0
    fakes.events.clear()
    r = cli("--scenarios", "baseline,negative-aborted-read", "--seeds", "1", "--duration", "10", "--out", out, "--dry-run")
    assert r.exit_code == 0, r.output
    assert "= 2 runs (1 to run, 1 done)" in r.stdout and "negative-aborted-read / confluent-kafka" in r.stdout
    assert "baseline / confluent-kafka" not in r.stdout and fakes.events == []
    assert "1 run, 10 s of scenarios" in r.stdout


@pytest.mark.parametrize(("change", "message"), [
    (["--seed", "6"], "--seed 5 -> 6"),
    (["--duration", "12"], "--duration 10.0 -> 12.0"),
    (["--backend", "compose"], "--backend local -> compose"),
    (["--scenarios", "zombie-fencing"], "--scenarios leaves out baseline"),  # no fault for --duration 10 to cut off
    (["--clients", "java@3.9.1"], "--clients leaves out confluent-kafka"),
    (["--transaction-versions", "2"], "--transaction-versions leaves out default"),
    (["--seeds", "1"], "--seeds 2 -> 1"),
])
def test_a_changed_matrix_is_refused_naming_what_changed(change: list[str], message: str, fakes: Fakes, tmp_path: Path) -> None:
    base = {"--scenarios": "baseline", "--seeds": "2", "--seed": "5", "--duration": "10"}
    assert cli(*[x for kv in base.items() for x in kv], "--out", str(tmp_path / "m")).exit_code == 0
    fakes.runs.clear()
    args = {**base, change[0]: change[1]}
    r = cli(*[x for kv in args.items() for x in kv], "--out", str(tmp_path / "m"))
    assert r.exit_code == 2, r.output
    assert message in r.output and "may only grow" in r.output
    assert fakes.runs == []


def test_a_grown_matrix_keeps_its_runs_and_runs_only_the_new_ones(fakes: Fakes, tmp_path: Path) -> None:
    out = str(tmp_path / "m")
    assert cli("--scenarios", "baseline", "--seed", "5", "--out", out).exit_code == 0
    fakes.runs.clear()
    r = cli("--scenarios", "baseline,leader-kill", "--clients", "confluent-kafka,java@3.9.1", "--seeds", "2", "--out", out)
    assert r.exit_code == 0, r.output
    assert len(fakes.runs) == 7, "8 runs in the grown matrix, 1 done before"
    assert json.loads((tmp_path / "m" / "matrix.json").read_text())["totals"] == {
        "runs": 8, "wanted": 8, "valid": 8, "invalid": 0, "unknown": 0, "not_run": 0}


def test_an_edited_scenario_file_is_refused_on_resume(fakes: Fakes, tmp_path: Path) -> None:
    f = tmp_path / "mine.yaml"
    text = "name: mine\ndescription: x\nduration: 10\nworkloads:\n  - kind: txn-producer\n"
    f.write_text(text)
    assert cli("--scenarios", str(f), "--seed", "5", "--out", str(tmp_path / "m")).exit_code == 0
    f.write_text(text.replace("duration: 10", "duration: 11"))
    r = cli("--scenarios", str(f), "--out", str(tmp_path / "m"))
    assert r.exit_code == 2 and f"scenario {f} changed since its runs" in r.output


def test_a_matrix_json_of_another_format_is_refused(tmp_path: Path) -> None:
    (tmp_path / "matrix.json").write_text('{"format": 99}')
    with pytest.raises(ConfigError, match="format 99"):
        matrix.load(tmp_path)
    (tmp_path / "matrix.json").write_text("{not json")
    with pytest.raises(ConfigError, match="cannot be read"):
        matrix.load(tmp_path)


# ---- the page ----

def _run(cell: Cell, i: int, outcome: str) -> MatrixRun:
    valid: bool | str | None = {"valid": True, "invalid": False, "unknown": "unknown", "error": None}[outcome]
    return MatrixRun(cell.scenario, cell.client, cell.kafka_version, cell.level, i, 100 + i, f"runs/x/{cell.client}/r{i}", valid, valid is True,
                     {"duplicate": 2} if outcome == "invalid" else {}, 30.0,
                     "ClusterError: no leader" if outcome == "error" else None, f"eos-chaos run {cell.scenario} --seed {100 + i}")


def test_the_page_shows_every_cell_state_in_its_colour(tmp_path: Path) -> None:
    d = definition(scenarios="baseline,negative-duplicates", clients_="confluent-kafka", levels="0,1,2,default", seeds=2)
    m = Matrix(d, stopped_because="interrupted")
    cells = d.cells()
    states = {cells[0]: ["valid", "valid"], cells[1]: ["invalid", "valid"], cells[2]: ["valid"],
              cells[3]: ["error", "valid"], cells[4]: ["valid", "unknown"]}  # cells[5..7]: pending
    for cell, outcomes in states.items():
        for i, o in enumerate(outcomes):
            m.runs[RunKey(cell, i)] = _run(cell, i, o)
    (tmp_path / "runs/x/confluent-kafka/r0").mkdir(parents=True)
    (tmp_path / "runs/x/confluent-kafka/r0/report.html").write_text("")
    data = m.as_json(tmp_path)
    assert [c["state"] for c in data["cells"]] == ["valid", "invalid", "partial", "unknown", "unknown", "pending", "pending", "pending"]
    page = render_matrix(data, tmp_path.name)
    for state in set(STATES) - {"unsupported", "not-run", "other-shard"}:  # those: test_matrix_kafka_versions.py, test_matrix_merge.py
        assert f'class="cell {state}"' in page, state
    words = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))
    assert "1 INVALID" in words and "Interrupted: the run under way was discarded" in words
    assert "negative control: expected invalid" in words and "duplicate: 1 / 2" in words and "50%" in words
    assert "ClusterError: no leader" in words and "eos-chaos run baseline --seed 101" in words
    assert 'href="runs/x/confluent-kafka/r0/report.html"' in page
    assert "tv default" in words and "transaction versions 0, 1, 2, default" in words
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page), "the page loads nothing from anywhere"


def test_a_hunt_row_says_either_verdict_is_an_answer_and_a_control_row_says_expected_invalid() -> None:
    d = definition(scenarios="baseline,negative-duplicates,kip890-late-commit", clients_="confluent-kafka", seeds=1)
    words = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", render_matrix(Matrix(d).as_json(Path(".")), "m")))
    assert words.count("hunt: either verdict is an answer") == 1 and words.count("negative control: expected invalid") == 1


def test_an_empty_matrix_page_says_no_runs() -> None:
    page = render_matrix(Matrix(definition(seeds=1)).as_json(), "m")
    assert "NO RUNS" in page and page.count('class="cell pending"') == 8


def test_a_replay_names_the_transaction_version_once() -> None:
    from harness.campaigns.matrix import Cell, RunKey, replay

    k = RunKey(Cell("baseline", "java@3.9.1", pins.KAFKA_VERSION, 2), 0)
    recorded = "eos-chaos run baseline --backend local --seed 7 --duration 10 --kafka-version 4.4.0 --transaction-version 2"
    d = definition(scenarios="baseline", clients_="java@3.9.1", levels="2", seeds=1)
    assert replay(recorded, k, 7, d, {}) == recorded + " --library java@3.9.1"
    assert replay(recorded.rsplit(" --transaction-version", 1)[0], k, 7, d, {}).endswith(
        "--library java@3.9.1 --transaction-version 2")


def test_a_field_added_to_the_scenario_format_at_its_default_keeps_the_fingerprint() -> None:
    from harness.campaigns.matrix import fingerprint

    sc = scenario.load("baseline")
    assert fingerprint(sc) == fingerprint(sc.model_copy(update={"spark": "local"}))
    assert fingerprint(sc) != fingerprint(sc.model_copy(update={"spark": "standalone"}))
    assert fingerprint(sc) != fingerprint(sc.with_duration(sc.duration + 1))
