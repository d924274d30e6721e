"""Each option's default is said once in ``--help``: Typer prints ``[default: X]`` for an option
with a default, so a help text that also writes it printed it twice (``hunt --duration``:
"[default: 100]. [default: 100.0]")."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import typer

from harness.cli.root import app


def _commands(group: Any, ctx: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, Any]]:
    """Every command under ``group``, subcommands too (Typer's own click types: duck-typed)."""
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        assert cmd is not None, name
        yield " ".join((*path, name)), cmd  # a group's own options too (``matrix``'s, beside ``matrix merge``)
        if hasattr(cmd, "list_commands"):
            yield from _commands(cmd, type(ctx)(cmd, parent=ctx), (*path, name))


def test_no_option_writes_its_default_into_its_help_when_typer_shows_it() -> None:
    root = typer.main.get_command(app)
    ctx = typer.Context(root)
    twice = [f"{where} {'/'.join(p.opts)}" for where, cmd in _commands(root, ctx) for p in cmd.params
             if p.param_type_name == "option" and p.help and "[default:" in p.help.replace("\\[", "[")
             and p.default is not None and p.show_default is not False and not p.is_flag]
    assert len(list(_commands(root, ctx))) > 20
    assert not twice, f"these options say their default in their help and Typer says it again: {twice}"
