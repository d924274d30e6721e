"""Which directed links a network fault touches: pure functions of the topology, a fault kind, the
node(s) it was resolved to at fault time, and the listeners it is aimed at.

Kinds: ``isolate-node`` (every link into and out of the node, clients' too),
``majority-minority`` (the node alone on one side, the other nodes together; clients keep every
node), ``directed`` (one link A -> B), ``clients-from-node`` (the clients' link to the node),
``bridge`` (the node talks to everyone, the other two not to each other).
"""

from __future__ import annotations

from collections.abc import Iterable

from clusters.kafka.topology import CLIENT_SOURCE, Link, Listener, Topology

KINDS = ("isolate-node", "majority-minority", "directed", "clients-from-node", "bridge")
#: What a fault aimed at "all" touches; "client" means the clients' links only.
LISTENER_SETS = {
    "internal": {Listener.INTERNAL},
    "controller": {Listener.CONTROLLER},
    "client": {Listener.CLIENT},
    "all": {Listener.INTERNAL, Listener.CONTROLLER, Listener.CLIENT},
}


def links(topo: Topology, kind: str, node: int, listeners: str = "all", peer: int | None = None) -> list[Link]:
    """The links ``kind`` cuts (or slows) when resolved to ``node`` (and ``peer`` for ``directed``)."""
    if kind not in KINDS:
        raise ValueError(f"unknown partition kind {kind!r}; allowed: {', '.join(KINDS)}")
    if listeners not in LISTENER_SETS:
        raise ValueError(f"unknown listener set {listeners!r}; allowed: {', '.join(LISTENER_SETS)}")
    if node not in topo.node_ids:
        raise ValueError(f"node {node} is not one of {topo.node_ids}")
    allowed = LISTENER_SETS[listeners]
    others = [n for n in topo.node_ids if n != node]

    def between(a: Iterable[int], b: Iterable[int]) -> set[tuple[int, int]]:
        return {(x, y) for x in a for y in b} | {(y, x) for x in a for y in b}

    if kind == "isolate-node":
        pairs = between([node], others) | {(CLIENT_SOURCE, node)}
    elif kind == "majority-minority":
        pairs = between([node], others)
    elif kind == "directed":
        if peer is None or peer == node or peer not in topo.node_ids:
            raise ValueError(f"a directed cut needs a peer node other than {node}, one of {topo.node_ids}")
        pairs = {(node, peer)}
    elif kind == "clients-from-node":
        pairs = {(CLIENT_SOURCE, node)}
    else:  # bridge: node keeps everyone; the others lose each other
        pairs = between(others[:1], others[1:]) if len(others) >= 2 else set()
    return [lk for lk in topo.links if (lk.src, lk.dst) in pairs and lk.listener in allowed]
