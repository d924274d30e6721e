"""``eos-chaos bench checker``: a valid synthetic history of N values, built column-wise straight
into the history's tables and saved as Parquet (as a run leaves it), then timed: loading it
(``read_s``) and checking it (``check_s``).

Shape: 4 producers, transactions of 6 values (one per partition of a 6-partition topic), 10% aborted,
each transaction end taking an offset for its control marker; one reader polling every committed
record in batches of 500; the final read_committed and read_uncommitted scans.
"""

from __future__ import annotations

import resource
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.checker import check
from harness.history import store
from harness.history.model import FAIL, OK, POLL, READ_COMMITTED, READ_UNCOMMITTED, SCAN

PARTITIONS = 6
PRODUCERS = 4
ABORT_EVERY = 10  # every 10th transaction aborted
POLL_BATCH = 500


def synthetic(n_values: int) -> store.Tables:
    n_txn = max(1, n_values // PARTITIONS)
    n = n_txn * PARTITIONS
    i = np.arange(n, dtype=np.int64)
    txn = i // PARTITIONS
    part = i % PARTITIONS
    offset = 2 * txn  # one record of each transaction per partition, then its marker
    aborted_txn = (np.arange(n_txn) % ABORT_EVERY) == ABORT_EVERY - 1
    committed = ~aborted_txn[txn]
    values = pd.Series(np.char.add("v", i.astype(str)), dtype="str")
    proc_of_txn = pd.Series(np.char.add("p", (np.arange(n_txn) % PRODUCERS).astype(str)), dtype="str")
    t_inv = np.arange(n_txn, dtype=np.int64) * 1000
    txns = pd.DataFrame({
        "txn": np.arange(n_txn, dtype=np.int64), "process": proc_of_txn, "f": "txn",
        "outcome": np.where(aborted_txn, FAIL, OK), "invoke_time": t_inv,
        "complete_time": pd.array(t_inv + 900, dtype="Int64"), "commit_at": pd.array(t_inv + 500, dtype="Int64"),
        "txn_id": np.char.add("tx-", (np.arange(n_txn) % PRODUCERS).astype(str)), "error": None})
    writes = pd.DataFrame({"txn": txn, "value": values, "topic": "t", "partition": part,
                           "offset": pd.array(np.where(committed, offset, -1), dtype="Int64")})
    writes.loc[~committed, "offset"] = pd.NA

    def view(mask: np.ndarray, source: str, iso: str, process: str, op: np.ndarray) -> pd.DataFrame:
        # records of each partition in offset order
        order = np.lexsort((offset[mask], part[mask]))
        return pd.DataFrame({"op": op[order], "process": process, "source": source, "isolation": iso, "topic": "t",
                             "partition": part[mask][order], "offset": offset[mask][order],
                             "value": values[mask].to_numpy()[order]})

    c_count = int(committed.sum())
    poll_ops = np.arange(c_count, dtype=np.int64) // POLL_BATCH + n_txn
    reads = pd.concat([
        view(committed, POLL, READ_COMMITTED, "r0", poll_ops),
        view(committed, SCAN, READ_COMMITTED, "final", np.full(c_count, 10**12, dtype=np.int64)),
        view(np.ones(n, dtype=bool), SCAN, READ_UNCOMMITTED, "final", np.full(n, 10**12 + 1, dtype=np.int64)),
    ], ignore_index=True)
    inits = pd.DataFrame({"op": np.arange(PRODUCERS, dtype=np.int64), "process": [f"p{k}" for k in range(PRODUCERS)],
                          "txn_id": [f"tx-{k}" for k in range(PRODUCERS)], "outcome": OK,
                          "invoke_time": np.zeros(PRODUCERS, dtype=np.int64), "complete_time": pd.array([1] * PRODUCERS, dtype="Int64")})
    ops = pd.DataFrame({"index": pd.array([], dtype="int64"), "time": pd.array([], dtype="int64"), "process": [],
                        "type": [], "f": [], "error": []})
    groups = pd.DataFrame({"topic": pd.Series([], dtype="str"), "partition": pd.array([], dtype="int64"),
                           "offset": pd.array([], dtype="int64")})
    return store.Tables(ops, txns, writes, reads, inits, groups,
                        meta={"ops": int(n_txn * 2 + poll_ops.max(initial=0) + 2), "truncated": [], "fenced": [],
                              "duration_ns": int(t_inv[-1] + 1000)})


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def generate(n_values: int, run_dir: Path) -> None:
    store.save(synthetic(n_values), run_dir)


def measure(run_dir: Path, engine: str = "default") -> dict[str, Any]:
    """Load and check a saved history; run in a fresh process, so peak RSS is the checker's own.
    The Spark engine reads as it checks: its ``read_s`` is the session's start (the JVM), its
    memory the driver JVM's resident size at the end (Spark spills what does not fit)."""
    if engine == "spark":
        return _measure_spark(run_dir)
    t0 = time.monotonic()
    loaded = store.load(run_dir)
    read_s = time.monotonic() - t0
    t0 = time.monotonic()
    verdict = check(loaded)
    check_s = time.monotonic() - t0
    if verdict.valid is not True:
        raise AssertionError(f"the synthetic history must be valid: {verdict.to_json()['checks']}")
    n = len(loaded.writes)
    return {"engine": engine, "values": n, "read_s": round(read_s, 3), "check_s": round(check_s, 3),
            "values_per_s": round(n / check_s), "check_over_read": round(check_s / read_s, 1),
            "peak_rss_mb": round(peak_rss_mb())}


def _measure_spark(run_dir: Path) -> dict[str, Any]:
    import json as _json

    import psutil

    from harness.checker.spark_engine import check_run
    from harness.spark.session import CHECKER_CONF, CHECKER_MEMORY, session

    t0 = time.monotonic()
    spark = session("eos-chaos-bench-checker", tmp_dir=run_dir / "spark-tmp", memory=CHECKER_MEMORY, conf=CHECKER_CONF)
    start_s = time.monotonic() - t0
    t0 = time.monotonic()
    verdict = check_run(run_dir, spark)
    check_s = time.monotonic() - t0
    if verdict.valid is not True:
        raise AssertionError(f"the synthetic history must be valid: {_json.dumps(verdict.to_json()['checks'])[:2000]}")
    n = int(verdict.stats["written_values"])
    jvm = sum(c.memory_info().rss for c in psutil.Process().children(recursive=True)) / 2**20
    spark.stop()
    return {"engine": "spark", "values": n, "read_s": round(start_s, 3), "check_s": round(check_s, 3),
            "values_per_s": round(n / check_s), "check_over_read": round(check_s / start_s, 1),
            "peak_rss_mb": round(peak_rss_mb() + jvm)}


def bench(n_values: int, engine: str = "default") -> dict[str, Any]:
    """Generate in one process, load + check in another."""
    import json
    import subprocess
    import sys

    with tempfile.TemporaryDirectory(prefix="eos-chaos-bench-checker-") as tmp:
        for args in (["generate", str(n_values), tmp], ["measure", tmp, engine]):
            proc = subprocess.run([sys.executable, "-m", "harness.bench_checker", *args], capture_output=True, text=True,
                                  stdin=subprocess.DEVNULL)
            if proc.returncode != 0:
                raise RuntimeError(f"bench_checker {args[0]} failed:\n{proc.stderr[-2000:]}")
        return dict(json.loads(proc.stdout))


def median_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    import statistics

    keys = ("read_s", "check_s", "values_per_s", "check_over_read", "peak_rss_mb")
    return {"engine": runs[0].get("engine", "default"), "values": runs[0]["values"], "runs": len(runs),
            **{k: statistics.median(r[k] for r in runs) for k in keys}, "samples": runs}


if __name__ == "__main__":
    # python -m harness.bench_checker generate N DIR | measure DIR [ENGINE] | N [ENGINE] (both, in separate processes)
    import json
    import sys

    if sys.argv[1] == "generate":
        generate(int(sys.argv[2]), Path(sys.argv[3]))
    elif sys.argv[1] == "measure":
        print(json.dumps(measure(Path(sys.argv[2]), *sys.argv[3:4])))
    else:
        print(json.dumps(bench(int(sys.argv[1]), *sys.argv[2:3])))
