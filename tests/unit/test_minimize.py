"""``eos-chaos minimize``: the candidates drawn from a run folder (the hand-written torn run of
``test_repro``), the delta-debugging loop against a stand-in for the runs (a function of which
faults and workloads a candidate keeps), what it writes, and bad input. No cluster: the real runs
are ``tests/chaos/test_minimize.py``'s."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from harness.base.errors import ClusterError
from harness.campaigns import minimize
from harness.campaigns.minimize import Candidate, RunSeen, Start
from harness.cli import app
from harness.report import repro
from harness.report.loaded import read_verdict
from harness.report.repro import Cut
from harness.run.scenario import load
from harness.rundir.journal import FaultRun, Journal
from harness.rundir.run_verdict import RunVerdict
from tests.unit.test_report import make_run
from tests.unit.test_repro import make_torn_run, torn_history

WIDE = {"COLUMNS": "400", "TERMINAL_WIDTH": "400"}
CHECK = "torn-transaction"


def cli(*args: str) -> Result:
    return CliRunner(env=WIDE).invoke(app, list(args))


def words(r: Result) -> str:
    return " ".join(r.output.split())


# ---- a stand-in for the runs ----

Reproduces = Callable[[Cut], bool]


def stand_in(reproduces: Reproduces, calls: list[tuple[int, Cut, int]] | None = None,
             flaky: int = 1) -> minimize.RunOne:
    """A run of a candidate: it fires ``CHECK`` when ``reproduces(cut)``, from its ``flaky``-th try on."""
    calls = calls if calls is not None else []

    def run_one(number: int, cand: Candidate, sc: dict[str, Any], i: int) -> RunSeen:
        calls.append((number, cand.cut, i))
        hit = reproduces(cand.cut) and i >= flaky
        return RunSeen(f"/runs/{number}-{i}", not hit, [CHECK, "duplicate"] if hit else ["duplicate"])

    return run_one


def synthetic(n_faults: int = 8, draft: Cut | None = None, anomaly_end_s: float | None = 3.0) -> Start:
    """A run's scenario with ``n_faults`` node pauses 5 s apart, two producers and a reader."""
    sc = {"name": "syn", "description": "d", "duration": 60.0, "topics": ["eos-a"], "partitions": 2,
          "workloads": [{"kind": "txn-producer", "count": 2, "settings": {}, "library": "confluent-kafka", "client": {}},
                        {"kind": "reader", "count": 1, "settings": {}, "library": "confluent-kafka", "client": {}}],
          "faults": [{"kind": "pause", "at": 3.0 + 5 * i, "duration": 2.0, "target": 1 + i % 3} for i in range(n_faults)],
          "broker_config": {}, "mix": None}
    original = Cut(tuple(range(n_faults)), ((0, 2), (1, 1)), 60.0)
    return Start("run-syn", sc, original, draft, (CHECK,), anomaly_end_s, 7, "local", "4.1.1", 2)


def needs(*faults: int) -> Reproduces:
    return lambda cut: set(faults) <= set(cut.faults)


# ---- the loop ----

@pytest.mark.parametrize(("needed", "found"), [((2, 5), (2, 5)), ((3,), (3,)), ((), ()), ((0, 1, 2, 3, 4, 5, 6, 7), None)])
def test_ddmin_finds_the_faults_that_matter(needed: tuple[int, ...], found: tuple[int, ...] | None) -> None:
    calls: list[tuple[int, Cut, int]] = []
    res = minimize.minimize(synthetic(), stand_in(needs(*needed), calls), tries=1, max_runs=200)
    assert res.best is not None and res.complete
    assert res.best.cut.faults == (found if found is not None else tuple(range(8)))
    cuts = [c for _, c, _ in calls]
    assert len(cuts) == len(set(cuts)), "a candidate tried before was run again"
    assert res.tried[0].step == "original" and res.tried[1].removed.startswith("faults #1 pause at 3s, #2 pause")
    assert len(calls) < 40  # halving, not every subset of 8 (256)
    if needed:  # 1-minimal: taking out any one kept fault stops it reproducing
        for f in res.best.cut.faults:
            smaller = tuple(x for x in res.best.cut.faults if x != f)
            assert any(c.faults == smaller and not t.reproduced for t in res.tried for c in [t.cut]) or not smaller


