"""``eos-chaos matrix merge DIR...``: the folders of ``matrix --shard i/N`` (or ``hunt --shard``)
joined into one matrix folder, as if one machine had run them all (docs/howto/matrix-in-ci.md).

Shards join only when they are shards of one table: the same definition (a hunt's drawn scenario
files may sit in different folders, they are compared by name and content), the same eos-chaos
(``runinfo.harness_id``), each shard once. A shard not given is not a shard that found nothing:
its runs are ``not run`` in the merged record (``Matrix.not_run``), its cells ``not-run``, never
valid, and the merge's exit code is 3 unless a finding makes it 1. The merged folder is an
unsharded matrix folder: ``eos-chaos matrix`` on it with the same flags (no ``--shard``) runs
what the missing shards would have."""

from __future__ import annotations

import filecmp
import json
import logging
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.base.errors import ConfigError
from harness.campaigns import hunt
from harness.campaigns.matrix import MATRIX_JSON, RUNS, Definition, Matrix, RunKey, fmt, load, write
from harness.rundir.runfolder import write_output
from harness.rundir.runinfo import harness_name

log = logging.getLogger(__name__)

#: The definition's fields, as the refusal names them (the matrix's flags).
FIELDS = {"scenarios": "--scenarios", "clients": "--clients", "kafka_versions": "--kafka-versions",
          "levels": "--transaction-versions", "seeds": "--seeds", "master_seed": "--seed", "backend": "--backend",
          "duration": "--duration", "fingerprints": "scenario content", "expect_valid": "scenario expect"}


def scenario_name(s: str) -> str:
    """How a scenario is known across machines: a YAML file by its file name (a hunt's drawn files
    sit in each shard's own folder), a library scenario by its name."""
    return Path(s).name if s.endswith((".yaml", ".yml")) else s


def identity(d: Definition) -> dict[str, Any]:
    """What makes two shards shards of one table: the definition with scenarios by ``scenario_name``."""
    j = d.as_json()
    j["scenarios"] = [scenario_name(s) for s in d.scenarios]
    for by_scenario in ("fingerprints", "expect_valid"):
        j[by_scenario] = {scenario_name(s): v for s, v in j[by_scenario].items()}
    return j


def definition_differences(a: Definition, b: Definition) -> list[str]:
    """Each field in which ``a`` and ``b`` differ, with both values (empty: one table)."""
    ia, ib = identity(a), identity(b)
    return [f"{what} {_shown(ia[f])} vs {_shown(ib[f])}" for f, what in FIELDS.items() if ia[f] != ib[f]]


def _shown(v: Any) -> str:
    if isinstance(v, list):
        return ",".join("default" if x is None else str(x) for x in v)
    if isinstance(v, dict):
        return ", ".join(f"{k}={fmt(x)}" for k, x in v.items())
    return fmt(v)


def load_shard(folder: Path) -> Matrix:
    """The shard recorded in ``folder``; ConfigError when it is not a shard's folder."""
    if not folder.is_dir():
        raise ConfigError(f"matrix merge: {folder} is not a folder; give the folders of eos-chaos matrix --shard i/N")
    m = load(folder)
    if m is None:
        raise ConfigError(f"matrix merge: {folder} holds no {MATRIX_JSON}; give the folders of eos-chaos matrix --shard i/N")
    if m.shard is None or m.shares is None:
        what = "a merged matrix" if m.merged is not None else "a whole matrix, made without --shard"
        raise ConfigError(f"matrix merge: {folder} is {what}, not a shard; give the folders of eos-chaos matrix --shard i/N")
    return m


def _renamed(m: Matrix, names: dict[str, str]) -> Matrix:
    """``m`` with its scenario strings as ``names`` maps them (each shard's to the first shard's)."""
    def key(k: RunKey) -> RunKey:
        return RunKey(k.cell._replace(scenario=names[k.cell.scenario]), k.i)

    d = m.definition
    m.definition = replace(d, scenarios=[names[s] for s in d.scenarios],
                           fingerprints={names[s]: v for s, v in d.fingerprints.items()},
                           expect_valid={names[s]: v for s, v in d.expect_valid.items()})
    m.runs = {key(k): replace(r, scenario=names[r.scenario]) for k, r in m.runs.items()}
    m.shares = None if m.shares is None else [[key(k) for k in keys] for keys in m.shares]
    return m


