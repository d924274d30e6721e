"""The ``external`` backend: a Kafka cluster the harness did not start, described by an inventory
file (clusters/backends/external/inventory.py). The harness runs Toxiproxy and the wire proxy on its
own machine in front of the cluster's client listeners (plan.py), and changes brokers only through
the inventory's node commands, each written to the heal journal before it runs (heal_journal.py):
``stop`` (and Ctrl-C, SIGTERM, interpreter exit) undoes every change still open; after a SIGKILL,
``eos-chaos cluster heal --inventory FILE`` does.
"""

from __future__ import annotations

import logging
import os
import re
import shlex
import threading
import time
from pathlib import Path
from typing import Any

from clusters.backends import procs, reclaim, state
from clusters.backends.capabilities import Capabilities, NodeCapabilities
from clusters.backends.external import inventory as inventory_file
from clusters.backends.external import node_heal, probe
from clusters.backends.external.heal_journal import HealJournal, NodeChanges, folder_for, replay
from clusters.backends.external.inventory import Inventory
from clusters.backends.external.lifecycle import node_commands, why_not
from clusters.backends.external.links import ExternalLinks
from clusters.backends.external.proxy_plan import EXTERNAL_PORT_BASE, ExternalPlan
from clusters.backends.protocol import HEALTHY_TIMEOUT_S, ClusterStatus, NodeState, NodeStatus, Owned
from clusters.backends.reclaim import Leftover, Reclaimed
from clusters.backends.sidecars import Sidecars
from clusters.kafka import health
from clusters.kafka.topology import Topology
from clusters.toxiproxy.toxiproxy_api import ProxySpec
from clusters.wire.wire_api import WireProxy
from harness.base.errors import ClusterError, ConfigError, EnvironmentProblem, HarnessError
from harness.base.wait import wait_until
from harness.rundir.runfolder import WIRE_EVENTS, write_json

log = logging.getLogger(__name__)

BACKEND = "external"
#: A Kafka release's own jar names its version: ``kafka_2.13-4.0.0.jar``, ``kafka-clients-3.9.1.jar``.
KAFKA_JAR = re.compile(r"kafka(?:_[0-9.]+|-clients)-([0-9]+\.[0-9]+\.[0-9]+)\.jar")

def cluster_id_of(inv: Inventory) -> str:
    """The harness's own id for the cluster of ``inv`` (its processes' tag, its state record): the
    name of its journal folder, so ``cluster heal`` finds what a killed run left running."""
    return f"external-{folder_for(inv).name}"


def _chain_tag() -> str:
    """This run's tag in its iptables chains' names (``EOSC-<tag>-<n>``): its pid and start second, so
    a new run's chains never meet a killed one's leftovers."""
    return f"{os.getpid():x}{int(time.time()) % 0xFFFFF:x}"[:12]


def capabilities(inv: Inventory) -> Capabilities:
    """What faults the inventory lets a run make (read only; chaos.fault_refusals checks faults against it)."""
    nodes = {n.id: NodeCapabilities(frozenset(node_commands(n)), inv.line_of_node(n.id), why_not(n))
             for n in inv.resolved()}
    lacking = [n for n in inv.resolved() if "controller" in n.roles and not n.metadata_log_dir]
    why = None
    if lacking:
        n = lacking[0]
        why = (f"the active controller is read from each controller's quorum-state, and node {n.id} gives no "
               f"metadata_log_dir ({inv.line_of_node(n.id)})")
    # links between brokers: which a node can fault is said per fault by chaos.broker_links (net.allowed, ...)
    return Capabilities(BACKEND, nodes, controller_why=why, inter_broker_why=None)


def disposable_problem(inv: Inventory, allow_non_disposable: bool) -> str | None:
    """Why faults may not run on ``inv``'s cluster (None: it says ``disposable: true``, or the flag allows it)."""
    if inv.disposable or allow_non_disposable:
        return None
    where = f"{inv.path}:{inventory_file.line_of_key(inv, 'disposable')}" if inv.path else inv.name
    return (f"the inventory does not say the cluster is disposable ({where}): faults act on real brokers. Write "
            "`disposable: true` in it if the cluster may be faulted, or give --allow-non-disposable")


