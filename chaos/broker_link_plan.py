"""What a dry run on an external cluster prints for the faults on links between brokers: every
command each planned fault would run on the nodes (an iptables chain, a tc class, a Chaos Mesh
NetworkChaos) and, at its heal, the command that takes it back. They are made by the code a run
uses (``ExternalLinks``), on transports that keep each command instead of running it, with a heal
journal in a throwaway folder: so the dry run shows the scripts the run would send, not a summary
of them. A name the inventory gives for a peer stays a name: the script resolves it on the node.
"""

from __future__ import annotations

import io
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chaos import toxics
from chaos.broker_links import broker_links_of
from chaos.faults.base import FaultBase
from chaos.faults.network import Flap
from clusters.backends.external import node_heal
from clusters.backends.external.heal_journal import HealJournal
from clusters.backends.external.inventory import Inventory
from clusters.backends.external.lifecycle import DRY_RUN_TAG, Broker
from clusters.backends.external.links import ExternalLinks
from clusters.backends.external.transport import DryRun
from clusters.kafka.topology import Topology

#: the fault kinds that cut their links (the others add toxics: chaos/toxics.py)
CUTS = ("partition", "flap")


@dataclass(frozen=True)
class _Step:
    """A planned fault's apply (at its start) or undo (at its heal) on its links."""

    at: float
    undo: bool
    index: int  # the fault's place in the plan: its toxics' tag, and the order among equal times
    fault: FaultBase
    links: tuple[str, ...]


def link_commands(faults: Sequence[FaultBase], inv: Inventory, known_hosts: Path) -> list[dict[str, Any]]:
    """One entry per command, in time order: ``at`` (s), ``fault``, ``node``, ``action`` (``cut
    n1-to-n2-internal``, ``latency on ...``, ``heal ...``, ``undo latency on ...``) and ``argv``.
    A fault whose target is a role or random acts on the links of every node it may resolve to. A
    flap repeats its cut and heal every ``period`` for its ``duration``: printed once."""
    topo = Topology(node_ids=tuple(n.id for n in inv.resolved()))
    steps: list[_Step] = []
    for i, f in enumerate(faults):
        names = tuple(lk.name for lk in broker_links_of(f, topo))
        if names:
            heal_at = f.at + (f.period if isinstance(f, Flap) else f.duration)
            steps += [_Step(f.at, False, i, f, names), _Step(heal_at, True, i, f, names)]
    if not steps:
        return []
    brokers = node_heal.brokers_of(inv, known_hosts, dry_run=True, printed=io.StringIO())
    out: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="eos-chaos-dry-run-") as folder:
        journal = HealJournal(Path(folder))
        journal.lock()
        try:
            links = ExternalLinks(brokers, journal, None, DRY_RUN_TAG)
            for s in sorted(steps, key=lambda s: (s.at, not s.undo, s.index)):  # a heal before a start at one time
                for link in s.links:
                    before = _kept(brokers)
                    _act(links, s, link)
                    out += [{"at": s.at, "fault": s.fault.kind, "node": node, "action": _action(s, link), "argv": argv}
                            for node, argv in _since(brokers, before)]
        finally:
            journal.unlock()
    return out


def _act(links: ExternalLinks, s: _Step, link: str) -> None:
    if s.fault.kind in CUTS:
        links.set_enabled(link, s.undo)
        return
    for spec in toxics.specs(s.fault.kind, getattr(s.fault, "params", {}), tag=str(s.index)):
        if s.undo:
            links.remove_toxic(link, spec.name)
        else:
            links.add_toxic(link, spec.type, spec.attributes, stream=spec.stream, name=spec.name)


def _action(s: _Step, link: str) -> str:
    if s.fault.kind in CUTS:
        return f"{'heal' if s.undo else 'cut'} {link}"
    return f"{'undo ' if s.undo else ''}{s.fault.kind} on {link}"


def _transports(b: Broker) -> tuple[DryRun, DryRun]:
    assert isinstance(b.on_node, DryRun) and isinstance(b.on_control, DryRun)  # brokers_of(dry_run=True)
    return b.on_node, b.on_control


def _kept(brokers: dict[int, Broker]) -> dict[int, tuple[int, int]]:
    """How many commands each node's transports were given so far."""
    out = {}
    for n, b in brokers.items():
        on_node, on_control = _transports(b)
        out[n] = (len(on_node.seen), len(on_control.seen))
    return out


def _since(brokers: dict[int, Broker], before: dict[int, tuple[int, int]]) -> list[tuple[int, list[str]]]:
    """Each command a node's transports were given since ``before``, as (node, argv)."""
    out = []
    for n, b in brokers.items():
        on_node, on_control = _transports(b)
        out += [(n, list(argv)) for argv in on_node.seen[before[n][0]:] + on_control.seen[before[n][1]:]]
    return out
