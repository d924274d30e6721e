"""``eos-chaos matrix``: scenarios x clients x Kafka versions x transaction versions x seeds (the rules live in
harness.campaigns.matrix, the page in harness.report.matrix_page)."""

from __future__ import annotations

import logging
import random
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape
from typer._click.core import Context as ClickContext
from typer._click.exceptions import MissingParameter
from typer.core import TyperGroup

from clusters.backends.backends import Backend
from clusters.builds import pins
from harness.base.errors import ConfigError
from harness.base.paths import results_dir
from harness.cli.console import out
from harness.cli.guard import EXIT_INTERRUPTED, guarded
from harness.cli.options import (
    AllowNonDisposableOpt,
    BackendOpt,
    InventoryRunOpt,
    RedoUnknownOpt,
    check_port_base_env,
    duration_option,
    external_backend,
    external_kafka_version,
)
from harness.rundir.runfolder import check_out, make_folder, new_run_dir, new_run_id
from harness.workloads.clients import DEFAULT_LIBRARY
from harness.workloads.clients import spelled as client_libraries

if TYPE_CHECKING:
    from harness.campaigns.matrix import Matrix
    from harness.campaigns.shards import Shard

log = logging.getLogger(__name__)


class MatrixGroup(TyperGroup):
    """``eos-chaos matrix`` runs a matrix itself and has subcommands (``merge``): its ``--scenarios``
    is wanted, as click would say it, when no subcommand is given."""

    def parse_args(self, ctx: ClickContext, args: list[str]) -> list[str]:
        rest = super().parse_args(ctx, args)
        if not ctx._protected_args and not ctx.resilient_parsing and ctx.params.get("scenarios") is None:
            scenarios: Any = next(p for p in self.params if p.name == "scenarios")
            raise MissingParameter(ctx=ctx, param=scenarios)
        return rest


app = typer.Typer(name="matrix", cls=MatrixGroup, invoke_without_command=True)

ShardOpt = typer.Option(None, "--shard", metavar="I/N", help="Run shard I of N: a share of the runs that depends on "
                        "the flags only, so N runners (a CI job matrix) run the table between them; needs --seed. "
                        "Join the folders with eos-chaos matrix merge.")


@app.callback()
@guarded
def matrix_cmd(
    ctx: typer.Context,
    scenarios: str = typer.Option(None, "--scenarios", metavar="A,B,...",
                                  help="Scenarios (names or YAML files): the rows. \\[required]"),
    clients: str = typer.Option(DEFAULT_LIBRARY, "--clients", metavar="L,L,...",
                                help=f"Client libraries ({client_libraries()}): the columns."),
    levels: str = typer.Option("default", "--transaction-versions", metavar="V,V,...",
                               help="Transaction versions the clusters are formatted with: 0, 1, 2 or default "
                                    "(Kafka's own)."),
    seeds: int = typer.Option(1, "--seeds", min=1, help="Runs per cell, seeds drawn from the master seed."),
    backend: Backend = BackendOpt,
    duration: float | None = duration_option("Override every scenario's duration (s)."),
    out_dir: str = typer.Option(None, "--out", help="Matrix folder; the same command on it again resumes "
                                "\\[default: results/<id>-matrix]."),
    seed: int = typer.Option(None, "--seed", help="Master seed \\[default: the folder's on resume, else random]."),
    kafka_versions: str = typer.Option(None, "--kafka-versions", metavar="A,B,...",
                                       help=f"Apache Kafka releases, {'.'.join(map(str, pins.MIN_KAFKA_VERSION))} or "
                                            f"newer, a cluster each per transaction version \\[default: {pins.KAFKA_VERSION}]."),
    kafka_version: str = typer.Option(None, "--kafka-version", help="One Apache Kafka release: --kafka-versions X."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the cells, their seeds, the clusters and an estimate "
                                 "of the time; start nothing, fetch nothing, write nothing."),
    redo_unknown: bool = RedoUnknownOpt,
    shard_opt: str = ShardOpt,
    inventory: Path | None = InventoryRunOpt,
    allow_non_disposable: bool = AllowNonDisposableOpt,
) -> None:
    """Run every cell (scenario x client x Kafka version x transaction version) with the same seeds; write matrix.json + matrix.html.

    One cluster per Kafka version and transaction version, each release fetched before any cell
    runs; a transaction version a release cannot be formatted at is a cell that says so. Resumable:
    the same command with the same --out skips finished runs (with --dry-run: lists what is left).
    Exit 0: every run valid; 1: some run found an anomaly; 3: some unknown; 130: interrupted."""
    from harness.campaigns import matrix

    if ctx.invoked_subcommand is not None:
        return
    check_port_base_env()  # its clusters' port base: refused now, not when one starts
    backend = external_backend(backend, inventory, allow_non_disposable)
    one_version: str | None = kafka_version
    if backend is Backend.external:
        kafka_versions, one_version = external_kafka_version(kafka_versions or kafka_version, levels), None
    shard = shard_flag(shard_opt, seed)
    folder = check_out(Path(out_dir), "--out", "matrix folder", resumable=True) if out_dir else None
    old = matrix.load(folder) if folder is not None else None
    master = seed if seed is not None else old.definition.master_seed if old is not None else random.randrange(2**31)
    defn, scs = matrix.define(scenarios, clients, levels, seeds, master, backend, duration, one_version, kafka_versions)
    matrix.preflight(scs)  # an app's missing program: refused now, dry run or not, not once a cluster is up
    m = matrix.sharded(matrix.continued(old, defn, folder or Path("."), redo_unknown), scs, shard, folder or Path("."))
    if dry_run:
        print_plan(matrix.plan(m, scs))
        return
    # a Kafka or client release that does not exist is refused before any cluster starts or any cell runs
    matrix.prepare_kafka(m, "--kafka-version" if one_version is not None else "--kafka-versions")
    matrix.prepare_clients(m, scs)
    if folder is None:
        folder = new_run_dir("matrix")
    make_folder(folder)
    done = len(m.runs)
    log.info(f"matrix of {len(defn.cells())} cells x {defn.seeds} seeds on {backend.value}, master seed {master}"
             + (f", shard {shard}: {len(m.wanted)} of its {len(defn.run_keys())} runs" if shard else "")
             + f"; folder {folder}" + (f"; resuming: {done} runs done, {len(m.pending)} to go" if done else ""))
    m = matrix.run_matrix(m, scs, folder)
    say_outcome(m, folder)
    if m.interrupted:
        out.print(escape(f"interrupted; the same command with --out {folder} continues"), highlight=False)
        raise typer.Exit(EXIT_INTERRUPTED)
    if m.exit_code():
        raise typer.Exit(m.exit_code())


