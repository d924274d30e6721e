"""The CLI's two consoles: results on stdout, errors and progress on stderr; and JSON output."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console

#: What a command answers (a verdict, addresses, JSON): stdout, so it can be piped.
out = Console(soft_wrap=True, emoji=False)
#: Errors, warnings and progress: stderr, next to the log lines (harness.base.logsetup).
err = Console(stderr=True, emoji=False)


def print_json(data: Any, default: Any = None) -> None:
    """``data`` as indented JSON on stdout, as plain text: never through rich, whose ``print_json``
    colours it on a terminal (escape codes inside the JSON a program reads back)."""
    sys.stdout.write(json.dumps(data, indent=2, default=default) + "\n")
