"""The nemesis: a scheduler of faults. Each fault of the plan starts at its time in a thread of its
own (``apply``), stays on for its ``duration`` (or until the run ends), and is healed; each start and
stop is recorded in the history (``process: nemesis``, ``f: fault``, ``type: info`` start / ``ok``
stop) with its resolved target. What a fault does is its model's business (chaos/faults/).

A fault aimed at workload processes first waits, in its own thread (the schedule of the others does
not move), until one of them made progress since the previous fault on it ended (``Progress``: a
transaction, a copy, a micro-batch, an app's output), at most ``PROGRESS_TIMEOUT_S`` (more on a
machine where the workloads were slow to get ready: ``Nemesis.pace``); its start
event says how long it waited (``waited_s``) and whether it gave up (``wait_expired``), and it
begins either way.
"""

from __future__ import annotations

import functools
import logging
import random
import threading
import time
from collections.abc import Mapping, Sequence
from contextlib import nullcontext

from confluent_kafka.admin import AdminClient

from chaos import targets
from chaos.control import Progress, SparkControl, WorkloadControl
from chaos.faults import Fault, FaultContext
from chaos.targets import TargetDefaults
from clusters.backends.protocol import Cluster
from clusters.kafka.health import admin_client
from harness.base.errors import WaitTimeout
from harness.base.wait import wait_until
from harness.history.model import FAULT, NEMESIS
from harness.history.recorder import Recorder

log = logging.getLogger(__name__)

#: Roles need their `of` (a run's defaults come from its scenario: Scenario.target_defaults()).
NO_DEFAULTS = TargetDefaults()

#: A fault asked to end (run over) finishes its current step: a node restart (~10-60 s) at worst.
FAULT_END_TIMEOUT_S = 240.0

#: A fault due before the run's end may wait for the one before it (broker faults never overlap):
#: a node restart took 30+ s on a loaded 2-core machine. The run waits this long for it to begin.
FAULT_BEGIN_TIMEOUT_S = 240.0

#: A fault aimed at a workload waits this long at most for it to make progress since the previous
#: fault on it (a Spark driver restarted from its checkpoint took 26-33 s to its first micro-batch;
#: generous for a loaded 2-core machine), then begins anyway, its start event saying so. A machine
#: slower than that gets more (``Nemesis.pace``).
PROGRESS_TIMEOUT_S = 120.0
#: ... at least this many times the slowest workload's measured time to its first progress op (its
#: readiness): a restarted Spark driver repeats its JVM, session and first micro-batch, which a
#: starved machine made 121 s at readiness and then over 120 s after a kill (a fault that began on
#: a stuck workload, UNKNOWN, though nothing was wrong but the machine's speed).
PROGRESS_PER_READY = 2.0

#: The second instance's init_transactions must wait out the first's open transaction being
#: aborted by the coordinator (it is fenced at once): seconds; generous for a loaded machine.
ZOMBIE_SECOND_TIMEOUT_S = 180.0


def _label(kind: str, value: dict[str, object]) -> str:
    """A short name of an active fault for the progress display: ``partition leader (9 links)``."""
    parts = [kind] + [str(value[k]) for k in ("target", "node", "workload") if value.get(k) is not None]
    links = value.get("links")
    if isinstance(links, list):
        parts.append(links[0] if len(links) == 1 else f"({len(links)} links)")
    return " ".join(parts)


