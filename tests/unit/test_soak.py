"""The soak's bookkeeping without a cluster: seeds drawn from the master seed, scenario names
checked, totals and replay commands, and soak.html from a summary. (A real soak, and Ctrl-C in
the middle of one: tests/chaos/test_soak.py.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.base.errors import ConfigError
from harness.campaigns.soak import Soak, SoakRun, default_scenarios, resolve, seeds
from harness.report.soak_page import render_soak


def run(name: str, seed: int, valid: bool | None, as_expected: bool | None, **kw) -> SoakRun:  # type: ignore[no-untyped-def]
    return SoakRun(name, seed, f"/nowhere/{name}-{seed}", valid, as_expected,
                   {"duplicate": 2} if valid is False else {}, 20.5, 200.0, 60.0, **kw)


def test_the_same_master_seed_gives_the_same_run_seeds() -> None:
    a, b, c = seeds(7), seeds(7), seeds(8)
    first = [a() for _ in range(5)]
    assert first == [b() for _ in range(5)] and first != [c() for _ in range(5)]
    assert len(set(first)) == 5


def test_unknown_scenarios_are_named_with_what_is_allowed() -> None:
    with pytest.raises(ConfigError, match=r"unknown \['nope'\]; allowed: app-flink, app-flink-alos, app-go-copier, "):
        resolve(["baseline", "nope"], None)
    assert [s.duration for s in resolve(["baseline"], 12.0)] == [12.0]


def test_the_default_soak_leaves_out_negative_controls() -> None:
    names = default_scenarios()
    assert "baseline" in names and not any(n.startswith("negative-") for n in names)
    assert "spark-builtin-sink" not in names


def test_totals_and_replays_count_what_was_not_as_expected() -> None:
    s = Soak(7, ["baseline", "leader-kill"], "local", 4, None, False)
    s.runs = [run("baseline", 1, True, True), run("leader-kill", 2, False, False),
              run("baseline", 3, None, None, error="ClusterError: no leader"),
              run("leader-kill", 4, None, None, error="interrupted before its verdict", interrupted=True)]
    t = s.totals()
    assert (t["runs"], t["as_expected"], t["not_as_expected"], t["errors"]) == (4, 2, 2, 2)
    assert t["anomalies"] == {"duplicate": 2}
    assert s.replays() == ["eos-chaos run leader-kill --backend local --seed 2",
                           "eos-chaos run baseline --backend local --seed 3"]  # not the interrupted one


def test_soak_page_lists_runs_totals_and_replays(tmp_path: Path) -> None:
    s = Soak(7, ["baseline"], "local", 2, None, True, stopped_because="--fail-fast: leader-kill seed 2 was not as expected")
    s.runs = [run("baseline", 1, True, True), run("leader-kill", 2, False, False)]
    page = render_soak(s.as_json(), tmp_path)
    words = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))
    assert "1 NOT AS EXPECTED" in words and "Stopped: --fail-fast: leader-kill seed 2" in words
    assert "eos-chaos run leader-kill --backend local --seed 2" in words
    assert "INVALID (not as expected)" in words and "duplicate: 2" in words
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)


def test_a_replay_is_the_command_the_run_recorded() -> None:
    s = Soak(7, ["baseline"], "local", 1, None, False)
    s.runs = [run("baseline", 1, False, False, command="eos-chaos run baseline --backend local --seed 1 --duration 15")]
    assert s.replays() == ["eos-chaos run baseline --backend local --seed 1 --duration 15"]  # the soak's --duration


def test_unknown_runs_are_counted_apart_and_a_soak_that_only_could_not_judge_is_no_finding() -> None:
    s = Soak(7, ["spark-executor-kill"], "local", 2, None, False, healed_at_end=True)
    s.runs = [run("spark-executor-kill", 1, True, True), run("spark-executor-kill", 2, "unknown", False)]  # type: ignore[arg-type]
    t = s.totals()
    assert (t["valid"], t["invalid"], t["unknown"], t["not_as_expected"]) == (1, 0, 1, 1)
    assert not s.as_expected and s.only_unknown  # exit 3, not 1
    s.runs.append(run("leader-kill", 3, False, False))
    assert not s.only_unknown  # a finding: exit 1