def check_shards(shards: list[tuple[Path, Matrix]]) -> None:
    """ConfigError naming the folders unless ``shards`` are distinct shards of one table, made by
    one eos-chaos, each holding runs of its own share only."""
    (f0, m0), seen = shards[0], dict[int, Path]()
    assert m0.shard is not None
    for f, m in shards:
        assert m.shard is not None
        if m.shard.count != m0.shard.count:
            raise ConfigError(f"matrix merge: {f} is shard {m.shard}, {f0} is shard {m0.shard}: "
                              "shards of one table are cut into the same number of shards")
        if m.shard.index in seen:
            raise ConfigError(f"matrix merge: shard {m.shard} is given twice, {seen[m.shard.index]} and {f}; "
                              "give each shard once (the same runs would be counted twice)")
        seen[m.shard.index] = f
        if (m.harness.get("eos_chaos"), m.harness.get("source")) != (m0.harness.get("eos_chaos"), m0.harness.get("source")):
            raise ConfigError(f"matrix merge: shard {m.shard} ({f}) was made by eos-chaos {harness_name(m.harness)}, "
                              f"shard {m0.shard} ({f0}) by {harness_name(m0.harness)}; merge shards of one eos-chaos "
                              "(run the odd ones again with the same checkout)")
        differences = definition_differences(m0.definition, m.definition)
        if differences:
            raise ConfigError(f"matrix merge: shard {m.shard} ({f}) and shard {m0.shard} ({f0}) are shards of different "
                              f"matrices: {'; '.join(differences)} (shard {m0.shard}'s first); merge shards of one command")
        _renamed(m, {s: t for s, t in zip(m.definition.scenarios, m0.definition.scenarios, strict=True)})
        if m.shares != m0.shares:
            raise ConfigError(f"matrix merge: shard {m.shard} ({f}) and shard {m0.shard} ({f0}) cut the table into "
                              "different shares; merge shards of one command and one eos-chaos")
        assert m.shares is not None
        stray = [k for k in m.runs if k not in m.shares[m.shard.index - 1]]
        if stray:
            raise ConfigError(f"matrix merge: {f} (shard {m.shard}) holds {len(stray)} runs of other shards; "
                              "give the folders as eos-chaos matrix --shard wrote them")


def _files(folder: Path) -> set[Path]:
    return {p.relative_to(folder) for p in folder.rglob("*") if not p.is_dir()} if folder.is_dir() else set()


def copy_runs(shards: list[tuple[Path, Matrix]], out: Path) -> None:
    """Each shard's ``runs/`` tree into ``out/runs/``, relative paths kept (the records' run folders
    and the reports' links stay right); ConfigError for a path two shards both hold."""
    owner: dict[Path, Path] = {}
    for f, _ in shards:
        for p in _files(f / RUNS):
            if p in owner:
                raise ConfigError(f"matrix merge: {RUNS}/{p} is in {owner[p]} and in {f}; shards' run folders have "
                                  "names of their own, so one folder was given twice or copied into another")
            owner[p] = f
    for f, _ in shards:
        if (f / RUNS).is_dir():
            shutil.copytree(f / RUNS, out / RUNS, symlinks=True, dirs_exist_ok=True)


