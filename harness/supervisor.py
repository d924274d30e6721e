"""Workload processes: start each as its own OS process, kill -9 / freeze / restart them on the
nemesis's say, and stop them all at the end (SIGTERM, then SIGKILL after a deadline). They carry
the cluster's process tags, so a crashed harness's workloads are reclaimed like its brokers.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Callable

from clusters import procs
from harness.workloads.common import WorkloadConfig

MODULES = {"txn-producer": "txn_producer", "reader": "reader", "copier": "copier", "zombie": "zombie"}
#: A workload acts on SIGTERM after the operation in hand: a commit can take up to 3 x 30 s of
#: retries under faults (workloads/common.py); after that it is killed.
STOP_TIMEOUT_S = 120.0
Log = Callable[[str], None]


class Supervisor:
    def __init__(self, run_dir: Path, env: dict[str, str], log: Log) -> None:
        self.run_dir = run_dir
        self.env = env
        self.log = log
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.kinds: dict[str, str] = {}
        self.configs: dict[str, WorkloadConfig] = {}

    def register(self, kind: str, cfg: WorkloadConfig) -> None:
        """Known but not started yet (the zombie's second instance, started by the nemesis)."""
        self.kinds[cfg.name], self.configs[cfg.name] = kind, cfg

    def start(self, kind: str, cfg: WorkloadConfig) -> None:
        path = self.run_dir / "workloads" / f"{cfg.name}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(cfg), indent=2))
        cmd = [sys.executable, "-m", f"harness.workloads.{MODULES[kind]}", str(path)]
        self.procs[cfg.name] = procs.spawn(cmd, self.run_dir / "workloads" / f"{cfg.name}.log", cwd=Path.cwd(), env=self.env)
        self.kinds[cfg.name], self.configs[cfg.name] = kind, cfg

    def of_kind(self, kind: str) -> list[str]:
        return [n for n, k in self.kinds.items() if k == kind]

    def alive(self, name: str) -> bool:
        return name in self.procs and self.procs[name].poll() is None

    def kill(self, name: str) -> None:
        p = self.procs[name]
        if p.poll() is None:
            p.send_signal(signal.SIGCONT)  # a frozen process must be able to die
            p.kill()
        p.wait(timeout=procs.KILL_WAIT_S)

    def restart(self, name: str) -> None:
        if self.alive(name):
            self.kill(name)
        self.start(self.kinds[name], self.configs[name])

    def pause(self, name: str) -> None:
        os.kill(self.procs[name].pid, signal.SIGSTOP)

    def resume(self, name: str) -> None:
        os.kill(self.procs[name].pid, signal.SIGCONT)

    def wait(self, name: str, timeout: float) -> int:
        return self.procs[name].wait(timeout=timeout)

    def stop_all(self) -> list[str]:
        """SIGTERM everyone (resumed first), wait, SIGKILL stragglers. Returns who had to be killed."""
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGCONT)
                p.terminate()
        killed = []
        for name, p in self.procs.items():
            try:
                p.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.log(f"workload {name} ignored SIGTERM for {STOP_TIMEOUT_S:.0f}s; killing it")
                p.kill()
                p.wait(timeout=procs.KILL_WAIT_S)
                killed.append(name)
        return killed
