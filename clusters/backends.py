"""One place that knows the backends: make a cluster, attach to a recorded one, reclaim leftovers.

Callers (CLI, tests, benchmarks, later the runner) name a backend and get a ``Cluster``; nothing
else in the harness imports a backend module directly, so workloads and faults run unchanged on either.
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Mapping

from clusters import state
from clusters.artifacts import Artifacts
from clusters.base import Cluster
from clusters.topology import DEFAULT_PORT_BASE, Topology



class Backend(str, enum.Enum):
    local = "local"
    compose = "compose"


def default_port_base(backend: Backend) -> int:
    from clusters.compose.plan import PORT_BASE

    return PORT_BASE if backend is Backend.compose else DEFAULT_PORT_BASE


def new_cluster(
    backend: Backend,
    arts: Artifacts,
    run_dir: Path,
    port_base: int | None = None,
    overrides: Mapping[str, str] | None = None,
    detached: bool = False,
) -> Cluster:
    base = port_base or default_port_base(backend)
    if backend is Backend.compose:
        from clusters.compose.cluster import ComposeCluster
        from clusters.compose.plan import ComposePlan

        return ComposeCluster(arts, run_dir, ComposePlan.at(base), overrides, detached)
    from clusters.local import LocalCluster

    return LocalCluster(arts, run_dir, Topology.at(base), overrides, detached)


def attach(rec: state.ClusterRecord) -> Cluster:
    """A handle on the cluster a record describes (started by another process)."""
    if rec.backend == Backend.compose.value:
        from clusters.compose.cluster import ComposeCluster

        return ComposeCluster.attach(rec)
    from clusters.local import LocalCluster

    return LocalCluster.attach(rec)


def reclaim(backend: Backend) -> int:
    """Remove what crashed runs of ``backend`` left behind (runs still going are left alone)."""
    if backend is Backend.compose:
        from clusters.compose.cluster import reclaim_leftovers
        from clusters.compose.engine import docker_answers

        if not docker_answers():
            return 0  # no engine, nothing of ours can be running in it
        import docker

        client = docker.from_env(timeout=60)
        try:
            return reclaim_leftovers(client)
        finally:
            client.close()
    from clusters.local import reclaim_orphans

    return reclaim_orphans()
