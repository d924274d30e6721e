import time

import pytest

from harness.base.errors import WaitTimeout
from harness.base.wait import wait_until


def test_returns_the_first_truthy_value():
    calls = iter([None, 0, "ready"])
    assert wait_until(lambda: next(calls), timeout=5, what="x", interval=0.001) == "ready"


def test_timeout_names_what_and_the_last_state_and_chains_the_last_error():
    def probe():
        raise ConnectionError("refused")

    with pytest.raises(WaitTimeout) as info:
        wait_until(probe, timeout=0.2, what="the broker", state=lambda: "node 1 down", interval=0.01)
    msg = str(info.value)
    assert "the broker" in msg and "node 1 down" in msg and "refused" in msg
    assert isinstance(info.value.__cause__, ConnectionError)


def test_fatal_fails_at_once_instead_of_waiting_out_the_deadline():
    t0 = time.monotonic()
    with pytest.raises(WaitTimeout, match="process exited with 1"):
        wait_until(lambda: False, timeout=30, what="start", fatal=lambda: "process exited with 1")
    assert time.monotonic() - t0 < 5