def merged(shards: list[tuple[Path, Matrix]], out: Path) -> Matrix:
    """The matrix of ``shards`` (checked by ``check_shards``) as recorded in ``out``: every run,
    the shards it came from and the missing ones."""
    m0 = shards[0][1]
    assert m0.shard is not None and m0.shares is not None
    given = {m.shard.index: (f, m) for f, m in shards if m.shard is not None}
    missing = [i for i in range(1, m0.shard.count + 1) if i not in given]
    m = Matrix(m0.definition, started=min(m.started for _, m in shards), harness=m0.harness, shares=m0.shares)
    m.merged = {"count": m0.shard.count, "missing": missing,
                "shards": [{"index": i, "folder": str(f), "sessions": s.sessions, "seconds": round(s.seconds, 1),
                            "runs": len(s.runs), "stopped_because": s.stopped_because, "healed_at_end": s.healed_at_end}
                           for i, (f, s) in sorted(given.items())]}
    for _, s in shards:
        m.runs.update(s.runs)
        m.heal_problems += [f"shard {s.shard}: {p}" for p in s.heal_problems]
    m.sessions = sum(s.sessions for _, s in shards)
    m.seconds = max(s.seconds for _, s in shards)  # the shards ran side by side: the longest is the wall time
    healed = [s.healed_at_end for _, s in shards if s.healed_at_end is not None]
    m.healed_at_end = None if not healed else all(healed)
    m.stopped_because = (f"merged shards {', '.join(map(str, sorted(given)))} of {m0.shard.count}"
                         + (f"; missing: {', '.join(map(str, missing))} (their runs not run)" if missing else ""))
    return m


def merge(folders: list[Path], out: Path) -> Matrix:
    """``folders`` (shards of one table) merged into ``out`` (new or empty): matrix.json,
    matrix.html, the runs' folders, and for hunts their drawn scenarios, hunt.json and HUNT.md.
    ConfigError (nothing written) for shards that do not make one table."""
    if not folders:
        raise ConfigError("matrix merge: give the shards' folders (DIR...)")
    inside = [f for f in folders if f.resolve() == out.resolve() or out.resolve().is_relative_to(f.resolve())]
    if inside:
        raise ConfigError(f"matrix merge: --out {out} is (inside) the shard folder {inside[0]}; give a folder of its own")
    shards = [(f, load_shard(f)) for f in folders]
    check_shards(shards)
    hunts = [f for f, _ in shards if (f / hunt.SCENARIOS).is_dir()]
    if hunts:
        _check_hunts([f for f, _ in shards], hunts)
    m = merged(shards, out)
    out.mkdir(parents=True, exist_ok=True)
    copy_runs(shards, out)
    if hunts:
        m = _moved_scenarios(m, shards[0][0], out)
    write(m, out)
    if hunts:
        summary = hunt.summary(m, out)
        write_output(out / hunt.HUNT_JSON, json.dumps(summary, indent=1) + "\n")
        write_output(out / hunt.HUNT_MD, hunt.page(summary, out.name))
    log.info(f"matrix merge: {len(shards)} shards, {len(m.runs)} runs, into {out}")
    return m


def _check_hunts(folders: list[Path], hunts: list[Path]) -> None:
    """Hunt shards drew the same scenarios (one master seed, one eos-chaos): their files must be the same."""
    if len(hunts) != len(folders):
        raise ConfigError(f"matrix merge: {hunts[0]} is a hunt's shard, {next(f for f in folders if f not in hunts)} "
                          "a matrix's; merge shards of one command")
    first = hunts[0] / hunt.SCENARIOS
    names = sorted(p.name for p in first.iterdir())
    for f in hunts[1:]:
        other = f / hunt.SCENARIOS
        match, mismatch, errors = filecmp.cmpfiles(first, other, names, shallow=False)
        extra = sorted({p.name for p in other.iterdir()} - set(names))
        if mismatch or errors or extra:
            raise ConfigError(f"matrix merge: the drawn scenarios of {f} and {hunts[0]} differ "
                              f"({', '.join(mismatch + errors + extra)}); merge shards of one hunt")


def _moved_scenarios(m: Matrix, first: Path, out: Path) -> Matrix:
    """A hunt's record with its drawn scenarios copied into ``out`` and named there."""
    shutil.copytree(first / hunt.SCENARIOS, out / hunt.SCENARIOS, dirs_exist_ok=True)
    return _renamed(m, {s: str(out / hunt.SCENARIOS / Path(s).name) for s in m.definition.scenarios})
