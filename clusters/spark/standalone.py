"""A standalone Spark cluster on loopback: one master and two workers, each its own JVM, started
from the jars PySpark ships (``spark-class org.apache.spark.deploy.master.Master`` /
``...worker.Worker``). A Spark job whose master is its URL gets one executor per worker; the
workers launch them as ``CoarseGrainedExecutorBackend`` JVMs, their children.

Every JVM carries the run's process tags (clusters/backends/procs.py; the workers pass their environment on
to the executors they launch), so a crashed run's master, workers and executors are reclaimed with
its brokers. A running cluster records itself in the state folder (``spark.json``) for
``cluster status --json``.

Sized for the reference machine (2 cores shared with three brokers): one core and 1 GB per
worker, one executor per worker (``EXECUTOR_CONF``). Each worker has its own loopback address
(``worker_host``), so Spark sees two hosts.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psutil

from clusters.backends import procs
from clusters.backends.state import keep_aside
from harness.base.errors import ClusterError, ConfigError, EnvironmentProblem
from harness.base.paths import state_dir
from harness.base.wait import wait_until
from harness.rundir.runfolder import read_json_object, write_json

MASTER_CLASS, WORKER_CLASS, EXECUTOR_CLASS = procs.SPARK_MASTER_CLASS, procs.SPARK_WORKER_CLASS, procs.SPARK_EXECUTOR_CLASS
WORKERS = 2
WORKER_CORES, WORKER_MEMORY = 1, "1g"
#: The master and worker daemons need little; the executors get what the job asks (below).
DAEMON_MEMORY = "256m"
#: What a job on this cluster asks for: one executor of one core per worker.
EXECUTOR_CONF = {"spark.executor.cores": "1", "spark.executor.memory": "512m", "spark.cores.max": str(WORKERS)}
#: A JVM start and registration take a few seconds; on a loaded 2-core machine, tens.
START_TIMEOUT_S = 120.0
RECORD = "spark.json"


def worker_host(i: int) -> str:
    """Worker ``i``'s address, and so its executor's: 127.0.0.2, 127.0.0.3, ... Loopback all the
    same, but another host to Spark, which never starts a speculative copy of a task on a host
    where the task already runs (with every executor on 127.0.0.1, speculation would never act)."""
    return f"127.0.0.{i + 1}"


def spark_home() -> Path:
    """PySpark's own folder: it holds ``bin/spark-class`` and the jars."""
    import importlib.util

    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise EnvironmentProblem("a standalone Spark cluster needs PySpark, which is not installed: "
                                 "pip install 'eos-chaos[spark]' (make setup installs it)")
    return Path(spec.origin).parent


