"""Scenarios: which workloads run, for how long, which faults hit, and what the verdict must say.
Built-in scenarios are YAML files in ``harness/scenarios/``; each is validated (pydantic) before
anything starts, and an error names the file, the field and what is allowed.
"""

from __future__ import annotations

import difflib
import math
import re
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticCustomError

from chaos import schedule
from chaos.faults import REGISTRY, Fault, FaultKind, needing, spark_cluster_kinds
from chaos.faults import problems as fault_problems
from chaos.schedule import drawn, takes_workload
from chaos.targets import TargetDefaults
from harness.base.errors import ConfigError
from harness.base.yaml_strict import MAX_FILE_BYTES, MAX_YAML_DEPTH, line_of, read_yaml
from harness.run.scenario_topics import TopicList, TopicSpec, entry_problem
from harness.rundir.runfolder import RUN_TAG_MAX
from harness.workloads import registry
from harness.workloads.clients import DEFAULT_LIBRARY
from harness.workloads.clients import check_settings as check_client_settings
from harness.workloads.clients import parse as parse_library

#: ``Fault`` is re-exported: a scenario's faults, as the runner and the plugin name them.
__all__ = ["LIBRARY", "MAX_DURATION_S", "MAX_FILE_BYTES", "MAX_YAML_DEPTH", "Expect", "Fault", "Mix", "Scenario", "TopicList", "TopicSpec", "Workload",
           "WorkloadKind", "load", "names"]

LIBRARY = Path(__file__).resolve().parents[1] / "scenarios"
WorkloadKind = registry.KindName
#: A run lasts at most a day: longer is a typo (or ``inf``), and a dry run of it would never end.
MAX_DURATION_S = 24 * 3600.0
#: After heal, every partition's last stable offset must reach its high watermark within this long
#: (the scenario's ``lso_bound_s``). Longer than transaction.timeout.ms (60 s, workloads/client.py)
#: plus the coordinator's abort check interval (5 s, clusters/kafka/render.py): a transaction left open by
#: a killed producer is aborted by then; past it, a transaction hangs and lso-stall reports it.
LSO_BOUND_S = 90.0
#: Kafka's rule for a topic name (``org.apache.kafka.common.internals.Topic``): 1 to 249 of these
#: characters, and not ``.`` or ``..``. A name it breaks fails only once the cluster is up.
TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")
#: Kafka's limit on a topic name, which a kept name (``keep_name: true``) is held to as written.
MAX_KEPT_TOPIC = 249
#: A scenario's topic name is this long at most: a run adds its tag (``NAME.<tag>``), and Kafka's
#: limit is for the name it gets.
MAX_TOPIC = MAX_KEPT_TOPIC - 1 - RUN_TAG_MAX
#: Kafka's own topics (``__consumer_offsets``, ``__transaction_state``) begin so: a kept name may not,
#: since the run deletes a kept topic left over before it creates it.
INTERNAL_PREFIX = "__"

#: A finite, non-negative number of seconds (up to a run's longest).
Seconds = Annotated[float, Field(ge=0, le=MAX_DURATION_S, allow_inf_nan=False)]


