"""The wire proxy built from its Go source beside this module (``kwire/``) into the cache, under a digest
of that source (an edit is a new path: rebuilt)."""

from __future__ import annotations

from pathlib import Path

from clusters.builds.golang import GoProgram, build_go_programs, go_directive, go_source_digest
from harness.base.paths import cache_dir

#: The wire proxy's Go source (standard library only: building it needs no network).
KWIRE_SOURCE = Path(__file__).resolve().parent / "kwire"


def kwire_bin() -> Path:
    """The wire proxy binary of the current source (a changed source is a new path: rebuilt)."""
    return cache_dir() / "kwire" / go_source_digest(KWIRE_SOURCE) / "kwire"


def kwire_program() -> GoProgram:
    """The wire proxy, from its source in this repository (``clusters/wire/kwire``)."""
    return GoProgram("kwire", "eos-chaos/kwire", "eos-chaos/kwire", "v0.0.0", go_directive(KWIRE_SOURCE), kwire_bin(),
                     KWIRE_SOURCE)


def build_kwire() -> Path:
    """Build the wire proxy from ``clusters/wire/kwire`` into the cache; return the binary."""
    return build_go_programs([kwire_program()])[0]
