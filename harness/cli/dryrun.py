"""``eos-chaos run NAME --dry-run``: the fault schedule a scenario and seed would play, started nothing."""

from __future__ import annotations

from typing import Any

from chaos import schedule
from harness.cli.console import err, out, print_json
from harness.phases import table
from harness.run.scenario import Scenario

#: The plan's zero, in the words the report uses for it (harness/report/clock.py SCHEDULE_ZERO).
PLAN_ZERO = ("t=0 is when every workload is ready (its first finished transaction, copy or micro-batch) "
             "and the nemesis begins its schedule (the report's zero too)")


def plan(sc: Scenario, seed: int) -> dict[str, Any]:
    """The planned run as JSON-ready data: scenario name, seed, duration and the schedule."""
    return {"scenario": sc.name, "seed": seed, "duration": sc.duration,
            "schedule": schedule.as_json(schedule.plan(sc, seed))}


def print_plan(sc: Scenario, seed: int, as_json: bool) -> None:
    """Print the plan as JSON, or one line per fault: when, what (and on which workload), how long;
    first the preflight a run does (``table.preflight``: a missing program is exit 2 here too)."""
    table.preflight(sc)
    planned = plan(sc, seed)
    if as_json:
        print_json(planned)
        return
    out.print(f"{sc.name}, seed {seed}, {sc.duration:.0f}s:", highlight=False)
    for f in planned["schedule"]:
        extra = f" ({f['workload']})" if f.get("workload") else ""
        out.print(f"  {f['at']:7.1f}s  {f['kind']}{extra} for {f['duration']:.1f}s", highlight=False)
    out.file.flush()
    # on stderr: stdout stays the plan alone, one fault a line
    err.print(f"{PLAN_ZERO}; the cluster's start-up comes before it.", highlight=False, soft_wrap=True)
