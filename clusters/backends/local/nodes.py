"""A local cluster's brokers as processes of this machine: spawned, waited for until their log says
started, found again by pid (or, when another process restarted one, by tag and command line), and
killed, stopped, paused, resumed and restarted by signals."""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable

from clusters.backends import procs
from clusters.backends.built_cluster import STARTED_MESSAGE
from clusters.backends.local.layout import NodeLayout
from clusters.backends.protocol import NODE_START_TIMEOUT_S, NodeState
from harness.base.errors import ClusterError, HarnessError, WaitTimeout
from harness.base.wait import Moving, wait_until

log = logging.getLogger(__name__)


class BrokerProcesses:
    """The broker JVMs of one cluster, by node id. ``env()`` tags what is spawned as the cluster's,
    ``is_ours(pid)`` tells a pid of the cluster from a reused one, ``spawned()`` is told (under
    ``lock``) each time a node's pid changes, so the cluster's record follows."""

    def __init__(self, layout: NodeLayout, cluster_id: Callable[[], str], env: Callable[[], dict[str, str]],
                 is_ours: Callable[[int], bool], spawned: Callable[[], None], lock: threading.RLock) -> None:
        self.layout = layout
        self.pids: dict[int, int] = {}
        self._cluster_id = cluster_id
        self._env = env
        self._is_ours = is_ours
        self._spawned = spawned
        self._lock = lock

    def spawn(self, n: int) -> int:
        """Start node ``n``'s broker (not waiting for it); its pid."""
        d = self.layout.node_dir(n)
        p = procs.spawn(self.layout.broker_command(n), d / "stdout.log", cwd=d, env=self._env())
        with self._lock:
            self.pids[n] = p.pid
            self._spawned()
        return p.pid

    def log_size(self, n: int) -> int:
        """How far node ``n``'s server.log goes now (where a restart's wait reads from)."""
        try:
            return self.layout.server_log(n).stat().st_size
        except FileNotFoundError:
            return 0

    def wait_started(self, n: int, offset: int, timeout: float = NODE_START_TIMEOUT_S) -> None:
        """Until the node's log, past ``offset``, says started; fail at once if the process exits. Past
        ``timeout``, on while the log still grows (a starved machine's broker loading its partitions),
        up to ``Moving``'s bound."""
        pid = self.pids[n]
        log_file = self.layout.server_log(n)
        stdout = self.layout.node_dir(n) / "stdout.log"

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
            return (f"node {n} (pid {pid}) exited during start-up. Last lines of {log_file}:\n{procs.tail(log_file)}\n"
                    f"--- {stdout}:\n{procs.tail(stdout, 15)}")

        try:
            wait_until(started, timeout=timeout, what=f"node {n} to log '{STARTED_MESSAGE}'", fatal=exited,
                       state=lambda: f"last log lines:\n{procs.tail(log_file, 10)}", moving=Moving(lambda: self.log_size(n)))
        except WaitTimeout as exc:
            raise ClusterError(str(exc)) from exc

    def pid(self, node: int) -> int:
        """The node's running process, 0 if none. Another process holding a handle on this cluster
        (a run on the cluster a test session or ``cluster up`` started) may have restarted the node:
        when the pid we know is gone, the node's process is looked up by its tag and command line."""
        if node not in self.layout.topology.node_ids:
            raise ClusterError(f"no node {node}; nodes are {list(self.layout.topology.node_ids)}")
        pid = self.pids.get(node, 0)
        if pid:
            procs.reap(pid)
            if procs.alive(pid) and self._is_ours(pid):
                return pid
        props = str(self.layout.server_properties(node))
        for t in procs.tagged_processes():
            if t.cluster_id == self._cluster_id() and props in procs.cmdline(t.pid):
                with self._lock:
                    self.pids[node] = t.pid
                return t.pid
        return 0

    def state(self, node: int) -> NodeState:
        pid = self.pid(node)
        if not pid:
            return NodeState.DOWN
        return NodeState.PAUSED if procs.stopped(pid) else NodeState.UP

    def kill(self, node: int) -> None:
        pid = self.pid(node)
        if self.state(node) is not NodeState.DOWN:
            procs.kill_hard(pid, f"node {node}")

    def stop(self, node: int) -> None:
        pid = self.pid(node)
        if self.state(node) is not NodeState.DOWN:
            if not procs.terminate(pid, f"node {node}"):
                log.info(f"node {node} ignored SIGTERM for {procs.TERM_WAIT_S:.0f}s and was killed")

    def pause(self, node: int) -> None:
        pid = self.pid(node)
        if self.state(node) is NodeState.DOWN:
            raise ClusterError(f"cannot pause node {node}: it is down")
        procs.signal_pid(pid, signal.SIGSTOP)
        wait_until(lambda: self.state(node) is NodeState.PAUSED, timeout=10, what=f"node {node} to be stopped by SIGSTOP")

    def resume(self, node: int) -> None:
        pid = self.pid(node)
        procs.signal_pid(pid, signal.SIGCONT)
        wait_until(lambda: self.state(node) is not NodeState.PAUSED, timeout=10, what=f"node {node} to continue after SIGCONT")

    def restart(self, node: int) -> None:
        """Start ``node`` again (stopping it first if it runs) and wait until it reports started."""
        self.pid(node)
        if self.state(node) is not NodeState.DOWN:
            self.stop(node)
        offset = self.log_size(node)
        self.spawn(node)
        self.wait_started(node, offset)

    def kill_all(self) -> list[str]:
        """SIGKILL every broker of ours; what could not be killed."""
        errors: list[str] = []
        for n, pid in sorted(self.pids.items()):
            if self._is_ours(pid):
                try:
                    procs.kill_hard(pid, f"node {n}")
                except HarnessError as exc:
                    errors.append(str(exc))
        return errors
