"""The checker on hand-written histories: each anomaly fires on its own, its clean twin is silent,
and random histories of a correct Kafka pass."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.base.errors import ConfigError
from harness.checker import CHECKS, NEEDS_FINAL_READS, NO_FINAL_READS, NOTHING_COMMITTED, NOTHING_READ, check
from harness.checker.checks import NO_COPIER, NO_FAILED_WRITES, NO_POLLS, NO_SECOND_INSTANCE
from harness.checker.verdict import CheckResult, Verdict
from harness.history import store
from harness.history.model import FAIL, GROUP_OFFSETS, POLL, READ_COMMITTED, READ_UNCOMMITTED, SCAN, TXN, copy_value
from tests.unit.histories import History, clean, many_topics, simulate

#: the checks these histories exercise (spark-exactly-once has its own: test_spark_check.py; the
#: app's contract checks theirs: test_app_contracts.py, test_topology_contracts.py)
ANOMALIES = [name for name in CHECKS if name != "spark-exactly-once" and not name.startswith("app-")]


def counts(verdict: dict) -> dict[str, int]:
    return {name: c["count"] for name, c in verdict["checks"].items() if "skipped" not in c}


def test_the_clean_history_is_valid_and_every_check_is_reported() -> None:
    v = check(clean().tables()).to_json()
    assert list(v["checks"]) == list(CHECKS)
    assert v["checks"]["spark-exactly-once"]["skipped"] and "skipped" not in v["checks"]["lso-stall"]
    # no transactional.id has a second instance here: zombie-commit has nothing to look at (its
    # clean twin with one is "zombie-commit-clean")
    assert v["checks"]["zombie-commit"]["skipped"] == NO_SECOND_INSTANCE
    assert counts(v) == {name: 0 for name in ANOMALIES if name != "zombie-commit"}, v["checks"]
    assert v["valid"] is True and v["unknown_because"] == []
    s = v["stats"]
    assert s["txn"] == {"ok": 4, "fail": 1, "info": 1}
    assert s["info_resolved"] == {"committed": 1, "aborted": 0, "torn": 0}


#: checks that see the same fact as another one: a producer's later transaction landing below its
#: earlier one (nonmonotonic-send) is a cycle of the process order and a ww edge (g0's G0-process)
SAME_FACT = {"nonmonotonic-send": {"g0"}}


@pytest.mark.parametrize("anomaly", ANOMALIES)
def test_each_anomaly_fires_alone(anomaly: str) -> None:
    v = check(clean(anomaly).tables()).to_json()
    c = counts(v)
    assert c[anomaly] > 0, f"{anomaly} did not fire: {v['checks'][anomaly]}"
    assert {k: n for k, n in c.items() if k != anomaly and k not in SAME_FACT.get(anomaly, ()) and n} == {}, v["checks"]
    assert v["valid"] is False
    assert v["checks"][anomaly]["examples"], "an anomaly without an example cannot be found in the history"


def test_lso_stall_names_the_partition_and_a_history_without_measurement_says_it_was_skipped() -> None:
    ex = check(clean("lso-stall").tables()).to_json()["checks"]["lso-stall"]["examples"]
    assert ex == [{"partition": "t-1", "lagged_s": ">90.0", "bound_s": 90.0, "lso": None}]
    h = clean()
    h.ops = [o for o in h.ops if o["f"] != "lso"]
    c = check(h.tables()).to_json()["checks"]["lso-stall"]
    assert c["count"] == 0 and "no LSO measurement" in c["skipped"]


@pytest.mark.parametrize("stalled_at, lost", [(2, 0), (0, 0), (6, 1)])
def test_values_behind_a_stalled_lso_are_not_lost_but_the_stall_is_reported(stalled_at: int, lost: int) -> None:
    """t-1's LSO stuck at ``stalled_at`` (a hanging transaction): the final read_committed scan ends
    there. Committed values at or past it are unreadable, not lost; one before it missing is lost.
    d2 (info, seen by the reader at 6) counts where the reader saw it."""
    v = check(stalled(stalled_at).tables()).to_json()
    assert v["checks"]["lso-stall"]["count"] == 1 and v["checks"]["lso-stall"]["examples"][0]["lso"] == stalled_at
    assert v["checks"]["lost-write"]["count"] == lost, v["checks"]["lost-write"]


def test_a_value_a_reader_saw_committed_and_that_then_vanished_is_a_lost_write() -> None:
    # D's commit timed out (info); the reader's polls saw d1 and d2, so D committed: their absence
    # from the final scan is a loss. The clean twin is clean() itself: D seen, and still there.
    v = check(clean("lost-write-seen").tables()).to_json()
    assert counts(v) == {**{name: 0 for name in ANOMALIES if name != "zombie-commit"}, "lost-write": 2}, counts(v)
    assert sorted(e["value"] for e in v["checks"]["lost-write"]["examples"]) == ["d1", "d2"]
    assert v["stats"]["info_resolved"] == {"committed": 0, "aborted": 1, "torn": 0}
    assert check(clean().tables()).to_json()["checks"]["lost-write"]["count"] == 0


def test_zombie_commit_clean_twin_is_silent() -> None:
    v = check(clean("zombie-commit-clean").tables()).to_json()
    assert counts(v) == {name: 0 for name in ANOMALIES}, v["checks"]


def test_examples_name_ops_processes_and_offsets() -> None:
    ex = check(clean("aborted-read").tables()).to_json()["checks"]["aborted-read"]["examples"][0]
    assert ex["value"] == "c1" and ex["writer_process"] == "p1" and ex["reader"] == "r1"
    assert ex["topic"] == "t" and ex["partition"] == 0 and ex["offset"] == 4
    assert isinstance(ex["writer_op"], int) and isinstance(ex["read_op"], int)


def test_a_phantom_read_names_the_value_reader_op_and_position() -> None:
    c = check(clean("phantom-read").tables()).to_json()["checks"]["phantom-read"]
    assert c["count"] == 1 and len(c["examples"]) == 1
    ex = c["examples"][0]
    assert ex["value"] == "g1" and ex["reader"] == "r1" and isinstance(ex["read_op"], int)
    assert ex["position"] == {"topic": "t", "partition": 0, "offset": 9}


def test_phantom_read_counts_values_and_sees_the_final_scan_but_not_topics_no_recorded_send_wrote() -> None:
    h = clean("phantom-read")
    for o in h.ops:
        if o["f"] == "scan" and o["isolation"] == READ_COMMITTED:
            o["value"]["o-1"] = o["value"]["o-1"] + [(20, "g1"), (21, "g2")]  # g1 again, and a second phantom
            o["value"]["x-0"] = [(0, "unrecorded")]  # a topic only an unrecorded writer fills (Spark's own sink)
    c = check(h.tables()).to_json()["checks"]["phantom-read"]
    assert c["count"] == 2, c
    assert [(e["value"], e["reader"]) for e in c["examples"]] == [("g1", "r1"), ("g2", "final")]


def test_a_crashing_check_makes_the_verdict_unknown_not_false(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(t):  # type: ignore[no-untyped-def]
        raise KeyError("column")

    monkeypatch.setitem(CHECKS, "duplicate", boom)
    v = check(clean().tables()).to_json()
    assert v["valid"] == "unknown" and v["checks"]["duplicate"]["count"] is None
    assert "KeyError" in v["checks"]["duplicate"]["error"]


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), producers=st.integers(1, 4), txns=st.integers(0, 40),
       partitions=st.integers(1, 4), readers=st.integers(0, 3))
def test_random_histories_of_a_correct_kafka_pass(seed: int, producers: int, txns: int, partitions: int, readers: int) -> None:
    h = simulate(random.Random(seed), producers, txns, partitions, readers)
    v = check(h.tables()).to_json()
    assert not {k: c for k, c in v["checks"].items() if c["count"] != 0}
    if v["stats"]["committed_values"]:
        assert v["valid"] is True, v["unknown_because"]
    else:  # no transaction (txns=0), or none that committed: nothing to judge, not "valid"
        assert v["valid"] == "unknown" and NOTHING_COMMITTED in v["unknown_because"], v["unknown_because"]


def test_examples_name_positions_as_objects() -> None:
    ex = check(clean("duplicate").tables()).to_json()["checks"]["duplicate"]["examples"][0]
    assert ex["value"] == "a1" and ex["positions"] == [{"topic": "t", "partition": 0, "offset": 0},
                                                       {"topic": "t", "partition": 0, "offset": 8}]


def test_an_orphan_copy_names_its_output_and_the_input_it_claims_as_positions() -> None:
    h = clean()
    for o in h.ops:
        if o["f"] == "scan":
            o["value"]["o-0"] = o["value"]["o-0"] + [(9, copy_value("t", 0, 40, "zz", "copier-1.0-9"))]
    c = check(h.tables()).to_json()["checks"]["copy-exactly-once"]
    assert c["count"] == 1 and c["examples"] == [{"orphan_output": {"topic": "o", "partition": 0, "offset": 9},
                                                  "copies": {"topic": "t", "partition": 0, "offset": 40}}]


def test_a_verdict_round_trips_through_its_json() -> None:
    v = check(clean("duplicate").tables())
    assert isinstance(v, Verdict) and v.valid is False and v.engine == "default"
    assert list(v.to_json()) == ["format", "valid", "unknown_because", "checks", "stats", "history", "engine"]
    assert Verdict.from_json(json.loads(json.dumps(v.to_json()))) == v
    crashed = CheckResult(None, error="KeyError: 'x'", traceback="...")
    assert CheckResult.from_json(crashed.to_json()) == crashed and crashed.to_json()["count"] is None


def without_final_reads(h: History) -> History:
    """``h`` as its runner left it when it died before the final reads: no scans, no LSO
    measurement, no group offsets (the workloads' own ops are all there)."""
    h.ops = [o for o in h.ops if o["process"] != "final"]
    return h


def test_a_history_without_final_reads_is_unknown_and_its_lost_writes_are_not_judged() -> None:
    # the killed runner's case: every committed value "missing" from a scan that never happened
    v = check(without_final_reads(clean()).tables()).to_json()
    assert v["valid"] == "unknown" and NO_FINAL_READS in v["unknown_because"], v["unknown_because"]
    for name in NEEDS_FINAL_READS:
        assert v["checks"][name] == {"count": 0, "examples": [], "skipped": NO_FINAL_READS}, name
    # the checks that judge polls and acknowledgements still ran
    assert "skipped" not in v["checks"]["duplicate"] and "skipped" not in v["checks"]["nonmonotonic-poll"]


def test_a_finding_in_the_polls_stands_without_final_reads() -> None:
    v = check(without_final_reads(clean("aborted-read")).tables()).to_json()
    assert v["valid"] is False and v["checks"]["aborted-read"]["count"] == 1
    assert v["checks"]["lost-write"]["skipped"] == NO_FINAL_READS and NO_FINAL_READS in v["unknown_because"]


def test_a_final_scan_cut_off_mid_line_counts_as_no_final_reads(tmp_path: Path) -> None:
    ops = without_final_reads(clean()).ops
    lines = [json.dumps({**o, "index": i}) for i, o in enumerate(sorted(ops, key=lambda o: o["time"]))]
    scan = json.dumps({"time": 10**9, "process": "final", "type": "ok", "f": "scan", "isolation": READ_COMMITTED,
                       "value": {"t-0": [[0, "a1"]]}})
    (tmp_path / "history").mkdir()
    (tmp_path / "history" / "runner.jsonl").write_text("\n".join(lines) + "\n" + scan[: len(scan) // 2])
    ops_read, truncated = store.read_ops(tmp_path)
    v = check(store.flatten(ops_read, truncated)).to_json()
    assert truncated == ["runner.jsonl"] and v["valid"] == "unknown", v["unknown_because"]
    assert v["checks"]["lost-write"]["skipped"] == NO_FINAL_READS


def test_an_empty_history_is_unknown_and_every_check_says_why_it_looked_at_nothing() -> None:
    v = check(History().tables()).to_json()
    assert v["valid"] == "unknown"
    assert v["unknown_because"] == [NO_FINAL_READS, NOTHING_COMMITTED, NOTHING_READ]
    assert {name: bool(c.get("skipped")) for name, c in v["checks"].items()} == {name: True for name in CHECKS}


def test_a_history_where_nothing_committed_is_unknown_not_valid() -> None:
    h = History()
    h.init("p1", "tx-1")
    h.txn("p1", [("t", 0, "a1", None)], outcome=FAIL)
    h.poll("r1", {})
    h.scan({"t-0": []})
    h.scan({"t-0": [(0, "a1")]}, READ_UNCOMMITTED)
    v = check(h.tables()).to_json()
    assert v["valid"] == "unknown" and v["unknown_because"] == [NOTHING_COMMITTED], v["unknown_because"]
    assert all(not c["count"] for c in v["checks"].values())


@pytest.mark.parametrize(("variant", "check_name", "reason"), [
    ("no-polls", "nonmonotonic-poll", NO_POLLS), ("no-polls", "poll-skip", NO_POLLS),
    ("no-fail", "aborted-read", NO_FAILED_WRITES), ("no-copier", "copy-exactly-once", NO_COPIER),
])
def test_a_check_with_nothing_to_look_at_says_skipped_and_its_twin_looks(variant: str, check_name: str, reason: str) -> None:
    assert "skipped" not in check(clean().tables()).to_json()["checks"][check_name]
    v = check(nothing_for(variant).tables()).to_json()
    assert v["checks"][check_name] == {"count": 0, "examples": [], "skipped": reason}
    assert v["valid"] is True  # a skipped check is not a finding, and the rest judged the history


def nothing_for(variant: str) -> History:
    """``clean()`` without its polls, its aborted transaction, or its copier."""
    h = clean()
    drop = {"no-polls": lambda o: o["f"] == POLL,
            "no-fail": lambda o: o["f"] == TXN and o["process"] == "p1" and "c1" in json.dumps(o["value"]),
            "no-copier": lambda o: o["process"].startswith("copier") or o["f"] == GROUP_OFFSETS}[variant]
    h.ops = [o for o in h.ops if not drop(o)]
    if variant in ("no-fail", "no-copier"):  # the final scans keep what is left
        for o in h.ops:
            if o["f"] == SCAN:
                o["value"] = {k: [r for r in recs if not (variant == "no-fail" and r[1] in ("c1", "c2"))]
                              for k, recs in o["value"].items() if not (variant == "no-copier" and k.startswith("o-"))}
    return h


def stalled(stalled_at: int) -> History:
    """``clean("lso-stall")`` with t-1's LSO stuck at ``stalled_at`` and its final read_committed
    scan ending at offset 2 (with the LSO at 6, b2 at 2 is then really missing)."""
    h = clean("lso-stall")
    for o in h.ops:
        if o["f"] == "scan" and o["isolation"] == READ_COMMITTED:
            o["value"]["t-1"] = [r for r in o["value"]["t-1"] if r[0] < 2]
        if o["f"] == "lso":
            o["value"]["stalled_at"] = {"t-1": stalled_at}
    return h


def test_positions_of_300_topics_stay_apart() -> None:
    """A position is one int64 with the topic id in its top bits: with 7 of them (before), topic 128
    on turned negative and topic 256 landed on topic 0's positions (a false inconsistent-offsets)."""
    v = check(many_topics(300).tables())
    assert v.valid is True, {n: c.count for n, c in v.checks.items() if c.count}
    v = check(many_topics(300, duplicate_in_last=True).tables())
    dup = v.checks["duplicate"]
    assert (v.valid, dup.count) == (False, 1)
    assert {p["topic"] for p in dup.examples[0]["positions"]} == {"m299"}
    assert [n for n, c in v.checks.items() if c.count] == ["duplicate"]


@pytest.mark.parametrize(("topic", "partition", "offset", "says"), [
    ("t", 4096, 0, r"partition 4096 \(0..4095\)"),
    ("t", 0, 1 << 40, rf"offset {1 << 40} \(0..{(1 << 40) - 1}\)"),
])
def test_a_history_past_the_packed_positions_limits_is_refused(topic: str, partition: int, offset: int, says: str) -> None:
    h = History()
    h.txn("p1", [(topic, partition, "x", offset)])
    h.scan({f"{topic}-{partition}": [(offset, "x")]})
    with pytest.raises(ConfigError, match=says):
        check(h.tables())


def test_more_topics_than_the_packed_positions_hold_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"2049 topics \(at most 2048\)"):
        check(many_topics(2049).tables())
