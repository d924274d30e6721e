"""``eos-chaos run``: scenario -> cluster -> workloads + nemesis -> heal -> final reads -> history
-> checker -> ``verdict.json``. Heal and teardown run whatever happens (exception, Ctrl-C).

Run folder (harness/rundir/runfolder.py): ``scenario.json`` (resolved, with seed and schedule; written once),
``journal.json`` (the run facts: written at the start, rewritten as the run learns more),
``run.log``, ``history/*.jsonl`` (flushed as written), ``history.parquet/`` (at the end),
``workloads/`` (configs and logs), ``nodes/`` (broker logs), ``verdict.json`` (harness/run/verdict_file.py),
``report.html``.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient

from chaos import schedule
from chaos.heal import heal_all
from chaos.nemesis import Nemesis
from clusters.backends import artifacts, backends, procs, reclaim, state
from clusters.backends.backends import Backend
from clusters.backends.protocol import Cluster, NodeState
from clusters.builds import pins
from clusters.kafka.feature_levels import TRANSACTION_VERSION, check_transaction_version, intended_levels
from clusters.kafka.health import admin_client
from harness.base.errors import ClusterError, ConfigError, WaitTimeout
from harness.base.logsetup import run_log
from harness.base.wait import wait_until
from harness.checker import check
from harness.history import store
from harness.history.hits import Span, fault_hits, wire_matches
from harness.history.model import LSO, READ_COMMITTED, READ_UNCOMMITTED, SCAN, tp_key
from harness.history.recorder import ENV_T0, HISTORY_DIR, Recorder, run_t0
from harness.history.tail import HistoryTail
from harness.kafka.admin import create_topic
from harness.kafka.features import METADATA_VERSION, finalized
from harness.kafka.kept_topics import KeptTopics, kept
from harness.kafka.reads import lso_lag, read_all
from harness.phases import table
from harness.phases.kind_run import KindRun, RunContext
from harness.report.index_page import after_run
from harness.report.loaded import LoadedRun
from harness.report.wire_events import read_wire, wire_file
from harness.run import verdict_file
from harness.run.readiness import ProgressLog, await_ready, exited_before_ready
from harness.run.scenario import Fault, Scenario, TopicList, Workload
from harness.run.supervisor import RECOVERY_TIMEOUT_S, Supervisor
from harness.rundir import runinfo
from harness.rundir.journal import FaultHit, Journal, RunTopic, fault_runs
from harness.rundir.run_verdict import RunVerdict
from harness.rundir.runfolder import RunFolder, run_tag, write_json, write_text
from harness.workloads import clients, registry
from harness.workloads.common import WorkloadConfig

log = logging.getLogger(__name__)

#: Past the scenario's duration, how long the workloads may run on by themselves (safety net only;
#: the runner stops them with SIGTERM at the end of the duration).
WORKLOAD_GRACE_S = 600.0
#: The most a run waits past its duration for a fault that went past its budget: the workloads stop
#: themselves ``WORKLOAD_GRACE_S`` after it, and the heal and drain need their share of that.
MAX_EXTENSION_S = WORKLOAD_GRACE_S / 2
#: How often a run short of its expected commits counts them again.
COMMITS_POLL_S = 1.0
#: Reading the finalized features of a healthy cluster: one round trip; generous for a loaded machine.
FEATURES_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class RunResult:
    """A finished run: its folder, its ``verdict.json`` (harness/run/verdict_file.py) and its journal."""

    folder: RunFolder
    verdict: RunVerdict
    journal: Journal

    @property
    def run_dir(self) -> Path:
        return self.folder.path

    @property
    def valid(self) -> bool:
        return self.verdict.valid is True

    @property
    def as_expected(self) -> bool:
        return self.verdict.as_expected is True

    @property
    def interrupted(self) -> bool:
        return self.journal.interrupted


def run_names(sc: Scenario, tag: str) -> dict[str, str]:
    """Each of the scenario's topic names -> the run's: ``NAME.<tag>``, or the name as written for a
    kept one (``keep_name: true``)."""
    return {t: t if sc.topics.spec(t).keep_name else f"{t}.{tag}" for t in sc.topics}


def physical(sc: Scenario, tag: str) -> Scenario:
    """The scenario with every topic name (and every consumer group a workload defaults to: the
    copier's) made unique to this run, so runs can share a cluster (the test session's) without
    reading each other's records; a kept name stays as written (one such topic per cluster at a
    time: harness/kafka/kept_topics.py)."""
    names = run_names(sc, tag)

    def mapped(v: Any) -> Any:
        if isinstance(v, str):
            return names.get(v, v)
        if isinstance(v, list):
            return [mapped(x) for x in v]
        if isinstance(v, dict):  # an app contract's aggregates: output topic -> aggregate
            return {mapped(k): mapped(x) for k, x in v.items()}
        return v

    workloads = []
    for w in sc.workloads:
        settings = registry.kind(w.kind).run_settings({k: mapped(v) for k, v in w.settings.items()}, tag)
        workloads.append(w.model_copy(update={"settings": settings}))
    faults = []
    for f in sc.faults:
        # only faults that target a node have `of`; a wire fault's peer has its own `peer_of` (the
        # hunt's WriteTxnMarkers to the leader of a partition: unmapped, its lookup found no topic)
        for field in ("of", "peer_of"):
            of = getattr(f, field, None)
            if of and "/" in of and of.rpartition("/")[0] in names:  # leader of "topic/partition"
                topic, _, part = of.rpartition("/")
                f = f.model_copy(update={field: f"{names[topic]}/{part}"})
        faults.append(f)
    topics = TopicList(sc.topics.spec(t).model_copy(update={"name": names[t]}) for t in sc.topics)
    return sc.model_copy(update={"topics": topics, "workloads": workloads, "faults": faults})


def workload_configs(sc: Scenario, run_dir: Path, bootstrap: str, seed: int,
                     topic_names: dict[str, str] | None = None) -> list[tuple[str, WorkloadConfig, bool]]:
    """(kind, config, start now?) for every workload process of the scenario, its companions (an
    app's feeder and output reader) included. The topics a kind owns (``KindRun.own_topics``: an
    app's outputs) are left out of the other workloads' (a reader of every topic), since their
    values repeat and no recorded send wrote them."""
    owners: set[str] = set()
    owned: set[str] = set()
    for r in table.for_scenario(sc):
        mine = set(r.own_topics())
        owners |= {r.kind} if mine else set()
        owned |= mine

    def config(kind: str, name: str, settings: dict[str, Any], w: Workload) -> WorkloadConfig:
        mine = registry.kind(kind).internal or kind in owners
        topics = list(sc.topics) if mine else [t for t in sc.topics if t not in owned]
        return WorkloadConfig(run_dir=str(run_dir), name=name, bootstrap=bootstrap, topics=topics,
                              partitions=sc.partitions, seed=seed, max_seconds=sc.duration + WORKLOAD_GRACE_S,
                              settings=settings, client=dict(w.client), library=w.library,
                              topic_names=dict(topic_names or {}), instances=w.count,
                              topic_partitions=sc.topic_partitions())

    out: list[tuple[str, WorkloadConfig, bool]] = []
    numbered: dict[str, int] = {}  # kind -> its processes so far: two entries of a kind never share a name
    for w in sc.workloads:
        first = numbered.get(w.kind, 0)
        numbered[w.kind] = first + w.count
        out += [(kind, config(kind, name, settings, w), now)
                for kind, name, settings, now in registry.kind(w.kind).processes(w.count, dict(w.settings), first)]
    return out


def cluster_that_is_up(backend: Backend, sc: Scenario, kafka_version: str | None = None,
                       port_base: int | None = None, transaction_version: int | None = None) -> Cluster | None:
    """The ``backend`` cluster another command left up (``cluster up``, ``run --keep``, a test
    session), if it can run ``sc``: same Kafka version, port base and transaction.version when
    asked for (the level it was formatted at, which every heal restores), and the scenario's broker
    settings in place (a running broker cannot take them). ConfigError otherwise."""
    rec = state.load(backend.value)
    if rec is None or (rec.owner_pid is not None and not procs.alive(rec.owner_pid)):
        return None  # none, or its owner crashed: a new start reclaims it
    where = f"the {backend.value} cluster that is up (run folder {rec.run_dir})"
    wrong = []
    target = backends.external_target()
    if backend is Backend.external and target is not None and rec.inventory != str(target.inventory.resolve()):
        wrong.append(f"it fronts the cluster of inventory {rec.inventory}, --inventory names {target.inventory}")
    if kafka_version and kafka_version != rec.kafka_version:
        wrong.append(f"it runs Kafka {rec.kafka_version}, --kafka-version asks for {kafka_version}")
    if port_base and port_base != rec.port_base:
        wrong.append(f"it listens at port base {rec.port_base}, --port-base asks for {port_base}")
    if transaction_version is not None:
        if not kafka_version:
            check_transaction_version(rec.kafka_version, transaction_version)
        at = intended_levels(rec.kafka_version, rec.transaction_version)[TRANSACTION_VERSION]
        if at != transaction_version:
            how = "the release's default" if rec.transaction_version is None else "--transaction-version"
            wrong.append(f"it runs at transaction.version {at} ({how}), --transaction-version asks for {transaction_version}")
    missing = {k: v for k, v in sc.broker_config.items() if rec.overrides.get(k) != v}
    if missing:
        wrong.append(f"scenario {sc.name} needs broker settings {missing}, it has {rec.overrides or 'none of its own'}")
    unrouted = wire_between_brokers_problem(sc, rec.wire_between_brokers)
    if unrouted:
        wrong.append(unrouted)
    if wrong:
        flags = [f"--broker-config {k}={v}" for k, v in sc.broker_config.items()] if missing else []
        flags += [WIRE_BETWEEN_BROKERS_FLAG] if unrouted else []
        fix = (" Take it down (eos-chaos cluster down --backend " + backend.value + ") so the run starts its own"
               + (f", or start it with eos-chaos cluster up {' '.join(flags)}" if flags else "") + ".")
        raise ConfigError(f"cannot run on {where}: " + "; ".join(wrong) + "." + fix)
    log.info(f"using {where}")
    return backends.attach(rec)


def prepare_attached(cluster: Cluster) -> list[str]:
    """Make a cluster this run did not start fit to run on: reclaim workloads a killed run left
    running on it, and heal whatever fault such a run left in place. Returns what was found
    faulted (recorded in the verdict)."""
    orphans = [t for t in procs.tagged_processes() if t.cluster_id == cluster.cluster_id and t.orphaned]
    reclaim.kill_processes(orphans, "a killed run left it on the cluster")
    found = [f"link {p}" for p in cluster.toxiproxy.unhealed() + cluster.wire.unhealed()]
    found += [f"node {n} {cluster.node_state(n).value}" for n in cluster.topology.node_ids
              if cluster.node_state(n) is not NodeState.UP]
    if found:
        log.info(f"the cluster is not in its healed state ({found}): healing before the run")
    problems = heal_all(cluster)
    if problems:
        raise ClusterError(f"the cluster that is up cannot be healed: {problems}; take it down (eos-chaos cluster down)")
    return found


def run(sc: Scenario, backend: Backend, seed: int, run_dir: Path, kafka_version: str | None = None,
        cluster: Cluster | None = None, port_base: int | None = None, keep: bool = False, attach: bool = True,
        show: Callable[[Path, float, Callable[[], list[str]]], Any] | None = None, source: str | None = None,
        report: bool = True, transaction_version: int | None = None) -> RunResult:
    """Run ``sc``: on ``cluster`` (a test session's; the scenario's broker settings are then not
    applied), else on the backend's cluster that is up, else on one started here (and stopped
    after unless ``keep``; ``attach=False``: always its own). ``show`` makes the progress display (harness/report/live_progress.py).
    A Ctrl-C during the run ends it early: heal, final reads and the verdict still happen
    (``run.interrupted`` in verdict.json, ``RunResult.interrupted``). The run's narrative also goes
    to its ``run.log``. ``transaction_version``: the level the cluster must be formatted at (a
    cluster that is up at another is refused; one started here is formatted so; None: any). A
    scenario with a request-aware fault between brokers gets a cluster that routes them through the
    wire proxy when it starts one; a ``cluster`` given that does not is refused (ConfigError)."""
    check_backend(sc, backend)
    unrouted = None if cluster is None else wire_between_brokers_problem(sc, cluster.topology.wire_between_brokers)
    if unrouted:
        raise ConfigError(f"cannot run on the cluster given: {unrouted}")
    table.preflight(sc)  # PySpark, an app's command and contract function: found (or refused) before anything starts
    clients.prepare(w.library for w in sc.workloads)  # a Java client is built (or refused) before anything starts
    folder = RunFolder(run_dir).create()
    with run_log(folder.run_log):
        return _run(sc, backend, seed, folder, kafka_version, cluster, port_base, keep, attach, show,
                    source or sc.name, report, transaction_version)


def _run(sc: Scenario, backend: Backend, seed: int, folder: RunFolder, kafka_version: str | None,
         cluster: Cluster | None, port_base: int | None, keep: bool, attach: bool,
         show: Callable[[Path, float, Callable[[], list[str]]], Any] | None, source: str, report: bool,
         transaction_version: int | None = None) -> RunResult:
    run_dir = folder.path
    tag = run_tag(folder.name)
    topic_names = run_names(sc, tag)  # what physical() names them
    sc = physical(sc, tag)
    faults = schedule.plan(sc, seed)
    if backend is Backend.external:
        check_external(sc, faults)  # before anything starts: nothing touches the cluster yet
    planned = schedule.as_json(faults)
    write_json(folder.scenario, {**sc.model_dump(), "seed": seed, "backend": backend.value, "schedule": planned})
    journal = Journal(scenario=sc.name, source=source, resolved=sc.model_dump(mode="json"), seed=seed,
                      backend=backend.value, kafka_version=kafka_version, schedule=planned,
                      expected=sc.expect.model_dump(), transaction_version_asked=transaction_version)
    journal.save(folder)
    os.environ.pop(ENV_T0, None)
    t0 = run_t0()
    own = False
    if cluster is None and attach:
        cluster = cluster_that_is_up(backend, sc, kafka_version, port_base, transaction_version)
        if cluster is not None:
            check_fault_levels(faults, _kafka_version(cluster, kafka_version))
            journal.faulted_at_start = prepare_attached(cluster)
    if cluster is None and backend is Backend.external:
        cluster, own = _front_external(run_dir, port_base, keep, kafka_version, faults), not keep
    if cluster is None:
        arts = artifacts.ready(kafka_version) if kafka_version else None
        arts = arts or artifacts.ensure(kafka_version or pins.KAFKA_VERSION)
        routed = needs_wire_between_brokers(sc)
        if routed:
            log.info("a fault acts on a link between brokers: the cluster routes those links through the wire proxy")
        cluster = backends.new_cluster(backend, arts, run_dir, port_base, overrides=sc.broker_config, detached=keep,
                                       transaction_version=transaction_version, wire_between_brokers=routed)
        check_fault_levels(faults, arts.kafka_version)  # before anything starts
        own = not keep
        cluster.start()
        if keep:
            log.info(f"the cluster stays up after the run (--keep): eos-chaos cluster down --backend {backend.value}")
    # now the cluster (and so the Kafka version) is known
    kv = _kafka_version(cluster, kafka_version)
    journal.kafka_version, journal.versions = kv, runinfo.versions(kv, _libraries(sc))
    if Path(cluster.run_dir).resolve() != run_dir.resolve():
        journal.cluster_dir = str(cluster.run_dir)  # the report links the shared cluster's logs there
    try:
        # the levels in force, read back (not the flag): what the run's clients met at its start
        journal.features = finalized(cluster.direct_bootstrap, FEATURES_TIMEOUT_S)
        journal.command = runinfo.rerun_command(source, backend.value, seed, sc.duration, kv, journal.transaction_version,
                                                _producers(sc))
        if backend is Backend.external:
            note_external_facts(cluster, journal)
            journal.command = external_rerun(journal.command)
        journal.save(folder)
        log.info(f"transaction.version {journal.transaction_version}, metadata.version "
                 f"{journal.features.get(METADATA_VERSION)} (read back from the cluster)")
        _run_on(sc, faults, cluster, seed, folder, t0, journal, show, topic_names)
    finally:
        if own:
            cluster.stop()
        else:
            _keep_cluster_logs(cluster)
    # the tables record the history files as they were read (a late append makes them stale)
    tables = store.read_tables(run_dir)
    store.save(tables, run_dir)
    journal.faults = fault_runs(store.fault_events(tables.faults), planned)
    record_hits(folder, journal, tables)
    journal.finished = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    journal.save(folder)
    verdict = verdict_file.write(verdict_file.assemble(check(tables), journal, journal.expected), folder)
    if report:
        _write_report(LoadedRun(folder, journal, verdict, tables))  # from what the run holds: nothing read again
    after_run(run_dir)  # results/latest and results/index.html; logs, never raises
    return RunResult(folder, verdict, journal)



def _front_external(run_dir: Path, port_base: int | None, keep: bool, kafka_version: str | None,
                    faults: list[Fault]) -> Cluster:
    """The proxies in front of the inventory's cluster, started, its Kafka release checked against the run's."""
    cluster = backends.new_cluster(Backend.external, None, run_dir, port_base, detached=keep)
    cluster.start()
    try:
        check_external_version(cluster, kafka_version, faults)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _libraries(sc: Scenario) -> dict[str, str | None]:
    """The client libraries the scenario's workloads run on, each with its release (None: the
    installed Python package), for the journal's versions."""
    return {lib.name: lib.version for lib in (clients.parse(w.library) for w in sc.workloads)}


