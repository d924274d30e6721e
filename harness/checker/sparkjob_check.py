"""``spark-exactly-once`` and the Spark job's figures (``stats.spark``), from the final committed
scan and the job's recorded events.

The job's output values name their input (``spark/<topic>/<partition>/<offset>/<batch>/<process>/<value>``)
and each committed micro-batch has one marker (``spark-marker/<query>/<batch>/<process>/<ranges>``)
in the same transaction, so everything is checked from what Kafka kept:

- ``duplicate-output``: a committed input record with more than one committed output;
- ``missing-output``: a committed input record inside a committed batch's offset range without one;
- ``orphan-output``: an output whose input is not a committed input record (aborted input, or a
  value that differs from the record at that offset);
- ``outside-range``: an output of a batch whose marker's range does not hold its input offset, or
  of a batch with no committed marker (output and marker share one transaction);
- ``marker-gap``: a query's committed batch ids not contiguous from 0, or a batch whose ranges do
  not start where the previous batch's ended;
- ``batch-incarnations``: one batch committed by more than one incarnation (process);
- ``uncovered-input`` (the executor sink): a committed input record below the end of its
  partition's last committed marker and inside none of its markers' ranges.

The executor sink (``sink: executor``, harness/sparkjob/sink.py) commits one marker per (batch, input
partition), and none for a partition whose share of a batch held no committed record: so its
batch ids need not be contiguous, and a range may start past the previous marker's end when the
offsets between hold no committed input (``uncovered-input`` checks exactly that). Its ranges must
never overlap (``marker-gap``). Which queries ran it: their ``spark-start`` events.

With Spark's own (non-transactional) sink there are no markers; then the committed ranges are those
of the batches the job recorded as written (``spark-batch`` ok).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from harness.checker.checks import MAX_EXAMPLES, Found, final_committed, topics_starting
from harness.history.model import (
    MARKER_PREFIX,
    OK,
    SPARK_BATCH,
    SPARK_FAULT,
    SPARK_PREFIX,
    SPARK_PROGRESS,
    SPARK_SKIP,
    SPARK_START,
    position,
)
from harness.history.store import Tables, spark_events, with_values

KEY = ["topic", "partition", "offset"]
RANGE_COLUMNS = ["query", "batch", "tp", "start", "end"]


def _split(values: pd.Series, names: list[str]) -> pd.DataFrame:
    """``a/b/c`` strings -> one column per name (the last takes the rest, slashes and all)."""
    if values.empty:
        return pd.DataFrame({n: pd.Series(dtype="str") for n in names})
    parts = values.str.split("/", n=len(names) - 1, expand=True)
    parts.columns = names
    return parts.reset_index(drop=True)


def _outputs_and_markers(t: Tables) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The committed outputs (with the input each names) and the committed markers."""
    out_tids = topics_starting(t, SPARK_PREFIX + "/")
    marker_tids = topics_starting(t, MARKER_PREFIX + "/")
    if not out_tids and not marker_tids:  # no Spark job's topic: nothing to split (the common case)
        return (pd.DataFrame(columns=["prefix", "topic", "partition", "offset", "batch", "process", "in_value",
                                      "out_topic", "out_partition", "out_offset", "query"]),
                pd.DataFrame(columns=["prefix", "query", "batch", "process", "ranges"]))
    fc = final_committed(t)
    out = with_values(t, fc[fc["tid"].isin(out_tids)])
    outputs = _split(out["value"], ["prefix", "topic", "partition", "offset", "batch", "process", "in_value"])
    outputs = outputs.astype({"partition": "int64", "offset": "int64", "batch": "int64"}).assign(
        out_topic=out["topic"].to_numpy(), out_partition=out["partition"].to_numpy(), out_offset=out["offset"].to_numpy())
    outputs["query"] = outputs["process"].str.rpartition(".")[0] if len(outputs) else pd.Series(dtype="str")
    mk = with_values(t, fc[fc["tid"].isin(marker_tids)])
    markers = _split(mk["value"], ["prefix", "query", "batch", "process", "ranges"]).astype({"batch": "int64"})
    return outputs, markers


