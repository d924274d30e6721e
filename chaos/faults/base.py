"""What every fault kind shares: its time fields, the context it acts through, and ``Heal``."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Literal, Protocol

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from chaos.control import SparkControl, WorkloadControl
from chaos.targets import TargetDefaults
from clusters.backends.protocol import Cluster

#: Undoes what ``apply`` did and records the fault's stop event(s).
Heal = Callable[[], None]
#: A scenario runs at most a day (harness.run.scenario): no fault time is longer.
MAX_SECONDS = 24 * 3600.0
#: Roles resolved when the fault starts (chaos/targets.py); ``all`` is every node (network faults).
Role = Literal["random", "all", "leader", "coordinator", "group-coordinator", "controller"]
ROLES: tuple[str, ...] = Role.__args__  # type: ignore[attr-defined]
#: Node ids of the 3-broker cluster.
NODE_IDS = (1, 2, 3)
#: What a fault acts on (each kind's ``category``): the report colours and names its window by it.
Category = Literal["process", "network", "workload", "spark", "wire", "feature", "producer"]
#: Each category as the report's legend says it.
CATEGORIES: dict[str, str] = {"process": "broker processes", "network": "network links",
                              "workload": "workload processes", "spark": "the Spark cluster",
                              "wire": "Kafka requests on the wire", "feature": "cluster features",
                              "producer": "producer epochs at the coordinator"}


def _target(value: Any) -> Any:
    """One message for a bad target (instead of one per member of ``Role | int``)."""
    ok = value in ROLES or (isinstance(value, int) and not isinstance(value, bool) and value in NODE_IDS)
    if not ok:
        raise ValueError(f"{value!r} is not a target; allowed: a node id ({', '.join(map(str, NODE_IDS))}) "
                         f"or {', '.join(ROLES)}")
    return value


#: A node id, ``random``, or a role resolved at fault time.
Target = Annotated[Role | int, BeforeValidator(_target)]


class EventRecorder(Protocol):
    def __call__(self, kind: str, **value: object) -> None: ...


class Resolver(Protocol):
    def __call__(self, target: str | int, of: str | None = None) -> int: ...


@dataclass(frozen=True)
class FaultContext:
    """What a fault acts through: the cluster, target resolution, the workload processes, the
    nemesis's event recording (``start``/``end``: the history's fault events) and its stop event."""

    cluster: Cluster
    resolve: Resolver
    control: WorkloadControl
    start: EventRecorder
    end: EventRecorder
    stop: threading.Event
    #: the nemesis's seeded choices (which executor, which worker)
    rnd: random.Random = field(default_factory=random.Random)
    #: the run's standalone Spark cluster (None: the scenario has none)
    spark: SparkControl | None = None
    #: what roles are of when a fault gives no ``of`` (the run's scenario; none in the pytest plugin)
    defaults: TargetDefaults = field(default_factory=TargetDefaults)
    #: told by a fault that blocks past its budget how many seconds past it it is: the run then
    #: lasts as much longer, so the schedule after it keeps its time (``bump-producer-epoch``)
    extend_run: Callable[[float], None] = field(default=lambda seconds: None)


def no_heal() -> None:
    """The heal of a fault that ended by itself inside ``apply``."""


class FaultBase(BaseModel):
    """Fields every fault has. Subclasses set ``kind`` to a literal (the union's tag)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str
    at: float = Field(ge=0, le=MAX_SECONDS, allow_inf_nan=False, description="seconds into the run")
    #: how long the fault lasts before it is healed (a killed node stays down this long)
    duration: float = Field(5.0, ge=0, le=MAX_SECONDS, allow_inf_nan=False)
    #: repeat every this many seconds until the run ends (0: once)
    every: float = Field(0.0, ge=0, le=MAX_SECONDS, allow_inf_nan=False)

    #: What it acts on (``CATEGORIES``); every kind sets it (tests/unit/test_registries.py).
    category: ClassVar[Category]
    #: The nemesis waits ``duration`` (or the run's end) between ``apply`` and the heal; False for
    #: faults that end by themselves (a restart, a driver kill).
    holds: ClassVar[bool] = True
    #: Broker process faults never overlap (the nemesis serialises them): a node still restarting
    #: from one kill must not be killed, paused or restarted by the next.
    broker_process: ClassVar[bool] = False
    #: The state a node is in during the fault's window (the report's node lanes), if any.
    node_state: ClassVar[str | None] = None
    #: The workload kind the fault needs in the scenario, if any.
    needs_workload: ClassVar[str | None] = None
    #: The fault acts on a standalone Spark cluster (the scenario's ``spark: standalone``).
    needs_spark_cluster: ClassVar[bool] = False

    def workloads(self, control: WorkloadControl) -> list[str]:
        """The workload processes it acts on: before it begins, the nemesis waits for one of them to
        make progress since the previous fault on it. Most kinds act on the cluster (none); a fault
        that needs a workload kind acts on its processes."""
        return control.of_kind(self.needs_workload) if self.needs_workload else []

    def check_release(self, kafka_version: str) -> None:
        """Refuse, before the run starts, what Kafka ``kafka_version`` cannot do (``ConfigError``);
        most kinds can do anything any release can."""

    @property
    def needs_wire_between_brokers(self) -> bool:
        """It needs a cluster whose links between brokers go through the wire proxy
        (``Topology.wire_between_brokers``); most kinds do not."""
        return False

    def broker_config_problem(self, broker_config: Mapping[str, str]) -> tuple[str, str] | None:
        """The scenario's broker setting that makes this fault impossible, and why (the scenario is
        refused when it is read); most kinds can run whatever the settings (None)."""
        return None

    def check_backend(self, backend: str) -> None:
        """Refuse, before the run starts, what the ``backend`` cluster cannot do (``ConfigError``);
        most kinds can do anything on any backend."""

    def apply(self, ctx: FaultContext) -> Heal:
        """Start the fault (recording its start event with the resolved target); returns its heal."""
        raise NotImplementedError
