"""The ``local`` backend: three Kafka JVMs and one Toxiproxy as processes of this machine.

Layout of a run folder::

    cluster.json            what was started (versions, addresses, pids)
    toxiproxy.log
    wire.log, wire-events.jsonl   the wire proxy's log and its event log (every matched request)
    nodes/n<id>/            server.properties, hosts, log4j2.properties, server.log, stdout.log, data/

``data/`` is removed at stop; configs and logs stay for the person reading the run.
"""

from __future__ import annotations

import atexit
import base64
import logging
import shutil
import signal
import subprocess
import threading
import uuid
from collections.abc import Mapping
from pathlib import Path

from clusters.backends import procs, reclaim, state
from clusters.backends.artifacts import Artifacts
from clusters.backends.protocol import HEALTHY_TIMEOUT_S, NODE_START_TIMEOUT_S, ClusterStatus, NodeState, NodeStatus, Owned
from clusters.backends.reclaim import Reclaimed
from clusters.backends.sidecars import Sidecars, WireHop
from clusters.kafka import feature_levels, health, render
from clusters.kafka.topology import Listener, Topology
from clusters.toxiproxy.toxiproxy_api import ProxySpec, Toxiproxy
from clusters.wire.wire_api import WireProxy
from harness.base.errors import ClusterError, EnvironmentProblem, HarnessError, WaitTimeout
from harness.base.wait import wait_until
from harness.rundir.runfolder import WIRE_EVENTS, RunFolder, write_json

log = logging.getLogger(__name__)

BACKEND = "local"
#: Printed by KafkaRaftServer once broker and controller are up (KafkaBroker.STARTED_MESSAGE).
STARTED_MESSAGE = "Kafka Server started"
#: StorageTool is one short JVM per node.
FORMAT_TIMEOUT_S = 120.0


# Clusters this process owns; stopped at interpreter exit if a caller forgot (or was interrupted).
_OWNED: set[LocalCluster] = set()


@atexit.register
def _stop_owned() -> None:
    for cluster in list(_OWNED):
        cluster.stop()


