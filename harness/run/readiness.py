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

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from harness.base.wait import wait_until
from harness.history.model import ABORTED_ON_PURPOSE, FAIL, INFO, OK
from harness.history.tail import appended_lines

log = logging.getLogger(__name__)

#: The longest a workload may take to become ready: a Spark job's first micro-batch on a loaded
#: 2-core machine (JVM, session, query planning) took up to 90 s; generous, so that only a workload
#: that is broken runs into it.
READY_TIMEOUT_S = 300.0
#: How many lines of a workload's log the error quotes.
LOG_TAIL_LINES = 12


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
        for path in sorted([*self.history_dir.glob(f"{name}.*jsonl"), *self.history_dir.glob(f"{name}-exec-*.jsonl")]):
            for line in appended_lines(path, self._offsets):
                try:
                    op = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue
                if op.get("f") in fs and _finished(op):
                    return True
        return False


def _finished(op: dict[str, object]) -> bool:
    """An op that finished: ``ok``; an abort the workload chose; or an event (``info``, no invoke) that
    says its outcome was ``ok`` (a Spark micro-batch)."""
    kind, value = op.get("type"), op.get("value")
    return (kind == OK or (kind == FAIL and op.get("error") == ABORTED_ON_PURPOSE)
            or (kind == INFO and isinstance(value, dict) and value.get("outcome") == OK))


def await_ready(history_dir: Path, waiting: Mapping[str, tuple[str, ...]], logs: Mapping[str, Path],
                dead: Callable[[], str | None], timeout: float = READY_TIMEOUT_S) -> dict[str, float]:
    """Wait until every process in ``waiting`` recorded its ready op; return the seconds each took.
    ``WaitTimeout`` at the deadline, or at once when ``dead()`` names a process that exited, naming
    the processes not ready and the last lines of their logs (``logs``)."""
    t0 = time.monotonic()
    r = Readiness(history_dir, dict(waiting))

    def state() -> str:
        parts = []
        for name in sorted(r.waiting):
            parts.append(f"{name} has finished no {' or '.join(waiting[name])} yet; the last lines of its log "
                         f"({logs.get(name, '?')}):\n{_tail(logs.get(name))}")
        return "\n".join(parts) or "every workload ready"

    if waiting:
        log.info(f"waiting for the workloads to be ready: {', '.join(f'{n} (a {fs[0]})' for n, fs in sorted(waiting.items()))}")
    wait_until(r.poll, timeout=timeout, what="every workload ready (its first committed transaction, copy or micro-batch)",
               state=state, interval=0.2, max_interval=1.0, fatal=dead)
    took = {name: round(at - t0, 2) for name, at in r.ready_at.items()}
    if took:
        log.info("workloads ready: " + ", ".join(f"{n} after {s:.1f}s" for n, s in sorted(took.items())))
    return took


def _tail(path: Path | None, lines: int = LOG_TAIL_LINES) -> str:
    if path is None:
        return "  (no log)"
    try:
        text = path.read_text(errors="replace").splitlines()[-lines:]
    except OSError as exc:
        return f"  (unreadable: {exc.strerror})"
    return "\n".join(f"  {line}" for line in text) or "  (empty)"
