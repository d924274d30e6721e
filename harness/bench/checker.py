"""``eos-chaos bench checker``: a valid synthetic history of N values (``harness/bench/producer_history.py``), built column-wise straight
into the history's tables and saved as Parquet (as a run leaves it), then timed: loading it
(``read_s``) and checking it (``check_s``).

Shape: 4 producers, transactions of 6 values (one per partition of a 6-partition topic), 10% aborted,
each transaction end taking an offset for its control marker; one reader polling every committed
record in batches of 500; the final read_committed and read_uncommitted scans. With ``--app``, the
history of an app under test instead (``harness/bench/app_history.py``), judged by its contract check.
"""

from __future__ import annotations

import resource
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np

from harness.bench.app_history import app_synthetic
from harness.bench.copier_history import copier_synthetic
from harness.bench.producer_history import ABORT_EVERY, PARTITIONS, POLL_BATCH, PRODUCERS, synthetic
from harness.checker import CHECKS, run_checks, stats
from harness.checker.checks import cols
from harness.checker.verdict import Verdict
from harness.history import store
from harness.history.model import (
    CONTRACT_CHECKS,
    FAIL,
    OK,
    POLL,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    SCAN,
)
from harness.history.schema import contracts

#: Values per chunk of ``generate``: about 0.5 GB of memory whatever the history's size.
CHUNK_VALUES = 3_000_000
#: Histories up to this many values are built whole in memory (``synthetic``); larger ones by chunks.
IN_MEMORY_VALUES = 20_000_000


