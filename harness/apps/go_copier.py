"""go-copier: an exactly-once consume-transform-produce service in Go (franz-go's
``GroupTransactSession``), the shipped app that shows the app contract does not care about the
language. ``python -m harness.apps.go_copier --bootstrap B --input IN --output OUT --group G
--txn-id T`` copies each input record to OUT with the same key and the value ``<value>:go``
(``harness.apps.functions.go_suffix``); ``--unsafe`` instead of ``--txn-id`` is its negative
control, without transactions. The source is ``go_copier_src/``; this launcher builds it into the
cache on first use (a folder per hash of the source) and then execs the binary, so the workload
faults' signals reach the service itself. Bad flags: the service's usage, exit 2."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from clusters.builds.cache import cache_lock
from clusters.builds.golang import build_go_module, go_source_digest
from harness.base.errors import HarnessError
from harness.base.paths import cache_dir

NAME = "go-copier"
SOURCE = Path(__file__).resolve().parent / "go_copier_src"


def binary(src: Path = SOURCE) -> Path:
    """Where the build of ``src`` as it is now lives (a changed source is a new folder: rebuilt)."""
    return cache_dir() / "apps" / NAME / go_source_digest(src) / NAME


def built() -> Path | None:
    """The binary of the current source if it is built (no building, no locking)."""
    target = binary()
    return target if target.is_file() and os.access(target, os.X_OK) else None


def prepare() -> Path:
    """Build the service into the cache if it is not there; the binary."""
    ready = built()
    if ready is not None:
        return ready
    with cache_lock():  # another launcher may be building it: the second waits, then finds it built
        return build_go_module(SOURCE, binary(), NAME)


def main(argv: list[str]) -> None:
    try:
        target = built()
        if target is None:
            # stderr: stdout is the service's own (its ready line and progress)
            print(f"{NAME}: building {binary()} from {SOURCE} (once per source; a cold build fetches its modules)",
                  file=sys.stderr, flush=True)
            target = prepare()
    except HarnessError as exc:
        print(f"{NAME}: {exc}", file=sys.stderr)
        raise SystemExit(exc.exit_code) from None
    os.execv(target, [NAME, *argv])


if __name__ == "__main__":
    main(sys.argv[1:])