def _producers(sc: Scenario) -> int | None:
    """The producers per process every entry that runs them in threads (a txn-producer's
    ``producers``) runs when that is more than one and the same for all (what ``--producers`` makes
    of a scenario, so the re-run command says it); else None."""
    counts = {int(w.settings.get(setting, 1)) for w in sc.workloads
              if (setting := registry.kind(w.kind).threads_setting) == registry.PRODUCERS}
    return counts.pop() if len(counts) == 1 and max(counts) > 1 else None


#: What starts a cluster whose wire proxy carries the links between brokers too (``cluster up``).
WIRE_BETWEEN_BROKERS_FLAG = "--wire-between-brokers"


def needs_wire_between_brokers(sc: Scenario) -> bool:
    """A fault of ``sc`` acts on a link between brokers through the wire proxy: a cluster started for
    the run routes those links through it (``Topology.wire_between_brokers``); one that is up must
    have been started so."""
    return any(f.needs_wire_between_brokers for f in sc.faults)


def wire_between_brokers_problem(sc: Scenario, routed: bool) -> str | None:
    """Why a cluster whose links between brokers go through the wire proxy (``routed``) or not
    cannot run ``sc``; None when it can."""
    if routed:
        return None
    for i, f in enumerate(sc.faults):
        if f.needs_wire_between_brokers:
            return (f"scenario {sc.name}'s faults[{i}] ({f.kind} at {f.at:g}s) acts on a link between brokers, and "
                    f"its wire proxy carries only the clients' links (it was started without {WIRE_BETWEEN_BROKERS_FLAG})")
    return None


