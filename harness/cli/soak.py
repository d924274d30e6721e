"""``eos-chaos soak``: many runs with fresh seeds on one cluster (the rules live in harness.campaigns.soak)."""

from __future__ import annotations

import logging
import random
from pathlib import Path

import typer
from rich.markup import escape

from clusters.backends.backends import Backend
from clusters.builds import pins
from clusters.kafka import kafka_release
from clusters.kafka.feature_levels import check_transaction_version
from harness.base.errors import ConfigError
from harness.cli import exits
from harness.cli.console import out
from harness.cli.guard import EXIT_INTERRUPTED, guarded
from harness.cli.matrix import shard_flag
from harness.cli.options import (
    AllowNonDisposableOpt,
    BackendOpt,
    InventoryRunOpt,
    TransactionVersion,
    check_port_base_env,
    duration_option,
    external_backend,
    finite_option,
)
from harness.rundir.runfolder import SOAK_HTML, check_out, make_folder, new_run_dir

log = logging.getLogger(__name__)
app = typer.Typer()


@app.command("soak")
@guarded
def soak_cmd(
    scenarios_opt: str = typer.Option(None, "--scenarios", metavar="A,B,...",
                                      help="Scenarios to repeat, in turn \\[default: every one that expects a valid run]."),
    hours: float | None = finite_option(None, "--hours", 0.001, help="Start runs until this many hours have passed."),
    runs: int = typer.Option(None, "--runs", min=1, help="This many runs \\[default: one of each scenario]."),
    seed: int = typer.Option(None, "--seed", help="Master seed; each run's seed is drawn from it \\[default: random]."),
    fail_fast: bool = typer.Option(False, "--fail-fast", help="Stop at the first run that is not as its scenario expects."),
    backend: Backend = BackendOpt,
    duration: float | None = duration_option("Override every scenario's duration (s)."),
    kafka_version: str = typer.Option(None, "--kafka-version", help=f"Apache Kafka release \\[default: {pins.KAFKA_VERSION}]."),
    out_dir: str = typer.Option(None, "--out", help="Soak folder: a new or empty one, in a folder that exists \\[default: results/<id>-soak]."),
    transaction_version: int | None = TransactionVersion,
    shard_opt: str = typer.Option(None, "--shard", metavar="I/N", help="Run shard I of N: runs I, I+N, I+2N, ... of the "
                                  "soak (every shard draws every seed, so each run has the seed it has unsharded); "
                                  "needs --seed."),
    inventory: Path | None = InventoryRunOpt,
    allow_non_disposable: bool = AllowNonDisposableOpt,
) -> None:
    """Repeat scenarios with fresh seeds on one cluster; keep every run; write soak.html + soak.json.

    Exit 0: every run as expected; 1: some were not; 130: interrupted (the summary is still written)."""
    from harness.campaigns import soak

    check_port_base_env()  # its clusters' port base: refused now, not when one starts
    backend = external_backend(backend, inventory, allow_non_disposable)
    shard = shard_flag(shard_opt, seed)
    if kafka_version is not None:
        kafka_release.parse_kafka_version(kafka_version)
        check_transaction_version(kafka_version, transaction_version)
    names = [n.strip() for n in scenarios_opt.split(",") if n.strip()] if scenarios_opt else None
    if scenarios_opt is not None and not names:
        raise ConfigError("--scenarios is empty; give scenario names separated by commas (eos-chaos scenarios lists them)")
    scs = soak.resolve(names, duration)
    soak.preflight(scs)  # an app's missing program: refused now, not once the soak's cluster is up
    wanted = soak.runs_wanted(runs, hours, len(scs))
    sources = names or [sc.name for sc in scs]
    master = seed if seed is not None else random.randrange(2**31)
    folder = make_folder(check_out(Path(out_dir), "--out", "soak folder")) if out_dir else new_run_dir("soak")
    log.info(f"soak of {', '.join(sources)} on {backend.value}, seed {master}, "
             + (f"{hours} h" if hours else f"{wanted} runs") + f"; folder {folder}")
    result = soak.soak(scs, sources, backend, master, folder, runs=wanted, hours=hours, fail_fast=fail_fast,
                       kafka_version=kafka_version, transaction_version=transaction_version, shard=shard)
    t = result.totals()
    out.print(escape(f"{t['runs']} runs, {t['as_expected']} as expected, {t['not_as_expected']} not "
                     f"({t['unknown']} unknown); stopped: "
                     f"{result.stopped_because}; {folder / SOAK_HTML}"), highlight=False)
    for cmd in result.replays():
        out.print(escape(f"  replay: {cmd}"), highlight=False)
    if result.interrupted:
        raise typer.Exit(EXIT_INTERRUPTED)
    if not result.as_expected:  # runs that could only not be judged are not a finding
        raise typer.Exit(exits.UNKNOWN if result.only_unknown else exits.FINDING)
