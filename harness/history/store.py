"""Reading the history: merge the per-process JSON-lines files, pair invokes with completions, and
flatten into typed tables (pandas) that the checker works on column-wise. The tables are saved as
Parquet at the end of a run; ``load`` prefers them when they are newer than the JSON lines.

A file cut off mid-line (a killed writer, a full disk) is read up to its last whole line; the
tables say so in ``meta['truncated']`` and the verdict repeats it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pandas as pd

from harness.errors import ConfigError
from harness.history.model import (
    FAULT, FENCED, GROUP_OFFSETS, INFO, INIT, INVOKE, LSO, OK, POLL, READ_COMMITTED, RETIRED, SCAN, SEND, SPARK_EVENTS,
    TXN, split_tp,
)
from harness.history.recorder import HISTORY_DIR

PARQUET_DIR = "history.parquet"
TABLES = ("ops", "txns", "writes", "reads", "inits", "group_offsets")
LOW_CARDINALITY = {"reads": ("process", "source", "isolation", "topic"), "writes": ("topic",),
                   "txns": ("process", "f", "outcome", "txn_id"), "ops": ("process", "type", "f")}


@dataclass
class Tables:
    """The history, flattened. Offsets are nullable integers (unknown for unacknowledged writes)."""

    ops: pd.DataFrame
    txns: pd.DataFrame
    writes: pd.DataFrame
    reads: pd.DataFrame
    inits: pd.DataFrame
    group_offsets: pd.DataFrame
    meta: dict[str, Any] = field(default_factory=dict)
    #: derived data a checker run computes once (never saved)
    cache: dict[str, Any] = field(default_factory=dict)
    #: every distinct value, at its ``vid`` (set by ``add_ids``; saved once instead of per row)
    values: pd.Series | None = None


def read_ops(run_dir: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """All ops of all files, merged by time (then file order), with ``index`` assigned; and the
    files that ended in a partial line."""
    files = sorted((run_dir / HISTORY_DIR).glob("*.jsonl"))
    if not files:
        raise ConfigError(f"{run_dir} has no history ({HISTORY_DIR}/*.jsonl): not a run folder, or the run wrote nothing")
    ops: list[dict[str, Any]] = []
    truncated: list[str] = []
    for path in files:
        data = path.read_bytes()
        lines = data.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        elif lines:
            truncated.append(path.name)  # no newline at the end: the last line may be cut off
            lines.pop()
        for n, line in enumerate(lines):
            try:
                ops.append(orjson.loads(line))
            except orjson.JSONDecodeError as exc:
                raise ConfigError(f"{path}:{n + 1}: not a JSON object ({exc})") from exc
    ops.sort(key=lambda o: o["time"])  # stable: one process's ops keep their file order on ties
    for i, op in enumerate(ops):
        op["index"] = i
    return ops, truncated


def _pair(ops: list[dict[str, Any]]) -> dict[int, dict[str, Any] | None]:
    """invoke index -> its completion (None: the process never completed it, i.e. unknown)."""
    outstanding: dict[str, dict[str, Any]] = {}
    pairs: dict[int, dict[str, Any] | None] = {}
    for op in ops:
        t = op["type"]
        if t == INVOKE:
            outstanding[op["process"]] = op
            pairs[op["index"]] = None
        elif op["process"] in outstanding and outstanding[op["process"]]["f"] == op["f"]:
            pairs[outstanding.pop(op["process"])["index"]] = op
    return pairs


def flatten(ops: list[dict[str, Any]], truncated: list[str] | None = None) -> Tables:
    pairs = _pair(ops)
    txn_rows: list[tuple[Any, ...]] = []
    w_txn: list[int] = []
    w_val: list[str] = []
    w_topic: list[str] = []
    w_part: list[int] = []
    w_off: list[int | None] = []
    r_op: list[int] = []
    r_proc: list[str] = []
    r_src: list[str] = []
    r_iso: list[str] = []
    r_topic: list[str] = []
    r_part: list[int] = []
    r_off: list[int] = []
    r_val: list[str] = []
    init_rows: list[tuple[Any, ...]] = []
    group_rows: list[tuple[str, int, int]] = []
    fenced: list[str] = []
    retired: list[str] = []
    lso: dict[str, Any] | None = None
    # the Spark job's own events, and the nemesis's faults on workloads (driver kills): few per run
    spark: list[dict[str, Any]] = []

    for op in ops:
        f, t = op["f"], op["type"]
        if t == INVOKE and f in (TXN, SEND):
            done = pairs.get(op["index"])
            outcome = done["type"] if done else INFO
            txn_rows.append((op["index"], op["process"], f, outcome, op["time"], done["time"] if done else None,
                             (done or {}).get("commit_at", op.get("commit_at")), op.get("txn_id"),
                             (done or {}).get("error")))
            sends = op["value"] if f == TXN else [op["value"]]
            acked = None
            if done is not None and outcome == OK and done.get("value") is not None:
                acked = done["value"] if f == TXN else [done["value"]]
            for k, s in enumerate(sends):
                micro = s[1:] if f == TXN else s  # txn micro-ops start with "send"
                w_txn.append(op["index"])
                w_topic.append(micro[0])
                w_part.append(micro[1])
                w_val.append(micro[2])
                a = acked[k] if acked is not None and k < len(acked) else None
                w_off.append((a[4] if f == TXN else a[3]) if a is not None and len(a) > (4 if f == TXN else 3) else None)
        elif t == INVOKE and f == INIT:
            done = pairs.get(op["index"])
            init_rows.append((op["index"], op["process"], op["value"], done["type"] if done else INFO,
                              op["time"], done["time"] if done else None))
        elif (f == POLL and t == OK) or f == SCAN:
            src = POLL if f == POLL else SCAN
            iso = op.get("isolation", READ_COMMITTED)
            for key, recs in (op["value"] or {}).items():
                topic, part = split_tp(key)
                n = len(recs)
                r_op.extend([op["index"]] * n)
                r_proc.extend([op["process"]] * n)
                r_src.extend([src] * n)
                r_iso.extend([iso] * n)
                r_topic.extend([topic] * n)
                r_part.extend([part] * n)
                r_off.extend(r[0] for r in recs)
                r_val.extend(r[1] for r in recs)
        elif f == GROUP_OFFSETS:
            for key, off in (op["value"] or {}).items():
                topic, part = split_tp(key)
                group_rows.append((topic, part, off))
        elif f == FENCED:
            fenced.append(op["process"])
        elif f == RETIRED:
            retired.append(op["process"])
        elif f == LSO:
            lso = op["value"]
        elif f in SPARK_EVENTS or (f == FAULT and "workload" in (op.get("value") or {})):
            spark.append({"time": op["time"], "process": op["process"], "f": f, "type": t, **(op.get("value") or {})})

    ops_df = pd.DataFrame({
        "index": pd.array([o["index"] for o in ops], dtype="int64"),
        "time": pd.array([o["time"] for o in ops], dtype="int64"),
        "process": [str(o["process"]) for o in ops],
        "type": [o["type"] for o in ops],
        "f": [o["f"] for o in ops],
        "error": [o.get("error") for o in ops],
    })
    txns = pd.DataFrame(txn_rows, columns=["txn", "process", "f", "outcome", "invoke_time", "complete_time",
                                           "commit_at", "txn_id", "error"])
    txns = txns.astype({"txn": "int64", "invoke_time": "int64", "complete_time": "Int64", "commit_at": "Int64"})
    writes = pd.DataFrame({"txn": pd.array(w_txn, dtype="int64"), "value": _str(w_val), "topic": _str(w_topic),
                           "partition": pd.array(w_part, dtype="int64"), "offset": pd.array(w_off, dtype="Int64")})
    reads = pd.DataFrame({"op": pd.array(r_op, dtype="int64"), "process": _str(r_proc), "source": _str(r_src),
                          "isolation": _str(r_iso), "topic": _str(r_topic), "partition": pd.array(r_part, dtype="int64"),
                          "offset": pd.array(r_off, dtype="int64"), "value": _str(r_val)})
    inits = pd.DataFrame(init_rows, columns=["op", "process", "txn_id", "outcome", "invoke_time", "complete_time"])
    inits = inits.astype({"op": "int64", "invoke_time": "int64", "complete_time": "Int64"})
    groups = pd.DataFrame(group_rows, columns=["topic", "partition", "offset"]).astype({"partition": "int64", "offset": "int64"})
    meta = {"ops": len(ops), "truncated": truncated or [], "fenced": sorted(set(fenced)), "retired": sorted(set(retired)), "lso": lso,
            "spark": spark,
            "duration_ns": (ops[-1]["time"] - ops[0]["time"]) if ops else 0}
    return Tables(ops_df, txns, writes, reads, inits, groups, meta)


def add_ids(t: Tables) -> Tables:
    """Integer ids the checker works on, stored with the tables (like Parquet's own dictionary
    encoding): ``vid`` per value (shared by writes and reads), ``tid`` per topic, and on reads
    ``pos`` = (topic, partition, offset) as one sortable int64. Idempotent."""
    if "vid" in t.writes.columns and "vid" in t.reads.columns and t.values is not None:
        return t
    n = len(t.writes)
    codes, uniques = pd.factorize(pd.concat([t.writes["value"], t.reads["value"]], ignore_index=True))
    t.values = pd.Series(uniques, dtype="str")
    tids, _ = pd.factorize(pd.concat([t.writes["topic"], t.reads["topic"]], ignore_index=True))
    t.writes = t.writes.assign(vid=codes[:n].astype(np.int64), tid=tids[:n].astype(np.int64))
    t.reads = t.reads.assign(vid=codes[n:].astype(np.int64), tid=tids[n:].astype(np.int64))
    t.reads["pos"] = position(t.reads["tid"], t.reads["partition"], t.reads["offset"])
    return t


def position(tid: pd.Series, partition: pd.Series, offset: pd.Series) -> np.ndarray:
    """(topic id, partition, offset) -> int64: 7 bits of topic, 16 of partition, 40 of offset."""
    return (tid.to_numpy(np.int64) << 56) | (partition.to_numpy(np.int64) << 40) | offset.to_numpy(np.int64)


def with_values(t: Tables, df: pd.DataFrame) -> pd.DataFrame:
    """``df`` (rows of reads or writes) with its ``value`` column, looked up by ``vid`` if absent."""
    if "value" in df.columns:
        return df
    assert t.values is not None
    return df.assign(value=t.values.take(df["vid"].to_numpy()).to_numpy())


def _str(values: list[str]) -> pd.Series:
    """A string column that stays a string column when empty (the checks use ``.str``)."""
    return pd.Series(values, dtype="str")


def save(tables: Tables, run_dir: Path) -> Path:
    """Write the tables as Parquet (temp folder + rename: never half a set)."""
    add_ids(tables)
    # Few distinct values in many rows: dictionary-encoded (pandas categories) they take a byte or
    # two per row instead of a string each, on disk and once loaded.
    frames = {}
    for name in TABLES:
        df = getattr(tables, name)
        df = df.astype({c: "category" for c in LOW_CARDINALITY.get(name, ()) if c in df.columns})
        if name in ("reads", "writes"):
            # values once, in values.parquet at their id, not once per record that carries them;
            # ``row`` keeps the history order for engines that read the files in parallel (Spark)
            df = df.drop(columns=["value"], errors="ignore").astype({"tid": "int16", "partition": "int32"})
            df = df.assign(row=np.arange(len(df), dtype=np.int64))
            if "op" in df.columns:
                df = df.astype({"op": "int32"})  # history indexes stay far below 2**31
        frames[name] = df
    final = run_dir / PARQUET_DIR
    tmp = run_dir / f".{PARQUET_DIR}.tmp{os.getpid()}"
    tmp.mkdir(parents=True, exist_ok=True)
    for name, df in frames.items():
        df.to_parquet(tmp / f"{name}.parquet", index=False)
    assert tables.values is not None
    pd.DataFrame({"vid": np.arange(len(tables.values), dtype=np.int64), "value": tables.values}).to_parquet(
        tmp / "values.parquet", index=False)
    (tmp / "meta.json").write_text(json.dumps(tables.meta))
    if final.exists():
        for p in final.iterdir():
            p.unlink()
        final.rmdir()
    os.replace(tmp, final)
    return final


def parquet_is_current(run_dir: Path) -> bool:
    """The run's Parquet tables exist and are newer than every history file."""
    meta = run_dir / PARQUET_DIR / "meta.json"
    return meta.exists() and all(f.stat().st_mtime <= meta.stat().st_mtime for f in (run_dir / HISTORY_DIR).glob("*.jsonl"))


def load(run_dir: Path) -> Tables:
    """The run's tables: from Parquet when it is newer than every history file, else from the JSON lines."""
    pq = run_dir / PARQUET_DIR
    if parquet_is_current(run_dir):
        import pyarrow.parquet as pq_io

        # split_blocks + self_destruct: arrow buffers are freed as columns convert (lower peak memory)
        frames = {name: pq_io.read_table(pq / f"{name}.parquet").to_pandas(split_blocks=True, self_destruct=True)
                  for name in TABLES}
        for name in ("reads", "writes"):
            frames[name] = frames[name].drop(columns=["row"], errors="ignore")  # row order is the frame's order
        values = pd.read_parquet(pq / "values.parquet", columns=["value"])["value"]
        return Tables(**frames, meta=json.loads((pq / "meta.json").read_text()), values=values)
    ops, truncated = read_ops(run_dir)
    return flatten(ops, truncated)
