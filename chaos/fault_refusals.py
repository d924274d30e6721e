"""Which of a scenario's faults a cluster cannot carry (``clusters.backends.capabilities``), each
refusal naming the fault, the node, why, and where the inventory says so: checked before anything
starts, so a run never finds out mid-way that a node cannot be started again."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from chaos import partitions
from clusters.backends.capabilities import Capabilities
from clusters.kafka.topology import CLIENT_SOURCE, Topology

#: The broker actions each node fault needs (a restart stops a running node first, then starts it;
#: every undo reads the node's status).
NEEDS: dict[str, tuple[str, ...]] = {
    "kill": ("kill", "start", "status"),
    "kill-leader": ("kill", "start", "status"),
    "stop": ("stop", "start", "status"),
    "pause": ("pause", "resume", "status"),
    "restart": ("stop", "start", "status"),
    "rolling-restart": ("stop", "start", "status"),
    # it kills the coordinator of its transactional.id, whichever node that is, and starts it again
    "retry-rotation-after-failover": ("kill", "start", "status"),
}


def _nodes(target: Any, topo: Topology) -> tuple[int, ...]:
    """The nodes a target may resolve to: its id, or any node for a role."""
    return (target,) if isinstance(target, int) else topo.node_ids


def _node_refusals(fault: Any, caps: Capabilities, topo: Topology) -> list[str]:
    out = []
    target = getattr(fault, "target", "all")
    nodes = topo.node_ids if fault.kind == "rolling-restart" else _nodes(target, topo)
    for n in nodes:
        missing = [a for a in NEEDS[fault.kind] if a not in caps.actions(n)]
        if missing:
            node = caps.nodes.get(n)
            where = node.where if node else f"node {n}"
            why = node.why_not.get(missing[0]) if node else None
            out.append(f"{fault.kind} (target {target}): node {n} cannot {', '.join(missing)} its broker: "
                       + (why or f"its inventory entry gives no preset that does and no `commands.{missing[0]}`")
                       + f" ({where})")
    return out


def inter_broker_refusal(fault: Any, caps: Capabilities, topo: Topology) -> str | None:
    """Why ``fault`` cannot act on the links between brokers it may touch (None: it touches none,
    or the cluster can fault them). The one place that decides it, so a network layer that can
    (tc/iptables on the nodes) switches it by setting ``caps.inter_broker_why`` to None."""
    if caps.inter_broker_why is None or not hasattr(fault, "partition"):
        return None
    target = getattr(fault, "target", "random")
    peers = _nodes(fault.peer, topo) if getattr(fault, "peer", None) is not None else (None,)
    for n in topo.node_ids if target == "all" else _nodes(target, topo):
        for p in peers:
            if p == n or (fault.partition == "directed" and p is None):
                continue
            if any(lk.src != CLIENT_SOURCE for lk in partitions.links(topo, fault.partition, n, fault.listeners, p)):
                return (f"{fault.kind} (partition {fault.partition}, listeners {fault.listeners}) acts on links between "
                        f"brokers: {caps.inter_broker_why}; give `listeners: client` to fault only the clients' links")
    return None


def refusals(faults: Iterable[Any], caps: Capabilities, topo: Topology) -> list[str]:
    """Every reason a fault of ``faults`` cannot run on the cluster ``caps`` describes (empty: all can)."""
    out: list[str] = []
    for f in faults:
        if f.kind in NEEDS:
            out += _node_refusals(f, caps, topo)
        if getattr(f, "target", None) == "controller" and caps.controller_why:
            out.append(f"{f.kind} (target controller): {caps.controller_why}")
        why = inter_broker_refusal(f, caps, topo)
        if why:
            out.append(why)
    return list(dict.fromkeys(out))


def external_refusals(faults: list[Any], inventory: Path, allow_non_disposable: bool) -> list[str]:
    """Why ``faults`` cannot run on the external cluster of ``inventory``: not disposable (when any
    fault acts on it), or a fault its nodes cannot carry. Reads the inventory only."""
    from chaos.broker_links import broker_link_refusals
    from clusters.backends.external import external_cluster as cluster
    from clusters.backends.external import inventory as inventory_file

    inv = inventory_file.load(inventory)
    topo = Topology(node_ids=tuple(n.id for n in inv.resolved()))
    out = []
    why = cluster.disposable_problem(inv, allow_non_disposable)
    if faults and why:
        out.append(why)
    return out + refusals(faults, cluster.capabilities(inv), topo) + broker_link_refusals(faults, inv)
