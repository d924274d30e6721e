"""``eos-chaos matrix``: scenarios x clients x transaction versions x seeds (the rules live in
harness.campaigns.matrix, the page in harness.report.matrix_page)."""

from __future__ import annotations

import logging
import random
from pathlib import Path

import typer
from rich.markup import escape

from clusters import artifacts, pins
from clusters.backends import Backend
from harness.cli.console import out
from harness.cli.guard import EXIT_INTERRUPTED, guarded
from harness.cli.options import BackendOpt, duration_option
from harness.rundir.runfolder import new_run_dir
from harness.workloads.clients import DEFAULT_LIBRARY
from harness.workloads.clients import spelled as client_libraries

log = logging.getLogger(__name__)
app = typer.Typer()


@app.command("matrix")
@guarded
def matrix_cmd(
    scenarios: str = typer.Option(..., "--scenarios", metavar="A,B,...", help="Scenarios (names or YAML files): the rows."),
    clients: str = typer.Option(DEFAULT_LIBRARY, "--clients", metavar="L,L,...",
                                help=f"Client libraries ({client_libraries()}): the columns \\[default: {DEFAULT_LIBRARY}]."),
    levels: str = typer.Option("default", "--transaction-versions", metavar="V,V,...",
                               help="Transaction versions the clusters are formatted with: 0, 1, 2 or default "
                                    "(Kafka's own) \\[default: default]."),
    seeds: int = typer.Option(1, "--seeds", min=1, help="Runs per cell, seeds drawn from the master seed."),
    backend: Backend = BackendOpt,
    duration: float | None = duration_option("Override every scenario's duration (s)."),
    out_dir: str = typer.Option(None, "--out", help="Matrix folder; the same command on it again resumes "
                                "\\[default: results/<id>-matrix]."),
    seed: int = typer.Option(None, "--seed", help="Master seed \\[default: the folder's on resume, else random]."),
    kafka_version: str = typer.Option(None, "--kafka-version", help=f"Apache Kafka release \\[default: {pins.KAFKA_VERSION}]."),
) -> None:
    """Run every cell (scenario x client x transaction version) with the same seeds; write matrix.json + matrix.html.

    One cluster per transaction version. Resumable: the same command with the same --out skips
    finished runs. Exit 0: every run valid; 1: some run found an anomaly; 3: some unknown; 130: interrupted."""
    from harness.campaigns import matrix

    if kafka_version is not None:
        artifacts.parse_kafka_version(kafka_version)
    folder = Path(out_dir) if out_dir else None
    old = matrix.load(folder) if folder is not None else None
    master = seed if seed is not None else old.definition.master_seed if old is not None else random.randrange(2**31)
    defn, scs = matrix.define(scenarios, clients, levels, seeds, master, backend, duration, kafka_version)
    m = matrix.continued(old, defn, folder or Path("."))
    if folder is None:
        folder = new_run_dir("matrix")
    folder.mkdir(parents=True, exist_ok=True)
    done = len(m.runs)
    log.info(f"matrix of {len(defn.cells())} cells x {defn.seeds} seeds on {backend.value}, master seed {master}; "
             f"folder {folder}" + (f"; resuming: {done} runs done, {len(m.pending)} to go" if done else ""))
    m = matrix.run_matrix(m, scs, folder)
    t = m.totals()
    out.print(escape(f"{t['runs']}/{t['wanted']} runs: {t['valid']} valid, {t['invalid']} invalid, {t['unknown']} unknown; "
                     f"stopped: {m.stopped_because}; {folder / matrix.MATRIX_HTML}"), highlight=False)
    for cell in m.definition.cells():
        c = m.cell(cell)
        if c["first_failing"]:
            out.print(escape(f"  {cell.scenario} / {cell.client} / tv {matrix.level_name(cell.level)}: "
                             f"{c['invalid']}/{c['runs']} invalid; replay: {c['first_failing']['replay']}"), highlight=False)
    if m.interrupted:
        out.print(escape(f"interrupted; the same command with --out {folder} continues"), highlight=False)
        raise typer.Exit(EXIT_INTERRUPTED)
    if m.exit_code():
        raise typer.Exit(m.exit_code())
