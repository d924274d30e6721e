"""The fault catalogue: one pydantic model per fault kind (``chaos.faults.process``, ``.network``,
``.wire``, ``.workload``, ``.epoch``, ``.rotation``, ...), the ``Fault`` union discriminated on
``kind``, and the registry of kinds.

A fault is data until the nemesis calls its ``apply(ctx)``, which starts it and returns its heal.
Adding a kind: a model with ``kind: Literal[...]``, a ``category`` and ``apply``, listed in ``Fault``
(``REGISTRY`` and ``FaultKind`` follow from it; docs/ADDING.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field, TypeAdapter, ValidationError

from chaos.faults.base import CATEGORIES, FaultBase, FaultContext, Heal, Target
from chaos.faults.epoch import BumpProducerEpoch
from chaos.faults.feature import SetTransactionVersion
from chaos.faults.network import (
    Bandwidth,
    Blackhole,
    DropResponses,
    Flap,
    Latency,
    Partition,
    ResetPeer,
    Slicer,
)
from chaos.faults.process import Kill, KillLeader, Pause, Restart, RollingRestart, Stop
from chaos.faults.rotation import RetryRotationAfterFailover
from chaos.faults.spark_standalone import KillExecutor, KillWorker, PauseExecutor
from chaos.faults.wire import DropApiResponses, ErrorResponses, HoldRequests
from chaos.faults.workload import KillDriver, KillWorkload, PauseWorkload, ZombieDriver

__all__ = ["CATEGORIES", "REGISTRY", "Fault", "FaultBase", "FaultContext", "FaultKind", "Heal", "Target", "parse"]

#: Process faults on brokers, network faults on the per-link proxies, faults on workload processes,
#: a change of the cluster's transaction.version, a producer's epoch raised at its coordinator, and a
#: producer-id rotation retried across a coordinator failover (KAFKA-20357).
Fault = Annotated[
    (Kill | KillLeader | Stop | Pause | Restart | RollingRestart
     | Partition | Flap | Latency | Bandwidth | ResetPeer | Blackhole | Slicer | DropResponses
     | HoldRequests | DropApiResponses | ErrorResponses
     | KillWorkload | PauseWorkload | KillDriver | ZombieDriver | SetTransactionVersion
     | KillExecutor | PauseExecutor | KillWorker | BumpProducerEpoch | RetryRotationAfterFailover),
    Field(discriminator="kind"),
]
_ADAPTER: TypeAdapter[Fault] = TypeAdapter(Fault)
#: kind -> its model, in the order of ``Fault``
REGISTRY: dict[str, type[FaultBase]] = {
    str(cls.model_fields["kind"].default): cls for cls in Fault.__args__[0].__args__
}
#: Every kind's name (a scenario's ``mix`` draws from these): the registry's keys, as a type that
#: pydantic validates against (for mypy a ``str``: it cannot read a literal built at run time).
if TYPE_CHECKING:
    FaultKind = str
else:
    FaultKind = Literal[tuple(REGISTRY)]


def parse(data: dict[str, Any]) -> Fault:
    """The fault ``data`` describes (``{"at": 5, "kind": "kill", ...}``); pydantic's ValidationError if invalid."""
    return _ADAPTER.validate_python(data)


def broker_process_kinds() -> list[str]:
    """Kinds that act on broker processes (never two at a time)."""
    return [k for k, cls in REGISTRY.items() if cls.broker_process]


def of_category(category: str) -> list[str]:
    """The kinds that act on ``category`` (``CATEGORIES``)."""
    return [k for k, cls in REGISTRY.items() if cls.category == category]


def node_states() -> dict[str, str]:
    """Kind -> the state (``down``, ``paused``) its target node is in during the fault's window."""
    return {k: cls.node_state for k, cls in REGISTRY.items() if cls.node_state is not None}


def spark_cluster_kinds() -> list[str]:
    """Kinds that act on a standalone Spark cluster (the scenario must say ``spark: standalone``)."""
    return [k for k, cls in REGISTRY.items() if cls.needs_spark_cluster]


def needing(workload: str) -> list[str]:
    """Kinds that need a workload of kind ``workload`` in the scenario (driver faults: spark-job)."""
    return [k for k, cls in REGISTRY.items() if cls.needs_workload == workload]


def problems(exc: ValidationError) -> list[str]:
    """``exc`` (from ``parse``) as ``field: what is wrong`` lines, without pydantic's union tags."""
    out = []
    for e in exc.errors():
        fields = [str(x) for x in e["loc"] if isinstance(x, str) and x not in REGISTRY]
        msg = {"extra_forbidden": "unknown key", "missing": "missing (required)"}.get(e["type"], e["msg"])
        if e["type"] == "union_tag_invalid":
            fields, msg = ["kind"], f"{e['ctx']['tag']!r} is not a fault kind; allowed: {', '.join(REGISTRY)}"
        out.append(f"{'.'.join(fields) + ': ' if fields else ''}{msg.removeprefix('Value error, ')}")
    return out
