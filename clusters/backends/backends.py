"""One place that knows the backends: make a cluster, attach to a recorded one, reclaim leftovers.

Callers (CLI, tests, benchmarks, later the runner) name a backend and get a ``Cluster``; nothing
else in the harness imports a backend module directly, so workloads and faults run unchanged on either.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from clusters.backends import state
from clusters.backends.artifacts import Artifacts, build_servers
from clusters.backends.protocol import Cluster, ClusterStatus
from clusters.backends.reclaim import Owner, Reclaimed, dead_runs_processes, kill_processes, link_faults, processes
from clusters.kafka.feature_levels import check_transaction_version
from clusters.kafka.topology import DEFAULT_PORT_BASE, MAX_PORT_BASE, MIN_PORT_BASE, PORT_BASE_ENV, Topology
from harness.base.errors import ConfigError

if TYPE_CHECKING:
    import docker



class Backend(str, enum.Enum):
    local = "local"
    compose = "compose"
    external = "external"


@dataclass(frozen=True)
class ExternalTarget:
    """The cluster the ``external`` backend fronts: its inventory file, and whether faults may act on
    it though the inventory does not say it is disposable (``--allow-non-disposable``)."""

    inventory: Path
    allow_non_disposable: bool = False


#: What ``--inventory`` named for this process (harness/cli/options.py ``external_backend``): every
#: external cluster this process makes fronts it, as ``EOS_CHAOS_PORT_BASE`` places every cluster.
_EXTERNAL: list[ExternalTarget] = []


def use_external(target: ExternalTarget | None) -> None:
    """Make ``target`` the cluster every ``external`` cluster of this process fronts (None: forget it)."""
    _EXTERNAL[:] = [target] if target is not None else []


def external_target() -> ExternalTarget | None:
    """The inventory ``--inventory`` named in this process, if any."""
    return _EXTERNAL[0] if _EXTERNAL else None


def default_port_base(backend: Backend) -> int:
    """``EOS_CHAOS_PORT_BASE`` when set, else the backend's own; ConfigError for a bad value."""
    from clusters.backends.compose.plan import PORT_BASE

    text = os.environ.get(PORT_BASE_ENV, "").strip()
    if text:
        if not text.isdigit() or not MIN_PORT_BASE <= int(text) <= MAX_PORT_BASE:
            raise ConfigError(f"{PORT_BASE_ENV}={text!r}: a port base is a whole number between {MIN_PORT_BASE} "
                              f"and {MAX_PORT_BASE}")
        return int(text)
    if backend is Backend.external:
        from clusters.backends.external.proxy_plan import EXTERNAL_PORT_BASE

        return EXTERNAL_PORT_BASE
    return PORT_BASE if backend is Backend.compose else DEFAULT_PORT_BASE


def new_cluster(
    backend: Backend,
    arts: Artifacts | None,
    run_dir: Path,
    port_base: int | None = None,
    overrides: Mapping[str, str] | None = None,
    detached: bool = False,
    transaction_version: int | None = None,
    wire_between_brokers: bool = False,
) -> Cluster:
    """A cluster of ``backend`` (not started). ``transaction_version``: the ``transaction.version``
    its storage is formatted at (None: the Kafka release's default); a level the release does not
    accept is a ``ConfigError`` here, before anything starts. ``wire_between_brokers``: the links
    between brokers through the wire proxy too (local backend only; ConfigError elsewhere). ``external``:
    the cluster of the inventory ``use_external`` named (``arts`` only gives its proxies' binaries;
    None: built if missing)."""
    base = port_base or default_port_base(backend)
    if wire_between_brokers and backend is not Backend.local:
        raise ConfigError(f"--wire-between-brokers: the {backend.value} backend's wire proxy carries only the clients' "
                          "links (its brokers reach each other through Toxiproxy alone, on per-source networks); "
                          "use --backend local")
    if backend is Backend.external:
        return _external(arts, run_dir, base, detached)
    if arts is None:
        raise ConfigError(f"the {backend.value} backend needs Kafka's artifacts")
    check_transaction_version(arts.kafka_version, transaction_version)
    if backend is Backend.compose:
        from clusters.backends.compose.compose_cluster import ComposeCluster
        from clusters.backends.compose.plan import ComposePlan

        return ComposeCluster(arts, run_dir, ComposePlan.at(base), overrides, detached, transaction_version)
    from clusters.backends.local import LocalCluster

    return LocalCluster(arts, run_dir, Topology.at(base, wire_between_brokers), overrides, detached, transaction_version)


