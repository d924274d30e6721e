"""The ``eos-chaos`` command line: ``main``, and the Typer ``app`` (``harness.cli.root``, loaded
when first asked for).

This package's own module stays light on purpose: the console script imports it before ``main``
runs, and the commands' modules take about a second to load; a Ctrl-C in that second must end in
one line and exit 130 like any other (``harness.cli.exits``), not in a traceback."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.cli import exits

exits.until_main()

if TYPE_CHECKING:
    import typer

    app: typer.Typer


def main() -> None:
    """The ``eos-chaos`` entry point (``python -m harness`` too)."""
    exits.take_over()  # first: SIGTERM as Ctrl-C, a reader that leaves early is no error
    try:
        with exits.interrupts_noted():
            from harness.base import logsetup as logs
            from harness.cli.root import app

        logs.to_console()
        app()
    except KeyboardInterrupt:  # before a command's guard (the modules loading): the guard says it otherwise
        exits.interrupted_before_the_command()


def __getattr__(name: str) -> Any:
    # ``from harness.cli import app``: the app and every command module, loaded only when asked for
    if name == "app":
        from harness.cli.root import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["app", "main"]
