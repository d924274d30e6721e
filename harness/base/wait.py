"""Deadline-bound polling: the only way the harness waits for something to become true."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from harness.base.errors import WaitTimeout

T = TypeVar("T")
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Moving:
    """Work that shows it is still moving (a broker's log growing as it loads its partitions): past
    the wait's timeout it goes on while ``marker()`` changed within the last ``quiet_s`` seconds, up
    to ``stretch`` times the timeout in all. A starved machine's broker that takes 120 s to start is
    slow, not stuck (the hunt at load 18: restarts timed out at 90 s while the log still grew)."""

    marker: Callable[[], object]
    quiet_s: float = 15.0
    stretch: float = 3.0


def wait_until(
    probe: Callable[[], T | None],
    *,
    timeout: float,
    what: str,
    state: Callable[[], str] | None = None,
    interval: float = 0.2,
    max_interval: float = 2.0,
    fatal: Callable[[], str | None] | None = None,
    moving: Moving | None = None,
) -> T:
    """Return the first truthy value of ``probe()`` or raise ``WaitTimeout`` at the deadline.

    ``probe`` may raise: the exception is remembered and reported (chained) if the deadline passes.
    ``state`` describes the last state seen, evaluated only when giving up.
    ``fatal`` returns a reason when the condition can never become true (a process exited):
    then we fail at once instead of waiting out the deadline.
    ``moving``: past the deadline, go on while the work's marker keeps changing (``Moving``).
    """
    started = time.monotonic()
    deadline = started + timeout
    last_exc: BaseException | None = None
    last_value: object = None
    pause = interval
    mark, moved_at = (moving.marker(), started) if moving is not None else (None, started)
    stretched = False
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
        if moving is not None and (latest := moving.marker()) != mark:
            mark, moved_at = latest, now
        if now >= deadline and moving is not None and now - moved_at < moving.quiet_s \
                and now - started < timeout * moving.stretch:
            if not stretched:
                log.info(f"still waiting for {what} past {timeout:.0f}s: it is still moving (a slow machine)")
            stretched = True
            deadline = min(moved_at + moving.quiet_s, started + timeout * moving.stretch)
        if now >= deadline:
            seen = _describe_state(state, last_value, last_exc)
            waited = f"{now - started:.0f}s (past its {timeout:.0f}s while it moved)" if stretched else f"{timeout:.0f}s"
            raise WaitTimeout(f"timed out after {waited} waiting for {what}; last state: {seen}") from last_exc
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
