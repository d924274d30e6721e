"""The run journal (``journal.json``): what a run was and what happened to it apart from the
history — the scenario as run, seed, backend, versions, the command that runs it again, the fault
schedule planned and the faults as they ran, the heal, the nemesis's errors, an interruption. The
runner writes it at the start and rewrites it as it learns more; ``verdict.json``'s ``run`` section
and the report are made from it (harness/run/verdict_file.py), never from the checker's figures."""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, ValidationError, model_serializer

from harness.base.errors import ConfigError, problems_in_brief
from harness.base.log_digest import LogDigest
from harness.rundir.runfolder import RunFolder, write_json

#: Bumped when a field changes meaning or goes; new optional fields keep it.
FORMAT = 1
#: Fault kinds the nemesis records under another name (it kills the leader it resolved).
_RECORDED_AS = {"kill-leader": "kill"}
#: What a fault's start event says of its wait for its workload's progress (``FaultRun.waited_s``).
_WAIT = ("waited_s", "wait_expired")


class FaultHit(BaseModel):
    """What was in flight on a fault's target while it was active (harness/history/hits.py ``Hit``,
    as the runner recorded it)."""

    # a journal a newer eos-chaos wrote still reads
    model_config = ConfigDict(extra="ignore")

    #: what the fault was aimed at, in words
    aimed_at: str
    txns_open: int = 0
    #: the workloads those transactions were of (at most ``hits.MAX_NAMED``)
    workloads: list[str] = Field(default_factory=list)
    batches_running: int = 0
    #: requests the wire proxy's rule matched, per action; None: not on the wire, or not placed
    requests: dict[str, int] | None = None
    #: of ``txns_open``, those open at the fault's start; None: a journal from before it was recorded
    txns_open_at_start: int | None = None
    #: it hit something (a request matched, or a transaction or micro-batch was open)
    hit: bool


