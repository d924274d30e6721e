"""``eos-chaos hunt``: scenarios drawn from seeds, knowing nothing of any bug, run as a matrix over
clients (the draw and the summary live in harness.campaigns.hunt; docs/HUNT.md)."""

from __future__ import annotations

import contextlib
import json
import logging
import random
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape

from clusters.backends.backends import Backend
from clusters.builds import pins
from harness.base.errors import ConfigError
from harness.cli.console import out
from harness.cli.guard import EXIT_INTERRUPTED, guarded
from harness.cli.matrix import ShardOpt, print_plan, shard_flag
from harness.cli.options import (
    AllowNonDisposableOpt,
    BackendOpt,
    InventoryRunOpt,
    RedoUnknownOpt,
    check_port_base_env,
    external_backend,
    external_kafka_version,
)
from harness.rundir.runfolder import check_out, make_folder, new_run_dir, write_output
from harness.workloads.clients import DEFAULT_LIBRARY
from harness.workloads.clients import spelled as client_libraries

if TYPE_CHECKING:
    from harness.campaigns.matrix import Definition
    from harness.run.scenario import Scenario

log = logging.getLogger(__name__)
app = typer.Typer()

#: Long enough for a few dozen faults and the workloads' own rhythm between them.
DEFAULT_DURATION_S = 100.0
#: A drawn run must fit a quiet start, a fault and the quiet end (harness.campaigns.hunt).
MIN_DURATION_S = 20.0


@app.command("hunt")
@guarded
def hunt_cmd(
    seeds: int = typer.Option(10, "--seeds", min=1, max=1000, help="Scenarios to draw, one per seed."),
    clients: str = typer.Option(DEFAULT_LIBRARY, "--clients", metavar="L,L,...",
                                help=f"Client libraries ({client_libraries()}): each runs every drawn scenario."),
    levels: str = typer.Option("default", "--transaction-versions", metavar="V,V,...",
                               help="Transaction versions the clusters are formatted with: 0, 1, 2 or default."),
    duration: float = typer.Option(DEFAULT_DURATION_S, "--duration", help="Each drawn scenario's length (s)."),
    backend: Backend = BackendOpt,
    out_dir: str = typer.Option(None, "--out", help="Hunt folder; the same command on it again resumes "
                                "\\[default: results/<id>-hunt]."),
    seed: int = typer.Option(None, "--seed", help="Master seed: the scenarios' seeds and the runs' \\[default: the "
                             "folder's on resume, else random]."),
    kafka_versions: str = typer.Option(None, "--kafka-versions", metavar="A,B,...",
                                       help=f"Apache Kafka releases \\[default: {pins.KAFKA_VERSION}]."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the seeds, what each draws and the matrix's plan; "
                                 "start nothing, write nothing."),
    apps_opt: str = typer.Option("drawn", "--apps", metavar="drawn|none|A,B,...",
                                 help="The shipped apps run beside the producers: each seed draws one or none "
                                      "(drawn), none, or one of those named (streams-count-sum, kafka-copier, "
                                      "py-copier, go-copier)."),
    broker_faults_opt: bool | None = typer.Option(None, "--broker-faults/--no-broker-faults", help=(
        "Draw request-aware faults between brokers too (WriteTxnMarkers, AddPartitionsToTxn verification, replication's "
        "Fetch); their clusters route those links \\[default: on the local backend, off on the others: they cannot].")),
    redo_unknown: bool = RedoUnknownOpt,
    shard_opt: str = ShardOpt,
    inventory: Path | None = InventoryRunOpt,
    allow_non_disposable: bool = AllowNonDisposableOpt,
) -> None:
    """Draw --seeds scenarios (workload shapes and a schedule of request-aware faults, on the clients'
    links and between brokers, pauses, kills and latency, from each seed), run each on every client;
    write hunt.json, HUNT.md and the matrix.

    Resumable like matrix. Exit 0: every run valid; 1: some run found an anomaly; 3: some unknown; 130: interrupted."""
    from harness.campaigns import hunt, hunt_apps, matrix

    apps = hunt_apps.pool(apps_opt)
    check_port_base_env()  # its clusters' port base: refused now, not when one starts
    backend = external_backend(backend, inventory, allow_non_disposable)
    if backend is Backend.external:
        kafka_versions = external_kafka_version(kafka_versions, levels)
    broker_faults = _broker_faults(broker_faults_opt, backend)
    if not MIN_DURATION_S <= duration <= 3600:
        raise ConfigError(f"--duration {duration:g}: give {MIN_DURATION_S:g} to 3600 seconds (a drawn run needs a "
                          f"quiet start, a fault and {hunt.QUIET_END_S:g} s of quiet end)")
    shard = shard_flag(shard_opt, seed)
    folder = check_out(Path(out_dir), "--out", "hunt folder", resumable=True) if out_dir else None
    old = matrix.load(folder) if folder is not None else None
    master = seed if seed is not None else old.definition.master_seed if old is not None else random.randrange(2**31)
    hunt_seeds = hunt.seeds(master, seeds)
    if dry_run:
        with tempfile.TemporaryDirectory(prefix="eos-chaos-hunt-") as tmp:
            paths = _drawn_files(Path(tmp), folder, hunt_seeds, duration, apps, broker_faults)
            defn, scs = _define(paths, clients, levels, master, backend, kafka_versions)
            matrix.preflight(scs)
            m = matrix.sharded(matrix.continued(old, defn, folder or Path(tmp), redo_unknown), scs, shard, folder or Path(tmp))
            print_plan(matrix.plan(m, scs))
        return
    with _removed_unless_started(folder or new_run_dir("hunt"), made=folder is None) as folder:
        paths = hunt.write_scenarios(make_folder(folder), hunt_seeds, duration, apps, broker_faults)
        defn, scs = _define(paths, clients, levels, master, backend, kafka_versions)
        matrix.preflight(scs)
        m = matrix.sharded(matrix.continued(old, defn, folder, redo_unknown), scs, shard, folder)
        matrix.prepare_kafka(m)
        matrix.prepare_clients(m, scs)
    log.info(f"hunt of {len(hunt_seeds)} drawn scenarios x {len(defn.clients)} clients on {backend.value}, master seed "
             f"{master}; folder {folder}")
    m = matrix.run_matrix(m, scs, folder)
    kits = hunt.repro_kits(m, folder)  # before the summary, which links them
    summary = hunt.summary(m, folder)
    write_output(folder / hunt.HUNT_JSON, json.dumps(summary, indent=1) + "\n")
    write_output(folder / hunt.HUNT_MD, hunt.page(summary, folder.name))
    _print_summary(summary, kits, folder)
    if m.interrupted:
        out.print(escape(f"interrupted; the same command with --out {folder} continues"), highlight=False)
        raise typer.Exit(EXIT_INTERRUPTED)
    if m.exit_code():
        raise typer.Exit(m.exit_code())


