"""Options shared by several commands, and the checks of their values at the command line.

A help text that shows a default of its own writes it ``\\[default: ...]``: rich help treats an
unescaped ``[...]`` as markup and drops it."""

from __future__ import annotations

import enum
import logging
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from clusters.backends import artifacts
from clusters.backends.backends import Backend
from clusters.builds import pins
from clusters.kafka import kafka_release
from clusters.kafka.topology import MAX_PORT_BASE, MIN_PORT_BASE
from harness.base.errors import ConfigError

log = logging.getLogger(__name__)

#: The longest scenario a run accepts: ``harness.run.scenario.MAX_DURATION_S`` (``Scenario.with_duration``
#: checks it too), repeated so that ``--help`` need not import the scenario models (a test holds them equal).
MAX_DURATION_S = 24 * 3600.0
#: The shortest ``--duration`` override (the limit the flag has always had).
MIN_DURATION_S = 5.0


class Engine(str, enum.Enum):
    default = "default"
    spark = "spark"


class Sink(str, enum.Enum):
    """The Spark job's sinks (registry.SparkJobSettings.sink)."""

    driver = "driver"
    executor = "executor"
    builtin = "builtin"


class SparkMode(str, enum.Enum):
    """Where the Spark job runs (the scenario's ``spark``)."""

    local = "local"
    standalone = "standalone"


SinkOpt = typer.Option(Sink.driver, "--sink", help="How the Spark job writes (docs/SPARK.md).")
SparkModeOpt = typer.Option(SparkMode.local, "--spark",
                            help="local[2] in the driver, or a standalone Spark cluster (master + 2 workers).")
KafkaVersion = typer.Option(pins.KAFKA_VERSION, "--kafka-version", help="Apache Kafka release (Maven Central).")
RedoUnknownOpt = typer.Option(False, "--redo-unknown", help="On resume, run again the runs that ended unknown "
                              "(their cause mended: a client that could not start, a check that crashed).")


def check_port_base_env() -> None:
    """``ConfigError`` for an ``EOS_CHAOS_PORT_BASE`` that is no port base, before anything starts
    (read only when a cluster started, it passed ``run --dry-run`` and failed after a cluster was up)."""
    from clusters.backends.backends import default_port_base

    default_port_base(Backend.local)


def _port_base(value: int | None) -> int | None:
    if value is None:  # its default is the environment's
        try:
            check_port_base_env()
        except ConfigError as exc:
            raise typer.BadParameter(f"{exc} (the default of --port-base)") from None
    return value


# the bounds the environment variable and the plugin take too: the Toxiproxy API sits ~600 below the base
PortBase = typer.Option(None, "--port-base", min=MIN_PORT_BASE, max=MAX_PORT_BASE, callback=_port_base,
                        help="First of node 1's 4 listener ports (else $EOS_CHAOS_PORT_BASE) \\[default: 19092 local, "
                             "29092 compose].")
BrokerConfig = typer.Option([], "--broker-config", metavar="KEY=VALUE",
                            help="A broker setting on top of the harness defaults (repeatable), e.g. num.io.threads=4.")
def _transaction_version(value: int | None) -> int | None:
    lo, hi = pins.TRANSACTION_VERSION_RANGE
    if value is not None and not lo <= value <= hi:
        raise typer.BadParameter(f"{value} is not a transaction.version; allowed: "
                                 f"{', '.join(map(str, range(lo, hi + 1)))} (which the Kafka release accepts: 0 on 3.9, 0-2 from 4.0)")
    return value


TransactionVersion = typer.Option(
    None, "--transaction-version", callback=_transaction_version, metavar="0|1|2",
    help="transaction.version the cluster's storage is formatted at: 0 classic, 1 flexible transaction records, "
         "2 KIP-890 part 2 (epoch bump per transaction; Kafka 4.0+) \\[default: the Kafka release's: 2 from 4.0, 0 on 3.9].")
#: An external cluster's inventory file (docs/reference/inventory.md).
InventoryOpt = typer.Option(..., "--inventory", dir_okay=False, metavar="FILE",
                            help="The inventory file of the external cluster (docs/reference/inventory.md).")
BackendOpt = typer.Option(Backend.local, "--backend", help="Where the cluster runs: local processes, Docker Compose, "
                          "or a cluster you already run (external: give --inventory).")
#: ``--inventory`` on the commands that run on a cluster: it implies ``--backend external``.
InventoryRunOpt = typer.Option(None, "--inventory", dir_okay=False, metavar="FILE",
                               help="Run on the cluster this inventory file describes (implies --backend external; "
                                    "docs/reference/inventory.md).")
AllowNonDisposableOpt = typer.Option(False, "--allow-non-disposable",
                                     help="With --inventory: allow faults on a cluster whose inventory does not say "
                                          "`disposable: true`.")


def external_backend(backend: Backend, inventory: Path | None, allow_non_disposable: bool) -> Backend:
    """The backend a command runs on: ``external`` when ``--inventory`` names a cluster (made the one
    every external cluster of this process fronts), else ``backend``; ConfigError for ``--backend
    external`` without an inventory, or an inventory with another ``--backend``."""
    from clusters.backends.backends import ExternalTarget, use_external

    if inventory is None:
        if backend is Backend.external:
            raise ConfigError("--backend external fronts a cluster you already run: name its inventory with "
                              "--inventory FILE (docs/reference/inventory.md)")
        if allow_non_disposable:
            raise ConfigError("--allow-non-disposable is about an external cluster: give it with --inventory FILE")
        return backend
    if backend is not Backend.local and backend is not Backend.external:
        raise ConfigError(f"--inventory runs on the cluster it describes (the external backend), not --backend {backend.value}")
    if not inventory.is_file():
        raise ConfigError(f"--inventory {inventory}: {'no such file' if not inventory.exists() else 'not a file'} "
                          "(an inventory file: docs/reference/inventory.md)")
    use_external(ExternalTarget(inventory.absolute(), allow_non_disposable))
    return Backend.external
