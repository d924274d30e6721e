"""What the two backends that format and start a cluster of their own share (``local``: processes,
``compose``: containers): the Kafka cluster id they format it with, the line a broker logs once it is
up, the clusters this process owns (stopped at interpreter exit), the health of the KRaft cluster
read from its nodes, and how a start treats the record a crashed run left."""

from __future__ import annotations

import base64
import logging
import threading
import uuid
from pathlib import Path
from typing import Any

from clusters.backends import procs, state
from clusters.backends.artifacts import Artifacts
from clusters.backends.protocol import HEALTHY_TIMEOUT_S, NodeState, Owned
from clusters.kafka import feature_levels, health
from clusters.kafka.topology import Topology
from harness.base.errors import EnvironmentProblem

log = logging.getLogger(__name__)

#: Printed by KafkaRaftServer once broker and controller are up (KafkaBroker.STARTED_MESSAGE).
STARTED_MESSAGE = "Kafka Server started"

def recorded_artifacts(rec: state.ClusterRecord) -> Artifacts:
    """What the cluster of ``rec`` runs, as its record names it (``attach``)."""
    return Artifacts(rec.kafka_version, Path(rec.kafka_libs), Path(rec.toxiproxy_bin), Path(rec.java),
                     Path(rec.kwire_bin) if rec.kwire_bin else None)


def new_cluster_id() -> str:
    """A Kafka cluster id: a random UUID, base64url without padding, not starting with '-'."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cid.startswith("-"):
            return cid


class BuiltCluster(Owned):
    """A 3-node KRaft cluster this harness formats and starts from Kafka's artifacts; a context
    manager that always cleans up. A backend gives its start, stop, nodes and quorum-state files."""

    backend: str
    topology: Topology
    #: the admin client on the DIRECT listeners (made on first use, dropped at stop)
    _admin: Any = None

    def __init__(self, artifacts: Artifacts, run_dir: Path, detached: bool, transaction_version: int | None) -> None:
        self.artifacts = artifacts
        self.transaction_version = transaction_version
        # absolute: the processes run with the run folder as their working directory (a relative path,
        # ``--out results/x``, handed to them would point inside it), and bind mounts need it so
        self.run_dir = run_dir.absolute()
        self.detached = detached
        self.cluster_id = new_cluster_id()
        self._lock = threading.RLock()
        self._started = False

    @classmethod
    def attach(cls, rec: state.ClusterRecord) -> BuiltCluster:
        """A handle on a cluster another process started (for ``cluster down`` / ``status``)."""
        raise NotImplementedError

    def node_state(self, node: int) -> NodeState:
        raise NotImplementedError

    @property
    def direct_bootstrap(self) -> str:
        raise NotImplementedError

    def quorum_views(self) -> list[health.QuorumView]:
        """Each running node's view of the raft leader, from its quorum-state file."""
        raise NotImplementedError

    def feature_levels(self) -> dict[str, int]:
        return feature_levels.intended_levels(self.artifacts.kafka_version, self.transaction_version)

    def active_controller(self) -> int | None:
        """The raft leader a majority of running voters agree on."""
        return health.raft_leader(self.quorum_views(), len(self.topology.node_ids))

    def health(self) -> health.Health:
        if self._admin is None:
            self._admin = health.admin_client(self.direct_bootstrap)
        return health.probe(self._admin, list(self.topology.node_ids), self.quorum_views())

    def wait_healthy(self, timeout: float = HEALTHY_TIMEOUT_S) -> None:
        health.wait_healthy(self, timeout)

    def _reclaim_crashed_run(self, rec: state.ClusterRecord, running: bool, where: str, owner_where: str,
                             down: str, found: str) -> None:
        """Stop the cluster of ``rec`` (what a crashed run left); refuse to touch one that is legitimately
        up (``running``, and detached or its owner alive). The wording: ``where`` it is up, ``down``
        the command that takes it down, ``found`` what the log line says is reclaimed."""
        if running and rec.owner_pid is None:
            raise EnvironmentProblem(f"a {self.backend} cluster is already up ({where}, started by `eos-chaos cluster "
                                     f"up`). Take it down first: {down}")
        if running and procs.alive(rec.owner_pid):
            raise EnvironmentProblem(f"a {self.backend} cluster owned by running process {rec.owner_pid} is up "
                                     f"({owner_where}); one cluster at a time on this machine. Wait for it, or stop "
                                     "that process.")
        log.info(f"reclaiming leftovers of a crashed run {found}")
        gone = self.attach(rec).stop()
        if gone:
            log.info(f"reclaimed: {', '.join(gone.lines())}")
