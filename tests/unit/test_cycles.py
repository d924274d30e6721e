"""``g0`` and ``g1c`` (docs/CYCLES.md): each variant fires alone on its hand-written history and
names its cycle; each clean twin is silent, among them the cycles Elle would report that a correct
Kafka makes (interleaved writes, a long transaction around two short ones)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.checker import check
from harness.checker.copies import copy_input
from harness.history.builder import History
from tests.unit.cycle_histories import CASES, copier_realtime, g0_realtime


def fired(h: History) -> tuple[dict[str, int], dict[str, Any]]:
    v = check(h.tables()).to_json()
    assert not [n for n, c in v["checks"].items() if "error" in c], v["checks"]
    return {n: c["count"] for n, c in v["checks"].items() if c["count"]}, v["checks"]


@pytest.mark.parametrize("name", list(CASES))
def test_each_cycle_fires_alone_and_each_twin_is_silent(name: str) -> None:
    h, check_name, anomaly = CASES[name]
    counts, checks = fired(h)
    if check_name is None:
        assert counts == {}, checks
        return
    assert counts == {check_name: 1}, checks
    (example,) = checks[check_name]["examples"]
    assert example["anomaly"] == anomaly, example


def test_a_g0_names_both_transactions_the_time_edge_and_the_records() -> None:
    _, checks = fired(g0_realtime())
    (ex,) = checks["g0"]["examples"]
    assert ex["processes"] == ["p1", "p2"] and len(ex["ops"]) == 2
    rt, ww = ex["steps"]
    assert rt["kind"] == "realtime" and rt["from"] == ex["ops"][0] and rt["to"] == ex["ops"][1]
    assert rt["completed"] < rt["invoked"]
    assert ww == {"kind": "ww", "from": ex["ops"][1], "to": ex["ops"][0],
                  "earlier": {"topic": "t", "partition": 0, "offset": 0}, "later": {"topic": "t", "partition": 0, "offset": 1}}


def test_a_g1c_names_the_read_the_late_transaction_and_where_it_landed() -> None:
    _, checks = fired(copier_realtime())
    (ex,) = checks["g1c"]["examples"]
    assert ex["processes"] == ["p1", "copier", "p2"]
    wr, rt, ww = ex["steps"]
    assert wr["kind"] == "wr" and wr["value"] == "h1" and wr["position"] == {"topic": "t", "partition": 0, "offset": 0}
    assert rt["kind"] == "realtime" and rt["read_by"] < rt["invoked"]
    assert ww["earlier"] == {"topic": "t", "partition": 1, "offset": 0} and ww["later"]["offset"] == 1


def polled_open_transaction() -> History:
    """A reader polls h1 while p1's H is open; p2's K, invoked after the poll, lands before H's h2."""
    h = History()
    hs: list[tuple[str, int, str, int | None]] = [("t", 0, "h1", 0), ("t", 1, "h2", 1)]
    h.begin("p1", hs)
    h.poll("r1", {"t-0": [(0, "h1")]})
    h.txn("p2", [("t", 1, "k", 0)])
    h.end("p1", hs)
    h.scan({"t-0": [(0, "h1")], "t-1": [(0, "k"), (1, "h2")]})
    return h


def test_a_reader_that_polled_an_open_transaction_is_a_g1c_too() -> None:
    """A poll is a read-only transaction: H -wr-> the poll -realtime-> K -ww-> H (precommitted-read
    sees the same poll: it came before H's commit)."""
    counts, checks = fired(polled_open_transaction())
    assert counts == {"g1c": 1, "precommitted-read": 1}, checks
    assert checks["g1c"]["examples"][0]["processes"] == ["p1", "r1", "p2"]


def test_a_value_copied_twice_by_one_transaction_counts_once_and_a_later_duplicate_is_not_in_the_order() -> None:
    """One count per (writer, reader) pair; a value's place is its first offset (Jepsen's), so a
    duplicate of it further on says nothing of its transaction's time (duplicate's finding)."""
    h = History()
    h.txn("p1", [("t", 0, "a", 0)])
    h.txn("p2", [("t", 0, "b", 1)])
    h.scan({"t-0": [(0, "a"), (1, "b"), (2, "a")]})
    counts, _ = fired(h)
    assert counts == {"duplicate": 1}


def test_a_history_without_reads_or_ok_transactions_says_what_was_missing() -> None:
    h = History()
    h.txn("p1", [("t", 0, "a", None)], outcome="info")
    h.scan({"t-0": [(0, "a")]})
    _, checks = fired(h)
    assert checks["g0"]["skipped"].startswith("no transaction completed ok")
    assert checks["g1c"]["skipped"].startswith("no poll and no copier read")


def test_copy_values_are_parsed_and_others_dropped() -> None:
    import pandas as pd

    got = copy_input(pd.Series(["not a copy", "copy/in-1/2/30/c.0-1/v/with/slashes", "copy/x/y/z/a/b", "copy/short"],
                               dtype="str"))
    assert got.at.tolist() == [1] and got.topic.to_pylist() == ["in-1"] and got.value.to_pylist() == ["v/with/slashes"]
    assert got.partition.tolist() == [2] and got.offset.tolist() == [30]


def test_a_copy_whose_partition_or_offset_is_not_ascii_digits_is_dropped_not_a_crash() -> None:
    # ARABIC-INDIC DIGIT ONE is a digit to utf8_is_digit, yet Arrow's cast refused it (g1c raised)
    got = copy_input(["copy/x/\u0661/2/a/b", "copy/x/1/\u0662/a/b", "copy/x/1/2\n/a/b", "copy/x/1/-2/a/b",
                      "copy/x/1/9223372036854775808/a/b", "copy/x/1/2/a/b"])
    assert got.at.tolist() == [5] and got.partition.tolist() == [1] and got.offset.tolist() == [2]