def test_the_steps_come_in_order_draft_faults_workloads_duration() -> None:
    draft = Cut((1, 2, 3), ((0, 1),), 30.0)
    res = minimize.minimize(synthetic(draft=draft), stand_in(needs(2)), tries=1, max_runs=50)
    steps = [t.step for t in res.tried]
    assert steps[0] == "draft" and steps.index("faults") < steps.index("duration")
    assert "original" not in steps  # the draft reproduced: the run's own scenario is not needed
    assert res.outcome == "smaller" and res.best is not None
    # the draft's one producer; the pause at 13 s ends at 15 s, + 5 s
    assert res.best.cut == Cut((2,), ((0, 1),), 20.0)
    assert res.tried[-1].removed == "duration 30s -> 20s"


def test_workloads_the_anomaly_does_not_need_are_taken_out_and_counts_cut() -> None:
    res = minimize.minimize(synthetic(n_faults=0), stand_in(lambda c: 0 in dict(c.workloads)), tries=1, max_runs=50)
    assert res.best is not None and res.best.cut.workloads == ((0, 1),)
    removed = [t.removed for t in res.tried if t.step == "workloads"]
    assert removed == ["workload txn-producer (entry 1)", "workload reader (entry 2)", "txn-producer (entry 1) count 2 -> 1"]
    assert all(t.cut.workloads for t in res.tried)  # the only entry left is never taken out


def test_the_duration_is_cut_to_the_anomaly_when_no_fault_is_kept() -> None:
    res = minimize.minimize(synthetic(anomaly_end_s=7.2), stand_in(lambda c: True), tries=1, max_runs=50)
    assert res.best is not None and res.best.cut.faults == () and res.best.cut.duration == 13.0  # ceil(7.2 + 5)
    assert minimize.minimize(synthetic(anomaly_end_s=None), stand_in(lambda c: True), tries=1,
                             max_runs=50).best.cut.duration == 60.0  # type: ignore[union-attr]


def test_a_flaky_candidate_needs_its_tries() -> None:
    two = minimize.minimize(synthetic(n_faults=1), stand_in(needs(0), flaky=2), tries=2, max_runs=50)
    assert two.best is not None and two.best.cut.faults == (0,) and [len(t.runs) for t in two.tried][:2] == [2, 2]
    one = minimize.minimize(synthetic(n_faults=1), stand_in(needs(0), flaky=2), tries=1, max_runs=50)
    assert one.best is None and one.outcome == "none" and [t.step for t in one.tried] == ["original"]
    assert "Nothing reproduced" in minimize.says(one) and "--tries" in minimize.says(one)


def test_the_budget_stops_the_search_with_the_best_so_far() -> None:
    # the original (1 run), every fault out (2), faults 1-4 (2), 5-8 (1), 5-6 (1): then 5 alone has no run left
    res = minimize.minimize(synthetic(), stand_in(needs(5)), tries=2, max_runs=7)
    assert res.runs == 7 and res.stopped_because == "--max-runs 7 spent" and not res.complete
    assert res.best is not None and res.outcome == "smaller" and res.best.cut.faults == (4, 5)
    assert res.tried[-1].cut.faults == (4,) and res.tried[-1].note == "not decided: --max-runs 7 spent"
    assert "a smaller one may still exist" in minimize.says(res)


def test_the_draft_failing_falls_back_to_the_original_and_nothing_at_all_is_outcome_none() -> None:
    draft = Cut((0,), ((0, 1),), 10.0)
    res = minimize.minimize(synthetic(draft=draft), stand_in(needs(4)), tries=1, max_runs=50)
    assert [t.step for t in res.tried][:2] == ["draft", "original"] and res.best is not None
    assert res.best.cut.faults == (4,)
    none = minimize.minimize(synthetic(draft=draft), stand_in(lambda c: False), tries=3, max_runs=50)
    assert none.outcome == "none" and [(t.step, len(t.runs)) for t in none.tried] == [("draft", 3), ("original", 3)]


