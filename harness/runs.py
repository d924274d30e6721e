"""Run folders: one per run under ``results/``, named so they sort by time."""

from __future__ import annotations

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
