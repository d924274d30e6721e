"""The Parquet tables are a cache of the JSON lines, keyed by what they were built from (issue 31):
the history files' names, sizes and contents, the layout and the flattening code. An edit that puts
the file's times back is seen; an untouched history is not read again; a history file that cannot
be read, or is not the run's, is exit 2 naming it."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from harness.base.errors import ConfigError
from harness.checker import check
from harness.history import sources, store
from tests.unit.test_bad_files import refused
from tests.unit.test_cli import _restore_logging, cli  # noqa: F401 - the fixture puts the loggers back after each invocation
from tests.unit.test_report import make_run

#: a poll of r1 in the clean history got b1 at t-0 offset 2; x1 in its place is the same size,
#: a value nobody wrote (phantom-read) at a position that holds b1 (inconsistent-offsets)
SEEN, PHANTOM = b'[2,"b1"]]', b'[2,"x1"]]'
#: the clean history's writes (12 by the producers, 2 by the copier)
WRITES = 14


@pytest.fixture
def run(tmp_path: Path) -> Path:
    """A run folder checked VALID, its tables saved, in ``tmp_path``."""
    return make_run(tmp_path, name="run")


@pytest.fixture
def flattened(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Path]]:
    """The run folders whose history was flattened from the JSON lines while the test ran."""
    calls: list[Path] = []
    real = store.read_tables

    def spy(run_dir: Path) -> store.Tables:
        calls.append(run_dir)
        return real(run_dir)

    monkeypatch.setattr(store, "read_tables", spy)
    yield calls


def history(run: Path) -> Path:
    return run / "history" / "runner.jsonl"


def edit_keeping_size_and_times(path: Path, old: bytes, new: bytes) -> None:
    """``old`` replaced by ``new`` (as long) in ``path``, its mtime and atime put back."""
    st = path.stat()
    data = path.read_bytes()
    assert len(old) == len(new) and data.count(old) == 1
    path.write_bytes(data.replace(old, new))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (st.st_size, st.st_mtime_ns)


def record(run: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run / store.PARQUET_DIR / store.SOURCE_FILE).read_text())
    return data


def test_an_edit_that_keeps_size_and_times_gives_the_new_verdict(run: Path) -> None:
    assert json.loads((run / "verdict.json").read_text())["valid"] is True and store.parquet_is_current(run)
    edit_keeping_size_and_times(history(run), SEEN, PHANTOM)
    r = cli("check", str(run))
    assert r.exit_code == 1 and r.stdout.startswith("INVALID"), r.output
    assert "  phantom-read: 1" in r.stdout and "  inconsistent-offsets: 1" in r.stdout, r.stdout
    assert "history/runner.jsonl changed (same size, other content)" in r.output, r.output
    # the tables were saved again, keyed by the new content: the next check reads them
    assert store.parquet_is_current(run)
    assert json.loads((run / "verdict.json").read_text())["valid"] is False


def test_an_edit_is_seen_by_the_files_stat_without_reading_them(run: Path, monkeypatch: pytest.MonkeyPatch,
                                                               flattened: list[Path]) -> None:
    """With stats recorded (none is while a file is younger than RACY_NS), an untouched history
    is not read at all, and an edit whose times were put back still moved the file's ctime."""
    monkeypatch.setattr(sources, "RACY_NS", 0)
    store.save(store.load(run), run)  # hashed, and recorded with stats this time
    assert all(k["stat"] is not None for k in record(run)["files"].values())

    def read_again(f: object) -> tuple[int, str]:
        raise AssertionError("an untouched history file was read again")

    with monkeypatch.context() as m:
        m.setattr(sources, "_digest", read_again)
        assert len(store.load(run).writes) == WRITES and flattened == []
    ctime = history(run).stat().st_ctime_ns
    edit_keeping_size_and_times(history(run), SEEN, PHANTOM)
    assert history(run).stat().st_ctime_ns != ctime  # what makes the stat differ
    assert store.stale_because(run) == "history/runner.jsonl changed (same size, other content)"
    assert check(store.load(run)).to_json()["checks"]["phantom-read"]["count"] == 1 and flattened == [run]


def test_an_untouched_history_reuses_the_tables(run: Path, flattened: list[Path]) -> None:
    meta = (run / store.PARQUET_DIR / store.META_FILE).stat()
    os.utime(history(run))  # touched: other times, same content
    r = cli("check", str(run))
    assert r.exit_code == 0 and r.stdout.startswith("VALID"), r.output
    assert flattened == [] and "JSON lines" not in r.output, r.output
    again = (run / store.PARQUET_DIR / store.META_FILE).stat()
    assert (again.st_ino, again.st_mtime_ns) == (meta.st_ino, meta.st_mtime_ns)  # the tables were not written


def test_a_history_file_added_or_removed_rebuilds(run: Path, flattened: list[Path]) -> None:
    late = run / "history" / "nemesis-late.jsonl"
    late.write_bytes(orjson.dumps({"time": 10**12, "process": "nemesis", "type": "info", "f": "fault",
                                   "value": {"kind": "pause", "phase": "start", "node": 3}}) + b"\n")
    faults = len(store.load(run).faults)
    assert store.stale_because(run) == "history/nemesis-late.jsonl is new"
    store.ensure_parquet(run)
    assert flattened == [run, run] and store.parquet_is_current(run)
    assert len(store.load(run).faults) == faults and sorted(record(run)["files"]) == ["nemesis-late.jsonl", "runner.jsonl"]
    late.unlink()
    assert store.stale_because(run) == "history/nemesis-late.jsonl is gone"
    assert len(store.load(run).faults) == faults - 1


