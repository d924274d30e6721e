"""``eos-chaos matrix``: scenarios x clients x Kafka versions x transaction versions, each cell run
with the same seeds, drawn from one master seed. The answer to "is this client, on this Kafka
release and transaction protocol, exposed?" with the runs as evidence (docs/MATRIX.md).

A *cell* is (scenario, client, Kafka version, transaction version); a *run* is a cell and the index
of its seed. Run seeds are the soak's (``harness.campaigns.soak.seeds``): the i-th seed is the same
in every cell, so each column sees the same fault schedules, and a matrix grown by clients, Kafka
versions, levels or seeds keeps the runs it has. One cluster per (Kafka version, transaction
version, set of broker settings a scenario needs), so a level is set when the cluster is formatted;
a level a release cannot be formatted at is a cell that says so, with nothing to run. The runs go
through the soak's ``one_run`` (``runner.run_on_shared``). ``matrix.json`` is rewritten after every
run, so the same command on the same ``--out`` resumes: finished runs are kept, a run cut short by
Ctrl-C is discarded and redone."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shlex
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from clusters.backends import artifacts, backends, procs, state
from clusters.backends.backends import Backend
from clusters.backends.protocol import Cluster
from clusters.builds import pins
from clusters.kafka import feature_levels, kafka_release
from harness.base.errors import ConfigError
from harness.base.flags import comma_list
from harness.campaigns import soak
from harness.campaigns.shards import Shard, shares
from harness.run import runner
from harness.run.scenario import Scenario
from harness.rundir import runinfo
from harness.rundir.runfolder import new_run_dir, write_json, write_text
from harness.workloads import clients

log = logging.getLogger(__name__)

MATRIX_JSON = "matrix.json"
MATRIX_HTML = "matrix.html"
#: matrix.json's layout; another one is refused on resume (its runs could not be read safely).
#: 2: the Kafka-version axis (``definition.kafka_versions``, a run's and a cell's ``kafka_version``).
#: 3: ``harness`` (which eos-chaos wrote it), ``shard`` (a ``--shard i/N`` folder: its index, count and
#: every shard's runs) and ``merged`` (``eos-chaos matrix merge``'s shards and the missing ones).
FORMAT = 3
#: Older layouts still read (``_from_format_1``): 1 is a matrix of one Kafka version.
READS = (1, 2, FORMAT)
#: The run folders' home inside the matrix folder; only the matrix writes or sweeps it.
RUNS = "runs"
#: where the folders of unknown runs go when they are run again (``--redo-unknown``)
REDONE = "redone"
#: The transaction versions a cluster can be formatted with; ``None`` (``default`` on the command
#: line) leaves it to Kafka (and runs on the cluster that is up, as a soak does).
LEVELS = (0, 1, 2)
DEFAULT_LEVEL = "default"

Level = int | None


class Cell(NamedTuple):
    scenario: str
    client: str
    kafka_version: str
    level: Level


class RunKey(NamedTuple):
    cell: Cell
    #: which of the cell's runs (its seed is the definition's i-th)
    i: int


def level_name(level: Level) -> str:
    return DEFAULT_LEVEL if level is None else str(level)


# ---- the definition: what the command line asked for, checked before anything starts ----

def _items(flag: str, text: str | None) -> list[str]:
    return comma_list(flag, text or "")


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


def parse_kafka_versions(one: str | None, many: str | None) -> tuple[list[str], str]:
    """``--kafka-version X`` (the one-version case) or ``--kafka-versions A,B,...``, never both;
    neither is the pinned release. Each is MAJOR.MINOR.PATCH, no older than
    ``pins.MIN_KAFKA_VERSION`` (``kafka_release.parse_kafka_version``) and given once. Returns the
    versions (normalised: ``4.04.0`` is ``4.4.0``) and the flag they came by, for later messages."""
    if one is not None and many is not None:
        raise ConfigError(f"--kafka-version {one} and --kafka-versions {many}: give one of the two "
                          "(--kafka-version X is --kafka-versions X)")
    flag = "--kafka-version" if one is not None else "--kafka-versions"
    if one is not None and "," in one:
        raise ConfigError(f"--kafka-version {one}: give one release (MAJOR.MINOR.PATCH); for several, "
                          f"--kafka-versions {one}")
    given = [one.strip()] if one is not None else _items(flag, many if many is not None else pins.KAFKA_VERSION)
    versions = [".".join(map(str, kafka_release.parse_kafka_version(v, flag))) for v in given]
    _no_duplicates(flag, versions, given)
    return versions, flag


def parse_levels(text: str | None) -> list[Level]:
    """``--transaction-versions``: each 0, 1, 2 or ``default``; ConfigError otherwise."""
    given = _items("--transaction-versions", text if text is not None else DEFAULT_LEVEL)
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
    #: the releases, a cluster (per level) each, in the order asked for
    kafka_versions: list[str]
    #: scenario -> fingerprint of the scenario as run (duration applied)
    fingerprints: dict[str, str] = field(default_factory=dict)
    #: scenario -> what it expects (negative controls: invalid)
    expect_valid: dict[str, bool | None] = field(default_factory=dict)

    def run_seeds(self) -> list[int]:
        """The seed of run i of every cell: the soak's draws from the master seed."""
        draw = soak.seeds(self.master_seed)
        return [draw() for _ in range(self.seeds)]

    def cells(self) -> list[Cell]:
        """Kafka version by Kafka version, level by level (one cluster each), then scenario, then client."""
        return [Cell(s, c, kv, lv) for kv in self.kafka_versions for lv in self.levels
                for s in self.scenarios for c in self.clients]

    def run_keys(self) -> list[RunKey]:
        """Every run of every cell that can run (an unsupported cell has none)."""
        return [RunKey(cell, i) for cell in self.cells() if unsupported(cell) is None for i in range(self.seeds)]

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Definition:
        return cls(**d)

    def growth_problems(self, old: Definition) -> list[str]:
        """Why this definition cannot continue ``old``'s folder (empty: it can). It may add
        scenarios, clients, Kafka versions, levels and seeds; whatever decides what an existing run
        means (master seed, backend, duration, a scenario's content) must be the same."""
        problems = [f"{what} {fmt(getattr(old, attr))} -> {fmt(getattr(self, attr))}"
                    for attr, what in (("master_seed", "--seed"), ("backend", "--backend"), ("duration", "--duration"))
                    if getattr(old, attr) != getattr(self, attr)]
        for attr, what in (("scenarios", "--scenarios"), ("clients", "--clients"), ("kafka_versions", "--kafka-versions"),
                           ("levels", "--transaction-versions")):
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


