"""``eos-chaos run NAME --dry-run``: the fault schedule a scenario and seed would play, started nothing."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from chaos import schedule
from harness.base.errors import ConfigError
from harness.cli.console import err, out, print_json
from harness.phases import table
from harness.run.scenario import Scenario

#: The plan's zero, in the words the report uses for it (harness/report/clock.py SCHEDULE_ZERO).
PLAN_ZERO = ("t=0 is when every workload is ready (its first finished transaction, copy or micro-batch) "
             "and the nemesis begins its schedule (the report's zero too)")


def plan(sc: Scenario, seed: int) -> dict[str, Any]:
    """The planned run as JSON-ready data: scenario name, seed, duration and the schedule."""
    return {"scenario": sc.name, "seed": seed, "duration": sc.duration,
            **({"end_after_faults_s": sc.end_after_faults_s} if sc.end_after_faults_s is not None else {}),
            "schedule": schedule.as_json(schedule.plan(sc, seed))}


def node_commands(sc: Scenario, seed: int, inventory: Path) -> list[dict[str, Any]]:
    """Every command a run on the external cluster of ``inventory`` would run on its nodes, in order:
    the checks before any fault (on every node), then each planned fault's actions on each node its
    target may resolve to. ConfigError (exit 2) first when the cluster cannot carry a fault."""
    from chaos.broker_link_plan import link_commands
    from chaos.fault_refusals import NEEDS, external_refusals
    from clusters.backends.external import inventory as inventory_file
    from clusters.backends.external import node_heal
    from clusters.backends.external.heal_journal import folder_for

    faults = schedule.plan(sc, seed)
    refused = external_refusals(faults, inventory, allow_non_disposable=_allowed())
    if refused:
        raise ConfigError(f"scenario {sc.name} cannot run on the cluster of {inventory}:\n  " + "\n  ".join(refused))
    inv = inventory_file.load(inventory)
    known_hosts = folder_for(inv).parent / "known_hosts"
    brokers = node_heal.brokers_of(inv, known_hosts)
    out: list[dict[str, Any]] = []
    for n, b in brokers.items():
        out.append({"at": None, "fault": "check", "node": n, "action": "reach", "argv": b.on_node.argv("true")})
        out.append({"at": None, "fault": "check", "node": n, "action": "status", "argv": b.argv("status")})
    for f in faults:
        if f.kind not in NEEDS:
            continue
        target = getattr(f, "target", "random")
        nodes = [target] if isinstance(target, int) else list(brokers)
        out += [{"at": f.at, "fault": f.kind, "node": n, "action": a, "argv": brokers[n].argv(a)}  # type: ignore[arg-type]
                for n in nodes for a in NEEDS[f.kind]]
    # in time order, each link's command beside its fault's other commands (a stable sort keeps the rest's order)
    return sorted(out + link_commands(faults, inv, known_hosts),
                  key=lambda c: -1.0 if c["at"] is None else float(c["at"]))


def _allowed() -> bool:
    from clusters.backends.backends import external_target

    target = external_target()
    return target is not None and target.allow_non_disposable


def print_plan(sc: Scenario, seed: int, as_json: bool, inventory: Path | None = None) -> None:
    """Print the plan as JSON, or one line per fault: when, what (and on which workload), how long;
    first the preflight a run does (``table.preflight``: a missing program is exit 2 here too). With
    an ``inventory``: then every command each fault would run on each node (none runs)."""
    table.preflight(sc)
    planned = plan(sc, seed)
    commands = node_commands(sc, seed, inventory) if inventory is not None else None
    if as_json:
        print_json({**planned, "node_commands": commands} if commands is not None else planned)
        return
    sooner = f" (or {sc.end_after_faults_s:g}s after its faults ended, if sooner)" if sc.end_after_faults_s is not None else ""
    out.print(f"{sc.name}, seed {seed}, {sc.duration:.0f}s{sooner}:", highlight=False)
    for f in planned["schedule"]:
        extra = f" ({f['workload']})" if f.get("workload") else ""
        out.print(f"  {f['at']:7.1f}s  {f['kind']}{extra} for {f['duration']:.1f}s", highlight=False)
    if commands is not None:
        out.print("commands on the nodes (none runs in a dry run; a role's fault may act on any of them):", highlight=False)
        for c in commands:
            when = "before" if c["at"] is None else f"{c['at']:7.1f}s"
            out.print(f"  {when}  {c['fault']} node {c['node']} {c['action']}: {shlex.join(c['argv'])}",
                      highlight=False, soft_wrap=True)
    out.file.flush()
    # on stderr: stdout stays the plan alone, one fault a line
    err.print(f"{PLAN_ZERO}; the cluster's start-up comes before it.", highlight=False, soft_wrap=True)
