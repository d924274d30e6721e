"""``spark-exactly-once`` on hand-written histories of the Spark job: each kind of anomaly fires on
its own history, the clean twins (transactional sink, and Spark's own sink without a replay) are
silent; and ``stats.spark`` counts kills, restarts, batches and skipped replays."""

from __future__ import annotations

import pytest

from harness.checker import check
from harness.history.model import (
    FAIL,
    SPARK_BATCH,
    SPARK_FAULT,
    SPARK_PROGRESS,
    SPARK_SKIP,
    SPARK_START,
    marker_value,
    spark_value,
    tp_key,
)
from tests.unit.histories import History

# Input log of topic "in", partitions 0 and 1: committed txn A at 0-1 (marker 2), aborted C at 3-4
# (marker 5), committed B at 6-7 (marker 8). Batch 0 covers [0, 3), batch 1 covers [3, 9).
A = {0: [(0, "a0"), (1, "a1")], 1: [(0, "a2"), (1, "a3")]}
B = {0: [(6, "b0"), (7, "b1")], 1: [(6, "b2"), (7, "b3")]}
RANGES = {0: {tp_key("in", 0): [0, 3], tp_key("in", 1): [0, 3]}, 1: {tp_key("in", 0): [3, 9], tp_key("in", 1): [3, 9]}}


def spark_history(variant: str = "", sink: str = "transactional") -> History:
    h = History()
    h.init("prod", "tx-in")
    h.txn("prod", [("in", p, v, o) for p, recs in A.items() for o, v in recs])
    h.txn("prod", [("in", 0, "c0", None), ("in", 1, "c1", None)], outcome=FAIL)
    h.txn("prod", [("in", p, v, o) for p, recs in B.items() for o, v in recs])
    out: dict[int, list[tuple[int, str]]] = {0: [], 1: []}
    markers: list[tuple[int, str]] = []
    proc = "spark-job-0.0"
    h._add(process=proc, type="info", f=SPARK_START, value={"query": "spark-job-0", "incarnation": 0})
    for batch, data in ((0, A), (1, B)):
        ranges = dict(RANGES[batch])
        writer = proc
        if variant == "marker-gap" and batch == 1:
            ranges = {tp_key("in", 0): [4, 9], tp_key("in", 1): [3, 9]}  # does not start where batch 0 ended
        sends = []
        for p, recs in data.items():
            for o, v in recs:
                if variant == "missing-output" and v == "b3":
                    continue
                sends.append(("out", p, spark_value("in", p, o, batch, writer, v)))
                if variant == "duplicate-output" and v == "a1":
                    sends.append(("out", p, spark_value("in", p, o, batch, "spark-job-0.1", v)))
        if variant == "orphan-output" and batch == 1:
            sends.append(("out", 0, spark_value("in", 0, 3, batch, writer, "c0")))  # copied aborted input
        if variant == "outside-range" and batch == 0:
            sends.append(("out", 1, spark_value("in", 1, 7, batch, writer, "b3")))
        acked = []
        for t, p, v in sends:
            out[p].append((len(out[p]), v))
            acked.append((t, p, v, out[p][-1][0]))
        if sink == "transactional":
            markers.append((len(markers), marker_value("spark-job-0", batch, writer, ranges)))
            acked.append(("markers", 0, markers[-1][1], markers[-1][0]))
            if not (variant == "marker-gap" and batch == 0):
                h.txn(writer, acked, txn_id="eos-spark-spark-job-0")
            else:
                markers.pop()  # batch 0's marker missing: ids not contiguous from 0
            if variant == "batch-incarnations" and batch == 1:  # a second incarnation committed batch 1 too
                markers.append((len(markers), marker_value("spark-job-0", batch, "spark-job-0.2", ranges)))
                h.txn("spark-job-0.2", [("markers", 0, markers[-1][1], markers[-1][0])], txn_id="eos-spark-spark-job-0")
        h._add(process=proc, type="info", f=SPARK_BATCH,
               value={"query": "spark-job-0", "batch": batch, "ranges": ranges, "records": len(sends), "outcome": "ok", "ms": 40.0})
        h._add(process=proc, type="info", f=SPARK_PROGRESS, value={"batch": batch, "trigger_ms": 90, "rows": len(sends)})
        if batch == 0:
            h._add(process=proc, type="info", f=SPARK_FAULT, value={"window": "after-commit", "signal": "kill", "batch": 0})
            proc = "spark-job-0.1"
            h._add(process=proc, type="info", f=SPARK_START, value={"query": "spark-job-0", "incarnation": 1})
            if sink == "transactional":
                h._add(process=proc, type="info", f=SPARK_SKIP, value={"query": "spark-job-0", "batch": 0, "last_committed": 0})
            elif variant == "replayed":  # Spark's own sink writes the replayed batch again
                for p, recs in A.items():
                    for o, v in recs:
                        out[p].append((len(out[p]), spark_value("in", p, o, 0, proc, v)))
    h.scan({tp_key("in", p): A[p] + B[p] for p in (0, 1)}
           | {tp_key("out", p): out[p] for p in (0, 1)}
           | ({tp_key("markers", 0): markers} if sink == "transactional" else {}))
    return h


def spark_count(variant: str = "", sink: str = "transactional") -> tuple[int, dict]:
    v = check(spark_history(variant, sink).tables()).to_json()
    return v["checks"]["spark-exactly-once"]["count"], v


def test_the_clean_spark_history_is_valid() -> None:
    n, v = spark_count()
    assert n == 0 and "skipped" not in v["checks"]["spark-exactly-once"], v["checks"]["spark-exactly-once"]
    assert v["valid"] is True, {k: c for k, c in v["checks"].items() if c["count"]}
    assert v["stats"]["spark"] == {
        "driver_kills": 1, "driver_freezes": 0, "restarts": 1, "batches": 2, "replays_skipped": 1, "records": 8,
        "batch_ms": {"p50": 40.0, "p95": 40.0, "max": 40.0}, "trigger_ms": {"p50": 90.0, "p95": 90.0, "max": 90.0},
        "restart_to_first_batch_s": [0.0], "executor_kills": 0, "worker_kills": 0, "executor_kill_to_batch_s": []}


@pytest.mark.parametrize("variant", ["duplicate-output", "missing-output", "orphan-output", "outside-range",
                                     "marker-gap", "batch-incarnations"])
def test_each_spark_anomaly_fires(variant: str) -> None:
    n, v = spark_count(variant)
    kinds = {e["anomaly"] for e in v["checks"]["spark-exactly-once"]["examples"]}
    assert n > 0 and variant in kinds, v["checks"]["spark-exactly-once"]
    assert v["valid"] is False


def test_spark_own_sink_without_a_replay_is_clean_and_with_one_duplicates() -> None:
    n, v = spark_count(sink="builtin")
    assert n == 0, v["checks"]["spark-exactly-once"]
    assert v["valid"] is True, {k: c for k, c in v["checks"].items() if c["count"]}
    n, v = spark_count("replayed", sink="builtin")
    assert n == 4 and {e["anomaly"] for e in v["checks"]["spark-exactly-once"]["examples"]} == {"duplicate-output"}
    # Spark's own sink writes "out" without a recorded send: its values are not phantoms
    assert {k for k, c in v["checks"].items() if c["count"]} == {"spark-exactly-once"}, v["checks"]


def test_a_history_without_spark_skips_the_check() -> None:
    from tests.unit.histories import clean

    v = check(clean().tables()).to_json()
    assert v["checks"]["spark-exactly-once"]["skipped"] and "spark" not in v["stats"]
