"""The ``payloads`` table (docs/APPS.md, "What is recorded"): a ``txn``'s ``records`` (one
``[payload, timestamp, headers]`` per send) are checked as the line loads, flattened one row per
written value, and survive the Parquet store. A minimal version beside the feeder's (issue 39)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.history import schema, store
from harness.history.builder import History

TXN = {"time": 1, "process": "f.0", "type": "invoke", "f": "txn", "value": [["send", "in", 0, "a"], ["send", "in", 1, "b"]]}


def _history() -> History:
    h = History()
    h.init("app-feeder.0", "tx")
    h.txn("app-feeder.0", [("in", 0, "a", 0), ("in", 1, "b", 0)], keys=["k", None],
          records=[("the cat sat", 1700, [("h", "v")]), (None, 1701, None)])
    return h


def test_each_record_is_one_row_with_its_payload_timestamp_and_headers(tmp_path: Path) -> None:
    t = _history().tables()
    store.save(t, tmp_path)
    for tables in (t, store.load(tmp_path)):
        p = tables.payloads
        assert list(p.columns) == ["value", "payload", "timestamp", "headers"]
        assert list(p["value"]) == ["a", "b"] and p["payload"].iloc[0] == "the cat sat" and p["payload"].isna().iloc[1]
        assert list(p["timestamp"]) == [1700, 1701]
        assert json.loads(p["headers"].iloc[0]) == [["h", "v"]] and p["headers"].isna().iloc[1]


def test_a_history_without_records_has_an_empty_payloads_table() -> None:
    h = History()
    h.txn("p.0", [("in", 0, "a", 0)])
    assert h.tables().payloads.empty


@pytest.mark.parametrize("records, field, expected", [
    ([["x", 1, None]], "records", "one record per send (2)"),
    ([["x", -1, None], ["y", 1, None]], "records[0][1]", "greater than or equal to 0"),
    ([["x", 1, [["k"]]], ["y", 1, None]], "records[0][2][0][1]", "a value (the field is required)"),
])
def test_malformed_records_name_the_field(records: list[object], field: str, expected: str) -> None:
    with pytest.raises(schema.BadLine) as err:
        schema.validate(json.loads(json.dumps(TXN | {"records": records})))
    assert err.value.field == field and expected in err.value.expected, (err.value.field, err.value.expected)


def test_records_only_on_a_txn() -> None:
    line = {"time": 1, "process": "r", "type": "ok", "f": "scan", "isolation": "read_committed", "value": {},
            "records": []}
    with pytest.raises(schema.BadLine, match="records only on a txn"):
        schema.validate(line)