def test_another_layout_or_other_flattening_code_rebuilds(run: Path, monkeypatch: pytest.MonkeyPatch,
                                                          flattened: list[Path]) -> None:
    assert set(store._code()) == {"store.py", "model.py", "schema.py"}
    kept = record(run)
    source = run / store.PARQUET_DIR / store.SOURCE_FILE
    source.write_text(json.dumps({**kept, "code": {**kept["code"], "model.py": "0" * 64}}))
    assert store.stale_because(run) == "the code that flattens the history changed since it was built (model.py)"
    store.ensure_parquet(run)
    assert record(run)["code"] == store._code() and store.parquet_is_current(run) and flattened == [run]
    layout = store.LAYOUT
    with monkeypatch.context() as m:
        m.setattr(store, "LAYOUT", layout + 1)
        assert store.stale_because(run) == f"its layout is {layout}, this code's {layout + 1}"
    source.unlink()  # a folder saved before the tables were keyed by content
    assert "it has no source.json" in str(store.stale_because(run))


def test_tables_whose_json_lines_are_gone_are_used_as_they_are(run: Path, flattened: list[Path]) -> None:
    history(run).unlink()
    (run / store.PARQUET_DIR / store.SOURCE_FILE).unlink()
    assert store.parquet_is_current(run) and len(store.load(run).writes) == WRITES and flattened == []


def test_a_torn_last_line_is_tolerated_and_said(run: Path) -> None:
    """A killed workload's partial write: read up to the last whole line, as before the cache was keyed."""
    with history(run).open("ab") as f:
        f.write(b'{"time": 99999999999, "process": "r1", "ty')
    r = cli("check", str(run))
    assert r.exit_code == 0 and r.stdout.startswith("VALID"), r.output
    assert json.loads((run / "verdict.json").read_text())["history"]["truncated"] == ["runner.jsonl"]


@pytest.mark.parametrize("where", ["middle", "end"])
def test_garbage_in_a_history_with_its_old_times_is_exit_2_naming_the_line(run: Path, where: str) -> None:
    if where == "middle":
        edit_keeping_size_and_times(history(run), SEEN, b"\x00garbage\x00")
    else:
        st = history(run).stat()
        with history(run).open("ab") as f:
            f.write(b"not json\n")
        os.utime(history(run), ns=(st.st_atime_ns, st.st_mtime_ns))
    lines = history(run).read_bytes().splitlines()
    n = next(i + 1 for i, line in enumerate(lines) if b"garbage" in line or line == b"not json")
    refused(cli("check", str(run)), f"{history(run)}:{n}: not a JSON object")


def _dangling(run: Path, tmp_path: Path) -> tuple[Path, str]:
    link = run / "history" / "zz.jsonl"
    link.symlink_to(tmp_path / "nowhere.jsonl")
    return link, f"{link}: a symlink to {tmp_path / 'nowhere.jsonl'}, which does not exist (a dangling symlink)"


def _outside(run: Path, tmp_path: Path) -> tuple[Path, str]:
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_bytes(history(run).read_bytes())
    link = run / "history" / "zz.jsonl"
    link.symlink_to(outside)
    return link, f"{link}: resolves to {outside}, outside the run folder {run.resolve()}"


def _pipe(run: Path, tmp_path: Path) -> tuple[Path, str]:
    pipe = run / "history" / "zz.jsonl"
    os.mkfifo(pipe)
    return pipe, f"{pipe}: cannot be read (a named pipe, not a file)"


@pytest.mark.timeout(20)  # a named pipe opened for reading would have blocked for ever
@pytest.mark.parametrize("bad", [_dangling, _outside, _pipe])
@pytest.mark.parametrize("command", ["check", "report"])
def test_a_history_file_that_is_not_the_runs_is_exit_2_naming_it(run: Path, tmp_path: Path, bad: Any,
                                                                 command: str) -> None:
    path, says = bad(run, tmp_path)
    refused(cli(command, str(run)), says)
    with pytest.raises(ConfigError, match=f"^{path}: "):
        store.load(run)


def test_a_symlink_inside_the_run_folder_is_its_history(run: Path, tmp_path: Path) -> None:
    """The clean twins of the symlink refusals: a link to a file of the run folder is read, and a run
    folder reached through a link (``results/latest``) is the folder it leads to."""
    kept = run / "kept"
    kept.mkdir()
    history(run).rename(kept / "runner.jsonl")
    history(run).symlink_to(Path("..") / "kept" / "runner.jsonl")
    latest = tmp_path / "latest"
    latest.symlink_to(run.name)
    for folder in (run, latest):
        r = cli("check", str(folder))
        assert r.exit_code == 0 and r.stdout.startswith("VALID"), r.output


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode (the folder and pipe cases cover the path)")
def test_a_history_file_without_read_permission_is_exit_2_naming_it(run: Path) -> None:
    history(run).chmod(0)
    refused(cli("check", str(run)), f"{history(run)}: cannot be read (Permission denied)")
