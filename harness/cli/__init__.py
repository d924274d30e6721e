"""The ``eos-chaos`` command line: the Typer app, its global options and ``main``.

Exit codes (README.md, "Exit codes"): 0 ok, 1 the thing tested failed, 2 bad input or environment,
3 unknown, 130 interrupted. Each command group is a module of its own; every command is wrapped in
``guard.guarded``, the one place errors become exit codes."""

from __future__ import annotations

import logging
import signal

import typer

from harness.base import logsetup
from harness.cli import bench, cluster, matrix, results, run, selftest, setup, soak

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Chaos-testing harness for Kafka exactly-once semantics.")
app.add_typer(setup.app)
app.add_typer(cluster.app, name="cluster")
app.add_typer(run.app)
app.add_typer(results.app)
app.add_typer(soak.app)
app.add_typer(matrix.app)
app.add_typer(bench.app, name="bench")
app.add_typer(setup.engine_app, name="engine")
app.add_typer(selftest.app)


@app.callback()
def console_level(
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Also debug lines (and a bug's traceback)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Only warnings and errors on stderr, no progress lines."),
) -> None:
    """Chaos-testing harness for Kafka exactly-once semantics."""
    if verbose and quiet:
        raise typer.BadParameter("give one of -v and -q", param_hint="'-v' / '-q'")
    logsetup.to_console(logging.DEBUG if verbose else logging.WARNING if quiet else logging.INFO)


def _sigterm(signum: int, frame: object) -> None:
    # SIGTERM (CI cancelling, `kill`) takes the same cleanup path as Ctrl-C.
    raise KeyboardInterrupt


def main() -> None:
    """The ``eos-chaos`` entry point."""
    signal.signal(signal.SIGTERM, _sigterm)
    logsetup.to_console()
    app()


__all__ = ["app", "main"]
