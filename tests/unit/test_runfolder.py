"""The run folder: its file names agree with the packages that write them, its writes are atomic
(a failed write leaves the old file and no temp file behind), and new folders sort by time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.base.errors import ConfigError
from harness.history import store
from harness.history.recorder import HISTORY_DIR
from harness.rundir import runfolder
from harness.rundir.runfolder import RunFolder, new_run_dir, write_json, write_text


def test_the_history_folders_have_the_names_the_history_package_gives_them() -> None:
    assert runfolder.HISTORY == HISTORY_DIR and runfolder.HISTORY_PARQUET == store.PARQUET_DIR


def test_every_file_has_its_name(tmp_path: Path) -> None:
    f = RunFolder(tmp_path)
    names = {p.name for p in (f.scenario, f.journal, f.verdict, f.report, f.run_log, f.history, f.history_parquet,
                              f.workloads, f.nodes, f.soak_json, f.soak_html)}
    assert names == {"scenario.json", "journal.json", "verdict.json", "report.html", "run.log", "history",
                     "history.parquet", "workloads", "nodes", "soak.json", "soak.html"}


def test_writes_replace_the_whole_file_and_leave_no_temp_file(tmp_path: Path) -> None:
    path = write_json(tmp_path / "verdict.json", {"valid": True, "at": tmp_path})
    assert json.loads(path.read_text()) == {"valid": True, "at": str(tmp_path)}
    write_text(path, "second")
    assert path.read_text() == "second" and [p.name for p in tmp_path.iterdir()] == ["verdict.json"]


def test_a_write_that_fails_keeps_the_old_file(tmp_path: Path) -> None:
    path = write_text(tmp_path / "journal.json", "old")

    class Unwritable:
        def __str__(self) -> str:
            raise RuntimeError("cannot be written")

    with pytest.raises(RuntimeError):
        write_json(path, {"x": Unwritable()})
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["journal.json"]


def test_new_folders_are_named_by_time_and_kind(tmp_path: Path) -> None:
    a, b = new_run_dir("baseline", tmp_path), RunFolder.new("baseline", tmp_path)
    assert a.is_dir() and b.path.is_dir() and a != b.path
    assert "-baseline-" in a.name and a.name[:8].isdigit()


def test_read_json_says_which_file_is_broken(tmp_path: Path) -> None:
    f = RunFolder(tmp_path)
    assert f.read_json(f.journal) is None
    f.journal.write_text("{half")
    with pytest.raises(ConfigError, match="journal.json: not valid JSON"):
        f.read_json(f.journal)
    f.journal.write_text("[1]")
    with pytest.raises(ConfigError, match="a JSON object was expected"):
        f.read_json(f.journal)


def test_a_run_tag_fits_what_a_scenario_leaves_of_a_topic_name() -> None:
    """A scenario's topic got ``.<tag>`` from the folder's name: 249 characters became 254 and the
    run failed once the cluster was up; an ``--out`` name made any tag at all."""
    from harness.run.scenario import MAX_TOPIC

    run_id = runfolder.new_run_id("smoke")
    assert runfolder.run_tag(run_id) == run_id[-4:]
    assert runfolder.run_tag("20261123-043417-my-scenario-3fa9") == "3fa9"
    assert runfolder.run_tag("my_run") == "my_run"  # an --out name that fits is kept
    for name in ("runs-of-the_week_47", "my run", "x" * 200):
        tag = runfolder.run_tag(name)
        assert len(tag) == runfolder.RUN_TAG_MAX and tag.isalnum() and tag == runfolder.run_tag(name)
    assert MAX_TOPIC + 1 + runfolder.RUN_TAG_MAX == 249
