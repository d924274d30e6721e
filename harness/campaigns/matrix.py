"""``eos-chaos matrix``: scenarios x clients x transaction versions, each cell run with the same
seeds, drawn from one master seed. The answer to "is this client, on this transaction protocol,
exposed?" with the runs as evidence (docs/MATRIX.md).

A *cell* is (scenario, client, transaction version); a *run* is a cell and the index of its seed.
Run seeds are the soak's (``harness.campaigns.soak.seeds``): the i-th seed is the same in every cell, so each
column sees the same fault schedules, and a matrix grown by clients, levels or seeds keeps the runs
it has. One cluster per transaction version (and per set of broker settings a scenario needs), so a
level is set when the cluster is formatted; the runs go through the soak's ``one_run``
(``runner.run_on_shared``). ``matrix.json`` is rewritten after every run, so the same command on the
same ``--out`` resumes: finished runs are kept, a run cut short by Ctrl-C is discarded and redone."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from clusters import artifacts, backends, pins, procs, state
from clusters.backends import Backend
from clusters.base import Cluster
from clusters.features import check_transaction_version, transaction_versions
from harness.base.errors import ConfigError
from harness.campaigns import soak
from harness.run import runner
from harness.run.scenario import Scenario
from harness.rundir import runinfo
from harness.rundir.runfolder import new_run_dir, write_json, write_text
from harness.workloads import clients

log = logging.getLogger(__name__)

MATRIX_JSON = "matrix.json"
MATRIX_HTML = "matrix.html"
#: matrix.json's layout; another one is refused on resume (its runs could not be read safely).
FORMAT = 1
#: The run folders' home inside the matrix folder; only the matrix writes or sweeps it.
RUNS = "runs"
#: The transaction versions a cluster can be formatted with; ``None`` (``default`` on the command
#: line) leaves it to Kafka (and runs on the cluster that is up, as a soak does).
LEVELS = (0, 1, 2)
DEFAULT_LEVEL = "default"

Level = int | None


class Cell(NamedTuple):
    scenario: str
    client: str
    level: Level


class RunKey(NamedTuple):
    cell: Cell
    #: which of the cell's runs (its seed is the definition's i-th)
    i: int


def level_name(level: Level) -> str:
    return DEFAULT_LEVEL if level is None else str(level)


# ---- the definition: what the command line asked for, checked before anything starts ----

def _items(flag: str, text: str | None) -> list[str]:
    items = [x.strip() for x in (text or "").split(",") if x.strip()]
    if not items:
        raise ConfigError(f"{flag} is empty; give one or more values separated by commas")
    return items


def _no_duplicates(flag: str, items: list[Any], shown: list[str]) -> None:
    seen: dict[Any, str] = {}
    for item, text in zip(items, shown, strict=True):
        if item in seen:
            same = f" (the same as {seen[item]!r})" if seen[item] != text else ""
            raise ConfigError(f"{flag}: {text!r} is given twice{same}; give each once")
        seen[item] = text


def parse_clients(text: str | None) -> list[str]:
    """``--clients`` as library specs (``harness.workloads.clients.parse``), normalised
    (``java`` is ``java@4.4.0``); ConfigError for an unknown or repeated one."""
    given = _items("--clients", text)
    try:
        parsed = [str(clients.parse(c)) for c in given]
    except ValueError as exc:
        raise ConfigError(f"--clients: {exc}") from None
    _no_duplicates("--clients", parsed, given)
    return parsed


def parse_levels(text: str | None) -> list[Level]:
    """``--transaction-versions``: each 0, 1, 2 or ``default``; ConfigError otherwise."""
    given = _items("--transaction-versions", text or DEFAULT_LEVEL)
    levels: list[Level] = []
    for g in given:
        if g == DEFAULT_LEVEL:
            levels.append(None)
        elif g in {str(v) for v in LEVELS}:
            levels.append(int(g))
        else:
            raise ConfigError(f"--transaction-versions: {g!r} is not a transaction version; allowed: "
                              f"{', '.join(str(v) for v in LEVELS)} or {DEFAULT_LEVEL} (Kafka's own)")
    _no_duplicates("--transaction-versions", levels, given)
    return levels


def fingerprint(sc: Scenario) -> str:
    """What a run of ``sc`` depends on, as a short hash: a scenario file edited between two
    sessions of one matrix is caught on resume."""
    # fields at their defaults left out: a field added to the scenario format later (with a default
    # that keeps the old behaviour) leaves a matrix's stored fingerprints valid
    return hashlib.sha256(sc.model_dump_json(exclude_defaults=True).encode()).hexdigest()[:16]


@dataclass
class Definition:
    """The matrix as asked for. Two sessions on one folder must agree on it, or the new one must
    only add to it (``growth_problems``)."""

    scenarios: list[str]
    clients: list[str]
    levels: list[Level]
    seeds: int
    master_seed: int
    backend: str
    duration: float | None
    kafka_version: str | None
    #: scenario -> fingerprint of the scenario as run (duration applied)
    fingerprints: dict[str, str] = field(default_factory=dict)
    #: scenario -> what it expects (negative controls: invalid)
    expect_valid: dict[str, bool | None] = field(default_factory=dict)

    def run_seeds(self) -> list[int]:
        """The seed of run i of every cell: the soak's draws from the master seed."""
        draw = soak.seeds(self.master_seed)
        return [draw() for _ in range(self.seeds)]

    def cells(self) -> list[Cell]:
        """Level by level (one cluster each), then scenario, then client."""
        return [Cell(s, c, lv) for lv in self.levels for s in self.scenarios for c in self.clients]

    def run_keys(self) -> list[RunKey]:
        return [RunKey(cell, i) for cell in self.cells() for i in range(self.seeds)]

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Definition:
        return cls(**d)

    def growth_problems(self, old: Definition) -> list[str]:
        """Why this definition cannot continue ``old``'s folder (empty: it can). It may add
        scenarios, clients, levels and seeds; whatever decides what an existing run means (master
        seed, backend, duration, Kafka version, a scenario's content) must be the same."""
        problems = [f"{what} {fmt(getattr(old, attr))} -> {fmt(getattr(self, attr))}"
                    for attr, what in (("master_seed", "--seed"), ("backend", "--backend"),
                                       ("duration", "--duration"), ("kafka_version", "--kafka-version"))
                    if getattr(old, attr) != getattr(self, attr)]
        for attr, what in (("scenarios", "--scenarios"), ("clients", "--clients"), ("levels", "--transaction-versions")):
            dropped = [x for x in getattr(old, attr) if x not in getattr(self, attr)]
            if dropped:
                problems.append(f"{what} leaves out {', '.join(level_name(x) if attr == 'levels' else str(x) for x in dropped)}")
        if self.seeds < old.seeds:
            problems.append(f"--seeds {old.seeds} -> {self.seeds}")
        problems += [f"scenario {s} changed since its runs (another file content or duration)"
                     for s, fp in old.fingerprints.items() if self.fingerprints.get(s, fp) != fp]
        return problems


