"""Shared fixtures: the artifacts, one local cluster per test session, and a per-test heal."""

from __future__ import annotations

from typing import Iterator

import pytest

from clusters import artifacts
from clusters.base import NodeState
from clusters.local import LocalCluster
from harness.runs import new_run_dir


@pytest.fixture(scope="session")
def arts() -> artifacts.Artifacts:
    return artifacts.ensure(log=lambda m: print(m))


@pytest.fixture(scope="session")
def session_cluster(arts: artifacts.Artifacts) -> Iterator[LocalCluster]:
    with LocalCluster(arts, new_run_dir("pytest"), log=print) as cluster:
        yield cluster


@pytest.fixture
def cluster(session_cluster: LocalCluster) -> Iterator[LocalCluster]:
    """The session cluster, healed and healthy again after each test, whatever the test did."""
    yield session_cluster
    c = session_cluster
    c.toxiproxy.reset()
    for n in c.topology.node_ids:
        state = c.node_state(n)
        if state is NodeState.PAUSED:
            c.resume(n)
        elif state is NodeState.DOWN:
            c.restart(n)
    assert c.toxiproxy.unhealed() == []
    c.wait_healthy()