def unsupported(cell: Cell) -> str | None:
    """Why ``cell`` cannot run (``not supported: Kafka 3.9.2 formats transaction.version 0
    only``): its Kafka version cannot be formatted at its level. None: it can."""
    why = feature_levels.unsupported(cell.kafka_version, cell.level)
    return None if why is None else f"not supported: Kafka {cell.kafka_version} {why}"


def define(scenarios: str | None, clients_: str | None, levels: str | None, seeds: int, master_seed: int,
           backend: Backend, duration: float | None, kafka_version: str | None = None,
           kafka_versions: str | None = None) -> tuple[Definition, dict[tuple[str, str], Scenario]]:
    """The matrix and every (scenario, client)'s scenario as it runs; ConfigError for anything the
    matrix could not run (unknown or repeated scenarios, clients, Kafka versions, levels; both
    Kafka-version flags; no Kafka version that can be formatted at any level asked for; a client
    that cannot run a workload of a scenario). A (Kafka version, level) that cannot be formatted is
    not an error while another pair can: its cells say so (``unsupported``). Starts nothing."""
    names = _items("--scenarios", scenarios)
    _no_duplicates("--scenarios", names, names)
    libs = parse_clients(clients_)
    kvs, kafka_flag = parse_kafka_versions(kafka_version, kafka_versions)
    lvls = parse_levels(levels)
    if all(feature_levels.unsupported(kv, lv) is not None for kv in kvs for lv in lvls):  # nothing could run
        raise ConfigError(f"--transaction-versions {','.join(map(level_name, lvls))} with {kafka_flag} {','.join(kvs)}: "
                          "no Kafka version can be formatted at any of them ("
                          + "; ".join(f"Kafka {kv} {feature_levels.unsupported(kv, lvls[0])}" for kv in kvs)
                          + f"); levels 1 and 2 need Kafka 4.0 or newer (for example {pins.KAFKA_VERSION})")
    if seeds < 1:
        raise ConfigError(f"--seeds {seeds}: give 1 or more runs per cell")
    scs = soak.resolve(names, duration)
    runs = {(name, lib): sc.with_library(lib, flag="--clients") for name, sc in zip(names, scs, strict=True) for lib in libs}
    defn = Definition(names, libs, lvls, seeds, master_seed, backend.value, duration, kvs,
                      {n: fingerprint(sc) for n, sc in zip(names, scs, strict=True)},
                      {n: sc.expect.valid for n, sc in zip(names, scs, strict=True)})
    return defn, runs


# ---- the record: matrix.json ----

