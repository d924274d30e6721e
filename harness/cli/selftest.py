"""``eos-chaos selftest``: check the checker on this machine (``harness.campaigns.selftest``)."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import typer
from rich.table import Table

from harness.base.errors import ConfigError
from harness.campaigns.selftest import KindResult
from harness.cli import exits
from harness.cli.console import out
from harness.cli.guard import guarded
from harness.cli.options import Engine, EngineOpt

app = typer.Typer()
KindOpt = typer.Option([], "--kind", help="Only these anomaly kinds (repeatable); default: all.")


@app.command("selftest")
@guarded
def selftest_cmd(
    examples: int = typer.Option(50, "--examples", min=1, max=10_000, help="Random histories per anomaly kind."),
    seed: int = typer.Option(0, "--seed", help="The first example's seed (the examples are seed, seed+1, ...)."),
    kind: list[str] = KindOpt,
    engine: Engine = EngineOpt,
) -> None:
    """Check the checker: random histories of a correct Kafka, each with one anomaly injected; exactly
    the matching check must fire, and each untouched twin must be valid. Exit 0: every example judged
    right; 1: the checker got one wrong (the seeds are listed)."""
    from harness.campaigns import selftest

    unknown = [k for k in kind if k not in selftest.INJECTIONS]
    if unknown:
        raise ConfigError(f"--kind {', '.join(unknown)}: no such anomaly kind; kinds: {', '.join(selftest.INJECTIONS)}")
    kinds = kind or list(selftest.INJECTIONS)
    t0 = time.monotonic()
    if engine == Engine.spark:
        results = _spark(examples, seed, kinds)
    else:
        with out.status("checking examples...") as status:
            results = selftest.run_default(examples, seed, [*kinds, selftest.CLEAN],
                                           step=lambda k: status.update(f"checked {k}"))
    table = Table("anomaly injected", "examples", "judged right", "wrong (seed: wanted / got)")
    for r in results:
        wrong = "; ".join(f"{'all' if s is None else s}: {w} / {g}" for s, w, g in r.wrong[:3])
        table.add_row(r.kind, str(r.examples), "[green]all[/]" if not r.wrong else f"[red]{r.examples - len(r.wrong)}[/]",
                      wrong + (" ..." if len(r.wrong) > 3 else ""))
    out.print(table)
    bad = sum(len(r.wrong) for r in results)
    out.print(f"{'FAIL' if bad else 'OK'}: {sum(r.examples for r in results)} histories, {engine.value} engine, "
              f"seeds {seed}..{seed + examples - 1}, {time.monotonic() - t0:.1f}s")
    if bad:
        raise typer.Exit(exits.FINDING)


def _spark(examples: int, seed: int, kinds: list[str]) -> list[KindResult]:
    """All examples in one history (``selftest.combined``), checked by the Spark engine."""
    from harness.campaigns import selftest
    from harness.checker.spark_engine import check_run
    from harness.history import store
    from harness.sparkjob.session import checker_session

    h, want = selftest.combined(examples, seed, kinds)
    with tempfile.TemporaryDirectory(prefix="eos-chaos-selftest-") as d, checker_session() as spark:
        store.save(h.tables(), Path(d))
        return selftest.judge_combined(check_run(Path(d), spark), want, examples)
