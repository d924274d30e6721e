"""Reading history files while their writers still append to them (the live progress line, the run's
readiness): each call returns the whole lines added since the last one."""

from __future__ import annotations

from pathlib import Path


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
