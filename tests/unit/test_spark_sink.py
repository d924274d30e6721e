"""The executor-side sink (harness/sparkjob/sink.py): its skip / write / refuse decision on hand-written
marker states, and ``spark-exactly-once`` on hand-written histories of it (one transaction and
marker per batch and input partition, written by task attempts): each anomaly it adds fires alone,
and the clean twin (batch ids that skip, a range that starts past an aborted stretch) is silent."""

from __future__ import annotations

import pytest

from harness.checker import check
from harness.history.model import SPARK_BATCH, SPARK_START, marker_value, spark_value, tp_key
from harness.sparkjob.sink import Marker, SinkConflict, decide, marker_key, parse_partition_marker
from tests.unit.histories import History
from tests.unit.test_spark_check import A, B


@pytest.mark.parametrize(("last", "batch", "start", "expected"), [
    (None, 0, 0, "write"),                               # nothing committed yet
    (Marker(4, 10, 20, "q.0~t1"), 5, 20, "write"),        # continues the last marker
    (Marker(4, 10, 20, "q.0~t1"), 6, 26, "write"),        # 20..25 held no committed record: no marker
    (Marker(4, 10, 20, "q.0~t1"), 4, 10, "skip"),         # a replay of the committed batch (new driver, retry)
    (Marker(7, 30, 40, "q.1~t9"), 5, 20, "skip"),         # committed, and later batches after it
])
def test_the_sink_decides_from_the_last_committed_marker(last: Marker | None, batch: int, start: int, expected: str) -> None:
    assert decide(last, batch, start, start + 10) == expected


def test_a_range_that_overlaps_the_committed_one_is_refused() -> None:
    with pytest.raises(SinkConflict, match="offsets 15..19 would be written twice"):
        decide(Marker(4, 10, 20, "q.0~t1"), 5, 15, 30)


def test_a_partition_marker_round_trips() -> None:
    v = marker_value("spark-job-0", 3, "spark-job-0.1~t7", {"in-2": [5, 9]})
    assert parse_partition_marker(v) == ("in-2", Marker(3, 5, 9, "spark-job-0.1~t7"))
    assert marker_key("spark-job-0", "in-2") == "spark-job-0/in-2"


# Batches per input partition (see test_spark_check: offsets 3-5 of both are an aborted transaction
# and its marker): partition 0 in batches 0 [0, 3) and 1 [3, 9); partition 1 in batch 0 [0, 3), no
# committed record in batch 1 [3, 6) (no marker), then batch 2 [6, 9).
PLAN = {0: [(0, 0, 3, A[0]), (1, 3, 9, B[0])], 1: [(0, 0, 3, A[1]), (2, 6, 9, B[1])]}


def executor_history(variant: str = "") -> History:
    h = History()
    h.init("prod", "tx-in")
    h.txn("prod", [("in", p, v, o) for p, recs in A.items() for o, v in recs])
    h.txn("prod", [("in", 0, "c0", None), ("in", 1, "c1", None)], outcome="fail")
    h.txn("prod", [("in", p, v, o) for p, recs in B.items() for o, v in recs])
    driver = "spark-job-0.0"
    h._add(process=driver, type="info", f=SPARK_START, value={"query": "spark-job-0", "incarnation": 0, "sink": "executor"})
    out: dict[int, list[tuple[int, str]]] = {0: [], 1: []}
    markers: dict[int, list[tuple[int, str]]] = {0: [], 1: []}
    attempt = 0
    for p, batches in PLAN.items():
        tp = tp_key("in", p)
        for batch, start, end, recs in batches:
            attempt += 1
            task = f"{driver}~t{attempt}"
            if variant == "overlap" and (p, batch) == (0, 1):
                start = 2  # starts before batch 0 ended
            if variant == "uncovered-input" and (p, batch) == (0, 1):
                start, recs = 7, recs[1:]  # offset 6 (committed) is in no range, and has no output
            sends = [("out", p, spark_value("in", p, o, batch, task, v)) for o, v in recs]
            acked = []
            for t, q, v in sends:
                out[q].append((len(out[q]), v))
                acked.append((t, q, v, out[q][-1][0]))
            markers[p].append((len(markers[p]), marker_value("spark-job-0", batch, task, {tp: [start, end]})))
            acked.append(("markers", p, markers[p][-1][1], markers[p][-1][0]))
            h.txn(task, acked, txn_id=f"eos-spark-spark-job-0-{tp}")
            h._add(process=task, type="info", f=SPARK_BATCH, value={"query": "spark-job-0", "batch": batch, "partition": tp,
                   "ranges": {tp: [start, end]}, "records": len(recs), "outcome": "ok", "ms": 30.0})
            if variant == "batch-incarnations" and (p, batch) == (1, 2):  # a second attempt committed it too
                again = f"{driver}~t99"
                markers[p].append((len(markers[p]), marker_value("spark-job-0", batch, again, {tp: [start, end]})))
                h.txn(again, [("markers", p, markers[p][-1][1], markers[p][-1][0])], txn_id=f"eos-spark-spark-job-0-{tp}")
    h.scan({tp_key("in", p): A[p] + B[p] for p in (0, 1)}
           | {tp_key("out", p): out[p] for p in (0, 1)}
           | {tp_key("markers", p): markers[p] for p in (0, 1)})
    return h


def spark_check(variant: str = "") -> dict:
    return check(executor_history(variant).tables()).to_json()


def test_the_clean_executor_sink_history_is_valid() -> None:
    v = spark_check()
    assert v["checks"]["spark-exactly-once"]["count"] == 0, v["checks"]["spark-exactly-once"]
    assert v["valid"] is True, {k: c for k, c in v["checks"].items() if c["count"]}
    assert v["stats"]["spark"]["batches"] == 3 and v["stats"]["spark"]["records"] == 8


@pytest.mark.parametrize(("variant", "kind"), [("overlap", "marker-gap"), ("uncovered-input", "uncovered-input"),
                                               ("batch-incarnations", "batch-incarnations")])
def test_each_executor_sink_anomaly_fires_alone(variant: str, kind: str) -> None:
    v = spark_check(variant)
    found = v["checks"]["spark-exactly-once"]
    assert found["count"] == 1 and {e["anomaly"] for e in found["examples"]} == {kind}, found
    assert {k for k, c in v["checks"].items() if c["count"]} == {"spark-exactly-once"}, v["checks"]


def test_a_job_that_committed_nothing_is_checked_not_crashed() -> None:
    h = History()
    h.init("prod", "tx-in")
    h.txn("prod", [("in", p, v, o) for p, recs in A.items() for o, v in recs])
    h._add(process="spark-job-0.0", type="info", f=SPARK_START, value={"query": "spark-job-0", "incarnation": 0, "sink": "executor"})
    h.scan({tp_key("in", p): A[p] for p in (0, 1)})
    found = check(h.tables()).to_json()["checks"]["spark-exactly-once"]
    assert found == {"count": 0, "examples": []}, found
