"""Which faults on links between brokers an external cluster's nodes cannot carry, and why: said
before the run (exit 2), naming the fault, the node and its inventory line. Such a link is faulted
on its source node with tc/iptables (clusters/backends/external/netfaults.py), so the node must
allow it (``net.allowed``), the fault must have a node form, and the inventory must say where the
source reaches the other broker. The clients' links go through Toxiproxy and the wire proxy as on
every backend: nothing to refuse there.
"""

from __future__ import annotations

from collections.abc import Sequence

from chaos import partitions
from chaos.faults.base import FaultBase
from clusters.backends.external.inventory import Inventory, ResolvedNode
from clusters.backends.external.links import peer_of
from clusters.backends.external.netfaults import NO_NODE_FORM
from clusters.kafka.topology import CLIENT_SOURCE, Link, Topology


def _nodes(target: object, ids: tuple[int, ...]) -> list[int]:
    """The nodes a target may resolve to: the node of an id, every node for a role, random or all."""
    return [target] if isinstance(target, int) and target in ids else list(ids)


def broker_links_of(fault: FaultBase, topo: Topology) -> list[Link]:
    """Every link between brokers ``fault`` may act on, whatever its target resolves to at fault time
    (a network fault; [] for any other kind, or one on the clients' links only)."""
    kind, listeners = getattr(fault, "partition", None), getattr(fault, "listeners", "client")
    if fault.category != "network" or kind is None or listeners == "client":
        return []
    target, peer = getattr(fault, "target", "random"), getattr(fault, "peer", None)
    out: list[Link] = []
    for n in _nodes(target, topo.node_ids):
        for p in _nodes(peer, topo.node_ids) if kind == "directed" else [None]:
            if p == n:
                continue
            out += [lk for lk in partitions.links(topo, str(kind), n, str(listeners), p)
                    if lk.src != CLIENT_SOURCE and lk not in out]
    return out


def _chaos_mesh_refusals(what: str, f: FaultBase, node: ResolvedNode, dsts: list[int], inv: Inventory,
                         where: str) -> list[str]:
    """A node whose links go through Chaos Mesh carries partitions only, to nodes that are pods."""
    if f.kind != "partition":
        return [f"{what}: node {node.id} cannot carry it on a link between brokers: its links go through Chaos Mesh "
                f"(net.chaos_mesh), which the harness drives for partitions only (NetworkChaos delay is not built) "
                f"({where})"]
    return [f"{what}: node {node.id} cannot cut its link to node {d}: a NetworkChaos selects the target's pod, and node "
            f"{d} has no kubectl control ({inv.line_of_node(d)})" for d in sorted(set(dsts))
            if inv.node(d).control.kubectl is None]


def broker_link_refusals(faults: Sequence[FaultBase], inv: Inventory) -> list[str]:
    """One line per fault and node that cannot carry it (empty: every fault can run), e.g.
    ``faults[3] (partition at 12s, listeners internal): node 2 cannot fault its links to other brokers:
    its inventory entry says net.allowed false (production VM, no root) (staging.yaml:14)``."""
    ids = tuple(n.id for n in inv.resolved())
    topo = Topology(node_ids=ids)
    out: list[str] = []
    for i, f in enumerate(faults):
        links = broker_links_of(f, topo)
        what = f"faults[{i}] ({f.kind} at {f.at:g}s, listeners {getattr(f, 'listeners', '?')})"
        for src in sorted({lk.src for lk in links}):
            node, where = inv.node(src), inv.line_of_node(src)
            if node.net.chaos_mesh:
                out += _chaos_mesh_refusals(what, f, node, [lk.dst for lk in links if lk.src == src], inv, where)
                continue
            if not node.net.allowed:
                why = node.net.why_not or "no why_not given"
                out.append(f"{what}: node {src} cannot fault its links to other brokers: its inventory entry says "
                           f"net.allowed false ({why}) ({where})")
                continue
            if f.kind in NO_NODE_FORM:
                out.append(f"{what}: node {src} cannot carry it on a link between brokers: {NO_NODE_FORM[f.kind]} "
                           f"(it runs on the clients' links: listeners client) ({where})")
                continue
            for lk in links:
                if lk.src == src and peer_of(node, inv.node(lk.dst), lk.listener.value.lower()) is None:
                    out.append(f"{what}: node {src} cannot fault {lk.name}: node {lk.dst} has no "
                               f"listeners.{lk.listener.value.lower()} and node {src}'s net.peers names none ({where})")
    return out
