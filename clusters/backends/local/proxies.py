"""A local cluster's Toxiproxy and wire proxy: the processes of clusters/backends/sidecars.py, placed
on the links of the cluster's address plan (clusters/kafka/topology.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from clusters.backends import procs
from clusters.backends.artifacts import Artifacts
from clusters.backends.sidecars import Sidecars, WireHop
from clusters.kafka.topology import Topology
from clusters.toxiproxy.toxiproxy_api import ProxySpec, Toxiproxy
from clusters.wire.wire_api import WireProxy
from harness.rundir.runfolder import WIRE_EVENTS


class LocalProxies:
    """Toxiproxy on every link of the topology, the wire proxy between it and the nodes; their pids
    are the cluster record's (``side.tox_pid``, ``side.wire_pid``)."""

    def __init__(self, artifacts: Artifacts, run_dir: Path, topology: Topology, env: Callable[[], dict[str, str]],
                 cluster_id: Callable[[], str]) -> None:
        self.artifacts = artifacts
        self.run_dir = run_dir
        self.topology = topology
        self.side = Sidecars(run_dir, env, cluster_id)

    def specs(self) -> list[ProxySpec]:
        """Every directed link's proxy as the cluster creates it (what a heal recreates)."""
        return [ProxySpec(p.link.name, p.listen, p.upstream) for p in self.topology.proxies()]

    def start_toxiproxy(self) -> None:
        topo = self.topology
        self.side.start_toxiproxy(self.artifacts.toxiproxy_bin, topo.api_host, topo.api_port, self.specs())

    def start_wire(self) -> None:
        """The wire proxy on every client link, between Toxiproxy and the nodes; with ``wire_between_brokers``
        on every link and each node's links to itself too (clusters/wire/kwire)."""
        hops = [WireHop(w.link.name, w.listen, w.upstream) for w in self.topology.wire_hops()]
        self.side.start_wire(self.artifacts.kwire_bin, self.topology.wire_api, hops)

    def restart_toxiproxy(self) -> None:
        """Toxiproxy killed and started again with every proxy, healthy."""
        self.side.kill_toxiproxy()
        self.start_toxiproxy()

    def restart_wire(self) -> None:
        """The wire proxy killed and started again, without rules."""
        self.side.kill_wire()
        self.start_wire()

    @property
    def toxiproxy(self) -> Toxiproxy:
        return self.side.toxiproxy(self.topology.toxiproxy_url)

    @property
    def wire(self) -> WireProxy:
        return self.side.wire(self.topology.wire_url)

    @property
    def wire_events(self) -> Path:
        return self.run_dir / WIRE_EVENTS

    def status(self) -> dict[str, Any]:
        """Both servers' addresses, pids and whether they run (the ``extra`` of the cluster's status)."""
        side = self.side
        return {"toxiproxy_pid": side.tox_pid, "toxiproxy_up": procs.alive(side.tox_pid),
                "wire": self.topology.wire_url, "wire_pid": side.wire_pid, "wire_up": procs.alive(side.wire_pid),
                "wire_between_brokers": self.topology.wire_between_brokers}
