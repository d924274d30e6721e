"""The app's drain after heal (harness/phases/app_drain.py) when the cluster does not answer a
question for a while: a partition with no leader (a broker the last fault killed is back, its
leadership moving) is "not drained yet", asked again; it ended a PySpark app's run with an internal
error (NOT_LEADER_FOR_PARTITION from a watermark query). The drain runs on a clock of its own,
moved by its sleeps (its looks 0.5 s apart): a starved machine changes none of its figures (two
of these tests failed beside the real-cluster tests on the real clock)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from harness.base.progress_deadline import ProgressDeadline
from harness.phases import app_drain
from harness.workloads.registry import AppSettings

SETTINGS = AppSettings.model_validate({"command": ["x"], "inputs": ["in"], "outputs": ["out"], "ready": {"log": "x"},
                                       "contract": {"kind": "map"}, "drain_s": 30})


class DrainClock:
    """``app_drain``'s time (``time.monotonic``, ``time.sleep``, its ProgressDeadline's clock)."""

    def __init__(self) -> None:
        self.t = 1000.0  # as a monotonic clock: far from 0

    def monotonic(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += seconds


@pytest.fixture(autouse=True)
def clock(monkeypatch: pytest.MonkeyPatch) -> DrainClock:
    c = DrainClock()
    monkeypatch.setattr(app_drain, "time", c)
    monkeypatch.setattr(app_drain, "ProgressDeadline",
                        lambda what, budget_s, **kw: ProgressDeadline(what, budget_s, clock=c.monotonic, **kw))
    return c


class FlakyProbe:
    """A probe whose first ``failures`` output questions find no leader; then the output is still."""

    def __init__(self, failures: int) -> None:
        self.failures = failures

    def __enter__(self) -> FlakyProbe:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def group_lag(self, group: str, inputs: list[Any]) -> None:
        return None

    def output_ends(self, topics: list[str], partitions: dict[str, int]) -> tuple[dict[str, int], bool]:
        if self.failures:
            self.failures -= 1
            raise KafkaException(KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION, "Failed to get watermark offsets"))
        return {"out-0": 7}, False


def test_a_question_with_no_leader_is_asked_again_not_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(app_drain, "QUIET_S", 0.6)
    monkeypatch.setattr(app_drain, "DrainProbe", lambda bootstrap: FlakyProbe(failures=3))
    d = app_drain.drain("127.0.0.1:1", SETTINGS, {"in": 1, "out": 1}, ["in"])
    assert d.drained is True and "outputs quiet" in d.how, d
    assert d.took_s >= 1.5 + 0.6  # three failed looks, 0.5 s apart, are no quiet


def test_no_answer_until_the_deadline_is_not_drained_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(app_drain, "DrainProbe", lambda bootstrap: FlakyProbe(failures=10**6))
    d = app_drain.drain("127.0.0.1:1", SETTINGS.model_copy(update={"drain_s": 1.2}), {"in": 1, "out": 1}, ["in"])
    assert d.drained is False and "NOT_LEADER_FOR_PARTITION" in str((d.last or {})["outputs_end"]), d


class SlowApp:
    """A probe whose group's lag falls by ``step`` each look, from ``lag``; outputs always open."""

    def __init__(self, lag: int, step: int) -> None:
        self.lag, self.step = lag, step

    def __enter__(self) -> SlowApp:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def group_lag(self, group: str, inputs: list[Any]) -> dict[str, int]:
        self.lag = max(0, self.lag - self.step)
        return {"in-0": self.lag}

    def output_ends(self, topics: list[str], partitions: dict[str, int]) -> tuple[dict[str, int], bool]:
        return {"out-0": 7}, False


def test_an_app_still_catching_up_at_drain_s_is_waited_for_while_its_lag_falls(monkeypatch: pytest.MonkeyPatch) -> None:
    # 10 a look, a look every 0.5 s, 100 to go: ~5 s, past drain_s 2 s, inside 3 x 2 s
    monkeypatch.setattr(app_drain, "DrainProbe", lambda bootstrap: SlowApp(lag=100, step=10))
    d = app_drain.drain("127.0.0.1:1", SETTINGS.model_copy(update={"drain_s": 2.0}), {"in": 1, "out": 1}, ["in"])
    assert d.drained is True and 2.0 < d.took_s < 6.0, d


def test_a_lag_too_slow_to_end_within_the_bound_is_given_up_at_drain_s_naming_its_rate(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(app_drain, "DrainProbe", lambda bootstrap: SlowApp(lag=10_000, step=1))
    d = app_drain.drain("127.0.0.1:1", SETTINGS.model_copy(update={"drain_s": 1.0}), {"in": 1, "out": 1}, ["in"])
    assert d.drained is False and d.took_s < 1.6, d
    # a look every 0.5 s, one record a look: 2.0/s
    rate = re.search(r"rate (\d+\.\d)/s", d.how)
    assert rate and float(rate.group(1)) == 2.0 and "projected end" in d.how, d


def test_an_instance_still_starting_again_at_drain_s_is_waited_for_up_to_the_bound(
        monkeypatch: pytest.MonkeyPatch, clock: DrainClock) -> None:
    # no lag (the other instance caught up), but app-0, killed and started again, is ready only after
    # 2.5 s, past drain_s 1 s: a starved machine's restart (session 48: > 60 s at load 45)
    monkeypatch.setattr(app_drain, "DrainProbe", lambda bootstrap: SlowApp(lag=0, step=0))
    t0 = clock.monotonic()
    d = app_drain.drain("127.0.0.1:1", SETTINGS.model_copy(update={"drain_s": 1.0}), {"in": 1, "out": 1}, ["in"],
                        not_running=lambda: ["app-0"] if clock.monotonic() - t0 < 2.5 else [])
    assert d.drained is True and 2.5 <= d.took_s < 3.5, d


def test_its_twin_never_ready_again_is_given_up_at_the_bound_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(app_drain, "DrainProbe", lambda bootstrap: SlowApp(lag=0, step=0))
    d = app_drain.drain("127.0.0.1:1", SETTINGS.model_copy(update={"drain_s": 0.5}), {"in": 1, "out": 1}, ["in"],
                        not_running=lambda: ["app-0"])
    assert d.drained is False and 1.5 <= d.took_s < 2.5, d  # the bound: 3 x drain_s
    assert (d.last or {})["not_ready_again"] == ["app-0"], d


def test_an_app_s_workdir_is_absolute_whatever_the_run_folder_s_path(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # the app runs in the scenario's folder: a relative run folder (matrix --out results/x) put its
    # state under harness/scenarios/results/
    from harness.workloads.app_wrapper import place_of
    from harness.workloads.common import WorkloadConfig

    monkeypatch.chdir(tmp_path)
    cfg = WorkloadConfig(run_dir="results/x", name="app-0", bootstrap="127.0.0.1:1", topics=["in", "out"],
                         partitions=1)
    assert place_of(cfg, SETTINGS).workdir == str(tmp_path / "results" / "x" / "workloads" / "app-0")