def _drawn_files(tmp: Path, folder: Path | None, hunt_seeds: list[int], duration: float,
                 apps: tuple[str, ...] | None, broker_faults: bool) -> list[Path]:
    """The dry run's scenario files, each seed's name and description printed with a line for each
    of its faults between brokers: drawn into ``tmp``, or the file the hunt's ``folder`` holds (a
    resume runs those; the matrix knows them by path)."""
    import yaml

    from harness.campaigns import hunt, hunt_brokers

    paths = hunt.write_scenarios(tmp, hunt_seeds, duration, apps, broker_faults)
    if folder is not None:
        paths = [k if (k := folder / hunt.SCENARIOS / p.name).is_file() else p for p in paths]
    for p in paths:
        drawn = yaml.safe_load(p.read_text())
        out.print(escape(f"{p.name}: {drawn['description']}"), highlight=False)
        for f in filter(hunt_brokers.between_brokers, drawn["faults"]):
            out.print(escape(f"  between brokers: {hunt_brokers.said(f)}"), highlight=False)
    return paths


def _broker_faults(asked: bool | None, backend: Backend) -> bool:
    """Whether the seeds draw faults between brokers: as asked, else where the backend can carry
    them (said when it cannot); ``--broker-faults`` on a backend that cannot is a ConfigError."""
    from harness.campaigns import hunt_brokers

    if asked is False or hunt_brokers.drawn_on(backend.value):
        return asked is not False
    why = (f"the {backend.value} backend's wire proxy carries only the clients' links (its brokers reach each other "
           "without it)")
    if asked:
        raise ConfigError(f"--broker-faults: {why}; run the hunt with --backend local, or leave the flag out")
    out.print(escape(f"faults between brokers are not drawn: {why}"), highlight=False)
    return False


def _print_summary(summary: dict[str, Any], kits: list[Path], folder: Path) -> None:
    """Each column's line, the repro kits written, and where the pages are."""
    from harness.campaigns import hunt, matrix

    for c in summary["columns"]:
        rate = "-" if c["detection_rate"] is None else f"{c['detection_rate']:.0%}"
        out.print(escape(f"{c['client']} / Kafka {c['kafka_version']} / tv {c['transaction_version']}: found something in "
                         f"{c['found']} of {c['judged']} judged seeds ({rate}), {c['unknown']} unknown; checks "
                         f"{c['checks'] or 'none'}; median time to the first anomaly "
                         f"{c['median_first_anomaly_s'] if c['median_first_anomaly_s'] is not None else '-'} s"),
                  highlight=False)
    if kits:
        out.print(escape(f"{len(kits)} repro kits written: " + ", ".join(str(k / 'REPORT.md') for k in kits)),
                  highlight=False)
    out.print(escape(f"{folder / hunt.HUNT_MD}, {folder / matrix.MATRIX_HTML}"), highlight=False)


@contextlib.contextmanager
def _removed_unless_started(folder: Path, made: bool) -> Iterator[Path]:
    """``folder``, and what the hunt wrote in it (its drawn scenarios) removed again when the hunt is
    refused or interrupted before its matrix began (no ``matrix.json`` yet), if the folder was new
    or empty (``made``: just made for it): else it held files but no matrix, which refused the
    corrected command. A folder of an earlier hunt keeps everything."""
    existed = folder.is_dir() and not made
    fresh = not existed or not any(folder.iterdir())
    try:
        yield folder
    except BaseException:
        if fresh and folder.is_dir():
            if existed:  # the user's empty folder stays, empty
                for child in folder.iterdir():
                    shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
            else:
                shutil.rmtree(folder, ignore_errors=True)
        raise


def _define(paths: list[Path], clients: str, levels: str, master: int, backend: Backend,
            kafka_versions: str | None) -> tuple[Definition, dict[tuple[str, str], Scenario]]:
    """The matrix of the drawn scenarios' files x the clients (``matrix.define``'s checks and errors)."""
    from harness.campaigns import matrix

    return matrix.define(",".join(map(str, paths)), clients, levels, 1, master, backend, None, None, kafka_versions)
