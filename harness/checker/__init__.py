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
from harness.checker.checks import CHECKS as _CORE
from harness.checker.checks import Found, HistoryError, cols, poll_times
from harness.checker.contracts import app_aggregate, app_map
from harness.checker.cycle_checks import g0, g1c
from harness.checker.figures import NEVER, reader_figures
from harness.checker.sparkjob_check import spark_exactly_once, spark_stats
from harness.checker.verdict import CheckResult, Verdict, validity
from harness.history.model import FAIL, FAULT_START, HISTORY_ERROR, INFO, OK, READ_COMMITTED
from harness.history.store import Tables, spark_events

#: the run folder's file of the verdict (written by the run, never by the checker)
VERDICT_FILE = "verdict.json"
#: Every check, in the order docs/reference/checks.md lists them (which reports and verdict.json keep).
CHECKS: dict[str, Callable[[Tables], Found]] = {
    **{k: v for k, v in _CORE.items() if k != "lso-stall"},
    "g0": g0,
    "g1c": g1c,
    "spark-exactly-once": spark_exactly_once,
    "app-map": app_map,
    "app-aggregate": app_aggregate,
    "lso-stall": _CORE["lso-stall"],
}

#: What each check finding something means, for reports and failure messages.
MEANING: dict[str, str] = {
    "duplicate": "a value visible more than once to read_committed readers",
    "lost-write": "a committed value missing from the final read_committed scan: its transaction was acknowledged "
                  "committed (ok), or a read_committed reader saw it (which proves the commit, whatever the producer was told)",
    "aborted-read": "a read_committed reader saw a value of a transaction that definitely aborted (fail); Jepsen's G1a",
    "precommitted-read": "a read_committed poll completed before the commit of the value's transaction was even "
                         "invoked (Jepsen's precommitted-read)",
    "phantom-read": "a read_committed reader saw a value no process of the run ever wrote (a phantom or garbage read)",
    "torn-transaction": "some but not all values of one transaction visible to read_committed",
    "inconsistent-offsets": "one partition offset observed holding different values",
    "wrong-offset": "a value in the final read_committed scan, but not at the offset its delivery report gave, "
                    "where no read saw anything",
    "nonmonotonic-send": "a producer's later transaction landed at lower offsets in a partition than its earlier one",
    "int-nonmonotonic-send": "within one committed transaction, a send to a partition landed at a lower offset than "
                             "the send before it to that partition (Jepsen's int-nonmonotonic-send)",
    "nonmonotonic-poll": "a reader (assign mode) went backwards in a partition",
    "poll-skip": "a reader (assign mode) skipped committed records in a partition",
    "zombie-commit": "a transaction of an older producer epoch committed or became visible after a newer instance "
                     "with the same transactional.id finished init_transactions",
    "copy-exactly-once": "consume-transform-produce: a committed input record has zero or several committed outputs, "
                         "the committed group offsets disagree with the outputs, an output copies no committed input, "
                         "or a copy is malformed (names no input)",
    "g0": "a write-order cycle (Jepsen's G0-process / G0-realtime): a transaction that completed ok before another "
          "was invoked has a record after one of the other's in a partition (docs/CYCLES.md)",
    "g1c": "a read-write cycle (Jepsen's G1c, -process, -realtime): a poll or a copier read a value whose transaction "
           "could not have committed before the read: a transaction invoked after the read, or the reader itself, has a "
           "record before one of the writer's, or the writer began after it (docs/CYCLES.md)",
    "spark-exactly-once": "the Spark job's committed output is not exactly its committed input",
    "app-map": "an app's committed output is not what its map contract makes of its committed input: an output "
               "missing or too many, one of an aborted input, one no input explains, or one key's outputs out of "
               "their inputs' order",
    "app-aggregate": "an app's committed running aggregate of a key is not the exact aggregate of its committed "
                     "input: the last update differs, an update overshoots it or goes back, or is not an integer",
    "lso-stall": "after heal, a partition's last stable offset did not reach its high watermark in time "
                 "(a hanging transaction)",
}
assert set(MEANING) == set(CHECKS), "every check has a meaning"


#: Checks that judge what Kafka kept by the final read_committed scan. A history without it (its
#: runner died before the final reads, or the scan's line was cut off) leaves them nothing to
#: judge: they are skipped, and the verdict is "unknown" unless another check found something.
NEEDS_FINAL_READS = ("lost-write", "torn-transaction", "wrong-offset", "poll-skip", "copy-exactly-once", "g0", "g1c",
                     "spark-exactly-once", "app-map", "app-aggregate")
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
            results[name] = CheckResult(int(found.count), found.examples, found.skipped or None)
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
    outcome = tx["outcome"].value_counts()
    m = c.w_tix >= 0
    total = np.bincount(c.w_tix[m], minlength=len(tx))
    visible = np.bincount(c.w_tix[m], weights=c.in_fc[c.w_vid[m]], minlength=len(tx))
    info = (tx["outcome"] == INFO).to_numpy() & (total > 0)
    iv = {"committed": int((info & (visible == total)).sum()), "aborted": int((info & (visible == 0)).sum()),
          "torn": int((info & (visible > 0) & (visible < total)).sum())}
    committed_values = int(c.in_fc.sum())
    ok_tx = tx[tx["outcome"] == OK]
    lat_ms = ((ok_tx["complete_time"] - ok_tx["commit_at"].fillna(ok_tx["invoke_time"])).dropna().astype("int64") / 1e6)
    duration_s = max(t.meta.get("duration_ns", 0) / 1e9, 1e-9)
    spark = spark_stats(spark_events(t))
    under_faults = progress.of_tables(t)
    return {
        **({"spark": spark} if spark is not None else {}),
        **({PROGRESS_UNDER_FAULTS: under_faults} if under_faults is not None else {}),
        "txn": {k: int(outcome.get(k, 0)) for k in (OK, FAIL, INFO)},
        "info_resolved": iv,
        "committed_values": committed_values,
        "written_values": int(len(t.writes)),
        "fenced": len(t.meta.get("fenced", [])),
        "retired": len(t.meta.get("retired", [])),
        "recreated": len(t.meta.get("recreated", [])),
        "errors_seen": dict(t.meta.get("errors_seen") or {}),
        "faults": int((t.faults["phase"] == FAULT_START).sum()),
        "throughput": {"ok_txn_per_s": round(len(ok_tx) / duration_s, 2),
                       "committed_values_per_s": round(committed_values / duration_s, 2)},
        "commit_latency_ms": _percentiles(lat_ms),
        "reads": {"polled": int(c.poll.sum()), "final_committed": int(c.fc.sum()),
                  "final_uncommitted": int((~c.poll & ~c.fc).sum())},
        **reader_figures(c, tx["complete_time"].to_numpy(dtype="int64", na_value=NEVER), partial(poll_times, t), t.reads),
    }


def _percentiles(ms: pd.Series) -> dict[str, float | None]:
    if ms.empty:
        return {"p50": None, "p95": None, "p99": None, "max": None}
    q = np.percentile(ms.to_numpy(), [50, 95, 99])
    return {"p50": round(float(q[0]), 2), "p95": round(float(q[1]), 2), "p99": round(float(q[2]), 2),
            "max": round(float(ms.max()), 2)}
