"""What faults a cluster can carry, as plain data: every broker action on every node and links
between brokers on the built-in backends; on an external cluster, what its inventory gives. The
check of a scenario's faults against it is ``chaos.fault_refusals.refusals`` (before anything starts)."""

from __future__ import annotations

from dataclasses import dataclass, field

#: Every broker action a node fault may need (clusters/backends/external/inventory.py ``Action``).
ALL_ACTIONS = frozenset({"kill", "stop", "pause", "resume", "start", "status"})


@dataclass(frozen=True)
class NodeCapabilities:
    """One node: the broker actions it can take, where its inventory describes it (file:line), and
    why its preset cannot take an action, where it says (the refusal quotes it)."""

    actions: frozenset[str] = ALL_ACTIONS
    where: str = ""
    why_not: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Capabilities:
    """What faults a cluster can carry. ``nodes`` empty: every node every action (a built-in backend)."""

    backend: str = "built-in"
    nodes: dict[int, NodeCapabilities] = field(default_factory=dict)
    #: the active controller can be read (every controller's quorum-state); else why not
    controller_why: str | None = None
    #: links between brokers can be faulted; else why not
    inter_broker_why: str | None = None

    def actions(self, node: int) -> frozenset[str]:
        """The actions ``node`` can take (all, on a cluster the harness started)."""
        n = self.nodes.get(node)
        return ALL_ACTIONS if n is None else n.actions


#: A cluster the harness started: it can carry every fault.
FULL = Capabilities()
