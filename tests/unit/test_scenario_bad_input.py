"""Bad scenario input is refused before anything starts, and quickly: a mix that cannot be planned,
duplicate YAML keys, alias bombs and deep nesting, names Kafka or the checker would refuse only once
a cluster is up, a --duration that cuts faults off, and files that cannot be read. Each names the
file and line (or the flag); at the command line each is exit 2 with no traceback."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import typer

from chaos import schedule
from harness import matrix, runner, scenario
from harness.errors import ConfigError
from tests.unit.test_cli import _restore_logging, cli  # noqa: F401 - the logging fixture applies to every test
from tests.unit.test_scenario import _load_error

#: The start of every file here (4 lines: what a test adds begins on line 5).
HEAD = "name: s\ndescription: x\nworkloads:\n  - kind: txn-producer\n"


def _file(tmp_path: Path, body: str, head: str = HEAD) -> Path:
    f = tmp_path / "sc.yaml"
    f.write_text(head + body)
    return f


def _refused(r: Any, *said: str) -> None:
    """A command line refusal: exit 2, what it said, and neither a traceback nor an internal error."""
    assert r.exit_code == 2, r.output
    assert "internal error" not in r.output and "Traceback" not in r.output, r.output
    for words in said:
        assert words in r.output, r.output


@pytest.fixture
def no_planning(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Scenarios a plan was drawn for: validation must refuse these before the planner sees them
    (the planner looped for ever on a mix that cannot move on)."""
    planned: list[Any] = []
    monkeypatch.setattr(schedule, "plan", lambda sc, seed: planned.append(sc) or [])
    return planned


@pytest.fixture
def no_real_run(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Runs that would have started (none may)."""
    started: list[Any] = []
    monkeypatch.setattr(runner, "run", lambda *a, **kw: started.append(a))
    return started


@pytest.fixture
def no_matrix_run(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Matrices that would have started running (none may)."""
    started: list[Any] = []

    def run_matrix(*args: Any) -> None:
        started.append(args)
        raise typer.Exit(0)

    monkeypatch.setattr(matrix, "run_matrix", run_matrix)
    return started


# ---- 1, 2: a mix that cannot be planned ----

@pytest.mark.parametrize("mix", [
    "{kinds: [[kill, 1]], duration: [0, 0], gap: [0, 0]}",
    "{kinds: [[kill, 1]], duration: [0.04, 0.04], gap: [0, 0]}",  # planned to 0.1 s: 0 s each
])
def test_a_mix_whose_faults_and_gaps_take_no_time_is_refused(tmp_path: Path, mix: str) -> None:
    msg = _load_error(tmp_path, f"mix: {mix}\n")
    assert "FILE:5: mix: duration [" in msg and "the plan would never reach the run's end" in msg, msg


def test_a_mix_that_would_plan_more_faults_than_a_run_holds_is_refused(tmp_path: Path) -> None:
    msg = _load_error(tmp_path, "duration: 86400\nmix: {kinds: [[kill, 1]], duration: [0, 0.2], gap: [0, 0.2]}\n")
    assert "FILE:6: mix: duration [0, 0.2] and gap [0, 0.2]: about " in msg and "a mix plans at most 20,000" in msg, msg


def test_a_longer_run_that_makes_the_mix_plan_too_many_is_refused_naming_the_flag(tmp_path: Path) -> None:
    sc = scenario.load(str(_file(tmp_path, "duration: 60\nmix: {kinds: [[kill, 1]], duration: [0, 0.2], gap: [0, 0.2]}\n")))
    assert schedule.plan(sc, 1), "a minute of it is fine"
    with pytest.raises(ConfigError, match=r"^--duration 86400: the scenario's mix: .*a mix plans at most 20,000") as info:
        sc.with_duration(86400)
    assert info.value.exit_code == 2


def test_the_planner_stops_at_its_cap_whatever_it_is_given() -> None:
    sc = scenario.load("mixed")
    # about 55,000 faults of 0 s, 1 ms apart (the cap is 40,000): a mix validation refuses, handed to the planner directly
    unchecked = sc.model_copy(update={"mix": sc.mix.model_copy(update={"duration": (0.0, 0.0), "gap": (0.001, 0.001)})})
    started = time.monotonic()
    with pytest.raises(ConfigError, match=r"^scenario mixed: its mix planned 40,000 faults and had not reached the run's end"):
        schedule.plan(unchecked, 1)
    assert time.monotonic() - started < 5


def test_every_library_mix_plans_within_the_bound_even_for_a_day() -> None:
    for name in scenario.names():
        sc = scenario.load(name)
        assert sc.mix is None or schedule.mix_problem(sc.mix, scenario.MAX_DURATION_S) is None, name


@pytest.mark.parametrize("mix, expected", [
    ("{kinds: [[kill, 0], [pause, 0]]}", "FILE:5: mix.kinds: every weight is 0: at least one kind needs a weight above 0"),
    ("{kinds: []}", "FILE:5: mix.kinds: empty: a mix draws from at least one [kind, weight] pair"),
])
def test_a_mix_with_nothing_to_draw_is_refused(tmp_path: Path, mix: str, expected: str) -> None:
    assert expected in _load_error(tmp_path, f"mix: {mix}\n")


@pytest.mark.parametrize("mix", ["{kinds: [[kill, 1]], duration: [0, 0], gap: [0, 0]}", "{kinds: [[kill, 0]]}", "{kinds: []}"])
def test_run_dry_run_and_matrix_refuse_a_mix_that_cannot_be_planned(tmp_path: Path, mix: str, no_planning: list[Any],
                                                                     no_real_run: list[Any], no_matrix_run: list[Any]) -> None:
    f = _file(tmp_path, f"mix: {mix}\n")
    for args in (["run", str(f), "--dry-run"], ["run", str(f)],
                 ["matrix", "--scenarios", str(f), "--out", str(tmp_path / "m")]):
        _refused(cli(*args), f"{f}:5: mix")
    assert no_planning == [] and no_real_run == [] and no_matrix_run == []
