"""Where things live: the artifact cache outside the repo, the results folder inside it."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def nearest_existing(path: Path) -> Path | None:
    """``path`` or the nearest of its parents that exists (None: none does, a relative path's top
    included); a file there means no folder can be at ``path``."""
    return next((p for p in (path, *path.parents) if p.exists() or p.is_symlink()), None)


def cache_dir() -> Path:
    """The artifact cache (Kafka jars, Toxiproxy binary, cluster state); ``EOS_CHAOS_CACHE`` overrides."""
    env = os.environ.get("EOS_CHAOS_CACHE")
    base = Path(env) if env else Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "eos-chaos"
    return base


def results_dir() -> Path:
    """Where run folders go; ``EOS_CHAOS_RESULTS`` overrides (default: ``results/`` in the repo)."""
    env = os.environ.get("EOS_CHAOS_RESULTS")
    return Path(env) if env else REPO_ROOT / "results"


def state_dir() -> Path:
    """Where a running cluster records itself for ``down``/``status``; ``EOS_CHAOS_STATE`` overrides."""
    env = os.environ.get("EOS_CHAOS_STATE")
    return Path(env) if env else cache_dir() / "state"
