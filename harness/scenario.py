"""Scenarios: which workloads run, for how long, which faults hit, and what the verdict must say.
Built-in scenarios are YAML files in ``harness/scenarios/``; each is validated (pydantic) before
anything starts, and an error names the file, the field and what is allowed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from harness.errors import ConfigError
from harness.workloads import registry

LIBRARY = Path(__file__).resolve().parent / "scenarios"
WorkloadKind = registry.KindName
#: Process faults on brokers, network faults on the per-link proxies, and faults on workload processes.
#: ``kill-leader`` is shorthand for ``kill`` with ``target: leader``.
FaultKind = Literal["kill", "stop", "pause", "restart", "rolling-restart",
                    "partition", "latency", "bandwidth", "reset-peer", "blackhole", "slicer", "flap", "drop-responses",
                    "kill-workload", "pause-workload", "kill-leader", "kill-driver", "zombie-driver"]
PROCESS_FAULTS = ("kill", "stop", "pause", "restart", "rolling-restart", "kill-leader")
#: Faults on the Spark job's driver at a chosen point of a micro-batch (harness/spark/job.py):
#: kill-driver SIGKILLs it there (the supervisor restarts it from its checkpoint); zombie-driver
#: freezes it there, starts a new incarnation, and after ``duration`` resumes the old one, which
#: Kafka must fence.
DRIVER_FAULTS = ("kill-driver", "zombie-driver")
TOXIC_FAULTS = ("latency", "bandwidth", "reset-peer", "blackhole", "slicer", "drop-responses")
#: A node id, ``random``, or a role resolved when the fault starts.
Role = Literal["random", "all", "leader", "coordinator", "group-coordinator", "controller"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Workload(Strict):
    kind: WorkloadKind
    count: int = Field(1, ge=1, le=16)
    #: workload settings: each kind's model in harness/workloads/registry.py (names, defaults, bounds)
    settings: dict[str, Any] = {}
    #: librdkafka settings on top of the workload's own: how negative controls misconfigure a client
    client: dict[str, Any] = {}

    @field_validator("settings")
    @classmethod
    def _settings_of_kind(cls, settings: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        if "kind" in info.data:  # else the kind itself is wrong, and said so
            registry.check_settings(info.data["kind"], settings)
        return settings


class Fault(Strict):
    at: float = Field(ge=0, description="seconds into the run")
    kind: FaultKind
    #: how long the fault lasts before it is healed (a killed node stays down this long)
    duration: float = Field(5.0, ge=0)
    #: kill-workload / pause-workload: which workload kind
    workload: WorkloadKind | None = None
    #: repeat every this many seconds until the run ends (0: once)
    every: float = Field(0.0, ge=0)
    #: the node: an id, random, or a role resolved at fault time
    target: Role | int = "random"
    #: what the role is of: leader -> "topic/partition" (default: first topic, partition 0);
    #: coordinator -> a transactional.id (default: the first txn-producer's); group-coordinator -> a group
    of: str | None = None
    #: partition / flap: which links (see chaos/partitions.py)
    partition: Literal["isolate-node", "majority-minority", "directed", "clients-from-node", "bridge"] = "isolate-node"
    #: partition kind "directed": the other end (a node id or a role)
    peer: Role | int | None = None
    #: network faults: which listeners' links
    listeners: Literal["internal", "controller", "client", "all"] = "all"
    #: toxic parameters (chaos/toxics.py), e.g. {latency_ms: 200, jitter_ms: 50}
    params: dict[str, float] = {}
    #: flap: seconds cut, then as many healed, over and over for ``duration``
    period: float = Field(1.0, gt=0)
    #: kill-driver / zombie-driver: where in a micro-batch: inside its open transaction, after the
    #: transaction committed but before Spark's commit log, or whichever comes first
    window: Literal["in-txn", "after-commit", "any"] = "any"

    @model_validator(mode="after")
    def _consistent(self) -> "Fault":
        from chaos.toxics import specs

        if isinstance(self.target, int) and not 1 <= self.target <= 3:
            raise ValueError(f"target {self.target}: node ids are 1, 2, 3 (or random, leader, coordinator, "
                             "group-coordinator, controller)")
        if self.window != "any" and self.kind not in DRIVER_FAULTS:
            raise ValueError(f"`window` is for {' and '.join(DRIVER_FAULTS)} only, not {self.kind}")
        if self.kind in ("kill-workload", "pause-workload") and self.workload is None:
            raise ValueError(f"{self.kind} needs `workload` (txn-producer, reader, copier, zombie)")
        if self.kind in TOXIC_FAULTS:
            specs(self.kind, self.params)  # raises with the allowed parameters
        elif self.params:
            raise ValueError(f"{self.kind} takes no params (toxic faults do: {', '.join(TOXIC_FAULTS)})")
        if self.partition == "directed" and self.kind in ("partition", "flap") and self.peer is None:
            raise ValueError("a directed partition needs `peer` (the other end)")
        return self


class Mix(Strict):
    """Faults drawn from the seed: one at a time, each ``duration`` long, ``gap`` apart."""

    #: (kind, weight) pairs
    kinds: list[tuple[FaultKind, float]]
    start: float = Field(5.0, ge=0, description="seconds before the first fault")
    duration: tuple[float, float] = (3.0, 8.0)
    gap: tuple[float, float] = (3.0, 10.0)
    #: no fault may still run this close to the end (workloads get a calm tail before heal)
    quiet_end: float = Field(5.0, ge=0)
    #: kill-workload: which workload kinds may be hit
    workloads: list[WorkloadKind] = []


class Expect(Strict):
    valid: bool = True
    #: checks that must find something (negative controls)
    fires: list[str] = []
    min_ok_txns: int = 0
    min_fenced: int = 0
    #: error names the clients must have met (``stats.errors_seen``): proof that an incident
    #: replay reproduced the incident, e.g. ``_TIMED_OUT`` for a commit that timed out
    errors: list[str] = []
    #: Spark job: micro-batches committed, and replayed batches skipped because their marker was
    #: committed (proof that a kill hit the window between Kafka's commit and Spark's commit log)
    min_spark_batches: int = 0
    min_replays_skipped: int = 0


class Scenario(Strict):
    name: str
    description: str
    duration: float = Field(45.0, gt=0, le=24 * 3600)
    topics: list[str] = ["eos-a", "eos-b"]
    partitions: int = Field(3, ge=1, le=64)
    workloads: list[Workload]
    faults: list[Fault] = []
    mix: Mix | None = None
    broker_config: dict[str, str] = {}
    expect: Expect = Expect()

    @model_validator(mode="after")
    def _workloads_for_faults(self) -> "Scenario":
        kinds = {w.kind for w in self.workloads}
        wanted = {f.kind for f in self.faults} | {k for k, _ in (self.mix.kinds if self.mix else [])}
        if wanted & set(DRIVER_FAULTS) and "spark-job" not in kinds:
            raise ValueError(f"faults {sorted(wanted & set(DRIVER_FAULTS))} need a spark-job workload; this scenario "
                             f"has {sorted(kinds)}")
        for w in self.workloads:
            missing = [k for k in registry.kind(w.kind).required_topics(w.settings) if w.settings.get(k) not in self.topics]
            if missing:
                raise ValueError(f"a {w.kind} workload needs settings {missing}, each one of the scenario's "
                                 f"topics {self.topics}")
        return self


def names() -> list[str]:
    return sorted(p.stem for p in LIBRARY.glob("*.yaml"))


def load(name_or_path: str) -> Scenario:
    path = Path(name_or_path)
    if not path.suffix and not path.is_file():  # a name; an existing file is loaded whatever its name
        path = LIBRARY / f"{name_or_path}.yaml"
        if not path.exists():
            raise ConfigError(f"unknown scenario {name_or_path!r}; known: {', '.join(names())}")
    if not path.exists():
        raise ConfigError(f"scenario file {path} does not exist")
    try:
        text = path.read_text()
        data = yaml.safe_load(text)
        root = yaml.compose(text)
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        problems = [f"{path}:{_line(root, e['loc'])}: {'.'.join(str(x) for x in e['loc'])}: {_message(e, data)}"
                    for e in exc.errors()]
        raise ConfigError("invalid scenario:\n  " + "\n  ".join(problems)) from exc


def _line(root: yaml.Node | None, loc: tuple[Any, ...]) -> int:
    """The 1-based line of the YAML node at ``loc`` (or of its nearest parent that exists)."""
    node, line = root, 1
    for key in loc:
        if node is None:
            break
        line = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            match = [(k, v) for k, v in node.value if k.value == str(key)]
            if not match:
                break
            line = match[0][0].start_mark.line + 1
            node = match[0][1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
            line = node.start_mark.line + 1
        else:
            break
    return line


def _message(e: Any, data: Any) -> str:
    """pydantic's message, with the allowed keys or values and a "did you mean" where one is close."""
    import difflib

    if e["type"] == "extra_forbidden":
        allowed = _fields_at(e["loc"][:-1], data)
        close = difflib.get_close_matches(str(e["loc"][-1]), allowed, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return f"unknown key (allowed: {', '.join(allowed)}){hint}"
    if e["type"] == "literal_error":
        allowed = [x.strip(" '") for x in str(e["ctx"]["expected"]).replace(" or ", ", ").split(",")]
        close = difflib.get_close_matches(str(e.get("input")), allowed, n=1)
        return str(e["msg"]) + (f"; did you mean {close[0]!r}?" if close else "")
    return str(e["msg"])


def _fields_at(loc: tuple[Any, ...], data: Any) -> list[str]:
    """The keys the model allows at ``loc`` (e.g. ("workloads", 0) -> Workload's fields)."""
    model: type[BaseModel] = Scenario
    for key in loc:
        if isinstance(key, int):
            continue
        field = model.model_fields.get(str(key))
        inner = getattr(field, "annotation", None)
        args = getattr(inner, "__args__", ())
        candidates = [a for a in (inner, *args) if isinstance(a, type) and issubclass(a, BaseModel)]
        if not candidates:
            return []
        model = candidates[0]
    return list(model.model_fields)
