"""A workload kind's part of a run, as one object: ``KindRun``. The runner holds one per kind the
scenario names and calls the same phases of each, in the order of a run (docs/ARCHITECTURE.md, "One
run"); a kind that does nothing in a phase inherits the default here, which does nothing. The
processes themselves (their modules, settings and names) are the kind's entry in
harness/workloads/registry.py; what a kind does around them is its ``KindRun`` (harness/phases/table.py
says which kind has which)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

from confluent_kafka import TopicPartition

from chaos.control import SparkControl
from clusters.backends.protocol import Cluster
from harness.history.model import GROUP_OFFSETS, PROGRESS_OPS, finished, tp_key
from harness.history.recorder import Recorder
from harness.kafka.group_offsets import GroupOffsets
from harness.rundir.journal import Journal
from harness.workloads import registry

#: Reading a consumer group's committed offsets at the end: one round trip; generous for a loaded machine.
GROUP_OFFSETS_TIMEOUT_S = 60.0

#: Whether an op (a history line) shows progress.
OpTest = Callable[[Mapping[str, Any]], bool]


class Entry(Protocol):
    """One scenario entry, as a kind's phases read it (``harness.run.scenario.Workload``)."""

    @property
    def kind(self) -> str: ...

    @property
    def settings(self) -> dict[str, Any]: ...

    @property
    def count(self) -> int: ...


class ScenarioView(Protocol):
    """What a kind's phases read of the scenario (``harness.run.scenario.Scenario``, topics as the run names them)."""

    @property
    def name(self) -> str: ...

    @property
    def topics(self) -> list[str]: ...

    @property
    def partitions(self) -> int: ...

    def topic_partitions(self) -> dict[str, int]: ...

    def partitions_of(self, topic: str) -> int: ...

    @property
    def spark(self) -> str: ...

    @property
    def workloads(self) -> Sequence[Entry]: ...


class Processes(Protocol):
    """What a kind's phases do with the run's workload processes (``harness.run.supervisor.Supervisor``)."""

    @property
    def run_dir(self) -> Path: ...

    @property
    def exit_codes(self) -> dict[str, int | None]: ...

    def of_kind(self, kind: str) -> list[str]: ...

    def alive(self, name: str) -> bool: ...

    def restart(self, name: str) -> None: ...


@dataclass
class RunContext:
    """One run as its kinds' phases see it once the cluster is up and the workloads' supervisor made."""

    scenario: ScenarioView
    cluster: Cluster
    run_dir: Path
    rec: Recorder
    journal: Journal
    processes: Processes
    #: scenario topic name -> the run's
    topic_names: dict[str, str]


class KindRun:
    """The phases of one kind in one run; every default does nothing. The phases, in a run's order:
    ``preflight`` (before anything starts), ``own_topics`` (what the others leave out), ``start``
    (beside the Kafka cluster, before the processes), ``side_cluster`` (what the nemesis may fault
    of it), ``started`` (before its processes start), ``ready_timeout_s``, ``progress`` (what a
    fault aimed at it waits for), ``through_heal`` / ``heal`` / ``drain`` / ``stopped`` (at the
    run's end), ``final_reads``. The class methods answer for a kind whatever the run (the
    supervisor's and the nemesis's questions)."""

    #: what the progress display says while ``drain`` runs (None: the kind does not drain)
    drain_phase: ClassVar[str | None] = None

    def __init__(self, kind: str, scenario: ScenarioView) -> None:
        self.kind = kind
        self.scenario = scenario

    @property
    def entries(self) -> list[Entry]:
        """The scenario's entries of this kind."""
        return [w for w in self.scenario.workloads if w.kind == self.kind]

    # ------------------------------------------------------------------ before the run
    def preflight(self) -> None:
        """``ConfigError`` (exit 2) for what would fail only once the cluster is up; nothing is started yet."""

    def own_topics(self) -> list[str]:
        """Topics only this kind's processes read (an app's outputs): the other workloads and the
        runner's scans leave them out."""
        return []

    # ------------------------------------------------------------------ the start
    def start(self, cluster: Cluster, run_dir: Path, env: dict[str, str]) -> None:
        """What runs beside the Kafka cluster for this kind, started before any process (named to
        the processes through ``env``)."""

    def side_cluster(self) -> SparkControl | None:
        """What ``start`` started that faults act on (the nemesis's ``spark``)."""
        return None

    def started(self, ctx: RunContext) -> None:
        """Before the workload processes start: what the history must hold first."""

    def ready_timeout_s(self) -> float | None:
        """How long the workloads may take to be ready (None: ``readiness.READY_TIMEOUT_S``)."""
        return None

    # ------------------------------------------------------------------ the end
    def through_heal(self, processes: Processes) -> tuple[str, ...]:
        """The processes that run on through heal (stopped after ``drain``)."""
        return ()

    def heal(self) -> list[str]:
        """After the Kafka cluster's heal: heal (and stop) what ``start`` started; what could not be."""
        return []

    def drain(self, ctx: RunContext, heal_problems: list[str]) -> None:
        """After heal, in a run that got going: let ``through_heal`` finish what they were given."""

    def stopped(self, ctx: RunContext) -> None:
        """Every process stopped: how they ended, into the journal."""

    def final_reads(self, ctx: RunContext, stalled: bool) -> None:
        """After the runner's final scans (``stalled``: a partition's LSO stalled): this kind's own
        reads into the history. A kind that commits a consumer group's offsets (``Kind.consumes``)
        records them for its first entry."""
        spec = registry.kind(self.kind)
        if spec.consumes is None or not self.entries:
            return
        settings, sc = self.entries[0].settings, self.scenario
        src, group = settings[spec.consumes.input], str(spec.group_of(settings))
        # through a handle of the group, not the admin client's call: that one crashes the process when
        # the group's coordinator has just moved (harness/kafka/group_offsets.py)
        with GroupOffsets(ctx.cluster.direct_bootstrap, group) as offsets:
            at = offsets.committed([TopicPartition(src, p) for p in range(sc.partitions_of(src))], GROUP_OFFSETS_TIMEOUT_S)
        ctx.rec.event("final", GROUP_OFFSETS, {tp_key(t, p): o for (t, p), o in at.items()}, type_="ok")

    # ------------------------------------------------------------------ whatever the run
    @classmethod
    def progress(cls, kind: str, name: str) -> tuple[str, OpTest] | None:
        """Whose history shows process ``name``'s progress, and which of its ops do (None: the
        history cannot tell, as for a reader): its own finished ``PROGRESS_OPS``."""
        if kind not in PROGRESS_OPS:
            return None
        ops = PROGRESS_OPS[kind]
        return name, lambda op: op.get("f") in ops and finished(op)

    @classmethod
    def transactional_id(cls, name: str) -> str | None:
        """The transactional.id process ``name`` is known by (its first producer's; None: none fixed)."""
        return None

    @classmethod
    def driver_arm(cls, run_dir: Path, name: str) -> Path:
        """Where process ``name`` reads an armed driver fault (a kind with a driver to arm)."""
        raise ValueError(f"{name}: its kind has no driver to arm")

    @classmethod
    def executor_arm(cls, run_dir: Path, name: str) -> Path:
        """Where ``name``'s executors read an armed fault (beside it: the ``fired-executor-*.json`` they write)."""
        raise ValueError(f"{name}: its kind has no executors to arm")

    @classmethod
    def staged_files(cls, run_dir: Path) -> tuple[Path, Path] | None:
        """The files of a staged start's handshake (its first process's "ready", the release), if the kind has one."""
        return None
