"""Malformed histories through ``eos-chaos check``: exit 2 with ``file:line``, the field, what was
expected and what was found; never a traceback, never exit 1 (a finding) or 3."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.unit.test_cli import cli

INVOKE_A = {"time": 1, "process": "p1.0", "type": "invoke", "f": "txn", "value": [["send", "t", 0, "a"]]}
OK_A = {"time": 2, "process": "p1.0", "type": "ok", "f": "txn", "value": [["send", "t", 0, "a", 0]], "commit_at": 2}
SCAN_A = {"time": 3, "process": "final", "type": "ok", "f": "scan", "value": {"t-0": [[0, "a"]]}, "isolation": "read_committed"}


def _with(line: dict[str, object], **changes: object) -> str:
    out = {**line, **changes}
    return json.dumps({k: v for k, v in out.items() if v is not _DROP})


_DROP = object()

#: (case, the lines of w.jsonl, the line named, what the message must hold)
CASES = [
    ("a JSON array", ["[1, 2]"], 1, "field (the line): expected a JSON object, found a JSON array"),
    ("no time", [_with(INVOKE_A, time=_DROP)], 1, "field time: expected a value (the field is required), found nothing"),
    ("time is text", [_with(INVOKE_A, time="x")], 1, 'field time: expected a valid integer, found "x"'),
    ("negative time", [_with(INVOKE_A, time=-5)], 1, "field time: expected greater than or equal to 0, found -5"),
    ("no f", [_with(INVOKE_A, f=_DROP)], 1, "field f: expected a value (the field is required), found nothing"),
    ("f is a number", [_with(INVOKE_A, f=5)], 1, "field f: expected 'txn', 'send', 'init', 'poll', 'scan'"),
    ("unknown op kind", [_with(INVOKE_A, f="teleport")], 1, 'field f: expected \'txn\', \'send\', \'init\', \'poll\', \'scan\', '
                                                                 '\'group-offsets\', \'fenced\''),
    ("unknown completion type", [json.dumps(INVOKE_A), _with(OK_A, type="done")], 2,
     "field type: expected 'invoke', 'ok', 'fail' or 'info', found \"done\""),
    ("process is a number", [_with(INVOKE_A, process=7)], 1, "field process: expected a valid string, found 7"),
    ("partition is text", [_with(INVOKE_A, value=[["send", "t", "0", "a"]])], 1,
     'field value[0][2]: expected a valid integer, found "0"'),
    ("a list where a value belongs", [_with(INVOKE_A, value=[["send", "t", 0, ["a"]]])], 1,
     'field value[0][3]: expected a valid string, found ["a"]'),
    ("a list as a scanned value", [json.dumps(INVOKE_A), json.dumps(OK_A),
                                   _with(SCAN_A, value={"t-0": [[0, ["a", "b"]]]})], 3,
     'field value.t-0[0][1]: expected a valid string, found ["a", "b"]'),
    ("negative offset", [json.dumps(INVOKE_A), json.dumps(OK_A), _with(SCAN_A, value={"t-0": [[-1, "a"]]})], 3,
     "field value.t-0[0][0]: expected greater than or equal to 0, found -1"),
    ("partition out of range", [_with(INVOKE_A, value=[["send", "t", 5000, "a"]])], 1,
     "field value[0][2]: expected less than or equal to 4095, found 5000"),
    ("a key without a partition", [json.dumps(INVOKE_A), json.dumps(OK_A), _with(SCAN_A, value={"t": [[0, "a"]]})], 3,
     'field value.t: expected a "topic-partition" key, like "t-0", found "t"'),
    ("a key's partition out of range", [json.dumps(INVOKE_A), json.dumps(OK_A), _with(SCAN_A, value={"t-4096": [[0, "a"]]})],
     3, "a partition in 0..4095 after the last '-'"),
    ("a completion with no invoke", [json.dumps(OK_A)], 1, "a ok completion of txn by p1.0, which has no txn outstanding"),
    ("a duplicated line", [json.dumps(INVOKE_A), json.dumps(OK_A), json.dumps(SCAN_A), json.dumps(SCAN_A)], 4,
     "w.jsonl:3 (a line is there twice)"),
    ("a duplicated op index", [_with(INVOKE_A, index=0), _with(OK_A, index=0)], 2, "op index 0 is used again (first at"),
]


@pytest.mark.parametrize(("lines", "line", "says"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_malformed_history_is_exit_2_naming_file_line_field_expected_and_found(
        tmp_path: Path, lines: list[str], line: int, says: str) -> None:
    (tmp_path / "history").mkdir()
    (tmp_path / "history" / "w.jsonl").write_text("".join(f"{x}\n" for x in lines))
    r = cli("check", str(tmp_path))
    assert r.exit_code == 2, r.output
    assert f"w.jsonl:{line}: " in r.output and says in " ".join(r.output.split()), r.output
    assert "Traceback" not in r.output


def test_a_history_cut_off_mid_line_is_checked_up_to_its_last_whole_line_and_says_so(tmp_path: Path) -> None:
    (tmp_path / "history").mkdir()
    (tmp_path / "history" / "w.jsonl").write_text(f"{json.dumps(INVOKE_A)}\n{json.dumps(OK_A)}\n{json.dumps(SCAN_A)[:30]}")
    r = cli("check", str(tmp_path))
    assert r.exit_code in (0, 3), r.output
    assert "w.jsonl" in r.output and "last whole line" in r.output, r.output
