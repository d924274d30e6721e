"""One recorded transaction through the ``Client`` protocol, with a scripted client: the history
lines it writes for a commit, a purposeful abort, and each kind of failure (the shapes the checker
reads), and when the producer retires."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.history.recorder import Recorder
from harness.workloads.client import ClientError, ErrorFacts, OnOffset
from harness.workloads.common import Retired, Txn, transaction

TIMEOUT = ErrorFacts("_TIMED_OUT", "Timed out", retriable=True, timed_out=True)
FENCE = ErrorFacts("_FENCED", "fenced", fatal=True, fenced=True)
TRANSPORT = ErrorFacts("_TRANSPORT", "Broker transport failure", retriable=True)
SENDS = [("t", 0, "v-0"), ("t", 1, "v-1")]


class ScriptedClient:
    """A ``Client`` whose calls fail as scripted: call name -> errors raised by its next calls."""

    def __init__(self, **fails: list[ErrorFacts]) -> None:
        self.fails = fails
        self.calls: list[str] = []
        self._pending: list[tuple[bytes, OnOffset]] = []
        self._offset = 0

    def _call(self, name: str) -> None:
        self.calls.append(name)
        if self.fails.get(name):
            raise ClientError(self.fails[name].pop(0))

    def init(self, timeout_s: float) -> None:
        self._call("init")

    def begin(self) -> None:
        self._call("begin")

    def send(self, topic: str, partition: int, value: bytes, key: bytes | None, on_offset: OnOffset) -> None:
        self._call("send")
        self._pending.append((value, on_offset))

    def flush(self, timeout_s: float) -> None:
        self._call("flush")
        for value, on_offset in self._pending:
            on_offset(value, self._offset)
            self._offset += 2
        self._pending.clear()

    def send_offsets(self, offsets: dict[tuple[str, int], int], group_metadata: object, timeout_s: float) -> None:
        self._call("send_offsets")

    def commit(self, timeout_s: float) -> None:
        self._call("commit")

    def abort(self, timeout_s: float) -> None:
        self._call("abort")

    def close(self) -> None:
        self.calls.append("close")


def run(tmp_path: Path, client: ScriptedClient, **kw: Any) -> tuple[str | None, list[dict[str, Any]]]:
    """The transaction's return (None: it retired) and the history lines it wrote (no times)."""
    outcome: str | None = None
    with Recorder(tmp_path, "p") as rec:
        try:
            outcome = transaction(rec, "p.0", client, Txn("tx", SENDS, **kw))
        except Retired:
            pass
    lines = [json.loads(line) for line in (tmp_path / "history" / "p.jsonl").read_text().splitlines()]
    for op in lines:
        op.pop("time")
        if op.get("commit_at") is not None:
            op["commit_at"] = "T"
    return outcome, lines


INVOKE = {"process": "p.0", "type": "invoke", "f": "txn", "value": [["send", "t", 0, "v-0"], ["send", "t", 1, "v-1"]],
          "txn_id": "tx"}


def test_a_commit_records_the_offsets_kafka_returned(tmp_path: Path) -> None:
    outcome, lines = run(tmp_path, ScriptedClient())
    assert outcome == "ok"
    assert lines == [INVOKE, {"process": "p.0", "type": "ok", "f": "txn", "value": [["send", "t", 0, "v-0", 0],
                                                                                    ["send", "t", 1, "v-1", 2]],
                              "txn_id": "tx", "commit_at": "T"}]


def test_an_abort_on_purpose_writes_the_records_first_and_is_a_fail(tmp_path: Path) -> None:
    client = ScriptedClient()
    outcome, lines = run(tmp_path, client, abort=True)
    assert outcome == "fail" and client.calls[-2:] == ["flush", "abort"]
    assert lines[1] == {"process": "p.0", "type": "fail", "f": "txn", "value": None, "error": "aborted on purpose",
                        "txn_id": "tx"}


def test_an_error_before_commit_then_an_abort_is_a_fail_and_the_producer_goes_on(tmp_path: Path) -> None:
    outcome, lines = run(tmp_path, ScriptedClient(flush=[TRANSPORT]))
    assert outcome == "fail"
    assert lines[1] == {"process": "p.0", "type": "fail", "f": "txn", "value": None,
                        "error": "_TRANSPORT: Broker transport failure", "txn_id": "tx", "commit_at": None}


def test_a_refused_abort_before_commit_is_a_fail_and_retires_with_the_abort_error(tmp_path: Path) -> None:
    outcome, lines = run(tmp_path, ScriptedClient(flush=[TRANSPORT], abort=[TRANSPORT]))
    assert outcome is None
    assert lines[1]["type"] == "fail" and lines[1]["abort_error"] == "_TRANSPORT: Broker transport failure"


def test_a_fence_during_commit_is_info_and_records_the_fence(tmp_path: Path) -> None:
    client = ScriptedClient(commit=[FENCE])
    outcome, lines = run(tmp_path, client)
    assert outcome is None and "abort" not in client.calls
    assert lines[1] == {"process": "p.0", "type": "info", "f": "txn", "value": None, "error": "_FENCED: fenced",
                        "txn_id": "tx", "commit_at": "T"}
    assert lines[2] == {"process": "p.0", "type": "info", "f": "fenced", "value": "_FENCED: fenced"}