def fmt(v: Any) -> str:
    return "none" if v is None else str(v)


def define(scenarios: str | None, clients_: str | None, levels: str | None, seeds: int, master_seed: int,
           backend: Backend, duration: float | None, kafka_version: str | None) -> tuple[Definition, dict[tuple[str, str], Scenario]]:
    """The matrix and every (scenario, client)'s scenario as it runs; ConfigError for anything the
    matrix could not run (unknown or repeated scenarios, clients, levels; a client that cannot run a
    workload of a scenario). Starts nothing."""
    names = _items("--scenarios", scenarios)
    _no_duplicates("--scenarios", names, names)
    libs = parse_clients(clients_)
    lvls = parse_levels(levels)
    for lv in lvls:  # a level the release does not take is refused before any cell runs
        check_transaction_version(kafka_version or pins.KAFKA_VERSION, lv, flag="--transaction-versions")
    if seeds < 1:
        raise ConfigError(f"--seeds {seeds}: give 1 or more runs per cell")
    scs = soak.resolve(names, duration)
    runs = {(name, lib): sc.with_library(lib, flag="--clients") for name, sc in zip(names, scs, strict=True) for lib in libs}
    defn = Definition(names, libs, lvls, seeds, master_seed, backend.value, duration, kafka_version,
                      {n: fingerprint(sc) for n, sc in zip(names, scs, strict=True)},
                      {n: sc.expect.valid for n, sc in zip(names, scs, strict=True)})
    return defn, runs


