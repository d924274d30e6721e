"""How an ``eos-chaos`` command ends: the exit-code table, defined here once (every command's
``--help`` ends with it; ``harness.cli.guard`` turns errors into these codes), and what keeps the
process to it outside the commands: a Ctrl-C or SIGTERM while the commands' modules load, and a
reader that closes the pipe early.

Standard library only: ``harness.cli.main`` uses it before the commands' modules (typer, rich,
pandas: about a second) are imported, so a Ctrl-C in that second ends in one line and 130 too."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn, TextIO, cast

#: A run, a check, a soak, a matrix or a selftest found nothing; any other command did its work.
OK = 0
#: A finding: an anomaly, a run not as its scenario expects, a check the selftest got wrong.
FINDING = 1
#: Bad input (a flag, a file), or an environment that cannot do it (a tool or cluster missing, a
#: wait that gave up), or a bug (one line: ``guard``); never a finding.
BAD_INPUT = 2
#: A verdict that could not be reached: a check crashed, or nothing to judge.
UNKNOWN = 3
#: Ctrl-C or SIGTERM (128 + SIGINT, as shells report a process that SIGINT ended).
INTERRUPTED = 130

#: (code, meaning): the table every ``--help`` ends with. Each line fits an 80-column terminal.
TABLE: tuple[tuple[int, str], ...] = (
    (OK, "valid, or done (a command that judges nothing)"),
    (FINDING, "invalid: a finding (an anomaly, a run not as expected)"),
    (BAD_INPUT, "bad input or environment (flag, file, tool, cluster), or a bug"),
    (UNKNOWN, "unknown: nothing judged (a check crashed, an empty history)"),
    (INTERRUPTED, "interrupted (Ctrl-C, SIGTERM); what it started is taken down"),
)
#: A reader that leaves early is not a finding, nor bad input: the command's own code stands
#: (a verdict's 0, 1 or 3 too), and what it still prints goes nowhere (``_PipeSafe``).
PIPE_RULE = "A reader that closes the pipe early (... | head) changes no code."


def table_lines() -> list[str]:
    """The exit-code table as the lines ``--help`` ends with."""
    return ["Exit codes:", *(f"{code:<4} {meaning}" for code, meaning in TABLE), PIPE_RULE]


#: The table as a typer/click epilog (rich help keeps its line breaks).
EPILOG = "\n".join(table_lines())


class _PipeSafe:
    """A text stream (stdout, stderr) on which a reader gone (EPIPE) ends the output, not the
    command: Python's advice for SIGPIPE (the ``signal`` module's documentation) is to point the
    descriptor at devnull; done at the first failed write, so the command carries on to its own
    exit code instead of dying with a BrokenPipeError (a traceback, or click's exit 1)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._reader_gone()
            return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._reader_gone()

    def _reader_gone(self) -> None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, self._stream.fileno())
        finally:
            os.close(devnull)
        try:  # what is still buffered goes to devnull now, rather than failing again at exit
            self._stream.flush()
        except OSError:
            pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _sigterm(signum: int, frame: FrameType | None) -> None:
    # SIGTERM (CI cancelling, `kill`) takes the same cleanup path as Ctrl-C.
    raise KeyboardInterrupt


def take_over() -> None:
    """The process-level handling, first thing in ``main``: SIGTERM as Ctrl-C, and stdout and
    stderr that survive a reader leaving. (SIGINT keeps Python's handler, KeyboardInterrupt, which
    ``main`` and ``guard`` turn into 130; or SIG_IGN, when started so, as a background job is.)"""
    signal.signal(signal.SIGTERM, _sigterm)
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, _PipeSafe):
            setattr(sys, name, cast(TextIO, _PipeSafe(stream)))


@contextlib.contextmanager
def interrupts_noted() -> Iterator[None]:
    """While the commands' modules load: Ctrl-C and SIGTERM are noted, not raised, and acted on when
    loading is done. A KeyboardInterrupt raised inside the import machinery's own callbacks is
    printed as a traceback and swallowed by Python, and the command then ran on (seen under load:
    exit 0 after a Ctrl-C at 0.1 s)."""
    noted: list[int] = []
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    if before[signal.SIGINT] is _before_main:  # the commands then get Python's own: KeyboardInterrupt
        before[signal.SIGINT] = signal.default_int_handler
    for sig, handler in before.items():
        if handler is not signal.SIG_IGN:  # a background job's ignored Ctrl-C stays ignored
            signal.signal(sig, lambda signum, frame: noted.append(signum))
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
    if noted:
        interrupted_before_the_command()


def until_main() -> None:
    """From the console script's import of ``harness.cli`` until ``main`` notes interrupts itself:
    Ctrl-C is one line and exit 130. The script runs lines of its own in between (pip's wrapper
    rewrites ``sys.argv[0]`` with a regular expression, compiled there: tens of milliseconds on a
    loaded machine), where Python's handler would print a KeyboardInterrupt traceback. An ignored
    Ctrl-C (a background job) stays ignored, and a program that merely imports ``harness.cli`` (a
    test session) keeps its own handling."""
    main = sys.modules.get("__main__")
    ours = Path(getattr(main, "__file__", "") or "").name == "eos-chaos" or getattr(
        getattr(main, "__spec__", None), "name", None) == "harness.__main__"
    if ours and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _before_main)


def _before_main(signum: int, frame: FrameType | None) -> None:
    interrupted_before_the_command()


def interrupted_before_the_command() -> NoReturn:
    """Ctrl-C or SIGTERM before a command began (its modules loading): one line, exit 130."""
    # a second Ctrl-C while this line is written must not become a traceback either
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.stderr.write("interrupted before the command started anything\n")
    raise SystemExit(INTERRUPTED)