def shard_flag(text: str | None, seed: int | None) -> Shard | None:
    """``--shard`` as a Shard; ConfigError for a bad one, or one without ``--seed`` (every shard
    must draw the same run seeds; a random master seed would differ from runner to runner)."""
    from harness.campaigns.shards import parse_shard

    shard = parse_shard(text)
    if shard is not None and seed is None:
        raise ConfigError(f"--shard {shard} needs --seed: the shards of one table must share one master seed "
                          "(give every runner the same --seed N)")
    return shard


def say_outcome(m: Matrix, folder: Path) -> None:
    """The totals, each cell with a finding and its replay, and a merged matrix's missing shards."""
    from harness.campaigns.matrix import MATRIX_HTML, cell_name

    t = m.totals()
    out.print(escape(f"{t['runs']}/{t['wanted']} runs: {t['valid']} valid, {t['invalid']} invalid, {t['unknown']} unknown"
                     + (f", {t['not_run']} not run" if t["not_run"] else "")
                     + f"; stopped: {m.stopped_because}; {folder / MATRIX_HTML}"), highlight=False)
    for cell in m.definition.cells():
        c = m.cell(cell)
        if c["first_failing"]:
            out.print(escape(f"  {cell_name(cell)}: {c['invalid']}/{c['runs']} invalid; "
                             f"replay: {c['first_failing']['replay']}"), highlight=False)
        if c["missing_shards"]:
            out.print(escape(f"  {cell_name(cell)}: not run (shard{'s' * (len(c['missing_shards']) > 1)} "
                             f"{', '.join(f'{i}/{shard_count(m)}' for i in c['missing_shards'])} missing)"), highlight=False)


def shard_count(m: Matrix) -> int:
    """How many shards a merged matrix was cut into (1: not a merged one)."""
    return int(m.merged["count"]) if m.merged else 1


ShardFolders = typer.Argument(..., metavar="DIR...", help="The shards' folders (eos-chaos matrix --shard I/N --out DIR).")


@app.command("merge")
@guarded
def merge_cmd(
    folders: list[Path] = ShardFolders,
    out_dir: str = typer.Option(None, "--out", help="The merged matrix folder, new or empty \\[default: results/<id>-matrix]."),
) -> None:
    """Join the folders of matrix --shard I/N (or hunt --shard) into one matrix: matrix.json + matrix.html.

    Refuses shards of different matrices (naming each difference), of different eos-chaos versions,
    and a shard given twice. A shard not given is not run: its cells say so, never valid. The merged
    folder resumes as a matrix: the same matrix command on it (no --shard) runs the missing shards' runs.
    Exit 0: every run valid; 1: some run found an anomaly; 3: some unknown, or a shard missing."""
    from harness.campaigns import merge

    folder = check_out(Path(out_dir), "--out", "matrix folder") if out_dir else None
    missing = [f for f in folders if not f.is_dir()]
    if missing:
        raise ConfigError(f"matrix merge: {missing[0]} is not a folder; give the folders of eos-chaos matrix --shard I/N")
    folder = folder or results_dir() / new_run_id("matrix")  # made once the shards are found to be one table
    m = merge.merge(folders, folder)
    say_outcome(m, folder)
    if m.exit_code():
        raise typer.Exit(m.exit_code())