class Nemesis:
    def __init__(self, cluster: Cluster, control: WorkloadControl, rec: Recorder, plan: Sequence[Fault] = (),
                 seed: int = 0, defaults: TargetDefaults = NO_DEFAULTS, spark: SparkControl | None = None,
                 progress: Progress | None = None) -> None:
        self.rnd = random.Random(f"{seed}/nemesis")  # "random" targets: reproducible per seed
        self.plan = list(plan)
        self.cluster = cluster
        self.control = control
        self.spark = spark
        self.rec = rec
        self.defaults = defaults
        self.stop = threading.Event()
        self.faults = 0
        self.errors: list[str] = []
        self._active: dict[int, str] = {}  # faults started and not yet stopped (progress display)
        self._active_lock = threading.Lock()
        # Process faults on brokers never overlap: a node still restarting from one kill must not be
        # killed (or paused, restarted) by the next. Network and workload faults overlap freely.
        self._process_lock = threading.Lock()
        #: per fault whose time came: set once it began (or failed, or gave up); ``await_begun``
        self._begun: list[tuple[Fault, threading.Event]] = []
        #: None: faults aimed at workloads begin at their time, whatever the workloads did
        self.progress = progress
        #: when the schedule began (history ns): the first fault on a workload wants progress since then
        self._t0 = 0
        #: per workload process: when the last fault on it ended, and the faults due on it, in turn
        self._ended_on: dict[str, int] = {}
        self._queue: dict[str, list[object]] = {}
        self._queue_lock = threading.Lock()
        #: per fault (its ``begun``) waiting for its workloads' progress: what it waits for (``await_begun``)
        self._waiting: dict[int, str] = {}
        #: how long a fault waits for progress of the workloads it aims at (``pace``)
        self.progress_timeout_s = PROGRESS_TIMEOUT_S
        #: seconds the run should last past its duration: the most a blocking fault went past its
        #: budget (``extend_run``; the runner reads it while it waits)
        self.extended_s = 0.0
        #: when the first fault started and the latest ended, on the history's clock (ns); None: not yet
        self.first_start_ns: int | None = None
        self.last_end_ns: int | None = None

    def pace(self, ready_s: Mapping[str, float]) -> float:
        """Scale the waits for progress to this machine from the workloads' measured readiness (the
        seconds each took to its first progress op): at least ``PROGRESS_PER_READY`` times the
        slowest. Returns the wait for progress now in force."""
        slowest = max(ready_s.values(), default=0.0)
        self.progress_timeout_s = max(PROGRESS_TIMEOUT_S, PROGRESS_PER_READY * slowest)
        if self.progress_timeout_s > PROGRESS_TIMEOUT_S:
            log.info(f"nemesis: a fault waits up to {self.progress_timeout_s:.0f}s for its workloads' progress "
                     f"({PROGRESS_PER_READY:g} x the slowest readiness, {slowest:.0f}s)")
        return self.progress_timeout_s

    @functools.cached_property
    def _admin(self) -> AdminClient:
        """Asked for roles over DIRECT; made on first use (runs without role targets never connect)."""
        return admin_client(self.cluster.direct_bootstrap)

    def active_faults(self) -> list[str]:
        """Labels of the faults started and not yet stopped (the progress display)."""
        with self._active_lock:
            return list(self._active.values())

    def planned_to_end_by(self, seconds: float) -> bool:
        """Whether the schedule planned every fault to have ended ``seconds`` into it: none repeats,
        and each one's ``at + duration`` is within. A fault still on after that is late (a broker's
        slow restart), not one the scenario meant to last until the heal."""
        return all(not f.every and f.at + f.duration <= seconds for f in self.plan)

    def _start(self, kind: str, **value: object) -> None:
        self.faults += 1
        self.rec.event(NEMESIS, FAULT, {"kind": kind, "phase": "start", **value}, type_="info")
        if self.first_start_ns is None:
            self.first_start_ns = self.rec.now()
        log.info(f"nemesis: {kind} {value}")
        with self._active_lock:
            self._active[self._key(kind, value)] = _label(kind, value)

    def _end(self, kind: str, **value: object) -> None:
        self.rec.event(NEMESIS, FAULT, {"kind": kind, "phase": "stop", **value}, type_="ok")
        self.last_end_ns = self.rec.now()
        with self._active_lock:
            self._active.pop(self._key(kind, value), None)

    @staticmethod
    def _key(kind: str, value: dict[str, object]) -> int:
        # start and stop of one fault share kind and node/links/workload (stop carries no target)
        return hash((kind, str(value.get("node")), str(value.get("links")), str(value.get("workload"))))

    def _context(self, noted: dict[str, object] | None = None, begun: threading.Event | None = None) -> FaultContext:
        """The context a fault acts through; ``noted``: fields its start events carry (its wait);
        ``begun`` is set once its first start event is recorded."""
        def start(kind: str, **value: object) -> None:
            self._start(kind, **{**(noted or {}), **value})
            if begun is not None:
                begun.set()

        return FaultContext(cluster=self.cluster, resolve=self.resolve, control=self.control,
                            start=start if noted or begun is not None else self._start, end=self._end, stop=self.stop,
                            rnd=self.rnd, spark=self.spark, defaults=self.defaults, extend_run=self.extend_run)

    def extend_run(self, seconds: float) -> None:
        """The run lasts ``seconds`` past its duration (the largest any fault asked for)."""
        if seconds > self.extended_s:
            self.extended_s = seconds

    def run(self) -> None:
        """Returns once every started fault has ended (``stop`` ends them early). Each fault starts
        at its time, in a thread of its own, so faults whose windows overlap are on together; a
        fault that fails is recorded and the run goes on."""
        t0 = self._t0 = self.rec.now()
        running: list[threading.Thread] = []
        try:
            for fault in sorted(self.plan, key=lambda f: f.at):
                if self.stop.wait(max(0.0, fault.at - (self.rec.now() - t0) / 1e9)):
                    return
                begun = threading.Event()
                self._begun.append((fault, begun))
                th = threading.Thread(target=self._guarded, args=(fault, begun), name=f"fault-{fault.kind}@{fault.at}",
                                      daemon=True)
                th.start()
                running.append(th)
        finally:
            # a fault longer than FAULT_END_TIMEOUT_S is not late while its own duration runs: its
            # deadline counts from when the run asks every fault to end (``stop``), or from the
            # moment all of them ended by themselves
            while any(th.is_alive() for th in running) and not self.stop.wait(0.2):
                pass
            for th in running:
                th.join(timeout=FAULT_END_TIMEOUT_S)
                if th.is_alive():
                    self.errors.append(f"{th.name} did not end within {FAULT_END_TIMEOUT_S:.0f}s of being asked to")

    def start_now(self, fault: Fault, applied: threading.Event | None = None) -> threading.Thread:
        """The thread applying ``fault`` from now on (a test's ``nemesis`` fixture): it ends after
        its duration, or when ``stop`` is set; a failure lands in ``errors``. ``applied`` is set once
        the fault's action is in place (its ``apply`` returned)."""
        th = threading.Thread(target=self._guarded, args=(fault, None, applied), name=f"fault-{fault.kind}",
                              daemon=True)
        th.start()
        return th

    def await_begun(self, timeout: float | None = None) -> None:
        """Wait until every fault whose time has come began: one may be waiting for the node fault
        before it to heal (a slow restart), or for its workloads' progress. A fault that never does
        is an error of the run, not silently left out (its scenario was not what ran). ``timeout``:
        ``FAULT_BEGIN_TIMEOUT_S``, or twice the wait for progress in force when that is longer."""
        if timeout is None:
            timeout = max(FAULT_BEGIN_TIMEOUT_S, 2 * self.progress_timeout_s)
        deadline = time.monotonic() + timeout
        for fault, begun in list(self._begun):
            if not begun.is_set():
                log.info(f"nemesis: waiting for {fault.kind}@{fault.at}s to begin before the run ends "
                         f"({self._why_late(begun)})")
            if not begun.wait(max(0.0, deadline - time.monotonic())):
                self.errors.append(f"{fault.kind} at {fault.at}s: had not begun {timeout:.0f}s after the run's "
                                   f"duration ({self._why_late(begun)})")

    def _why_late(self, begun: threading.Event) -> str:
        return self._waiting.get(id(begun)) or "the node fault before it was still healing"

    def _guarded(self, fault: Fault, begun: threading.Event | None = None,
                 applied: threading.Event | None = None) -> None:
        try:
            self._apply(fault, begun, applied)
        except Exception as exc:  # noqa: BLE001 - recorded; heal-all still runs at the end
            self.errors.append(f"{fault.kind} at {fault.at}s: {type(exc).__name__}: {exc}")
            log.info(f"nemesis: {fault.kind} failed: {exc}")
        finally:
            if begun is not None:
                begun.set()

    def _apply(self, fault: Fault, begun: threading.Event | None = None,
               applied: threading.Event | None = None) -> None:
        """One fault, healed after ``fault.duration``; again every ``fault.every`` seconds if set."""
        while not self.stop.is_set():
            started = time.monotonic()
            self._once(fault, begun, applied)
            if not fault.every or self.stop.wait(max(0.0, fault.every - (time.monotonic() - started))):
                return

    def _once(self, fault: Fault, begun: threading.Event | None = None,
              applied: threading.Event | None = None) -> None:
        # a scheduled fault (``begun``) on workloads first waits for them to make progress
        names = fault.workloads(self.control) if begun is not None and self.progress is not None else []
        ticket = object()
        self._queue_up(names, ticket)
        try:
            noted = self._await_progress(fault, names, ticket, begun) if names else {}
            with self._process_lock if fault.broker_process else nullcontext():
                if self.stop.is_set():  # the run may have ended while this fault waited its turn
                    return
                # begun once its start is on record, which an armed driver fault writes after arming
                # the driver: a run ending at that moment then waits for the kill to fire
                # (Supervisor.await_recovered), where it used to stop the fault before it fired
                heal = fault.apply(self._context(noted, begun))
                if begun is not None:
                    begun.set()  # a fault that records no start (nothing to hit) began all the same
                if applied is not None:
                    applied.set()
                if fault.holds:
                    self.stop.wait(fault.duration)
                heal()
        finally:
            self._leave(names, ticket)

    def _queue_up(self, names: list[str], ticket: object) -> None:
        """Faults on a workload process take their turns: one due while an earlier one on it is still
        waiting or on waits for it to end (and then for progress since)."""
        with self._queue_lock:
            for n in names:
                self._queue.setdefault(n, []).append(ticket)

    def _leave(self, names: list[str], ticket: object) -> None:
        """The fault ``ticket`` on ``names`` ended: the next one on them wants progress since now."""
        now = self.rec.now()
        with self._queue_lock:
            for n in names:
                self._queue[n].remove(ticket)
                self._ended_on[n] = now

    def _await_progress(self, fault: Fault, names: list[str], ticket: object,
                        begun: threading.Event | None) -> dict[str, object]:
        """Wait until the faults on ``names`` due before this one ended, and then until one of them
        that is alive (or restarting itself) finished a progress op since the last fault on it ended
        (the schedule's start for the first); at most ``PROGRESS_TIMEOUT_S``, or until the run
        stops. What the fault's start events say of it: ``waited_s``, and ``wait_expired`` when the
        deadline passed. Kinds that show no progress (a reader) are not waited for."""
        progress = self.progress
        assert progress is not None  # callers check
        measured = [n for n in names if progress.finished_since(n, 0) is not None]
        if not measured:
            return {}

        def ready() -> bool:
            with self._queue_lock:
                if any(self._queue[n][0] is not ticket for n in names):
                    return False
                since = {n: self._ended_on.get(n, self._t0) for n in measured}
            live = [n for n in measured if self.control.alive(n) or self.control.restarts_itself(n)]
            return not live or any(progress.finished_since(n, since[n]) for n in live)

        what = f"progress of {', '.join(measured)} since the last fault on it (or the schedule's start)"
        if begun is not None:
            self._waiting[id(begun)] = f"it waits for {what}"
        started = time.monotonic()
        expired = False
        try:
            wait_until(ready, timeout=self.progress_timeout_s, what=what, interval=0.1, max_interval=1.0,
                       fatal=lambda: "the run ended" if self.stop.is_set() else None)
        except WaitTimeout:
            expired = not self.stop.is_set()
        finally:
            if begun is not None:
                self._waiting.pop(id(begun), None)
        waited = round(time.monotonic() - started, 2)
        if expired:
            log.info(f"nemesis: {fault.kind}@{fault.at}s begins without {what}: none within {self.progress_timeout_s:.0f}s")
        elif waited >= 1.0:
            log.info(f"nemesis: {fault.kind}@{fault.at}s waited {waited:.1f}s for {what}")
        return {"waited_s": waited, **({"wait_expired": True} if expired else {})}

    def resolve(self, target: str | int, of: str | None = None) -> int:
        """The node a target names right now (roles asked of the cluster over DIRECT)."""
        if isinstance(target, int):
            return target
        if target == "random":
            return targets.random_node(self.rnd, self.cluster.topology.node_ids)
        if target == "leader":
            of = of or (f"{self.defaults.topic}/0" if self.defaults.topic else None)
            if of is None:
                raise LookupError("leader without `of`: no default topic to take partition 0 of")
            topic, _, part = of.rpartition("/")
            return targets.leader(self._admin, topic, int(part))
        if target == "coordinator":
            txn_id = of or self.defaults.transactional_id
            if txn_id is None:
                raise LookupError("coordinator without `of`: the run has no default transactional.id")
            if txn_id.endswith("*"):
                return self._app_coordinator(txn_id[:-1])
            return targets.transaction_coordinator(self._admin, txn_id)
        if target == "group-coordinator":
            group = of or self.defaults.group
            if group is None:
                raise LookupError("group-coordinator without `of`: the scenario has no copier group")
            return targets.group_coordinator(self._admin, group)
        if target == "controller":
            node = self.cluster.active_controller()
            if node is None:
                raise LookupError("no active controller right now (no raft leader agreed by a majority)")
            return node
        raise ValueError(f"target {target!r} names no single node")

    def _app_coordinator(self, prefix: str) -> int:
        """The coordinator of the first transactional.id starting with ``prefix`` (an app's ids). An
        app initialises its transactional producer some time after it is ready, 13 to 23 s into a
        hunt's run on a starved machine, and a fault aimed at its coordinator before that failed
        (docs/HUNT.md): it waits for one, as a fault on a workload waits for its progress, up to
        the same deadline, or until the run ends. ``WaitTimeout`` names the prefix and the last answer."""
        last = "not asked yet"

        def listed() -> tuple[int] | None:  # a tuple: node 0 is an answer
            nonlocal last
            try:
                return (targets.prefixed_transaction_coordinator(self.cluster.direct_bootstrap, prefix),)
            except LookupError as exc:
                last = str(exc)
                return None

        return wait_until(listed, timeout=self.progress_timeout_s, interval=0.5, max_interval=2.0,
                          what=f"a transactional.id starting with {prefix!r} on the cluster (its app's "
                               "transactional producer initialised)", state=lambda: last,
                          fatal=lambda: "the run ended" if self.stop.is_set() else None)[0]

    def zombie(self) -> None:
        """Freeze the zombie's first instance mid-transaction, let the second take over (fencing
        it), resume the first: Kafka must refuse its commit."""
        first, second = self.control.of_kind("zombie")
        self.control.await_zombie_ready(first)
        self._start("pause-workload", workload=first)
        self.control.pause(first)
        self.control.start_registered(second)
        self.control.wait(second, ZOMBIE_SECOND_TIMEOUT_S)
        self.control.resume(first)
        self.control.release_zombie()
        self._end("pause-workload", workload=first)