def check_backend(sc: Scenario, backend: Backend) -> None:
    """Every fault must be one the ``backend`` cluster can carry out (``FaultBase.check_backend``: a
    wire fault between brokers needs the local backend); ConfigError naming the fault otherwise."""
    for i, f in enumerate(sc.faults):
        try:
            f.check_backend(backend.value)
        except ConfigError as exc:
            raise ConfigError(f"scenario {sc.name}: faults[{i}] ({f.kind} at {f.at:g}s): {exc}") from None


def _kafka_version(cluster: Cluster, asked: str | None) -> str | None:
    if cluster.backend == Backend.external.value:  # as read from the cluster's own jars (None: unknown)
        read: str | None = getattr(cluster, "kafka_version", None)
        return read or asked
    return getattr(getattr(cluster, "artifacts", None), "kafka_version", asked)


def check_external(sc: Scenario, faults: list[Fault]) -> None:
    """ConfigError (exit 2) before anything starts when the external cluster may not be faulted
    (not disposable), cannot carry a fault of ``faults``, or cannot take the scenario's broker settings."""
    from chaos.fault_refusals import external_refusals

    target = backends.external_target()
    if target is None:
        raise ConfigError("the external backend needs --inventory FILE (docs/reference/inventory.md)")
    refused = external_refusals(faults, target.inventory, target.allow_non_disposable)
    if sc.broker_config:
        refused.append(f"scenario {sc.name} needs broker settings {sc.broker_config}; the harness does not restart a "
                       "cluster it did not start with settings of its own")
    if refused:
        raise ConfigError(f"scenario {sc.name} cannot run on the cluster of {target.inventory}:\n  " + "\n  ".join(refused))


