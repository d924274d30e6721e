"""``wait_until``'s ``moving``: past its timeout a wait goes on while its work still moves (a starved
machine's broker whose log grows for 120 s of start-up), up to a bound; work that stopped moving
times out at its timeout as before (the clean twin)."""

from __future__ import annotations

import itertools
import time

import pytest

from harness.base.errors import WaitTimeout
from harness.base.wait import Moving, wait_until


def test_work_still_moving_past_the_timeout_is_waited_for() -> None:
    started = time.monotonic()
    ticks = itertools.count()

    def done() -> bool:
        return time.monotonic() - started > 0.8

    assert wait_until(done, timeout=0.3, what="the slow start", interval=0.05, max_interval=0.05,
                      moving=Moving(lambda: next(ticks), quiet_s=0.2, stretch=10))


def test_work_that_stopped_moving_times_out_at_its_timeout_and_moving_work_at_its_bound() -> None:
    started = time.monotonic()
    with pytest.raises(WaitTimeout, match=r"timed out after 0s waiting for the stuck start"):
        wait_until(lambda: False, timeout=0.3, what="the stuck start", interval=0.05, max_interval=0.05,
                   moving=Moving(lambda: "the same", quiet_s=0.2, stretch=10))
    assert time.monotonic() - started < 0.6
    started = time.monotonic()
    ticks = itertools.count()
    with pytest.raises(WaitTimeout, match=r"past its 0s while it moved"):
        wait_until(lambda: False, timeout=0.3, what="the endless start", interval=0.05, max_interval=0.05,
                   moving=Moving(lambda: next(ticks), quiet_s=0.2, stretch=3))
    assert 0.85 <= time.monotonic() - started < 1.5, "bounded at stretch x timeout"
