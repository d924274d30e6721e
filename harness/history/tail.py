"""Reading history files while their writers still append to them (the live progress line, the run's
readiness, the run's waits for commits): each call returns the whole lines added since the last one."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import orjson

from harness.history.model import ABORTED_ON_PURPOSE, FAIL, INFO, OK, PROGRESS_OPS, SPARK_BATCH, TXN, finished, kind_of, workload_of
from harness.history.recorder import HISTORY_DIR


def appended_lines(path: Path, offsets: dict[Path, int]) -> list[bytes]:
    """The whole lines appended to ``path`` since the offset ``offsets`` holds for it (moved past
    them); a line still being written is read next time, an unreadable file gives nothing."""
    start = offsets.get(path, 0)
    try:
        with open(path, "rb") as f:
            f.seek(start)
            chunk = f.read()
    except OSError:
        return []
    whole = chunk[: chunk.rfind(b"\n") + 1]
    offsets[path] = start + len(whole)
    return whole.splitlines()


@dataclass
class LineCounts:
    committed: int = 0
    aborted: int = 0
    unknown: int = 0
    errors: int = 0
    last_error: str = ""
    #: per workload kind, the history-clock time (ns) of its latest progress op (a finished op of
    #: ``PROGRESS_OPS``: committed, or aborted on purpose), as ``checker.progress`` counts progress
    last_progress_ns: dict[str, int] = field(default_factory=dict)


@dataclass
class HistoryTail:
    """Counts transaction outcomes from ``run_dir/history/*.jsonl``, reading each file incrementally."""

    run_dir: Path
    counts: LineCounts = field(default_factory=LineCounts)
    _offsets: dict[Path, int] = field(default_factory=dict)

    def poll(self) -> LineCounts:
        for path in sorted((self.run_dir / HISTORY_DIR).glob("*.jsonl")):
            for line in appended_lines(path, self._offsets):
                self._count(line)
        return self.counts

    def _count(self, line: bytes) -> None:
        try:
            op = orjson.loads(line)
        except orjson.JSONDecodeError:
            return
        if op.get("f") == TXN:
            kind = op.get("type")
            if kind == OK:
                self.counts.committed += 1
            elif kind == FAIL:
                self.counts.aborted += 1
            elif kind == INFO:
                self.counts.unknown += 1
        self._progress(op)
        err = op.get("error")
        if err and err != ABORTED_ON_PURPOSE:
            self.counts.errors += 1
            self.counts.last_error = str(err)[:120]

    def _progress(self, op: dict[str, object]) -> None:
        workload = workload_of(str(op.get("process") or ""))
        f, at = op.get("f"), op.get("time")
        if workload is None or f == SPARK_BATCH or not isinstance(at, int):
            return  # a Spark job's batches are its supervisor's to wait for (Supervisor.await_recovered)
        kind = kind_of(workload)
        # the progress rule is the model's (``finished``, ``PROGRESS_OPS``), as the checker's progress check reads it
        if finished(op) and f in PROGRESS_OPS.get(kind, ()) and at > self.counts.last_progress_ns.get(kind, -1):
            self.counts.last_progress_ns[kind] = at
