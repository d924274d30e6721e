"""Where things live: the artifact cache outside the repo, the results folder inside it."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from harness.base.errors import ConfigError

REPO_ROOT = Path(__file__).resolve().parents[2]


def nearest_existing(path: Path) -> Path | None:
    """``path`` or the nearest of its parents that exists (None: none does, a relative path's top
    included); a file there means no folder can be at ``path``."""
    return next((p for p in (path, *path.parents) if p.exists() or p.is_symlink()), None)


def _folder(variable: str, default: Callable[[], Path]) -> Path:
    """The folder environment ``variable`` names (``default()`` when unset or empty). ``ConfigError``
    naming the variable when a file stands where the folder or one of its parents must be: every
    later read and write in it would fail (a record not found, a folder not made)."""
    value = os.environ.get(variable)
    if not value:
        return default()
    path = Path(value)
    blocker = nearest_existing(path)
    if blocker is not None and not blocker.is_dir():
        where = "is a file" if blocker == path else f"is under {blocker}, which is a file"
        raise ConfigError(f"{variable}={value} {where}: {variable} names a folder (made if missing); "
                          f"give a folder, or unset {variable} for the default")
    return path


def cache_dir() -> Path:
    """The artifact cache (Kafka jars, Toxiproxy binary, cluster state); ``EOS_CHAOS_CACHE`` overrides."""
    return _folder("EOS_CHAOS_CACHE",
                   lambda: Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "eos-chaos")


def results_dir() -> Path:
    """Where run folders go; ``EOS_CHAOS_RESULTS`` overrides (default: ``results/`` in the repo)."""
    return _folder("EOS_CHAOS_RESULTS", lambda: REPO_ROOT / "results")


def state_dir() -> Path:
    """Where a running cluster records itself for ``down``/``status``; ``EOS_CHAOS_STATE`` overrides."""
    return _folder("EOS_CHAOS_STATE", lambda: cache_dir() / "state")
