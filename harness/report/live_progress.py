"""What a run is doing, while it runs: phase, elapsed/remaining, active faults, committed
transactions and errors so far.

On a terminal it is a live panel (rich); anywhere else (CI, a pipe, a log file) it is one plain line
every ``PLAIN_EVERY_S`` seconds and at each phase change, so a CI log shows progress without
control characters. The counts come from tailing the run's own history files (each workload
process appends and flushes its lines), so no workload has to report to the runner.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.live import Live
from rich.table import Table

from harness.history.tail import HistoryTail

#: How often the counts are refreshed (reading only what was appended since the last look).
REFRESH_S = 1.0
#: Without a terminal: a progress line this often (and at every phase change).
PLAIN_EVERY_S = 15.0


def interactive(console: Console) -> bool:
    """A live panel only on a real terminal and never in CI (``CI`` set, as CI systems do)."""
    return console.is_terminal and not os.environ.get("CI")


class ProgressLine:
    """A background thread that shows the run's state until ``close``."""

    def __init__(self, run_dir: Path, duration: float, active_faults: Callable[[], list[str]],
                 console: Console | None = None, live: bool | None = None) -> None:
        self.console = console or Console(stderr=True, emoji=False)
        self.live = interactive(self.console) if live is None else live
        self.tail = HistoryTail(run_dir)
        self.duration = duration
        self.active_faults = active_faults
        self.phase = "starting"
        self._t0 = time.monotonic()
        self._run_t0: float | None = None
        self._stop = threading.Event()
        self._last_plain = 0.0
        self._thread = threading.Thread(target=self._loop, name="progress", daemon=True)
        self._live: Live | None = None

    def start(self) -> ProgressLine:
        if self.live:
            self._live = Live(self._panel(), console=self.console, refresh_per_second=2, transient=True)
            self._live.start()
        self._thread.start()
        return self

    def set_phase(self, phase: str) -> None:
        self.phase = phase
        if phase == "running":
            self._run_t0 = time.monotonic()
        if not self.live:
            self._plain()

    def line(self) -> str:
        c = self.tail.counts
        faults = self.active_faults()
        elapsed = time.monotonic() - (self._run_t0 or self._t0)
        clock = f"{min(elapsed, self.duration):5.0f}s/{self.duration:.0f}s" if self._run_t0 else f"{elapsed:5.0f}s"
        err = f", last: {c.last_error}" if c.errors else ""
        return (f"[{clock}] {self.phase} | faults: {', '.join(faults) if faults else 'none'} | "
                f"txns committed {c.committed}, aborted {c.aborted}, unknown {c.unknown} | errors {c.errors}{err}")

    def _panel(self) -> Table:
        c = self.tail.counts
        t = Table.grid(padding=(0, 2))
        elapsed = time.monotonic() - (self._run_t0 or self._t0)
        remaining = max(0.0, self.duration - elapsed) if self._run_t0 else self.duration
        faults = self.active_faults()
        t.add_row("phase", f"[bold]{self.phase}[/]", "elapsed", f"{elapsed:.0f}s", "remaining", f"{remaining:.0f}s")
        t.add_row("faults", ", ".join(faults) if faults else "none")
        t.add_row("committed", str(c.committed), "aborted", str(c.aborted), "unknown", str(c.unknown))
        t.add_row("errors", str(c.errors), "last", c.last_error or "-")
        return t

    def _plain(self) -> None:
        self._last_plain = time.monotonic()
        self.console.print(self.line(), highlight=False, markup=False, soft_wrap=True)

    def _loop(self) -> None:
        while not self._stop.wait(REFRESH_S):
            self.tail.poll()
            if self._live is not None:
                self._live.update(self._panel())
            elif time.monotonic() - self._last_plain >= PLAIN_EVERY_S:
                self._plain()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self.tail.poll()
        if self._live is not None:
            self._live.stop()
        self._plain()  # the last state stays on screen (the live panel is transient)

    def __enter__(self) -> ProgressLine:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