# ---- the record: matrix.json ----

@dataclass
class MatrixRun:
    """A finished run of a cell: the soak's run record plus where it sits in the matrix."""

    scenario: str
    client: str
    transaction_version: Level
    index: int
    seed: int
    #: relative to the matrix folder (the folder can be moved, its page's links still work)
    run_dir: str
    valid: bool | str | None
    as_expected: bool | None
    anomalies: dict[str, int]
    seconds: float
    error: str | None = None
    command: str | None = None

    @property
    def key(self) -> RunKey:
        return RunKey(Cell(self.scenario, self.client, self.transaction_version), self.index)

    @property
    def outcome(self) -> str:
        """valid, invalid (a finding) or unknown (a check crashed, the run broke, or its history had nothing to judge)."""
        return "valid" if self.valid is True else "invalid" if self.valid is False else "unknown"


@dataclass
class Matrix:
    definition: Definition
    runs: dict[RunKey, MatrixRun] = field(default_factory=dict)
    started: str = field(default_factory=lambda: time.strftime("%Y-%m-%d %H:%M:%S %Z"))
    #: wall time of every session on this folder together
    seconds: float = 0.0
    sessions: int = 0
    stopped_because: str = ""
    healed_at_end: bool | None = None
    heal_problems: list[str] = field(default_factory=list)

    @property
    def interrupted(self) -> bool:
        return self.stopped_because == "interrupted"

    @property
    def pending(self) -> list[RunKey]:
        return [k for k in self.definition.run_keys() if k not in self.runs]

    def cell(self, cell: Cell, out: Path | None = None) -> dict[str, Any]:
        """One cell's summary: counts, per check the runs it fired in and its anomalies, the rate
        of runs with a finding, wall time, and the first failing seed with its replay and report."""
        runs = [self.runs[RunKey(cell, i)] for i in range(self.definition.seeds) if RunKey(cell, i) in self.runs]
        counts = {o: sum(r.outcome == o for r in runs) for o in ("valid", "invalid", "unknown")}
        checks: dict[str, dict[str, int]] = {}
        for r in runs:
            for name, n in r.anomalies.items():
                c = checks.setdefault(name, {"runs": 0, "anomalies": 0})
                c["runs"] += 1
                c["anomalies"] += n
        failing = ([r for r in runs if r.outcome == "invalid"] or [r for r in runs if r.outcome == "unknown"])[:1]
        first = None
        if failing:
            f = failing[0]
            report = Path(f.run_dir) / "report.html"
            first = {"index": f.index, "seed": f.seed, "outcome": f.outcome, "error": f.error,
                     "replay": f.command, "report": str(report) if out is None or (out / report).exists() else None}
        state = ("pending" if not runs else "invalid" if counts["invalid"] else "unknown" if counts["unknown"]
                 else "valid" if len(runs) == self.definition.seeds else "partial")
        return {"scenario": cell.scenario, "client": cell.client, "transaction_version": cell.level,
                "state": state, "runs": len(runs), "wanted": self.definition.seeds, **counts,
                "checks": dict(sorted(checks.items())),
                "reproduction_rate": round(counts["invalid"] / len(runs), 3) if runs else None,
                "seconds": round(sum(r.seconds for r in runs), 1), "first_failing": first}

    def totals(self) -> dict[str, int]:
        runs = list(self.runs.values())
        return {"runs": len(runs), "wanted": len(self.definition.run_keys()),
                **{o: sum(r.outcome == o for r in runs) for o in ("valid", "invalid", "unknown")}}

    def exit_code(self) -> int:
        """1 a finding in some run; else 3 some run unknown (or the cluster not healed at the
        end); else 0. (130 for an interrupted matrix is the command's.)"""
        t = self.totals()
        return 1 if t["invalid"] else 3 if t["unknown"] or self.healed_at_end is False else 0

    def as_json(self, out: Path | None = None) -> dict[str, Any]:
        return {"format": FORMAT, "definition": self.definition.as_json(),
                "run_seeds": self.definition.run_seeds(), "started": self.started, "seconds": round(self.seconds, 1),
                "sessions": self.sessions, "stopped_because": self.stopped_because,
                "healed_at_end": self.healed_at_end, "heal_problems": self.heal_problems,
                "totals": self.totals(), "cells": [self.cell(c, out) for c in self.definition.cells()],
                "runs": [asdict(self.runs[k]) for k in self.definition.run_keys() if k in self.runs]}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Matrix:
        m = cls(Definition.from_json(d["definition"]), started=d["started"], seconds=d["seconds"],
                sessions=d["sessions"])
        for r in d["runs"]:
            run = MatrixRun(**r)
            m.runs[run.key] = run
        return m


