"""Every fault proves it hit something (harness/history/hits.py): what was in flight on its target
while it was active, from hand-written histories and wire proxy logs; a fault that hit nothing is
listed as such, in the journal, the report and the run's summary."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson

from harness.cli.summary import verdict_details
from harness.history import store
from harness.history.builder import History
from harness.history.hits import Span, WireMatch, fault_hits, wire_matches
from harness.history.model import FAULT_START, INFO, OK, SPARK_BATCH
from harness.report import write_report
from harness.run import runner, verdict_file
from harness.rundir.journal import Journal, fault_runs, mostly_nothing
from harness.rundir.runfolder import RunFolder
from tests.unit.test_report import SECOND, make_run

MS = 1_000_000
#: the fault's window in these histories
LO, HI = 100 * MS, 200 * MS


def history(open_during: bool) -> History:
    """A producer's transactions on ``t``/0, and (``open_during``) one open through 100-200 ms; a
    copier's, done before it."""
    h = History()
    h.at(10 * MS).txn("txn-producer-0.0", [("t", 0, "a", 0)])
    h.at(20 * MS).txn("copier-0.0", [("o", 0, "copy/t/0/0/c/a", 0)])
    if open_during:
        h.at(150 * MS).txn("txn-producer-0.0", [("t", 0, "b", None)], outcome=INFO, took=100 * MS)
    h.at(300 * MS).txn("txn-producer-0.0", [("t", 0, "c", 1)])
    return h


def hit(h: History, detail: dict[str, Any], wire: list[WireMatch] | None = None, end: int | None = HI) -> dict[str, Any]:
    [one] = fault_hits(h.tables(), [Span(LO, end, detail)], wire)
    return one.to_json()


def test_a_broker_fault_over_an_open_transaction_hit_it_and_one_over_none_hit_nothing() -> None:
    got = hit(history(open_during=True), {"node": 2, "target": "leader", "of": None})
    assert got["hit"] and got["txns_open"] == 1 and got["workloads"] == ["txn-producer-0"], got
    assert got["aimed_at"] == "the cluster (every transaction)" and got["requests"] is None
    twin = hit(history(open_during=False), {"node": 2, "target": "leader", "of": None})
    assert not twin["hit"] and twin["txns_open"] == 0 and twin["workloads"] == [], twin


def test_an_open_transaction_counts_whenever_in_the_window_it_was_open() -> None:
    h = History()
    h.at(50 * MS).txn("txn-producer-0.0", [("t", 0, "a", 0)], took=60 * MS)  # open into the window's start
    h.at(190 * MS).txn("txn-producer-0.0", [("t", 0, "b", 1)], took=50 * MS)  # open at its end
    h.at(220 * MS).txn("txn-producer-0.0", [("t", 0, "c", 2)])  # after it
    assert hit(h, {"node": 1})["txns_open"] == 2
    never = History()
    never.at(20 * MS).txn("txn-producer-0.0", [("t", 0, "a", None)], outcome=INFO)
    never.ops.pop()  # its completion never came: open to the end
    assert hit(never, {"node": 1})["txns_open"] == 1
    assert hit(never, {"node": 1}, end=None)["txns_open"] == 1  # a fault never ended: on to the history's end


def test_a_workload_fault_counts_that_workload_s_transactions_only() -> None:
    h = history(open_during=True)
    assert not hit(h, {"workload": "copier-0"})["hit"]  # the producer's transaction is not the copier's
    got = hit(h, {"workload": "txn-producer-0"})
    assert got["hit"] and got["aimed_at"] == "workload txn-producer-0"
    assert hit(h, {"workload": "txn-producer"})["txns_open"] == 1  # a kind: every process of it