def _ranges(markers: pd.DataFrame, events: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per (query, batch, topic-partition) of a committed batch: [start, end), and the
    process that committed it (a marker's; none for Spark's own sink)."""
    import json

    rows: list[tuple[str, int, str, int, int, str]] = []
    if len(markers):
        for q, b, r, p in zip(markers["query"], markers["batch"], markers["ranges"], markers["process"]):
            rows += [(q, int(b), tp, int(s), int(e), p) for tp, (s, e) in json.loads(r).items()]
    else:  # Spark's own sink: the batches the job recorded as written
        for ev in events:
            if ev["f"] == SPARK_BATCH and ev.get("outcome") == OK:
                q = ev.get("query") or str(ev["process"]).rpartition(".")[0]
                rows += [(q, int(ev["batch"]), tp, int(s), int(e), "") for tp, (s, e) in (ev.get("ranges") or {}).items()]
    return pd.DataFrame(rows, columns=["query", "batch", "tp", "start", "end", "process"]).drop_duplicates(
        ["query", "batch", "tp", "start", "end", "process"])


def per_partition_queries(events: list[dict[str, Any]]) -> set[str]:
    """The queries that ran the executor sink (one marker per batch and input partition)."""
    return {str(e.get("query")) for e in events if e["f"] == SPARK_START and e.get("sink") == "executor"}


def uncovered_bounds(ranges: pd.DataFrame, queries: set[str]) -> pd.DataFrame:
    """Per (query, tp) of the executor sink: the end of its last committed marker (``upto``); a
    committed input below it must be inside one of the ranges."""
    r = ranges[ranges["query"].isin(queries)]
    upto = r.groupby(["query", "tp"])["end"].max().rename("upto")
    return upto.reset_index()


def spark_exactly_once(t: Tables) -> Found:
    events = spark_events(t)
    ran = any(ev["f"] == SPARK_START for ev in events)
    if not ran and not topics_starting(t, SPARK_PREFIX + "/") and not topics_starting(t, MARKER_PREFIX + "/"):
        return Found(0, skipped="no Spark job ran in this history")  # before any frame: the common case
    outputs, markers = _outputs_and_markers(t)
    examples: list[dict[str, Any]] = []
    count = 0

    def found(kind: str, n: int, rows: list[dict[str, Any]]) -> None:
        nonlocal count
        count += n
        examples.extend({"anomaly": kind, **r} for r in rows[:MAX_EXAMPLES])

    fc = final_committed(t)
    in_topics = set(outputs["topic"]) if len(outputs) else set()
    for ev in events:
        for tp in (ev.get("ranges") or {}) if ev["f"] == SPARK_BATCH else ():
            in_topics.add(tp.rpartition("-")[0])
    inputs = with_values(t, fc[fc["topic"].isin(in_topics)])[KEY + ["value"]].drop_duplicates(KEY)
    n_out = (outputs.groupby(KEY).size().rename("outputs") if len(outputs) else  # none: an empty series on the same key
             pd.Series(dtype="int64", name="outputs", index=pd.MultiIndex.from_arrays([[], [], []], names=KEY)))
    merged = inputs.merge(n_out, left_on=KEY, right_index=True, how="left").fillna({"outputs": 0}).astype({"outputs": "int64"})

    dup = merged[merged["outputs"] > 1]
    found("duplicate-output", len(dup), _records(dup, KEY + ["value", "outputs"]))

    ranges = _ranges(markers, events)
    if len(merged) and len(ranges):
        merged["tp"] = merged["topic"] + "-" + merged["partition"].astype(str)
        inr = merged.merge(ranges[RANGE_COLUMNS], on="tp")
        covered = inr[(inr["offset"] >= inr["start"]) & (inr["offset"] < inr["end"])]
        missing = covered[covered["outputs"] == 0].drop_duplicates(KEY)
        found("missing-output", len(missing), _records(missing, KEY + ["value", "query", "batch"]))

    if len(outputs):
        joined = outputs.merge(inputs, on=KEY, how="left")
        orphan = joined[joined["value"].isna() | (joined["value"] != joined["in_value"])]
        outs = [position(*p) for p in zip(orphan["out_topic"], orphan["out_partition"], orphan["out_offset"])]
        found("orphan-output", len(orphan), _records(orphan.assign(output=pd.Series(outs, index=orphan.index, dtype=object)),
            KEY + ["batch", "process", "output"]))

    if len(outputs) and len(markers):
        transactional = outputs[outputs["query"].isin(set(markers["query"]))]
        o = transactional.assign(tp=transactional["topic"] + "-" + transactional["partition"].astype(str))
        o = o.merge(ranges[RANGE_COLUMNS], on=["query", "batch", "tp"], how="left")
        outside = o[o["start"].isna() | (o["offset"] < o["start"]) | (o["offset"] >= o["end"])]
        found("outside-range", len(outside), _records(outside, KEY + ["query", "batch", "process", "start", "end"]))

    if len(markers):
        executor = per_partition_queries(events)
        gaps, multi = marker_problems(markers, ranges, executor)
        found("marker-gap", len(gaps), gaps)
        if len(outputs):
            op = outputs.groupby(["query", "batch", "topic", "partition"])["process"].nunique().rename("incarnations")
            multi = pd.concat([multi, op[op > 1].reset_index()[["query", "batch", "incarnations"]]]).drop_duplicates(["query", "batch"])
        found("batch-incarnations", len(multi), _records(multi, ["query", "batch", "incarnations"]))
        bounds = uncovered_bounds(ranges, executor)
        if len(bounds) and len(merged):
            m = merged.assign(tp=merged["topic"] + "-" + merged["partition"].astype(str))
            below = m.merge(bounds, on="tp")
            below = below[below["offset"] < below["upto"]]
            inr = below.merge(ranges[["query", "tp", "start", "end"]], on=["query", "tp"])
            covered = inr[(inr["offset"] >= inr["start"]) & (inr["offset"] < inr["end"])][["query"] + KEY].drop_duplicates()
            left = below.merge(covered, on=["query"] + KEY, how="left", indicator=True)
            left = left[left["_merge"] == "left_only"].sort_values(KEY)
            found("uncovered-input", len(left), _records(left, KEY + ["value", "query", "upto"]))
    return Found(count, examples[:MAX_EXAMPLES])


def marker_problems(markers: pd.DataFrame, ranges: pd.DataFrame, per_partition: set[str] = frozenset()  # type: ignore[assignment]
                    ) -> tuple[list[dict[str, Any]], pd.DataFrame]:
    """From the committed markers alone: the gaps (batch ids missing, ranges that do not continue
    the previous batch's; for the ``per_partition`` queries of the executor sink, ranges that
    overlap the partition's previous marker) and the batches committed by more than one
    incarnation (of one input partition: the executor sink's tasks are processes of their own)."""
    gaps: list[dict[str, Any]] = []
    for q, m in markers.groupby("query"):
        r = ranges[ranges["query"] == q]
        if q in per_partition:
            # one marker per batch here: a batch committed twice is batch-incarnations' finding
            for tp, rt in r.sort_values("batch").drop_duplicates(["tp", "batch"]).groupby("tp"):
                ends = rt["end"].shift(1)
                for b, start, before, pb in zip(rt["batch"], rt["start"], ends, rt["batch"].shift(1)):
                    if not pd.isna(before) and start < before:
                        gaps.append({"query": q, "batch": int(b), "partition": tp,
                                     "problem": f"starts at {start}, before batch {int(pb)} ended ({int(before)})"})
            continue
        batches = sorted(set(m["batch"]))
        gaps += [{"query": q, "batch": b, "problem": "no committed marker"}
                 for b in sorted(set(range(batches[-1] + 1)) - set(batches))]
        prev_end = {(int(b), tp): e for b, tp, e in zip(r["batch"], r["tp"], r["end"])}
        for b, tp, start in zip(r["batch"], r["tp"], r["start"]):
            before = prev_end.get((int(b) - 1, tp))
            if before is not None and before != start:
                gaps.append({"query": q, "batch": int(b), "partition": tp,
                             "problem": f"starts at {start}, batch {int(b) - 1} ended at {before}"})
    per = ranges.groupby(["query", "batch", "tp"])["process"].nunique().rename("incarnations").reset_index()
    return gaps, per[per["incarnations"] > 1][["query", "batch", "incarnations"]].drop_duplicates(["query", "batch"])


def _records(df: pd.DataFrame, cols: list[str]) -> list[dict[str, Any]]:
    from harness.checker.checks import _plain

    return [{str(k): _plain(v) for k, v in r.items()} for r in df[cols].head(MAX_EXAMPLES).to_dict("records")]


def spark_stats(events: list[dict[str, Any]]) -> dict[str, Any] | None:
    """``stats.spark``: driver kills, restarts, batches, replays skipped, batch times, and how long
    each killed driver took to get a batch through again. None when no Spark job ran."""
    starts = [e for e in events if e["f"] == SPARK_START]
    if not starts:
        return None
    batches = [e for e in events if e["f"] == SPARK_BATCH and e.get("outcome") == OK]
    skips = [e for e in events if e["f"] == SPARK_SKIP]
    kills = [e for e in events if e["f"] == SPARK_FAULT and e.get("signal") == "kill" and e.get("target") != "executor"]
    kills += [e for e in events if e["f"] == "fault" and e.get("kind") == "kill-workload" and e.get("phase") == "start"
              and str(e.get("workload", "")).startswith("spark-job")]
    progress = sorted(e["time"] for e in batches + skips)
    recovery = [_next_after(progress, k["time"]) for k in kills]
    executor_kills = [e for e in events if e["f"] == "fault" and e.get("kind") in ("kill-executor", "kill-worker")
                      and e.get("phase") == "start"]
    ms = np.array([e["ms"] for e in batches], dtype=float)
    trigger = np.array([e["trigger_ms"] for e in events if e["f"] == SPARK_PROGRESS and e.get("trigger_ms") is not None], dtype=float)
    return {
        "driver_kills": len(kills),
        "driver_freezes": sum(1 for e in events if e["f"] == SPARK_FAULT and e.get("signal") == "stop"),
        "restarts": max(0, len(starts) - len({str(e.get("query")) for e in starts})),
        "batches": len({(e.get("query"), e["batch"]) for e in batches}),
        "replays_skipped": len(skips),
        "records": int(sum(e.get("records", 0) for e in batches)),
        # foreachBatch alone (our transaction), and Spark's whole trigger per micro-batch
        "batch_ms": {"p50": _q(ms, 50), "p95": _q(ms, 95), "max": round(float(ms.max()), 1) if len(ms) else None},
        "trigger_ms": {"p50": _q(trigger, 50), "p95": _q(trigger, 95), "max": round(float(trigger.max()), 1) if len(trigger) else None},
        "restart_to_first_batch_s": recovery,
        # a standalone cluster's executor and worker kills, and the time from each to the next
        # committed batch (of any partition)
        "executor_kills": sum(1 for e in executor_kills if e["kind"] == "kill-executor"),
        "worker_kills": sum(1 for e in executor_kills if e["kind"] == "kill-worker"),
        "executor_kill_to_batch_s": [_next_after(progress, e["time"]) for e in executor_kills],
    }


def _next_after(progress: list[int], t: int) -> float | None:
    """Seconds from ``t`` to the first of the sorted times ``progress`` after it (None: none)."""
    after = np.searchsorted(np.array(progress, dtype=np.int64), t, side="right") if progress else 0
    return round((progress[after] - t) / 1e9, 2) if after < len(progress) else None


def _q(a: np.ndarray, q: float) -> float | None:
    return round(float(np.percentile(a, q)), 1) if len(a) else None