class ExternalCluster(Owned):
    """A cluster the harness did not start, fronted by proxies of its own; a context manager."""

    backend = BACKEND

    def __init__(self, inv: Inventory, run_dir: Path, toxiproxy_bin: Path, kwire_bin: Path | None,
                 port_base: int | None = None, detached: bool = False) -> None:
        self.inventory = inv
        self.run_dir = run_dir.absolute()
        self.toxiproxy_bin, self.kwire_bin = toxiproxy_bin, kwire_bin
        nodes = inv.resolved()
        self.plan = ExternalPlan(tuple((n.id, n.listeners.client) for n in nodes), port_base or EXTERNAL_PORT_BASE)
        # the link names only (client-to-n<id>): scenarios, partitions and the report read them
        self.topology = Topology(node_ids=tuple(n.id for n in nodes), port_base=self.plan.port_base,
                                 api_port=self.plan.api_port)
        self.detached = detached
        self.cluster_id = cluster_id_of(inv)
        self.transaction_version: int | None = None
        self.kafka_version: str | None = None
        self.facts: dict[str, Any] = {}
        #: the finalized feature levels read at the start (the runner reads them): what a heal restores
        self.levels_read: dict[str, int] = {}
        self.journal = HealJournal(folder_for(inv))
        self.tag = _chain_tag()  # names this run's iptables chains and Chaos Mesh resources
        self.brokers = node_heal.brokers_of(inv, self.journal.folder.parent / "known_hosts", tag=self.tag)
        self.changes = NodeChanges(self.journal, self.brokers)
        self._side = Sidecars(self.run_dir, self._env, lambda: self.cluster_id)
        self._links: ExternalLinks | None = None
        self._admin: Any = None
        self._lock = threading.RLock()
        self._started = False

    # ---------------------------------------------------------------- attach / context manager
    @classmethod
    def attach(cls, rec: state.ClusterRecord) -> ExternalCluster:
        """A handle on the cluster a record describes; ConfigError (exit 2) when its inventory file
        changed since ``cluster up`` (the proxies in front of it were made from what it said)."""
        path = Path(rec.inventory)
        try:
            inv = inventory_file.load(path)
        except FileNotFoundError:
            raise ConfigError(f"the inventory {path} of the external cluster that is up is gone; take the "
                              f"cluster down (eos-chaos cluster down --backend external)") from None
        if inventory_file.digest(inv) != rec.inventory_digest:
            raise ConfigError(f"the inventory {path} changed since `cluster up` (the proxies in front of the cluster "
                              "were made from what it said then): take the cluster down and up again")
        c = cls(inv, Path(rec.run_dir), Path(rec.toxiproxy_bin), Path(rec.kwire_bin) if rec.kwire_bin else None,
                rec.port_base, detached=rec.owner_pid is None)
        c._side.tox_pid, c._side.wire_pid = rec.toxiproxy_pid, rec.wire_pid
        c.kafka_version = rec.kafka_version or None
        c._attached_owner = rec.owner_pid or 0
        c._started = True
        return c

    def _env(self) -> dict[str, str]:
        return procs.tags(self.cluster_id, self._owner)

    # ---------------------------------------------------------------- start / stop
    def start(self) -> None:
        """Check the ports, hold the journal (replaying a dead owner's), probe every node (exit 2
        naming the node), start the proxies, check that clients see only them, wait healthy. Any
        failure (or Ctrl-C) undoes what was started before re-raising."""
        with self._lock:
            if self._started:
                return
            self._reclaim_leftovers()
            procs.check_free(self.plan.all_binds())
            self._hold_journal()
            self._started = True
            self._owned(True)
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            seen = probe.preflight(self.inventory, self.brokers)
            self.kafka_version = self._read_kafka_version()
            self.facts = {"kafka_cluster_id": seen.cluster_id, "advertised": {str(k): v for k, v in seen.brokers.items()},
                          "kafka_version": self.kafka_version, "inventory": str(self.inventory.path or "")}
            self._side.start_wire(self.kwire_bin, self.plan.wire_api, self.plan.wire_hops(), self.plan.advertised())
            self._start_toxiproxy()
            self._save_record()
            self.wait_healthy()
            self._check_rewriting()
            write_json(self.run_dir / "cluster.json", {**self.status().to_json(), "facts": self.facts})
        except BaseException:
            self.stop()
            raise
        if self.detached:
            self._owned(False)
            self.journal.unlock()  # a run on it takes the journal while it faults

    def _hold_journal(self) -> None:
        """The journal held by this process; a dead owner's open changes undone first."""
        if self.journal._lock is not None:
            return
        self.journal.lock()
        left = self.journal.open_changes()
        if left:
            log.info(f"{self.journal.path}: {len(left)} change(s) a run that died left open: undoing them first")
            failed = replay(self.journal, self.brokers)
            if failed:
                self.journal.unlock()
                raise EnvironmentProblem("the external cluster cannot be put back as it was:\n  " + "\n  ".join(failed)
                                         + "\n(see eos-chaos cluster heal --inventory FILE)")
            self.journal.retire()

    def _check_rewriting(self) -> None:
        """Every broker a client learns of through the proxies is a proxy address (else exit 2)."""
        md = health.admin_client(self.plan.bootstrap).list_topics(timeout=probe.LISTENER_TIMEOUT_S * 2)
        ours = set(self.plan.advertised().values())
        escaped = sorted(f"{b.id}={b.host}:{b.port}" for b in md.brokers.values() if f"{b.host}:{b.port}" not in ours)
        if escaped:
            raise EnvironmentProblem(f"through the proxies the cluster still names brokers at {', '.join(escaped)}: "
                                     "clients would leave the proxies (is the wire proxy's address rewriting built in?)")

    def stop(self) -> Reclaimed:
        """Undo every change the journal holds open, stop the proxies and the runs' processes on it,
        let go of the journal. Never touches a broker the journal does not say it changed. Idempotent."""
        with self._lock:
            self._owned(False)
            if not self._started:
                return Reclaimed()
            gone = self.leftovers()
            failed = self._undo_all()
            self._side.stop()
            self._admin = None
            for t in procs.tagged_processes():
                if t.cluster_id == self.cluster_id:
                    procs.kill_hard(t.pid, f"process {t.pid} of cluster {self.cluster_id}")
            state.clear(BACKEND, self.cluster_id)
            self.journal.unlock()
            self._started = False
            if failed:
                raise ClusterError(f"cluster {self.cluster_id}: changes left on its nodes: {failed}; "
                                   f"eos-chaos cluster heal --inventory {self.inventory.path}")
            return gone

    def _undo_all(self) -> list[str]:
        try:
            self._hold_journal_quietly()
        except HarnessError as exc:
            return [str(exc)]
        failed = replay(self.journal, self.brokers)
        if not failed:
            self.journal.retire()
        return failed

    def _hold_journal_quietly(self) -> None:
        if self.journal._lock is None:
            self.journal.lock()

    def leftovers(self) -> Reclaimed:
        """The proxies and runs' processes of this cluster that run now, and the changes still open on its nodes."""
        found = reclaim.processes([t for t in procs.tagged_processes() if t.cluster_id == self.cluster_id])
        for a in self.journal.open_changes():
            found.add(Leftover("node change", f"node {a.node}: {a.what} (change {a.id})"))
        return found

    def _reclaim_leftovers(self) -> None:
        """Stop what a crashed run on this backend left; refuse to touch a cluster that is legitimately up."""
        rec = state.load(BACKEND)
        if rec is not None:
            running = [t.pid for t in procs.tagged_processes() if t.cluster_id == rec.cluster_id]
            if running and (rec.owner_pid is None or procs.alive(rec.owner_pid)):
                who = "`eos-chaos cluster up`" if rec.owner_pid is None else f"running process {rec.owner_pid}"
                raise EnvironmentProblem(f"an external cluster started by {who} is up (inventory {rec.inventory}); "
                                         "take it down first: eos-chaos cluster down --backend external")
            gone = ExternalCluster.attach(rec).stop()
            if gone:
                log.info(f"reclaimed: {', '.join(gone.lines())}")
        reclaim.kill_processes(reclaim.dead_runs_processes(BACKEND), "its run is over")

    def keep_logs(self) -> None:
        """Nothing to copy: the brokers' logs stay on their nodes (the inventory does not say where)."""

    # ---------------------------------------------------------------- the proxies
    def _start_toxiproxy(self) -> None:
        self._side.start_toxiproxy(self.toxiproxy_bin, "127.0.0.1", self.plan.api_port, self.proxy_specs())

    def proxy_specs(self) -> list[ProxySpec]:
        return self.plan.proxy_specs()

    def restart_toxiproxy(self) -> None:
        self._side.kill_toxiproxy()
        self._start_toxiproxy()
        self._save_record()

    @property
    def toxiproxy(self) -> ExternalLinks:
        """The clients' links on the Toxiproxy in front of the cluster, the links between brokers on
        their source nodes (iptables and tc, journaled: clusters/backends/external/links.py)."""
        if self._links is None:
            self._links = ExternalLinks(self.brokers, self.journal, self._side.toxiproxy(self.plan.toxiproxy_url),
                                        self.tag)
        return self._links

    def restart_wire(self) -> None:
        self._side.kill_wire()
        self._side.start_wire(self.kwire_bin, self.plan.wire_api, self.plan.wire_hops(), self.plan.advertised())
        self._save_record()

    @property
    def wire(self) -> WireProxy:
        return self._side.wire(self.plan.wire_url)

    @property
    def wire_events(self) -> Path:
        return self.run_dir / WIRE_EVENTS

    @property
    def bootstrap(self) -> str:
        return self.plan.bootstrap

    @property
    def direct_bootstrap(self) -> str:
        return self.plan.direct_bootstrap

    def direct_address(self, node: int) -> str:
        return self.inventory.node(node).listeners.client

    # ---------------------------------------------------------------- nodes
    def _broker(self, node: int) -> Any:
        if node not in self.brokers:
            raise ClusterError(f"no node {node}; nodes are {sorted(self.brokers)}")
        return self.brokers[node]

    def _change(self, node: int, action: Any) -> None:
        self._broker(node)
        with self._lock:
            self._hold_journal()  # a run on a detached cluster holds the journal while it faults
        self.changes.change(node, action, {"cluster": self.cluster_id})

    def kill(self, node: int) -> None:
        if self.node_state(node) is not NodeState.DOWN:
            self._change(node, "kill")

    def stop_node(self, node: int) -> None:
        if self.node_state(node) is not NodeState.DOWN:
            self._change(node, "stop")

    def pause(self, node: int) -> None:
        if self.node_state(node) is NodeState.DOWN:
            raise ClusterError(f"cannot pause node {node}: it is down")
        self._change(node, "pause")

    def resume(self, node: int) -> None:
        failed = self.changes.undo_node(node, ("pause",))
        if failed:
            raise ClusterError("; ".join(failed))
        if self.node_state(node) is NodeState.PAUSED:  # paused by no change of ours: resumed all the same
            self._broker(node).run("resume")

    def restart(self, node: int) -> None:
        """Start ``node`` again (stopping it first if it runs) and wait until it answers on its listener."""
        if self._remade_after_kill(node):
            pass  # the kill's heal: its StatefulSet made the pod again, a stop now would be a second fault
        elif self.node_state(node) is not NodeState.DOWN:
            self._change(node, "stop")
        failed = self.changes.undo_node(node)
        if failed:
            raise ClusterError("; ".join(failed))
        b = self._broker(node)
        if b.state() is NodeState.DOWN:
            b.run("start")
            b.wait_state(NodeState.UP, timeout=b.node.broker.start_timeout_s)
        address = self.direct_address(node)
        wait_until(lambda: probe.listener_problem(address, timeout=2.0) is None, timeout=b.node.broker.start_timeout_s,
                   what=f"node {node} to accept connections on {address} (broker.start_timeout_s)")

    def _remade_after_kill(self, node: int) -> bool:
        """Whether ``node`` is a Chaos Mesh pod with a kill of ours open (its heal deletes the PodChaos
        and waits for the pod Kubernetes makes again)."""
        b = self._broker(node)
        return b.node.broker.chaos_mesh is not None and any(
            a.node == node and a.what == "kill" for a in self.journal.open_changes())

    def node_state(self, node: int) -> NodeState:
        state_now: NodeState = self._broker(node).state()
        return state_now

    # ---------------------------------------------------------------- health
    def quorum_views(self) -> list[health.QuorumView]:
        """Each running controller's view of the raft leader, read from its quorum-state file."""
        views = []
        for n in self.inventory.resolved():
            if "controller" not in n.roles or not n.metadata_log_dir or self.node_state(n.id) is not NodeState.UP:
                continue
            path = f"{n.metadata_log_dir.rstrip('/')}/__cluster_metadata-0/quorum-state"
            ran = self.brokers[n.id].on_node.run(f"cat {path}", check=False)
            v = health.parse_quorum_state(n.id, ran.out) if ran.rc == 0 else None
            if v is not None:
                views.append(v)
        return views

    @property
    def _controllers_known(self) -> bool:
        return capabilities(self.inventory).controller_why is None

    def active_controller(self) -> int | None:
        """The raft leader a majority of controllers agree on (None without every metadata_log_dir)."""
        if not self._controllers_known:
            return None
        voters = [n for n in self.inventory.resolved() if "controller" in n.roles]
        return health.raft_leader(self.quorum_views(), len(voters))

    def health(self) -> health.Health:
        if self._admin is None:
            self._admin = health.admin_client(self.direct_bootstrap)
        brokers = [n.id for n in self.inventory.resolved() if "broker" in n.roles]
        h = health.probe(self._admin, brokers, self.quorum_views() if self._controllers_known else [])
        if not self._controllers_known and h.error is None:
            # no quorum-state to read: the controller the brokers name stands for a raft leader
            controller = self._admin.list_topics(timeout=health.METADATA_TIMEOUT_S).controller_id
            h.raft_leader = controller if controller is not None and controller >= 0 else None
        return h

    def wait_healthy(self, timeout: float = HEALTHY_TIMEOUT_S) -> None:
        health.wait_healthy(self, timeout)

    def feature_levels(self) -> dict[str, int]:
        return dict(self.levels_read)

    # ---------------------------------------------------------------- status and record
    def status(self) -> ClusterStatus:
        nodes = []
        for n in self.topology.node_ids:
            try:
                nodes.append(NodeStatus(n, self.node_state(n)))
            except HarnessError as exc:
                log.info(f"node {n}: its state cannot be read ({exc})")
                nodes.append(NodeStatus(n, NodeState.DOWN))
        return ClusterStatus(
            backend=BACKEND, kafka_version=self.kafka_version or "unknown", bootstrap=self.bootstrap,
            direct_bootstrap=self.direct_bootstrap, toxiproxy=self.plan.toxiproxy_url, nodes=nodes,
            run_dir=str(self.run_dir), cluster_id=self.cluster_id, active_controller=self.active_controller(),
            extra={"inventory": str(self.inventory.path or ""), "toxiproxy_pid": self._side.tox_pid,
                   "wire": self.plan.wire_url, "wire_pid": self._side.wire_pid, "journal": str(self.journal.path)},
        )

    def _read_kafka_version(self) -> str | None:
        return read_kafka_version(self.inventory, self.brokers)

    def _record(self) -> state.ClusterRecord:
        path = self.inventory.path
        return state.ClusterRecord(
            backend=BACKEND, cluster_id=self.cluster_id, run_dir=str(self.run_dir), kafka_version=self.kafka_version or "",
            net=0, port_base=self.plan.port_base, api_port=self.plan.api_port, owner_pid=self._owner or None,
            toxiproxy_pid=self._side.tox_pid, wire_pid=self._side.wire_pid, kwire_bin=str(self.kwire_bin or ""),
            toxiproxy_bin=str(self.toxiproxy_bin), inventory=str(path.resolve()) if path else "",
            inventory_digest=inventory_file.digest(self.inventory))

    def _save_record(self) -> None:
        state.save(self._record())



def read_kafka_version(inv: Inventory, brokers: dict[int, Any] | None = None) -> str | None:
    """The Kafka release the first node with a ``kafka_home`` runs, from its jars' names (None: none says)."""
    brokers = brokers or node_heal.brokers_of(inv, folder_for(inv).parent / "known_hosts")
    for n in inv.resolved():
        if n.kafka_home:
            ran = brokers[n.id].on_node.run(f"ls {shlex.quote(n.kafka_home.rstrip('/') + '/libs')}", check=False)
            found = KAFKA_JAR.search(ran.out)
            if found:
                return found.group(1)
    return None