def _invalid(where: tuple[str | int, ...], message: str) -> PydanticCustomError:
    """A problem found across fields, located at ``where`` (pydantic would place it at the root)."""
    return PydanticCustomError("scenario", "{message}", {"message": message, "where": where})


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Workload(Strict):
    kind: WorkloadKind
    count: int = Field(1, ge=1, le=16)
    #: workload settings: each kind's model in harness/workloads/registry.py (names, defaults, bounds)
    settings: dict[str, Any] = {}
    #: the client library its processes run on: ``NAME`` or ``NAME@VERSION`` (harness/workloads/clients)
    library: str = DEFAULT_LIBRARY
    #: the library's own settings on top of the workload's: how negative controls misconfigure a client
    client: dict[str, Any] = {}

    @field_validator("settings")
    @classmethod
    def _settings_of_kind(cls, settings: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        if "kind" in info.data:  # else the kind itself is wrong, and said so
            registry.check_settings(info.data["kind"], settings)
        return settings

    @model_validator(mode="after")
    def _library_of_kind(self) -> Workload:
        registry.check_library(self.kind, self.library, self.settings)
        check_client_settings(self.library, self.client)
        return self


class Mix(Strict):
    """Faults drawn from the seed: one at a time, each ``duration`` long, ``gap`` apart."""

    #: (kind, weight) pairs
    kinds: list[tuple[FaultKind, Seconds]]
    start: Seconds = Field(5.0, description="seconds before the first fault")
    #: (shortest, longest) of a fault; a nan here would make planning loop for ever
    duration: tuple[Seconds, Seconds] = (3.0, 8.0)
    gap: tuple[Seconds, Seconds] = (3.0, 10.0)
    #: no fault may still run this close to the end (workloads get a calm tail before heal)
    quiet_end: Seconds = 5.0
    #: kill-workload, pause-workload: which workload kinds may be hit
    workloads: list[WorkloadKind] = []

    @field_validator("kinds")
    @classmethod
    def _a_kind_to_draw(cls, kinds: list[tuple[str, float]]) -> list[tuple[str, float]]:
        if not kinds:
            raise _invalid(("mix", "kinds"), "empty: a mix draws from at least one [kind, weight] pair, e.g. [[kill, 1]]")
        if not any(w > 0 for _, w in kinds):
            raise _invalid(("mix", "kinds"), "every weight is 0: at least one kind needs a weight above 0 to be drawn")
        return kinds
    @model_validator(mode="after")
    def _drawable(self) -> Mix:
        for i, (kind, _) in enumerate(self.kinds):
            try:  # as the schedule will draw it (chaos/schedule.py), with the first workload it may hit
                drawn(kind, self.start, self.duration[0], lambda: self.workloads[0] if self.workloads else None)
            except ValidationError as exc:
                hint = "; give mix.workloads: the workload kinds it may hit" if takes_workload(kind) and not self.workloads else ""
                said = "; ".join(fault_problems(exc))
                raise _invalid(("mix", "kinds", i), f"a mix cannot draw {kind}: {said}{hint}") from None
        return self


class Expect(Strict):
    #: the verdict the run must reach; null: a hunt (kip890-*), where either verdict is an answer and
    #: only the other expectations (minimums, a healed run) decide whether the run tested anything
    valid: bool | None = True
    #: checks that must find something (negative controls)
    fires: list[str] = []
    min_ok_txns: int = 0
    min_fenced: int = 0
    #: producers dropped after an indefinite outcome (txn-producer ``recreate_on_indefinite``)
    min_recreated: int = 0
    #: error names the clients must have met (``stats.errors_seen``): proof that an incident
    #: replay reproduced the incident, e.g. ``_TIMED_OUT`` for a commit that timed out; ``A|B``: one
    #: of them (an error that differs by transaction.version)
    errors: list[str] = []
    #: Spark job: micro-batches committed, and replayed batches skipped because their marker was
    #: committed (proof that a kill hit the window between Kafka's commit and Spark's commit log)
    min_spark_batches: int = 0
    min_replays_skipped: int = 0


class Scenario(Strict):
    name: str
    description: str
    duration: float = Field(45.0, gt=0, le=MAX_DURATION_S, allow_inf_nan=False)
    #: end the run this many seconds after its last fault ended, when that comes before ``duration``
    #: (None: run the whole duration). For a scenario whose one fault takes as long as the machine
    #: makes it (an epoch pump, a failover): its duration is sized for the slowest machine, and a
    #: fast one need not wait it out. Not with a fault that repeats (``every``) or a ``mix``
    end_after_faults_s: float | None = Field(None, ge=0, le=MAX_DURATION_S, allow_inf_nan=False)
    #: names, or mappings {name, keep_name, partitions, config} (harness/run/scenario_topics.py); read
    #: as the list of names, each entry's own settings in ``topics.specs``
    topics: TopicList = Field(default_factory=lambda: TopicList(["eos-a", "eos-b"]))
    #: every topic's, unless its entry gives its own
    partitions: int = Field(3, ge=1, le=64)
    workloads: list[Workload]
    faults: list[Fault] = []
    mix: Mix | None = None
    broker_config: dict[str, str] = {}
    #: how long the final reads wait for every partition's LSO to reach its end before lso-stall
    #: reports it stuck. Shorter than the default only where no producer that may be killed
    #: mid-transaction has the default 60 s transaction timeout (negative-lso-stall: its only
    #: producer's timeout is 10 min, so it hangs whatever the bound)
    lso_bound_s: float = Field(LSO_BOUND_S, ge=10, le=3600, allow_inf_nan=False)
    #: where the Spark job runs: local (``local[2]`` inside its driver) or standalone (a master and
    #: two workers the run starts, clusters/spark/standalone.py; executor and worker faults need it)
    spark: Literal["local", "standalone"] = "local"
    expect: Expect = Expect()

    @field_validator("topics")
    @classmethod
    def _kafka_topic_names(cls, topics: TopicList) -> TopicList:
        if not topics:
            raise _invalid(("topics",), "empty: a scenario needs at least one topic (its workloads write and read them)")
        seen: dict[str, str] = {}
        for i, topic in enumerate(topics):
            # a bare name is `topics[i]`; a mapping's name its `name` (a mapping of a name alone reads as a bare one)
            where: tuple[str | int, ...] = ("topics", i) if topics.spec(topic).plain else ("topics", i, "name")
            problem = _topic_name_problem(topic, topics.spec(topic).keep_name)
            if problem:
                raise _invalid(where, problem)
            # Kafka refuses a topic whose name differs from an existing one's only in '.' against '_'
            # (their metric names would be one)
            key = topic.replace(".", "_")
            if key in seen:
                raise _invalid(where, f"{topic!r} is listed twice; a topic is listed once" if seen[key] == topic
                               else f"{topic!r} collides with {seen[key]!r}: Kafka refuses topic names that differ "
                                    "only in '.' against '_'")
            seen[key] = topic
        return topics

    @field_validator("workloads")
    @classmethod
    def _a_workload(cls, workloads: list[Workload]) -> list[Workload]:
        if not workloads:
            raise _invalid(("workloads",), f"empty: a scenario runs at least one workload; kinds: "
                                           f"{', '.join(get_args(WorkloadKind))}")
        return workloads

    @model_validator(mode="after")
    def _workloads_for_faults(self) -> Scenario:
        kinds = {w.kind for w in self.workloads}
        wanted = {f.kind for f in self.faults} | {k for k, _ in (self.mix.kinds if self.mix else [])}
        for needed in get_args(WorkloadKind):
            if wanted & set(needing(needed)) and needed not in kinds:
                raise ValueError(f"faults {sorted(wanted & set(needing(needed)))} need a {needed} workload; this "
                                 f"scenario has {sorted(kinds)}")
        cluster_faults = sorted(wanted & set(spark_cluster_kinds()))
        if cluster_faults and self.spark != "standalone":
            raise _invalid(("spark",), f"faults {cluster_faults} act on a standalone Spark cluster; set spark: standalone "
                                       f"(it is {self.spark})")
        if self.spark == "standalone" and not kinds & set(registry.spark_kinds()):
            raise _invalid(("spark",), f"standalone: a Spark cluster runs a {' or '.join(registry.spark_kinds())} "
                                       f"workload; this scenario has {sorted(kinds)}")
        allowed = get_args(WorkloadKind)
        for i, f in enumerate(self.faults):
            workload = getattr(f, "workload", None)
            if workload is not None and workload not in allowed:
                raise _invalid(("faults", i, "workload"), f"{workload!r}; allowed: {', '.join(allowed)}")
            problem = self._instance_problem(workload, getattr(f, "instance", None))
            if problem:
                raise _invalid(("faults", i, "instance"), problem)
        for i, w in enumerate(self.workloads):
            missing = [k for k in registry.kind(w.kind).required_topics(w.settings) if not _names_topics(w.settings.get(k), self.topics)]
            if missing:
                raise _invalid(("workloads", i, "settings"), f"{'an' if w.kind[0] in 'aeiou' else 'a'} {w.kind} workload needs settings {missing}, "
                                                              f"each one of the scenario's topics {self.topics}")
        self._entry_problems()
        for kind in {w.kind for w in self.workloads if registry.kind(w.kind).roles}:
            entries = [i for i, w in enumerate(self.workloads) if w.kind == kind]
            if len(entries) > 1:  # its processes are named by role, so a second entry's would be the first's
                raise _invalid(("workloads", entries[1], "kind"), f"a second {kind} entry: its processes are named by "
                                                                  f"role ({', '.join(registry.kind(kind).roles)}); "
                                                                  f"a scenario has one")
        for i, f in enumerate(self.faults):
            found = self._leader_of_problem(f)
            if found:
                raise _invalid(("faults", i, found[0]), found[1])
            setting = f.broker_config_problem(self.broker_config)
            if setting:
                raise _invalid(("broker_config", setting[0]), f"faults[{i}] ({f.kind} at {f.at:g}s): {setting[1]}")
        if self.mix is not None:
            problem = schedule.mix_problem(self.mix, self.duration)
            if problem:
                raise _invalid(("mix",), problem)
        if self.end_after_faults_s is not None:
            self._end_after_faults_problem()
        if self.expect.fires:
            from harness.checker import CHECKS  # numpy and pandas: loaded only for a scenario that names checks

            for i, check in enumerate(self.expect.fires):
                if check not in CHECKS:
                    raise _invalid(("expect", "fires", i), f"{check!r} is not a check; allowed: {', '.join(CHECKS)}"
                                                           f"{_did_you_mean(check, list(CHECKS))}")
        return self

    def _end_after_faults_problem(self) -> None:
        """``end_after_faults_s`` needs faults that are over before the duration: none repeating, no mix."""
        if self.mix is not None:
            raise _invalid(("end_after_faults_s",), "a mix draws faults until the duration ends: they are never "
                                                    "over before it (drop end_after_faults_s or the mix)")
        if not self.faults:
            raise _invalid(("end_after_faults_s",), "the scenario has no faults to end after")
        again = next((i for i, f in enumerate(self.faults) if f.every), None)
        if again is not None:
            raise _invalid(("end_after_faults_s",), f"faults[{again}] repeats (every {self.faults[again].every:g}s) "
                                                    "until the duration ends: it is never over before it")

    def _entry_problems(self) -> None:
        """At most one entry of a kind that allows one (an app), and each entry's own problems
        given the scenario (an app's placeholders must name what there is: docs/APPS.md)."""
        for i, w in enumerate(self.workloads):
            why = registry.kind(w.kind).one_entry
            if why is not None and any(v.kind == w.kind for v in self.workloads[:i]):
                raise _invalid(("workloads", i, "kind"), f"a second {w.kind}: {why}")
        for i, w in enumerate(self.workloads):
            check = registry.kind(w.kind).problems
            problems = check(w.settings, self.topics) if check is not None else []
            if problems:
                raise _invalid(("workloads", i, "settings", *problems[0][0]), problems[0][1])
        entries = [(w.kind, w.settings) for w in self.workloads]
        for i, w in enumerate(self.workloads):
            others = registry.kind(w.kind).others_problems
            found = others(i, entries, self.topics) if others is not None else []
            if found:
                j, why = found[0]
                raise _invalid(("workloads", j, "settings"), why)
        for i, w in enumerate(self.workloads):
            src = w.settings.get("input")
            same = registry.kind(w.kind).same_partition
            for key in same(w.settings) if same is not None else ():
                dst = w.settings.get(key)
                if not (isinstance(src, str) and isinstance(dst, str) and {src, dst} <= set(self.topics)):
                    continue  # a topic the scenario lacks is said above
                if self.partitions_of(dst) < self.partitions_of(src):
                    raise _invalid(("workloads", i, "settings", key), (
                        f"{dst!r} has {self.partitions_of(dst)} partitions, fewer than its input {src!r}'s "
                        f"{self.partitions_of(src)}: a {w.kind} writes each record to the partition of the number it "
                        f"was read from; give {dst} at least {self.partitions_of(src)}"))

    def _instance_problem(self, workload: str | None, instance: int | None) -> str | None:
        """What is wrong with a workload fault's ``instance`` (its process ``<workload>-N``), if anything:
        it failed only when the fault came, the cluster long up."""
        if workload is None or instance is None:
            return None
        if registry.kind(workload).roles:
            return (f"{instance}: a {workload}'s processes are named by role ({', '.join(registry.kind(workload).roles)}), "
                    "not numbered; leave instance out")
        total = sum(w.count for w in self.workloads if w.kind == workload)
        if instance >= total:
            runs = f"{workload}-0 to {workload}-{total - 1}" if total > 1 else f"{workload}-0" if total else "none"
            return f"{instance}: the scenario runs {total} {workload} process{'' if total == 1 else 'es'} ({runs})"
        return None


    def _leader_of_problem(self, fault: Fault) -> tuple[str, str] | None:
        """What is wrong with the ``of`` of a fault whose target (or peer) is a partition's leader:
        it must be TOPIC/PARTITION of this scenario (else the fault fails only once it is due). A
        wire fault's peer has its own ``peer_of``; a network fault's peer shares ``of``."""
        of = getattr(fault, "of", None)
        peer_field = "peer_of" if hasattr(fault, "peer_of") else "of"
        ends = [(getattr(fault, "target", None), "of", of),
                (getattr(fault, "peer", None), peer_field, getattr(fault, peer_field, None))]
        for role, field_name, what in ends:
            if role == "leader" and what is not None:
                problem = self._partition_problem(what)
                if problem:
                    return field_name, problem
        return None  # a coordinator's `of` is a transactional.id or a group, which no list holds

    def _partition_problem(self, of: str) -> str | None:
        """What is wrong with ``of`` as TOPIC/PARTITION of this scenario."""
        topic, _, partition = of.rpartition("/")
        if not topic or not re.fullmatch(r"[0-9]+", partition):
            return f"{of!r}: a leader is of TOPIC/PARTITION, e.g. {self.topics[0]}/0"
        if topic not in self.topics:
            return (f"{of!r}: {topic!r} is not one of the scenario's topics ({', '.join(self.topics)})"
                    f"{_did_you_mean(topic, self.topics)}")
        if int(partition) >= self.partitions_of(topic):
            return f"{of!r}: topic {topic} has partitions 0 to {self.partitions_of(topic) - 1}"
        return None

    def partitions_of(self, topic: str) -> int:
        """How many partitions ``topic`` has: its entry's ``partitions``, else the scenario's."""
        return self.topics.spec(topic).partitions or self.partitions

    def topic_partitions(self) -> dict[str, int]:
        """Every topic's partitions, by name."""
        return {t: self.partitions_of(t) for t in self.topics}

    def kept_topics(self) -> list[str]:
        """The topics the run names as written (``keep_name: true``)."""
        return [t for t in self.topics if self.topics.spec(t).keep_name]

    def with_duration(self, seconds: float, flag: str = "--duration") -> Scenario:
        """This scenario lasting ``seconds`` instead; ConfigError naming ``flag`` unless
        0 < seconds <= 24 h (inf and nan included), if a shorter run would end before a fault
        starts, or if the mix could not be planned in that long."""
        if not (math.isfinite(seconds) and 0 < seconds <= MAX_DURATION_S):
            raise ConfigError(f"{flag} {seconds}: a run lasts more than 0 and at most {MAX_DURATION_S:.0f} "
                              "seconds (24 h)")
        # a fault at the scenario's own end is the scenario's choice; one the override cuts off is not
        cut = [f for f in self.faults if f.at >= seconds] if seconds < self.duration else []
        if cut:
            raise ConfigError(f"{flag} {seconds:g}: the run would end before "
                              f"{'these faults start' if len(cut) > 1 else 'this fault starts'}: "
                              f"{_and([f'{f.kind} at {f.at:g}s' for f in cut])}; give {flag} more than "
                              f"{max(f.at for f in cut):g} (the scenario's is {self.duration:g})")
        problem = schedule.mix_problem(self.mix, seconds) if self.mix is not None else None
        if problem:
            raise ConfigError(f"{flag} {seconds:g}: the scenario's mix: {problem}")
        return self.model_copy(update={"duration": seconds})

    def with_library(self, library: str, flag: str = "--library") -> Scenario:
        """This scenario with every workload that can choose running on ``library``; ConfigError
        naming ``flag`` for an unknown library. Kinds bound to one library keep theirs."""
        try:
            parse_library(library)
        except ValueError as exc:
            raise ConfigError(f"{flag}: {exc}") from None
        able = [w for w in self.workloads if parse_library(library).name in registry.kind(w.kind).libraries]
        if not able:  # it would change nothing, and a matrix column would say it ran what it never ran
            bound = "; ".join(f"{k} runs on {', '.join(registry.kind(k).libraries)} only"
                              for k in sorted({w.kind for w in self.workloads}))
            notes = [n for k in sorted({w.kind for w in self.workloads}) if (n := registry.kind(k).library_note)]
            why = f" ({'; '.join(notes)})" if notes else ""
            raise ConfigError(f"{flag} {library}: scenario {self.name} has no workload that can run on it: {bound}{why}")
        workloads = [w.model_copy(update={"library": library}) if w in able else w for w in self.workloads]
        for w in workloads:
            try:
                registry.check_library(w.kind, w.library, w.settings)
                check_client_settings(w.library, w.client)
            except ValueError as exc:
                raise ConfigError(f"{flag} {library}: {exc}") from None
        return self.model_copy(update={"workloads": workloads})

    def with_producers(self, producers: int, flag: str = "--producers") -> Scenario:
        """This scenario with every entry of a kind that runs producers side by side (the
        txn-producer: ``registry.threads_kinds``) running ``producers`` per process (its
        ``producers`` setting; an app's feeder keeps its one); ConfigError naming ``flag`` when the
        scenario has none, the number is out of bounds or an entry's library cannot."""
        able = registry.threads_kinds()
        entries = [i for i, w in enumerate(self.workloads) if w.kind in able]
        if not entries:
            raise ConfigError(f"{flag} {producers}: scenario {self.name} has no {' or '.join(able)} workload "
                              f"(it has {', '.join(sorted({w.kind for w in self.workloads}))})")
        workloads = list(self.workloads)
        for i in entries:
            w = workloads[i]
            settings = {**w.settings, registry.PRODUCERS: producers}
            try:
                registry.check_settings(w.kind, settings)
                registry.check_library(w.kind, w.library, settings)
            except ValueError as exc:
                raise ConfigError(f"{flag} {producers}: {exc}") from None
            workloads[i] = w.model_copy(update={"settings": settings})
        return self.model_copy(update={"workloads": workloads})

    def target_defaults(self) -> TargetDefaults:
        """What fault roles are of when a fault gives no ``of``: the first topic, the first
        txn-producer's transactional.id (an app's: the first of its own:
        ``registry.default_transactional_id``), the first consumer group a workload consumes in (the
        copier's, an app's)."""
        groups = [g for w in self.workloads if (g := registry.kind(w.kind).group_of(w.settings)) is not None]
        txn_id = registry.default_transactional_id([(w.kind, w.settings) for w in self.workloads])
        return TargetDefaults(topic=self.topics[0] if self.topics else None, transactional_id=txn_id,
                              group=groups[0] if groups else None)


def _cwd_from(sc: Scenario, folder: Path) -> Scenario:
    """``sc`` with its workloads' working folders (a kind's ``cwd_setting``: an app's) and the files
    their settings name (``files_from``: an app feeder's records) absolute: a relative one (or no
    folder) is the scenario file's ``folder``'s, so the file runs the same from wherever it is started."""
    workloads = []
    for w in sc.workloads:
        key = registry.kind(w.kind).cwd_setting
        cwd = w.settings.get(key) if key else None
        if key and not (cwd and (Path(cwd).is_absolute() or cwd.startswith("{"))):
            w = w.model_copy(update={"settings": {**w.settings, key: str(folder / cwd) if cwd else str(folder)}})
        files_from = registry.kind(w.kind).files_from
        if files_from is not None:
            w = w.model_copy(update={"settings": files_from(w.settings, folder)})
        workloads.append(w)
    return sc.model_copy(update={"workloads": workloads})


def _topic_name_problem(topic: str, kept: bool) -> str | None:
    """What is wrong with ``topic`` as a name (None: nothing): Kafka's rule, and the room the run's tag
    needs unless the name is kept as written."""
    if not TOPIC_NAME.fullmatch(topic) or topic in (".", ".."):
        return (f"{topic!r} is not a Kafka topic name; allowed: 1 to 249 of a-z, A-Z, 0-9, '.', '_' and '-', "
                "other than '.' and '..'")
    if kept and topic.startswith(INTERNAL_PREFIX):
        return (f"{topic!r} begins with {INTERNAL_PREFIX!r}, as Kafka's own topics do; a kept name may not (the run "
                "deletes a kept topic left over before it creates it)")
    if not kept and len(topic) > MAX_TOPIC:
        return (f"{len(topic)} characters, {topic[:20]!r}...; allowed: at most {MAX_TOPIC} (Kafka's 249, less "
                f"{1 + RUN_TAG_MAX} for the run's tag: the run names it NAME.<tag>; keep_name: true keeps it as "
                f"written, up to {MAX_KEPT_TOPIC})")
    return None


def _names_topics(value: Any, topics: list[str]) -> bool:
    """Whether a setting names one of ``topics``, or (a list) only those."""
    if isinstance(value, list):
        return bool(value) and all(isinstance(v, str) and v in topics for v in value)
    return value in topics


def names() -> list[str]:
    return sorted(p.stem for p in LIBRARY.glob("*.yaml"))


def load(name_or_path: str) -> Scenario:
    """The scenario of that name in the library, or in that file; ConfigError (naming the file, the
    line, the field in the scenario's own words and what is allowed) if it is not valid."""
    path = Path(name_or_path)
    try:
        if not path.suffix and not path.is_file():  # a name; an existing file is loaded whatever its name
            named = LIBRARY / f"{name_or_path}.yaml"
            if not named.exists() and path.exists():  # a folder or a device given by its path
                raise ConfigError(f"scenario file {path} is {'a folder' if path.is_dir() else 'not a regular file'}, "
                                  "not a YAML file")
            if not named.exists():
                raise ConfigError(f"unknown scenario {name_or_path!r}; known: {', '.join(names())}")
            path = named
    except OSError as exc:  # permission denied, a name too long, an I/O error
        raise ConfigError(f"scenario file {path} cannot be read: {exc.strerror or exc}") from None
    root, data = read_yaml(path, "scenario")
    if not isinstance(data, dict):
        raise ConfigError(f"{path}:1: a scenario is a mapping (name, description, workloads, faults, ...), "
                          f"not {type(data).__name__ if data is not None else 'an empty file'}")
    try:
        sc = Scenario.model_validate(data)
    except ValidationError as exc:
        problems = [_problem(path, root, data, e) for e in exc.errors()]
        raise ConfigError("invalid scenario:\n  " + "\n  ".join(problems)) from exc
    sc = _cwd_from(sc, path.parent.resolve())
    late = [i for i, f in enumerate(sc.faults) if f.at > sc.duration]
    if late:
        problems = [f"{path}:{line_of(root, ('faults', i, 'at'))}: {_where(('faults', i, 'at'), data)[0]}: "
                    f"{sc.faults[i].at:g}s is past the scenario's end (duration {sc.duration:g}s)" for i in late]
        raise ConfigError("invalid scenario:\n  " + "\n  ".join(problems))
    return sc


def problems(exc: ValidationError, data: Any) -> list[str]:
    """``exc`` (a scenario validated from ``data``, not from a file) as one line per problem, in the
    scenario's own words (``faults[0] (kill at 5s) target: ...``): what the pytest plugin says of
    ``run_scenario`` overrides."""
    out = []
    for e in exc.errors():
        loc = tuple((e.get("ctx") or {}).get("where", e["loc"])) + (("kind",) if e["type"].startswith("union_tag") else ())
        words, located = _where(loc, data)
        out.append(f"{words + ': ' if words else ''}{_message(e, located, data)}")
    return out


def _problem(path: Path, root: yaml.Node | None, data: Any, e: Any) -> str:
    """One pydantic error as ``file:line: where: what (allowed: ...)``."""
    loc = tuple((e.get("ctx") or {}).get("where", e["loc"]))
    if e["type"] in ("union_tag_invalid", "union_tag_not_found"):
        loc += ("kind",)  # the fault's kind is what is wrong
    words, located = _where(loc, data)
    return f"{path}:{line_of(root, located)}: {words + ': ' if words else ''}{_message(e, located, data)}"


def _where(loc: tuple[Any, ...], data: Any) -> tuple[str, tuple[Any, ...]]:
    """``loc`` in the scenario's own words (``faults[0] (kill at 5s) target``) and the part of it
    that exists in the file. pydantic's union tags (``kill``, ``literal[...]``) are dropped."""
    words, node = "", data
    located: list[Any] = []
    tag = None  # a fault's kind, which pydantic puts in the path right after the fault
    for i, key in enumerate(loc):
        if key == tag:
            tag = None
            continue
        tag = None
        if isinstance(node, list) and isinstance(key, int) and key < len(node):
            node = node[key]
            words += f"[{key}]"
            if located == ["faults"] and isinstance(node, dict):
                tag = node.get("kind")
                if "at" in node and "kind" in node:
                    words += f" ({node['kind']} at {node['at']}s)"
        elif isinstance(node, dict) and str(key) in node:
            node = node[str(key)]
            words += (" " if words.endswith(")") else "." if words else "") + str(key)
        elif i == len(loc) - 1 and str(key) in _FIELDS:  # a missing field
            words += (" " if words.endswith(")") else "." if words else "") + str(key)
            continue
        else:
            continue
        located.append(key)
    return words, tuple(located)


def _message(e: Any, loc: tuple[Any, ...], data: Any) -> str:
    """pydantic's message in the scenario's words, with the allowed keys or values and a "did you
    mean" where one is close."""
    kind = e["type"]
    if kind == "extra_forbidden":
        owners = [k for k, m in REGISTRY.items() if str(loc[-1]) in m.model_fields]
        node = _at(loc[:-1], data)
        if owners and loc[0] == "faults" and isinstance(node, dict):
            return f"`{loc[-1]}` is for {_and(owners)} only, not {node.get('kind')}"
        return f"unknown key (allowed: {', '.join(_fields_at(loc[:-1], data))}){_did_you_mean(loc[-1], _fields_at(loc[:-1], data))}"
    if kind == "literal_error":
        allowed = [x.strip(" '") for x in str(e["ctx"]["expected"]).replace(" or ", ", ").split(",")]
        return f"{e.get('input')!r}; allowed: {', '.join(allowed)}{_did_you_mean(e.get('input'), allowed)}"
    if kind == "union_tag_invalid":
        return (f"{e['ctx']['tag']!r} is not a fault kind; allowed: {', '.join(REGISTRY)}"
                f"{_did_you_mean(e['ctx']['tag'], list(REGISTRY))}")
    if kind == "union_tag_not_found":
        return f"missing; a fault needs a kind, one of: {', '.join(REGISTRY)}"
    if kind == "missing":
        return "missing (required)"
    if kind == "model_type" and len(loc) == 2 and loc[0] == "topics":
        return entry_problem(e.get("input"))
    if kind in ("model_type", "dict_type", "model_attributes_type"):
        return f"should be a mapping (key: value), not {type(e.get('input')).__name__}"
    msg = str(e["msg"])
    return msg.removeprefix("Value error, ").replace("Input should be", "should be")


def _at(loc: tuple[Any, ...], data: Any) -> Any:
    """The value at ``loc`` in the file's data (None where there is none)."""
    for key in loc:
        data = data[key] if isinstance(data, (list, dict)) and (key in data if isinstance(data, dict) else key < len(data)) else None
    return data


def _and(items: list[str]) -> str:
    """``a, b and c``."""
    return " and ".join(items) if len(items) <= 2 else f"{', '.join(items[:-1])} and {items[-1]}"



def _did_you_mean(value: Any, allowed: list[str]) -> str:
    close = difflib.get_close_matches(str(value), allowed, n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation holds (``list[Workload]`` -> Workload; ``list[Fault]`` ->
    every fault kind's model)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    if annotation is TopicList:  # its entries' mappings
        return [TopicSpec]
    return [m for arg in get_args(annotation) for m in _models_in(arg)]


def _fields_at(loc: tuple[Any, ...], data: Any) -> list[str]:
    """The keys the model allows at ``loc`` (e.g. ("faults", 0) -> the fault kind's fields)."""
    models: list[type[BaseModel]] = [Scenario]
    for key in loc:
        if isinstance(key, int):
            continue
        field = models[0].model_fields.get(str(key))
        models = _models_in(field.annotation) if field is not None else []
        if not models:
            return []
    node = _at(loc, data)
    if len(models) > 1 and isinstance(node, dict):
        models = [REGISTRY[node["kind"]]] if node.get("kind") in REGISTRY else models
    return list(models[0].model_fields)


#: Every field name a scenario file may hold (to tell a missing field from a pydantic union tag).
_MODELS: list[type[BaseModel]] = [Scenario, Workload, Mix, Expect, TopicSpec, *REGISTRY.values()]
_FIELDS = {f for m in _MODELS for f in m.model_fields}
