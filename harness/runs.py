"""Run folders: one per run under ``results/``, named so they sort by time."""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path

from harness.paths import results_dir


def new_run_id(kind: str) -> str:
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{kind}-{secrets.token_hex(2)}"


def new_run_dir(kind: str, parent: Path | None = None) -> Path:
    d = (parent or results_dir()) / new_run_id(kind)
    d.mkdir(parents=True, exist_ok=False)
    return d


def write_atomic(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file and a rename: a reader (or a run killed
    mid-write) sees the old file or the new one, never half of one."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path
