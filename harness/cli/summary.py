"""The few lines a command prints at the end of a run or a check: the verdict, what was found,
and where the run folder is. ``run``, ``check`` and ``smoke`` all print through ``print_outcome``."""

from __future__ import annotations

import json
from collections.abc import Iterable

from rich.markup import escape

from harness.cli import exits
from harness.cli.console import out
from harness.history.model import is_history_error
from harness.rundir.journal import mostly_nothing
from harness.rundir.run_verdict import RunFacts, RunVerdict

#: How a verdict's ``valid`` reads, and its colour.
VALID, INVALID, UNKNOWN = "[bold green]VALID[/]", "[bold red]INVALID[/]", "[bold yellow]UNKNOWN[/]"
#: The smoke run's words for the same two outcomes.
PASS, FAIL = "[bold green]PASS[/]", "[bold red]FAIL[/]"
#: How much of a check's examples one line shows.
EXAMPLES_SHOWN, EXAMPLE_CHARS = 2, 300


def print_outcome(label: str, headline: str, details: Iterable[str], where: str) -> None:
    """Print ``label headline``, one indented line per detail (rich markup), then ``where``."""
    out.print(f"{label} {escape(headline)}", highlight=False)
    for line in details:
        out.print(f"  {line}", highlight=False)
    out.print(escape(where), highlight=False)


def verdict_label(valid: object) -> str:
    """VALID, INVALID or UNKNOWN (a check crashed, or nothing to judge), coloured."""
    return VALID if valid is True else (UNKNOWN if valid == "unknown" else INVALID)


def verdict_details(verdict: RunVerdict) -> list[str]:
    """The findings of ``verdict``: each check that found something or crashed, faults not
    applied, a failed heal, a truncated history, and whether the run is as its scenario expects."""
    lines = []
    for name, c in verdict.checks.items():
        if c.count:
            examples = json.dumps(c.examples[:EXAMPLES_SHOWN], default=str)[:EXAMPLE_CHARS]
            lines.append(escape(f"{name}: {c.count}  e.g. {examples}"))
        elif c.count is None:  # a history error says so itself; anything else is the check's crash
            error = str(c.error)
            lines.append(escape(f"{name}: {error}" if is_history_error(error) else f"{name}: check crashed: {error}"))
    for why in verdict.unknown_because:
        lines.append(f"[yellow]not judged as a whole:[/] {escape(why)}")
    run = verdict.run or RunFacts()  # verdict.json format 2: the run's facts (harness/run/verdict_file.py)
    for problem in run.nemesis_errors:
        lines.append(f"[yellow]fault not applied:[/] {escape(str(problem))}")
    hit = run.faults_hit
    if hit is not None and mostly_nothing(hit):
        lines.append(f"[yellow]most faults hit nothing:[/] {hit['hit_nothing']} of {hit['faults']} found nothing in flight "
                     "on their target (the report's fault table)")
    if run.healed is False:
        lines.append(f"[red]not healed:[/] {escape(str(run.heal_problems))}")
    if verdict.note:
        lines.append(escape(f"note: {verdict.note}"))
    if verdict.history.get("truncated"):
        lines.append(escape(f"note: {verdict.history['note']}: {verdict.history['truncated']}"))
    if verdict.as_expected is not None:
        lines.append(f"as the scenario expects: {verdict.as_expected}")
    return lines


def print_verdict(verdict: RunVerdict, run_dir: object) -> None:
    """The summary of a run's or a check's verdict."""
    s = verdict.figures
    headline = (f"txn ok={s.txn.ok} fail={s.txn.fail} info={s.txn.info}, "
                f"committed values {s.committed_values}, fenced {s.fenced}")
    print_outcome(verdict_label(verdict.valid), headline, verdict_details(verdict), f"run folder: {run_dir}")


#: A verdict's exit code: 0 valid, 1 invalid (a finding), 3 unknown (a check crashed, or there was
#: nothing to judge) -- never 1, which would pass an unknown off as a finding, nor 2 (bad input).
EXIT_CODES = {True: exits.OK, False: exits.FINDING, "unknown": exits.UNKNOWN}


def exit_code(verdict: RunVerdict) -> int:
    """The exit code ``verdict`` stands for (``EXIT_CODES``)."""
    return EXIT_CODES.get(verdict.valid, exits.UNKNOWN)