def load(out: Path) -> Matrix | None:
    """The matrix recorded in ``out`` (None: a new folder); ConfigError for a folder that is a
    file or a matrix.json this version cannot continue."""
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file, not a matrix folder")
    path = out / MATRIX_JSON
    if not path.exists():
        if out.exists() and any(out.iterdir()):
            raise ConfigError(f"--out {out} holds other files but no {MATRIX_JSON}: give an empty or new folder, "
                              "or one an earlier eos-chaos matrix made")
        return None
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
        if d.get("format") != FORMAT:
            raise ConfigError(f"{path}: format {d.get('format')!r}, this eos-chaos continues format {FORMAT} only; "
                              "give a new --out")
        return Matrix.from_json(d)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:  # a folder, not UTF-8, not an object
        raise ConfigError(f"{path} cannot be read ({type(exc).__name__}: {exc}); give a new --out") from None


def continued(old: Matrix | None, defn: Definition, out: Path) -> Matrix:
    """The matrix to run: ``old`` grown to ``defn`` (ConfigError naming every difference that is
    not growth), or a new one."""
    if old is None:
        return Matrix(defn)
    problems = defn.growth_problems(old.definition)
    if problems:
        raise ConfigError(f"{out / MATRIX_JSON} holds another matrix: " + "; ".join(problems)
                          + ". Resume with the same flags (a matrix may only grow: more scenarios, clients, "
                          "transaction versions or seeds), or give a new --out")
    old.definition = defn
    return old


# ---- before running it: the clients, and the dry run ----

def prepare_clients(m: Matrix, scs: dict[tuple[str, str], Scenario]) -> None:
    """Every client library a pending run uses, made ready before any cluster starts (a Java
    bridge fetched and built, once): a release that does not exist is refused here, exit 2 naming
    ``--clients``, rather than failing every run of its column on a cluster started for nothing."""
    wanted = {w.library for k in m.pending for w in scs[(k.cell.scenario, k.cell.client)].workloads}
    for lib in sorted(wanted):
        clients.prepare([lib], flag="--clients" if lib in m.definition.clients else None)


#: What a run costs besides its scenario's duration (set-up, heal, final reads, check, report), for
#: the dry run's estimate: docs/MATRIX.md measured 5-8 s without broker kills, ~17 s with them.
RUN_OVERHEAD_S = 10.0
#: What one cluster's start costs, for the estimate: ~20 s on the local backend (docs/MATRIX.md).
CLUSTER_START_S = 20.0


