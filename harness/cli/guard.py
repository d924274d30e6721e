"""The one place where errors become exit codes: every command is wrapped in ``guarded``.

The codes are ``harness.cli.exits``'s table (0 valid or done, 1 a finding, 2 bad input or
environment, 3 unknown, 130 interrupted). No user ever sees a
traceback: an unexpected exception is one line on stderr (the traceback goes to the log at debug
level, shown with ``eos-chaos -v``)."""

from __future__ import annotations

import functools
import logging
import traceback
from collections.abc import Callable
from typing import NoReturn, ParamSpec, TypeVar

import typer
from rich.markup import escape

from harness.base.errors import HarnessError
from harness.cli import exits
from harness.cli.console import err

log = logging.getLogger(__name__)
P = ParamSpec("P")
T = TypeVar("T")

#: Exit code of a command ended by Ctrl-C or SIGTERM (128 + SIGINT, as shells report it).
EXIT_INTERRUPTED = exits.INTERRUPTED
#: Exit code of an error the harness did not expect (a bug): the same as bad input or environment.
EXIT_INTERNAL = exits.BAD_INPUT


def fail(exc: HarnessError) -> NoReturn:
    """Print ``exc`` as one error line and exit with its code."""
    err.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
    raise typer.Exit(exc.exit_code)


def guarded(command: Callable[P, T]) -> Callable[P, T]:
    """``command`` with harness errors turned into their exit code, Ctrl-C into 130 (after the
    command's own cleanup has run) and any other exception into a one-line "internal error" (2)."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return command(*args, **kwargs)
        except (typer.Exit, typer.Abort, typer.TyperException):
            # a command's chosen exit code, and usage errors (typer's own click, vendored since 0.22:
            # its exceptions are not click's), which carry their own message
            raise
        except HarnessError as exc:
            fail(exc)
        except MemoryError:
            # not a bug: the default checker engine holds the whole history in memory
            err.print("[bold red]error:[/] out of memory (a history this large does not fit the default checker engine: "
                      "check it with --engine spark, which spills to disk and runs on a Spark cluster)",
                      highlight=False, soft_wrap=True)
            raise typer.Exit(EXIT_INTERNAL) from None
        except KeyboardInterrupt:
            err.print("[yellow]interrupted; faults healed, and what this command started was taken down (unless --keep)[/]")
            raise typer.Exit(EXIT_INTERRUPTED) from None
        except Exception as exc:  # noqa: BLE001 - the last line of defence: a bug, said in one line
            # The traceback in the message itself: the console handler prints messages only.
            log.debug("internal error in %s:\n%s", command.__name__, traceback.format_exc().rstrip())
            err.print(f"[bold red]internal error:[/] {escape(f'{type(exc).__name__}: {exc}')} "
                      "(a bug in eos-chaos; eos-chaos -v ... shows the traceback)", highlight=False, soft_wrap=True)
            raise typer.Exit(EXIT_INTERNAL) from None

    return wrapper
