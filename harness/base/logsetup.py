"""Where the harness's narrative goes. Every module logs to ``logging.getLogger(__name__)``; the
entry points choose the destination: the CLI's console (stderr, a time stamp per line), a test's
output (the pytest plugin), and each run's ``run.log`` (``run_log``) next to its history."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console
from rich.markup import escape

#: The project's top-level packages: their loggers are the ones configured here.
ROOTS = ("harness", "chaos", "clusters")
FILE_FORMAT = "%(asctime)s %(levelname)-7s %(threadName)s %(name)s: %(message)s"


class _Console(logging.Handler):
    """One line per record on stderr, the time dimmed, as the CLI has always printed progress."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            msg = record.getMessage()
            stamp = time.strftime("%H:%M:%S", time.localtime(record.created))
            style = {logging.WARNING: "yellow", logging.ERROR: "red", logging.CRITICAL: "red"}.get(record.levelno)
            body = f"[{style}]{escape(msg)}[/]" if style else escape(msg)
            _STDERR.print(f"[dim]{stamp}[/] {body}", highlight=False, soft_wrap=True)
        except Exception:  # noqa: BLE001 - logging must never take the command down
            self.handleError(record)


_STDERR = Console(stderr=True, emoji=False)


def _set(handler: logging.Handler, level: int) -> None:
    for name in ROOTS:
        logger = logging.getLogger(name)
        for h in [h for h in logger.handlers if getattr(h, "_eos_console", False)]:
            logger.removeHandler(h)
        handler._eos_console = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
        logger.setLevel(min(level, logging.INFO))  # run.log keeps INFO even when the console is quiet
    handler.setLevel(level)


def to_console(level: int = logging.INFO) -> None:
    """The CLI: records at ``level`` and above on stderr."""
    _set(_Console(), level)


class _Stdout(logging.StreamHandler):  # type: ignore[type-arg]
    """Plain lines on ``sys.stdout`` as it is when each record comes: pytest swaps it for a capture
    per test and closes that one after the test, so a stream taken once would be a closed file for
    the next test's records ("I/O operation on closed file" in a CI log)."""

    @property
    def stream(self) -> object:
        return sys.stdout

    @stream.setter
    def stream(self, _: object) -> None:
        pass


def to_stdout(level: int = logging.INFO) -> None:
    """The pytest plugin: records as plain lines on stdout, shown with a test's output."""
    handler = _Stdout()
    handler.setFormatter(logging.Formatter("%(message)s"))
    _set(handler, level)


@contextmanager
def run_log(path: Path) -> Iterator[Path]:
    """Everything the harness logs while the block runs, from every thread, also into ``path``."""
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter(FILE_FORMAT))
    handler.setLevel(logging.DEBUG)
    loggers = [logging.getLogger(name) for name in ROOTS]
    for logger in loggers:
        if logger.level == logging.NOTSET or logger.level > logging.INFO:
            logger.setLevel(logging.INFO)
        logger.addHandler(handler)
    try:
        yield path
    finally:
        for logger in loggers:
            logger.removeHandler(handler)
        handler.close()