def _cluster_up(backend: Backend) -> state.ClusterRecord | None:
    """The record of the backend's cluster that is up (as ``runner.cluster_that_is_up`` finds it),
    read only: a dry run touches no cluster."""
    rec = state.load(backend.value)
    return None if rec is None or (rec.owner_pid is not None and not procs.alive(rec.owner_pid)) else rec


def plan(m: Matrix, scs: dict[tuple[str, str], Scenario]) -> dict[str, Any]:
    """What ``run_matrix`` would do with ``m``'s pending runs, starting nothing (``eos-chaos matrix
    --dry-run``): the clusters in the order they would run (backend, Kafka version, transaction
    version, broker settings; the default level's may be the cluster that is up), the cells each
    runs with their seeds, and an estimate of the time: the scenarios' durations plus
    ``RUN_OVERHEAD_S`` a run and ``CLUSTER_START_S`` a cluster started."""
    d = m.definition
    seeds = d.run_seeds()
    kafka = d.kafka_version or pins.KAFKA_VERSION
    up = _cluster_up(Backend(d.backend))
    clusters: list[dict[str, Any]] = []
    for group, keys in groups(m.pending, scs).items():
        shared = up if group == Group(None, ()) else None
        kv = shared.kafka_version if shared is not None else kafka
        level = group.level if shared is None else shared.transaction_version
        cells: dict[Cell, list[int]] = {}
        for k in keys:
            cells.setdefault(k.cell, []).append(seeds[k.i])
        note = None
        if shared is not None and d.kafka_version and d.kafka_version != shared.kafka_version:
            note = (f"it runs Kafka {shared.kafka_version}, --kafka-version asks for {d.kafka_version}: the matrix "
                    f"would refuse it (eos-chaos cluster down --backend {d.backend} first)")
        why = ("as the cluster that is up was formatted" if shared is not None
               else "Kafka's default" if group.level is None else "asked")
        clusters.append({
            "backend": d.backend, "kafka_version": kv,
            "transaction_version": level if level is not None else transaction_versions(kv)[1],
            "transaction_version_why": why, "broker_config": dict(group.broker_config),
            "started": shared is None, "run_dir": shared.run_dir if shared is not None else None, "note": note,
            "runs": len(keys), "scenario_s": sum(scs[(k.cell.scenario, k.cell.client)].duration for k in keys),
            "cells": [{"scenario": c.scenario, "client": c.client, "seeds": s} for c, s in cells.items()]})
    # the cluster that is up makes way for the first cluster of another group, and is started again at the end
    comes_back = up is not None and any(c["started"] for c in clusters)
    starts = sum(c["started"] for c in clusters) + comes_back
    scenario_s = sum(c["scenario_s"] for c in clusters)
    return {"cells": len(d.cells()), "seeds": d.seeds, "run_seeds": seeds, "master_seed": d.master_seed,
            "backend": d.backend, "runs": len(d.run_keys()), "done": len(m.runs), "pending": len(m.pending),
            "clusters": clusters, "cluster_up_comes_back": comes_back,
            "estimate": {"scenario_s": scenario_s, "run_overhead_s": RUN_OVERHEAD_S, "cluster_starts": starts,
                         "cluster_start_s": CLUSTER_START_S,
                         "total_s": scenario_s + len(m.pending) * RUN_OVERHEAD_S + starts * CLUSTER_START_S}}


# ---- running it ----

def level_cluster(backend: Backend, arts: artifacts.Artifacts, run_dir: Path, level: Level,
                  overrides: dict[str, str]) -> Cluster:
    """A new cluster formatted at transaction version ``level`` (None: Kafka's default). The one
    place the level reaches a cluster."""
    if level is None:
        return backends.new_cluster(backend, arts, run_dir, overrides=overrides)
    return backends.new_cluster(backend, arts, run_dir, overrides=overrides, transaction_version=level)