class _AsWritten(BaseModel):
    """A part of the journal written piece by piece as a run learns it: its JSON has the fields the
    run set (or a journal read had), no others, so a journal read and saved again is the same file."""

    # a journal a newer eos-chaos wrote still reads
    model_config = ConfigDict(extra="ignore")

    @model_serializer(mode="wrap")
    def _as_written(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        done: dict[str, Any] = handler(self)
        return {k: v for k, v in done.items() if k in self.model_fields_set}


class AppDrain(_AsWritten):
    """An app's drain after heal (harness/phases/app_drain.py): its output caught up with its input,
    or not, how it was told, in how long."""

    drained: bool
    #: how it was told (``group ... committed every input``), or why it was skipped or cut short
    how: str
    #: absent: skipped (the heal failed, or the run was interrupted)
    took_s: float | None = None
    #: not drained: the last state seen (group lag, open outputs, output ends, instances not ready again)
    last: dict[str, Any] | None = None


class AppStageFacts(_AsWritten):
    """What a run learned of one stage of a pipeline (docs/APPS.md, "Pipelines"), under ``stages.<name>``."""

    drain: AppDrain | None = None
    #: inputs its contract function was applied to (the expect ops)
    expected_inputs: int | None = None
    #: why its contract function gave no expected outputs
    function_error: str | None = None


class AppFacts(_AsWritten):
    """The journal's ``app``: what a run learned of its app under test (docs/APPS.md) that is not in
    the history. Its top fields are the first app's (a pipeline's first stage's); a pipeline's each
    stage's drain, function inputs or error are under ``stages``, by the stage's name."""

    #: instances the run's end left dead, started again for the drain
    restarted_for_drain: list[str] = Field(default_factory=list)
    #: None: not drained (the run recorded none)
    drain: AppDrain | None = None
    stages: dict[str, AppStageFacts] = Field(default_factory=dict)
    #: each instance's wrapper's exit code at the run's end (None: not known)
    exits: dict[str, int | None] = Field(default_factory=dict)
    #: what the log of each instance that failed says (harness/phases/app_run.py ``failed_logs``)
    logs: dict[str, LogDigest] = Field(default_factory=dict)
    #: records the final scans of every app's outputs read (both isolations)
    outputs_read: int | None = None
    expected_inputs: int | None = None
    function_error: str | None = None

    def stage(self, name: str) -> AppStageFacts:
        """The facts of stage ``name``, made (and so written) when it has none yet."""
        if name not in self.stages:
            self.stages = {**self.stages, name: AppStageFacts()}
        return self.stages[name]


class FaultRun(BaseModel):
    """One fault as it ran: when it started and ended (seconds on the history's clock) and which
    entry of the schedule it ran for."""

    model_config = ConfigDict(extra="forbid")

    kind: str
    #: index into ``Journal.schedule``; None when no planned fault of this kind is left (a test's
    #: ``nemesis`` fixture injects faults no schedule planned)
    planned: int | None
    start_s: float
    #: None: never ended by itself (the run stopped first; the heal ended it)
    end_s: float | None
    #: the nemesis's record of it: node, links, target, workload, ...
    detail: dict[str, Any] = Field(default_factory=dict)
    #: seconds it waited, once due, for the workload it aims at to make progress since the previous
    #: fault on it (chaos/nemesis.py); None: it aims at none (a broker, a link) or waited for nothing
    waited_s: float | None = None
    #: it began without that progress: none came within the nemesis's deadline
    wait_expired: bool = False
    #: what was in flight on its target while it was active; None: not recorded (a run made before,
    #: or one whose history could not be read)
    hit: FaultHit | None = None


class RunTopic(BaseModel):
    """A topic the run created on an external cluster (its name carries the run's tag), and whether
    the run deleted it afterwards."""

    name: str
    #: True: deleted (or already gone); False: its deletion failed (``cleanup_problems`` says why);
    #: None: not tried: the run ended before its clean-up (a SIGKILL), so the topic is still there
    deleted: bool | None = None


class Journal(BaseModel):
    """Everything a run folder records about its run that is not in the history."""

    # a journal a newer eos-chaos wrote (more fields, same format) still reads: check and report work
    model_config = ConfigDict(extra="ignore")

    format: int = FORMAT
    scenario: str
    #: what the run was given: a library name or a YAML file
    source: str
    #: the scenario as run (topic names made unique to the run, the seed's schedule in ``schedule``)
    resolved: dict[str, Any]
    seed: int
    backend: str
    kafka_version: str | None = None
    versions: dict[str, Any] = Field(default_factory=dict)
    #: the transaction.version the run asked the cluster to be formatted at (None: any; the
    #: release's default for a cluster the run starts)
    transaction_version_asked: int | None = None
    #: the cluster's finalized feature levels read back when the run began (harness/kafka/features.py):
    #: ``transaction.version``, ``metadata.version``, ...; the level in force, not the flag
    features: dict[str, int] = Field(default_factory=dict)
    #: an external cluster's facts as read from it when the run began (versions, broker settings,
    #: features: harness/kafka/cluster_facts.py), not as assumed; None on the built-in backends
    cluster: dict[str, Any] | None = None
    #: an external cluster: the run's topics and consumer groups deleted afterwards (what was not, one line each)
    cleanup_problems: list[str] = Field(default_factory=list)
    #: an external cluster: the topics the run created there, each with whether it was deleted;
    #: written when they are created, so a killed run's folder still names what it left
    run_topics: list[RunTopic] = Field(default_factory=list)
    #: the command that runs the same scenario again (harness/rundir/runinfo.py)
    command: str | None = None
    started: str = Field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    finished: str | None = None
    #: the faults planned for this seed (harness/schedule.py), in start order
    schedule: list[dict[str, Any]] = Field(default_factory=list)
    #: when the nemesis began its schedule, every workload ready, in seconds on the history's clock: a fault planned
    #: ``at`` seconds in was due at ``schedule_t0_s + at`` (the cluster's start comes before it)
    schedule_t0_s: float | None = None
    #: seconds from the workloads' start until each was ready (its first finished transaction, copy
    #: or micro-batch: harness/run/readiness.py); the schedule starts when the last one is
    workloads_ready_s: dict[str, float] = Field(default_factory=dict)
    #: seconds the run lasted past the scenario's duration because a blocking fault (the epoch pump)
    #: went past its budget on a slow machine (chaos/faults/base.py ``FaultContext.extend_run``)
    extended_s: float = 0.0
    #: seconds the run ended before the scenario's duration: its faults were over and
    #: ``end_after_faults_s`` had passed since (harness/run/scenario.py)
    ended_early_s: float = 0.0
    #: the wall-clock time (seconds since the epoch) at the history clock's zero: where the wire
    #: proxy's events (stamped so) fall on it
    history_zero_unix_s: float | None = None
    faults: list[FaultRun] = Field(default_factory=list)
    healed: bool | None = None
    heal_problems: list[str] = Field(default_factory=list)
    nemesis_errors: list[str] = Field(default_factory=list)
    interrupted: bool = False
    #: what a cluster left up by another command had still faulted when this run began (healed then)
    faulted_at_start: list[str] = Field(default_factory=list)
    workloads_killed_at_stop: list[str] = Field(default_factory=list)
    #: restarted Spark drivers that finished no micro-batch before the recovery deadline (their
    #: replay was not judged), each with the last state seen
    not_recovered: list[str] = Field(default_factory=list)
    #: the scenario's expectation (harness/run/scenario.py ``Expect``)
    expected: dict[str, Any] = Field(default_factory=dict)
    #: an app under test (docs/APPS.md): the drain after heal, the instances started again for it, how
    #: each instance's wrapper exited at the end, the output records read, the contract function's
    #: inputs or its error
    app: AppFacts | None = None
    #: the run folder of the cluster the run used, when it is not this one (a shared cluster: a pytest
    #: session's, a soak's, ``cluster up``'s): where the brokers' and Toxiproxy's logs are
    cluster_dir: str | None = None

    def save(self, folder: RunFolder) -> None:
        """Write (or rewrite) ``journal.json``, atomically."""
        write_json(folder.journal, self.model_dump(mode="json"))

    @classmethod
    def load(cls, folder: RunFolder) -> Journal | None:
        """The folder's journal; None for a folder made before runs kept one. ``ConfigError`` when it
        is broken."""
        data = folder.read_json(folder.journal)
        if data is None:
            return None
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(f"{folder.journal}: not a run journal ({problems_in_brief(exc)})") from None

    def run_facts(self) -> dict[str, Any]:
        """``verdict.json``'s ``run`` section: how the run went, apart from what the history shows."""
        return {"healed": self.healed, "heal_problems": self.heal_problems, "nemesis_errors": self.nemesis_errors,
                "interrupted": self.interrupted, "faulted_at_start": self.faulted_at_start,
                "workloads_killed_at_stop": self.workloads_killed_at_stop, "not_recovered": self.not_recovered,
                "transaction_version": self.transaction_version, "features": self.features,
                **({"faults_hit": hit} if (hit := self.faults_hit()) is not None else {}),
                **({"app": self.app.model_dump(mode="json")} if self.app is not None else {}),
                **({"extended_s": self.extended_s} if self.extended_s else {}),
                **({"ended_early_s": self.ended_early_s} if self.ended_early_s else {})}

    def faults_hit(self) -> dict[str, int] | None:
        """How many faults have a hit record, how many of them hit nothing and how many began on a
        workload that had made no progress (None: no fault has a record)."""
        known = [f for f in self.faults if f.hit is not None]
        if not known:
            return None
        return {"faults": len(known), "hit_nothing": sum(1 for f in known if f.hit is not None and not f.hit.hit),
                "began_without_progress": sum(1 for f in self.faults if f.wait_expired)}

    @property
    def transaction_version(self) -> int | None:
        """The transaction.version read back when the run began (None: not recorded)."""
        return self.features.get("transaction.version")


def fault_runs(events: list[dict[str, Any]], schedule: list[dict[str, Any]]) -> list[FaultRun]:
    """The nemesis's fault events (history ops of ``f: fault``, each ``value`` with ``kind`` and
    ``phase`` start|stop) as faults with start and end, each tied to the schedule entry it ran for:
    the first planned fault of its kind not yet started, else (a fault repeated ``every`` few
    seconds, a rolling restart's nodes) the last one of its kind that was."""
    runs: list[FaultRun] = []
    open_: dict[tuple[str, ...], list[FaultRun]] = {}
    claimed: set[int] = set()
    for op in sorted(events, key=lambda op: op["time"]):
        v = op.get("value") or {}
        if "kind" not in v:
            continue
        t = op["time"] / 1e9
        if v.get("phase") == "start":
            run = FaultRun(kind=v["kind"], planned=_planned(v["kind"], schedule, claimed), start_s=t, end_s=None,
                           detail={k: x for k, x in v.items() if k not in ("kind", "phase", *_WAIT)},
                           waited_s=v.get("waited_s"), wait_expired=bool(v.get("wait_expired")))
            runs.append(run)
            open_.setdefault(_pairing(v), []).append(run)
        elif v.get("phase") == "stop" and open_.get(_pairing(v)):
            run = open_[_pairing(v)].pop(0)
            run.end_s = t
            if v.get("open_transactions"):  # an app's kill: what it left open (harness/history/hits.py)
                run.detail["left_open"] = v["open_transactions"]
    return runs


def _pairing(value: dict[str, Any]) -> tuple[str, ...]:
    # the nemesis's own pairing: a stop carries its start's kind and node / links / workload
    return value["kind"], str(value.get("node")), str(value.get("links")), str(value.get("workload"))


def _planned(kind: str, schedule: list[dict[str, Any]], claimed: set[int]) -> int | None:
    mine = [i for i, f in enumerate(schedule) if _RECORDED_AS.get(f.get("kind", ""), f.get("kind")) == kind]
    fresh = [i for i in mine if i not in claimed]
    if fresh:
        claimed.add(fresh[0])
        return fresh[0]
    started = [i for i in mine if i in claimed]
    return started[-1] if started else None


def mostly_nothing(faults_hit: dict[str, int] | None) -> bool:
    """Most of a run's faults hit nothing (``Journal.faults_hit``): its faults mostly tested nothing."""
    if not faults_hit:
        return False
    return faults_hit.get("faults", 0) > 0 and faults_hit.get("hit_nothing", 0) * 2 > faults_hit["faults"]
