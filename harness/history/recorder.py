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


#: Beside a history file, the next incarnation ``Recorder.new_process`` may hand out (decimal, fixed
#: width): a file's last line names the newest process only when its processes lived one after another.
INCARNATIONS = ".incarnations"
_WIDTH = 12


class Recorder:
    """Appends ops for the logical processes of one OS process; checks invoke/completion pairing.
    Safe to share between threads (a workload process running several producers).

    A workload restarted after a kill appends to the file its earlier start wrote: first the line
    that kill cut off is dropped (the loader would drop it too, but not in the middle of a file),
    and ``first_incarnation`` continues the numbering of its processes (``<name>.<incarnation>``),
    so that no process name, and no value named after one, is used twice in a run: after the one
    the file's last line names, and after every one ``new_process`` handed out (several processes
    live at once there, so the last line need not name the newest)."""

    def __init__(self, run_dir: Path, name: str) -> None:
        d = run_dir / HISTORY_DIR
        d.mkdir(parents=True, exist_ok=True)
        self.path = d / f"{name}.jsonl"
        last = _drop_cut_line(self.path)
        self._reserved = d / f"{name}{INCARNATIONS}"
        self.first_incarnation = max(_incarnation_after(last, name), _read_reserved(self._reserved))
        self._next = self.first_incarnation
        self._reserved_fd: int | None = None
        self._f = open(self.path, "ab", buffering=0)  # unbuffered: every write reaches the file at once
        self._t0 = run_t0()
        self._open: dict[str, str] = {}  # process -> f of its outstanding invoke
        self._lock = threading.Lock()

    def process(self, name: str, k: int = 0) -> str:
        """The name of this OS process's ``k``-th logical process of workload ``name`` (its processes
        living one after another)."""
        return f"{name}.{self.first_incarnation + k}"

    def new_process(self, name: str) -> str:
        """A name for a new logical process of workload ``name``, ``<name>.<n>`` with ``n`` never handed
        out before in this run, also while other processes of this OS process live on (threads).
        The reservation is written before the name is returned: a restart after a kill goes on after it."""
        with self._lock:
            n = self._next
            self._next += 1
            if self._reserved_fd is None:
                self._reserved_fd = os.open(self._reserved, os.O_RDWR | os.O_CREAT, 0o644)
            # one pwrite of a fixed width: a kill leaves the old number or the new one, never a mix
            os.pwrite(self._reserved_fd, b"%0*d\n" % (_WIDTH, self._next), 0)
            return f"{name}.{n}"

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
            if self._reserved_fd is not None:
                os.close(self._reserved_fd)
                self._reserved_fd = None

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _drop_cut_line(path: Path) -> bytes | None:
    """Cut ``path`` back to its last whole line; that line (None: no file, or no whole line)."""
    if not path.exists():
        return None
    with open(path, "r+b") as f:
        end = f.seek(0, os.SEEK_END)
        tail, at = b"", end
        while at > 0 and tail.count(b"\n") < 2:  # the whole last line, however long
            step = min(1 << 16, at)
            at -= step
            f.seek(at)
            tail = f.read(step) + tail
        keep = tail.rfind(b"\n") + 1  # 0: not one whole line in the file
        if at + keep != end:
            f.truncate(at + keep)
        whole = tail[:keep].rstrip(b"\n")
        return whole[whole.rfind(b"\n") + 1:] or None


def _read_reserved(path: Path) -> int:
    """The next incarnation ``new_process`` reserved in ``path`` (0: none, or not a number)."""
    try:
        text = path.read_bytes().strip()
    except FileNotFoundError:
        return 0
    return int(text) if text.isdigit() else 0


def _incarnation_after(line: bytes | None, name: str) -> int:
    """The incarnation after the one of the process that wrote ``line`` (``<name>.<n>``), else 0."""
    if line is None:
        return 0
    try:
        process = str(orjson.loads(line).get("process", ""))
    except (orjson.JSONDecodeError, AttributeError):
        return 0
    head, _, n = process.rpartition(".")
    return int(n) + 1 if head == name and n.isdigit() else 0