def check_external_version(cluster: Cluster, asked: str | None, faults: list[Fault]) -> None:
    """ConfigError when ``--kafka-version`` asks for another release than the external cluster runs;
    the faults' levels checked against the release read."""
    read: str | None = getattr(cluster, "kafka_version", None)
    if asked and read and asked != read:
        raise ConfigError(f"--kafka-version {asked}: the external cluster runs Kafka {read} (read from its jars); "
                          "the harness runs on the cluster as it is")
    check_fault_levels(faults, read)


def note_external_facts(cluster: Cluster, journal: Journal) -> None:
    """The external cluster's facts as read (journal.cluster) and its finalized levels as what a heal restores."""
    from harness.kafka.cluster_facts import read_facts

    setattr(cluster, "levels_read", dict(journal.features))  # noqa: B010 - the external backend's alone
    journal.cluster = {**getattr(cluster, "facts", {}), **read_facts(admin_client(cluster.direct_bootstrap),
                                                                     cluster.direct_bootstrap)}


def rewrite_problems(cluster: Cluster) -> list[str]:
    """Why a client of the run may have met a broker around the proxies (the wire proxy's rewriting
    counts): a run that did not test what it says, so not as expected."""
    try:
        return [f"address rewriting: {p}" for p in cluster.wire.rewrite_problems()]
    except Exception as exc:  # noqa: BLE001 - said, as the problem it is
        return [f"address rewriting: the wire proxy's counts could not be read ({exc})"]


def external_rerun(command: str) -> str:
    """The re-run command of a run on the external cluster: its inventory instead of ``--backend external``."""
    target = backends.external_target()
    if target is None:
        return command
    return command.replace("--backend external", f"--inventory {shlex.quote(str(target.inventory))}")


def delete_run_objects(cluster: Cluster, topics: list[str], tag: str) -> list[str]:
    """The run's topics and consumer groups deleted from an external cluster (the built-in backends'
    go with the cluster); what could not be deleted, one line each (logged, never a failed run)."""
    from harness.kafka.admin import delete_groups_tagged, delete_topics

    try:
        admin = admin_client(cluster.direct_bootstrap)
        problems = delete_topics(admin, topics) + delete_groups_tagged(admin, tag)
    except Exception as exc:  # noqa: BLE001 - a leftover topic is said, never a failed run
        problems = [f"{type(exc).__name__}: {exc}"]
    log.info(f"deleted the run's topics {topics} and groups tagged {tag}" + (f"; not deleted: {problems}" if problems else ""))
    return problems