@dataclass
class MatrixRun:
    """A finished run of a cell: the soak's run record plus where it sits in the matrix."""

    scenario: str
    client: str
    kafka_version: str
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
    #: faults that failed and did not run (``SoakRun.faults_failed``; 0 in a record made before it)
    faults_failed: int = 0

    @property
    def key(self) -> RunKey:
        return RunKey(Cell(self.scenario, self.client, self.kafka_version, self.transaction_version), self.index)

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
    #: folders of unknown runs taken off the record to run again (``continued``'s ``redo_unknown``):
    #: moved under ``redone/`` rather than removed (not in matrix.json: the record holds the new runs)
    redone: list[str] = field(default_factory=list)
    #: which eos-chaos made the runs (``runinfo.harness_id``); shards of one table must agree on it
    harness: dict[str, Any] = field(default_factory=lambda: dict(runinfo.harness_id()))
    #: ``--shard i/N``: the share this folder runs (``sharded``); None: every run
    shard: Shard | None = None
    #: every shard's runs, shard 1's first (``run_shares``): set in a shard's and a merged folder
    shares: list[list[RunKey]] | None = None
    #: set by ``eos-chaos matrix merge``: ``count``, ``shards`` (index, folder, sessions, seconds,
    #: healed_at_end each) and ``missing`` (the indexes of the shards not given)
    merged: dict[str, Any] | None = None

    @property
    def interrupted(self) -> bool:
        return self.stopped_because == "interrupted"

    @property
    def wanted(self) -> list[RunKey]:
        """The runs this folder runs: its shard's, or every run."""
        if self.shard is not None and self.shares is not None:
            return self.shares[self.shard.index - 1]
        return self.definition.run_keys()

    @property
    def pending(self) -> list[RunKey]:
        return [k for k in self.wanted if k not in self.runs]

    @property
    def not_run(self) -> dict[RunKey, int]:
        """The runs of a merged folder's missing shards not run since, each with its shard."""
        if self.merged is None or self.shares is None:
            return {}
        return {k: i for i in self.merged["missing"] for k in self.shares[i - 1] if k not in self.runs}

    def cell(self, cell: Cell, out: Path | None = None) -> dict[str, Any]:
        """One cell's summary: counts, per check the runs it fired in and its anomalies, the rate
        of runs with a finding, wall time, and the first failing seed with its replay and report;
        the faults that failed in its runs (``faults_failed``, and in how many runs);
        or, for a cell whose Kafka version cannot be formatted at its level, why (``unsupported``,
        state ``unsupported``, nothing wanted: neither a finding nor unknown)."""
        keys = [RunKey(cell, i) for i in range(self.definition.seeds)]
        mine = set(self.wanted)
        runs = [self.runs[k] for k in keys if k in self.runs]
        missing = sorted({i for k, i in self.not_run.items() if k.cell == cell})
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
        why = unsupported(cell)
        wanted = sum(k in mine for k in keys)
        state = cell_state(why, counts, len(runs), wanted, missing)
        return {"scenario": cell.scenario, "client": cell.client, "kafka_version": cell.kafka_version,
                "transaction_version": cell.level, "state": state, "unsupported": why, "runs": len(runs),
                "wanted": 0 if why is not None else wanted, "missing_shards": missing, **counts,
                "checks": dict(sorted(checks.items())),
                "reproduction_rate": round(counts["invalid"] / len(runs), 3) if runs else None,
                "seconds": round(sum(r.seconds for r in runs), 1), "first_failing": first,
                # faults that failed in its runs: a valid cell with some did not try all it was asked to
                "faults_failed": sum(r.faults_failed for r in runs),
                "runs_with_failed_faults": sum(1 for r in runs if r.faults_failed)}

    def totals(self) -> dict[str, int]:
        runs = list(self.runs.values())
        return {"runs": len(runs), "wanted": len(self.wanted), "not_run": len(self.not_run),
                **{o: sum(r.outcome == o for r in runs) for o in ("valid", "invalid", "unknown")}}

    def exit_code(self) -> int:
        """1 a finding in some run; else 3 some run unknown, a missing shard's runs not run (a
        merged folder), or the cluster not healed at the end; else 0. (130 for an interrupted
        matrix is the command's.)"""
        t = self.totals()
        return 1 if t["invalid"] else 3 if t["unknown"] or t["not_run"] or self.healed_at_end is False else 0

    def as_json(self, out: Path | None = None) -> dict[str, Any]:
        return {"format": FORMAT, "definition": self.definition.as_json(),
                "run_seeds": self.definition.run_seeds(), "started": self.started, "seconds": round(self.seconds, 1),
                "sessions": self.sessions, "stopped_because": self.stopped_because,
                "healed_at_end": self.healed_at_end, "heal_problems": self.heal_problems,
                "totals": self.totals(), "cells": [self.cell(c, out) for c in self.definition.cells()],
                "runs": [asdict(self.runs[k]) for k in self.definition.run_keys() if k in self.runs],
                "harness": self.harness, "merged": self.merged,
                "shard": None if self.shard is None else self.shard.as_json(),
                "shares": None if self.shares is None else [[key_json(k) for k in keys] for keys in self.shares]}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Matrix:
        """A matrix.json of any layout in ``READS`` (format 1 as a matrix of one Kafka version)."""
        if d.get("format") == 1:
            d = _from_format_1(d)
        m = cls(Definition.from_json(d["definition"]), started=d["started"], seconds=d["seconds"],
                sessions=d["sessions"], harness=d.get("harness") or {}, merged=d.get("merged"),
                # how the last session ended, for merge (a session of its own starts them afresh)
                stopped_because=d.get("stopped_because", ""), healed_at_end=d.get("healed_at_end"),
                heal_problems=d.get("heal_problems", []),
                shard=Shard(**d["shard"]) if d.get("shard") else None,
                shares=None if d.get("shares") is None else [[key_of(k) for k in keys] for keys in d["shares"]])
        for r in d["runs"]:
            run = MatrixRun(**r)
            m.runs[run.key] = run
        return m