def free_port() -> int:
    """A loopback port nobody listens on now (the JVM binds it a moment later)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class SparkRecord:
    """What a running standalone cluster leaves on disk (``spark.json`` in the state folder)."""

    cluster_id: str
    folder: str
    master_url: str
    web_url: str
    owner_pid: int
    master_pid: int
    worker_pids: dict[str, int] = field(default_factory=dict)


def record_path() -> Path:
    return state_dir() / RECORD


def load_record() -> SparkRecord | None:
    """The recorded standalone cluster; None when none is (a file that is no JSON object is kept
    aside, as the cluster record is: ``state.keep_aside``)."""
    path = record_path()
    try:
        data = read_json_object(path)
        return None if data is None else SparkRecord(**data)
    except ConfigError as exc:
        keep_aside(path, str(exc))
        return None
    except TypeError:
        return None  # a record of other fields (another version's): none this version can use


class SparkStandalone:
    """A master and ``WORKERS`` workers under ``folder`` (logs, work dirs), tagged for ``cluster_id``."""

    def __init__(self, folder: Path, cluster_id: str, owner: int | None = None) -> None:
        self.folder = folder.absolute()
        self.cluster_id = cluster_id
        self.owner = os.getpid() if owner is None else owner
        self.home = spark_home()
        self.port, self.web_port = free_port(), free_port()
        self.master_pid: int | None = None
        self.worker_pids: dict[int, int] = {}

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    @property
    def web_url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    def _env(self, host: str = "127.0.0.1") -> dict[str, str]:
        return {**procs.tags(self.cluster_id, self.owner), "SPARK_HOME": str(self.home),
                "SPARK_LOCAL_IP": host, "SPARK_LOCAL_HOSTNAME": host,
                "SPARK_DAEMON_MEMORY": DAEMON_MEMORY, "SPARK_LOG_DIR": str(self.folder),
                # no spark-env.sh or defaults of the user's own installation
                "SPARK_CONF_DIR": str(self.folder / "conf")}

    def _spawn(self, cls: str, args: list[str], log: str, host: str = "127.0.0.1") -> int:
        (self.folder / "conf").mkdir(parents=True, exist_ok=True)
        cmd = [str(self.home / "bin" / "spark-class"), cls, *args]
        return procs.spawn(cmd, self.folder / log, cwd=self.folder, env=self._env(host)).pid

    def start(self) -> None:
        """Start the master, then the workers; return once every worker is registered ALIVE."""
        try:
            self.master_pid = self._spawn(MASTER_CLASS, ["--host", "127.0.0.1", "--port", str(self.port),
                                                         "--webui-port", str(self.web_port)], "master.log")
            self._save()
            wait_until(lambda: self.master_state().get("status") == "ALIVE", timeout=START_TIMEOUT_S,
                       what=f"the Spark master at {self.master_url} to be ALIVE",
                       state=lambda: procs.tail(self.folder / "master.log", 10),
                       fatal=lambda: None if procs.alive(self.master_pid) else "the master JVM exited")
            for i in range(1, WORKERS + 1):
                self.start_worker(i)
        except BaseException:
            self.stop()
            raise

    def start_worker(self, i: int) -> None:
        """Start worker ``i`` (1-based; again after a kill) and wait until the master has it ALIVE."""
        work = self.folder / f"worker-{i}"
        work.mkdir(parents=True, exist_ok=True)
        before = {w["id"] for w in self.workers()}
        host = worker_host(i)
        pid = self._spawn(WORKER_CLASS, ["--host", host, "--cores", str(WORKER_CORES), "--memory",
                                         WORKER_MEMORY, "--work-dir", str(work), "--webui-port", "0",
                                         self.master_url], f"worker-{i}.log", host)
        self.worker_pids[i] = pid
        self._save()
        wait_until(lambda: any(w["id"] not in before and w["state"] == "ALIVE" for w in self.workers()),
                   timeout=START_TIMEOUT_S, what=f"Spark worker {i} (pid {pid}) to register ALIVE with {self.master_url}",
                   state=lambda: f"workers {self.workers()}; log: {procs.tail(work.parent / f'worker-{i}.log', 8)}",
                   fatal=lambda: None if procs.alive(pid) else f"worker {i}'s JVM exited")

    def master_state(self) -> dict[str, Any]:
        """The master's own JSON (status, workers, applications); {} when it does not answer."""
        try:
            with urllib.request.urlopen(f"{self.web_url}/json/", timeout=5) as r:
                return dict(json.loads(r.read()))
        except (OSError, ValueError):
            return {}

    def workers(self) -> list[dict[str, Any]]:
        """The workers the master knows: id, state (ALIVE, DEAD), cores, cores used."""
        return [{"id": w.get("id"), "state": w.get("state"), "cores": w.get("cores"), "cores_used": w.get("coresused")}
                for w in self.master_state().get("workers", [])]

    def executors(self) -> list[dict[str, Any]]:
        """The executor JVMs running now: pid, the worker (1-based) that launched it, executor and
        application id (from its command line)."""
        found = []
        for i, wpid in sorted(self.worker_pids.items()):
            try:
                children = psutil.Process(wpid).children(recursive=True)
            except psutil.NoSuchProcess:
                continue
            for c in children:
                cmd = procs.cmdline(c.pid)
                if EXECUTOR_CLASS in cmd:
                    found.append({"pid": c.pid, "worker": i, "executor_id": _arg(cmd, "--executor-id"),
                                  "app_id": _arg(cmd, "--app-id"), "state": "paused" if procs.stopped(c.pid) else "up"})
        return found

    def kill_worker(self, i: int) -> int:
        """SIGKILL worker ``i``'s JVM (its executors notice and exit); its pid."""
        pid = self.worker_pids[i]
        procs.kill_hard(pid, f"Spark worker {i}")
        return pid

    def worker_ids(self) -> list[int]:
        return sorted(self.worker_pids)

    def signal_tree(self, pid: int, sig: int) -> list[int]:
        """``sig`` to ``pid`` and every process under it (an executor JVM and its Python workers),
        children first for SIGSTOP (a worker must not act on its JVM's death), parent first else."""
        try:
            tree = [pid, *(c.pid for c in psutil.Process(pid).children(recursive=True))]
        except psutil.NoSuchProcess:
            return []
        for p in (reversed(tree) if sig == signal.SIGSTOP else tree):
            procs.signal_pid(p, signal.Signals(sig))
        return tree

    def _everything(self) -> list[int]:
        """Every process of this cluster: master, workers and all under them."""
        pids: list[int] = []
        for root in [self.master_pid, *self.worker_pids.values()]:
            if not root:
                continue
            try:
                pids += [root, *(c.pid for c in psutil.Process(root).children(recursive=True))]
            except psutil.NoSuchProcess:
                continue
        return pids

    def paused(self) -> list[int]:
        return [p for p in self._everything() if procs.stopped(p)]

    def resume_all(self) -> list[int]:
        """SIGCONT every paused process of this cluster (a heal); the pids resumed."""
        pids = self.paused()
        for p in pids:
            procs.signal_pid(p, signal.SIGCONT)
        return pids

    def heal(self) -> list[str]:
        """Everything running again: paused processes resumed, dead workers restarted, every worker
        registered ALIVE; what could not be healed (empty: healed)."""
        problems: list[str] = []
        self.resume_all()
        for i, pid in sorted(self.worker_pids.items()):
            if not procs.alive(pid):
                try:
                    self.start_worker(i)
                except Exception as exc:  # noqa: BLE001 - reported as a heal problem
                    problems.append(f"Spark worker {i}: {exc}")
        if self.paused():
            problems.append(f"Spark processes still paused: {self.paused()}")
        try:
            check_running(self)
        except ClusterError as exc:
            problems.append(str(exc))
        return problems

    def status(self) -> dict[str, Any]:
        """For ``cluster status --json``: master, workers and executors with their pids and states."""
        ms = self.master_state()
        return {"master_url": self.master_url, "web_url": self.web_url, "master_pid": self.master_pid,
                "master_status": ms.get("status", "not answering"),
                "workers": [{"worker": i, "pid": p, "state": "up" if procs.alive(p) else "down"}
                            for i, p in sorted(self.worker_pids.items())],
                "registered_workers": self.workers(), "executors": self.executors(),
                "applications": [{"id": a.get("id"), "name": a.get("name"), "state": a.get("state")}
                                 for a in ms.get("activeapps", [])]}

    def jvms(self) -> list[int]:
        """Every JVM of this cluster that runs: found by its tags and main class, so an executor
        whose worker was killed (no longer its child) is found too."""
        return [t.pid for t in procs.tagged_processes() if t.cluster_id == self.cluster_id and t.owner == self.owner
                and any(cls in procs.cmdline(t.pid) for cls in procs.SPARK_DAEMONS)]

    def stop(self) -> list[str]:
        """SIGKILL executors, workers, master and their Python workers (nothing of theirs outlives a
        run; a Spark cluster keeps no state worth a graceful stop); what was stopped."""
        gone: list[str] = []
        for pid in self.jvms():
            what = procs.describe(pid)
            for p in self.signal_tree(pid, signal.SIGKILL):
                procs.reap(p)
                procs.wait_gone(p, procs.KILL_WAIT_S, f"{what}'s process {p}")
            gone.append(f"{what} (pid {pid})")
        rec = load_record()
        if rec is not None and rec.cluster_id == self.cluster_id and rec.folder == str(self.folder):
            record_path().unlink(missing_ok=True)
        return gone

    def _save(self) -> None:
        rec = SparkRecord(self.cluster_id, str(self.folder), self.master_url, self.web_url, self.owner,
                          self.master_pid or 0, {str(k): v for k, v in self.worker_pids.items()})
        record_path().parent.mkdir(parents=True, exist_ok=True)
        write_json(record_path(), asdict(rec))

    def __enter__(self) -> SparkStandalone:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def attach(rec: SparkRecord) -> SparkStandalone:
    """The recorded cluster, to read its status or stop it from another process."""
    s = SparkStandalone.__new__(SparkStandalone)
    s.folder, s.cluster_id, s.owner, s.home = Path(rec.folder), rec.cluster_id, rec.owner_pid, spark_home()
    s.port = int(rec.master_url.rsplit(":", 1)[1])
    s.web_port = int(rec.web_url.rsplit(":", 1)[1])
    s.master_pid, s.worker_pids = rec.master_pid, {int(k): v for k, v in rec.worker_pids.items()}
    return s


