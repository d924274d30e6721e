"""The history files: recorder pairing rules, merging, a truncated last line, Parquet round trip."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.checker import check
from harness.errors import ConfigError
from harness.history import store
from harness.history.model import OK, POLL, TXN
from harness.history.recorder import Recorder


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
    assert [o["process"] for o in ops] == ["p1", "r1", "p1", "r1"] and [o["index"] for o in ops] == [0, 1, 2, 3]
    assert truncated == ["b.jsonl"]
    v = check(store.flatten(ops, truncated))
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
    assert check(again)["checks"] == check(tables)["checks"]