class Group(NamedTuple):
    """The runs that share one cluster: a transaction version and the broker settings they need."""

    level: Level
    broker_config: tuple[tuple[str, str], ...]


def groups(keys: list[RunKey], scs: dict[tuple[str, str], Scenario]) -> dict[Group, list[RunKey]]:
    """``keys`` by the cluster they run on, in order: the cluster that may be up (default level, no
    broker settings) first, then level by level."""
    out: dict[Group, list[RunKey]] = {}
    for k in keys:
        g = Group(k.cell.level, tuple(sorted(scs[(k.cell.scenario, k.cell.client)].broker_config.items())))
        out.setdefault(g, []).append(k)
    return dict(sorted(out.items(), key=lambda kv: kv[0] != Group(None, ())))


def run_matrix(m: Matrix, scs: dict[tuple[str, str], Scenario], out: Path) -> Matrix:
    """Run every pending run of ``m``; ``matrix.json`` and ``matrix.html`` are rewritten after each
    and at the end, whatever happens. Ctrl-C ends it (``stopped_because: interrupted``): the run under
    way is discarded, every cluster healed and what it started taken down."""
    d = m.definition
    backend = Backend(d.backend)
    seeds = d.run_seeds()
    todo = groups(m.pending, scs)
    # the cluster that is up, if any (refused before anything is written when it runs another Kafka)
    probe = next(iter(scs.values())).model_copy(update={"broker_config": {}})
    shared = runner.cluster_that_is_up(backend, probe, d.kafka_version) if todo else None
    m.sessions += 1
    prior, started = m.seconds, time.monotonic()
    m.stopped_because, m.healed_at_end, m.heal_problems = "", None, []
    _sweep(m, out)
    shared_own = made_way = False
    used = bool(todo)
    try:
        if shared is not None:
            runner.prepare_attached(shared)
        for group, keys in todo.items():
            if group == Group(None, ()):
                if shared is None:
                    shared, shared_own = _start(backend, d.kafka_version, group, out), True
                cluster_runs(m, keys, scs, shared, seeds, out, started, prior)
                continue
            if shared is not None and not made_way:  # one cluster at a time
                if shared_own:
                    m.heal_problems += soak.heal_at_end(shared, own=True)
                else:
                    log.info("the cluster that is up makes way for the clusters of the other transaction versions")
                    shared.stop()
                made_way = True
            with _own_cluster(backend, d.kafka_version, group, out, m.heal_problems) as cluster:
                cluster_runs(m, keys, scs, cluster, seeds, out, started, prior)
        m.stopped_because = "every run done"
    except KeyboardInterrupt:
        m.stopped_because = "interrupted"
    finally:
        if shared is not None and not made_way:
            m.heal_problems += soak.heal_at_end(shared, shared_own)
        elif shared is not None and not shared_own:
            shared.start()  # the cluster that was up, back as it was before the matrix
        m.healed_at_end = None if not used else not m.heal_problems
        m.stopped_because = m.stopped_because or "stopped by an error"
        m.seconds = prior + time.monotonic() - started
        write(m, out)
    return m