def test_a_sole_writer_fenced_during_commit_records_a_fail(tmp_path: Path) -> None:
    _, lines = run(tmp_path, ScriptedClient(commit=[FENCE]), sole_writer=True)
    assert lines[1]["type"] == "fail" and lines[2]["f"] == "fenced"


def test_retried_commits_and_refused_aborts_are_recorded_with_the_ok(tmp_path: Path) -> None:
    refused = ErrorFacts("_CONFLICT", "Conflicting commit_transaction API call is already in progress")
    client = ScriptedClient(commit=[TIMEOUT, TIMEOUT], abort=[refused, refused])
    outcome, lines = run(tmp_path, client, abort_after_commit_timeout=True)
    assert outcome == "ok" and client.calls.count("commit") == 3
    assert lines[1]["commit_retries"] == ["_TIMED_OUT: Timed out"] * 2
    assert lines[1]["aborts_refused"] == [refused.describe()] * 2


def test_recreate_on_indefinite_retires_after_a_commit_retried_to_success(tmp_path: Path) -> None:
    client = ScriptedClient(commit=[TIMEOUT])
    outcome, lines = run(tmp_path, client, recreate_on_indefinite=True)
    assert outcome is None and client.calls.count("commit") == 2  # committed, then retired
    assert lines[1]["type"] == "ok" and lines[1]["commit_retries"] == ["_TIMED_OUT: Timed out"]
    assert lines[2] == {"process": "p.0", "type": "info", "f": "recreated",
                        "value": "a call timed out (_TIMED_OUT: Timed out)"}


def test_recreate_on_indefinite_records_why_an_unknown_commit_retired(tmp_path: Path) -> None:
    fatal_timeout = ErrorFacts("_TIMED_OUT", "Timed out", timed_out=True)  # not retriable: info at once
    _, lines = run(tmp_path, ScriptedClient(commit=[fatal_timeout]), recreate_on_indefinite=True)
    assert lines[1]["type"] == "info"
    assert lines[2] == {"process": "p.0", "type": "info", "f": "recreated", "value": "the transaction's outcome is unknown"}


def test_a_clean_commit_keeps_the_producer_with_the_setting(tmp_path: Path) -> None:
    outcome, lines = run(tmp_path, ScriptedClient(), recreate_on_indefinite=True)
    assert outcome == "ok" and [op["f"] for op in lines] == ["txn", "txn"]


def test_without_the_setting_a_commit_retried_to_success_keeps_the_producer(tmp_path: Path) -> None:
    outcome, lines = run(tmp_path, ScriptedClient(commit=[TIMEOUT]))
    assert outcome == "ok" and [op["f"] for op in lines] == ["txn", "txn"]


def test_an_abort_that_timed_out_is_indefinite_too(tmp_path: Path) -> None:
    _, lines = run(tmp_path, ScriptedClient(flush=[TRANSPORT], abort=[TIMEOUT]), recreate_on_indefinite=True)
    assert lines[1]["type"] == "fail" and lines[2]["f"] == "recreated", lines
    assert lines[2]["value"] == "a call timed out (_TIMED_OUT: Timed out)"


def test_a_fenced_producer_records_its_fence_not_a_recreation(tmp_path: Path) -> None:
    _, lines = run(tmp_path, ScriptedClient(commit=[FENCE]), recreate_on_indefinite=True)
    assert [op["f"] for op in lines[2:]] == ["fenced"]


@pytest.mark.parametrize("facts", [ErrorFacts("INVALID_TXN_STATE", "abortable", txn_requires_abort=True)])
def test_an_abortable_commit_error_is_aborted_and_a_fail(tmp_path: Path, facts: ErrorFacts) -> None:
    client = ScriptedClient(commit=[facts])
    outcome, lines = run(tmp_path, client)
    assert outcome == "fail" and client.calls[-1] == "abort"
    assert lines[1]["type"] == "fail" and lines[1]["commit_at"] == "T"


def test_a_failing_before_commit_callback_is_classified_like_the_transaction(tmp_path: Path) -> None:
    def send_offsets() -> dict[str, Any]:
        raise ClientError(TRANSPORT)

    outcome, lines = run(tmp_path, ScriptedClient(), before_commit=send_offsets)
    assert outcome == "fail" and lines[1]["error"] == "_TRANSPORT: Broker transport failure"


class Group:
    """A ``GroupReader`` that only knows its positions (partition t-1 has none yet)."""

    def positions(self) -> dict[tuple[str, int], int]:
        return {("t", 0): 5, ("t", 1): -1001}

    def group_metadata(self) -> object:
        return "generation-3"


def test_the_copier_commits_every_position_and_records_the_valid_ones(tmp_path: Path) -> None:
    from harness.workloads.copier import send_offsets

    sent: list[tuple[object, ...]] = []

    class Recording(ScriptedClient):
        def send_offsets(self, offsets: dict[tuple[str, int], int], group_metadata: object, timeout_s: float) -> None:
            sent.append((offsets, group_metadata))

    client = Recording()
    outcome, lines = run(tmp_path, client, before_commit=lambda: send_offsets(Group(), client))  # type: ignore[arg-type]
    assert outcome == "ok" and sent == [({("t", 0): 5, ("t", 1): -1001}, "generation-3")]
    assert lines[1]["offsets"] == {"t-0": 5}
