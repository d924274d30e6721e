"""Seeded fault schedules: the same seed gives the same plan, another seed another; plans fit the
run; --dry-run prints the plan and starts nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from chaos import schedule
from harness.run import scenario

CLI = str(Path(sys.executable).parent / "eos-chaos")


def test_same_seed_same_plan_other_seed_other_plan() -> None:
    sc = scenario.load("mixed")
    a, b, c = schedule.plan(sc, 1), schedule.plan(sc, 1), schedule.plan(sc, 2)
    assert schedule.as_json(a) == schedule.as_json(b)
    assert schedule.as_json(a) != schedule.as_json(c)
    assert len({json.dumps(schedule.as_json(schedule.plan(sc, s))) for s in range(20)}) > 15


def test_mixed_plans_fit_the_run_and_never_overlap() -> None:
    sc = scenario.load("mixed")
    for seed in range(50):
        faults = schedule.plan(sc, seed)
        assert faults, seed
        assert all(f.at >= sc.mix.start and f.at + f.duration <= sc.duration - sc.mix.quiet_end for f in faults)
        assert all(a.at + a.duration <= b.at for a, b in zip(faults, faults[1:])), "one fault at a time"
        assert {f.kind for f in faults} <= {k for k, _ in sc.mix.kinds}
        assert all(f.workload == "copier" for f in faults if f.kind == "kill-workload")


def test_explicit_faults_are_the_plan_of_a_scenario_without_mix() -> None:
    sc = scenario.load("txn-baseline")
    assert [(f.at, f.kind) for f in schedule.plan(sc, 123)] == [(8.0, "kill-leader"), (25.0, "kill-leader")]


def test_dry_run_prints_the_plan_as_json_and_starts_nothing(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "EOS_CHAOS_STATE": str(tmp_path), "HOME": str(tmp_path)}
    r = subprocess.run([CLI, "run", "mixed", "--seed", "7", "--dry-run", "--json"], capture_output=True, text=True,
                       env=env, timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["seed"] == 7 and out["schedule"] == schedule.as_json(schedule.plan(scenario.load("mixed"), 7))
    assert not list(tmp_path.iterdir()), "a dry run must not create state"


def _mixy(tmp_path: Path, mix: str) -> Path:
    f = tmp_path / "mixy.yaml"
    f.write_text("name: mixy\ndescription: x\nduration: 60\nworkloads:\n  - kind: txn-producer\n  - kind: reader\n"
                 f"mix:\n{mix}")
    return f


def test_a_mix_draws_every_kind_that_names_its_workload_with_one_of_mix_workloads(tmp_path: Path) -> None:
    """pause-workload takes a workload as kill-workload does (the plan used to crash on it)."""
    sc = scenario.load(str(_mixy(tmp_path, "  kinds: [[pause-workload, 1], [kill-workload, 1]]\n  workloads: [reader]\n")))
    faults = schedule.plan(sc, 3)
    assert {f.kind for f in faults} == {"pause-workload", "kill-workload"}
    assert all(f.workload == "reader" for f in faults)  # type: ignore[union-attr]


def test_a_mix_of_a_kind_it_cannot_draw_is_refused_where_the_file_says_it(tmp_path: Path) -> None:
    f = _mixy(tmp_path, "  kinds: [[kill, 2], [set-transaction-version, 1]]\n")
    r = subprocess.run([CLI, "run", str(f), "--dry-run"], capture_output=True, text=True, timeout=60,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 2, r.stderr
    assert f"{f}:8: mix.kinds[1]: a mix cannot draw set-transaction-version: level: missing (required)" in r.stderr, r.stderr
    assert "internal error" not in r.stderr
    f = _mixy(tmp_path, "  kinds: [[pause-workload, 1]]\n")
    r = subprocess.run([CLI, "run", str(f), "--dry-run"], capture_output=True, text=True, timeout=60,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 2 and "a mix cannot draw pause-workload: workload: missing (required); give mix.workloads" \
        in r.stderr, r.stderr
