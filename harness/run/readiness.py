"""When a run's workloads are ready: the fault schedule starts then, not when their processes were
started. A Spark job's first micro-batch came 88 s after its process started on a loaded machine,
after the first fault was due; a schedule counted from the start hit a job that had run nothing.

Each workload kind names the ops that show it ready (``Kind.ready_ops`` in
harness/workloads/registry.py: a txn-producer's first finished transaction, a copier's first
committed copy, a Spark job's first finished micro-batch); kinds that name none are ready when
started. A finished op is an ``ok``, an abort the workload chose (a producer whose every
transaction aborts on purpose is running all the same), or an event whose outcome is ``ok`` (the
Spark job records each micro-batch as one). The ops are read from the processes' own
history files as they append them."""

from __future__ import annotations

import bisect
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from harness.base.log_digest import describe
from harness.base.wait import wait_until
from harness.history.model import finished
from harness.history.tail import appended_lines
from harness.phases import table
from harness.phases.kind_run import OpTest

log = logging.getLogger(__name__)

#: The longest a workload may take to become ready: a Spark job's first micro-batch on a loaded
#: 2-core machine (JVM, session, query planning) took up to 90 s; generous, so that only a workload
#: that is broken runs into it.
READY_TIMEOUT_S = 300.0
#: How many of a workload's last log lines the error quotes, besides its exception and ERROR lines
#: (harness/base/log_digest.py): what it did last.
LOG_TAIL_LINES = 8


@dataclass
class Readiness:
    """Which of a run's processes are ready, read incrementally from ``history_dir``.

    ``waiting`` maps a workload process's name (``<workload>-<n>``) to the ops (``f``) whose first
    completion makes it ready; its history file is ``<name>.jsonl`` (every incarnation appends there)."""

    history_dir: Path
    waiting: dict[str, tuple[str, ...]]
    ready_at: dict[str, float] = field(default_factory=dict)
    _offsets: dict[Path, int] = field(default_factory=dict)

    def poll(self) -> bool:
        """Read what was appended since the last poll; True once every process is ready."""
        for name, f in list(self.waiting.items()):
            if self._seen(name, f):
                self.ready_at[name] = time.monotonic()
                del self.waiting[name]
        return not self.waiting

    def _seen(self, name: str, fs: tuple[str, ...]) -> bool:
        return any(op.get("f") in fs and finished(op) for op in _appended_ops(self.history_dir, name, self._offsets))


def _appended_ops(history_dir: Path, name: str, offsets: dict[Path, int]) -> Iterator[dict[str, Any]]:
    """The ops process ``name`` (every incarnation, and a Spark job's executor-side sinks) appended
    to its history files since ``offsets`` (moved past them); a line that is not JSON is skipped."""
    for path in sorted([*history_dir.glob(f"{name}.*jsonl"), *history_dir.glob(f"{name}-exec-*.jsonl")]):
        for line in appended_lines(path, offsets):
            try:
                op = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(op, dict):
                yield op


class ProgressLog:
    """When each workload process finished an op that shows progress (its kind's ``KindRun.progress``:
    ``PROGRESS_OPS`` of its kind; an app: an output record its reader read), read from the history files as they grow:
    the ``chaos.control.Progress`` the nemesis asks before a fault aimed at a workload. Safe to
    call from every fault's thread.

    ``kinds`` maps each workload process to its kind: the supervisor's own mapping, which grows as
    processes are registered."""

    def __init__(self, history_dir: Path, kinds: Mapping[str, str]) -> None:
        self.history_dir = history_dir
        self.kinds = kinds
        self._times: dict[str, list[int]] = {}  # process (or the app's reader) -> finish times, sorted
        self._tests: dict[str, OpTest] = {}  # the same -> which of its ops show progress
        self._offsets: dict[Path, int] = {}
        self._lock = threading.Lock()

    def finished_since(self, name: str, since_ns: int) -> int | None:
        """How many progress ops ``name`` finished at or after ``since_ns`` (the history's clock);
        None when its kind shows no progress the history can tell (a reader, the zombie)."""
        kind = self.kinds.get(name)
        # whose history shows ``name``'s progress: its own, or another's (an app instance's: its
        # output's reader, which reads every instance's output)
        watch = table.of(kind).progress(kind, name) if kind is not None else None
        if watch is None:
            return None
        source, test = watch
        with self._lock:
            times = self._times.setdefault(source, [])
            self._tests.setdefault(source, test)
            for op in _appended_ops(self.history_dir, source, self._offsets):
                if self._tests[source](op):
                    bisect.insort(times, int(op.get("time", 0)))
            return len(times) - bisect.bisect_left(times, since_ns)


def await_ready(history_dir: Path, waiting: Mapping[str, tuple[str, ...]], logs: Mapping[str, Path],
                dead: Callable[[], str | None], timeout: float = READY_TIMEOUT_S) -> dict[str, float]:
    """Wait until every process in ``waiting`` recorded its ready op; return the seconds each took.
    ``WaitTimeout`` at the deadline, or at once when ``dead()`` names a process that exited, naming
    the processes not ready and what their logs (``logs``) say: the exception, the first and last
    ERROR lines, the last lines (harness/base/log_digest.py)."""
    t0 = time.monotonic()
    r = Readiness(history_dir, dict(waiting))

    def state() -> str:
        parts = []
        for name in sorted(r.waiting):
            parts.append(f"{name} has finished no {' or '.join(waiting[name])} yet; its log "
                         f"({logs.get(name, '?')}):\n{describe(logs.get(name), LOG_TAIL_LINES)}")
        return "\n".join(parts) or "every workload ready"

    if waiting:
        log.info(f"waiting for the workloads to be ready: {', '.join(f'{n} (a {fs[0]})' for n, fs in sorted(waiting.items()))}")
    wait_until(r.poll, timeout=timeout, what="every workload ready (its first committed transaction, copy or micro-batch)",
               state=state, interval=0.2, max_interval=1.0, fatal=dead)
    took = {name: round(at - t0, 2) for name, at in r.ready_at.items()}
    if took:
        log.info("workloads ready: " + ", ".join(f"{n} after {s:.1f}s" for n, s in sorted(took.items())))
    return took



def exited_before_ready(name: str, code: int | None, log_file: Path) -> str:
    """Why the wait for ``name`` ends at once: it exited with ``code``, and what its log says."""
    return f"{name} exited with {code} before it was ready (its log: {log_file}):\n{describe(log_file, LOG_TAIL_LINES)}"