def recorded_status() -> dict[str, Any] | None:
    """The recorded standalone cluster's status (None: none recorded, or its owner is gone and so are
    its JVMs: then the stale record is dropped)."""
    rec = load_record()
    if rec is None:
        return None
    s = attach(rec)
    if not procs.alive(rec.master_pid) and not any(procs.alive(p) for p in s.worker_pids.values()):
        record_path().unlink(missing_ok=True)
        return None
    return {"owner_pid": rec.owner_pid, "folder": rec.folder, **s.status()}


def _arg(cmd: list[str], flag: str) -> str | None:
    return cmd[cmd.index(flag) + 1] if flag in cmd[:-1] else None


#: A restarted worker registers in seconds; the master drops a killed one after its own timeout.
HEALTHY_TIMEOUT_S = 120.0


def check_running(s: SparkStandalone) -> None:
    """ClusterError unless the master answers with ``WORKERS`` workers ALIVE whose JVMs run (a killed
    worker stays ALIVE in the master's eyes for up to a minute: count only those whose JVM lives)."""
    def alive() -> bool:
        return len([w for w in s.workers() if w["state"] == "ALIVE"]) >= WORKERS and all(
            procs.alive(p) for p in s.worker_pids.values())

    try:
        wait_until(alive, timeout=HEALTHY_TIMEOUT_S, what=f"the Spark cluster at {s.master_url} to have {WORKERS} "
                   "workers ALIVE", state=lambda: f"workers {s.workers()}, pids {s.worker_pids}")
    except Exception as exc:  # noqa: BLE001 - one error type for the caller
        raise ClusterError(str(exc)) from exc
