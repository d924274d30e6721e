"""``eos-chaos bench txn-throughput``: how much a scenario's faults have to hit (issue 31 §2:
throughput under faults is what finds bugs). Per run: the transactions committed inside the fault
windows, and on each fault's target the transactions open when it began; at one or more
``producers`` per txn-producer process (``Scenario.with_producers``), the settings interleaved run
by run on one cluster with the same seed each round, so that they meet the same fault schedule;
medians per scenario and setting.

The figures are a function of a run folder alone (its history and journal: ``folder_figures``), so
``--from`` reads runs already made and the tests measure hand-built histories; ``bench`` makes the
runs.
"""

from __future__ import annotations

import logging
import statistics
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.base.errors import ConfigError
from harness.history.model import OK, TXN, TXN_PRODUCER
from harness.rundir.journal import Journal
from harness.rundir.run_verdict import RunVerdict
from harness.rundir.runfolder import JOURNAL, VERDICT, RunFolder, new_run_dir

if TYPE_CHECKING:
    from clusters.backends.backends import Backend
    from clusters.backends.protocol import Cluster
    from harness.history import store
    from harness.history.hits import Span

log = logging.getLogger(__name__)

#: ``--scenarios`` by default: the KAFKA-17754 hunt aimed at one EndTxn per fault, and a soak-like
#: run of producers, copiers and a seeded mix of leader kills, copier kills and dropped responses.
DEFAULT_SCENARIOS = ("kip890-late-commit-tight", "mixed")
#: ``--producers`` by default: as the library scenarios run, and the setting proposed for them.
PER_PROCESS = (1, 16)
NS = 1_000_000_000


def fault_windows(spans: Sequence[Span], history_end: int) -> list[tuple[int, int]]:
    """The union of the faults' windows (ns, sorted, disjoint); one that never ended lasts to
    ``history_end``."""
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted((s.start, max(s.start, s.end if s.end is not None else history_end)) for s in spans):
        if merged and lo <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    return merged


def run_figures(t: store.Tables, spans: Sequence[Span]) -> dict[str, Any]:
    """One run's figures from its tables and its faults' windows: ``committed`` transactions (``txn``
    ops that are ``ok``: a producer's, a copier's, an app feeder's), ``committed_in_faults`` (their
    commit acknowledged inside a fault window) over ``fault_s`` seconds of windows, and per fault the
    transactions of its target open when it began (harness/history/hits.py ``txns_open_at_start``)
    with their mean per fault."""
    import numpy as np  # numpy and pandas only when measuring: the CLI imports this module for its defaults

    from harness.history.hits import fault_hits

    tx = t.txns
    ok = ((tx["f"] == TXN) & (tx["outcome"] == OK)).to_numpy(bool)
    done = np.sort(tx["complete_time"].to_numpy(dtype="float64", na_value=np.nan)[ok])
    history_end = int(t.ops["time"].max()) if len(t.ops) else 0
    windows = fault_windows(spans, history_end)
    in_faults = int(sum(np.searchsorted(done, hi, side="right") - np.searchsorted(done, lo, side="left")
                        for lo, hi in windows))
    fault_s = sum(hi - lo for lo, hi in windows) / NS
    hits = fault_hits(t, spans, None)
    at_start = [h.txns_open_at_start for h in hits]
    return {"faults": len(spans), "fault_s": round(fault_s, 3), "committed": int(ok.sum()),
            "committed_in_faults": in_faults,
            "committed_in_faults_per_s": round(in_faults / fault_s, 2) if fault_s else None,
            "open_at_fault_start": at_start,
            # the mean, not the median: most faults of a quiet scenario may begin on nothing, and a
            # median of 0 would hide how much the others began on
            "open_at_fault_start_mean": round(statistics.fmean(at_start), 2) if at_start else None,
            "faults_hit_nothing": sum(1 for h in hits if not h.hit)}


def producers_of(resolved: Mapping[str, Any]) -> int:
    """The producers per txn-producer process a run ran (the most of its txn-producer entries; 1
    without any), from the scenario as run (``Journal.resolved``)."""
    return max((int((w.get("settings") or {}).get("producers", 1)) for w in resolved.get("workloads") or []
                if w.get("kind") == TXN_PRODUCER), default=1)