def mark_deleted(topics: list[RunTopic], problems: list[str]) -> None:
    """Each topic's ``deleted`` from what ``delete_run_objects`` could not delete: a topic it names
    was not; none was when the deletion failed as a whole (a line about no one topic or group)."""
    whole = any(not p.startswith(("topic ", "group ")) for p in problems)
    for t in topics:
        t.deleted = not whole and not any(p.startswith(f"topic {t.name}: ") for p in problems)


def check_fault_levels(faults: list[Fault], kafka_version: str | None) -> None:
    """Every fault must be one the release can do (``FaultBase.check_release``: a
    ``set-transaction-version`` level the release accepts); ConfigError before the run starts (the
    fault asks the running brokers again when it applies)."""
    if kafka_version:
        for f in faults:
            f.check_release(kafka_version)


def run_on_shared(sc: Scenario, backend: Backend, seed: int, run_dir: Path, cluster: Cluster,
                  source: str | None = None) -> RunResult:
    """Run ``sc`` on a cluster shared by many runs (a test session's, a soak's). A scenario with
    broker settings a running cluster cannot take (transactional.id.expiration.ms), or with a fault
    between brokers the shared cluster's wire proxy does not carry, gets a cluster of its own that
    has them; one cluster at a time, so the shared one makes way and comes back."""
    if not sc.broker_config and not wire_between_brokers_problem(sc, cluster.topology.wire_between_brokers):
        return run(sc, backend, seed, run_dir, cluster=cluster, source=source)
    cluster.stop()
    try:
        return run(sc, backend, seed, run_dir, attach=False, source=source, transaction_version=cluster.transaction_version)
    finally:
        cluster.start()


def record_hits(folder: RunFolder, journal: Journal, tables: store.Tables) -> None:
    """What each fault of ``journal.faults`` hit (harness/history/hits.py), from the history and
    the wire proxy's event log, into its ``hit``. A record that cannot be made is logged and left
    out, never fails the run."""
    cluster_dir = Path(journal.cluster_dir) if journal.cluster_dir else None
    try:
        path = wire_file(folder.path, cluster_dir)
        wire = None
        if path is not None and journal.history_zero_unix_s is not None:
            events, _ = read_wire(folder.path, cluster_dir, None)
            wire = wire_matches([e.raw for e in events], journal.history_zero_unix_s)
        spans = [Span.of_seconds(f.start_s, f.end_s, f.detail) for f in journal.faults]
        for f, h in zip(journal.faults, fault_hits(tables, spans, wire), strict=True):
            f.hit = FaultHit.model_validate(h.to_json())
    except Exception as exc:  # noqa: BLE001 - see docstring
        log.info(f"what the faults hit could not be recorded ({type(exc).__name__}: {exc})")
        return
    nothing = [f"{f.kind} at {f.start_s - (journal.schedule_t0_s or 0):.1f}s" for f in journal.faults
               if f.hit is not None and not f.hit.hit]
    if nothing:
        log.info(f"faults that hit nothing ({len(nothing)} of {len(journal.faults)}): {', '.join(nothing)}")


def _keep_cluster_logs(cluster: Cluster) -> None:
    """A shared cluster's logs so far, where this run's report links them; a failure is logged."""
    try:
        cluster.keep_logs()
    except Exception as exc:  # noqa: BLE001 - the logs are a convenience; the verdict is what counts
        log.info(f"the cluster's logs could not be copied into {cluster.run_dir} ({type(exc).__name__}: {exc})")


def _write_report(run: LoadedRun) -> None:
    """The run's report.html; a report that cannot be made is logged, never fails the run (the
    verdict is what counts, and ``eos-chaos report RUN_DIR`` can make it again)."""
    from harness.report import write_report

    try:
        path = write_report(run)
        log.info(f"report: {path}")
    except Exception as exc:  # noqa: BLE001 - see docstring
        log.info(f"report.html could not be written ({type(exc).__name__}: {exc}); try: eos-chaos report {run.run_dir}")


Show = Callable[[Path, float, Callable[[], list[str]]], Any]


@dataclass
class _Live:
    """A run under way: its scenario, supervisor, kinds' phases, nemesis and threads (the nemesis's,
    and the choreography of a staged start: the zombie's second instance)."""

    sc: Scenario
    seed: int
    sup: Supervisor
    ctx: RunContext
    runs: list[KindRun]
    nemesis: Nemesis
    progress: Any
    nemesis_thread: threading.Thread | None = None
    staged_thread: threading.Thread | None = None

    def set_phase(self, phase: str) -> None:
        if self.progress is not None:
            self.progress.set_phase(phase)

    def join(self) -> None:
        for th in (self.nemesis_thread, self.staged_thread):
            if th is not None:
                th.join(timeout=300)