def test_a_leader_fault_counts_the_transactions_of_its_partition_and_a_coordinator_fault_of_its_id() -> None:
    h = History()
    h.at(150 * MS).txn("txn-producer-0.0", [("t.x", 1, "a", 0)], txn_id="eos-txn-producer-0", took=20 * MS)
    idle = hit(h, {"target": "leader", "of": "t.x/0", "node": 1})
    assert not idle["hit"] and idle["aimed_at"] == "partition t.x/0 (its leader)", idle
    assert hit(h, {"target": "leader", "of": "t.x/1", "node": 1})["txns_open"] == 1
    assert hit(h, {"target": "coordinator", "of": "eos-txn-producer-0", "node": 1})["hit"]
    assert hit(h, {"target": "coordinator", "of": "eos-txn-*", "node": 1})["hit"]
    assert not hit(h, {"target": "coordinator", "of": "eos-copier-0", "node": 1})["hit"]


def test_micro_batches_running_in_the_window_count() -> None:
    h = History()
    h.at(5 * MS).event("spark-job-0.0", "spark-start", {"query": "spark-job-0", "incarnation": 0})
    h.at(250 * MS).event("spark-job-0.0", SPARK_BATCH, {"query": "spark-job-0", "batch": 1, "outcome": OK, "ms": 100,
                                                         "ranges": {"in-0": [0, 5]}})
    h.at(400 * MS).event("spark-job-0.0", SPARK_BATCH, {"query": "spark-job-0", "batch": 2, "outcome": OK, "ms": 100,
                                                         "ranges": {"in-1": [0, 5]}})
    got = hit(h, {"kind": "kill-executor", "workload": "spark-job", "window": "any"})
    assert got["hit"] and got["batches_running"] == 1 and got["txns_open"] == 0
    assert hit(h, {"target": "leader", "of": "in/0"})["batches_running"] == 1
    assert not hit(h, {"target": "leader", "of": "in/1"})["hit"]  # batch 2 reads it, after the fault
    assert not hit(h, {"workload": "copier-0"})["hit"]


def test_a_wire_fault_hit_what_its_rule_caught_on_its_links_in_its_window() -> None:
    h = history(open_during=True)
    fault = {"kind": "hold-requests", "links": ["client-to-n2"], "api": ["EndTxn"], "target": "coordinator"}
    caught = [WireMatch(150 * MS, "client-to-n2", "hold"), WireMatch(160 * MS, "client-to-n2", "hold")]
    got = hit(h, fault, caught)
    assert got["hit"] and got["requests"] == {"hold": 2} and got["aimed_at"] == "EndTxn requests on client-to-n2", got
    elsewhere = [WireMatch(150 * MS, "client-to-n1", "hold"), WireMatch(250 * MS, "client-to-n2", "hold")]
    missed = hit(h, fault, elsewhere)
    assert not missed["hit"] and missed["requests"] == {} and missed["txns_open"] == 1  # open, but not caught
    assert hit(h, fault, None)["requests"] is None  # no log: judged by what was open


def test_wire_matches_are_placed_on_the_history_s_clock() -> None:
    zero = 1_700_000_000.0  # the wall-clock time of the history's zero
    events = [{"event": "match", "unix_us": int((zero + 1.5) * 1e6), "link": "client-to-n2", "action": "hold"},
              {"event": "deliver", "unix_us": int((zero + 2) * 1e6), "conn": 3},
              {"event": "rule-added", "unix_us": int(zero * 1e6), "id": 1}]
    [m] = wire_matches(events, zero)
    assert (m.link, m.action) == ("client-to-n2", "hold") and abs(m.t - 1.5 * SECOND) < 1000


