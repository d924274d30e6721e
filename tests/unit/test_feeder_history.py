"""What the history holds of an app feeder's shaped input (docs/APPS.md, "The feeder"): the
``payloads`` table through the Parquet store (and a folder of the layout before it still read), the
records a user's function gets (``input_records``), the readers taking the id header as the value,
and the checks of the feeder's own topics judging by ids while every payload is the same word."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from harness.checker import check
from harness.history import store
from harness.history.app_inputs import input_records, user_record
from harness.history.app_values import decoded, recorded, wire
from harness.history.builder import History
from harness.history.model import FAIL, FEEDER_ID_HEADER, READ_UNCOMMITTED, tp_key
from harness.history.recorder import HISTORY_DIR
from harness.history.schema import AppContract
from harness.kafka.reads import value_of
from harness.workloads.clients.kafka_python import _value_or_id

WORD = "hello"


def repeated(variant: str = "") -> History:
    """A feeder writing the same payload ``hello`` (key k0 to ``in``-0, k1 to ``in``-1) as ids f1..f6:
    T1 and T2 committed, T3 aborted; final scans of ``in`` (ids, as the readers record them); an
    identity app copying each committed input to ``out``. A variant adds one finding: ``lost-write``
    (f3 gone from the committed scan), ``aborted-read`` (f5 in it), ``duplicate`` (f1 twice),
    ``missing`` (an app output less)."""
    h = History()
    h.init("app-feeder.0", "eos-app-feeder-0")
    rec = [(WORD, 1000, None), (WORD, 1001, [("h", "v")])]
    h.txn("app-feeder.0", [("in", 0, "f1", 0), ("in", 1, "f2", 0)], keys=["k0", "k1"], records=rec)
    h.txn("app-feeder.0", [("in", 0, "f3", 2), ("in", 1, "f4", 2)], keys=["k0", "k1"], records=rec)
    h.txn("app-feeder.0", [("in", 0, "f5", None), ("in", 1, "f6", None)], outcome=FAIL, keys=["k0", "k1"], records=rec)
    committed = {0: [(0, "f1"), (2, "f3")], 1: [(0, "f2"), (2, "f4")]}
    if variant == "lost-write":
        committed[0] = [(0, "f1")]
    if variant == "aborted-read":
        committed[0] = [*committed[0], (4, "f5")]
    if variant == "duplicate":
        committed[1] = [*committed[1], (6, "f1")]
    h.scan({tp_key("in", p): recs for p, recs in committed.items()})
    h.scan({tp_key("in", 0): [(0, "f1"), (2, "f3"), (4, "f5")], tp_key("in", 1): [(0, "f2"), (2, "f4"), (4, "f6")]},
           READ_UNCOMMITTED)
    h.app_contract("app", "map", ["in"], ["out"], function="identity", order="none", formats={"in": "text"})
    out = [(0, WORD, "k0"), (2, WORD, "k0")] + ([] if variant == "missing" else [(4, WORD, "k1")]) + [(6, WORD, "k1")]
    h.app_scan("app", {tp_key("out", 0): out})
    h.app_scan("app", {tp_key("out", 0): out}, READ_UNCOMMITTED)
    return h


def _counts(h: History) -> dict[str, int]:
    checks = check(h.tables()).to_json()["checks"]
    return {name: checks[name]["count"] for name in ("lost-write", "aborted-read", "duplicate", "app-map")}


@pytest.mark.parametrize("variant, fires", [("lost-write", "lost-write"), ("aborted-read", "aborted-read"),
                                            ("duplicate", "duplicate"), ("missing", "app-map")])
def test_the_feeders_checks_judge_by_ids_while_every_payload_is_the_same(variant: str, fires: str) -> None:
    assert _counts(repeated()) == {"lost-write": 0, "aborted-read": 0, "duplicate": 0, "app-map": 0}  # the clean twin
    found = _counts(repeated(variant))
    assert found == {**dict.fromkeys(found, 0), fires: 1}, found


def test_the_payloads_survive_the_parquet_store_and_the_layout_before_still_loads(tmp_path: Path) -> None:
    t = repeated().tables()
    run = tmp_path / "run"
    (run / HISTORY_DIR).mkdir(parents=True)
    store.save(t, run)
    loaded = store.load(run)
    assert loaded.payloads.astype(object).where(loaded.payloads.notna(), None).to_dict("records") == \
        t.payloads.astype(object).where(t.payloads.notna(), None).to_dict("records")
    assert loaded.payloads["timestamp"].tolist() == [1000, 1001] * 3
    assert json.loads(loaded.payloads["headers"].iloc[1]) == [["h", "v"]]
    # a layout-4 folder (no payloads table) whose JSON lines are gone is read as it is
    old = tmp_path / "old"
    shutil.copytree(run, old)
    (old / store.PARQUET_DIR / "payloads.parquet").unlink()
    meta = old / store.PARQUET_DIR / store.META_FILE
    meta.write_text(json.dumps({**json.loads(meta.read_text()), "layout": 4}))
    shutil.rmtree(old / HISTORY_DIR)
    assert store.stale_because(old) is None
    got = store.load(old)
    assert len(got.payloads) == 0 and len(got.writes) == len(t.writes)


def test_input_records_are_the_records_the_app_read_decoded_in_partition_offset_order() -> None:
    h = History()
    h.app_contract("app", "map", ["in"], ["out"], function="identity", order="none", formats={"in": "json"})
    h.txn("app-feeder.0", [("in", 1, "f1", 0), ("in", 0, "f2", 0)], keys=[recorded("json", {"id": 1}), None],
          records=[(recorded("json", {"n": 1}), 5, [("h", "v")]), (None, 6, None)])
    h.txn("app-feeder.0", [("in", 0, "f3", None)], outcome=FAIL, records=[(recorded("json", [1, 2]), 7, None)])
    t = h.tables()
    app = AppContract.model_validate(t.meta["apps"][0])
    got = input_records(t, app, names={"in": "my-in"})
    assert [(r["id"], r["committed"]) for r in got] == [("f2", True), ("f3", False), ("f1", True)]
    assert user_record(got[2]) == {"topic": "my-in", "partition": 1, "offset": 0, "key": {"id": 1},
                                   "value": {"n": 1}, "timestamp": 5, "headers": {"h": "v"}}
    assert got[0]["value"] is None and got[1]["offset"] is None


@pytest.mark.parametrize("fmt, value, text, raw", [
    ("text", "a b", "a b", b"a b"), ("json", {"k": [1, "é"]}, '{"k":[1,"é"]}', '{"k":[1,"é"]}'.encode()),
    ("bytes", b"\xff\x00", "/wA=", b"\xff\x00"), ("json", None, None, None),
])
def test_a_payload_is_recorded_and_decoded_back_as_sent(fmt: str, value: Any, text: str | None, raw: bytes | None) -> None:
    assert recorded(fmt, value) == text and decoded(fmt, text) == value and wire(fmt, value) == raw


class _Msg:
    def __init__(self, value: bytes | None, headers: list[tuple[str, bytes]] | None) -> None:
        self._value, self._headers = value, headers

    def value(self) -> bytes | None:
        return self._value

    def headers(self) -> list[tuple[str, bytes]] | None:
        return self._headers


@pytest.mark.parametrize("value, headers, seen", [
    (b"hello", [("x", b"1"), (FEEDER_ID_HEADER, b"app-feeder.0-3-1")], "app-feeder.0-3-1"),
    (b"\xff", [(FEEDER_ID_HEADER, b"app-feeder.0-0-0")], "app-feeder.0-0-0"),  # bytes that are no text: the id
    (b"v1", None, "v1"), (None, [("x", b"1")], ""),
])
def test_the_readers_take_the_feeders_id_as_the_value(value: bytes | None, headers: list[tuple[str, bytes]] | None,
                                                      seen: str) -> None:
    assert value_of(_Msg(value, headers)) == seen  # the final scans, the confluent-kafka reader
    assert _value_or_id(SimpleNamespace(value=value, headers=headers or [])) == seen  # kafka-python's


def test_a_history_of_sends_without_records_is_judged_as_before() -> None:
    t = repeated().tables()
    assert set(t.payloads["value"]) == {f"f{k}" for k in range(1, 7)}
    assert len(History().tables().payloads) == 0
