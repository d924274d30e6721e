"""``eos-chaos run``, ``smoke`` and ``scenarios``: one run of a scenario, and the list of them."""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from pathlib import Path

import typer
from rich.markup import escape

from clusters.backends import backends
from clusters.backends.backends import Backend
from clusters.builds import pins
from clusters.kafka import kafka_release
from clusters.kafka.feature_levels import check_transaction_version
from harness.base.errors import ConfigError
from harness.cli import exits
from harness.cli.console import err, out, print_json
from harness.cli.guard import EXIT_INTERRUPTED, guarded
from harness.cli.options import (
    AllowNonDisposableOpt,
    BackendOpt,
    InventoryRunOpt,
    KafkaVersion,
    PortBase,
    TransactionVersion,
    duration_option,
    external_backend,
    finite_option,
    kafka_artifacts,
)
from harness.cli.summary import FAIL, PASS, exit_code, print_outcome, print_verdict
from harness.rundir.runfolder import check_out, new_run_dir, write_text
from harness.workloads.clients import spelled as client_libraries
from harness.workloads.registry import MAX_PRODUCERS

log = logging.getLogger(__name__)
app = typer.Typer()

#: How many values of each kind of smoke finding one line lists.
SMOKE_ITEMS_SHOWN = 10


@app.command()
@guarded
def scenarios(as_json: bool = typer.Option(False, "--json", help="Machine-readable output.")) -> None:
    """List the built-in scenarios: name and what each does."""
    from harness.run import scenario

    items = [(n, scenario.load(n).description) for n in scenario.names()]
    if as_json:
        print_json([{"name": n, "description": d} for n, d in items])
        return
    for n, d in items:
        out.print(f"[bold]{n}[/]  {escape(d)}", highlight=False)


@app.command("run")
@guarded
def run_cmd(
    name: str = typer.Argument(..., help="A built-in scenario (eos-chaos scenarios) or a YAML file."),
    backend: Backend = BackendOpt,
    seed: int = typer.Option(None, "--seed", help="Seed for the workloads' choices and the fault schedule "
                             "(the same scenario and seed plan the same faults) \\[default: random]."),
    duration: float | None = duration_option("Override the scenario's duration (s)."),
    out_dir: str = typer.Option(None, "--out", help="Run folder: a new or empty one, in a folder that exists \\[default: results/<run id>]."),
    kafka_version: str = typer.Option(None, "--kafka-version",
                                      help=f"Apache Kafka release \\[default: the cluster that is up, else {pins.KAFKA_VERSION}]."),
    port_base: int | None = PortBase,
    keep: bool = typer.Option(False, "--keep", help="Leave the cluster this run starts up afterwards (eos-chaos cluster down stops it)."),
    transaction_version: int | None = TransactionVersion,
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the planned fault schedule; start nothing."),
    as_json: bool = typer.Option(False, "--json", help="With --dry-run: the schedule as JSON."),
    library: str | None = typer.Option(None, "--library", metavar="LIB",
                                       help=f"Run every workload that can choose on this client library: {client_libraries()} "
                                            "\\[default: the scenario's]."),
    producers: int | None = typer.Option(None, "--producers", metavar="N",
                                         help=f"Run N transactional producers in each txn-producer process (its setting "
                                              f"producers, 1 to {MAX_PRODUCERS}; confluent-kafka only) \\[default: the "
                                              "scenario's]."),
    inventory: Path | None = InventoryRunOpt,
    allow_non_disposable: bool = AllowNonDisposableOpt,
) -> None:
    """Run a scenario: cluster, workloads, faults, heal, final reads, verdict. Exit 0 valid, 1 invalid, 3 unknown.

    Uses the backend's cluster that is up (healing it first), else starts one and takes it down
    after (unless --keep). Ctrl-C ends the run early: faults are healed, what ran is checked, exit 130."""
    from harness.cli import (
        dryrun,  # imports the schedule and pydantic models: only when a run needs them
    )
    from harness.run import runner, scenario

    backend = external_backend(backend, inventory, allow_non_disposable)
    if as_json and not dry_run:
        # A run prints its verdict, not JSON: --json alone would start a real run by surprise.
        raise ConfigError("--json needs --dry-run (it prints the planned schedule as JSON; a run's verdict is "
                          "in RUN_DIR/verdict.json)")
    if kafka_version is not None:
        kafka_release.parse_kafka_version(kafka_version)
        check_transaction_version(kafka_version, transaction_version)
    sc = scenario.load(name)
    if duration is not None:
        sc = sc.with_duration(duration, flag="--duration")
    if producers is not None:
        sc = sc.with_producers(producers, flag="--producers")
    if library is not None:
        sc = sc.with_library(library, flag="--library")
    s = seed if seed is not None else random.randrange(2**31)
    runner.check_backend(sc, backend)
    if dry_run:
        dryrun.print_plan(sc, s, as_json, inventory)
        return
    if library is not None:  # fetched and built before anything starts; a release that does not exist names the flag
        from harness.workloads.clients import prepare

        prepare([library], flag="--library")
    # a bad --out is refused before anything starts (no cluster, no folder made)
    run_dir = check_out(Path(out_dir), "--out", "run folder") if out_dir else new_run_dir(sc.name)
    log.info(f"scenario {sc.name}, seed {s}, {backend.value} backend, run folder {run_dir}")
    from harness.report.live_progress import ProgressLine

    def show(d: Path, secs: float, faults: Callable[[], list[str]]) -> ProgressLine:
        return ProgressLine(d, secs, faults, console=err).start()

    result = runner.run(sc, backend, s, run_dir, kafka_version, port_base=port_base, keep=keep, show=show,
                        source=name, transaction_version=transaction_version)
    print_verdict(result.verdict, run_dir)
    if result.interrupted:
        err.print("[yellow]interrupted: the run ended early; faults healed, what ran was checked[/]")
        raise typer.Exit(EXIT_INTERRUPTED)
    if exit_code(result.verdict):
        raise typer.Exit(exit_code(result.verdict))


@app.command()
@guarded
def smoke(
    duration: float = finite_option(30.0, "--duration", 10, 3600, help="Seconds of transactional writes."),
    backend: Backend = BackendOpt,
    kafka_version: str = KafkaVersion,
    port_base: int | None = PortBase,
) -> None:
    """A cluster + a transactional producer while a broker is killed -9; PASS when every
    committed value is read back exactly once."""
    from harness.campaigns.smoke import run_smoke

    arts = kafka_artifacts(kafka_version)
    run_dir = new_run_dir("smoke")
    log.info(f"run folder {run_dir}")
    with backends.new_cluster(backend, arts, run_dir, port_base) as cluster:
        log.info("cluster healthy; producing")
        result = run_smoke(cluster, duration, run_dir)
    details = [escape(line) for line in result.details()]
    print_outcome(PASS if result.passed else FAIL, result.summary(), details,
                  f"logs: {run_dir}/nodes/*/server.log, {run_dir}/toxiproxy.log ({backend.value} backend)")
    write_text(run_dir / "smoke.txt", ("PASS " if result.passed else "FAIL ") + result.summary() + "\n")
    if not result.passed:
        # a finding is 1; a smoke that judged nothing (unknown verdict, no broker killed, nothing
        # committed, a fault or heal that failed) is 3, never the code of a finding
        raise typer.Exit(exits.FINDING if result.verdict.valid is False else exits.UNKNOWN)