def _run_on(sc: Scenario, faults: list[Fault], cluster: Cluster, seed: int, folder: RunFolder, t0: int,
            journal: Journal, show: Show | None, topic_names: dict[str, str]) -> None:
    """The run proper on a cluster that is up: topics, each kind's start, the workloads, the
    nemesis for the duration, heal (and each kind's drain), then the final reads."""
    run_dir = folder.path
    runs = table.for_scenario(sc)
    started_us = time.time_ns() // 1000  # the wire proxy stamps its events with wall-clock microseconds
    admin = admin_client(cluster.direct_bootstrap)
    # a kept-name topic on the cluster is replaced, or refused, before anything is created or written
    with Recorder(run_dir, "runner") as rec, kept(admin, sc.kept_topics(), Path(cluster.run_dir)) as kept_names:
        create_topics(admin, sc, kept_names, run_dir)
        if cluster.backend == Backend.external.value:  # on record before anything can kill the run
            journal.run_topics = [RunTopic(name=t) for t in sc.topics if run_tag(folder.name) in t]
            journal.save(folder)
        env = {**os.environ, **procs.tags(cluster.cluster_id, os.getpid()), ENV_T0: str(t0)}
        for r in runs:
            r.start(cluster, run_dir, env)
        sup = Supervisor(run_dir, env)
        ctx = RunContext(sc, cluster, run_dir, rec, journal, sup, topic_names)
        # a fault aimed at a workload waits for its progress since the previous fault on it
        nemesis = Nemesis(cluster, sup, rec, faults, seed, sc.target_defaults(),
                          spark=next((c for r in runs if (c := r.side_cluster()) is not None), None),
                          progress=ProgressLog(run_dir / HISTORY_DIR, sup.kinds))
        progress = show(run_dir, sc.duration, nemesis.active_faults) if show else None
        live = _Live(sc, seed, sup, ctx, runs, nemesis, progress)
        try:
            _run_workloads(live)
        finally:
            live.set_phase("healing")
            _heal_and_stop(live)
            keep_wire_events(cluster, folder, started_us)
            if cluster.backend == Backend.external.value:
                journal.nemesis_errors += rewrite_problems(cluster)
            journal.save(folder)  # the heal is on record even if the final reads fail
        problems = journal.heal_problems
        log.info("healed; final reads over the DIRECT listener" if not problems else f"heal problems: {problems}")
        if progress is not None:
            progress.set_phase("final reads")
        try:
            stalled = final_reads(cluster, sc, rec, _owned(runs))
            for r in runs:
                r.final_reads(ctx, stalled)
            journal.save(folder)
        finally:
            if progress is not None:
                progress.close()
            if cluster.backend == Backend.external.value:  # not ours to keep: the run's topics and groups go
                tag = run_tag(folder.name)
                journal.cleanup_problems = delete_run_objects(cluster, [t.name for t in journal.run_topics], tag)
                mark_deleted(journal.run_topics, journal.cleanup_problems)
                journal.save(folder)


def _owned(runs: list[KindRun]) -> set[str]:
    """The topics a kind of the run keeps to itself (an app's outputs: ``KindRun.own_topics``)."""
    return {t for r in runs for t in r.own_topics()}


def _run_workloads(live: _Live) -> None:
    """Start the workloads, wait until they are ready, then run the nemesis for the scenario's
    duration (a Ctrl-C ends it early: ``journal.interrupted``)."""
    sc, sup, ctx, nemesis = live.sc, live.sup, live.ctx, live.nemesis
    journal, rec = ctx.journal, ctx.rec
    staged = False  # processes the nemesis starts at their moment (the zombie's second instance)
    for r in live.runs:
        r.started(ctx)
    for kind, cfg, now in workload_configs(sc, ctx.run_dir, ctx.cluster.bootstrap, live.seed, ctx.topic_names):
        sup.start(kind, cfg) if now else sup.register(kind, cfg)
        staged = staged or not now
    sup.keep_restarting()
    log.info(f"workloads started: {', '.join(sup.procs)}")
    live.set_phase("waiting for the workloads")
    # the schedule starts when every workload is ready, not when its process started: a
    # Spark job's first micro-batch can take a minute and a half on a loaded machine
    timeout = next((t for r in live.runs if (t := r.ready_timeout_s()) is not None), None)
    journal.workloads_ready_s = await_workloads(sup, ctx.run_dir, timeout)
    nemesis.pace(journal.workloads_ready_s)  # a slow machine's faults wait longer for progress
    log.info(f"running {sc.duration:.0f}s")
    live.set_phase("running")
    live.nemesis_thread = threading.Thread(target=nemesis.run, name="nemesis", daemon=True)
    journal.schedule_t0_s = rec.now() / 1e9  # the nemesis counts its schedule from here
    journal.history_zero_unix_s = time.time() - journal.schedule_t0_s  # the wire proxy's stamps onto it
    live.nemesis_thread.start()
    if staged:
        live.staged_thread = threading.Thread(target=_guarded(nemesis.zombie, nemesis.errors), name="zombie", daemon=True)
        live.staged_thread.start()
    try:
        tail = HistoryTail(ctx.run_dir)
        early = (sc.end_after_faults_s, _faults_over(live)) if sc.end_after_faults_s is not None else None
        journal.extended_s, journal.ended_early_s = _wait_out(nemesis, sc.duration, lambda: tail.poll().committed,
                                                              sc.expect.min_ok_txns, early)
        # a fault due in the run that waits for the node fault before it to heal begins late
        nemesis.await_begun()
        # a driver killed late in the run replays its batch after the duration: wait for it
        journal.not_recovered = sup.await_recovered(max(RECOVERY_TIMEOUT_S, nemesis.progress_timeout_s))
        journal.extended_s += _await_progress_after_faults(nemesis, tail, nemesis.progress_timeout_s, sc.duration)
    except KeyboardInterrupt:
        journal.interrupted = True
        log.info("interrupted: stopping the workloads, healing, then checking what ran")


def _faults_over(live: _Live) -> Callable[[], bool]:
    """Whether every fault of the schedule (and a staged zombie's) has ended: the nemesis's threads are done."""
    def over() -> bool:
        return all(th is None or not th.is_alive() for th in (live.nemesis_thread, live.staged_thread))

    return over