def cell_state(why: str | None, counts: dict[str, int], runs: int, wanted: int, missing: list[int]) -> str:
    """A cell's state: a finding wins; a cell with runs of a missing shard is ``not-run``, never
    valid; a shard's cell with none of its runs is ``other-shard``."""
    if why is not None:
        return "unsupported"
    if counts["invalid"]:
        return "invalid"
    if missing:
        return "not-run"
    if counts["unknown"]:
        return "unknown"
    if not runs:
        return "other-shard" if not wanted else "pending"
    return "valid" if runs >= wanted else "partial"


def key_json(k: RunKey) -> list[Any]:
    """A run's key as matrix.json says it: ``[scenario, client, kafka_version, level, i]``."""
    return [*k.cell, k.i]


def key_of(j: list[Any]) -> RunKey:
    return RunKey(Cell(j[0], j[1], j[2], j[3]), j[4])


def _from_format_1(d: dict[str, Any]) -> dict[str, Any]:
    """A format-1 matrix.json (one Kafka version: ``definition.kafka_version``, null for the
    default) in format 2's layout: its one Kafka version is the one it was given, else the one its
    runs' replay commands name (the release they ran on), else the pinned release."""
    defn = dict(d["definition"])
    kv = defn.pop("kafka_version") or _recorded_version(d["runs"]) or pins.KAFKA_VERSION
    return {**d, "format": FORMAT, "definition": {**defn, "kafka_versions": [kv]},
            "runs": [{**r, "kafka_version": kv} for r in d["runs"]]}


def _recorded_version(runs: list[dict[str, Any]]) -> str | None:
    """The ``--kafka-version`` the runs' replay commands name, when they name one and the same."""
    named = set()
    for r in runs:
        words = shlex.split(r.get("command") or "")
        named |= {words[i + 1] for i, w in enumerate(words[:-1]) if w == "--kafka-version"}
    return named.pop() if len(named) == 1 else None


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
        if d.get("format") not in READS:
            raise ConfigError(f"{path}: format {d.get('format')!r}, this eos-chaos continues formats "
                              f"{', '.join(map(str, READS))} only; give a new --out")
        return Matrix.from_json(d)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:  # a folder, not UTF-8, not an object
        raise ConfigError(f"{path} cannot be read ({type(exc).__name__}: {exc}); give a new --out") from None


def continued(old: Matrix | None, defn: Definition, out: Path, redo_unknown: bool = False) -> Matrix:
    """The matrix to run: ``old`` grown to ``defn`` (ConfigError naming every difference that is
    not growth), or a new one. ``redo_unknown``: its unknown runs are taken off the record, to run
    again (their folders stay)."""
    if old is None:
        return Matrix(defn)
    problems = defn.growth_problems(old.definition)
    if problems:
        raise ConfigError(f"{out / MATRIX_JSON} holds another matrix: " + "; ".join(problems)
                          + ". Resume with the same flags (a matrix may only grow: more scenarios, clients, "
                          "Kafka versions, transaction versions or seeds), or give a new --out")
    old.definition = defn
    if redo_unknown:
        gone = [k for k, r in old.runs.items() if r.outcome == "unknown"]
        for k in gone:
            log.info(f"to run again: {cell_name(k.cell)} #{k.i + 1} (unknown: {old.runs[k].error or 'no verdict'}; "
                     f"its folder goes to {REDONE}/{old.runs[k].run_dir})")
            old.redone.append(old.runs.pop(k).run_dir)
    return old


def run_shares(d: Definition, scs: dict[tuple[str, str], Scenario], count: int) -> list[list[RunKey]]:
    """Every shard's runs when ``d`` is cut into ``count``: its runs in the order one machine runs
    them (``groups``, with no cluster up), cut by cost (scenario duration + ``RUN_OVERHEAD_S``)."""
    order = [k for keys in groups(d.run_keys(), scs).values() for k in keys]
    return shares(order, [scs[(k.cell.scenario, k.cell.client)].duration + RUN_OVERHEAD_S for k in order], count)


