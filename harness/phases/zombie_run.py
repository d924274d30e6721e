"""The zombie's part of a run beyond its processes: the handshake files of its staged start (the
first instance says it opened its transaction; the nemesis releases it once the second has fenced it)."""

from __future__ import annotations

from pathlib import Path

from harness.phases.kind_run import KindRun
from harness.workloads.zombie import GO, READY


class ZombieRun(KindRun):
    @classmethod
    def staged_files(cls, run_dir: Path) -> tuple[Path, Path] | None:
        return run_dir / READY, run_dir / GO
