"""The progress display's counts come from the history files as they grow, a line at a time."""

from __future__ import annotations

import io
from pathlib import Path

import orjson
from rich.console import Console

from harness.history.tail import HistoryTail
from harness.report.live_progress import ProgressLine


def _line(**op: object) -> bytes:
    return orjson.dumps(op) + b"\n"


def test_tail_counts_outcomes_and_errors_incrementally_and_waits_for_whole_lines(tmp_path: Path) -> None:
    hist = tmp_path / "history"
    hist.mkdir()
    f = hist / "txn-producer-0.jsonl"
    f.write_bytes(_line(f="txn", type="invoke") + _line(f="txn", type="ok")
                  + _line(f="txn", type="fail", error="aborted on purpose"))
    tail = HistoryTail(tmp_path)
    c = tail.poll()
    assert (c.committed, c.aborted, c.unknown, c.errors) == (1, 1, 0, 0)
    # a line still being written is not counted until it is whole
    partial = _line(f="txn", type="info", error="_TIMED_OUT: commit timed out")
    with open(f, "ab") as fh:
        fh.write(partial[:10])
    assert tail.poll().unknown == 0
    with open(f, "ab") as fh:
        fh.write(partial[10:])
    c = tail.poll()
    assert (c.committed, c.aborted, c.unknown, c.errors) == (1, 1, 1, 1) and c.last_error.startswith("_TIMED_OUT")
    assert tail.poll().committed == 1, "nothing is counted twice"


def test_plain_lines_without_a_terminal(tmp_path: Path) -> None:
    buf = io.StringIO()
    p = ProgressLine(tmp_path, 30, lambda: ["partition leader (9 links)"], console=Console(file=buf, width=200)).start()
    assert not p.live, "a StringIO is not a terminal: plain lines"
    p.set_phase("running")
    p.close()
    out = buf.getvalue().splitlines()
    assert out and all("faults: partition leader (9 links)" in line for line in out), out
    assert "running" in out[0] and "/30s" in out[0]
