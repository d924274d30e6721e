"""The history files: recorder pairing rules, merging, a truncated last line, Parquet round trip."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from harness.base.errors import ConfigError
from harness.checker import check
from harness.history import store
from harness.history.model import FAIL, OK, POLL, TXN, Op, Send, sends_of
from harness.history.recorder import Recorder
from tests.unit.histories import clean


def test_recorder_refuses_a_completion_without_its_invoke(tmp_path: Path) -> None:
    with Recorder(tmp_path, "w") as rec:
        with pytest.raises(RuntimeError, match="without an outstanding invoke"):
            rec.complete("p", OK, TXN)
        rec.invoke("p", TXN, [])
        with pytest.raises(RuntimeError, match="outstanding"):
            rec.invoke("p", POLL)


def test_files_of_several_processes_merge_by_time_and_a_cut_line_is_reported(tmp_path: Path) -> None:
    with Recorder(tmp_path, "a") as a, Recorder(tmp_path, "b") as b:
        a.invoke("p1", TXN, [["send", "t", 0, "v1"]], txn_id="x")
        b.invoke("r1", POLL)
        a.complete("p1", OK, TXN, [["send", "t", 0, "v1", 0]], txn_id="x", commit_at=a.now())
        b.complete("r1", OK, POLL, {"t-0": [[0, "v1"]]})
    with open(tmp_path / "history" / "b.jsonl", "ab") as f:
        f.write(b'{"time": 99999999999, "process": "r1", "ty')  # a writer killed mid-line
    ops, truncated = store.read_ops(tmp_path)
    assert [o.process for o in ops] == ["p1", "r1", "p1", "r1"] and [o.index for o in ops] == [0, 1, 2, 3]
    assert truncated == ["b.jsonl"]
    v = check(store.flatten(ops, truncated)).to_json()
    assert v["history"]["truncated"] == ["b.jsonl"] and "last whole line" in v["history"]["note"]


def test_a_folder_without_history_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="has no history") as info:
        store.read_ops(tmp_path)
    assert info.value.exit_code == 2


def test_a_corrupt_line_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "history").mkdir()
    (tmp_path / "history" / "w.jsonl").write_bytes(b'{"time": 1, "process": "p", "type": "info", "f": "fault"}\nnot json\n')
    with pytest.raises(ConfigError, match=r"w.jsonl:2"):
        store.read_ops(tmp_path)


def test_parquet_round_trip_gives_the_same_verdict(tmp_path: Path) -> None:
    from tests.unit.histories import clean

    h = clean("aborted-read")
    tables = h.tables()
    (tmp_path / "history").mkdir()
    store.save(tables, tmp_path)
    again = store.load(tmp_path)
    assert check(again).to_json()["checks"] == check(tables).to_json()["checks"]


def test_an_op_keeps_the_fields_it_does_not_name_and_writes_back_the_same_line() -> None:
    line = {"time": 5, "process": "p1", "type": "ok", "f": "txn", "value": [["send", "t", 0, "v1", 3]],
            "txn_id": "x", "commit_at": 4, "future_field": {"a": 1}}
    op = Op.from_json(line, index=7)
    assert (op.index, op.txn_id, op.commit_at, op.extra) == (7, "x", 4, {"future_field": {"a": 1}})
    assert op.to_json() == {**line, "index": 7}


def test_sends_carry_the_offsets_only_an_ok_completion_acknowledged() -> None:
    invoke = Op.from_json({"time": 1, "process": "p", "type": "invoke", "f": "txn",
                           "value": [["send", "t-x", 0, "a"], ["send", "t-x", 1, "b"]]}, index=0)
    ok = Op.from_json({"time": 2, "process": "p", "type": "ok", "f": "txn",
                       "value": [["send", "t-x", 0, "a", 5], ["send", "t-x", 1, "b", 9]]}, index=1)
    failed = Op.from_json({"time": 2, "process": "p", "type": "fail", "f": "txn", "value": invoke.value}, index=1)
    assert sends_of(invoke, ok) == [Send("t-x", 0, "a", 5), Send("t-x", 1, "b", 9)]
    assert sends_of(invoke, failed) == sends_of(invoke) == [Send("t-x", 0, "a"), Send("t-x", 1, "b")]
    plain = Op.from_json({"time": 1, "process": "p", "type": "invoke", "f": "send", "value": ["t", 2, "c"]}, index=0)
    done = Op.from_json({"time": 2, "process": "p", "type": "ok", "f": "send", "value": ["t", 2, "c", 11]}, index=1)
    assert sends_of(plain, done) == [Send("t", 2, "c", 11)]


def _saved_run(tmp_path: Path) -> Path:
    """A run folder with JSON lines (the clean history plus two faults) and its Parquet."""
    from tests.unit.histories import clean

    h = clean()
    h._add(process="nemesis", type="info", f="fault", value={"kind": "kill", "phase": "start", "node": 2, "target": "leader"})
    h._add(process="nemesis", type="ok", f="fault", value={"kind": "kill", "phase": "stop", "node": 2})
    h._add(process="nemesis", type="info", f="fault", value={"kind": "pause", "phase": "start", "node": 1})
    (tmp_path / "history").mkdir()
    (tmp_path / "history" / "runner.jsonl").write_bytes(b"".join(orjson.dumps(o) + b"\n" for o in h.ops))
    store.save(store.load(tmp_path), tmp_path)
    return tmp_path


def test_the_parquet_carries_its_layout_and_the_fault_events(tmp_path: Path) -> None:
    run = _saved_run(tmp_path)
    assert json.loads((run / store.PARQUET_DIR / "meta.json").read_text())["layout"] == store.LAYOUT
    assert store.parquet_is_current(run)
    events = store.fault_events(store.load(run).faults)
    assert [(e["value"]["kind"], e["value"]["phase"]) for e in events] == [("kill", "start"), ("kill", "stop"),
                                                                            ("pause", "start")]
    assert events[0]["value"] == {"kind": "kill", "phase": "start", "node": 2, "target": "leader"}
    assert check(store.load(run)).to_json()["stats"]["faults"] == 2


@pytest.mark.parametrize("layout", [None, 1, store.LAYOUT + 1])
def test_a_parquet_of_another_layout_is_rebuilt_from_the_json_lines(tmp_path: Path, layout: int | None) -> None:
    run = _saved_run(tmp_path)
    meta_file = run / store.PARQUET_DIR / "meta.json"
    meta = json.loads(meta_file.read_text())
    meta.pop("layout")
    meta_file.write_text(json.dumps(meta if layout is None else {**meta, "layout": layout}))
    assert not store.parquet_is_current(run)
    assert len(store.load(run).faults) == 3  # flattened from the JSON lines
    store.ensure_parquet(run)
    assert store.parquet_is_current(run) and json.loads(meta_file.read_text())["layout"] == store.LAYOUT


def test_a_parquet_of_another_layout_without_json_lines_is_refused_by_name(tmp_path: Path) -> None:
    run = _saved_run(tmp_path)
    meta_file = run / store.PARQUET_DIR / "meta.json"
    meta_file.write_text(json.dumps({**json.loads(meta_file.read_text()), "layout": 1}))
    (run / "history" / "runner.jsonl").unlink()
    with pytest.raises(ConfigError, match=rf"history.parquet: history layout 1; this version reads layout {store.LAYOUT}"):
        store.load(run)


def test_the_errors_clients_met_are_counted_by_name_but_a_chosen_abort_is_none() -> None:
    from tests.unit.histories import History

    h = History()
    h._add(process="p1", type="invoke", f="txn", value=[])
    h._add(process="p1", type="info", f="txn", value=[], error="_TIMED_OUT: commit timed out",
           commit_retries=["_CONFLICT: retry", "_TIMED_OUT: again"], abort_error="_FENCED: fenced")
    h._add(process="p2", type="invoke", f="txn", value=[])
    h._add(process="p2", type="fail", f="txn", value=[], error="aborted on purpose", aborts_refused=["_FENCED: no"])
    assert check(h.tables()).to_json()["stats"]["errors_seen"] == {"_CONFLICT": 1, "_FENCED": 2, "_TIMED_OUT": 2}
    h.ops = [{k: v for k, v in o.items() if k not in ("commit_retries", "abort_error", "aborts_refused")}
             | ({"error": "aborted on purpose"} if "error" in o else {}) for o in h.ops]
    assert check(h.tables()).to_json()["stats"]["errors_seen"] == {}


def test_the_spark_jobs_events_are_a_table_saved_and_loaded_back(tmp_path: Path) -> None:
    from tests.unit.test_spark_check import spark_history

    tables = spark_history().tables()
    events = store.spark_events(tables)
    assert {e["f"] for e in events} >= {"spark-start", "spark-batch"} and "spark" not in tables.meta
    store.save(tables, tmp_path)
    assert store.spark_events(store.load(tmp_path)) == events


def test_a_line_without_an_ops_fields_names_file_line_and_what_is_missing(tmp_path: Path) -> None:
    (tmp_path / "history").mkdir()
    (tmp_path / "history" / "w.jsonl").write_bytes(b'{"time": 1, "process": "p", "type": "info", "f": "fault"}\n'
                                                   b'{"time": 2, "process": "p"}\n')
    with pytest.raises(ConfigError, match=r"w.jsonl:2: field type: expected a value \(the field is required\), found nothing"):
        store.read_ops(tmp_path)


def test_a_restarted_workload_continues_its_process_numbers_after_a_cut_line(tmp_path: Path) -> None:
    """A killed workload restarted with the same config appends to its file: it must not name a
    process (and so a value) as its first start did, nor leave the line the kill cut off mid-file."""
    with Recorder(tmp_path, "p1") as rec:
        assert rec.first_incarnation == 0
        rec.invoke(rec.process("p1", 2), TXN, [["send", "t", 0, "p1.2-0-0"]])
    path = tmp_path / "history" / "p1.jsonl"
    with open(path, "ab") as f:
        f.write(b'{"time": 99, "process": "p1.2", "ty')  # SIGKILL mid-line
    with Recorder(tmp_path, "p1") as rec:
        assert rec.process("p1") == "p1.3"
        rec.invoke(rec.process("p1"), POLL)
    lines = path.read_bytes().splitlines()
    assert [orjson.loads(x)["process"] for x in lines] == ["p1.2", "p1.3"]


def test_a_value_written_twice_is_refused_naming_both_ops() -> None:
    """Not judged: a committed a1 sent again in an aborted transaction would pass for an aborted read."""
    h = clean()
    h.txn("p1", [("t", 0, "a1", None)], outcome=FAIL)
    with pytest.raises(ConfigError, match=r"value 'a1' is written twice, by op \d+ \(p1 txn, invoked at [0-9.]+ s\) "
                                          r"and by op \d+ \(p1 txn, .*every value a run writes must be unique"):
        h.tables()
