"""``--eos-inventory FILE`` (and ``--eos-allow-non-disposable``): the plugin's ``kafka_cluster`` is then
a cluster the user already runs, described by that inventory (docs/reference/inventory.md) and
fronted by the harness's own proxies (the ``external`` backend). Checked when pytest starts: a bad
file or a flag that contradicts it is a usage error naming the flag or the inventory's ``file:line``,
before any test runs and before anything starts."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from clusters.backends.protocol import Cluster

#: The backend name kafka_cluster has when --eos-inventory names a cluster.
EXTERNAL = "external"


def add_options(group: Any) -> None:
    """The two options, in the plugin's ``eos-chaos`` group."""
    group.addoption("--eos-inventory", default=None, metavar="FILE",
                    help="run kafka_cluster's tests on the cluster this inventory describes, one you already run "
                         "(the external backend: the harness fronts it with its proxies; docs/reference/inventory.md)")
    group.addoption("--eos-allow-non-disposable", action="store_true",
                    help="with --eos-inventory: allow faults on a cluster whose inventory does not say `disposable: true`")


def configure(config: pytest.Config) -> Path | None:
    """The inventory ``--eos-inventory`` names, checked and made the one every external cluster of
    this process fronts; None without the option. ``pytest.UsageError`` for a missing or invalid file
    (naming ``file:line``) and for options that contradict it."""
    given = config.getoption("--eos-inventory", None)
    allow = bool(config.getoption("--eos-allow-non-disposable", False))
    if given is None:
        if allow:
            raise pytest.UsageError("--eos-allow-non-disposable is about a cluster you already run: give it with "
                                    "--eos-inventory FILE")
        return None
    _check_other_options(config)
    path = Path(given)
    if not path.is_file():
        raise pytest.UsageError(f"--eos-inventory {given}: {'not a file' if path.exists() else 'no such file'} "
                                "(an inventory file: docs/reference/inventory.md)")
    from clusters.backends.backends import ExternalTarget, use_external
    from clusters.backends.external import inventory
    from harness.base.errors import ConfigError

    try:
        inventory.load(path)
    except ConfigError as exc:
        raise pytest.UsageError(f"--eos-inventory {given}: {exc}") from None
    use_external(ExternalTarget(path.absolute(), allow))
    return path.absolute()


def _check_other_options(config: pytest.Config) -> None:
    """The options that cannot go with ``--eos-inventory``: another backend, a level to format the
    cluster at (the harness does not format a cluster it did not start), xdist workers (one heal
    journal per cluster: a second session on it is refused while the first lives)."""
    backend = config.getoption("--eos-backend", None)
    if backend is not None:
        raise pytest.UsageError(f"--eos-inventory runs kafka_cluster on the cluster it describes; --eos-backend "
                                f"{backend} names another: give one of them")
    level = config.getoption("--eos-transaction-version", None)
    if level is not None:
        raise pytest.UsageError(f"--eos-transaction-version {level}: the cluster of --eos-inventory runs at the levels "
                                "it has (the harness does not format a cluster it did not start)")
    workers = config.getoption("numprocesses", None) if _has_option(config, "numprocesses") else None
    if workers not in (None, 0):
        raise pytest.UsageError(f"-n {workers}: the cluster of --eos-inventory takes one session at a time (its heal "
                                "journal is held by the session that faults it): run without -n")


def _has_option(config: pytest.Config, dest: str) -> bool:
    try:
        config.getoption(dest)
    except ValueError:
        return False
    return True


def start_external(port_base: int | None, keep: bool, kafka_version: str | None) -> Cluster:
    """The proxies in front of the inventory's cluster, started (every node checked first), its
    Kafka release checked against ``--eos-kafka-version``. A cluster that cannot be fronted (a node
    unreachable, a broker not answering on its listener, another release) ends the session with
    pytest's usage-error status, naming the node, after its proxies are stopped again."""
    from clusters.backends import backends
    from clusters.backends.backends import Backend
    from harness.base.errors import ConfigError, EnvironmentProblem
    from harness.run.runner import check_external_version
    from harness.rundir.runfolder import new_run_dir

    cluster = backends.new_cluster(Backend.external, None, new_run_dir("pytest-external"), port_base, detached=keep)
    try:
        cluster.start()  # stops what it started before it raises
        try:
            check_external_version(cluster, kafka_version, [])
        except BaseException:
            cluster.stop()
            raise
    except (ConfigError, EnvironmentProblem) as exc:
        target = backends.external_target()
        pytest.exit(f"--eos-inventory {target.inventory if target else ''}: {exc}".replace("--kafka-version",
                                                                                           "--eos-kafka-version"),
                    returncode=pytest.ExitCode.USAGE_ERROR)
    return cluster


def refusals(kind: str, fault: Any) -> list[str]:
    """Why the cluster of ``--eos-inventory`` cannot take ``fault`` (a ``nemesis`` fault): not
    disposable, or a fault its nodes cannot carry; each naming the inventory's line."""
    from chaos.fault_refusals import external_refusals
    from clusters.backends.backends import external_target

    target = external_target()
    if target is None:
        return [f"nemesis fault {kind}: no inventory names the external cluster (--eos-inventory FILE)"]
    return external_refusals([fault], target.inventory, target.allow_non_disposable)


def down_command(cluster: Cluster) -> str:
    """How to take down a cluster ``--eos-keep`` left up: an external one by its inventory."""
    from clusters.backends.backends import external_target

    target = external_target()
    if cluster.backend == EXTERNAL and target is not None:
        return f"eos-chaos cluster down --inventory {target.inventory}"
    return f"eos-chaos cluster down --backend {cluster.backend}"
