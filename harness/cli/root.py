"""The ``eos-chaos`` Typer app: its command groups, its global options, and the exit-code table at
the end of every command's ``--help``. Each command group is a module of its own; every command is
wrapped in ``guard.guarded``, the one place errors become exit codes (``harness.cli.exits``)."""

from __future__ import annotations

import logging

import typer

from harness.base import logsetup as logs
from harness.cli import bench, cluster, exits, hunt, matrix, minimize, results, run, selftest, setup, soak

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Chaos-testing harness for Kafka exactly-once semantics.")
app.add_typer(setup.app)
app.add_typer(cluster.app, name="cluster")
app.add_typer(run.app)
app.add_typer(results.app)
app.add_typer(soak.app)
app.add_typer(matrix.app, name="matrix")
app.add_typer(minimize.app)
app.add_typer(hunt.app)
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
    logs.to_console(logging.DEBUG if verbose else logging.WARNING if quiet else logging.INFO)


def _with_exit_codes(t: typer.Typer) -> None:
    """Every command and group of ``t``, ``t`` too, with the exit-code table as its epilog: set
    here, once, so a command added later cannot go without it (a test walks the click tree)."""
    t.info.epilog = exits.EPILOG
    for c in t.registered_commands:
        c.epilog = exits.EPILOG
    for g in t.registered_groups:
        g.epilog = exits.EPILOG
        if g.typer_instance is not None:
            _with_exit_codes(g.typer_instance)


_with_exit_codes(app)
