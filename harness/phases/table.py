"""Which ``KindRun`` each workload kind brings (harness/phases/kind_run.py): a kind not named here does
nothing around its processes (the reader, the copier, whose consumer group's offsets the base reads)."""

from __future__ import annotations

from harness.phases.app_phases import AppRun
from harness.phases.kind_run import KindRun, ScenarioView
from harness.phases.producer_run import TxnProducerRun
from harness.phases.spark_run import SparkJobRun
from harness.phases.zombie_run import ZombieRun
from harness.workloads import registry

RUNS: dict[str, type[KindRun]] = {
    "txn-producer": TxnProducerRun,
    "zombie": ZombieRun,
    "spark-job": SparkJobRun,
    "app": AppRun,
}
assert set(RUNS) <= set(registry.KINDS), "a KindRun for a kind the registry does not know"


def of(kind: str) -> type[KindRun]:
    """The class of ``kind``'s phases (``KindRun`` itself: none of its own)."""
    return RUNS.get(kind, KindRun)


def for_scenario(scenario: ScenarioView) -> list[KindRun]:
    """One ``KindRun`` per kind the scenario names, in the order of their first entries."""
    kinds = list(dict.fromkeys(w.kind for w in scenario.workloads))
    return [of(k)(k, scenario) for k in kinds]


def preflight(scenario: ScenarioView) -> None:
    """Every kind's ``KindRun.preflight``: ``ConfigError`` (exit 2) for what would fail only once a
    cluster is up (PySpark missing, an app's program, working folder or contract function), with
    nothing started. A run does it first; so do the dry runs (``run``, ``matrix``, ``hunt``) and a
    soak or a matrix before its cluster starts."""
    for r in for_scenario(scenario):
        r.preflight()
