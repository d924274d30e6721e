"""Writing the history: one append-only JSON-lines file per OS process, each line flushed as it is
written, so a crashed (or SIGKILLed) workload still leaves a checkable prefix.

Times come from ``CLOCK_MONOTONIC``, shared by every process on the machine, minus the run's start
(``EOS_CHAOS_RUN_T0``), so files from many processes merge into one order.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import orjson

from harness.history.model import COMPLETIONS, INVOKE

ENV_T0 = "EOS_CHAOS_RUN_T0"
HISTORY_DIR = "history"


def run_t0() -> int:
    """The run's start on the monotonic clock (ns): inherited from the runner, or now."""
    t0 = os.environ.get(ENV_T0)
    if t0 is None:
        t0 = str(time.monotonic_ns())
        os.environ[ENV_T0] = t0
    return int(t0)


class Recorder:
    """Appends ops for the logical processes of one OS process; checks invoke/completion pairing."""

    def __init__(self, run_dir: Path, name: str) -> None:
        d = run_dir / HISTORY_DIR
        d.mkdir(parents=True, exist_ok=True)
        self.path = d / f"{name}.jsonl"
        self._f = open(self.path, "ab", buffering=0)  # unbuffered: every write reaches the file at once
        self._t0 = run_t0()
        self._open: dict[str, str] = {}  # process -> f of its outstanding invoke
        self._lock = threading.Lock()

    def now(self) -> int:
        return time.monotonic_ns() - self._t0

    def _write(self, op: dict[str, Any]) -> None:
        self._f.write(orjson.dumps(op) + b"\n")

    def invoke(self, process: str, f: str, value: Any = None, **extra: Any) -> None:
        with self._lock:
            if process in self._open:
                raise RuntimeError(f"process {process} invoked {f} while its {self._open[process]} is outstanding")
            self._open[process] = f
            self._write({"time": self.now(), "process": process, "type": INVOKE, "f": f, "value": value, **extra})

    def complete(self, process: str, type_: str, f: str, value: Any = None, error: str | None = None, **extra: Any) -> None:
        if type_ not in COMPLETIONS:
            raise ValueError(f"completion type {type_!r}; allowed {COMPLETIONS}")
        with self._lock:
            if self._open.get(process) != f:
                raise RuntimeError(f"process {process} completed {f} without an outstanding invoke of it")
            del self._open[process]
            op = {"time": self.now(), "process": process, "type": type_, "f": f, "value": value, **extra}
            if error is not None:
                op["error"] = error
            self._write(op)

    def event(self, process: str, f: str, value: Any = None, type_: str = "info", **extra: Any) -> None:
        """A one-line event with no invoke (faults, fencing notices, final scans)."""
        with self._lock:
            self._write({"time": self.now(), "process": process, "type": type_, "f": f, "value": value, **extra})

    def close(self) -> None:
        with self._lock:
            self._f.close()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
