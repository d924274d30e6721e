"""The processes a cluster's links run through on this machine: Toxiproxy (cuts, latency, resets per
link) and the wire proxy kwire (request-aware faults; address rewriting in front of a cluster that
advertises its own addresses). The ``local`` backend runs them beside its brokers, the ``external``
backend in front of a cluster it did not start; both start, restart and stop them here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from clusters.backends import procs
from clusters.toxiproxy.toxiproxy_api import ProxySpec, Toxiproxy
from clusters.wire.wire_api import Advertised, WireProxy
from harness.base.errors import EnvironmentProblem
from harness.base.wait import wait_until
from harness.rundir.runfolder import WIRE_EVENTS

#: Toxiproxy answers its API within a second of exec.
TOXIPROXY_START_TIMEOUT_S = 20.0
#: So does the wire proxy (a static Go binary).
WIRE_START_TIMEOUT_S = 20.0
#: The wire proxy's files in a run folder.
WIRE_LOG = "wire.log"

TOXIPROXY_LOG = "toxiproxy.log"


@dataclass(frozen=True)
class WireHop:
    """One link through the wire proxy: its name, where it listens, the broker socket behind it."""

    name: str
    listen: str
    upstream: str


@dataclass
class Sidecars:
    """A cluster's Toxiproxy and wire proxy processes, tagged as the cluster's (``env``) so that a
    crashed owner's are found and reclaimed; ``cluster_id()`` tells ours from another cluster's."""

    run_dir: Path
    env: Callable[[], dict[str, str]]
    cluster_id: Callable[[], str]
    tox_pid: int | None = None
    wire_pid: int | None = None
    _tox: Toxiproxy | None = field(default=None, repr=False)
    _wire: WireProxy | None = field(default=None, repr=False)

    def is_ours(self, pid: int | None) -> bool:
        """``pid`` runs and carries this cluster's tag."""
        if not pid:
            return False
        try:
            return bool(psutil.Process(pid).environ().get(procs.ENV_CLUSTER) == self.cluster_id())
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            return False

    def _spawn(self, cmd: list[str], log_file: Path, ping: Callable[[], bool], what: str, url: str,
               timeout: float, pid_attr: str) -> None:
        """Start a server (tagged, logging to ``log_file``; its pid in ``pid_attr`` at once, so a
        failed start stops it) and wait until its API at ``url`` answers. Fails at once, with its
        log, if it exits."""
        p = procs.spawn(cmd, log_file, cwd=self.run_dir, env=self.env())
        setattr(self, pid_attr, p.pid)

        def exited() -> str | None:
            rc = p.poll()
            return None if rc is None else f"{what} exited with code {rc}; log:\n{procs.tail(log_file)}"

        wait_until(ping, timeout=timeout, what=f"the API of {what} at {url}", fatal=exited)

    def start_toxiproxy(self, binary: Path, host: str, port: int, specs: Sequence[ProxySpec]) -> Toxiproxy:
        """Toxiproxy's server with its API at ``host:port`` and every proxy of ``specs``, healthy."""
        url = f"http://{host}:{port}"
        tox = Toxiproxy(url)
        self._spawn([str(binary), "-host", host, "-port", str(port)], self.run_dir / TOXIPROXY_LOG, tox.ping,
                    "Toxiproxy", url, TOXIPROXY_START_TIMEOUT_S, "tox_pid")
        tox.populate(list(specs))
        self._tox = tox
        return tox

    def start_wire(self, binary: Path | None, api: str, hops: Sequence[WireHop],
                   advertise: Mapping[int, str] | None = None) -> WireProxy:
        """The wire proxy on every hop, its API at ``api``; ``advertise`` (node id -> host:port)
        turns its address rewriting on (a cluster that advertises its own addresses)."""
        if binary is None:
            raise EnvironmentProblem("the wire proxy is not built (eos-chaos setup builds it)")
        cmd = [str(binary), "-api", api, "-events", str(self.run_dir / WIRE_EVENTS)]
        cmd += [arg for h in hops for arg in ("-link", f"{h.name}={h.listen}={h.upstream}")]
        cmd += Advertised.of(dict(advertise)).args() if advertise else []
        url = f"http://{api}"
        wire = WireProxy(url)
        self._spawn(cmd, self.run_dir / WIRE_LOG, wire.ping, "the wire proxy", url, WIRE_START_TIMEOUT_S, "wire_pid")
        self._wire = wire
        return wire

    def kill_toxiproxy(self) -> None:
        """SIGKILL Toxiproxy (a hung server may ignore SIGTERM) and drop its client."""
        if self.is_ours(self.tox_pid):
            assert self.tox_pid is not None
            procs.kill_hard(self.tox_pid, "toxiproxy")
        if self._tox is not None:
            self._tox.close()
            self._tox = None

    def kill_wire(self) -> None:
        """SIGKILL the wire proxy and drop its client."""
        if self.is_ours(self.wire_pid):
            assert self.wire_pid is not None
            procs.kill_hard(self.wire_pid, "wire proxy")
        if self._wire is not None:
            self._wire.close()
            self._wire = None

    def stop(self) -> None:
        """Both servers stopped (SIGTERM, then SIGKILL), their clients closed; idempotent."""
        if self.is_ours(self.tox_pid):
            assert self.tox_pid is not None
            procs.terminate(self.tox_pid, "toxiproxy", timeout=10)
        if self.is_ours(self.wire_pid):
            assert self.wire_pid is not None
            procs.terminate(self.wire_pid, "wire proxy", timeout=10)
        for client in (self._tox, self._wire):
            if client is not None:
                client.close()
        self._tox = self._wire = None

    def toxiproxy(self, url: str) -> Toxiproxy:
        """The Toxiproxy API client (made on first use by a process that attached)."""
        if self._tox is None:
            self._tox = Toxiproxy(url)
        return self._tox

    def wire(self, url: str) -> WireProxy:
        """The wire proxy API client (made on first use by a process that attached)."""
        if self._wire is None:
            self._wire = WireProxy(url)
        return self._wire
