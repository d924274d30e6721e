"""``copy-exactly-once`` on values in the copier's output topic that are not well-formed copies
(default engine; both engines on the same histories: test_spark_engine.py). A value that is not a
copy is another workload's and not judged; a copy that does not parse is a finding, never a crash."""

from __future__ import annotations

from typing import Any

from harness.checker import check
from harness.history.builder import History
from harness.history.model import READ_COMMITTED, READ_UNCOMMITTED
from tests.unit.histories import MALFORMED_COPIES, clean
from tests.unit.test_checker import counts


def no_crash(v: dict[str, Any]) -> None:
    crashed = {name: c["traceback"] for name, c in v["checks"].items() if "error" in c}
    assert crashed == {}, crashed


def test_values_that_are_not_copies_in_the_copiers_output_are_not_judged() -> None:
    v = check(clean("copy-foreign").tables()).to_json()
    no_crash(v)
    assert "skipped" not in v["checks"]["copy-exactly-once"] and v["checks"]["copy-exactly-once"]["count"] == 0
    assert v["valid"] is True and v["unknown_because"] == [], v["checks"]
    assert {name: n for name, n in counts(v).items() if n} == {}


def test_a_malformed_copy_is_a_finding_of_copy_exactly_once_alone() -> None:
    v = check(clean("copy-malformed").tables()).to_json()
    no_crash(v)  # g1c reads the copies too
    c = v["checks"]["copy-exactly-once"]
    assert {name: n for name, n in counts(v).items() if n} == {"copy-exactly-once": len(MALFORMED_COPIES)}
    assert v["valid"] is False
    # each names where the copier wrote it and what it wrote; the copies before it (o-0 at 0, 2, 4) are well-formed
    assert c["examples"] == [{"malformed_copy": {"topic": "o", "partition": 0, "offset": 6 + k}, "value": value}
                             for k, value in enumerate(MALFORMED_COPIES[:5])]


def test_a_copier_whose_every_copy_is_malformed_is_judged_all_the_same() -> None:
    # nothing parses, so no copy names an input topic and no input is judged; the malformed copy is
    h = History()
    h.init("p1", "tx-1")
    h.txn("p1", [("t", 0, "a1", 0)])
    h.init("copier-1", "copier-tx")
    h.txn("copier-1", [("o", 0, "copy/t/0/zero/copier-1.0-0/a1", 0)], txn_id="copier-tx")
    for isolation in (READ_COMMITTED, READ_UNCOMMITTED):
        h.scan({"t-0": [(0, "a1")], "o-0": [(0, "copy/t/0/zero/copier-1.0-0/a1")]}, isolation)
    c = check(h.tables()).to_json()["checks"]["copy-exactly-once"]
    assert c == {"count": 1, "examples": [{"malformed_copy": {"topic": "o", "partition": 0, "offset": 0},
                                           "value": "copy/t/0/zero/copier-1.0-0/a1"}]}