def new_cluster_id() -> str:
    """A Kafka cluster id: a random UUID, base64url without padding, not starting with '-'."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cid.startswith("-"):
            return cid


def reclaim_orphans() -> Reclaimed:
    """Kill processes of ours whose owner died, or detached ones no cluster record claims.
    A run that is still going (its owner alive) is left alone. Returns what was killed."""
    return reclaim.kill_processes(reclaim.dead_runs_processes(BACKEND), "its run is over")


class LocalCluster(Owned):
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
        self.artifacts = artifacts
        self.transaction_version = transaction_version
        # absolute: the processes run with the run folder as their working directory, so a
        # relative path (``--out results/x``) handed to them would point inside it
        self.run_dir = run_dir.absolute()
        self.topology = topology or Topology()
        self.overrides = dict(overrides or {})
        self.detached = detached
        self.cluster_id = new_cluster_id()
        self._pids: dict[int, int] = {}
        self._side = Sidecars(self.run_dir, self._env, lambda: self.cluster_id)
        self._admin = None
        self._lock = threading.RLock()
        self._started = False

    # ---------------------------------------------------------------- attach / context manager
    @classmethod
    def attach(cls, rec: state.ClusterRecord) -> LocalCluster:
        """A handle on a cluster another process started (for ``cluster down`` / ``status``)."""
        arts = Artifacts(rec.kafka_version, Path(rec.kafka_libs), Path(rec.toxiproxy_bin), Path(rec.java),
                         Path(rec.kwire_bin) if rec.kwire_bin else None)
        topo = Topology(net=rec.net, port_base=rec.port_base, api_port=rec.api_port,
                        wire_between_brokers=rec.wire_between_brokers)
        c = cls(arts, Path(rec.run_dir), topo, rec.overrides, detached=rec.owner_pid is None,
                transaction_version=rec.transaction_version)
        c.cluster_id = rec.cluster_id
        c._pids = {int(k): v for k, v in rec.node_pids.items()}
        c._tox_pid = rec.toxiproxy_pid
        c._wire_pid = rec.wire_pid
        c._attached_owner = rec.owner_pid or 0
        c._started = True
        return c

    def __enter__(self) -> LocalCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def keep_logs(self) -> None:
        """Nothing to do: the processes write their logs into the run folder as they go."""

    # ---------------------------------------------------------------- paths
    def node_dir(self, node: int) -> Path:
        return RunFolder(self.run_dir).nodes / f"n{node}"

    def _data_dir(self, node: int) -> Path:
        return self.node_dir(node) / "data"

    def server_log(self, node: int) -> Path:
        return self.node_dir(node) / "server.log"


    def _env(self) -> dict[str, str]:
        return procs.tags(self.cluster_id, self._owner)

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
            _OWNED.add(self)
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            for n in self.topology.node_ids:
                self._render_node(n)
            self._format_storage()
            self._start_wire()
            self._start_toxiproxy()
            self._save_record()
            for n in self.topology.node_ids:
                self._spawn_node(n)
            for n in self.topology.node_ids:
                self._wait_started(n, offset=0)
            self.wait_healthy()
            self._write_cluster_json()
        except BaseException:
            self.stop()
            raise
        if self.detached:
            _OWNED.discard(self)  # ``cluster up``: the cluster outlives this process on purpose

    def stop(self) -> Reclaimed:
        """Kill every process of this cluster (and of runs on it), drop the data, keep the logs.
        Returns what was running. Idempotent."""
        with self._lock:
            _OWNED.discard(self)
            if not self._started:
                return Reclaimed()
            gone = self.leftovers()
            errors: list[str] = []
            for n, pid in sorted(self._pids.items()):
                if self._is_ours(pid):
                    try:
                        procs.kill_hard(pid, f"node {n}")
                    except HarnessError as exc:
                        errors.append(str(exc))
            self._side.stop()
            self._admin = None
            for n in self.topology.node_ids:
                shutil.rmtree(self._data_dir(n), ignore_errors=True)
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
            if running and rec.owner_pid is None:
                raise EnvironmentProblem(
                    f"a local cluster is already up (run folder {rec.run_dir}, started by `eos-chaos cluster up`). "
                    "Take it down first: eos-chaos cluster down"
                )
            if running and rec.owner_pid and procs.alive(rec.owner_pid):
                raise EnvironmentProblem(
                    f"a local cluster owned by running process {rec.owner_pid} is up (run folder {rec.run_dir}); "
                    "one cluster at a time on this machine. Wait for it, or stop that process."
                )
            log.info(f"reclaiming leftovers of a crashed run ({rec.run_dir}): pids {running}")
            gone = LocalCluster.attach(rec).stop()
            if gone:
                log.info(f"reclaimed: {', '.join(gone.lines())}")
        reclaim_orphans()

    def _is_ours(self, pid: int) -> bool:
        return self._side.is_ours(pid)

    # ---------------------------------------------------------------- rendering and formatting
    def _render_node(self, n: int) -> None:
        d = self.node_dir(n)
        d.mkdir(parents=True, exist_ok=True)
        props = render.server_properties(self.topology, n, self._data_dir(n), self.overrides)
        (d / "server.properties").write_text(render.format_properties(props))
        (d / "hosts").write_text(render.hosts_file(self.topology, n))
        (d / "log4j2.properties").write_text(render.log4j2_properties(self.server_log(n)))

    def _java(self, *args: str, heap: str | None = None) -> list[str]:
        libs = str(self.artifacts.kafka_libs / "*")
        opts = list(render.JVM_OPTS) if heap is None else [f"-Xmx{heap}", "-XX:TieredStopAtLevel=1"]
        return [str(self.artifacts.java), *opts, "-cp", libs, *args]

    def _format_storage(self) -> None:
        """Format every node's log dir with the cluster id (three short JVMs in parallel)."""
        running: dict[int, subprocess.Popen[bytes]] = {}
        for n in self.topology.node_ids:
            d = self.node_dir(n)
            cmd = self._java(
                f"-Dlog4j2.configurationFile={d / 'log4j2.properties'}",
                "kafka.tools.StorageTool", "format", "-t", self.cluster_id, "-c", str(d / "server.properties"),
                *feature_levels.format_args(self.transaction_version), heap="256m",
            )
            running[n] = procs.spawn(cmd, d / "format.log", cwd=d, env=self._env())
        for n, p in running.items():
            try:
                rc = p.wait(timeout=FORMAT_TIMEOUT_S)
            except subprocess.TimeoutExpired as exc:
                raise WaitTimeout(f"formatting node {n}'s storage did not finish in {FORMAT_TIMEOUT_S:.0f}s") from exc
            if rc != 0:
                raise ClusterError(
                    f"formatting node {n}'s storage failed (exit {rc}); last lines of "
                    f"{self.node_dir(n) / 'format.log'}:\n{procs.tail(self.node_dir(n) / 'format.log')}"
                )

    # ---------------------------------------------------------------- toxiproxy and the wire proxy
    @property
    def _tox_pid(self) -> int | None:
        return self._side.tox_pid

    @_tox_pid.setter
    def _tox_pid(self, pid: int | None) -> None:
        self._side.tox_pid = pid

    @property
    def _wire_pid(self) -> int | None:
        return self._side.wire_pid

    @_wire_pid.setter
    def _wire_pid(self, pid: int | None) -> None:
        self._side.wire_pid = pid

    def _start_toxiproxy(self) -> None:
        topo = self.topology
        self._side.start_toxiproxy(self.artifacts.toxiproxy_bin, topo.api_host, topo.api_port, self.proxy_specs())

    def proxy_specs(self) -> list[ProxySpec]:
        return [ProxySpec(p.link.name, p.listen, p.upstream) for p in self.topology.proxies()]

    def restart_toxiproxy(self) -> None:
        self._side.kill_toxiproxy()
        self._start_toxiproxy()
        self._save_record()

    @property
    def toxiproxy(self) -> Toxiproxy:
        return self._side.toxiproxy(self.topology.toxiproxy_url)

    def _start_wire(self) -> None:
        """The wire proxy on every client link, between Toxiproxy and the nodes; with ``wire_between_brokers``
        on every link and each node's links to itself too (clusters/wire/kwire)."""
        hops = [WireHop(w.link.name, w.listen, w.upstream) for w in self.topology.wire_hops()]
        self._side.start_wire(self.artifacts.kwire_bin, self.topology.wire_api, hops)

    def restart_wire(self) -> None:
        self._side.kill_wire()
        self._start_wire()
        self._save_record()

    @property
    def wire_events(self) -> Path:
        return self.run_dir / WIRE_EVENTS

    @property
    def wire(self) -> WireProxy:
        return self._side.wire(self.topology.wire_url)

    # ---------------------------------------------------------------- nodes
    def _spawn_node(self, n: int) -> int:
        d = self.node_dir(n)
        cmd = self._java(
            f"-Djdk.net.hosts.file={d / 'hosts'}",
            f"-Dlog4j2.configurationFile={d / 'log4j2.properties'}",
            f"-Dkafka.logs.dir={d}",
            "kafka.Kafka", str(d / "server.properties"),
        )
        p = procs.spawn(cmd, d / "stdout.log", cwd=d, env=self._env())
        with self._lock:
            self._pids[n] = p.pid
            self._save_record()
        return p.pid

    def _log_size(self, n: int) -> int:
        try:
            return self.server_log(n).stat().st_size
        except FileNotFoundError:
            return 0

    def _wait_started(self, n: int, offset: int, timeout: float = NODE_START_TIMEOUT_S) -> None:
        """Until the node's log, past ``offset``, says started; fail at once if the process exits."""
        pid = self._pids[n]
        log_file = self.server_log(n)

        def started() -> bool:
            try:
                with open(log_file, "rb") as fh:
                    fh.seek(offset)
                    return STARTED_MESSAGE.encode() in fh.read()
            except FileNotFoundError:
                return False

        def exited() -> str | None:
            procs.reap(pid)
            if procs.alive(pid):
                return None
            return (
                f"node {n} (pid {pid}) exited during start-up. Last lines of {log_file}:\n{procs.tail(log_file)}\n"
                f"--- {self.node_dir(n) / 'stdout.log'}:\n{procs.tail(self.node_dir(n) / 'stdout.log', 15)}"
            )

        try:
            wait_until(started, timeout=timeout, what=f"node {n} to log '{STARTED_MESSAGE}'", fatal=exited,
                       state=lambda: f"last log lines:\n{procs.tail(log_file, 10)}")
        except WaitTimeout as exc:
            raise ClusterError(str(exc)) from exc

    def node_state(self, node: int) -> NodeState:
        pid = self._pid(node)
        if not pid:
            return NodeState.DOWN
        return NodeState.PAUSED if procs.stopped(pid) else NodeState.UP

    def _pid(self, node: int) -> int:
        """The node's running process, 0 if none. Another process holding a handle on this cluster
        (a run on the cluster a test session or ``cluster up`` started) may have restarted the node:
        when the pid we know is gone, the node's process is looked up by its tag and command line."""
        if node not in self.topology.node_ids:
            raise ClusterError(f"no node {node}; nodes are {list(self.topology.node_ids)}")
        pid = self._pids.get(node, 0)
        if pid:
            procs.reap(pid)
            if procs.alive(pid) and self._is_ours(pid):
                return pid
        props = str(self.node_dir(node) / "server.properties")
        for t in procs.tagged_processes():
            if t.cluster_id == self.cluster_id and props in procs.cmdline(t.pid):
                with self._lock:
                    self._pids[node] = t.pid
                return t.pid
        return 0

    def kill(self, node: int) -> None:
        pid = self._pid(node)
        if self.node_state(node) is not NodeState.DOWN:
            procs.kill_hard(pid, f"node {node}")

    def stop_node(self, node: int) -> None:
        pid = self._pid(node)
        if self.node_state(node) is not NodeState.DOWN:
            if not procs.terminate(pid, f"node {node}"):
                log.info(f"node {node} ignored SIGTERM for {procs.TERM_WAIT_S:.0f}s and was killed")

    def pause(self, node: int) -> None:
        pid = self._pid(node)
        if self.node_state(node) is NodeState.DOWN:
            raise ClusterError(f"cannot pause node {node}: it is down")
        procs.signal_pid(pid, signal.SIGSTOP)
        wait_until(lambda: self.node_state(node) is NodeState.PAUSED, timeout=10, what=f"node {node} to be stopped by SIGSTOP")

    def resume(self, node: int) -> None:
        pid = self._pid(node)
        procs.signal_pid(pid, signal.SIGCONT)
        wait_until(lambda: self.node_state(node) is not NodeState.PAUSED, timeout=10, what=f"node {node} to continue after SIGCONT")

    def restart(self, node: int) -> None:
        """Start ``node`` again (stopping it first if it runs) and wait until it reports started."""
        self._pid(node)
        if self.node_state(node) is not NodeState.DOWN:
            self.stop_node(node)
        offset = self._log_size(node)
        self._spawn_node(node)
        self._wait_started(node, offset)

    # ---------------------------------------------------------------- health
    def _admin_client(self):  # type: ignore[no-untyped-def]
        if self._admin is None:
            self._admin = health.admin_client(self.direct_bootstrap)
        return self._admin

    def quorum_views(self) -> list[health.QuorumView]:
        views = []
        for n in self.topology.node_ids:
            if self.node_state(n) is NodeState.UP:
                v = health.read_quorum_state(n, self._data_dir(n))
                if v is not None:
                    views.append(v)
        return views

    def active_controller(self) -> int | None:
        """The raft leader a majority of running voters agree on."""
        return health.raft_leader(self.quorum_views(), len(self.topology.node_ids))

    def health(self) -> health.Health:
        return health.probe(self._admin_client(), list(self.topology.node_ids), self.quorum_views())

    def wait_healthy(self, timeout: float = HEALTHY_TIMEOUT_S) -> None:
        health.wait_healthy(self, timeout)

    # ---------------------------------------------------------------- status and records
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
        nodes = [NodeStatus(n, self.node_state(n), self._pid(n) or None) for n in self.topology.node_ids]
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
            extra={"toxiproxy_pid": self._tox_pid, "toxiproxy_up": procs.alive(self._tox_pid),
                   "wire": self.topology.wire_url, "wire_pid": self._wire_pid, "wire_up": procs.alive(self._wire_pid),
                   "wire_between_brokers": self.topology.wire_between_brokers},
        )

    def _record(self) -> state.ClusterRecord:
        t = self.topology
        return state.ClusterRecord(
            backend=BACKEND, cluster_id=self.cluster_id, run_dir=str(self.run_dir),
            kafka_version=self.artifacts.kafka_version, net=t.net, port_base=t.port_base, api_port=t.api_port,
            owner_pid=self._owner or None, toxiproxy_pid=self._tox_pid, wire_pid=self._wire_pid,
            kwire_bin=str(self.artifacts.kwire_bin or ""),
            node_pids={str(k): v for k, v in self._pids.items()}, kafka_libs=str(self.artifacts.kafka_libs),
            toxiproxy_bin=str(self.artifacts.toxiproxy_bin), java=str(self.artifacts.java), overrides=self.overrides,
            transaction_version=self.transaction_version, wire_between_brokers=t.wire_between_brokers,
        )

    def feature_levels(self) -> dict[str, int]:
        return feature_levels.intended_levels(self.artifacts.kafka_version, self.transaction_version)

    def _save_record(self) -> None:
        state.save(self._record())

    def _write_cluster_json(self) -> None:
        write_json(self.run_dir / "cluster.json", self.status().to_json())