def _wait_out(nemesis: Nemesis, duration: float, committed: Callable[[], int] | None = None,
              min_ok: int = 0, early: tuple[float, Callable[[], bool]] | None = None) -> tuple[float, float]:
    """Wait the run's ``duration``, and as much longer as a blocking fault went past its budget
    (``Nemesis.extended_s``, at most ``MAX_EXTENSION_S``), or, with ``early`` (seconds, whether the
    faults are over), only until that many seconds after the faults were seen over, if sooner; then,
    while fewer than ``min_ok`` transactions are committed (``committed()``: the count so far), at
    most ``duration`` more, so a starved machine's run gets the time its expectation needs rather
    than failing it. Returns the seconds added and the seconds the run ended early. ``stop`` ends it."""
    started = time.monotonic()
    over_at: float | None = None
    while True:
        extra = min(nemesis.extended_s, MAX_EXTENSION_S)
        end = started + duration + extra
        if early is not None and over_at is None and early[1]():
            over_at = time.monotonic()
        if early is not None and over_at is not None:
            end = min(end, over_at + early[0])
        left = end - time.monotonic()
        if left <= 0 or nemesis.stop.wait(min(left, 1.0)):
            break
    short = 0.0
    if early is not None and over_at is not None:
        short = round(max(0.0, started + duration - time.monotonic()), 1)
        log.info(f"the run ended {short:.0f}s before its duration: its faults were over {early[0]:g}s before "
                 "(end_after_faults_s)")
    if extra:
        log.info(f"the run lasted {extra:.0f}s past its duration: a fault went that far past its budget")
    if committed is None or min_ok <= 0 or nemesis.stop.is_set():
        return round(extra, 1), short
    waited_from, done = time.monotonic(), committed()
    while done < min_ok and time.monotonic() - waited_from < duration and not nemesis.stop.wait(COMMITS_POLL_S):
        done = committed()
    more = time.monotonic() - waited_from
    if done < min_ok or more >= COMMITS_POLL_S:
        log.info(f"the run lasted {more:.0f}s more for its expected {min_ok} committed transactions "
                 f"(a slow machine); {done} by then")
    return round(extra + (more if more >= COMMITS_POLL_S else 0.0), 1), short


def _await_progress_after_faults(nemesis: Nemesis, tail: HistoryTail, timeout: float, run_s: float | None = None) -> float:
    """A run whose workloads commit transactions goes on after its last fault ended until each kind
    of them (txn-producer, copier) made progress after it, at most ``timeout``: a fault that ran
    late on a slow machine (a broker's or a workload's restart, a wait for progress) would leave no
    time for the recovery the checks look for (``checker.progress``, per kind), and the run would be
    unknown for a slow day, not for a stuck workload. Only for a kind with no progress since the
    first fault began (the check's window); not for a kind that never made any (CI: a Java copier
    restarted with 13 s left never committed again, while the producers beside it did). A fault
    still on is waited for first (at most ``timeout``) when the schedule planned every fault to have
    ended by the run's ``run_s`` (it is late: CI, a coordinator's broker restarting for 16 s of a
    16 s run); one planned to last is left to the heal, and no progress is waited for. Returns the
    seconds waited."""
    waited_from = time.monotonic()

    def waited() -> float:
        return round(time.monotonic() - waited_from, 1)

    late = bool(nemesis.active_faults()) and run_s is not None and nemesis.planned_to_end_by(run_s)
    if late:
        log.info(f"waiting for faults past their planned end: {', '.join(nemesis.active_faults())}")
        try:
            wait_until(lambda: not nemesis.active_faults() or nemesis.stop.is_set(), timeout=timeout,
                       what="the faults planned to have ended by the run's duration to end",
                       state=lambda: f"still on: {', '.join(nemesis.active_faults()) or 'none'}", interval=0.2)
        except WaitTimeout as exc:
            log.info(str(exc))
            return waited()
    ended, window_start = nemesis.last_end_ns, nemesis.first_start_ns
    since = window_start if window_start is not None else ended

    def lacking() -> list[str]:
        """The kinds that made progress before and none since the first fault began (the check's
        window): progress of a kind in it is what the check asks for, so a zombie's fenced producer
        (its kind's other instance commits) or a job that stops by design holds nothing."""
        last = tail.poll().last_progress_ns
        return sorted(k for k, at in last.items() if since is not None and at <= since)

    if ended is None or nemesis.active_faults() or nemesis.stop.is_set() or not lacking():
        return waited() if late else 0.0
    log.info(f"waiting for progress of {', '.join(lacking())} after the last fault ended, before the run ends")
    try:
        wait_until(lambda: not lacking() or nemesis.stop.is_set(), timeout=timeout,
                   what="progress of every workload kind after the last fault ended",
                   state=lambda: f"none yet of {', '.join(lacking())}; the last fault ended at {ended / 1e9:.1f} s "
                                 "(history clock)",
                   interval=COMMITS_POLL_S)
    except WaitTimeout as exc:
        log.info(str(exc))  # the progress check says the run is unknown, and why
    return waited()


def _heal_and_stop(live: _Live) -> None:
    """The nemesis stopped, the workloads stopped (but those that run on through heal), the cluster
    healed and each kind's own heal; then, in a run that got going, each kind's drain; then every
    workload stopped. What happened goes to the journal."""
    sup, ctx, runs, journal = live.sup, live.ctx, live.runs, live.ctx.journal
    live.nemesis.stop.set()
    keep = tuple(n for r in runs for n in r.through_heal(sup))
    killed = sup.stop_all(keep=keep)
    live.join()
    problems = heal_all(ctx.cluster) + [p for r in runs for p in r.heal()]
    if journal.schedule_t0_s is not None:  # it ran: a run that never got ready has nothing to drain
        for r in runs:
            if r.drain_phase is not None:
                live.set_phase(r.drain_phase)
                r.drain(ctx, problems)
    if keep:
        killed += sup.stop_all()
    for r in runs:
        r.stopped(ctx)
    journal.healed, journal.heal_problems = not problems, problems
    journal.nemesis_errors, journal.workloads_killed_at_stop = list(live.nemesis.errors), killed


def create_topics(admin: AdminClient, sc: Scenario, kept_names: KeptTopics, run_dir: Path) -> None:
    """Every topic of the run created with its partitions and config (a compacted one's
    ``cleanup.policy`` under its entry's own config); a kept-name one fresh (``KeptTopics.claim``
    deleted what was there), recorded in the cluster's folder as this run's."""
    compacted = compacted_topics(sc)
    for topic in sc.topics:
        config = {**({"cleanup.policy": "compact"} if topic in compacted else {}), **sc.topics.spec(topic).config}
        fresh = topic in kept_names.names
        create_topic(admin, topic, sc.partitions_of(topic), config=config, exist_ok=not fresh)
        if fresh:
            kept_names.created_one(topic, run_dir)


