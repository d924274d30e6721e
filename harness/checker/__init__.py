"""The verifier: history tables in, a ``Verdict`` (harness/checker/verdict.py) out. Pure — it never
talks to Kafka, and it imports nothing of the project but the history package.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from harness.checker import progress
from harness.checker.arrays import OUTCOME_CODES
from harness.checker.catalog import CATALOG
from harness.checker.checks import Found, HistoryError, cols, poll_times
from harness.checker.figures import NEVER, reader_figures
from harness.checker.sparkjob_check import spark_stats
from harness.checker.verdict import CheckResult, Verdict, validity
from harness.history.model import FAIL, FAULT_START, HISTORY_ERROR, INFO, OK, READ_COMMITTED
from harness.history.store import Tables, spark_events

#: the run folder's file of the verdict (written by the run, never by the checker)
VERDICT_FILE = "verdict.json"
#: Every check by name, in the order docs/reference/checks.md lists them (which reports and
#: verdict.json keep): the default engine's implementations. This and the two tables below are
#: derived from the one record of each check (harness/checker/catalog.py).
CHECKS: dict[str, Callable[[Tables], Found]] = {c.name: c.default for c in CATALOG}
#: What each check finding something means, for reports and failure messages.
MEANING: dict[str, str] = {c.name: c.meaning for c in CATALOG}
#: Checks that judge what Kafka kept by the final read_committed scan. A history without it (its
#: runner died before the final reads, or the scan's line was cut off) leaves them nothing to
#: judge: they are skipped, and the verdict is "unknown" unless another check found something.
NEEDS_FINAL_READS = tuple(c.name for c in CATALOG if c.needs_final_reads)
NO_FINAL_READS = ("no final reads: the history has no final read_committed scan (its run died before the final "
                  "reads, or the line of its scan was cut off)")
NOTHING_COMMITTED = "nothing committed: no transaction was acknowledged or seen committed, so no guarantee was exercised"
NOTHING_READ = "nothing read: no poll and no final scan returned a record, so nothing could be seen to go wrong"
#: ``stats``' figure of the workloads' progress while the faults ran (absent: the run had no faults)
PROGRESS_UNDER_FAULTS = "progress_under_faults"


def final_reads_missing(meta: dict[str, Any]) -> bool:
    """The history has no final read_committed scan. A history whose meta predates ``final_scans``
    (Parquet written before it was recorded) is taken to have it, as every finished run did."""
    scans = meta.get("final_scans")
    return scans is not None and READ_COMMITTED not in scans


def unknown_because(meta: dict[str, Any], stats: dict[str, Any]) -> list[str]:
    """Why the history cannot be judged as a whole, from its meta and its figures (both engines
    compute the same ``stats``): missing final reads, nothing committed, nothing read, a workload
    whose guarantee is judged idle while the faults ran or a fault that hit one that was stuck
    (harness/checker/progress.py)."""
    reasons = [NO_FINAL_READS] if final_reads_missing(meta) else []
    if not stats["txn"][OK] and not stats["committed_values"]:
        reasons.append(NOTHING_COMMITTED)
    if not sum(stats["reads"].values()):
        reasons.append(NOTHING_READ)
    return reasons + progress.reasons(stats.get(PROGRESS_UNDER_FAULTS))


def check(t: Tables) -> Verdict:
    """The verdict of ``t``, by the default engine (numpy/pandas, in memory)."""
    cols(t)  # the numpy view, built once for every check
    return run_checks({name: partial(fn, t) for name, fn in CHECKS.items()}, partial(stats, t), t.meta,
                      default_ops=len(t.ops), engine="default")


def run_checks(checks: dict[str, Callable[[], Found]], figures: Callable[[], dict[str, Any]], meta: dict[str, Any],
               engine: str, default_ops: int | None = None) -> Verdict:
    """Run ``checks`` (name -> a call giving its ``Found``) into a verdict: any engine's checks."""
    results: dict[str, CheckResult] = {}
    no_final_reads = final_reads_missing(meta)
    for name, run in checks.items():
        if no_final_reads and name in NEEDS_FINAL_READS:
            results[name] = CheckResult(0, [], NO_FINAL_READS)
            continue
        try:
            found = run()
            results[name] = CheckResult(int(found.count), found.examples, found.skipped or None, by_app=found.by_app)
        except HistoryError as exc:  # the history's fault, said as such: no traceback, no "crashed"
            results[name] = CheckResult(None, [], error=f"{HISTORY_ERROR}: {exc}")
        except Exception as exc:  # noqa: BLE001 - a crashing check must not pass for a clean one
            results[name] = CheckResult(None, [], error=f"{type(exc).__name__}: {exc}",
                                        traceback=traceback.format_exc(limit=5))
    history = {"ops": meta.get("ops", default_ops), "truncated": meta.get("truncated", [])}
    if history["truncated"]:
        history["note"] = "checked up to the last whole line of the files listed in `truncated`"
    stats = figures()
    reasons = unknown_because(meta, stats)
    return Verdict(validity(results, reasons), results, stats, history, engine, unknown_because=reasons)