def _external(arts: Artifacts | None, run_dir: Path, port_base: int, detached: bool) -> Cluster:
    from clusters.backends.external import inventory
    from clusters.backends.external.external_cluster import ExternalCluster

    target = external_target()
    if target is None:
        raise ConfigError("the external backend fronts a cluster you already run: name its inventory with "
                          "--inventory FILE (docs/reference/inventory.md)")
    tox, kwire = (arts.toxiproxy_bin, arts.kwire_bin) if arts is not None else build_servers()
    return ExternalCluster(inventory.load(target.inventory), run_dir, tox, kwire, port_base, detached)


def attach(rec: state.ClusterRecord) -> Cluster:
    """A handle on the cluster a record describes (started by another process)."""
    if rec.backend == Backend.external.value:
        from clusters.backends.external.external_cluster import ExternalCluster

        return ExternalCluster.attach(rec)
    if rec.backend == Backend.compose.value:
        from clusters.backends.compose.compose_cluster import ComposeCluster

        return ComposeCluster.attach(rec)
    from clusters.backends.local import LocalCluster

    return LocalCluster.attach(rec)


def reclaim(backend: Backend) -> Reclaimed:
    """Remove what runs of ``backend`` that are over left behind (runs still going are left alone):
    host processes on every backend, containers, networks and volumes on compose. Returns what went."""
    if backend is Backend.compose:
        from clusters.backends.compose.compose_cluster import reclaim_leftovers

        with _docker() as client:
            if client is not None:
                return reclaim_leftovers(client)
    if backend is Backend.external:
        return kill_processes(dead_runs_processes(backend.value), "its run is over")
    from clusters.backends.local import reclaim_orphans

    return reclaim_orphans()  # host processes: the local backend's, or a compose run's without an engine


def would_reclaim(backend: Backend, rec: state.ClusterRecord | None) -> Reclaimed:
    """What a start or ``cluster down`` of ``backend`` would reclaim now (nothing is touched): the
    recorded cluster when its owner is dead, with the faults left on its links, and whatever other
    runs that are over left behind."""
    found = Reclaimed()
    if rec is not None and Owner(rec.owner_pid).dead:
        cluster = attach(rec)
        found += cluster.leftovers() + link_faults(cluster.toxiproxy, cluster.wire)
    if backend is Backend.compose:
        from clusters.backends.compose.compose_cluster import dead_runs_leftovers

        with _docker() as client:
            if client is not None:
                return found + dead_runs_leftovers(client)
    return found + processes(dead_runs_processes(backend.value))


def status(rec: state.ClusterRecord) -> ClusterStatus:
    """The recorded cluster's status with its owner and what a start or ``cluster down`` would reclaim."""
    s = attach(rec).status()
    s.owner = Owner(rec.owner_pid)
    s.would_reclaim = would_reclaim(Backend(rec.backend), rec)
    return s


def down(rec: state.ClusterRecord) -> Reclaimed:
    """Stop the recorded cluster and reclaim what other runs that are over left; returns what went
    (the faults still on its links included: they go with its Toxiproxy)."""
    cluster = attach(rec)
    faults = link_faults(cluster.toxiproxy, cluster.wire)
    return cluster.stop() + faults + reclaim(Backend(rec.backend))


@contextmanager
def _docker() -> Iterator[docker.DockerClient | None]:
    """A Docker client, or None when no engine answers (then nothing of ours runs in it)."""
    from clusters.backends.compose.engine import docker_answers

    if not docker_answers():
        yield None
        return
    import docker

    client = docker.from_env(timeout=60)
    try:
        yield client
    finally:
        client.close()