def sharded(m: Matrix, scs: dict[tuple[str, str], Scenario], shard: Shard | None, out: Path) -> Matrix:
    """``m`` cut to ``shard``'s runs (None: every run). A shard's folder resumes as the same shard
    of the same matrix only (grown, its shares would move); a whole or merged matrix is no shard.
    ConfigError naming the folder and what to do."""
    where = out / MATRIX_JSON
    if shard is None:
        if m.shard is not None:
            raise ConfigError(f"{where} is shard {m.shard} of a matrix: resume it with --shard {m.shard}, or merge the "
                              "shards (eos-chaos matrix merge) and resume the merged folder")
        return m
    if m.merged is not None or (m.shard is None and m.runs):
        raise ConfigError(f"--shard {shard}: {where} holds a whole matrix, not a shard; give a new --out")
    if m.shard is not None and m.shard != shard:
        raise ConfigError(f"--shard {shard}: {where} is shard {m.shard}; resume it with --shard {m.shard}, or give a new --out")
    cut = run_shares(m.definition, scs, shard.count)
    if m.shares is not None and cut != m.shares:
        raise ConfigError(f"--shard {shard}: {where} is shard {shard} of another matrix (a shard resumes with the same "
                          "flags only: with others its share would move); give the same flags, or a new --out")
    if m.runs and m.harness.get("source") != runinfo.harness_id()["source"]:
        raise ConfigError(f"--shard {shard}: {where} was made by eos-chaos {runinfo.harness_name(m.harness)}, this is "
                          f"{runinfo.harness_name(runinfo.harness_id())}; the shards of one table must come from one "
                          "eos-chaos (matrix merge refuses a mix): give a new --out")
    m.shard, m.shares = shard, cut
    return m


# ---- before running it: the Kafka releases, the clients, and the dry run ----

def prepare_kafka(m: Matrix, flag: str = "--kafka-versions") -> None:
    """Every Kafka release a pending run needs, fetched once (``artifacts.ensure``, into the cache;
    one already there is only looked at) before any cluster starts or any cell runs: a release Maven
    Central lacks is refused here, exit 2 naming it and ``flag``, rather than after the cells of
    the versions before it have run."""
    for kv in dict.fromkeys(k.cell.kafka_version for k in m.pending):
        if artifacts.ready(kv) is None:
            artifacts.ensure(kv, flag=flag)


def prepare_clients(m: Matrix, scs: dict[tuple[str, str], Scenario]) -> None:
    """Every client library a pending run uses, made ready before any cluster starts (a Java
    bridge fetched and built, once): a release that does not exist is refused here, exit 2 naming
    ``--clients``, rather than failing every run of its column on a cluster started for nothing."""
    wanted = {w.library for k in m.pending for w in scs[(k.cell.scenario, k.cell.client)].workloads}
    for lib in sorted(wanted):
        clients.prepare([lib], flag="--clients" if lib in m.definition.clients else None)