def print_plan(p: dict[str, Any]) -> None:
    """``matrix.plan`` as lines: the matrix, its seeds, each cluster with its cells, the estimate."""
    from harness.campaigns.matrix import CLUSTER_START_S, RUN_OVERHEAD_S

    def say(line: str) -> None:
        out.print(escape(line), highlight=False)

    left = f"{p['pending']} to run" + (f", {p['done']} done" if p["done"] else "")
    cells = _n(p["cells"], "cell") + (f" ({p['unsupported_cells']} not supported)" if p["unsupported_cells"] else "")
    say(f"matrix of {cells} x {_n(p['seeds'], 'seed')} = {_n(p['runs'], 'run')} ({left}), {p['backend']} backend, "
        f"master seed {p['master_seed']}")
    if p["shard"]:
        say(f"shard {p['shard']}: {_n(p['shard_runs'], 'run')} of the {p['runs']} (the other shards run the rest)")
    say("run seeds (the same in every cell): " + ", ".join(f"#{i + 1} {s}" for i, s in enumerate(p["run_seeds"])))
    if p["clusters"]:
        say("clusters, one at a time, each with its cells and their seeds to run, by Kafka version:")
    n = 0
    for v in p["kafka_versions"]:
        how = "in the cache" if v["cached"] else "not in the cache: fetched from Maven Central before any cell runs"
        say(f"Kafka {v['kafka_version']} ({how}): {_n(len(v['clusters']), 'cluster')}"
            + ("" if v["clusters"] else ", nothing left to run"))
        for c in v["clusters"]:
            n += 1
            _print_cluster(n, c)
        for u in v["unsupported"]:
            say(f"  not run, transaction version {u['transaction_version']}: {u['why']} ("
                + ", ".join(f"{c['scenario']} / {c['client']}" for c in u["cells"]) + ")")
    up = p["cluster_up"]
    if p["cluster_up_comes_back"] and up["serves"]:
        say(f"the {p['backend']} cluster that is up makes way for them, and is started again at the end")
    elif p["cluster_up_comes_back"]:
        say(f"the {p['backend']} cluster that is up runs Kafka {up['kafka_version']} (run folder {up['run_dir']}): no cell "
            f"to run on it (it runs Kafka {up['kafka_version']}'s cells at the default transaction version without broker "
            "settings, and without faults between brokers unless it routes them); it makes way for them, and is started "
            "again at the end")
    e = p["estimate"]
    say(f"estimate: about {_duration(e['total_s'])} = {e['scenario_s']:.0f} s of scenarios + {_n(p['pending'], 'run')} x "
        f"{RUN_OVERHEAD_S:.0f} s (set-up, heal, final reads, check, report) + {_n(e['cluster_starts'], 'cluster start')} x "
        f"{CLUSTER_START_S:.0f} s (measured on the local backend, docs/MATRIX.md)")
    say("nothing started (--dry-run)")


def _print_cluster(n: int, c: dict[str, Any]) -> None:
    """One cluster of ``matrix.plan``: what it is, how it comes up, its cells and their seeds."""
    settings = ", ".join(f"{k}={v}" for k, v in c["broker_config"].items()) or "no broker settings of its own"
    how = "started for its runs" if c["started"] else f"the cluster that is up (run folder {c['run_dir']})"
    lines = [f"  {n}. {c['backend']}, Kafka {c['kafka_version']}, transaction version {c['transaction_version']}"
             + (f" ({c['transaction_version_why']})" if c["transaction_version_why"] != "asked" else "")
             + f", {settings}" + (", its links between brokers through the wire proxy" if c.get("wire_between_brokers") else "")
             + f": {how}; {_n(c['runs'], 'run')}, {c['scenario_s']:.0f} s of scenarios"]
    lines += [f"     {cell['scenario']} / {cell['client']}: seed{'s' * (len(cell['seeds']) != 1)} "
              f"{', '.join(map(str, cell['seeds']))}" for cell in c["cells"]]
    for line in lines:
        out.print(escape(line), highlight=False)


def _duration(seconds: float) -> str:
    """``seconds`` as "1 h 05 min", "12 min 30 s" or "40 s"."""
    s = round(seconds)
    if s >= 3600:
        return f"{s // 3600} h {s % 3600 // 60:02d} min"
    return f"{s // 60} min {s % 60:02d} s" if s >= 60 else f"{s} s"


def _n(count: int, what: str) -> str:
    return f"{count} {what}{'s' * (count != 1)}"