def generate_chunked(n_values: int, run_dir: Path) -> None:
    """``synthetic``'s history saved as ``store.save`` would, written chunk by chunk (``CHUNK_VALUES``
    at a time), so a history of 100M values needs no more memory than one of 3M. The small tables and
    every column's type come from a tiny history saved by ``store.save`` itself. Differences from
    ``synthetic``: the polls' op numbers follow the partition order, and the scans are the two ops
    after the last poll."""
    import json
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = run_dir / store.PARQUET_DIR
    run_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=run_dir) as tiny:  # inside the history's folder: removed with it
        generate(PARTITIONS * ABORT_EVERY, Path(tiny))
        shutil.copytree(Path(tiny) / store.PARQUET_DIR, folder)
    schema = {t: pq.read_schema(folder / f"{t}.parquet").remove_metadata() for t in ("writes", "reads", "txns", store.VALUES_TABLE)}
    n_txn = max(1, n_values // PARTITIONS)
    n = n_txn * PARTITIONS
    per_part = CHUNK_VALUES // PARTITIONS

    def writer(table: str) -> pq.ParquetWriter:
        return pq.ParquetWriter(folder / f"{table}.parquet", schema[table])

    def write(w: pq.ParquetWriter, table: str, cols: dict[str, Any]) -> None:
        w.write_table(pa.table({k: cols[k] for k in schema[table].names}).cast(schema[table]))

    with writer("writes") as ww, writer(store.VALUES_TABLE) as vw, writer("txns") as tw:
        for t0 in range(0, n_txn, per_part):
            txn = np.arange(t0, min(n_txn, t0 + per_part), dtype=np.int64)
            aborted = (txn % ABORT_EVERY) == ABORT_EVERY - 1
            i = (txn[:, None] * PARTITIONS + np.arange(PARTITIONS)).ravel()
            tx_of = i // PARTITIONS
            offset = pa.array(2 * tx_of, mask=np.repeat(aborted, PARTITIONS))
            write(ww, "writes", {"txn": tx_of, "topic": pa.array(["t"] * len(i)).dictionary_encode(), "partition": i % PARTITIONS,
                                 "offset": offset, "vid": i, "tid": np.zeros(len(i), np.int16), "row": i})
            write(vw, store.VALUES_TABLE, {"vid": i, "value": np.char.add("v", i.astype(str))})
            t_inv = txn * 1000
            write(tw, "txns", {"txn": txn, "process": pa.array(np.char.add("p", (txn % PRODUCERS).astype(str))).dictionary_encode(),
                               "f": pa.array(["txn"] * len(txn)).dictionary_encode(),
                               "outcome": pa.array(np.where(aborted, FAIL, OK)).dictionary_encode(),
                               "invoke_time": t_inv, "complete_time": t_inv + 900, "commit_at": t_inv + 500,
                               "txn_id": pa.array(np.char.add("tx-", (txn % PRODUCERS).astype(str))).dictionary_encode(),
                               "error": pa.nulls(len(txn))})
    committed_count = n_txn - n_txn // ABORT_EVERY
    polls = committed_count * PARTITIONS
    last_poll_op = n_txn + (polls - 1) // POLL_BATCH
    row = 0
    with writer("reads") as rw:
        # polls, then the read_committed scan, then the read_uncommitted one; each partition in offset order
        for source, iso, process, committed_only in ((POLL, READ_COMMITTED, "r0", True), (SCAN, READ_COMMITTED, "final", True),
                                                     (SCAN, READ_UNCOMMITTED, "final", False)):
            k = 0  # the poll's index in the polls, for its op
            for part in range(PARTITIONS):
                for t0 in range(0, n_txn, per_part):
                    txn = np.arange(t0, min(n_txn, t0 + per_part), dtype=np.int64)
                    if committed_only:
                        txn = txn[(txn % ABORT_EVERY) != ABORT_EVERY - 1]
                    m = len(txn)
                    if source == POLL:
                        op = n_txn + (k + np.arange(m)) // POLL_BATCH
                    else:
                        op = np.full(m, last_poll_op + (1 if iso == READ_COMMITTED else 2))
                    offset = 2 * txn
                    write(rw, "reads", {"op": op, "process": pa.array([process] * m).dictionary_encode(),
                                        "source": pa.array([source] * m).dictionary_encode(),
                                        "isolation": pa.array([iso] * m).dictionary_encode(),
                                        "topic": pa.array(["t"] * m).dictionary_encode(), "partition": np.full(m, part),
                                        "offset": offset, "vid": txn * PARTITIONS + part, "tid": np.zeros(m, np.int16),
                                        "pos": store.pack(0, part, offset), "row": row + np.arange(m)})
                    k, row = k + m, row + m
    meta = json.loads((folder / store.META_FILE).read_text())
    meta.update(ops=int(last_poll_op + 3), duration_ns=int((n_txn - 1) * 1000 + 1000))
    (folder / store.META_FILE).write_text(json.dumps(meta))
    assert n == row - 2 * polls, (n, row, polls)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


#: ``generate``'s kind of history of a copier's (``bench checker --copier``), beside the app kinds
COPIER = "copier"


def generate(n_values: int, run_dir: Path, app: str | None = None) -> None:
    """The synthetic history of ``n_values`` values (an app's, ``APP_KINDS``, with ``app``; with a
    copier's, ``COPIER``) saved in ``run_dir``."""
    if app == COPIER:
        store.save(copier_synthetic(n_values), run_dir)
    elif app is not None:
        store.save(app_synthetic(n_values, app), run_dir)
    elif n_values > IN_MEMORY_VALUES:
        generate_chunked(n_values, run_dir)
    else:
        store.save(synthetic(n_values), run_dir)


def measure(run_dir: Path, engine: str = "default", master: str | None = None) -> dict[str, Any]:
    """Load and check a saved history; run in a fresh process, so peak RSS is the checker's own.
    The Spark engine reads as it checks: its ``read_s`` is the session's start (the JVM), its
    memory the driver JVM's resident size at the end (Spark spills what does not fit)."""
    if engine == "spark":
        return _measure_spark(run_dir, master)
    t0 = time.monotonic()
    loaded = store.load(run_dir)
    read_s = time.monotonic() - t0
    t0 = time.monotonic()
    verdict, by_check = timed_check(loaded)
    check_s = time.monotonic() - t0
    if verdict.valid is not True:
        raise AssertionError(f"the synthetic history must be valid: {verdict.to_json()['checks']}")
    n = len(loaded.writes)
    app = _app_check(loaded.meta)
    if app is not None and verdict.checks[app].skipped:  # judged valid by not looking: the wrong path timed
        raise AssertionError(f"the synthetic app history must be judged by {app}: skipped, {verdict.checks[app].skipped}")
    return {"engine": engine, "values": n, "read_s": round(read_s, 3), "check_s": round(check_s, 3),
            "values_per_s": round(n / check_s), "check_over_read": round(check_s / read_s, 1),
            "peak_rss_mb": round(peak_rss_mb()),
            **({"app_check": app, "app_check_s": by_check[app], "app_outputs": len(loaded.app_outputs),
                "app_expected": len(loaded.app_expected)} if app else {}),
            "by_check_s": by_check}


def _app_check(meta: dict[str, Any]) -> str | None:
    """The contract check that judges the history's app (``bench checker --app``), or None."""
    apps = contracts(meta)
    return CONTRACT_CHECKS[apps[0].contract] if apps else None


def timed_check(t: store.Tables) -> tuple[Verdict, dict[str, float]]:
    """``harness.checker.check``'s verdict, with the seconds each step took: the numpy view
    (``cols``), each check, and the figures (``stats``)."""
    seconds: dict[str, float] = {}

    def timed(name: str, run: Any) -> Any:
        def call() -> Any:
            t0 = time.monotonic()
            try:
                return run()
            finally:
                seconds[name] = round(time.monotonic() - t0, 3)
        return call

    timed("cols", lambda: cols(t))()
    verdict = run_checks({name: timed(name, partial(fn, t)) for name, fn in CHECKS.items()},
                         timed("stats", partial(stats, t)), t.meta, default_ops=len(t.ops), engine="default")
    return verdict, seconds


def _measure_spark(run_dir: Path, master: str | None = None) -> dict[str, Any]:
    """The Spark engine on ``master`` (``local[2]`` unless given): check time, the peak resident
    memory of every process (this one, the driver JVM, each executor), and the Spark jobs, stages
    and shuffles of each check, read from Spark's own event log."""
    import json as _json

    from harness.checker.spark_engine import check_run
    from harness.sparkjob.session import CHECKER_CONF, CHECKER_MEMORY, session

    events = run_dir / "spark-events"
    events.mkdir()
    conf = {**CHECKER_CONF, "spark.eventLog.enabled": "true", "spark.eventLog.dir": events.as_uri(),
            "spark.eventLog.compress": "false", "spark.eventLog.rolling.enabled": "false"}
    if master and master.startswith("spark://"):
        from clusters.spark.standalone import EXECUTOR_CONF

        conf.update(EXECUTOR_CONF)
    t0 = time.monotonic()
    spark = session("eos-chaos-bench-checker", master=master, tmp_dir=run_dir / "spark-tmp", memory=CHECKER_MEMORY, conf=conf)
    start_s = time.monotonic() - t0
    t0 = time.monotonic()
    by_check: dict[str, float] = {}
    verdict = check_run(run_dir, spark, by_check)
    check_s = time.monotonic() - t0
    if verdict.valid is not True:
        raise AssertionError(f"the synthetic history must be valid: {_json.dumps(verdict.to_json()['checks'])[:2000]}")
    n = int(verdict.stats["written_values"])
    peaks = {"python": round(peak_rss_mb()), **_jvm_peaks(spark.sparkContext.applicationId)}
    spark.stop()
    return {"engine": "spark", "master": master or "local[2]", "values": n, "read_s": round(start_s, 3),
            "check_s": round(check_s, 3), "values_per_s": round(n / check_s), "check_over_read": round(check_s / start_s, 1),
            "peak_rss_mb": sum(peaks.values()), "peak_rss_mb_by_process": peaks, "spark": spark_work(events), "by_check_s": by_check}


def _vm_hwm_mb(pid: int) -> int:
    """A process's peak resident memory so far (``VmHWM``), in MiB."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:  # it ended meanwhile
        return 0
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) // 1024
    return 0


def _jvm_peaks(app_id: str) -> dict[str, int]:
    """Peak resident memory of the check's processes: this process's children (the driver JVM, its
    Python workers) and the executors that ran application ``app_id`` (on a standalone cluster: its
    workers' children), each once. A cluster's master and workers serve every application, so
    they are not counted, even when this process started them."""
    import psutil

    from clusters.backends.procs import SPARK_DAEMONS, SPARK_EXECUTOR_CLASS

    peaks: dict[str, int] = {}
    for proc in psutil.process_iter(["pid", "cmdline"]):
        cmd = proc.info["cmdline"] or []
        if SPARK_EXECUTOR_CLASS in cmd and app_id in cmd:
            peaks[f"executor-{proc.pid}"] = _vm_hwm_mb(proc.pid)
    counted = {int(k.rsplit("-", 1)[1]) for k in peaks}
    for c in psutil.Process().children(recursive=True):
        try:
            cmd, name = c.cmdline(), c.name()
        except psutil.Error:  # it ended meanwhile (a Python worker Spark let go): nothing to read
            continue
        if c.pid in counted or any(cls in cmd for cls in SPARK_DAEMONS):
            continue  # an executor (counted above), or a cluster daemon and its executors' parents
        peaks[f"driver-{name}-{c.pid}"] = _vm_hwm_mb(c.pid)
    return {k: v for k, v in peaks.items() if v}


def spark_work(events: Path) -> dict[str, Any]:
    """Per job group (each check and the summary): Spark jobs, stages run, and shuffles (stages that
    wrote shuffle output) with the bytes they wrote, from the application's event log."""
    import json as _json

    group_of_job: dict[int, str] = {}
    group_of_stage: dict[int, str] = {}
    work: dict[str, dict[str, int]] = {}
    for log_file in events.iterdir():
        for line in log_file.read_text().splitlines():
            e = _json.loads(line)
            if e["Event"] == "SparkListenerJobStart":
                group = (e.get("Properties") or {}).get("spark.jobGroup.id") or "(setup)"
                group_of_job[e["Job ID"]] = group
                for stage in e.get("Stage IDs", []):
                    group_of_stage.setdefault(stage, group)
                work.setdefault(group, {"jobs": 0, "stages": 0, "shuffles": 0, "shuffle_mb": 0})["jobs"] += 1
            elif e["Event"] == "SparkListenerStageCompleted":
                info = e["Stage Info"]
                w = work.setdefault(group_of_stage.get(info["Stage ID"], "(setup)"), {"jobs": 0, "stages": 0, "shuffles": 0, "shuffle_mb": 0})
                w["stages"] += 1
                acc = {a["Name"]: a.get("Value") for a in info.get("Accumulables", [])}
                written = int(acc.get("internal.metrics.shuffle.write.bytesWritten") or 0)
                if written:
                    w["shuffles"] += 1
                    w["shuffle_mb"] += round(written / 2**20)
    total = {k: sum(w[k] for w in work.values()) for k in ("jobs", "stages", "shuffles", "shuffle_mb")}
    return {"total": total, "by_check": work}


#: The temporary folder of one ``bench`` (the history, up to GBs of Parquet): under $TMPDIR.
TMP_PREFIX = "eos-chaos-bench-checker-"
#: How long one step (generate, measure) may take: 100M values took 211 s to generate; a step hung
#: (a stuck Spark job) must not hold the benchmark, and its folder, forever.
STEP_DEADLINE_S = 4 * 3600.0
#: How long a killed step may take to be gone (SIGKILL: at once; the bound is for a wedged kernel).
KILL_WAIT_S = 30.0


def bench(n_values: int, engine: str = "default", master: str | None = None) -> dict[str, Any]:
    """Generate in one process, load + check in another (so peak RSS is the checker's own), in a
    temporary folder removed whatever happens: a Ctrl-C or SIGTERM (KeyboardInterrupt here) ends
    the step under way and what it started before the folder goes."""
    import json

    with tempfile.TemporaryDirectory(prefix=TMP_PREFIX) as tmp:
        _step(["generate", str(n_values), tmp])
        return dict(json.loads(_step(["measure", tmp, engine, *([master] if master else [])])))


def bench_app(n_values: int, app: str, runs: int) -> list[dict[str, Any]]:
    """``bench`` of app history ``app`` (``APP_KINDS``): generated once (it is the same history each
    time), then loaded and checked ``runs`` times, each in a fresh process."""
    import json

    with tempfile.TemporaryDirectory(prefix=TMP_PREFIX) as tmp:
        _step(["generate", str(n_values), tmp, app])
        return [dict(json.loads(_step(["measure", tmp]))) for _ in range(runs)]


@contextmanager
def _interrupts_held() -> Iterator[None]:
    """SIGINT and SIGTERM held back while the block runs, then raised as the KeyboardInterrupt
    they would have been (Python's handlers are not inherited by a child: it starts with the defaults)."""
    import signal

    held: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        held.append(signum)

    before = {s: signal.signal(s, hold) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
    if held:
        raise KeyboardInterrupt


def _step(args: list[str]) -> str:
    """``python -m harness.bench.checker ARGS`` in a session of its own; its stdout. Interrupted,
    the whole session is killed (the step and what it started: the Spark engine's JVM), so
    nothing writes into the folder while it is removed."""
    import os
    import signal
    import subprocess
    import sys

    from harness.base.errors import HarnessError

    with _interrupts_held():  # a Ctrl-C while the child starts would lose its pid, and it would write on
        proc = subprocess.Popen([sys.executable, "-m", "harness.bench.checker", *args], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, start_new_session=True)
    with proc:
        try:
            out, err = proc.communicate(timeout=STEP_DEADLINE_S)
        except BaseException as exc:  # KeyboardInterrupt (Ctrl-C, SIGTERM) or the deadline
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass  # gone already
            proc.wait(timeout=KILL_WAIT_S)
            if isinstance(exc, subprocess.TimeoutExpired):
                raise HarnessError(f"bench_checker {args[0]} took more than {STEP_DEADLINE_S:.0f}s; killed") from None
            raise
    if proc.returncode != 0:
        raise HarnessError(f"bench_checker {args[0]} failed:\n{err[-2000:]}")
    return out


def median_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    import statistics

    keys = ("read_s", "check_s", "values_per_s", "check_over_read", "peak_rss_mb", *(("app_check_s",) if "app_check" in runs[0] else ()))
    return {"engine": runs[0].get("engine", "default"), "values": runs[0]["values"], "runs": len(runs),
            **{k: runs[0][k] for k in ("app_check", "app_outputs", "app_expected") if k in runs[0]},
            **({"master": runs[0]["master"], "spark": runs[0]["spark"]["total"]} if "spark" in runs[0] else {}),
            **{k: statistics.median(r[k] for r in runs) for k in keys}, "samples": runs}


if __name__ == "__main__":
    # python -m harness.bench.checker generate N DIR [APP] | measure DIR [ENGINE [MASTER]] | N [ENGINE [MASTER]]
    # (both, in separate processes)
    import json
    import sys

    if sys.argv[1] == "generate":
        generate(int(sys.argv[2]), Path(sys.argv[3]), *sys.argv[4:5])
    elif sys.argv[1] == "measure":
        print(json.dumps(measure(Path(sys.argv[2]), *sys.argv[3:5])))
    else:
        print(json.dumps(bench(int(sys.argv[1]), *sys.argv[2:4])))