EngineOpt = typer.Option(Engine.default, "--engine", help="default: numpy/pandas in memory; spark: Spark DataFrame "
                         "jobs over the Parquet history (local[2], or $EOS_CHAOS_SPARK_MASTER) for histories larger than memory.")
BenchRuns = typer.Option(3, "--runs", min=1, max=10)
JsonOut = typer.Option(False, "--json", help="Machine-readable output.")


def _within(low: float, high: float | None, why: str) -> Callable[[float | None], float | None]:
    """A check that a float option's value is a number from ``low`` to ``high``. Not click's
    ``FloatRange``: it lets nan through (every comparison with nan is false), and a dry run or a
    deadline of nan or inf never ends."""

    def check(value: float | None) -> float | None:
        if value is not None and not (math.isfinite(value) and low <= value <= (math.inf if high is None else high)):
            allowed = f"from {low:g} to {high:g}" if high is not None else f"of at least {low:g}"
            raise typer.BadParameter(f"{value:g} is not allowed; give a number {allowed}{why}")
        return value

    return check


def finite_option(default: float | None, flag: str, low: float, high: float | None = None, why: str = "", *,
                  help: str) -> Any:
    """A float option (seconds, hours) that must be a finite number from ``low`` to ``high``."""
    bounds = f"{low:g}<=x<={high:g}" if high is not None else f"x>={low:g}"
    return typer.Option(default, flag, callback=_within(low, high, why), metavar=f"<float> [{bounds}]", help=help)


def duration_option(help: str) -> Any:
    """An optional ``--duration`` override in seconds: from 5 s to the scenario limit (24 h)."""
    return finite_option(None, "--duration", MIN_DURATION_S, MAX_DURATION_S, " (s; at most 24 h)", help=help)


BROKER_KEY = re.compile(r"^[a-z][a-z0-9_.-]*$")


def parse_broker_config(items: list[str]) -> dict[str, str]:
    """``--broker-config KEY=VALUE`` items as a dict; a clear error for anything else."""
    found: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not BROKER_KEY.match(key.strip()):
            raise ConfigError(f"--broker-config {item!r}: expected KEY=VALUE with a Kafka broker property name "
                              "(lower case, dots), e.g. --broker-config num.io.threads=4")
        found[key.strip()] = value.strip()
    return found


def cluster_features(bootstrap: str, timeout_s: float = 10.0) -> dict[str, Any]:
    """``transaction_version`` and ``features`` as read back from the cluster (what ``status``
    shows); both None, with ``features_error``, when it does not answer."""
    from harness.base.errors import HarnessError
    from harness.kafka import features

    try:
        found = features.finalized(bootstrap, timeout_s)
    except HarnessError as exc:
        return {"transaction_version": None, "features": None, "features_error": str(exc)}
    return {"transaction_version": found.get(features.TRANSACTION_VERSION), "features": found}


def run_folder(arg: str, what: str = "run folder") -> Path:
    """``arg`` as an existing folder; ``ConfigError`` saying whether it is missing or a file."""
    path = Path(arg)
    if path.is_file():
        raise ConfigError(f"{path} is a file, not a {what} (give the folder that eos-chaos run made, "
                          "e.g. results/<run id>)")
    if not path.is_dir():
        raise ConfigError(f"{what} {path} does not exist")
    return path


def kafka_artifacts(kafka_version: str) -> artifacts.Artifacts:
    """Kafka and Toxiproxy for ``kafka_version``, fetched into the cache the first time."""
    kafka_release.parse_kafka_version(kafka_version)
    have = artifacts.ready(kafka_version)
    if have is not None:
        return have
    log.info(f"Kafka {kafka_version} or Toxiproxy not cached yet; fetching (once)")
    return artifacts.ensure(kafka_version)


def external_kafka_version(kafka_versions: str | None, levels: str) -> str:
    """A campaign on the external cluster runs on its own Kafka release and levels: the release read
    from its nodes; ConfigError for another ``--kafka-versions`` or ``--transaction-versions``, naming it."""
    from clusters.backends.backends import external_target
    from clusters.backends.external import inventory
    from clusters.backends.external.external_cluster import read_kafka_version

    target = external_target()
    assert target is not None  # external_backend made it
    read = read_kafka_version(inventory.load(target.inventory))
    if read is None:
        raise ConfigError(f"{target.inventory}: no node gives a kafka_home, so the cluster's Kafka release cannot be read; "
                          "a campaign on it names its cells by the release it runs")
    asked = [v.strip() for v in (kafka_versions or read).split(",") if v.strip()]
    if asked != [read]:
        raise ConfigError(f"--kafka-versions {kafka_versions}: the external cluster runs Kafka {read} (read from its "
                          f"nodes); a campaign on it runs that release only")
    if levels.strip() != "default":
        raise ConfigError(f"--transaction-versions {levels}: the external cluster runs at the levels it has (the "
                          "harness does not format it); give default")
    return read
