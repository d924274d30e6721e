"""Shared fixtures: the artifacts, one cluster per backend per test session, and a per-test heal.

Real-cluster tests take the ``cluster`` fixture and run once per backend in ``EOS_CHAOS_BACKENDS``
(default ``local,compose``). pytest finishes every test of one backend before it starts the next
backend's cluster, and tears the first down first: one cluster at a time on the machine.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

# make test runs the unit tests on pytest-xdist workers, which inherit COLUMNS=80 from xdist; rich
# fixes a console's width from COLUMNS when the console is made, so the CLI's tables would wrap at 80
# there and nowhere else. Dropped before anything imports the CLI's console.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.pop("COLUMNS", None)

from chaos.heal import heal_all
from clusters.backends import artifacts, backends
from clusters.backends.backends import Backend
from clusters.backends.protocol import Cluster
from harness.rundir.runfolder import new_run_dir


def selected_backends() -> list[str]:
    names = [b.strip() for b in os.environ.get("EOS_CHAOS_BACKENDS", "local,compose").split(",") if b.strip()]
    allowed = [b.value for b in Backend]
    bad = [b for b in names if b not in allowed]
    if bad:
        raise pytest.UsageError(f"EOS_CHAOS_BACKENDS: unknown backend(s) {bad}; allowed: {allowed}")
    return names


@pytest.fixture(scope="session")
def arts() -> artifacts.Artifacts:
    return artifacts.ensure()


@pytest.fixture(scope="session", params=selected_backends())
def session_cluster(request: pytest.FixtureRequest, arts: artifacts.Artifacts) -> Iterator[Cluster]:
    backend = Backend(request.param)
    # the plugin's --eos-transaction-version runs the whole suite at that level
    level = request.config.getoption("--eos-transaction-version", None)
    with backends.new_cluster(backend, arts, new_run_dir(f"pytest-{backend.value}"), transaction_version=level) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def kafka_cluster(session_cluster: Cluster) -> Cluster:
    """The plugin's ``kafka_cluster`` (nemesis, run_scenario) is this suite's session cluster: one
    cluster at a time, and the plugin's fixtures run once per backend here too."""
    return session_cluster


@pytest.fixture
def cluster(session_cluster: Cluster) -> Iterator[Cluster]:
    """The session cluster, healed and healthy again after each test, whatever the test did."""
    yield session_cluster
    assert heal_all(session_cluster) == []


#: Modules whose tests exercise what differs between the backends (how a node is started, stopped,
#: paused and cut, how heal-all reaches Toxiproxy and the wire proxy, how a crashed run is reclaimed):
#: they run on compose in `make test` too. Every other real-cluster test judges Kafka's and the
#: clients' behaviour, which is the same on both; on compose it runs with `make library`.
BACKEND_SENSITIVE = {"test_cluster.py", "test_fault_effects.py", "test_heal.py", "test_runner_killed.py",
                     "test_compose_errors.py", "test_transaction_version.py",
                     # compose's containers as an external cluster: iptables and tc in their namespaces
                     "test_external_netfaults.py"}
#: Tests of those modules whose compose twin goes to `make library` all the same, to keep `make test`
#: within 30 minutes: each has a cheaper compose test of the same mechanism that stays (a killed
#: runner: test_runner_killed.py; kill -9 of a node: test_fault_effects.py's kill and stop; a restart:
#: test_fault_effects.py's kill, which restarts the node; reclaim: test_runner_killed.py; the
#: transaction version of a compose node: test_transaction_version.py's fault, which sets and reads it back).
LIBRARY_ON_COMPOSE = {"test_runner_killed_mid_fault_is_healed_by_the_next_run",
                      # compose's heal is test_heal.py's hung Toxiproxy; a killed runner, test_runner_killed.py
                      "test_runner_stopped_mid_fault_heals_and_writes_its_verdict",
                      "test_a_cluster_formatted_at_level_0_reads_back_0_and_a_run_asking_2_is_refused",
                      "test_restart_replaces_only_its_targets_process",
                      "test_crashed_run_is_reclaimed_by_the_next_start"}


def _on_compose(item: pytest.Item) -> bool:
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        # test_compose_errors.py's tests run on compose alone
        return item.path.name == "test_compose_errors.py"
    return "compose" in (callspec.params.get("session_cluster"), callspec.params.get("backend"))


def _backend_of(item: pytest.Item) -> str:
    """The backend a real-cluster test runs on: its parameter's (the session cluster's, or the one it
    starts), else compose for test_compose_errors.py and local for every other (they start local
    clusters of their own, or none)."""
    callspec = getattr(item, "callspec", None)
    params = callspec.params if callspec is not None else {}
    named = params.get("session_cluster") or params.get("backend")
    if isinstance(named, str):
        return named
    return "compose" if _on_compose(item) else "local"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A compose twin of a test that does not depend on the backend is part of the library (run before
    `-m` deselects, so `make library` still runs it). Every test under tests/chaos/ is a real-cluster
    test: marked ``chaos`` here if its file forgot, so `make test` never runs one among the unit tests.
    A real-cluster test of a backend EOS_CHAOS_BACKENDS leaves out is deselected (the parametrized
    ones are only made for the selected; this takes the others, local's and compose's own errors):
    `make test` runs the two backends' tests as two sessions side by side (tests/suite.sh)."""
    selected = set(selected_backends())
    dropped = [i for i in items if i.path.parent.name == "chaos" and _backend_of(i) not in selected]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [i for i in items if i not in dropped]
    for item in items:
        if item.path.parent.name == "chaos" and item.get_closest_marker("chaos") is None:
            item.add_marker(pytest.mark.chaos)
        if not _on_compose(item) or item.get_closest_marker("library") is not None:
            continue
        name = getattr(item, "originalname", item.name)
        if item.path.name not in BACKEND_SENSITIVE or name in LIBRARY_ON_COMPOSE:
            item.add_marker(pytest.mark.library)
