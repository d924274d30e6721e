"""The faults the workload scenarios need, run on a timed schedule, each recorded in the history
(``process: nemesis``, ``f: fault``, ``type: info`` start / ``ok`` stop) with its resolved target;
and heal-all, which runs at the end of every run whatever happened.
"""

from __future__ import annotations

import threading
from typing import Callable

from clusters.base import Cluster, NodeState
from clusters.health import admin_client
from harness.history.model import FAULT, NEMESIS
from harness.history.recorder import Recorder
from harness.kafka_io import partition_leader
from harness.scenario import Fault, Scenario
from harness.supervisor import Supervisor
from harness.workloads.zombie import GO, READY

Log = Callable[[str], None]
#: The zombie's first instance announces itself within seconds of starting (one init + 3 sends).
ZOMBIE_READY_TIMEOUT_S = 120.0
#: The second instance's init_transactions must wait out the first's open transaction being
#: aborted by the coordinator (it is fenced at once): seconds; generous for a loaded machine.
ZOMBIE_SECOND_TIMEOUT_S = 180.0


class Nemesis:
    def __init__(self, scenario: Scenario, cluster: Cluster, sup: Supervisor, rec: Recorder, log: Log,
                 plan: list[Fault] | None = None) -> None:
        self.scenario = scenario
        self.plan = plan if plan is not None else list(scenario.faults)
        self.cluster = cluster
        self.sup = sup
        self.rec = rec
        self.log = log
        self.stop = threading.Event()
        self.faults = 0
        self.errors: list[str] = []
        self._admin = admin_client(cluster.direct_bootstrap)

    def _start(self, kind: str, **value: object) -> None:
        self.faults += 1
        self.rec.event(NEMESIS, FAULT, {"kind": kind, "phase": "start", **value}, type_="info")
        self.log(f"nemesis: {kind} {value}")

    def _end(self, kind: str, **value: object) -> None:
        self.rec.event(NEMESIS, FAULT, {"kind": kind, "phase": "stop", **value}, type_="ok")

    def run(self) -> None:
        """The schedule, in order; a fault that fails is recorded and the run goes on."""
        t0 = self.rec.now()
        for fault in sorted(self.plan, key=lambda f: f.at):
            if self.stop.wait(max(0.0, fault.at - (self.rec.now() - t0) / 1e9)):
                return
            try:
                self._apply(fault)
            except Exception as exc:  # noqa: BLE001 - recorded; heal-all still runs at the end
                self.errors.append(f"{fault.kind} at {fault.at}s: {type(exc).__name__}: {exc}")
                self.log(f"nemesis: {fault.kind} failed: {exc}")

    def _apply(self, fault: Fault) -> None:
        if fault.kind == "kill-leader":
            topic = self.scenario.topics[0]
            node = partition_leader(self._admin, topic, 0)
            self._start("kill", node=node, role=f"leader of {topic}-0")
            self.cluster.kill(node)
            self.stop.wait(fault.duration)
            self.cluster.restart(node)
            self._end("kill", node=node)
        elif fault.kind == "kill-workload":
            for name in self.sup.of_kind(fault.workload or ""):
                self._start("kill-workload", workload=name)
                self.sup.kill(name)
            self.stop.wait(fault.duration)
            for name in self.sup.of_kind(fault.workload or ""):
                self.sup.restart(name)
                self._end("kill-workload", workload=name)
        elif fault.kind == "drop-responses":
            while not self.stop.is_set():
                links = [f"client-to-n{n}" for n in self.cluster.topology.node_ids]
                self._start("drop-responses", links=links)
                for link in links:
                    self.cluster.toxiproxy.add_toxic(link, "timeout", {"timeout": 0}, name="drop_responses")
                self.stop.wait(fault.duration)
                for link in links:
                    self.cluster.toxiproxy.remove_toxic(link, "drop_responses")
                self._end("drop-responses", links=links)
                if not fault.every or self.stop.wait(max(0.0, fault.every - fault.duration)):
                    return

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


def heal_all(cluster: Cluster, log: Log) -> list[str]:
    """Remove every toxic, re-enable every proxy, resume and restart every node, wait until healthy.
    Returns what could not be healed (empty = healed)."""
    problems: list[str] = []
    try:
        cluster.toxiproxy.reset()
    except Exception as exc:  # noqa: BLE001
        problems.append(f"toxiproxy reset: {exc}")
    for n in cluster.topology.node_ids:
        try:
            state = cluster.node_state(n)
            if state is NodeState.PAUSED:
                cluster.resume(n)
            elif state is NodeState.DOWN:
                log(f"heal: restarting node {n}")
                cluster.restart(n)
        except Exception as exc:  # noqa: BLE001
            problems.append(f"node {n}: {exc}")
    try:
        left = cluster.toxiproxy.unhealed()
        if left:
            problems.append(f"still faulted links: {left}")
        cluster.wait_healthy()
    except Exception as exc:  # noqa: BLE001
        problems.append(f"health: {exc}")
    return problems
