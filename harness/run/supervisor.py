"""Workload processes: start each as its own OS process, kill -9 / freeze / restart them on the
nemesis's say, and stop them all at the end (SIGTERM, then SIGKILL after a deadline). They carry
the cluster's process tags, so a crashed harness's workloads are reclaimed like its brokers.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from chaos.control import DriverAction, Incarnation
from clusters.backends import procs
from harness.base import lifeline
from harness.base.errors import WaitTimeout
from harness.base.wait import wait_until
from harness.history.model import among_producers_of
from harness.phases import table
from harness.phases.kind_run import KindRun
from harness.rundir.runfolder import RunFolder, write_json
from harness.workloads import registry
from harness.workloads.common import WorkloadConfig

log = logging.getLogger(__name__)

MODULES = registry.modules()
#: Kinds the supervisor restarts whenever their process dies (the Spark driver: from its checkpoint).
RESTARTED = registry.restarted()
#: How often the keeper looks for a dead driver; a restart takes ~20 s of JVM start anyway.
KEEPER_INTERVAL_S = 0.5
#: A workload acts on SIGTERM after the operation in hand: a commit can take up to 3 x 30 s of
#: retries under faults (workloads/common.py); after that it is killed.
STOP_TIMEOUT_S = 120.0
#: An armed driver fault fires at the job's next micro-batch: after a restart that is the JVM start
#: plus the replayed batch (~20-40 s here, under load); generous because faults may slow it.
DRIVER_ARMED_TIMEOUT_S = 180.0
#: A restarted driver's first micro-batch (its replay) before the run may end: JVM and application
#: start, on a standalone cluster its executors too, then the batch; 20-60 s seen on a loaded 2-core
#: machine (CI); generous, since a run cut short before the replay judges nothing about it.
RECOVERY_TIMEOUT_S = 240.0
#: A resumed zombie driver's next Kafka call is fenced and the driver exits: seconds.
ZOMBIE_DRIVER_EXIT_TIMEOUT_S = 120.0
#: The zombie's first instance announces itself within seconds of starting (one init + 3 sends).
ZOMBIE_READY_TIMEOUT_S = 120.0
#: What an armed driver does to itself (harness/sparkjob/job.py's SIGNALS).
DRIVER_SIGNALS: dict[DriverAction, str] = {"kill": "kill", "freeze": "stop"}


class Supervisor:
    """The workload processes of one run; implements ``chaos.control.WorkloadControl``."""

    def __init__(self, run_dir: Path, env: dict[str, str]) -> None:
        self.run_dir = run_dir
        self.env = env
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.kinds: dict[str, str] = {}
        self.configs: dict[str, WorkloadConfig] = {}
        #: older incarnations still alive while a newer one runs (a frozen Spark driver): they get
        #: resumed and must die by themselves (fenced); stop_all kills what is left
        self.zombies: dict[str, list[subprocess.Popen[bytes]]] = {}
        self._stopping = threading.Event()
        self._lock = threading.RLock()
        self._keeper: threading.Thread | None = None
        self._armed: dict[str, str] = {}  # driver name -> the window its armed fault waits for
        self.restarted: set[str] = set()  # restarted by the keeper: the run waits for their recovery
        self._pending: set[str] = set()  # armed to kill itself, not yet restarted: the run waits for it
        #: how each stopped process ended (``stop_all``): an app's wrapper says whether the app was killed
        self.exit_codes: dict[str, int | None] = {}

    def register(self, kind: str, cfg: WorkloadConfig) -> None:
        """Known but not started yet (the zombie's second instance, started by the nemesis)."""
        self.kinds[cfg.name], self.configs[cfg.name] = kind, cfg

    def start(self, kind: str, cfg: WorkloadConfig) -> None:
        path = RunFolder(self.run_dir).workloads / f"{cfg.name}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(cfg), indent=2))
        cmd = [sys.executable, "-m", MODULES[kind], str(path)]
        line = lifeline.handoff()  # the workload stops by itself when this process dies, even by SIGKILL
        self.procs[cfg.name] = procs.spawn(cmd, self.log_of(cfg.name), cwd=Path.cwd(),
                                           env={**self.env, **line.env}, pass_fds=line.pass_fds)
        self.kinds[cfg.name], self.configs[cfg.name] = kind, cfg

    def log_of(self, name: str) -> Path:
        """Where a workload process's output goes (its log)."""
        return RunFolder(self.run_dir).workloads / f"{name}.log"

    def of_kind(self, kind: str) -> list[str]:
        return [n for n, k in self.kinds.items() if k == kind]

    def _of(self, name: str) -> type[KindRun]:
        """The phases of process ``name``'s kind (harness/phases/): where its kind keeps what a fault needs."""
        return table.of(self.kinds[name])

    def using_transactional_id(self, transactional_id: str) -> list[str]:
        # one of a process's producers (``producers: N``) uses it if it is the process's first id or beside it
        return [n for n in self.kinds
                if (own := self._of(n).transactional_id(n)) is not None and among_producers_of(transactional_id, own)]

    def alive(self, name: str) -> bool:
        return name in self.procs and self.procs[name].poll() is None

    def kill(self, name: str) -> None:
        with self._lock:
            _kill_group(self.procs[name])

    def restart(self, name: str) -> None:
        with self._lock:
            _kill_group(self.procs[name])  # the process, or what its dead leader left (a driver's JVM)
            self.start(self.kinds[name], self.configs[name])

    def pause(self, name: str) -> None:
        _signal_group(self.procs[name], signal.SIGSTOP)

    def resume(self, name: str) -> None:
        _signal_group(self.procs[name], signal.SIGCONT)

    def restarts_itself(self, name: str) -> bool:
        return self.kinds[name] in RESTARTED

    def start_registered(self, name: str) -> None:
        self.start(self.kinds[name], self.configs[name])

    def arm_driver(self, name: str, window: str, action: DriverAction) -> int:
        arm = self._of(name).driver_arm(self.run_dir, name)
        write_json(arm, {"window": window, "signal": DRIVER_SIGNALS[action]})  # the job reads it whole or not at all
        self._armed[name] = window
        self._pending.add(name)
        return self.procs[name].pid

    def await_driver_fault(self, name: str, action: DriverAction, stop: threading.Event) -> bool:
        proc, arm = self.procs[name], self._of(name).driver_arm(self.run_dir, name)

        def fired() -> bool:
            return proc.poll() is not None if action == "kill" else procs.stopped(proc.pid)

        try:
            wait_until(lambda: fired() or stop.is_set(), timeout=DRIVER_ARMED_TIMEOUT_S,
                       what=f"{name} (pid {proc.pid}) to reach the {self._armed.get(name)} window of a micro-batch and "
                            f"{'die' if action == 'kill' else 'freeze'} there",
                       state=lambda: f"process alive: {proc.poll() is None}, armed: {arm.exists()}")
        finally:
            arm.unlink(missing_ok=True)  # never left armed for a later incarnation
            if action != "kill" or not fired():
                self._pending.discard(name)  # a killed driver stays pending until the keeper restarts it
        return fired()

    def arm_executor(self, name: str, action: DriverAction) -> None:
        write_json(self._of(name).executor_arm(self.run_dir, name), {"signal": DRIVER_SIGNALS[action]})

    def await_executor_fault(self, name: str, stop: threading.Event) -> dict[str, Any] | None:
        arm = self._of(name).executor_arm(self.run_dir, name)
        d = arm.parent
        before = set(d.glob("fired-executor-*.json"))

        def fired() -> dict[str, Any] | None:
            for f in set(d.glob("fired-executor-*.json")) - before:
                try:
                    info = json.loads(f.read_text())
                except ValueError:
                    continue  # the task is writing it
                if isinstance(info, dict) and "executor_pid" in info:
                    return info
            return None

        try:
            wait_until(lambda: fired() is not None or stop.is_set(), timeout=DRIVER_ARMED_TIMEOUT_S,
                       what=f"a task of {name} to get inside its transaction and take the armed executor fault",
                       state=lambda: f"armed: {arm.exists()}, driver alive: {self.alive(name)}")
            return fired()
        finally:
            arm.unlink(missing_ok=True)  # never left armed for a later batch

    def end_zombie(self, name: str, old: Incarnation) -> None:
        zombie = next(p for p in self.zombies.get(name, []) if p is old)
        _signal_group(zombie, signal.SIGCONT)
        wait_until(lambda: zombie.poll() is not None, timeout=ZOMBIE_DRIVER_EXIT_TIMEOUT_S,
                   what=f"the resumed old driver of {name} (pid {zombie.pid}) to be fenced and exit",
                   state=lambda: f"alive: {zombie.poll() is None}")

    def _staged_files(self, name: str) -> tuple[Path, Path]:
        files = self._of(name).staged_files(self.run_dir)
        if files is None:
            raise ValueError(f"{name}: its kind has no staged start")
        return files

    def await_zombie_ready(self, name: str) -> None:
        ready, _ = self._staged_files(name)
        wait_until(lambda: ready.exists() or not self.alive(name), timeout=ZOMBIE_READY_TIMEOUT_S,
                   what=f"zombie {name} to open its transaction ({ready})",
                   state=lambda: f"alive: {self.alive(name)}")

    def release_zombie(self) -> None:
        gos = {files[1] for name in self.kinds if (files := self._of(name).staged_files(self.run_dir)) is not None}
        for go in gos:
            go.write_text("go")

    def new_incarnation(self, name: str) -> subprocess.Popen[bytes]:
        """Start a new process of ``name`` while the current one lives on (frozen): the current one
        becomes a zombie and is returned; the keeper now watches the new one."""
        with self._lock:
            old = self.procs[name]
            self.zombies.setdefault(name, []).append(old)
            self.start(self.kinds[name], self.configs[name])
            return old

    def keep_restarting(self) -> None:
        """Restart every process of a kind in ``RESTARTED`` that dies, until ``stop_all``."""
        if self._keeper is None and any(k in RESTARTED for k in self.kinds.values()):
            self._keeper = threading.Thread(target=self._keep, name="keeper", daemon=True)
            self._keeper.start()

    def _keep(self) -> None:
        while not self._stopping.wait(KEEPER_INTERVAL_S):
            with self._lock:
                if self._stopping.is_set():
                    return
                for name, kind in list(self.kinds.items()):
                    p = self.procs.get(name)
                    if kind in RESTARTED and p is not None and p.poll() is not None:
                        log.info(f"{name} exited ({p.returncode}); restarting it from its checkpoint")
                        self.restart(name)
                        self.restarted.add(name)
                        self._pending.discard(name)

    def await_recovered(self, timeout: float = RECOVERY_TIMEOUT_S) -> list[str]:
        """Wait until every armed driver kill has fired (or its wait gave up) and every driver the
        keeper restarted has finished a micro-batch in its current process: a run that ends before
        the replay cannot judge it. Returns those that did not, each with the last state seen."""
        missing: list[str] = []
        if self._pending:
            # an armed kill fires at the driver's next micro-batch, which a slow start may put after
            # the scenario's duration: the run goes on until it fired (or the nemesis gave up)
            log.info(f"waiting for the armed driver faults of {sorted(self._pending)} to fire before the run ends")
            try:
                wait_until(lambda: not self._pending, timeout=DRIVER_ARMED_TIMEOUT_S + KEEPER_INTERVAL_S * 10,
                           what=f"the armed driver faults of {sorted(self._pending)} to fire and the drivers to restart",
                           state=lambda: f"pending: {sorted(self._pending)}, alive: "
                                         f"{ {n: self.alive(n) for n in self._pending} }")
            except WaitTimeout as exc:
                log.info(str(exc))
                missing += [f"{n}: its armed fault neither fired nor gave up" for n in sorted(self._pending)]
        deadline = time.monotonic() + timeout
        for name in sorted(self.restarted):
            progress = self.progress_file(name)

            def state(name: str = name, progress: Path | None = progress) -> str:
                p = self.procs[name]
                last = f", last batch: {_read_json(progress)}" if progress is not None else ""
                return f"driver pid {p.pid} alive: {p.poll() is None}{last}"

            def recovered(name: str = name, progress: Path | None = progress) -> bool:
                if progress is None:
                    return self.alive(name)
                last = _read_json(progress)
                return last is not None and last.get("pid") == self.procs[name].pid

            log.info(f"waiting for the restarted {name} to finish a micro-batch before the run ends")
            try:
                wait_until(recovered, timeout=max(0.0, deadline - time.monotonic()),
                           what=f"the restarted {name} to finish a micro-batch ({progress or 'alive'})", state=state)
            except WaitTimeout as exc:
                log.info(str(exc))
                missing.append(f"{name}: {state()}")
        return missing

    def progress_file(self, name: str) -> Path | None:
        """Where process ``name`` says it made progress (its kind's ``progress_file``), if its kind says."""
        pattern = registry.kind(self.kinds[name]).progress_file
        return self.run_dir / pattern.format(name=name) if pattern else None

    def wait(self, name: str, timeout: float) -> int:
        return self.procs[name].wait(timeout=timeout)

    def stop_all(self, keep: tuple[str, ...] = ()) -> list[str]:
        """SIGTERM everyone but ``keep`` (resumed first), wait, SIGKILL stragglers; zombies are
        killed. Returns who had to be killed. With ``keep`` (an app under test and its reader, which
        drain after heal), the restart keeper stops too; a later ``stop_all()`` stops the rest."""
        self._stopping.set()
        if self._keeper is not None:
            self._keeper.join(timeout=STOP_TIMEOUT_S)
        killed = []
        with self._lock:
            for name, olds in self.zombies.items():
                for old in olds:
                    if old.poll() is None:
                        killed.append(f"{name} (pid {old.pid}, an older incarnation)")
                    _kill_group(old)
            self.zombies.clear()
            stopping = {n: p for n, p in self.procs.items() if n not in keep}
            for p in stopping.values():
                if p.poll() is None:
                    _signal_group(p, signal.SIGCONT)
                    p.terminate()
            for name, p in stopping.items():
                try:
                    p.wait(timeout=STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    log.info(f"workload {name} ignored SIGTERM for {STOP_TIMEOUT_S:.0f}s; killing it")
                    killed.append(name)
                _kill_group(p)  # the process and anything it started (a driver's JVM)
                self.exit_codes[name] = p.returncode
        return killed


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        return dict(json.loads(path.read_text()))
    except (FileNotFoundError, ValueError):
        return None


def _signal_group(p: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    """Signal the process group ``p`` leads (``procs.spawn`` gives each workload its own)."""
    try:
        os.killpg(p.pid, sig)
    except ProcessLookupError:
        pass


def _kill_group(p: subprocess.Popen[bytes]) -> None:
    """SIGKILL ``p``'s whole group and reap ``p``. A frozen process dies of it as it is (no SIGCONT
    first: one frozen for an in-transaction kill must not run on, even for a moment, and end its
    transaction before it dies)."""
    _signal_group(p, signal.SIGKILL)
    p.wait(timeout=procs.KILL_WAIT_S)
