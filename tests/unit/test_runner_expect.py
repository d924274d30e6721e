"""What a run expects of itself: incident replays must show their errors (``expect.errors``)."""

from __future__ import annotations

from typing import Any

from harness.history.model import Op
from harness.history.store import flatten
from harness.run.scenario import Expect, Scenario, Workload
from harness.run.verdict_file import as_expected


def test_errors_seen_counts_every_error_a_client_met_by_name() -> None:
    ops: list[dict[str, Any]] = [
        {"f": "txn", "type": "fail", "error": "aborted on purpose"},
        {"f": "txn", "type": "ok", "commit_retries": ["_TIMED_OUT: Timed out waiting for operation to finish"],
         "aborts_refused": ["_CONFLICT: Conflicting commit_transaction API call is already in progress"]},
        {"f": "txn", "type": "fail", "error": "_FENCED: Failed to end transaction", "abort_error": "_FENCED: fenced"},
        {"f": "poll", "type": "ok"},
    ]
    history = [Op.from_json({"time": i, "process": f"p{i}", **op}, index=i) for i, op in enumerate(ops)]
    assert flatten(history).meta["errors_seen"] == {"_CONFLICT": 1, "_FENCED": 2, "_TIMED_OUT": 1}


def test_an_error_a_fault_s_own_request_met_is_counted_under_the_fault_s_kind() -> None:
    # retry-rotation-after-failover: its retried InitProducerId was fenced; the producer the pump fenced
    # meets PRODUCER_FENCED of its own, which must not pass for the fault's finding
    ops: list[dict[str, Any]] = [
        {"process": "nemesis", "f": "fault", "type": "ok",
         "value": {"kind": "retry-rotation-after-failover", "phase": "stop", "errors_met": ["PRODUCER_FENCED"]}},
        {"process": "nemesis", "f": "fault", "type": "ok", "value": {"kind": "kill", "phase": "stop", "node": 2}},
        {"process": "p1", "f": "txn", "type": "fail", "error": "PRODUCER_FENCED: There is a newer producer"},
    ]
    history = [Op.from_json({"time": i, **op}, index=i) for i, op in enumerate(ops)]
    assert flatten(history).meta["errors_seen"] == {"PRODUCER_FENCED": 1, "retry-rotation-after-failover/PRODUCER_FENCED": 1}


def _verdict(seen: dict[str, int]) -> dict[str, Any]:
    return {"valid": True, "checks": {}, "stats": {"txn": {"ok": 50}, "fenced": 0, "errors_seen": seen},
            "run": {"healed": True, "nemesis_errors": []}}


def test_an_incident_replay_is_as_expected_only_if_its_errors_were_met() -> None:
    sc = Scenario(name="replay", description="-", workloads=[Workload(kind="txn-producer")],
                  expect=Expect(errors=["_TIMED_OUT", "_CONFLICT"]))
    assert as_expected(_verdict({"_TIMED_OUT": 3, "_CONFLICT": 1}), sc.expect) is True
    assert as_expected(_verdict({"_TIMED_OUT": 3}), sc.expect) is False, "the refused abort never happened"
    assert as_expected(_verdict({}), Expect()) is True


def test_names_joined_by_a_bar_need_one_of_them() -> None:
    # kafka-bug-20785: the late commit gets INVALID_TXN_STATE on transaction.version 2, PRODUCER_FENCED on 1
    late = Expect(errors=["INVALID_TXN_STATE|PRODUCER_FENCED"])
    assert as_expected(_verdict({"INVALID_TXN_STATE": 1}), late) is True
    assert as_expected(_verdict({"PRODUCER_FENCED": 2}), late) is True
    assert as_expected(_verdict({"INVALID_PRODUCER_EPOCH": 2}), late) is False, "neither: the hold hit nothing"
    assert as_expected(_verdict({}), late) is False
