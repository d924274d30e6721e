"""The CLI's two consoles: results on stdout, errors and progress on stderr."""

from __future__ import annotations

from rich.console import Console

#: What a command answers (a verdict, addresses, JSON): stdout, so it can be piped.
out = Console(soft_wrap=True)
#: Errors, warnings and progress: stderr, next to the log lines (harness.base.logsetup).
err = Console(stderr=True)
