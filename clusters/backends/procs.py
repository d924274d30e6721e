"""Process control for locally run parts: spawn, signal, wait for exit, find our leftovers."""

from __future__ import annotations

import errno
import os
import signal
import socket
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

from harness.base.errors import ClusterError, EnvironmentProblem, WaitTimeout
from harness.base.paths import state_dir
from harness.base.wait import wait_until

#: Every process we start carries these environment variables (inherited by anything it forks),
#: so leftovers of a crashed run can be told from a run that is still going.
ENV_CLUSTER = "EOS_CHAOS_CLUSTER"
ENV_OWNER = "EOS_CHAOS_OWNER"  # pid of the process that will stop it; "0" = detached (`cluster up`)
#: The process that spawned it (``<pid>:<start time>``, ``ProcessId``), put into the environment
#: ``spawn`` execs with, so no process of ours is ever seen without it. While that process lives it is
#: still starting the cluster (before any record claims what it spawned: a detached start's first
#: processes) or running on it, and reclaim spares what it spawned.
ENV_SPAWNER = "EOS_CHAOS_SPAWNER"
#: The state folder of the eos-chaos that started it (``harness.base.paths.state_dir``, the variable
#: that names it, set to the folder in use): whose records may claim it. A reclaim takes only what
#: its own state family left, and a test with its own state folder judges only what it started:
#: another state folder's processes are another eos-chaos's (another user's run, another test
#: session), which its own start or ``cluster down`` takes.
ENV_STATE = "EOS_CHAOS_STATE"
#: Two reads of one process's start time agree to well within this: psutil adds the boot time, which
#: the kernel gives in whole seconds and moves with clock adjustments. A later process that got the
#: same pid (the first one gone, the pid space wrapped) starts later than that.
SAME_START_S = 1.0
#: A killed process is gone within milliseconds; a SIGTERMed broker does a controlled shutdown.
KILL_WAIT_S = 30.0
TERM_WAIT_S = 60.0
#: A standalone Spark cluster's JVMs (clusters/spark/standalone.py) by their main class.
SPARK_MASTER_CLASS = "org.apache.spark.deploy.master.Master"
SPARK_WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
SPARK_EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"
SPARK_DAEMONS = {SPARK_MASTER_CLASS: "spark master", SPARK_WORKER_CLASS: "spark worker",
                 SPARK_EXECUTOR_CLASS: "spark executor"}


@dataclass(frozen=True)
class ProcessId:
    """One process, also after it is gone: its pid and start time (a later process with the same
    pid is not it)."""

    pid: int
    started: float  # psutil's create_time: seconds since the epoch

    @classmethod
    def of(cls, pid: int) -> ProcessId | None:
        """The process running as ``pid`` now; None if there is none."""
        try:
            return cls(pid, psutil.Process(pid).create_time())
        except psutil.Error:
            return None

    @classmethod
    def parse(cls, text: str) -> ProcessId | None:
        """From ``str``'s ``<pid>:<start time>``; None for anything else (an older tag, a broken one)."""
        pid, sep, started = text.partition(":")
        try:
            return cls(int(pid), float(started)) if sep else None
        except ValueError:
            return None

    def __str__(self) -> str:
        return f"{self.pid}:{self.started:.3f}"

    @property
    def alive(self) -> bool:
        """It still runs: its pid exists, started when it did, and is no zombie."""
        try:
            proc = psutil.Process(self.pid)
            return abs(proc.create_time() - self.started) < SAME_START_S and proc.status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False


def this_process() -> ProcessId:
    """The process this runs in (not cached: a forked child is another process)."""
    return ProcessId(os.getpid(), psutil.Process().create_time())


def spawn(cmd: Sequence[str], log_file: Path, cwd: Path, env: dict[str, str] | None = None,
          pass_fds: Sequence[int] = ()) -> subprocess.Popen[bytes]:
    """Start ``cmd`` in its own session (a Ctrl-C at the terminal reaches only the harness, which
    then tears down in order), output appended to ``log_file``; ``pass_fds`` are inherited (a
    workload's lifeline, harness/base/lifeline.py). A process carrying our tags (``tags``) also carries
    this process as its spawner (``ENV_SPAWNER``) from its first instruction on: a reclaim running
    at the same moment in another process spares it."""
    given = os.environ if env is None else env
    if ENV_CLUSTER in given:
        env = {**given, ENV_SPAWNER: str(this_process())}
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with open(log_file, "ab") as out:
        return subprocess.Popen(
            list(cmd), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            cwd=cwd, env=env, start_new_session=True, close_fds=True, pass_fds=tuple(pass_fds),
        )


