"""The faults the workload scenarios need, run on a timed schedule, each recorded in the history
(``process: nemesis``, ``f: fault``, ``type: info`` start / ``ok`` stop) with its resolved target;
and heal-all, which runs at the end of every run whatever happened.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from typing import Callable

from chaos import partitions, targets, toxics
from clusters.base import Cluster, NodeState
from clusters.health import admin_client
from harness.history.model import FAULT, NEMESIS
from harness.history.recorder import Recorder
from harness.scenario import Fault, Scenario
from harness.supervisor import RESTARTED, Supervisor
from harness.workloads import copier
from harness.workloads.txn_producer import transactional_id
from harness.workloads.zombie import GO, READY

log = logging.getLogger(__name__)

#: The zombie's first instance announces itself within seconds of starting (one init + 3 sends).
ZOMBIE_READY_TIMEOUT_S = 120.0
#: The second instance's init_transactions must wait out the first's open transaction being
#: aborted by the coordinator (it is fenced at once): seconds; generous for a loaded machine.
ZOMBIE_SECOND_TIMEOUT_S = 180.0
#: Faults on broker processes (serialised: see ``Nemesis._process_lock``).
BROKER_PROCESS_FAULTS = ("kill", "stop", "pause", "restart", "rolling-restart")
#: A fault asked to end (run over) finishes its current step: a node restart (~10-60 s) at worst.
FAULT_END_TIMEOUT_S = 240.0
#: An armed driver fault fires at the job's next micro-batch: after a restart that is the JVM start
#: plus the replayed batch (~20-40 s here, under load); generous because faults may slow it.
DRIVER_ARMED_TIMEOUT_S = 180.0
#: A resumed zombie driver's next Kafka call is fenced and the driver exits: seconds.
ZOMBIE_DRIVER_EXIT_TIMEOUT_S = 120.0


def _label(kind: str, value: dict[str, object]) -> str:
    """A short name of an active fault for the progress display: ``partition leader (9 links)``."""
    parts = [kind] + [str(value[k]) for k in ("target", "node", "workload") if value.get(k) is not None]
    links = value.get("links")
    if isinstance(links, list):
        parts.append(links[0] if len(links) == 1 else f"({len(links)} links)")
    return " ".join(parts)


class Nemesis:
    def __init__(self, scenario: Scenario, cluster: Cluster, sup: Supervisor, rec: Recorder,
                 plan: list[Fault] | None = None, seed: int = 0) -> None:
        self.rnd = random.Random(f"{seed}/nemesis")  # "random" targets: reproducible per seed
        self.scenario = scenario
        self.plan = plan if plan is not None else list(scenario.faults)
        self.cluster = cluster
        self.sup = sup
        self.rec = rec
        self.stop = threading.Event()
        self.faults = 0
        self.errors: list[str] = []
        self._active: dict[int, str] = {}  # faults started and not yet stopped (progress display)
        self._active_lock = threading.Lock()
        # Process faults on brokers never overlap: a node still restarting from one kill must not be
        # killed (or paused, restarted) by the next. Network and workload faults overlap freely.
        self._process_lock = threading.Lock()
        self._admin = admin_client(cluster.direct_bootstrap)

    def active_faults(self) -> list[str]:
        with self._active_lock:
            return list(self._active.values())

    def _start(self, kind: str, **value: object) -> None:
        self.faults += 1
        self.rec.event(NEMESIS, FAULT, {"kind": kind, "phase": "start", **value}, type_="info")
        log.info(f"nemesis: {kind} {value}")
        with self._active_lock:
            self._active[self._key(kind, value)] = _label(kind, value)

    def _end(self, kind: str, **value: object) -> None:
        self.rec.event(NEMESIS, FAULT, {"kind": kind, "phase": "stop", **value}, type_="ok")
        with self._active_lock:
            self._active.pop(self._key(kind, value), None)

    @staticmethod
    def _key(kind: str, value: dict[str, object]) -> int:
        # start and stop of one fault share kind and node/links/workload (stop carries no target)
        return hash((kind, str(value.get("node")), str(value.get("links")), str(value.get("workload"))))

    def run(self) -> None:
        """Each fault starts at its time, in a thread of its own, so faults whose windows overlap
        are on together; a fault that fails is recorded and the run goes on. Returns once every
        started fault has ended (``stop`` ends them early)."""
        t0 = self.rec.now()
        running: list[threading.Thread] = []
        try:
            for fault in sorted(self.plan, key=lambda f: f.at):
                if self.stop.wait(max(0.0, fault.at - (self.rec.now() - t0) / 1e9)):
                    return
                th = threading.Thread(target=self._guarded, args=(fault,), name=f"fault-{fault.kind}@{fault.at}", daemon=True)
                th.start()
                running.append(th)
        finally:
            for th in running:
                th.join(timeout=FAULT_END_TIMEOUT_S)
                if th.is_alive():
                    self.errors.append(f"{th.name} did not end within {FAULT_END_TIMEOUT_S:.0f}s of being asked to")

    def start_now(self, fault: Fault) -> threading.Thread:
        """Apply ``fault`` now, in a thread of its own (a test's ``nemesis`` fixture): it ends after
        its duration, or when ``stop`` is set; a failure lands in ``errors``."""
        th = threading.Thread(target=self._guarded, args=(fault,), name=f"fault-{fault.kind}", daemon=True)
        th.start()
        return th

    def _guarded(self, fault: Fault) -> None:
        try:
            self._apply(fault)
        except Exception as exc:  # noqa: BLE001 - recorded; heal-all still runs at the end
            self.errors.append(f"{fault.kind} at {fault.at}s: {type(exc).__name__}: {exc}")
            log.info(f"nemesis: {fault.kind} failed: {exc}")

    def _apply(self, fault: Fault) -> None:
        """One fault, healed after ``fault.duration``; again every ``fault.every`` seconds if set."""
        while not self.stop.is_set():
            started = time.monotonic()
            self._once(fault)
            if not fault.every or self.stop.wait(max(0.0, fault.every - (time.monotonic() - started))):
                return

    def _once(self, fault: Fault) -> None:
        kind = "kill" if fault.kind == "kill-leader" else fault.kind
        target = "leader" if fault.kind == "kill-leader" else fault.target
        if kind in ("kill-workload", "pause-workload"):
            self._workloads(kind, fault)
        elif kind in ("kill-driver", "zombie-driver"):
            self._driver(kind, fault)
        elif kind in BROKER_PROCESS_FAULTS:
            with self._process_lock:
                if not self.stop.is_set():  # the run may have ended while this fault waited its turn
                    self._process(kind, target, fault)
        else:
            self._network(kind, fault, target)

    def _process(self, kind: str, target: str | int, fault: Fault) -> None:
        if kind == "rolling-restart":
            for n in self.cluster.topology.node_ids:
                self._start(kind, node=n)
                self.cluster.restart(n)
                self.cluster.wait_healthy()
                self._end(kind, node=n)
        else:  # kill, stop, pause, restart
            node = self.resolve(target, fault.of)
            self._start(kind, node=node, target=target, of=fault.of)
            {"kill": self.cluster.kill, "stop": self.cluster.stop_node, "pause": self.cluster.pause,
             "restart": self.cluster.restart}[kind](node)
            if kind != "restart":
                self.stop.wait(fault.duration)
                (self.cluster.resume if kind == "pause" else self.cluster.restart)(node)
            self._end(kind, node=node)

    def resolve(self, target: str | int, of: str | None = None) -> int:
        """The node a target names right now (roles asked of the cluster over DIRECT)."""
        if isinstance(target, int):
            return target
        if target == "random":
            return targets.random_node(self.rnd, self.cluster.topology.node_ids)
        if target == "leader":
            topic, _, part = (of or f"{self.scenario.topics[0]}/0").rpartition("/")
            return targets.leader(self._admin, topic, int(part))
        if target == "coordinator":
            return targets.transaction_coordinator(self._admin, of or transactional_id("txn-producer-0"))  # the first txn-producer
        if target == "group-coordinator":
            return targets.group_coordinator(self._admin, of or self._copier_group())
        if target == "controller":
            node = self.cluster.active_controller()
            if node is None:
                raise LookupError("no active controller right now (no raft leader agreed by a majority)")
            return node
        raise ValueError(f"target {target!r} names no single node")

    def _copier_group(self) -> str:
        for w in self.scenario.workloads:
            if w.kind == "copier":
                return str(w.settings.get("group", copier.GROUP))
        raise LookupError("group-coordinator without `of`: the scenario has no copier group")

    def _links(self, fault: Fault, target: str | int) -> tuple[list[str], list[int]]:
        """The links a network fault acts on, and the nodes its target resolved to (for the report)."""
        topo = self.cluster.topology
        nodes = list(topo.node_ids) if target == "all" else [self.resolve(target, fault.of)]
        peer = self.resolve(fault.peer, fault.of) if fault.peer is not None else None
        names: list[str] = []
        for n in nodes:
            names += [lk.name for lk in partitions.links(topo, fault.partition, n, fault.listeners, peer)
                      if lk.name not in names]
        return names, nodes

    def _network(self, kind: str, fault: Fault, target: str | int) -> None:
        tox = self.cluster.toxiproxy
        links, nodes = self._links(fault, target)
        self._start(kind, links=links, target=target, of=fault.of, nodes=nodes)
        if kind == "partition":
            for link in links:
                tox.set_enabled(link, False)
            self.stop.wait(fault.duration)
            for link in links:
                tox.set_enabled(link, True)
        elif kind == "flap":
            until = time.monotonic() + fault.duration
            while time.monotonic() < until and not self.stop.is_set():
                for link in links:
                    tox.set_enabled(link, False)
                self.stop.wait(fault.period)
                for link in links:
                    tox.set_enabled(link, True)
                self.stop.wait(fault.period)
        else:
            added = [(link, spec) for link in links for spec in toxics.specs(kind, fault.params)]
            for link, spec in added:
                tox.add_toxic(link, spec.type, spec.attributes, stream=spec.stream, name=spec.name)
            self.stop.wait(fault.duration)
            for link, spec in added:
                tox.remove_toxic(link, spec.name)
        self._end(kind, links=links)

    def _workloads(self, kind: str, fault: Fault) -> None:
        names = self.sup.of_kind(fault.workload or "")
        for name in names:
            self._start(kind, workload=name)
            (self.sup.kill if kind == "kill-workload" else self.sup.pause)(name)
        over = self.stop.wait(fault.duration)
        for name in names:
            if kind == "pause-workload":
                self.sup.resume(name)
            elif not over and self.sup.kinds[name] not in RESTARTED:  # those the keeper restarts
                self.sup.restart(name)
            # else: killed until the end of the run, as a crashed client that never comes back is
            # (its open transaction is left to the coordinator's timeout)
            self._end(kind, workload=name)

    def _driver(self, kind: str, fault: Fault) -> None:
        """Arm the Spark job to kill (kill-driver) or freeze (zombie-driver) itself at ``fault.window``
        of its next micro-batch, and wait until it has. A frozen driver is then succeeded by a new
        incarnation; after ``fault.duration`` the old one is resumed and must die fenced."""

        from clusters import procs
        from harness.runfolder import write_json
        from harness.spark.job import ARM_FILE, job_dir
        from harness.wait import wait_until

        for name in self.sup.of_kind("spark-job"):
            proc = self.sup.procs[name]
            arm = job_dir(self.sup.run_dir, name) / ARM_FILE
            write_json(arm, {"window": fault.window, "signal": "kill" if kind == "kill-driver" else "stop"})
            self._start(kind, workload=name, window=fault.window, pid=proc.pid)
            fired = (lambda: proc.poll() is not None) if kind == "kill-driver" else (lambda: procs.stopped(proc.pid))
            try:
                wait_until(lambda: fired() or self.stop.is_set(), timeout=DRIVER_ARMED_TIMEOUT_S,
                           what=f"{name} (pid {proc.pid}) to reach the {fault.window} window of a micro-batch and "
                                f"{'die' if kind == 'kill-driver' else 'freeze'} there",
                           state=lambda: f"process alive: {proc.poll() is None}, armed: {arm.exists()}")
            finally:
                arm.unlink(missing_ok=True)  # never left armed for a later incarnation
            if kind == "zombie-driver" and fired():
                old = self.sup.new_incarnation(name)
                self.stop.wait(fault.duration)  # the new incarnation fences the old one and runs
                self.sup.resume_zombie(old)
                wait_until(lambda: old.poll() is not None, timeout=ZOMBIE_DRIVER_EXIT_TIMEOUT_S,
                           what=f"the resumed old driver of {name} (pid {old.pid}) to be fenced and exit",
                           state=lambda: f"alive: {old.poll() is None}")
            self._end(kind, workload=name)

    def zombie(self) -> None:
        """Freeze the first instance mid-transaction, let the second take over, resume the first."""
        first, second = self.sup.of_kind("zombie")
        ready = self.sup.run_dir / READY
        from harness.wait import wait_until

        wait_until(lambda: ready.exists() or not self.sup.alive(first), timeout=ZOMBIE_READY_TIMEOUT_S,
                   what=f"zombie {first} to open its transaction ({ready})")
        self._start("pause-workload", workload=first)
        self.sup.pause(first)
        self.sup.start("zombie", self.sup.configs[second])
        self.sup.wait(second, ZOMBIE_SECOND_TIMEOUT_S)
        self.sup.resume(first)
        (self.sup.run_dir / GO).write_text("go")
        self._end("pause-workload", workload=first)


def heal_network(cluster: Cluster) -> list[str]:
    """Every link back to a clean proxy, escalating while the last step did not heal: ``/reset``,
    then delete and recreate every proxy, then restart the Toxiproxy server. Each API call has a
    timeout (clusters/toxiproxy.py), so a hung server costs seconds, not the run. Returns what is
    still wrong (empty = healed)."""
    steps: list[tuple[str, Callable[[], None]]] = [
        ("reset", cluster.toxiproxy.reset),
        ("recreate proxies", lambda: cluster.toxiproxy.recreate(cluster.proxy_specs())),
        ("restart toxiproxy", cluster.restart_toxiproxy),
    ]
    problems: list[str] = []
    for i, (name, step) in enumerate(steps):
        if i:
            log.info(f"heal: escalating to '{name}' ({problems[-1]})")
        try:
            step()
            left = cluster.toxiproxy.unhealed()
        except Exception as exc:  # noqa: BLE001 - the next step is the answer
            problems.append(f"toxiproxy {name}: {exc}")
            continue
        if not left:
            return []
        problems.append(f"after toxiproxy {name}, still faulted links: {left}")
    return problems


def heal_all(cluster: Cluster) -> list[str]:
    """Heal the network (escalating, see ``heal_network``), resume and restart every node, wait
    until healthy. Returns what could not be healed (empty = healed)."""
    problems = heal_network(cluster)
    for n in cluster.topology.node_ids:
        try:
            state = cluster.node_state(n)
            if state is NodeState.PAUSED:
                cluster.resume(n)
            elif state is NodeState.DOWN:
                log.info(f"heal: restarting node {n}")
                cluster.restart(n)
        except Exception as exc:  # noqa: BLE001
            problems.append(f"node {n}: {exc}")
    try:
        cluster.wait_healthy()
    except Exception as exc:  # noqa: BLE001
        problems.append(f"health: {exc}")
    return problems
