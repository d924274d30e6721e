"""The ``Cluster`` protocol every backend implements, and the data it reports."""

from __future__ import annotations

import atexit
import enum
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol, Self, runtime_checkable

from clusters.backends.reclaim import Owner, Reclaimed
from clusters.kafka.topology import Topology
from clusters.toxiproxy.toxiproxy_api import LinkControl, ProxySpec
from clusters.wire.wire_api import WireProxy

#: A 3-node KRaft cluster on two cores comes up in ~10-20 s; allow for a machine under load.
HEALTHY_TIMEOUT_S = 120.0
#: One JVM from exec to "Kafka Server started" on a busy 2-core machine.
NODE_START_TIMEOUT_S = 90.0


class NodeState(str, enum.Enum):
    UP = "up"
    DOWN = "down"
    PAUSED = "paused"


@dataclass
class NodeStatus:
    id: int
    state: NodeState
    pid: int | None = None


@dataclass
class ClusterStatus:
    """What ``eos-chaos cluster status --json`` prints."""

    backend: str
    kafka_version: str
    bootstrap: str
    direct_bootstrap: str
    toxiproxy: str
    nodes: list[NodeStatus]
    run_dir: str
    cluster_id: str
    active_controller: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    #: who will stop it (filled by ``backends.status``, which reads the record)
    owner: Owner | None = None
    #: what a start or ``cluster down`` would reclaim now: a dead owner's cluster, workloads of
    #: killed runs, faults left on its links, other dead runs' leftovers
    would_reclaim: Reclaimed = field(default_factory=Reclaimed)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["nodes"] = [{"id": n.id, "state": n.state.value, "pid": n.pid} for n in self.nodes]
        d["owner"] = self.owner.to_json() if self.owner is not None else None
        d["would_reclaim"] = self.would_reclaim.to_json()
        return d


# Clusters this process owns, of every backend; stopped at interpreter exit if a caller forgot (or
# was interrupted).
_OWNED: set[Owned] = set()


@atexit.register
def _stop_owned() -> None:
    for cluster in list(_OWNED):
        cluster.stop()


class Owned:
    """Who owns a cluster (and will stop it): the process that started it, or 0 when detached
    (``cluster up``). A process that only attached keeps the recorded owner: a run restarting a
    node must not become its owner, because it exits first and the cluster would look orphaned.
    Every backend's cluster: a context manager that always stops it, and stopped at interpreter exit
    while this process owns it (``_owned``)."""

    detached: bool
    #: set by ``attach``: the owner the starting process recorded
    _attached_owner: int | None = None

    @property
    def _owner(self) -> int:
        if self._attached_owner is not None:
            return self._attached_owner
        return 0 if self.detached else os.getpid()

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> Reclaimed:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _owned(self, owned: bool) -> None:
        """Whether interpreter exit stops this cluster: while it starts and runs, unless it is
        detached (``cluster up``: it outlives this process on purpose) or stopped."""
        if owned:
            _OWNED.add(self)
        else:
            _OWNED.discard(self)


@runtime_checkable
class Cluster(Protocol):
    """A running 3-node KRaft cluster whose every link goes through Toxiproxy."""

    backend: str
    topology: Topology
    run_dir: Path
    cluster_id: str
    #: the transaction.version asked for at format time; None: the Kafka release's default
    transaction_version: int | None

    def __enter__(self) -> Cluster: ...

    def __exit__(self, *exc: object) -> None: ...

    def start(self) -> None:
        """Bring everything up (reclaiming leftovers of a crashed run first) and wait until healthy."""

    def stop(self) -> Reclaimed:
        """Take everything down; nothing is left running. Safe to call twice or after a failed start.
        Returns what was running (nothing the second time)."""

    def keep_logs(self) -> None:
        """The brokers' and Toxiproxy's logs so far into the cluster's run folder, where a report of a
        run on it links them (local: written there all along; compose: copied out of the containers)."""

    def leftovers(self) -> Reclaimed:
        """Everything of this cluster that exists now, as ``stop`` would name it: processes (its
        runs' workloads on the host included), containers, networks, volumes."""

    def wait_healthy(self, timeout: float = HEALTHY_TIMEOUT_S) -> None:
        """3 brokers registered, a raft leader, no under-replicated or leaderless partitions."""

    def kill(self, node: int) -> None:
        """SIGKILL the node."""

    def stop_node(self, node: int) -> None:
        """SIGTERM the node and wait for it to exit."""

    def pause(self, node: int) -> None:
        """SIGSTOP the node."""

    def resume(self, node: int) -> None:
        """SIGCONT the node."""

    def restart(self, node: int) -> None:
        """Start a node that is down (or stop it first), waiting until it reports started."""

    def node_state(self, node: int) -> NodeState: ...

    def active_controller(self) -> int | None:
        """The KRaft raft leader agreed by a majority of the nodes' quorum-state, or None."""
        ...

    def status(self) -> ClusterStatus: ...

    def feature_levels(self) -> dict[str, int]:
        """The finalized feature levels the cluster was formatted at (``transaction.version`` as
        asked, or the release's default): what a heal restores after a fault changed them."""
        ...

    @property
    def toxiproxy(self) -> LinkControl:
        """What faults every link by name: the Toxiproxy that carries every link on the built-in
        backends; on an external cluster, Toxiproxy for the clients' links and tc/iptables on the
        nodes for the links between brokers (clusters/backends/external/links.py)."""
        ...

    def proxy_specs(self) -> list[ProxySpec]:
        """Every directed link's proxy as the cluster created it (what a heal recreates)."""
        ...

    def restart_toxiproxy(self) -> None:
        """Kill the Toxiproxy server and start it again with every proxy, healthy: the last step of a
        heal, for a server whose API hangs."""

    @property
    def wire(self) -> WireProxy:
        """The API of the wire proxy on the clients' links (request-aware faults)."""
        ...

    @property
    def wire_events(self) -> Path:
        """The wire proxy's event log (JSON lines: every request a rule matched, and what became of it)."""
        ...

    def restart_wire(self) -> None:
        """Kill the wire proxy and start it again without rules: the last step of its heal."""

    @property
    def bootstrap(self) -> str: ...

    @property
    def direct_bootstrap(self) -> str: ...

    def direct_address(self, node: int) -> str:
        """Node ``node``'s DIRECT listener as this host reaches it (``host:port``): a connection to
        one chosen broker that no fault touches (the epoch pump's, to a coordinator)."""
        ...