def alive(pid: int | None) -> bool:
    """True if ``pid`` runs, or is still exiting; a zombie whose threads have all exited is not
    running. SIGKILL makes a multi-threaded process's main thread a zombie at once while another
    of its threads may still be closing the process's files: its listening sockets stay bound until
    that thread is gone too (tests/unit/test_kill_frees_listeners.py: a restarted wire proxy could
    not bind its addresses), so a zombie with threads left is still exiting."""
    if not pid:
        return False
    try:
        if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
            return True
    except psutil.NoSuchProcess:
        return False
    return _threads_left(pid)


def _threads_left(pid: int) -> bool:
    """Threads of ``pid`` other than its main one still exist (Linux lists each under
    /proc/PID/task until it has exited, its share of the open files released)."""
    try:
        return len(os.listdir(f"/proc/{pid}/task")) > 1
    except OSError:  # gone meanwhile, or no /proc
        return False


def stopped(pid: int | None) -> bool:
    """True if ``pid`` is SIGSTOPped."""
    try:
        return bool(pid) and psutil.Process(pid).status() in (psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP)
    except psutil.NoSuchProcess:
        return False


def cmdline(pid: int) -> list[str]:
    try:
        return psutil.Process(pid).cmdline()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return []


def describe(pid: int) -> str:
    """What a process of ours runs, in a few words: ``node 2``, ``toxiproxy``, ``workload reader-0``."""
    return describe_cmdline(cmdline(pid))


def describe_cmdline(cmd: Sequence[str]) -> str:
    """``describe`` of a command line."""
    cmd = list(cmd)
    if not cmd:
        return "(gone)"
    if "kafka.Kafka" in cmd:
        return _node_of(cmd[-1])
    if "kafka.tools.StorageTool" in cmd:
        return "storage formatter of " + _node_of(cmd[-1])
    if "-m" in cmd[:-1]:
        module = cmd[cmd.index("-m") + 1]
        args = cmd[cmd.index("-m") + 2:]
        if module.startswith(("harness.workloads.", "harness.sparkjob.")) and args:
            return f"workload {Path(args[0]).stem}"  # its config file is named after it
        return f"python -m {module}"
    if "eoschaos.Bridge" in cmd:  # harness/workloads/clients/java.py: a workload's Java client
        owner = next((a.split("=", 1)[1] for a in cmd if a.startswith("-Deos.chaos.client.of=")), "a workload")
        return f"java client JVM of {owner}"
    owner = next((a.split("=", 1)[1] for a in cmd[1:] if a.startswith("--client-of=")), None)
    if owner is not None and Path(cmd[0]).name.endswith("-bridge"):  # clients/gobridge.py: a workload's Go client
        return f"{Path(cmd[0]).name.removesuffix('-bridge')} client bridge of {owner}"
    for cls, what in SPARK_DAEMONS.items():  # clusters/spark/standalone.py: a standalone Spark cluster's JVMs
        if cls in cmd:
            return what
    if any("org.apache.spark" in arg for arg in cmd):
        return "spark driver JVM"
    name = Path(cmd[0]).name
    if name == "kwire":
        return "wire proxy"
    return "toxiproxy" if "toxiproxy" in name else " ".join([name, *cmd[1:]])[:80]


def _node_of(properties: str) -> str:
    """``node 2`` for a node's ``.../nodes/n2/server.properties``."""
    folder = Path(properties).parent.name
    return f"node {folder[1:]}" if folder[:1] == "n" and folder[1:].isdigit() else f"kafka ({properties})"


def signal_pid(pid: int, sig: signal.Signals) -> bool:
    """Send ``sig``; False if the process is already gone."""
    try:
        os.kill(pid, sig)
        return True
    except ProcessLookupError:
        return False


