"""``eos-chaos minimize``: the smallest scenario that still reproduces an invalid run's anomalies, found
by running smaller ones (the rules live in harness.campaigns.minimize)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape

from harness.base.errors import ConfigError
from harness.base.flags import comma_list
from harness.cli import exits
from harness.cli.console import err, out
from harness.cli.guard import EXIT_INTERRUPTED, guarded
from harness.cli.options import run_folder

if TYPE_CHECKING:
    from harness.campaigns.minimize import Result, Start

app = typer.Typer()


@app.command("minimize")
@guarded
def minimize_cmd(
    run_dir: str = typer.Argument(..., help="An invalid run's folder (with verdict.json and journal.json)."),
    out_dir: str = typer.Option(None, "--out", help="Write here: a new or empty folder, or an earlier repro's "
                                                    "\\[default: RUN_DIR/repro]."),
    max_runs: int = typer.Option(8, "--max-runs", min=1, max=1000, help="Runs in all, every candidate's together."),
    tries: int = typer.Option(2, "--tries", min=1, max=100,
                              help="Runs of one candidate before it is said not to reproduce (a timing bug "
                                   "reproduces at a rate below 1)."),
    checks: str = typer.Option(None, "--checks", metavar="A,B,...",
                               help="The checks a candidate's run must fire to reproduce \\[default: every check "
                                    "that fired in the run]."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the candidates, in order, as they would run if the "
                                 "first reproduced and no smaller one did; run nothing, write nothing."),
) -> None:
    """Find the smallest scenario that still reproduces a run's anomalies, by running smaller ones.

    From the run's own scenario, replayed with its seed, Kafka release, transaction.version and
    client libraries (every run on one cluster: the one that is up if it can run it, else one
    started here): eos-chaos repro's draft (else the run's own scenario), then fewer faults (all
    out, then ddmin), fewer workloads, a shorter duration. A candidate reproduces when a run of it
    fires the same checks. Writes minimal.yaml, candidates.md, minimize.json and REPORT.md citing
    the minimal scenario. Exit 0: a smaller scenario reproduced, or the run's own did and nothing
    smaller; 3: nothing reproduced; 2: bad input (a valid run has nothing to minimize)."""
    from harness.campaigns import minimize
    from harness.report import repro, repro_md
    from harness.report.loaded import read_verdict

    d = run_folder(run_dir)
    verdict = read_verdict(d)
    if verdict.valid is True:
        raise ConfigError(f"{d}: the run is valid, so there is no anomaly to reproduce and nothing to minimize "
                          "(minimize takes a run whose checks found something)")
    if tries > max_runs:
        raise ConfigError(f"--tries {tries} is more than --max-runs {max_runs}: the first candidate alone could not "
                          "have its tries; give --max-runs at least --tries")
    target = repro_md.check_out_folder(Path(out_dir) if out_dir else d / "repro", "--out")
    wanted = comma_list("--checks", checks) if checks is not None else None
    r = repro.gather(d, verdict)
    start = minimize.start_of(r, wanted)
    _print_start(start, tries, max_runs)
    if dry_run:
        result = minimize.plan(start, tries, max_runs)
        _print_table(result)
        out.print(escape(f"{len(result.tried)} candidates, {result.runs} runs if the first reproduced at once and "
                         f"nothing smaller did; stopped: {result.stopped_because}. Nothing run (--dry-run)."),
                  highlight=False)
        return
    started = time.perf_counter()

    def say(line: str) -> None:
        err.print(escape(line), highlight=False)

    with minimize.replay(start, target, _progress()) as run_one:
        result = minimize.minimize(start, run_one, tries, max_runs, say)
    minimize.write(r, result, target)
    _print_table(result)
    _print_outcome(result, target, time.perf_counter() - started)
    if result.error is not None:
        raise result.error
    if result.interrupted:
        err.print("[yellow]interrupted: the run under way was healed and checked, the cluster started for the runs "
                  "taken down; what was found so far is written[/]")
        raise typer.Exit(EXIT_INTERRUPTED)
    if result.outcome == "none":
        raise typer.Exit(exits.UNKNOWN)


def _progress() -> Callable[..., object]:
    """Each run's live progress, as ``eos-chaos run`` shows it (stderr)."""
    from harness.report.live_progress import ProgressLine

    def show(d: Path, secs: float, faults: Callable[[], list[str]]) -> ProgressLine:
        return ProgressLine(d, secs, faults, console=err).start()

    return show


def _print_start(start: Start, tries: int, max_runs: int) -> None:
    from harness.campaigns.minimize import kept

    tv = start.transaction_version if start.transaction_version is not None else "the release's default"
    lines = [f"run {start.run_name}: {kept(start, start.original)}; to reproduce: {', '.join(start.checks)}",
             f"replayed with seed {start.seed}, Kafka {start.kafka_version or 'the default'}, transaction.version {tv}, "
             f"{start.backend} backend; at most {tries} runs a candidate, {max_runs} in all",
             "eos-chaos repro's draft: " + (kept(start, start.draft) if start.draft is not None
                                            else "none (the anomaly is not placed in time)")]
    for line in lines:
        out.print(escape(line), highlight=False)


def _print_table(result: Result) -> None:
    from rich.table import Table

    from harness.campaigns.minimize import kept

    said = {True: "[green]yes[/]", False: "no", None: "–"}
    table = Table("#", "step", "taken out", "kept", "runs", "reproduced", box=None, highlight=False)
    for col in table.columns:
        col.overflow = "fold"
    for t in result.tried:
        table.add_row(str(t.number), t.step, escape(t.removed), escape(kept(result.start, t.cut)), str(len(t.runs)),
                      said[t.reproduced] + (f" ({escape(t.note)})" if t.note else ""))
    out.print(table)


def _print_outcome(result: Result, target: Path, secs: float) -> None:
    from harness.campaigns import minimize
    from harness.report import repro_md

    out.print(escape(minimize.says(result).replace("`", "")), highlight=False)
    data = minimize.record(result, target)
    if data["minimal"] is not None:
        out.print(escape(f"minimal: {target / repro_md.CHECKED_FILE}; replay (in {target}): {data['minimal']['command']}"),
                  highlight=False)
    out.print(escape(f"{target / repro_md.REPORT_MD}, {target / repro_md.CANDIDATES_FILE} ({result.runs} runs, "
                     f"{secs:.0f}s)"), highlight=False)
