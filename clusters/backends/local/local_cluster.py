"""``LocalCluster``: the local backend's cluster, composed of its files (``layout.NodeLayout``), its
broker processes (``nodes.BrokerProcesses``) and its Toxiproxy and wire proxy (``proxies.LocalProxies``),
with the ownership record (clusters/backends/state.py) that lets another process attach to it or
reclaim what a crashed run left.

Layout of a run folder::

    cluster.json            what was started (versions, addresses, pids)
    toxiproxy.log
    wire.log, wire-events.jsonl   the wire proxy's log and its event log (every matched request)
    nodes/n<id>/            server.properties, hosts, log4j2.properties, server.log, stdout.log, data/

``data/`` is removed at stop; configs and logs stay for the person reading the run.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from clusters.backends import procs, reclaim, state
from clusters.backends.artifacts import Artifacts
from clusters.backends.built_cluster import BuiltCluster, recorded_artifacts
from clusters.backends.local.layout import NodeLayout
from clusters.backends.local.nodes import BrokerProcesses
from clusters.backends.local.proxies import LocalProxies
from clusters.backends.protocol import ClusterStatus, NodeState, NodeStatus
from clusters.backends.reclaim import Reclaimed
from clusters.kafka import health
from clusters.kafka.topology import Listener, Topology
from clusters.toxiproxy.toxiproxy_api import ProxySpec, Toxiproxy
from clusters.wire.wire_api import WireProxy
from harness.base.errors import ClusterError
from harness.rundir.runfolder import write_json

BACKEND = "local"


def reclaim_orphans() -> Reclaimed:
    """Kill processes of ours whose owner died, or detached ones no cluster record claims.
    A run that is still going (its owner alive) is left alone. Returns what was killed."""
    return reclaim.kill_processes(reclaim.dead_runs_processes(BACKEND), "its run is over")


class LocalCluster(BuiltCluster):
    """A 3-node KRaft cluster of local processes; a context manager that always cleans up."""

    backend = BACKEND

    def __init__(
        self,
        artifacts: Artifacts,
        run_dir: Path,
        topology: Topology | None = None,
        overrides: Mapping[str, str] | None = None,
        detached: bool = False,
        transaction_version: int | None = None,
    ) -> None:
        super().__init__(artifacts, run_dir, detached, transaction_version)
        self.topology = topology or Topology()
        self.overrides = dict(overrides or {})
        self.layout = NodeLayout(artifacts, self.run_dir, self.topology, self.overrides)
        self.proxies = LocalProxies(artifacts, self.run_dir, self.topology, self._env, lambda: self.cluster_id)
        self.nodes = BrokerProcesses(self.layout, lambda: self.cluster_id, self._env, self.proxies.side.is_ours,
                                     self._save_record, self._lock)

    # ---------------------------------------------------------------- attach and the ownership record
    @classmethod
    def attach(cls, rec: state.ClusterRecord) -> LocalCluster:
        """A handle on a cluster another process started (for ``cluster down`` / ``status``)."""
        topo = Topology(net=rec.net, port_base=rec.port_base, api_port=rec.api_port,
                        wire_between_brokers=rec.wire_between_brokers)
        c = cls(recorded_artifacts(rec), Path(rec.run_dir), topo, rec.overrides, detached=rec.owner_pid is None,
                transaction_version=rec.transaction_version)
        c.cluster_id = rec.cluster_id
        c.nodes.pids = {int(k): v for k, v in rec.node_pids.items()}
        c.proxies.side.tox_pid, c.proxies.side.wire_pid = rec.toxiproxy_pid, rec.wire_pid
        c._attached_owner = rec.owner_pid or 0
        c._started = True
        return c

    def _record(self) -> state.ClusterRecord:
        """The ownership record as things are now (pids included)."""
        t, arts, side = self.topology, self.artifacts, self.proxies.side
        return state.ClusterRecord(
            backend=BACKEND, cluster_id=self.cluster_id, run_dir=str(self.run_dir),
            kafka_version=arts.kafka_version, net=t.net, port_base=t.port_base, api_port=t.api_port,
            owner_pid=self._owner or None, toxiproxy_pid=side.tox_pid, wire_pid=side.wire_pid,
            kwire_bin=str(arts.kwire_bin or ""),
            node_pids={str(k): v for k, v in self.nodes.pids.items()}, kafka_libs=str(arts.kafka_libs),
            toxiproxy_bin=str(arts.toxiproxy_bin), java=str(arts.java), overrides=self.overrides,
            transaction_version=self.transaction_version, wire_between_brokers=t.wire_between_brokers,
        )

    def _save_record(self) -> None:
        """The record where another process finds it (``attach``, ``cluster down``, a reclaim)."""
        state.save(self._record())

    def _env(self) -> dict[str, str]:
        return procs.tags(self.cluster_id, self._owner)

    def keep_logs(self) -> None:
        """Nothing to do: the processes write their logs into the run folder as they go."""

    # ---------------------------------------------------------------- start / stop
    def start(self) -> None:
        """Reclaim leftovers, check ports, render, format, start Toxiproxy and nodes, wait healthy.
        Any failure (or Ctrl-C) tears down what was started before re-raising."""
        with self._lock:
            if self._started:
                return
            self._reclaim_leftovers()
            procs.check_free(self.topology.all_binds())
            self._started = True
            self._owned(True)
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            for n in self.topology.node_ids:
                self.layout.render(n)
            self.layout.format_storage(self.cluster_id, self.transaction_version, self._env)
            self.proxies.start_wire()
            self.proxies.start_toxiproxy()
            self._save_record()
            for n in self.topology.node_ids:
                self.nodes.spawn(n)
            for n in self.topology.node_ids:
                self.nodes.wait_started(n, offset=0)
            self.wait_healthy()
            write_json(self.run_dir / "cluster.json", self.status().to_json())
        except BaseException:
            self.stop()
            raise
        if self.detached:
            self._owned(False)  # ``cluster up``: the cluster outlives this process on purpose

    def stop(self) -> Reclaimed:
        """Kill every process of this cluster (and of runs on it), drop the data, keep the logs.
        Returns what was running. Idempotent."""
        with self._lock:
            self._owned(False)
            if not self._started:
                return Reclaimed()
            gone = self.leftovers()
            errors = self.nodes.kill_all()
            self.proxies.side.stop()
            self._admin = None
            self.layout.drop_data()
            # Anything else carrying our tag (storage formatters, a node mid-restart, workloads of a
            # run on this cluster) goes too.
            for t in procs.tagged_processes():
                if t.cluster_id == self.cluster_id:
                    procs.kill_hard(t.pid, f"process {t.pid} of cluster {self.cluster_id}")
            left = [t.pid for t in procs.tagged_processes() if t.cluster_id == self.cluster_id]
            state.clear(BACKEND, self.cluster_id)
            self._started = False
            if errors or left:
                raise ClusterError(f"cluster {self.cluster_id} did not stop cleanly: {errors} still running: {left}")
            return gone

    def leftovers(self) -> Reclaimed:
        """Every process of this cluster that runs now: nodes, Toxiproxy, workloads of runs on it."""
        return reclaim.processes([t for t in procs.tagged_processes() if t.cluster_id == self.cluster_id])

    def _reclaim_leftovers(self) -> None:
        """Stop what a crashed run left behind; refuse to touch a cluster that is legitimately up."""
        rec = state.load(BACKEND)
        if rec is not None:
            running = [t.pid for t in procs.tagged_processes() if t.cluster_id == rec.cluster_id]
            where = f"run folder {rec.run_dir}"
            self._reclaim_crashed_run(rec, bool(running), where, where, "eos-chaos cluster down",
                                      f"({rec.run_dir}): pids {running}")
        reclaim_orphans()

    # ---------------------------------------------------------------- Toxiproxy and the wire proxy
    def proxy_specs(self) -> list[ProxySpec]:
        return self.proxies.specs()

    def restart_toxiproxy(self) -> None:
        self.proxies.restart_toxiproxy()
        self._save_record()

    @property
    def toxiproxy(self) -> Toxiproxy:
        return self.proxies.toxiproxy

    def restart_wire(self) -> None:
        self.proxies.restart_wire()
        self._save_record()

    @property
    def wire_events(self) -> Path:
        return self.proxies.wire_events

    @property
    def wire(self) -> WireProxy:
        return self.proxies.wire

    # ---------------------------------------------------------------- nodes
    def node_state(self, node: int) -> NodeState:
        return self.nodes.state(node)

    def kill(self, node: int) -> None:
        self.nodes.kill(node)

    def stop_node(self, node: int) -> None:
        self.nodes.stop(node)

    def pause(self, node: int) -> None:
        self.nodes.pause(node)

    def resume(self, node: int) -> None:
        self.nodes.resume(node)

    def restart(self, node: int) -> None:
        """Start ``node`` again (stopping it first if it runs) and wait until it reports started."""
        self.nodes.restart(node)

    def quorum_views(self) -> list[health.QuorumView]:
        views = []
        for n in self.topology.node_ids:
            if self.node_state(n) is NodeState.UP:
                v = health.read_quorum_state(n, self.layout.data_dir(n))
                if v is not None:
                    views.append(v)
        return views

    # ---------------------------------------------------------------- addresses and status
    @property
    def bootstrap(self) -> str:
        return self.topology.bootstrap

    @property
    def direct_bootstrap(self) -> str:
        return self.topology.direct_bootstrap

    def direct_address(self, node: int) -> str:
        return self.topology.bind(node, Listener.DIRECT)

    def status(self) -> ClusterStatus:
        # the pid of a running node only: a killed node's last pid names nothing (or someone else)
        nodes = [NodeStatus(n, self.node_state(n), self.nodes.pid(n) or None) for n in self.topology.node_ids]
        return ClusterStatus(
            backend=BACKEND,
            kafka_version=self.artifacts.kafka_version,
            bootstrap=self.bootstrap,
            direct_bootstrap=self.direct_bootstrap,
            toxiproxy=self.topology.toxiproxy_url,
            nodes=nodes,
            run_dir=str(self.run_dir),
            cluster_id=self.cluster_id,
            active_controller=self.active_controller(),
            extra=self.proxies.status(),
        )