def preflight(scs: dict[tuple[str, str], Scenario]) -> None:
    """``soak.preflight`` of each scenario once (its cells, one per client, share it): before any
    cluster starts, and in the dry run."""
    soak.preflight(list({k[0]: sc for k, sc in scs.items()}.values()))


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
    """What ``run_matrix`` would do with ``m``'s pending runs, starting and fetching nothing
    (``eos-chaos matrix --dry-run``): per Kafka version, whether its release is in the cache (else
    it is fetched before any cell runs), the clusters in the order they would run (backend,
    transaction version, broker settings; the cluster that is up runs the cells it fits), the cells
    each runs with their seeds, and the cells that cannot run (``unsupported``); and an estimate of
    the time: the scenarios' durations plus ``RUN_OVERHEAD_S`` a run and ``CLUSTER_START_S`` a
    cluster started."""
    d = m.definition
    seeds = d.run_seeds()
    up = _cluster_up(Backend(d.backend))
    fits = fitting(up.kafka_version, up.wire_between_brokers, m.pending, scs) if up is not None else None
    todo = groups(m.pending, scs, first=fits)
    versions: dict[str, dict[str, Any]] = {}
    for kv in [g.kafka_version for g in todo] + d.kafka_versions:  # the order they run in, then the rest
        if kv not in versions:
            cells = [c for c in d.cells() if c.kafka_version == kv]
            versions[kv] = {"kafka_version": kv, "cached": kafka_release.kafka_ready(kv) is not None, "clusters": [],
                            "unsupported": _unsupported_levels(cells)}
    for group, keys in todo.items():
        shared = up if group == fits else None
        level = group.level if shared is None else shared.transaction_version
        cells_seeds: dict[Cell, list[int]] = {}
        for k in keys:
            cells_seeds.setdefault(k.cell, []).append(seeds[k.i])
        why = ("as the cluster that is up was formatted" if shared is not None
               else "Kafka's default" if group.level is None else "asked")
        versions[group.kafka_version]["clusters"].append({
            "backend": d.backend, "kafka_version": group.kafka_version,
            "transaction_version": level if level is not None else feature_levels.transaction_versions(group.kafka_version)[1],
            "transaction_version_why": why, "broker_config": dict(group.broker_config),
            "wire_between_brokers": shared.wire_between_brokers if shared is not None else routed(keys, scs),
            "started": shared is None, "run_dir": shared.run_dir if shared is not None else None,
            "runs": len(keys), "scenario_s": sum(scs[(k.cell.scenario, k.cell.client)].duration for k in keys),
            "cells": [{"scenario": c.scenario, "client": c.client, "seeds": s} for c, s in cells_seeds.items()]})
    clusters = [c for v in versions.values() for c in v["clusters"]]
    # the cluster that is up makes way for the first cluster it cannot serve, and is started again at the end
    comes_back = up is not None and any(c["started"] for c in clusters)
    starts = sum(c["started"] for c in clusters) + comes_back
    scenario_s = sum(c["scenario_s"] for c in clusters)
    return {"cells": len(d.cells()), "unsupported_cells": sum(unsupported(c) is not None for c in d.cells()),
            "seeds": d.seeds, "run_seeds": seeds, "master_seed": d.master_seed,
            "backend": d.backend, "runs": len(d.run_keys()), "done": len(m.runs), "pending": len(m.pending),
            "kafka_versions": list(versions.values()), "clusters": clusters,
            "cluster_up": None if up is None else {"kafka_version": up.kafka_version, "run_dir": up.run_dir,
                                                   "serves": fits in todo},
            "cluster_up_comes_back": comes_back,
            "shard": None if m.shard is None else str(m.shard), "shard_runs": len(m.wanted),
            "estimate": {"scenario_s": scenario_s, "run_overhead_s": RUN_OVERHEAD_S, "cluster_starts": starts,
                         "cluster_start_s": CLUSTER_START_S,
                         "total_s": scenario_s + len(m.pending) * RUN_OVERHEAD_S + starts * CLUSTER_START_S}}


def _unsupported_levels(cells: list[Cell]) -> list[dict[str, Any]]:
    """The levels of ``cells`` (of one Kafka version) that cannot run, each with why and its cells."""
    out: dict[Level, dict[str, Any]] = {}
    for c in cells:
        why = unsupported(c)
        if why is not None:
            out.setdefault(c.level, {"transaction_version": c.level, "why": why, "cells": []})["cells"].append(
                {"scenario": c.scenario, "client": c.client})
    return list(out.values())


# ---- running it ----

def level_cluster(backend: Backend, arts: artifacts.Artifacts, run_dir: Path, level: Level,
                  overrides: dict[str, str], wire_between_brokers: bool = False) -> Cluster:
    """A new cluster of ``arts``' Kafka release formatted at transaction version ``level`` (None:
    Kafka's default). The one place the level reaches a cluster. ``wire_between_brokers``: its links
    between brokers through the wire proxy too."""
    asked: dict[str, Any] = {"overrides": overrides}
    if level is not None:
        asked["transaction_version"] = level
    if wire_between_brokers:
        asked["wire_between_brokers"] = True
    return backends.new_cluster(backend, arts, run_dir, **asked)


class Group(NamedTuple):
    """The runs that share one cluster: a Kafka version, a transaction version and the broker
    settings they need."""

    kafka_version: str
    level: Level
    broker_config: tuple[tuple[str, str], ...]


def groups(keys: list[RunKey], scs: dict[tuple[str, str], Scenario], first: Group | None = None) -> dict[Group, list[RunKey]]:
    """``keys`` by the cluster they run on, in order: Kafka version by Kafka version, each starting
    with its default level without broker settings (the cluster that may be up), then level by
    level; ``first`` (the group the cluster that is up can run) and its Kafka version before all."""
    out: dict[Group, list[RunKey]] = {}
    for k in keys:
        out.setdefault(_group_of(k, scs), []).append(k)
    first = first if first in out else None  # a cluster that is up but serves none makes way at once
    order = {kv: i for i, kv in enumerate(dict.fromkeys(g.kafka_version for g in out))}

    def rank(g: Group) -> tuple[bool, bool, int, bool]:
        return (g != first, g.kafka_version != (first.kafka_version if first else None), order[g.kafka_version],
                g[1:] != (None, ()))

    return dict(sorted(out.items(), key=lambda kv: rank(kv[0])))  # stable: levels keep their order


