"""``eos-chaos check``, ``report``, ``repro``, ``compare`` and ``index``: what finished run folders say, again."""

from __future__ import annotations

import time
from pathlib import Path

import typer
from rich.markup import escape

from harness.base.errors import ConfigError
from harness.cli.console import out, print_json
from harness.cli.guard import guarded
from harness.cli.options import Engine, EngineOpt, run_folder
from harness.cli.summary import exit_code, print_verdict
from harness.rundir.runfolder import check_out

app = typer.Typer()


@app.command("check")
@guarded
def check_cmd(run_dir: str = typer.Argument(..., help="A run folder (with history/)."), engine: Engine = EngineOpt) -> None:
    """Re-run the checker on a run folder's history alone; rewrites verdict.json (keeping the run's facts and
    expectation) and report.html."""
    from harness.run import runner

    d = run_folder(run_dir)
    verdict = runner.rerun_check(d, engine.value)
    print_verdict(verdict, d)
    if exit_code(verdict):
        raise typer.Exit(exit_code(verdict))


@app.command("report")
@guarded
def report_cmd(run_dir: str = typer.Argument(..., help="A finished run folder (with verdict.json)."),
               out_file: str = typer.Option(None, "--out", help="Write here \\[default: RUN_DIR/report.html].")) -> None:
    """(Re)make a run's self-contained report.html from its folder alone."""
    from harness.report import write_report

    started = time.perf_counter()
    path = write_report(run_folder(run_dir), check_out(Path(out_file), "--out", file=True) if out_file else None)
    out.print(f"{path} ({path.stat().st_size / 1e3:,.0f} kB, {time.perf_counter() - started:.1f}s)", highlight=False)


@app.command("repro")
@guarded
def repro_cmd(run_dir: str = typer.Argument(..., help="A finished run folder (with verdict.json)."),
              out_dir: str = typer.Option(None, "--out", help="Write here: a new or empty folder, or an earlier repro's "
                                                              "\\[default: RUN_DIR/repro]."),
              example: str = typer.Option(None, "--example", metavar="CHECK[:N]",
                                          help="The anomaly to tell: CHECK's Nth example in verdict.json (CHECK alone: "
                                               "its first placed in time) \\[default: the first check's first example "
                                               "the history places in time]."),
              error: str = typer.Option(None, "--error", metavar="NAME",
                                        help="Tell the first transaction that ended with this client error "
                                             "(stats.errors_seen's name) instead, in a valid run too.")) -> None:
    """Gather what a client's or Kafka's maintainers ask for about a run's anomaly, from its folder alone:
    versions, API versions, configuration, the transactions with the wire proxy's events, client and broker
    log excerpts, the replay command and a smaller scenario's draft; REPORT.md to paste into an issue."""
    from harness.report import repro, repro_md
    from harness.report.loaded import read_verdict

    d = run_folder(run_dir)
    verdict = read_verdict(d)
    status = verdict.label
    if status == "valid" and error is None:
        out.print(f"{d}: nothing to report (valid); --error NAME tells a client error", highlight=False)
        return
    target = repro_md.check_out_folder(Path(out_dir) if out_dir else d / "repro", "--out")
    if status == "unknown":
        why = "; ".join(verdict.unknown_because) or "no reason recorded"
        out.print(f"{d}: the verdict is unknown ({escape(why)}); gathering what the folder holds", highlight=False)
    started = time.perf_counter()
    if example is not None and error is not None:
        raise ConfigError("--example and --error: give one (an anomaly of a check, or a client error)")
    r = repro.gather(d, verdict, example, error)
    written = repro_md.write(r, target)
    a = r.anomaly
    what = (f"the first of {a.count} transactions that ended with {a.check}" if a is not None and a.error else
            f"{a.check} example {a.number} of {a.count} found" if a is not None else f"verdict {status}, no example")
    logs = sum(len(lg.clipped.lines) for lg in r.logs)
    out.print(f"{target / repro_md.REPORT_MD}: {what}; window t={r.window[0]:.1f}..{r.window[1]:.1f} s: "
              f"{len(r.txns)} transactions, {len(r.wire)} wire events, {logs:,} log lines from {len(r.logs)} logs; "
              f"{len(written)} files ({time.perf_counter() - started:.1f}s)", highlight=False)


@app.command("index")
@guarded
def index_cmd(results: str = typer.Argument(None, metavar="DIR",
                                            help="A folder of run folders \\[default: the results folder].")) -> None:
    """(Re)make index.html in a results folder: every run in it, newest first, with its verdict and a link to its report."""
    from harness.base.paths import results_dir
    from harness.report.index_page import write_index

    started = time.perf_counter()
    path = write_index(Path(results) if results else results_dir())
    out.print(f"{path} ({time.perf_counter() - started:.1f}s)", highlight=False)


@app.command("compare")
@guarded
def compare_cmd(run_a: str = typer.Argument(..., help="A finished run folder."),
                run_b: str = typer.Argument(..., help="Another finished run folder."),
                show_all: bool = typer.Option(False, "--all", help="Also the rows that are the same."),
                as_json: bool = typer.Option(False, "--json", help="Machine-readable output.")) -> None:
    """What differs between two runs: verdict, checks, throughput, latency, outcomes, versions."""
    from rich.table import Table

    from harness.report.compare import as_json as to_json
    from harness.report.compare import compare

    a, b = run_folder(run_a), run_folder(run_b)
    rows = compare(a, b)
    if as_json:
        print_json(to_json(a, b, rows), default=str)
        return
    shown = [r for r in rows if show_all or r.differs]
    if not shown:
        out.print(f"no difference in {len(rows)} compared rows", highlight=False)
        return
    table = Table("", "", "A", "B", "change", box=None, highlight=False)
    for col in table.columns:
        col.overflow = "fold"
    out.print(f"A: {a}\nB: {b}", highlight=False)
    for r in shown:
        mark = "[bold red]" if r.section in ("verdict", "checks") and r.differs else ""
        table.add_row(r.section, f"{mark}{escape(r.key)}", escape(str(r.a)), escape(str(r.b)), escape(r.change))
    out.print(table)
    n = sum(r.differs for r in rows)
    out.print(f"{n} of {len(rows)} rows differ (figures are single runs: small changes in throughput and latency are noise)",
              highlight=False)