def compacted_topics(sc: Scenario) -> set[str]:
    """The topics created compacted: those a workload's ``compacted`` settings name (the Spark job's
    markers: one per batch id, kept forever)."""
    return {w.settings[k] for w in sc.workloads for k in registry.kind(w.kind).compacted if k in w.settings}


def await_workloads(sup: Supervisor, run_dir: Path, timeout: float | None = None) -> dict[str, float]:
    """Wait until every started workload is ready (its kind's ``ready_ops``: harness/run/readiness.py)
    within ``timeout`` (a kind's ``KindRun.ready_timeout_s``, an app's; None: ``READY_TIMEOUT_S``); the
    seconds each took. ``WaitTimeout`` naming the ones that never were, with what their logs say
    (harness/base/log_digest.py: the exception, the ERROR lines, the last lines)."""
    waiting = {name: registry.kind(kind).ready_ops for name, kind in sup.kinds.items()
               if name in sup.procs and registry.kind(kind).ready_ops}
    logs = {name: sup.log_of(name) for name in waiting}

    def dead() -> str | None:
        for name in waiting:
            if not sup.alive(name) and not sup.restarts_itself(name):
                return exited_before_ready(name, sup.procs[name].poll(), logs[name])
        return None

    if timeout:
        return await_ready(run_dir / HISTORY_DIR, waiting, logs, dead, timeout=timeout)
    return await_ready(run_dir / HISTORY_DIR, waiting, logs, dead)


def keep_wire_events(cluster: Cluster, folder: RunFolder, since_us: int) -> None:
    """The wire proxy's events of this run into its folder. A cluster the run started writes them
    there already; a shared one (a matrix's, a soak's, a test session's) keeps one log for all its
    runs, so the run keeps its own slice: the events from its start on (after heal, so the late
    deliveries the heal flushed are in). A log that cannot be read is said, never fails the run."""
    source = cluster.wire_events
    if source.absolute() == folder.wire_events.absolute() or not source.exists():
        return
    try:
        with source.open() as f:
            kept = [line for line in f if _stamp_us(line) >= since_us]
        write_text(folder.wire_events, "".join(kept))
    except OSError as exc:
        log.info(f"the wire proxy's events could not be kept in the run folder ({exc}); they are in {source}")


def _stamp_us(line: str) -> int:
    """An event line's wall-clock stamp; -1 for a line that is not a whole event (the proxy may be
    writing the last one as we read)."""
    try:
        return int(json.loads(line).get("unix_us", -1))
    except (ValueError, AttributeError, TypeError):
        return -1


def _guarded(fn: Callable[[], None], errors: list[str]) -> Callable[[], None]:
    def body() -> None:
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - recorded in the verdict
            errors.append(f"{fn.__name__}: {type(exc).__name__}: {exc}")
    return body


def final_reads(cluster: Cluster, sc: Scenario, rec: Recorder, owned: set[str] | None = None) -> bool:
    """How long each partition's LSO took to catch up, and every partition from offset 0 to its end,
    read_committed and read_uncommitted: all over DIRECT, which no fault touches. The topics a kind
    keeps to itself (``owned``: an app's outputs) are its ``KindRun.final_reads``'s to scan, as the
    consumer group offsets of a kind that commits them. Returns whether a partition's LSO stalled."""
    mine = owned if owned is not None else _owned(table.for_scenario(sc))
    lag, stuck = lso_lag(cluster.direct_bootstrap, sc.topic_partitions(), sc.lso_bound_s)
    lags = {tp_key(t, p): v for (t, p), v in lag.items()}
    stalled_at = {tp_key(t, p): v for (t, p), v in stuck.items()}
    rec.event("final", LSO, {"bound_s": sc.lso_bound_s, "lag_s": lags, "stalled_at": stalled_at}, type_="ok")
    for iso in (READ_COMMITTED, READ_UNCOMMITTED):
        value: dict[str, list[list[object]]] = {}
        for topic in [t for t in sc.topics if t not in mine]:
            # a hanging transaction keeps the LSO where it is: read up to it, lso-stall reports it
            back = read_all(cluster.direct_bootstrap, topic, sc.partitions_of(topic), iso, stable=not stalled_at)
            for p, recs in back.records.items():
                value[tp_key(topic, p)] = [[o, v] for o, v in recs]
        rec.event("final", SCAN, value, type_="ok", isolation=iso)
    return bool(stalled_at)



def rerun_check(run_dir: Path, engine: str = "default") -> RunVerdict:
    """``eos-chaos check RUN_DIR``: the checker again, from the folder's history alone, assembled
    with its journal's run facts and its expectation (the journal's; for an older folder, the old
    verdict's) into a new ``verdict.json``; the report is made again from it. Returns the verdict.
    The journal is read once and the history loaded once, for the checker and the report alike."""
    folder = RunFolder(run_dir)
    journal = Journal.load(folder)
    old = verdict_file.load(folder)
    expected = journal.expected if journal is not None else old.expected if old is not None else None
    reported = folder.scenario.exists()  # a bare history (copied out of a run) has no report to make
    tables: store.Tables | None = None
    if engine == "spark":
        from harness.checker.spark_engine import check_run
        from harness.sparkjob.session import checker_session

        with checker_session() as spark:
            checked = check_run(run_dir, spark)  # Spark reads the Parquet files itself
    else:
        # a history only in JSON lines is saved as Parquet on the way (as the report used to), for
        # whatever reads the files next
        tables = store.load(run_dir, persist=reported)
        checked = check(tables)
    if journal is not None and tables is not None and reported:
        record_hits(folder, journal, tables)  # with this version's rules, as the checker's
        journal.save(folder)
    verdict = verdict_file.write(verdict_file.assemble(checked, journal, expected), folder)
    if reported:
        _write_report(LoadedRun(folder, journal, verdict, tables if tables is not None else store.load(run_dir)))
    return verdict