def stats(t: Tables) -> dict[str, Any]:
    """Informational figures, never failing: outcomes, info resolution, throughput, latencies."""
    tx = t.txns
    c = cols(t)
    outcome = np.bincount(c.t_out[c.t_out >= 0], minlength=len(OUTCOME_CODES))  # numpy: pandas took ms a history
    m = c.w_tix >= 0
    total = np.bincount(c.w_tix[m], minlength=len(tx))
    visible = np.bincount(c.w_tix[m], weights=c.in_fc[c.w_vid[m]], minlength=len(tx))
    info = (c.t_out == OUTCOME_CODES[INFO]) & (total > 0)
    iv = {"committed": int((info & (visible == total)).sum()), "aborted": int((info & (visible == 0)).sum()),
          "torn": int((info & (visible > 0) & (visible < total)).sum())}
    committed_values = int(c.in_fc.sum())
    ok_tx = c.t_out == OUTCOME_CODES[OK]
    lat_ms = _commit_latencies_ms(tx, ok_tx)
    duration_s = max(t.meta.get("duration_ns", 0) / 1e9, 1e-9)
    spark = spark_stats(spark_events(t))
    under_faults = progress.of_tables(t)
    return {
        **({"spark": spark} if spark is not None else {}),
        **({PROGRESS_UNDER_FAULTS: under_faults} if under_faults is not None else {}),
        "txn": {k: int(outcome[OUTCOME_CODES[k]]) for k in (OK, FAIL, INFO)},
        "info_resolved": iv,
        "committed_values": committed_values,
        "written_values": int(len(t.writes)),
        "fenced": len(t.meta.get("fenced", [])),
        "retired": len(t.meta.get("retired", [])),
        "recreated": len(t.meta.get("recreated", [])),
        "errors_seen": dict(t.meta.get("errors_seen") or {}),
        "faults": int((t.faults["phase"] == FAULT_START).sum()) if len(t.faults) else 0,
        "throughput": {"ok_txn_per_s": round(int(ok_tx.sum()) / duration_s, 2),
                       "committed_values_per_s": round(committed_values / duration_s, 2)},
        "commit_latency_ms": _percentiles(lat_ms),
        "reads": {"polled": int(c.poll.sum()), "final_committed": int(c.fc.sum()),
                  "final_uncommitted": int((~c.poll & ~c.fc).sum())},
        **reader_figures(c, tx["complete_time"].to_numpy(dtype="int64", na_value=NEVER), partial(poll_times, t), t.reads),
    }


def _commit_latencies_ms(tx: pd.DataFrame, ok: np.ndarray) -> np.ndarray:
    """Per transaction of ``ok`` (a mask over ``tx``) that completed: from its commit's invoke (its
    own invoke without one) to its completion, in ms."""
    done = tx["complete_time"].notna().to_numpy(bool) & ok
    complete = tx["complete_time"].to_numpy(dtype="int64", na_value=0)
    commit_at = tx["commit_at"].to_numpy(dtype="int64", na_value=0)
    start = np.where(tx["commit_at"].notna().to_numpy(bool), commit_at, tx["invoke_time"].to_numpy(np.int64))
    latencies: np.ndarray = (complete[done] - start[done]) / 1e6
    return latencies


def _percentiles(ms: np.ndarray) -> dict[str, float | None]:
    if not len(ms):
        return {"p50": None, "p95": None, "p99": None, "max": None}
    q = np.percentile(ms, [50, 95, 99])
    return {"p50": round(float(q[0]), 2), "p95": round(float(q[1]), 2), "p99": round(float(q[2]), 2),
            "max": round(float(ms.max()), 2)}
