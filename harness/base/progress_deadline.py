"""A deadline sized by measured progress: a long piece of work (an epoch pump's 32,760 bumps, an app
draining its backlog) gets its planned budget, and past it goes on for as long as its recent rate
says it will finish within a generous bound, so a slow machine gets an answer instead of a timeout
at 99.6 % (kafka-bug-20090 on a 2-core machine: 32,634 of 32,760 bumps at a fixed 150 s).

Its users: the epoch pump (``bump-producer-epoch``'s ``timeout_s``), an app's drain (``drain_s``)
and the final scans' read-back (``READ_BACK_TIMEOUT_S``).

The rate is measured over the last ``window_s`` seconds, not since the start: the same work can
run at a quarter of its later speed while a cluster warms up (the first 5,000 bumps in 57 s, then
~360 a second), and the projection must follow the rate now.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

from harness.base.errors import WaitTimeout

#: How far past its budget a piece of work may go while its rate projects completion: the bound is
#: this many budgets from the start. Three: a machine three times slower than the one the budget was
#: measured on still answers; one that would take longer is not one that runs the suite.
STRETCH = 3.0
#: The rate is the progress of the last this many seconds (at least two samples).
WINDOW_S = 10.0


class ProgressDeadline:
    """Whether work that reports ``(done, remaining)`` may go on: always within ``budget_s``; past it
    while its recent rate projects the end within ``bound_s`` of the start (``STRETCH`` budgets);
    never past ``bound_s``."""

    def __init__(self, what: str, budget_s: float, bound_s: float | None = None, window_s: float = WINDOW_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.what = what
        self.budget_s = budget_s
        self.bound_s = budget_s * STRETCH if bound_s is None else max(bound_s, budget_s)
        self.window_s = window_s
        self.clock = clock
        self.started = clock()
        self._samples: deque[tuple[float, int]] = deque()
        self.done = 0
        self.remaining: int | None = None

    def start(self) -> None:
        """Count from now (the work begins after what was set up since the deadline was made)."""
        self.started = self.clock()
        self._samples.clear()
        self.done, self.remaining = 0, None

    def elapsed(self) -> float:
        return self.clock() - self.started

    def overrun_s(self) -> float:
        """Seconds past the budget so far (0 within it)."""
        return max(0.0, self.elapsed() - self.budget_s)

    def rate(self) -> float | None:
        """Units per second over the last ``window_s`` (None before two samples a moment apart)."""
        if len(self._samples) < 2:
            return None
        (t0, d0), (t1, d1) = self._samples[0], self._samples[-1]
        return (d1 - d0) / (t1 - t0) if t1 > t0 else None

    def projected_s(self) -> float | None:
        """Seconds from the start at which the work ends at the recent rate (None: no rate yet, or
        nothing moved in the window)."""
        rate = self.rate()
        if self.remaining is None or not rate or rate <= 0:
            return None
        return self.elapsed() + self.remaining / rate

    def update(self, done: int, remaining: int) -> None:
        now = self.clock()
        self.done, self.remaining = done, remaining
        self._samples.append((now, done))
        while len(self._samples) > 2 and now - self._samples[1][0] >= self.window_s:
            self._samples.popleft()

    def state(self) -> str:
        """Progress, rate and projection in words, for a log line or an error."""
        rate, projected = self.rate(), self.projected_s()
        total = self.done + self.remaining if self.remaining is not None else None
        return (f"{self.done:,} of {total:,} done" if total is not None else f"{self.done:,} done") + \
            f" in {self.elapsed():.1f}s; rate {f'{rate:,.1f}/s' if rate is not None else 'not measured yet'}" + \
            f" over the last {self.window_s:g}s; projected end " + \
            (f"{projected:.0f}s" if projected is not None else "none (no progress in the window)") + \
            f"; budget {self.budget_s:g}s, bound {self.bound_s:g}s"

    def expired(self) -> bool:
        """True when the work should give up now."""
        elapsed = self.elapsed()
        if elapsed <= self.budget_s:
            return False
        if elapsed > self.bound_s:
            return True
        projected = self.projected_s()
        return projected is None or projected > self.bound_s

    def check(self) -> None:
        """``WaitTimeout`` naming progress, rate and projection once ``expired``."""
        if self.expired():
            raise WaitTimeout(f"{self.what}: given up past its budget: {self.state()}")
