"""Workload processes: start each as its own OS process, kill -9 / freeze / restart them on the
nemesis's say, and stop them all at the end (SIGTERM, then SIGKILL after a deadline). They carry
the cluster's process tags, so a crashed harness's workloads are reclaimed like its brokers.
"""

from __future__ import annotations

import logging
import json
import os
import signal
import subprocess
import sys
import threading
from dataclasses import asdict
from pathlib import Path

from clusters import procs
from harness import lifeline
from harness.workloads.common import WorkloadConfig

log = logging.getLogger(__name__)

MODULES = {"txn-producer": "harness.workloads.txn_producer", "reader": "harness.workloads.reader",
           "copier": "harness.workloads.copier", "zombie": "harness.workloads.zombie", "spark-job": "harness.spark.job"}
#: Kinds the supervisor restarts whenever their process dies (the Spark driver: from its checkpoint).
RESTARTED = ("spark-job",)
#: How often the keeper looks for a dead driver; a restart takes ~20 s of JVM start anyway.
KEEPER_INTERVAL_S = 0.5
#: A workload acts on SIGTERM after the operation in hand: a commit can take up to 3 x 30 s of
#: retries under faults (workloads/common.py); after that it is killed.
STOP_TIMEOUT_S = 120.0


class Supervisor:
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

    def register(self, kind: str, cfg: WorkloadConfig) -> None:
        """Known but not started yet (the zombie's second instance, started by the nemesis)."""
        self.kinds[cfg.name], self.configs[cfg.name] = kind, cfg

    def start(self, kind: str, cfg: WorkloadConfig) -> None:
        path = self.run_dir / "workloads" / f"{cfg.name}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(cfg), indent=2))
        cmd = [sys.executable, "-m", MODULES[kind], str(path)]
        line = lifeline.handoff()  # the workload stops by itself when this process dies, even by SIGKILL
        self.procs[cfg.name] = procs.spawn(cmd, self.run_dir / "workloads" / f"{cfg.name}.log", cwd=Path.cwd(),
                                           env={**self.env, **line.env}, pass_fds=line.pass_fds)
        self.kinds[cfg.name], self.configs[cfg.name] = kind, cfg

    def of_kind(self, kind: str) -> list[str]:
        return [n for n, k in self.kinds.items() if k == kind]

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

    def resume_zombie(self, old: subprocess.Popen[bytes]) -> None:
        """Resume an older incarnation ``new_incarnation`` returned."""
        _signal_group(old, signal.SIGCONT)

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

    def wait(self, name: str, timeout: float) -> int:
        return self.procs[name].wait(timeout=timeout)

    def stop_all(self) -> list[str]:
        """SIGTERM everyone (resumed first), wait, SIGKILL stragglers; zombies are killed. Returns
        who had to be killed."""
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
            for p in self.procs.values():
                if p.poll() is None:
                    _signal_group(p, signal.SIGCONT)
                    p.terminate()
            for name, p in self.procs.items():
                try:
                    p.wait(timeout=STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    log.info(f"workload {name} ignored SIGTERM for {STOP_TIMEOUT_S:.0f}s; killing it")
                    killed.append(name)
                _kill_group(p)  # the process and anything it started (a driver's JVM)
        return killed


def _signal_group(p: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    """Signal the process group ``p`` leads (``procs.spawn`` gives each workload its own)."""
    try:
        os.killpg(p.pid, sig)
    except ProcessLookupError:
        pass


def _kill_group(p: subprocess.Popen[bytes]) -> None:
    """SIGKILL ``p``'s whole group (resumed first: a frozen process must be able to die) and reap ``p``."""
    _signal_group(p, signal.SIGCONT)
    _signal_group(p, signal.SIGKILL)
    p.wait(timeout=procs.KILL_WAIT_S)