def cluster_runs(m: Matrix, keys: list[RunKey], scs: dict[tuple[str, str], Scenario], cluster: Cluster,
                 seeds: list[int], out: Path, started: float, prior: float) -> None:
    """The runs ``keys`` on ``cluster``, the record rewritten after each; KeyboardInterrupt when one
    was cut short (it is discarded: not recorded)."""
    d = m.definition
    for k in keys:
        sc = scs[(k.cell.scenario, k.cell.client)].model_copy(update={"broker_config": {}})  # the cluster has them
        parent = out / RUNS / f"tv-{level_name(k.cell.level)}" / k.cell.client.replace("@", "-")
        parent.mkdir(parents=True, exist_ok=True)
        one = soak.one_run(sc, k.cell.scenario, Backend(d.backend), seeds[k.i], parent, cluster)
        if one.interrupted:
            log.info(f"matrix: {k.cell.scenario} / {k.cell.client} / {level_name(k.cell.level)} seed {seeds[k.i]} "
                     "was cut short: discarded, redone on resume")
            raise KeyboardInterrupt
        run = MatrixRun(k.cell.scenario, k.cell.client, k.cell.level, k.i, seeds[k.i],
                        os.path.relpath(one.run_dir, out), one.valid, one.as_expected, one.anomalies, one.seconds,
                        one.error, replay(one.command, k, seeds[k.i], d, scs))
        m.runs[k] = run
        m.seconds = prior + time.monotonic() - started
        write(m, out)
        log.info(f"matrix [{len(m.runs)}/{len(d.run_keys())}] {k.cell.scenario} / {k.cell.client} / "
                 f"transaction version {level_name(k.cell.level)} seed {run.seed}: "
                 + (f"error: {run.error}" if run.error else run.outcome.upper()))


def replay(recorded: str | None, k: RunKey, seed: int, d: Definition, scs: dict[tuple[str, str], Scenario]) -> str:
    """The ``eos-chaos run`` command that replays run ``k``: the one the run recorded (backend, seed,
    duration, Kafka version), with its client and transaction version."""
    cmd = recorded or runinfo.rerun_command(k.cell.scenario, d.backend, seed,
                                            scs[(k.cell.scenario, k.cell.client)].duration, d.kafka_version)
    cmd += f" --library {k.cell.client}"
    # the run records the level it was formatted at already (a run on a cluster of the release's default does not)
    has_level = "--transaction-version " in cmd
    return cmd + (f" --transaction-version {k.cell.level}" if k.cell.level is not None and not has_level else "")


def _start(backend: Backend, kafka_version: str | None, group: Group, out: Path) -> Cluster:
    arts = artifacts.ready(kafka_version) if kafka_version else None
    arts = arts or artifacts.ensure(kafka_version or pins.KAFKA_VERSION)
    cluster = level_cluster(backend, arts, new_run_dir(f"cluster-tv-{level_name(group.level)}", out / RUNS),
                            group.level, dict(group.broker_config))
    log.info(f"matrix: a cluster at transaction version {level_name(group.level)}"
             + (f" with {dict(group.broker_config)}" if group.broker_config else ""))
    cluster.start()
    return cluster


@contextmanager
def _own_cluster(backend: Backend, kafka_version: str | None, group: Group, out: Path,
                 heal_problems: list[str]) -> Iterator[Cluster]:
    """A cluster for ``group`` alone: up for its runs, healed (what did not heal goes to
    ``heal_problems``) and down after, whatever happens."""
    cluster = _start(backend, kafka_version, group, out)
    try:
        yield cluster
    finally:
        heal_problems += soak.heal_at_end(cluster, own=True)


def _sweep(m: Matrix, out: Path) -> None:
    """Remove run folders of runs the record does not hold (cut short by Ctrl-C or a kill in an
    earlier session; they are redone). The clusters' folders (``runs/*-cluster-tv-*``) stay."""
    kept = {Path(r.run_dir) for r in m.runs.values()}
    for d in sorted((out / RUNS).glob("tv-*/*/*")):
        if d.is_dir() and d.relative_to(out) not in kept:
            log.info(f"matrix: removing {d.relative_to(out)}, a run an earlier session did not finish")
            shutil.rmtree(d, ignore_errors=True)


def write(m: Matrix, out: Path) -> None:
    """``matrix.json`` and ``matrix.html``, each atomically."""
    from harness.report.matrix_page import render_matrix

    data = m.as_json(out)
    write_json(out / MATRIX_JSON, data)
    write_text(out / MATRIX_HTML, render_matrix(data, out.name))
