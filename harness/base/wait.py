"""Deadline-bound polling: the only way the harness waits for something to become true."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from harness.base.errors import WaitTimeout

T = TypeVar("T")


def wait_until(
    probe: Callable[[], T | None],
    *,
    timeout: float,
    what: str,
    state: Callable[[], str] | None = None,
    interval: float = 0.2,
    max_interval: float = 2.0,
    fatal: Callable[[], str | None] | None = None,
) -> T:
    """Return the first truthy value of ``probe()`` or raise ``WaitTimeout`` at the deadline.

    ``probe`` may raise: the exception is remembered and reported (chained) if the deadline passes.
    ``state`` describes the last state seen, evaluated only when giving up.
    ``fatal`` returns a reason when the condition can never become true (a process exited):
    then we fail at once instead of waiting out the deadline.
    """
    deadline = time.monotonic() + timeout
    last_exc: BaseException | None = None
    last_value: object = None
    pause = interval
    while True:
        try:
            value = probe()
            last_value = value
            if value:
                return value
            last_exc = None
        except WaitTimeout:
            raise
        except Exception as exc:  # noqa: BLE001 - any probe failure is "not yet", reported at the end
            last_exc = exc
        if fatal is not None:
            reason = fatal()
            if reason:
                raise WaitTimeout(f"gave up waiting for {what}: {reason}") from last_exc
        now = time.monotonic()
        if now >= deadline:
            seen = _describe_state(state, last_value, last_exc)
            raise WaitTimeout(f"timed out after {timeout:.0f}s waiting for {what}; last state: {seen}") from last_exc
        time.sleep(min(pause, max(0.0, deadline - now)))
        pause = min(pause * 1.5, max_interval)


def _describe_state(state: Callable[[], str] | None, last_value: object, last_exc: BaseException | None) -> str:
    parts: list[str] = []
    if state is not None:
        try:
            parts.append(state())
        except Exception as exc:  # noqa: BLE001 - the description must never mask the timeout
            parts.append(f"(could not describe state: {exc!r})")
    elif last_value not in (None, False):
        parts.append(repr(last_value))
    if last_exc is not None:
        parts.append(f"last error: {type(last_exc).__name__}: {last_exc}")
    return "; ".join(parts) or "nothing observed"