def _group_of(k: RunKey, scs: dict[tuple[str, str], Scenario]) -> Group:
    return Group(k.cell.kafka_version, k.cell.level, tuple(sorted(scs[(k.cell.scenario, k.cell.client)].broker_config.items())))


def routed(keys: list[RunKey], scs: dict[tuple[str, str], Scenario]) -> bool:
    """A run of ``keys`` has a request-aware fault between brokers: the cluster they share routes
    the links between brokers through the wire proxy (a hunt's draw has them: harness/campaigns/hunt_brokers.py)."""
    return any(runner.needs_wire_between_brokers(scs[(k.cell.scenario, k.cell.client)]) for k in keys)


def fitting(kafka_version: str, routes: bool, pending: list[RunKey], scs: dict[tuple[str, str], Scenario]) -> Group | None:
    """The group the cluster that is up runs (Kafka ``kafka_version``'s cells at the default level
    without broker settings), or None: it serves none when it does not route the links between
    brokers (``routes``) and one of those runs has a fault between brokers. It then makes way for a
    cluster that does, as for broker settings (a run on it would be refused)."""
    g = Group(kafka_version, None, ())
    return g if routes or not routed([k for k in pending if _group_of(k, scs) == g], scs) else None


def kafka_version_of(cluster: Cluster) -> str | None:
    """The Kafka release ``cluster`` runs (every backend's cluster carries its artifacts)."""
    return getattr(getattr(cluster, "artifacts", None), "kafka_version", None)


def run_matrix(m: Matrix, scs: dict[tuple[str, str], Scenario], out: Path) -> Matrix:
    """Run every pending run of ``m``; ``matrix.json`` and ``matrix.html`` are rewritten after each
    and at the end, whatever happens. Ctrl-C ends it (``stopped_because: interrupted``): the run under
    way is discarded, every cluster healed and what it started taken down."""
    d = m.definition
    backend = Backend(d.backend)
    seeds = d.run_seeds()
    # the cluster that is up, if any, of any Kafka version: it runs the cells of its version at the
    # default level without broker settings, and makes way for every other cluster
    # (without faults: one between brokers on a cluster that does not route them makes way, below)
    probe = next(iter(scs.values())).model_copy(update={"broker_config": {}, "faults": []})
    shared = runner.cluster_that_is_up(backend, probe) if m.pending else None
    kv_up = kafka_version_of(shared) if shared is not None else None
    fits = (fitting(kv_up, shared.topology.wire_between_brokers, m.pending, scs)
            if shared is not None and kv_up is not None else None)
    todo = groups(m.pending, scs, first=fits)
    m.sessions += 1
    prior, started = m.seconds, time.monotonic()
    m.stopped_because, m.healed_at_end, m.heal_problems = "", None, []
    _sweep(m, out)
    made_way = False
    used = bool(todo)
    try:
        if shared is not None:
            runner.prepare_attached(shared)
        for group, keys in todo.items():
            if shared is not None and group == fits:  # first of all, when there is one
                cluster_runs(m, keys, scs, shared, seeds, out, started, prior)
                continue
            if shared is not None and not made_way:  # one cluster at a time
                log.info(f"the cluster that is up (Kafka {kv_up}) makes way for the clusters of the other "
                         "Kafka versions, transaction versions, broker settings or faults between brokers")
                shared.stop()
                made_way = True
            with _own_cluster(backend, group, out, m.heal_problems, routed(keys, scs)) as cluster:
                cluster_runs(m, keys, scs, cluster, seeds, out, started, prior)
        m.stopped_because = "every run done"
    except KeyboardInterrupt:
        m.stopped_because = "interrupted"
    finally:
        if shared is not None and not made_way:
            m.heal_problems += soak.heal_at_end(shared, own=False)
        elif shared is not None:
            shared.start()  # the cluster that was up, back as it was before the matrix
        m.healed_at_end = None if not used else not m.heal_problems
        m.stopped_because = m.stopped_because or "stopped by an error"
        m.seconds = prior + time.monotonic() - started
        write(m, out)
    return m


def cell_name(cell: Cell) -> str:
    """``scenario / client / Kafka X / tv L``, as logs and the command's summary say a cell."""
    return f"{cell.scenario} / {cell.client} / Kafka {cell.kafka_version} / tv {level_name(cell.level)}"


