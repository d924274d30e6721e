"""``ProgressDeadline`` (harness/base/progress_deadline.py) on a hand-driven clock: within its budget
it never gives up; past it, it goes on while the rate of the last seconds projects the end within its
bound, and gives up naming progress, rate and projection when it does not, when nothing moves, or
past the bound. The slow machine of issue 41 (kafka-bug-20090's pump: 5,000 bumps in 57 s, then
~360 a second, 32,634 of 32,760 at the fixed 150 s) answers."""

from __future__ import annotations

import pytest

from harness.base.errors import WaitTimeout
from harness.base.progress_deadline import STRETCH, ProgressDeadline


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def run(deadline: ProgressDeadline, clock: Clock, total: int, rate_at: list[tuple[float, float]],
        step_s: float = 0.5) -> float:
    """Drive ``total`` units at a rate per second that changes at the given seconds; the seconds it
    took, or ``WaitTimeout`` from the deadline."""
    done = 0.0
    while done < total:
        deadline.check()
        rate = [r for since, r in rate_at if deadline.elapsed() >= since][-1]
        clock.t += step_s
        done = min(total, done + rate * step_s)
        deadline.update(int(done), total - int(done))
    return deadline.elapsed()


def test_the_slow_machine_of_issue_41_answers_past_the_fixed_150_s() -> None:
    clock = Clock()
    deadline = ProgressDeadline("the pump", 150, clock=clock)
    # 5,000 bumps in the first 57 s, then 297 a second: 32,634 at 150 s, as measured
    took = run(deadline, clock, 32_760, [(0, 5000 / 57), (57, 297)])
    assert 150 < took < 152 and deadline.overrun_s() == pytest.approx(took - 150)


def test_within_its_budget_it_never_gives_up_even_without_progress() -> None:
    clock = Clock()
    deadline = ProgressDeadline("the pump", 10, clock=clock)
    deadline.update(0, 100)
    clock.t += 10
    deadline.update(0, 100)
    deadline.check()  # 10 s: still inside
    clock.t += 0.1
    with pytest.raises(WaitTimeout, match=r"the pump: given up past its budget: 0 of 100 done in 10.1s; rate 0.0/s "
                                          r"over the last 10s; projected end none \(no progress in the window\); "
                                          r"budget 10s, bound 30s"):
        deadline.check()


def test_past_its_budget_it_gives_up_when_the_rate_projects_the_end_past_the_bound() -> None:
    clock = Clock()
    deadline = ProgressDeadline("the pump", 10, clock=clock)
    # 1 a second for 1,000: it would end at 1,000 s, far past 3 budgets
    with pytest.raises(WaitTimeout, match=r"the pump: given up past its budget: 1\d of 1,000 done in 10.\ds; "
                                          r"rate 1.0/s over the last 10s; projected end 10\d\ds; budget 10s, bound 30s"):
        run(deadline, clock, 1000, [(0, 1.0)])
    assert 10 < deadline.elapsed() <= 11


def test_the_rate_is_the_recent_one_not_the_average_since_the_start() -> None:
    clock = Clock()
    deadline = ProgressDeadline("the pump", 10, window_s=2, clock=clock)
    # 1 a second for 8 s, then 100 a second: at 10 s the average (~25/s) projects the end at ~40 s,
    # past the bound; the rate of the last 2 s projects it at ~18 s
    took = run(deadline, clock, 1000, [(0, 1.0), (8, 100.0)])
    assert 17 < took < 19


def test_it_never_goes_past_its_bound_whatever_the_projection() -> None:
    clock = Clock()
    deadline = ProgressDeadline("the pump", 10, bound_s=12, clock=clock)
    deadline.update(0, 10)
    clock.t += 12.5
    deadline.update(9, 1)  # one left at 9 a second: projected at ~12.6 s, but the bound passed
    assert deadline.expired() and deadline.bound_s == 12


def test_the_bound_is_stretch_budgets_and_never_below_the_budget() -> None:
    assert ProgressDeadline("x", 150).bound_s == 150 * STRETCH
    assert ProgressDeadline("x", 150, bound_s=100).bound_s == 150