def folder_figures(run_dir: Path) -> dict[str, Any]:
    """A finished run's figures (``run_figures``), with what it was: scenario, producers, seed,
    verdict. The faults that hit nothing are the journal's count where it recorded them (it knows
    the wire proxy's log). ``ConfigError`` for a folder that is not a finished run."""
    from harness.history import store
    from harness.history.hits import Span

    folder = RunFolder(run_dir)
    journal = Journal.load(folder)
    verdict = RunVerdict.load(folder)
    if journal is None or verdict is None:
        raise ConfigError(f"{run_dir}: not a finished run (no {folder.journal.name} or {folder.verdict.name})")
    spans = [Span.of_seconds(f.start_s, f.end_s, f.detail) for f in journal.faults]
    figures = run_figures(store.load(run_dir), spans)
    recorded = journal.faults_hit()
    if recorded is not None and recorded["faults"] == len(journal.faults):
        figures["faults_hit_nothing"] = recorded["hit_nothing"]
    return {"scenario": journal.scenario, "producers": producers_of(journal.resolved), "seed": journal.seed,
            "run_dir": str(run_dir), "valid": verdict.valid, **figures}


def run_folders(root: Path) -> list[Path]:
    """Every finished run folder at or below ``root`` (a journal and a verdict), by path.
    ``ConfigError`` when there is none."""
    found = sorted({p.parent for p in root.rglob(VERDICT) if (p.parent / JOURNAL).is_file()})
    if not found:
        raise ConfigError(f"--from {root}: no finished run folder (journal.json and verdict.json) in it or below it")
    return found


def _median(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def summary(samples: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Per scenario and producers setting: the runs' figures and their medians; per scenario, each
    setting's medians over those of its fewest producers (``ratio``)."""
    cases: dict[str, dict[int, list[Mapping[str, Any]]]] = {}
    for s in samples:
        cases.setdefault(str(s["scenario"]), {}).setdefault(int(s["producers"]), []).append(s)
    out: dict[str, Any] = {}
    for name, by_n in cases.items():
        rows: dict[str, dict[str, Any]] = {}
        for n, runs in sorted(by_n.items()):
            rows[str(n)] = {
                "runs": len(runs),
                "committed_in_faults": _median(r["committed_in_faults"] for r in runs),
                "committed_in_faults_per_s": _median(r["committed_in_faults_per_s"] for r in runs),
                "open_at_fault_start": _median(r["open_at_fault_start_mean"] for r in runs),
                "committed": _median(r["committed"] for r in runs),
                "each": {k: [r[k] for r in runs] for k in ("committed_in_faults", "open_at_fault_start_mean", "valid")},
            }
        base = rows[min(rows, key=int)]
        for row in rows.values():
            row["ratio"] = {k: (round(row[k] / base[k], 2) if row[k] is not None and base[k] else None)
                            for k in ("committed_in_faults", "open_at_fault_start")}
        out[name] = rows
    return out


def bench(cluster: Cluster, backend: Backend, run_dir: Path, scenarios: Sequence[str], producers: Sequence[int],
          runs: int, seed: int, duration: float | None) -> list[dict[str, Any]]:
    """``runs`` rounds on ``cluster``: in each, every scenario at every producers setting, with the
    round's seed (``seed`` + round); each run's figures."""
    from harness.run import runner, scenario

    samples = []
    for i in range(runs):
        for name in scenarios:
            for n in producers:
                sc = scenario.load(name).with_producers(n)
                if duration is not None:
                    sc = sc.with_duration(duration)
                res = runner.run_on_shared(sc, backend, seed + i, new_run_dir(f"{sc.name}-p{n}", run_dir), cluster,
                                           source=name)
                samples.append(folder_figures(res.run_dir))
                log.info(f"round {i + 1}/{runs}, {name}, producers {n}: {samples[-1]['committed_in_faults']} committed "
                         f"in {samples[-1]['fault_s']:.0f} s of faults, {samples[-1]['open_at_fault_start']} open at each "
                         f"fault's start ({samples[-1]['valid']})")
    return samples
