"""The cache's set-up lock, the time a cold fetch or build may take, and the tools it needs."""

from __future__ import annotations

import contextlib
import fcntl
import shutil
from collections.abc import Iterator

from harness.base.errors import EnvironmentProblem
from harness.base.paths import cache_dir

#: Cold fetches on a slow link: Maven pulls ~45 MB, Go ~30 MB of modules and compiles.
FETCH_TIMEOUT_S = 900


@contextlib.contextmanager
def cache_lock() -> Iterator[None]:
    """Hold the set-up lock of the cache: set-ups and builds that share it must not race on the same
    cache folders."""
    cache_dir().mkdir(parents=True, exist_ok=True)
    with open(cache_dir() / ".lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def require_tool(name: str, why: str, install: str) -> str:
    """The path of ``name`` on PATH; ``EnvironmentProblem`` saying why it is needed and how to install it."""
    path = shutil.which(name)
    if not path:
        raise EnvironmentProblem(f"`{name}` not found on PATH; it is needed to {why}. Install it: {install}")
    return path