def test_an_original_that_cannot_be_cut_is_already_minimal() -> None:
    res = minimize.minimize(synthetic(n_faults=2), stand_in(lambda c: c == synthetic(n_faults=2).original),
                            tries=1, max_runs=50)
    assert res.outcome == "original" and res.complete
    assert "it is minimal as far as these steps cut" in minimize.says(res)


def test_a_candidate_that_is_no_scenario_is_passed_over_without_a_run() -> None:
    st = synthetic(n_faults=0)
    sc = {**st.scenario, "topics": ["spark-in", "spark-out", "spark-markers"],
          "workloads": [{"kind": "txn-producer", "count": 1, "settings": {"topics": ["spark-in"]}},
                        {"kind": "spark-job", "count": 1, "settings": {"input": "spark-in", "output": "spark-out",
                                                                        "markers": "spark-markers"}}],
          "faults": [{"kind": "kill-driver", "at": 5.0, "window": "in-txn"}]}
    st = Start("run-spark", sc, Cut((0,), ((0, 1), (1, 1)), 60.0), None, (CHECK,), None, 7, "local", "4.1.1", 2)
    calls: list[tuple[int, Cut, int]] = []
    res = minimize.minimize(st, stand_in(lambda c: 0 in c.faults and len(c.workloads) == 2, calls), tries=1, max_runs=50)
    [bad] = [t for t in res.tried if t.removed == "workload spark-job (entry 2)"]
    assert bad.runs == [] and bad.reproduced is None and "not a valid scenario, not run" in bad.note
    assert "need a spark-job workload" in bad.note
    assert bad.cut not in [c for _, c, _ in calls]


def test_a_run_cut_short_ends_the_search_as_interrupted() -> None:
    def run_one(number: int, cand: Candidate, sc: dict[str, Any], i: int) -> RunSeen:
        return RunSeen("/runs/x", None, [], interrupted=True)

    res = minimize.minimize(synthetic(), run_one, tries=2, max_runs=8)
    assert res.interrupted and res.stopped_because == "interrupted" and res.tried[0].note.startswith("interrupted")


def test_dry_run_s_plan_is_the_loop_with_the_first_candidate_reproducing() -> None:
    res = minimize.plan(synthetic(draft=Cut((1, 2), ((0, 1),), 20.0)), tries=2, max_runs=8)
    assert [t.reproduced for t in res.tried][:3] == [True, False, False] and res.runs == 7
    assert res.tried[0].step == "draft" and res.stopped_because == "every step done"


# ---- from a run folder ----