def cluster_runs(m: Matrix, keys: list[RunKey], scs: dict[tuple[str, str], Scenario], cluster: Cluster,
                 seeds: list[int], out: Path, started: float, prior: float) -> None:
    """The runs ``keys`` on ``cluster``, the record rewritten after each; KeyboardInterrupt when one
    was cut short (it is discarded: not recorded)."""
    d = m.definition
    for k in keys:
        sc = scs[(k.cell.scenario, k.cell.client)].model_copy(update={"broker_config": {}})  # the cluster has them
        parent = (out / RUNS / f"kafka-{k.cell.kafka_version}" / f"tv-{level_name(k.cell.level)}"
                  / k.cell.client.replace("@", "-"))
        parent.mkdir(parents=True, exist_ok=True)
        one = soak.one_run(sc, k.cell.scenario, Backend(d.backend), seeds[k.i], parent, cluster)
        if one.interrupted:
            log.info(f"matrix: {cell_name(k.cell)} seed {seeds[k.i]} was cut short: discarded, redone on resume")
            raise KeyboardInterrupt
        run = MatrixRun(k.cell.scenario, k.cell.client, k.cell.kafka_version, k.cell.level, k.i, seeds[k.i],
                        os.path.relpath(one.run_dir, out), one.valid, one.as_expected, one.anomalies, one.seconds,
                        one.error, replay(one.command, k, seeds[k.i], d, scs), one.faults_failed)
        m.runs[k] = run
        m.seconds = prior + time.monotonic() - started
        write(m, out)
        log.info(f"matrix [{len(m.runs)}/{len(m.wanted)}] {cell_name(k.cell)} seed {run.seed}: "
                 + (f"error: {run.error}" if run.error else run.outcome.upper()))


def replay(recorded: str | None, k: RunKey, seed: int, d: Definition, scs: dict[tuple[str, str], Scenario]) -> str:
    """The ``eos-chaos run`` command that replays run ``k``: the one the run recorded (backend, seed,
    duration, Kafka version), with its client and transaction version."""
    cmd = recorded or runinfo.rerun_command(k.cell.scenario, d.backend, seed,
                                            scs[(k.cell.scenario, k.cell.client)].duration, k.cell.kafka_version)
    cmd += f" --library {k.cell.client}"
    # the run records the level it was formatted at already (a run on a cluster of the release's default does not)
    has_level = "--transaction-version " in cmd
    return cmd + (f" --transaction-version {k.cell.level}" if k.cell.level is not None and not has_level else "")


def _start(backend: Backend, group: Group, out: Path, wire_between_brokers: bool) -> Cluster:
    """A cluster for ``group`` started (its release is in the cache: ``prepare_kafka``)."""
    kv = group.kafka_version
    arts = artifacts.ready(kv) or artifacts.ensure(kv)
    cluster = level_cluster(backend, arts, new_run_dir(f"cluster-kafka-{kv}-tv-{level_name(group.level)}", out / RUNS),
                            group.level, dict(group.broker_config), wire_between_brokers)
    log.info(f"matrix: a Kafka {kv} cluster at transaction version {level_name(group.level)}"
             + (f" with {dict(group.broker_config)}" if group.broker_config else ""))
    cluster.start()
    return cluster


@contextmanager
def _own_cluster(backend: Backend, group: Group, out: Path, heal_problems: list[str],
                 wire_between_brokers: bool) -> Iterator[Cluster]:
    """A cluster for ``group`` alone: up for its runs, healed (what did not heal goes to
    ``heal_problems``) and down after, whatever happens. ``wire_between_brokers``: a run of the group
    has a fault between brokers (a cluster without the routing would make way for each such run)."""
    cluster = _start(backend, group, out, wire_between_brokers)
    try:
        yield cluster
    finally:
        heal_problems += soak.heal_at_end(cluster, own=True)


#: Where runs' folders are, relative to the matrix folder: format 2's, and format 1's (no Kafka version).
RUN_FOLDERS = ("kafka-*/tv-*/*/*", "tv-*/*/*")


def _sweep(m: Matrix, out: Path) -> None:
    """Remove run folders of runs the record does not hold (cut short by Ctrl-C or a kill in an
    earlier session; they are redone). The clusters' folders (``runs/*-cluster-*``) stay."""
    kept = {Path(r.run_dir) for r in m.runs.values()}
    redone = {Path(d) for d in m.redone}
    for d in sorted(x for pattern in RUN_FOLDERS for x in (out / RUNS).glob(pattern)):
        rel = d.relative_to(out)
        if d.is_dir() and rel in redone:
            (out / REDONE / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.move(d, out / REDONE / rel)
        elif d.is_dir() and rel not in kept:
            log.info(f"matrix: removing {rel}, a run an earlier session did not finish")
            shutil.rmtree(d, ignore_errors=True)


def write(m: Matrix, out: Path) -> None:
    """``matrix.json`` and ``matrix.html``, each atomically."""
    from harness.report.matrix_page import render_matrix

    data = m.as_json(out)
    write_json(out / MATRIX_JSON, data)
    write_text(out / MATRIX_HTML, render_matrix(data, out.name))