def test_the_journal_the_report_and_the_summary_list_faults_that_hit_nothing(tmp_path: Path) -> None:
    # make_run's history is done in milliseconds; its faults come seconds later: they hit nothing
    # but the hold-requests that caught a request on its link
    wire_fault = (8, {"kind": "hold-requests", "phase": FAULT_START, "links": ["client-to-n1"], "api": ["EndTxn"],
                      "target": "coordinator", "of": None, "waited_s": 0.0})
    faults = [(2, {"kind": "kill", "phase": "start", "node": 2, "target": "leader", "of": None}),
              (6, {"kind": "kill", "phase": "stop", "node": 2}),
              (7, {"kind": "pause-workload", "phase": "start", "workload": "txn-producer-0", "waited_s": 120.0,
                   "wait_expired": True}),
              wire_fault, (9, {"kind": "hold-requests", "phase": "stop", "links": ["client-to-n1"]})]
    run_dir = make_run(tmp_path, "", "hits", faults=faults)
    folder = RunFolder(run_dir)
    journal = Journal.load(folder)
    assert journal is not None
    zero = 1_700_000_000.0
    journal.history_zero_unix_s = zero
    journal.faults = fault_runs(store.fault_events(store.load(run_dir).faults), journal.schedule)  # as a run leaves them
    (run_dir / "wire-events.jsonl").write_bytes(orjson.dumps(
        {"event": "match", "unix_us": int((zero + 8.5) * 1e6), "link": "client-to-n1", "action": "hold"}) + b"\n")
    journal.save(folder)
    v = runner.rerun_check(run_dir)
    again = Journal.load(folder)
    assert again is not None
    hits = [f.hit for f in again.faults]
    assert [h.hit for h in hits if h] == [False, False, True], hits
    assert hits[2] is not None and hits[2].requests == {"hold": 1} and again.faults[1].wait_expired
    assert v.to_json()["run"]["faults_hit"] == {"faults": 3, "hit_nothing": 2, "began_without_progress": 1}
    assert mostly_nothing(v.to_json()["run"]["faults_hit"])
    assert any("most faults hit nothing:[/] 2 of 3" in line for line in verdict_details(v))
    page = (run_dir / "report.html").read_text()
    assert "Most faults hit nothing: 2 of 3" in page and "requests: hold 1" in page and "hit-nothing" in page
    assert "120.0 (no progress)" in page
    # the verdict's facts say it once more
    assert json.loads(folder.verdict.read_text())["run"]["faults_hit"]["hit_nothing"] == 2
    assert verdict_file.load(folder) is not None and write_report(run_dir).exists()


def test_an_app_s_kill_hit_a_transaction_when_its_coordinators_listed_one_open() -> None:
    """An app's transactions are not in the history (a black box): a kill of it hit one when, as it
    landed, every transactional.id of the app's had a transaction open (the kill's ``in_transaction``
    wait), or when its stop record lists one it left open. Every app kill used to hit nothing (the
    word count's run: "faults that hit nothing (1 of 2): kill-workload")."""
    h = history(open_during=False)
    every = {"workload": "app-0", "in_transaction": {"open": ["app.x-1", "app.y-1"], "known": ["app.x-1", "app.y-1"]}}
    got = hit(h, every)
    assert got["hit"] and got["txns_open"] == 1 and got["txns_open_at_start"] == 1 and got["workloads"] == ["app-0"], got
    assert hit(h, {"workload": "app-0", "left_open": ["app.x-1"]})["hit"]
    # its twins: the wait ran out with another instance's open only, or nothing open, nothing left
    assert not hit(h, {"workload": "app-0", "in_transaction": {"open": ["app.y-1"], "known": ["app.x-1", "app.y-1"]}})["hit"]
    assert not hit(h, {"workload": "app-0", "in_transaction": {"open": [], "known": []}, "left_open": []})["hit"]
    assert not hit(h, {"node": 1, "left_open": ["app.x-1"]})["txns_open"], "a broker fault: the history's only"


def test_an_app_kill_s_stop_record_of_what_it_left_open_reaches_the_journal() -> None:
    events = [{"time": 1 * SECOND, "value": {"kind": "kill-workload", "phase": "start", "workload": "app-0"}},
              {"time": 3 * SECOND, "value": {"kind": "kill-workload", "phase": "stop", "workload": "app-0",
                                             "open_transactions": ["app.x-1"]}}]
    [run] = fault_runs(events, [{"kind": "kill-workload", "at": 1}])
    assert run.end_s == 3 and run.detail == {"workload": "app-0", "left_open": ["app.x-1"]}, run