def reap(pid: int) -> None:
    """Collect the exit status of a child of ours so it does not linger as a zombie."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def wait_gone(pid: int, timeout: float, what: str) -> None:
    def gone() -> bool:
        reap(pid)
        return not alive(pid)

    wait_until(gone, timeout=timeout, what=f"{what} (pid {pid}) to exit", interval=0.05,
               state=lambda: f"pid {pid} status {_status(pid)}")


def _status(pid: int) -> str:
    try:
        return str(psutil.Process(pid).status())
    except psutil.NoSuchProcess:
        return "gone"


def kill_hard(pid: int, what: str) -> None:
    """SIGKILL (works on a SIGSTOPped process too) and wait until it is gone."""
    if signal_pid(pid, signal.SIGKILL):
        wait_gone(pid, KILL_WAIT_S, what)


def terminate(pid: int, what: str, timeout: float = TERM_WAIT_S) -> bool:
    """SIGTERM (with SIGCONT, so a paused process can act on it); SIGKILL after ``timeout``.
    Returns True if it exited on SIGTERM alone."""
    if not signal_pid(pid, signal.SIGTERM):
        return True
    signal_pid(pid, signal.SIGCONT)
    try:
        wait_gone(pid, timeout, what)
        return True
    except Exception:  # noqa: BLE001 - escalate whatever the wait said
        kill_hard(pid, what)
        return False


@dataclass(frozen=True)
class Tagged:
    """A running process we started: its cluster, the pid that owns it (0 = detached) and the
    process that spawned it (None: tagged by an eos-chaos that did not say)."""

    pid: int
    cluster_id: str
    owner: int
    spawner: ProcessId | None = None
    #: its state folder (``ENV_STATE``); None: tagged by an eos-chaos that did not say
    state: Path | None = None

    @property
    def orphaned(self) -> bool:
        """Its owner died without stopping it (a crashed run)."""
        return self.owner != 0 and not alive(self.owner)

    @property
    def spawner_alive(self) -> bool:
        """The process that spawned it still runs: a start still going (its record may not exist
        yet) or a run on the cluster. What it spawned is not a leftover, whatever the owner tag says."""
        return self.spawner is not None and self.spawner.alive


def tagged_processes() -> list[Tagged]:
    """Every live process carrying our environment tags."""
    found = []
    me = os.getpid()
    for proc in psutil.process_iter(["pid"]):
        if proc.info["pid"] == me:
            continue
        try:
            env = proc.environ()
            if ENV_CLUSTER in env and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(Tagged(proc.pid, env[ENV_CLUSTER], int(env.get(ENV_OWNER, "0") or 0),
                                    ProcessId.parse(env.get(ENV_SPAWNER, "")),
                                    same_folder(Path(env[ENV_STATE])) if env.get(ENV_STATE) else None))
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, ValueError):
            continue
    return found


def tags(cluster_id: str, owner: int) -> dict[str, str]:
    """The environment of a process we start for ``cluster_id``."""
    return dict(os.environ, **{ENV_CLUSTER: cluster_id, ENV_OWNER: str(owner), ENV_STATE: str(same_folder(state_dir()))})


def same_folder(path: Path) -> Path:
    """``path`` absolute and without symlinks, so two spellings of one state folder compare equal."""
    return Path(os.path.realpath(path))


def tail(path: Path, lines: int = 30) -> str:
    """The last ``lines`` lines of a log, for error messages."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - 64 * 1024))
            data = fh.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return f"({path} does not exist)"
    return "\n".join(data.splitlines()[-lines:])


#: A SIGKILLed JVM's leader thread can be gone (or a zombie) while its other threads still hold its
#: sockets: a port with no listening owner gets this long to come free before it counts as busy.
PORT_RELEASE_GRACE_S = 15.0


def _bind_error(addr: str) -> OSError | None:
    host, port = addr.rsplit(":", 1)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    # As the JVM and Toxiproxy do: only a listening socket conflicts, not TIME_WAIT leftovers.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, int(port)))
        return None
    except OSError as exc:
        return exc
    finally:
        sock.close()


def check_free(binds: Iterable[tuple[str, str]]) -> None:
    """Raise ``EnvironmentProblem`` naming the first address we would listen on that is taken."""
    for addr, what in binds:
        port = int(addr.rsplit(":", 1)[1])
        exc = _bind_error(addr)
        if exc is not None and exc.errno == errno.EADDRINUSE and not _owner(port):
            # no listener to name: most likely a process that is still exiting
            try:
                wait_until(lambda addr=addr: _bind_error(addr) is None, timeout=PORT_RELEASE_GRACE_S,
                           what=f"port {addr} to be released", interval=0.2)
                exc = None
            except WaitTimeout:
                exc = _bind_error(addr)
        if exc is None:
            continue
        if exc.errno != errno.EADDRINUSE:
            raise ClusterError(f"cannot bind {addr} ({what}): {exc}") from exc
        raise EnvironmentProblem(
            f"port {addr} ({what}) is already in use{_owner(port)}. Stop that process, "
            "run `eos-chaos cluster down` if it is a cluster of ours, or choose other ports with --port-base."
        ) from exc


def _owner(port: int) -> str:
    try:
        for conn in psutil.net_connections(kind="tcp"):
            if conn.laddr and conn.laddr.port == port and conn.status == psutil.CONN_LISTEN and conn.pid:
                name = " ".join(cmdline(conn.pid))[:120]
                return f" by pid {conn.pid} ({name})"
    except (psutil.AccessDenied, OSError):
        pass
    return ""
