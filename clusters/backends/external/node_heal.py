"""``eos-chaos cluster heal --inventory FILE``: put an external cluster back as it was after a run
that could not heal it (SIGKILL of the runner): replay its heal journal, newest change first, then
a sweep that does not trust the journal (every ``EOSC-*`` iptables chain and ``eec1:`` root qdisc
removed from the nodes whose inventory allows net, a paused broker resumed, a down one started)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from clusters.backends.external import transport
from clusters.backends.external.chaos_mesh import LABEL, uses_chaos_mesh
from clusters.backends.external.heal_journal import HealJournal, UndoStep, folder_for, held, replay, undo
from clusters.backends.external.inventory import Inventory
from clusters.backends.external.lifecycle import DRY_RUN_TAG, Broker
from clusters.backends.external.links import sweep_mesh, sweep_net
from clusters.backends.protocol import NodeState
from harness.base.errors import HarnessError


@dataclass
class HealReport:
    """What a heal did, node by node, and what it could not put back (empty: the cluster is whole)."""

    did: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)
    kept: Path | None = None  # the healed journal, kept for audit


def brokers_of(inv: Inventory, known_hosts: Path, dry_run: bool = False, tag: str = DRY_RUN_TAG,
               printed: TextIO | None = None) -> dict[int, Broker]:
    """Each node's broker, driven through its transports (printing instead of running, with ``dry_run``,
    to ``printed`` or stdout; each ``DryRun`` keeps what it was given in ``seen``); ``tag``: the
    run's, in the names of the Chaos Mesh resources it applies."""
    out = {}
    for n in inv.resolved():
        on_node, on_control = transport.for_node(n, known_hosts), transport.control_for(n)
        if dry_run:
            stream = printed or sys.stdout
            out[n.id] = Broker(n, transport.DryRun(on_node, stream, answer=lambda _: "up"),
                               transport.DryRun(on_control, stream, answer=lambda _: "up"), tag)
        else:
            out[n.id] = Broker(n, on_node, on_control, tag)
    return out


def sweep(brokers: dict[int, Broker]) -> HealReport:
    """Every broker resumed if paused and started if down, whatever the journal says."""
    r = HealReport()
    for b in brokers.values():
        try:
            state = b.state()
            if state is NodeState.UP:
                r.did.append(f"{b.node.where}: up")
                continue
            step = UndoStep(action="resume" if state is NodeState.PAUSED else "start")
            r.did.append(f"{b.node.where}: was {state.value}, {undo(step, b)}")
            if b.state() is not NodeState.UP:
                r.left.append(f"{b.node.where}: still {b.state().value}")
        except HarnessError as exc:
            msg = str(exc)
            r.left.append(msg if msg.startswith(b.node.where) else f"{b.node.where}: {msg}")
    return r


def heal(inv: Inventory, root: Path | None = None, brokers: dict[int, Broker] | None = None) -> HealReport:
    """Replay ``inv``'s journal and sweep its nodes (through ``brokers``, else the inventory's
    transports); JournalBusy (exit 2) while a live run holds it."""
    journal = HealJournal(folder_for(inv, root))
    brokers = brokers or brokers_of(inv, journal.folder.parent / "known_hosts")
    with held(journal):
        opened = journal.open_changes()
        r = HealReport(did=[f"node {a.node}: undo {a.what} (change {a.id}, {a.detail or 'no detail'})" for a in
                            reversed(opened)])
        # a line torn by a crash mid-write is an intent whose command never ran (the line is synced first)
        r.did += [f"journal line {line[:120]!r} cannot be read (torn by a crash mid-write); set aside"
                  for line in journal.torn]
        r.left += replay(journal, brokers)
        net_did, net_left = sweep_net(brokers)  # what the journal missed: a line torn, a change made by hand
        r.did += net_did or [f"{b.node.where}: no chain or qdisc of ours" for b in brokers.values() if b.node.net.allowed]
        r.left += net_left
        mesh_did, mesh_left = sweep_mesh(brokers)  # the same for Chaos Mesh's resources, by their label
        r.did += mesh_did
        r.left += mesh_left
        swept = sweep(brokers)
        r.did += swept.did
        r.left += swept.left
        if not r.left:
            r.kept = journal.retire()
    return r


def heal_dry_run(inv: Inventory, root: Path | None = None) -> HealReport:
    """What ``heal`` would run, printed node by node; nothing runs and the journal is not touched."""
    journal = HealJournal(folder_for(inv, root))
    brokers = brokers_of(inv, journal.folder.parent / "known_hosts", dry_run=True)
    r = HealReport()
    for a in reversed(journal.open_changes()):
        b = brokers.get(a.node)
        for step in a.undo:
            if b is None:
                r.left.append(f"node {a.node}: not in the inventory; change {a.id} ({a.what}) cannot be undone")
            elif step.action is not None:
                r.did.append(f"{b.node.where}: undo {a.what} (change {a.id}): {step.action} if needed")
                b.run("status")
                b.run(step.action)
            elif step.run is not None:
                r.did.append(f"{b.node.where}: undo {a.what} (change {a.id})")
                (b.on_control if step.on == "control" else b.on_node).run(step.run)
    for b in brokers.values():
        if b.node.net.allowed:
            r.did.append(f"{b.node.where}: remove every EOSC-* iptables chain and eec1: root qdisc")
        r.did.append(f"{b.node.where}: read its state, resume it if paused, start it if down")
        b.run("status")
    if any(uses_chaos_mesh(b.node) for b in brokers.values()):
        r.did.append("the inventory's Chaos Mesh namespaces: delete every PodChaos and NetworkChaos labelled "
                     + ", ".join(f"{k}={v}" for k, v in LABEL.items()))
    sweep_net(brokers)  # printed by the dry-run transports
    sweep_mesh(brokers)
    return r