@pytest.fixture(scope="module")
def torn(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_torn_run(tmp_path_factory.mktemp("runs"))


def test_the_start_is_the_run_s_scenario_with_repro_s_draft(torn: Path) -> None:
    st = minimize.start_of(repro.gather(torn, read_verdict(torn)))
    assert st.checks == (CHECK,) and (st.seed, st.backend, st.kafka_version, st.transaction_version) == (7, "local", "4.1.1", 2)
    assert st.original == Cut((0, 1), ((0, 2), (1, 1)), 60.0)
    assert st.draft == Cut((0,), ((0, 1),), 11.0)  # one producer, the kill in the window, 11 s (test_repro)
    assert st.scenario["topics"] == ["eos-a"] and st.scenario["faults"][0]["of"] == "eos-a/0"  # the run's tag off
    assert st.anomaly_end_s == pytest.approx(0.010, abs=1e-6)
    assert minimize.problem_of(minimize.scenario_of(st, st.original, "x")) is None


def test_a_random_target_is_pinned_to_the_node_it_hit_once() -> None:
    resolved = {"name": "r", "workloads": [{"kind": "reader"}], "faults": []}
    schedule = [{"kind": "pause", "at": 1.0, "target": "random"}, {"kind": "partition", "at": 2.0, "target": "random"},
                {"kind": "pause", "at": 3.0, "target": "random", "every": 5.0}, {"kind": "kill", "at": 4.0, "target": "leader"}]
    runs = [FaultRun(kind="pause", planned=0, start_s=1, end_s=2, detail={"node": 3}),
            FaultRun(kind="partition", planned=1, start_s=2, end_s=3, detail={"nodes": [2], "links": ["a"]}),
            FaultRun(kind="pause", planned=2, start_s=3, end_s=4, detail={"node": 1}),
            FaultRun(kind="pause", planned=2, start_s=8, end_s=9, detail={"node": 2}),
            FaultRun(kind="kill", planned=3, start_s=4, end_s=5, detail={"node": 1})]
    j = Journal(scenario="r", source="r", resolved=resolved, seed=1, backend="local", schedule=schedule, faults=runs)
    sc = repro.replayable(resolved, j, "20260101-000000-r-ab12")
    assert sc is not None and [f["target"] for f in sc["faults"]] == [3, 2, "random", "leader"]


def test_minimize_dry_run_prints_the_candidates_and_writes_nothing(torn: Path) -> None:
    r = cli("minimize", str(torn), "--dry-run", "--tries", "3")
    assert r.exit_code == 0, r.output
    said = words(r)
    assert "run 20261125-000000-torn-ab12: 2 faults, 3 processes, 60s; to reproduce: torn-transaction" in said
    assert "seed 7, Kafka 4.1.1, transaction.version 2, local backend; at most 3 runs a candidate, 8 in all" in said
    assert "eos-chaos repro's draft: 1 fault, 1 process, 11s" in said
    assert "1 draft fault #2 pause at 40s; txn-producer (entry 1) count 2 -> 1; workload reader (entry 2); duration 60s -> 11s" in said
    assert "2 faults fault #1 kill at 2s 0 faults, 1 process, 11s 3 no" in said
    assert "2 candidates, 4 runs if the first reproduced at once" in said and "Nothing run (--dry-run)" in said
    assert not (torn / "repro").exists()


@contextmanager
def fake_replay(reproduces: Reproduces, interrupt: bool = False, fail: bool = False) -> Iterator[Callable[..., Any]]:
    """``minimize.replay`` with the stand-in: run folders are made in ``out/runs`` but hold nothing."""

    @contextmanager
    def replay(start: Start, out: Path, show: Any = None) -> Iterator[minimize.RunOne]:
        inner = stand_in(reproduces)

        def run_one(number: int, cand: Candidate, sc: dict[str, Any], i: int) -> RunSeen:
            if fail:
                raise ClusterError("broker n2 did not come back within 60 s")
            seen = inner(number, cand, sc, i)
            d = out / "runs" / f"{number:02d}-{i}"
            d.mkdir(parents=True)
            return RunSeen(str(d), seen.valid, seen.fired, interrupted=interrupt)

        yield run_one

    yield replay


@pytest.fixture
def torn_copy(torn: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(torn, tmp_path / torn.name, ignore=shutil.ignore_patterns("repro")))


def test_minimize_writes_minimal_yaml_the_table_and_a_report_citing_them(torn_copy: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    with fake_replay(needs(0)) as replay:
        monkeypatch.setattr(minimize, "replay", replay)
        r = cli("minimize", str(torn_copy))
    assert r.exit_code == 0, r.output
    out = torn_copy / "repro"
    cmd = "eos-chaos run minimal.yaml --backend local --seed 7 --duration 11 --kafka-version 4.1.1 --transaction-version 2"
    assert cmd in words(r) and "Reproduced torn-transaction in 1 of 1 run of candidate 1" in words(r)
    sc = load(str(out / "minimal.yaml"))  # a scenario eos-chaos run takes
    assert [(w.kind, w.count) for w in sc.workloads] == [("txn-producer", 1)] and [f.kind for f in sc.faults] == ["kill"]
    assert sc.expect.fires == [CHECK] and sc.duration == 11.0 and "by eos-chaos minimize (candidate 1)" in sc.description
    report = (out / "REPORT.md").read_text()
    assert "### The minimal scenario (checked by running it)" in report and cmd in report
    assert "### A smaller scenario (draft)" not in report and not (out / "minimal-scenario.yaml").exists()
    table = (out / "candidates.md").read_text()
    assert "| 1 | draft |" in table and "| 2 | faults | fault #1 kill at 2s |" in table and "`runs/01-1` (torn-transaction, duplicate)" in table
    record = json.loads((out / "minimize.json").read_text())
    assert record["outcome"] == "smaller" and record["minimal"]["reproduced_in"] == [1, 1]
    assert [c["reproduced"] for c in record["candidates"]] == [True, False] and record["runs"] == 3
    files = json.loads((out / "repro.json").read_text())["files"]
    assert {"minimal.yaml", "candidates.md", "minimize.json"} <= set(files) and "minimal-scenario.yaml" not in files


def test_minimize_with_nothing_reproducing_is_exit_3_and_says_so(torn_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with fake_replay(lambda c: False) as replay:
        monkeypatch.setattr(minimize, "replay", replay)
        r = cli("minimize", str(torn_copy), "--out", str(torn_copy / "min"), "--tries", "1")
    assert r.exit_code == 3, r.output
    assert "Nothing reproduced torn-transaction" in words(r)
    out = torn_copy / "min"
    assert not (out / "minimal.yaml").exists() and (out / "minimal-scenario.yaml").exists()
    report = (out / "REPORT.md").read_text()
    assert "Nothing reproduced" in report and "`eos-chaos minimize` ran it" in report
    assert json.loads((out / "minimize.json").read_text())["outcome"] == "none"


@pytest.mark.parametrize(("interrupt", "fail", "code", "said"), [
    (True, False, 130, "interrupted"),
    (False, True, 2, "stopped by an error: ClusterError: broker n2 did not come back within 60 s"),
])
def test_minimize_cut_short_still_writes_its_record(torn_copy: Path, monkeypatch: pytest.MonkeyPatch, interrupt: bool,
                                                    fail: bool, code: int, said: str) -> None:
    with fake_replay(needs(0), interrupt=interrupt, fail=fail) as replay:
        monkeypatch.setattr(minimize, "replay", replay)
        r = cli("minimize", str(torn_copy))
    assert r.exit_code == code, r.output
    assert json.loads((torn_copy / "repro" / "minimize.json").read_text())["stopped_because"] == said
    assert "Traceback" not in r.output


@pytest.mark.parametrize(("setup", "args", "said"), [
    ("none", [], "does not exist"),
    ("file", [], "is a file, not a run folder"),
    ("valid", [], "the run is valid, so there is no anomaly to reproduce and nothing to minimize"),
    ("unknown", [], "the verdict is unknown and no check found anything"),
    ("no-scenario", [], "journal.json keeps no scenario with workloads"),
    ("torn", ["--checks", "duplicate,torn-transaction"], "--checks: duplicate found nothing in run 20261125-000000-torn-ab12; "
                                                         "checks that fired: torn-transaction"),
    ("torn", ["--tries", "5", "--max-runs", "2"], "--tries 5 is more than --max-runs 2"),
    ("torn", ["--max-runs", "0"], "Invalid value for '--max-runs'"),
    ("torn", ["--out", "{busy}"], "holds files, and not an earlier eos-chaos repro's"),
])
def test_bad_input_is_exit_2_naming_what_and_where(tmp_path: Path, torn: Path, setup: str, args: list[str], said: str) -> None:
    target = {"none": tmp_path / "nope", "file": tmp_path / "f", "torn": torn}.get(setup, tmp_path / setup)
    if setup == "file":
        target.write_text("x")
    if setup in ("valid", "unknown"):
        target = make_run(tmp_path, name=setup)
    if setup == "unknown":
        v = json.loads((target / "verdict.json").read_text())
        v.update(valid="unknown", unknown_because=["check duplicate crashed: MemoryError"])
        (target / "verdict.json").write_text(json.dumps(v))
    if setup == "no-scenario":  # an invalid run whose journal keeps no workloads to run again
        target = make_run(tmp_path, name=setup, history=torn_history())
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "mine.txt").write_text("x")
    r = cli("minimize", str(target), *[a.replace("{busy}", str(busy)) for a in args])
    assert r.exit_code == 2, r.output
    assert said in words(r), r.output
    assert "Traceback" not in r.output
    if setup == "torn":
        assert not (torn / "repro").exists()


# ---- the real runs' code path, with the cluster and the runner stood in for ----

class FakeCluster:
    def __init__(self) -> None:
        self.started = False

    def start(self) -> None:
        self.started = True


@pytest.mark.parametrize("up", [True, False])
def test_replay_runs_each_candidate_as_eos_chaos_run_on_one_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    up: bool) -> None:
    from types import SimpleNamespace

    from clusters.backends import artifacts
    from harness.campaigns import matrix, soak
    from harness.run import runner

    cluster = FakeCluster()
    asked: dict[str, Any] = {}
    runs: list[dict[str, Any]] = []
    healed: list[tuple[Any, bool]] = []

    def that_is_up(backend: Any, sc: Any, kafka_version: Any, transaction_version: Any = None) -> Any:
        asked.update(backend=backend.value, kafka_version=kafka_version, transaction_version=transaction_version)
        return cluster if up else None

    def level_cluster(backend: Any, arts: Any, run_dir: Path, level: Any, overrides: Any,
                      wire_between_brokers: bool = False) -> Any:
        asked.update(level=level, overrides=overrides, cluster_dir=run_dir, wire_between_brokers=wire_between_brokers)
        return cluster

    def run(sc: Any, backend: Any, seed: int, run_dir: Path, kafka_version: Any = None, **kw: Any) -> Any:
        runs.append({"sc": sc, "seed": seed, "run_dir": run_dir, "kafka_version": kafka_version, **kw})
        verdict = RunVerdict.of({"valid": False, "checks": {CHECK: {"count": 1}, "duplicate": {"count": 0}}, "stats": {}})
        return SimpleNamespace(verdict=verdict, interrupted=False)

    monkeypatch.setattr(runner, "cluster_that_is_up", that_is_up)
    monkeypatch.setattr(runner, "prepare_attached", lambda c: [])
    monkeypatch.setattr(runner, "run", run)
    monkeypatch.setattr(artifacts, "ready", lambda kv: SimpleNamespace(kafka_version=kv))
    monkeypatch.setattr(matrix, "level_cluster", level_cluster)
    monkeypatch.setattr(soak, "heal_at_end", lambda c, own: healed.append((c, own)) or [])
    st = synthetic(n_faults=2)
    with minimize.replay(st, tmp_path / "out") as run_one:
        cand = Candidate("faults", "fault #1", Cut((1,), ((0, 1),), 20.0))
        seen = run_one(3, cand, minimize.scenario_of(st, cand.cut, "d"), 1)
    assert asked["backend"] == "local" and asked["kafka_version"] == "4.1.1" and asked["transaction_version"] == 2
    assert cluster.started is not up and healed == [(cluster, not up)]  # its own is taken down after
    if not up:
        assert asked["level"] == 2 and asked["cluster_dir"].parent == tmp_path / "out" / "runs"
    [r] = runs
    source = tmp_path / "out" / "candidates" / "03-faults.yaml"
    assert r["source"] == str(source) and r["cluster"] is cluster and r["seed"] == 7 and r["transaction_version"] == 2
    assert r["sc"] == load(str(source)) and [f.at for f in r["sc"].faults] == [8.0] and r["sc"].duration == 20.0
    assert r["run_dir"].parent == tmp_path / "out" / "runs"
    assert seen.fired == [CHECK] and seen.valid is False and not seen.interrupted
