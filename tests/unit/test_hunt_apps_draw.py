"""What the hunt's sixth draw adds, without a cluster: the shipped apps beside the producers (each
app's entry as its library scenario runs it, judged by its contract), coordinator and leader kills
and restarts; the same every time for a seed, and every drawn scenario loads and passes the dry run."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from chaos import schedule
from harness.base.errors import ConfigError
from harness.campaigns import hunt, hunt_apps
from harness.cli import app
from harness.phases import table
from harness.run import scenario
from harness.run.scenario import LIBRARY
from tests.unit.test_cli import WIDE, _restore_logging  # noqa: F401 - the fixture puts the loggers back
from tests.unit.test_matrix import Fakes, _levels_supported, install_fakes  # noqa: F401 - autouse fixture

SEEDS = hunt.seeds(20261129, 60)


def _apps(d: dict[str, object]) -> list[dict[str, object]]:
    return [w for w in d["workloads"] if w["kind"] == "app"]  # type: ignore[attr-defined, index]


def test_drawn_seeds_run_every_shipped_app_or_none_and_the_same_one_every_time() -> None:
    drawn = collections.Counter()
    for s in SEEDS:
        d = hunt.draw(s, 100)
        assert d == hunt.draw(s, 100), "a seed draws the same scenario every time"
        apps = _apps(d)
        assert len(apps) <= 1, "one app a scenario (a pipeline's first stage)"
        drawn[hunt_apps.choose(s, None)] += 1
        if apps:
            assert hunt_apps.choose(s, None) in str(d["description"])
    assert set(drawn) == {None, *hunt_apps.APPS}, drawn
    assert drawn[None] > max(drawn[a] for a in hunt_apps.APPS), "no app weighs most"


def test_an_app_named_runs_in_every_seed_as_its_library_scenario_runs_it() -> None:
    shipped = yaml.safe_load((LIBRARY / "app-streams-count-sum.yaml").read_text())
    entry = next(w for w in shipped["workloads"] if w["kind"] == "app")
    for s in SEEDS[:20]:
        d = hunt.draw(s, 100, ("streams-count-sum",))
        (a,) = _apps(d)
        assert a["settings"] == {**entry["settings"], "cwd": "{workdir}"}, "command, readiness, feeder, contract as shipped"
        assert a["settings"]["contract"]["kind"] == "aggregate"  # type: ignore[index]
        assert {"app-in", "app-count", "app-sum"} <= set(d["topics"])  # type: ignore[arg-type]
        assert a["count"] in (1, entry.get("count", 1))
    assert all(not _apps(hunt.draw(s, 100, ())) for s in SEEDS[:20]), "--apps none: the producers alone"


def test_the_draw_lands_coordinator_and_leader_kills_and_aims_faults_at_the_app() -> None:
    seen: collections.Counter[str] = collections.Counter()
    for s in SEEDS:
        d = hunt.draw(s, 100, tuple(hunt_apps.APPS))
        topics = set(d["topics"])  # type: ignore[arg-type]
        for f in d["faults"]:  # type: ignore[attr-defined]
            if f["kind"] in ("kill", "restart"):
                seen[f"{f['kind']} {f['target']}"] += 1
                assert f["duration"] >= (hunt.KILL_DOWN_S if f["kind"] == "kill" else hunt.RESTART_S)
                if f["target"] == "leader":
                    topic, _, part = f["of"].rpartition("/")
                    assert topic in topics and 0 <= int(part) < hunt.PARTITIONS, f
            if f["kind"] in ("kill-workload", "pause-workload") and f["workload"] == "app":
                seen[f"{f['kind']} app" + (" in a transaction" if f.get("in_transaction") else "")] += 1
            if f.get("target") == "coordinator":
                seen["coordinator: the producers'" if f.get("of") == hunt.PRODUCER_TXN_ID else "coordinator: the app's"] += 1
            if f.get("api") == "TxnOffsetCommit":
                assert f["target"] == "group-coordinator", f
    for want in ("kill coordinator", "kill leader", "restart coordinator", "restart leader", "kill-workload app",
                 "kill-workload app in a transaction", "pause-workload app", "coordinator: the producers'",
                 "coordinator: the app's"):
        assert seen[want], (want, seen)


def test_every_drawn_scenario_with_an_app_loads_and_passes_the_dry_run(tmp_path: Path) -> None:
    """What ``eos-chaos run FILE --dry-run`` does with each: load, preflight, plan its schedule."""
    apps: set[str] = set()
    for s, path in zip(SEEDS[:30], hunt.write_scenarios(tmp_path, SEEDS[:30], 60, tuple(hunt_apps.APPS)), strict=True):
        sc = scenario.load(str(path))  # the scenario format's every check, an app's included
        table.preflight(sc)  # a missing program, a contract function that fails on sample inputs
        assert len(schedule.plan(sc, s)) == len(sc.faults) and sc.duration == 60
        apps.add(str(hunt_apps.choose(s, tuple(hunt_apps.APPS))))
    assert apps == set(hunt_apps.APPS)


@pytest.mark.parametrize(("spelled", "pool"), [("drawn", None), ("none", ()), ("go-copier, py-copier", ("go-copier", "py-copier"))])
def test_apps_are_spelled_drawn_none_or_by_name(spelled: str, pool: tuple[str, ...] | None) -> None:
    assert hunt_apps.pool(spelled) == pool


@pytest.mark.parametrize("spelled", ["flink", "", "streams-count-sum,teleport"])
def test_an_unknown_app_is_refused_naming_the_flag_and_the_apps(spelled: str) -> None:
    with pytest.raises(ConfigError, match="--apps .*streams-count-sum, kafka-copier, py-copier, go-copier"):
        hunt_apps.pool(spelled)


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Fakes:
    return install_fakes(monkeypatch, tmp_path)


def test_the_dry_run_plans_every_app_with_the_java_client(fakes: Fakes, tmp_path: Path) -> None:
    r = CliRunner(env=WIDE).invoke(app, ["hunt", "--seeds", "6", "--seed", "5", "--duration", "40", "--clients",
                                         "java@4.4.0", "--transaction-versions", "2", "--apps",
                                         ",".join(hunt_apps.APPS), "--dry-run"])
    assert r.exit_code == 0, r.output
    assert r.output.count("and the shipped app") == 6 and "nothing started (--dry-run)" in r.output
    bad = CliRunner(env=WIDE).invoke(app, ["hunt", "--seeds", "1", "--apps", "flink", "--dry-run"])
    assert bad.exit_code == 2 and "--apps 'flink'" in bad.output, bad.output
