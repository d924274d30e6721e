"""Bad files and folders are clear errors (exit 2, naming the path and what is allowed), never an
"internal error": a run folder's files that are folders, not UTF-8 or not JSON objects (check,
report, compare, index), output paths that cannot be written (``--out`` of run, soak, matrix,
report; index.html), the cluster record and the folders environment variables name. All on
hand-written folders, without a cluster."""

from __future__ import annotations

import json
import os
import shutil
import stat
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
from typer.testing import Result

from clusters.backends import state
from clusters.spark.standalone import RECORD as SPARK_RECORD
from harness.base import paths
from harness.base.errors import ConfigError
from harness.campaigns import soak
from harness.history import store
from harness.report.index_page import run_row, write_index
from harness.run import runner
from harness.rundir import runfolder
from harness.rundir.runfolder import INDEX, REPORT, RunFolder, check_out, make_folder, read_json_object, write_output
from tests.unit.test_cli import _restore_logging, cli  # noqa: F401 - the fixture puts the loggers back after each invocation
from tests.unit.test_report import make_run

NOT_UTF8 = b'{"scenario": "\xff\xfe"}'


def refused(r: Result, *says: str) -> None:
    """Exit 2 with one error line saying each of ``says``; no internal error, no traceback."""
    assert r.exit_code == 2, r.output
    assert "internal error" not in r.output and "Traceback" not in r.output, r.output
    for s in says:
        assert s in r.output, r.output


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One finished run folder, copied by each test that breaks one of its files."""
    return make_run(tmp_path_factory.mktemp("made"), name="run")


@pytest.fixture
def run(made: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(made, tmp_path / "run", symlinks=True))


# ---- a run folder's files ----

def test_read_json_object_names_the_file_for_everything_but_an_object(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    assert read_json_object(path) is None
    for content, says in ((b"[1, 2]", "a JSON object was expected, found list"), (b"{half", "not valid JSON"),
                          (NOT_UTF8, "not UTF-8 text: byte 0xff at offset 14")):
        path.write_bytes(content)
        with pytest.raises(ConfigError, match=f"^{path}: .*{says}"):
            read_json_object(path)
    path.unlink()
    path.mkdir()
    with pytest.raises(ConfigError, match=f"^{path}: cannot be read \\(a folder, not a file\\)"):
        read_json_object(path)


@pytest.mark.parametrize("how", ["folder", "not-utf8"])
def test_check_names_a_history_file_it_cannot_read(run: Path, how: str) -> None:
    bad = run / "history" / "runner.jsonl"
    if how == "folder":
        bad = run / "history" / "zz-writer.jsonl"
        bad.mkdir()
    else:
        bad.write_bytes(bad.read_bytes() + b'{"time": 1, "process": "\xff", "type": "invoke", "f": "txn"}\n')
    refused(cli("check", str(run)), str(bad))


def test_check_rebuilds_from_the_history_when_the_parquet_meta_is_a_folder(run: Path) -> None:
    meta = run / "history.parquet" / store.META_FILE
    meta.unlink()
    meta.mkdir()
    r = cli("check", str(run))
    assert r.exit_code == 0 and r.stdout.startswith("VALID") and "internal error" not in r.output, r.output


@pytest.mark.parametrize("how", ["truncated", "missing", "inside"])
def test_check_rebuilds_a_damaged_parquet_table_from_the_history(run: Path, how: str) -> None:
    """The Parquet tables are a cache of the JSON lines: a table cut short, gone, or damaged
    inside is rebuilt from them (it was an internal error), and refused by name when they are gone."""
    table = run / "history.parquet" / "writes.parquet"
    data = table.read_bytes()
    if how == "truncated":
        table.write_bytes(data[: len(data) // 2])
    elif how == "missing":
        table.unlink()
    else:  # both ends whole, the middle not
        table.write_bytes(data[:4] + b"\xff" * (len(data) - 8) + data[-4:])
    r = cli("check", str(run))
    assert r.exit_code == 0 and r.stdout.startswith("VALID") and "internal error" not in r.output, r.output
    assert store.stale_because(run) is None  # saved again, whole
    table.write_bytes(data[:10])
    shutil.rmtree(run / "history")
    refused(cli("check", str(run)), f"{run / 'history.parquet'}: its writes.parquet is damaged",
            "the JSON lines to rebuild it from")


def _break(path: Path, how: str) -> None:
    path.unlink()
    if how == "folder":
        path.mkdir()
    elif how == "list":
        path.write_text("[1, 2]")
    else:
        path.write_bytes(NOT_UTF8)


@pytest.mark.parametrize("how, says", [("folder", "cannot be read (a folder, not a file)"),
                                       ("list", "a JSON object was expected, found list")])
@pytest.mark.parametrize("command", [["check"], ["report"], ["compare", "{run}"]])
def test_a_verdict_json_that_is_a_folder_or_a_list_is_exit_2_naming_it(run: Path, how: str, says: str,
                                                                       command: list[str]) -> None:
    _break(run / "verdict.json", how)
    refused(cli(*[a.format(run=run) for a in command], str(run)), f"{run / 'verdict.json'}: {says}")


@pytest.mark.parametrize("verdict, says", [({}, "valid: Field required"),
                                           ({"valid": True, "checks": [1], "stats": {}}, "checks: Input should be a valid dictionary"),
                                           ({"valid": "yes", "checks": {}, "stats": {}}, "valid.bool")])
@pytest.mark.parametrize("command", [["report"], ["compare", "{run}"]])
def test_a_verdict_json_object_that_is_no_verdict_is_exit_2_naming_it(run: Path, verdict: dict[str, Any], says: str,
                                                                      command: list[str]) -> None:
    (run / "verdict.json").write_text(json.dumps(verdict))
    refused(cli(*[a.format(run=run) for a in command], str(run)), f"{run / 'verdict.json'}: not a verdict (", says)


@pytest.mark.parametrize("command", ["check", "report"])
def test_a_journal_that_is_not_utf8_is_exit_2_naming_it(run: Path, command: str) -> None:
    _break(run / "journal.json", "not-utf8")
    refused(cli(command, str(run)), f"{run / 'journal.json'}: cannot be read (not UTF-8 text")


def test_a_scenario_json_that_is_a_list_is_exit_2_for_report(run: Path) -> None:
    _break(run / "scenario.json", "list")
    refused(cli("report", str(run)), f"{run / 'scenario.json'}: a JSON object was expected, found list")


def test_a_nemesis_folders_broken_files_are_exit_2_for_report(tmp_path: Path) -> None:
    d = tmp_path / "nemesis-run"
    (d / "history").mkdir(parents=True)
    (d / "nemesis.json").write_text('{"test": "t", "t0_ns": 0, "ended_ns": 1000000000, "healed": true}')
    (d / "history" / "nemesis.jsonl").mkdir()
    refused(cli("report", str(d)), f"{d / 'history' / 'nemesis.jsonl'}: cannot be read (a folder, not a file)")
    (d / "history" / "nemesis.jsonl").rmdir()
    (d / "history" / "nemesis.jsonl").write_bytes(b'[1]\n{"f": "fault", "time": "x"}\n\xff\n')  # lines skipped
    assert cli("report", str(d)).exit_code == 0
    (d / "nemesis.json").write_text("{half")
    refused(cli("report", str(d)), f"{d / 'nemesis.json'}: not valid JSON")


@pytest.mark.parametrize("file, how, says", [
    ("journal.json", "not-utf8", "journal.json: cannot be read (not UTF-8 text"),
    ("verdict.json", "folder", "verdict.json is broken (cannot be read (a folder, not a file))"),
    ("verdict.json", "list", "verdict.json is broken (a JSON object was expected, found list)"),
])
def test_one_broken_run_folder_is_a_row_of_the_index_that_says_so(made: Path, tmp_path: Path, file: str, how: str,
                                                                  says: str) -> None:
    good = Path(shutil.copytree(made, tmp_path / "20261101-100000-good-aaaa"))
    bad = Path(shutil.copytree(made, tmp_path / "20261101-110000-bad-bbbb"))
    _break(bad / file, how)
    r = cli("index", str(tmp_path))
    assert r.exit_code == 0, r.output
    page = (tmp_path / INDEX).read_text()
    assert good.name in page and bad.name in page
    assert says in run_row(bad, tmp_path).problem  # type: ignore[operator]


def test_a_nemesis_json_with_a_value_for_a_list_is_a_row(tmp_path: Path) -> None:
    d = tmp_path / "nemesis-run"
    d.mkdir()
    (d / "nemesis.json").write_text(json.dumps({"test": "t", "healed": False, "heal_problems": 5, "errors": "boom"}))
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "scenario.json").write_text(json.dumps({"name": "x", "versions": 4}))
    row = run_row(d, tmp_path)
    assert row.problem == "not healed: 5; fault failed: boom"
    assert run_row(tmp_path / "other", tmp_path).command is None
    write_index(tmp_path)


# ---- output paths ----

#: What a run or a soak that was let start says here (no cluster is started).
STARTED = "a run would start here"


@pytest.fixture
def nothing_started(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Runs and soaks that were let start (by a test that wants one to)."""
    started: list[Any] = []

    def start(*args: Any, **kwargs: Any) -> None:
        started.append(args)
        raise ConfigError(STARTED)

    monkeypatch.setattr(runner, "run", start)
    monkeypatch.setattr(soak, "soak", start)
    return started


def _out(tmp_path: Path, case: str) -> tuple[Path, str]:
    """An ``--out`` path of ``case`` and what the refusal says of it."""
    if case == "non-empty":
        (tmp_path / "used" / "history").mkdir(parents=True)
        return tmp_path / "used", "holds files already"
    if case == "file":
        (tmp_path / "f").write_text("x")
        return tmp_path / "f", "is a file, not a"
    if case == "missing-parent":
        return tmp_path / "no" / "such" / "out", f"the folder it goes in, {tmp_path / 'no' / 'such'}, does not exist"
    (tmp_path / "f").write_text("x")
    return tmp_path / "f" / "out", f"{tmp_path / 'f'} is a file, so nothing can be made under it"


CASES = ["non-empty", "file", "missing-parent", "under-a-file"]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("command", [["run", "baseline"], ["soak", "--runs", "1", "--scenarios", "baseline"]])
def test_a_bad_out_folder_is_refused_before_anything_starts(tmp_path: Path, case: str, command: list[str],
                                                            nothing_started: list[Any]) -> None:
    out, says = _out(tmp_path, case)
    before = sorted(tmp_path.rglob("*"))
    refused(cli(*command, "--out", str(out)), f"--out {out}", says, "--out takes a new folder")
    assert nothing_started == [] and sorted(tmp_path.rglob("*")) == before  # nothing made


def test_an_empty_or_new_out_folder_is_used(tmp_path: Path, nothing_started: list[Any]) -> None:
    (tmp_path / "empty").mkdir()
    for out in (tmp_path / "empty", tmp_path / "new"):
        assert STARTED in cli("run", "baseline", "--out", str(out)).output
    assert [a[3] for a in nothing_started] == [tmp_path / "empty", tmp_path / "new"]


@pytest.mark.parametrize("case", ["missing-parent", "under-a-file"])
def test_a_bad_matrix_out_folder_is_refused(tmp_path: Path, case: str) -> None:
    out, says = _out(tmp_path, case)
    refused(cli("matrix", "--scenarios", "baseline", "--out", str(out)), f"--out {out}", says)
    assert not out.exists()


@pytest.mark.parametrize("case", ["folder", "missing-parent", "under-a-file"])
def test_a_bad_report_out_file_is_refused_and_nothing_is_written(run: Path, tmp_path: Path, case: str) -> None:
    if case == "folder":
        out, says = tmp_path / "somewhere", "is a folder; --out takes a file name"
        out.mkdir()
    else:
        out, says = _out(tmp_path, case)
    refused(cli("report", str(run), "--out", str(out)), f"--out {out}", says)
    assert not out.is_file() and not list(tmp_path.rglob(".*.tmp*"))


def _not_a_file(tmp_path: Path, case: str) -> Path:
    """A path in ``tmp_path`` that exists as ``case``: a symlink to a file, a FIFO, a device node."""
    path = tmp_path / f"out-{case}"
    if case == "symlink":
        (tmp_path / "target.html").write_text("the link's target")
        path.symlink_to(tmp_path / "target.html")
    elif case == "fifo":
        os.mkfifo(path)
    else:
        try:  # a /dev/null of our own (major 1, minor 3), so no real device is at stake
            os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        except PermissionError:
            pytest.skip("device nodes cannot be made here")
    return path


@pytest.mark.parametrize("case, says", [("symlink", "is a symbolic link"), ("fifo", "is a FIFO"),
                                        ("device", "is a character device")])
def test_an_out_that_is_no_regular_file_is_refused_and_left_as_it_was(run: Path, tmp_path: Path, case: str,
                                                                       says: str) -> None:
    """A write by rename replaces what is at the path: as root, ``report --out /dev/full`` made the
    device an HTML file. Only a regular file or a new path is written; the report, the index and
    the repro folder's files share the writer."""
    out = _not_a_file(tmp_path, case)
    before = out.lstat()
    refused(cli("report", str(run), "--out", str(out)), f"--out {out} {says}", "(a regular file or a new one)")
    with pytest.raises(ConfigError, match=f"{out} cannot be written \\(it {says}"):
        write_output(out, "text")
    index = tmp_path / "results" / INDEX
    shutil.copytree(run, index.parent / "run")
    os.symlink(out, index)
    refused(cli("index", str(index.parent)), f"{index} cannot be written (it is a symbolic link")
    after = out.lstat()
    assert (after.st_mode, after.st_ino, after.st_rdev) == (before.st_mode, before.st_ino, before.st_rdev)
    if case == "symlink":
        assert (tmp_path / "target.html").read_text() == "the link's target"


def test_an_unwritable_folder_is_refused_by_its_access_check(tmp_path: Path, nothing_started: list[Any],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Root writes in a read-only folder all the same, so the check is proved with ``os.access``
    saying no (a read-only mount cannot be made here)."""
    monkeypatch.setattr(runfolder.os, "access", lambda *a, **kw: False)
    refused(cli("run", "baseline", "--out", str(tmp_path / "new")), f"its folder {tmp_path} cannot be written")
    (tmp_path / REPORT).write_text("an old report")
    with pytest.raises(ConfigError, match="the file cannot be written"):
        check_out(tmp_path / REPORT, "--out", file=True)
    assert nothing_started == []


def test_a_write_that_fails_names_the_path_and_leaves_nothing(tmp_path: Path) -> None:
    (tmp_path / "in-the-way").mkdir()
    with pytest.raises(ConfigError, match=f"{tmp_path / 'in-the-way'} cannot be written"):
        write_output(tmp_path / "in-the-way", "text")
    assert [p.name for p in tmp_path.iterdir()] == ["in-the-way"]
    (tmp_path / "f").write_text("x")
    for folder in (tmp_path / "f", tmp_path / "f" / "sub"):
        with pytest.raises(ConfigError, match=f"folder {folder} cannot be made"):
            make_folder(folder)
        with pytest.raises(ConfigError, match=f"folder {folder} cannot be made"):
            RunFolder(folder).create()


def test_index_names_an_index_html_it_cannot_write(made: Path, tmp_path: Path) -> None:
    shutil.copytree(made, tmp_path / "run")
    (tmp_path / INDEX).mkdir()
    refused(cli("index", str(tmp_path)), f"{tmp_path / INDEX} cannot be written")


# ---- the cluster record and the folders the environment names ----

@pytest.fixture
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "state"
    d.mkdir()
    monkeypatch.setenv("EOS_CHAOS_STATE", str(d))
    return d


def _record() -> state.ClusterRecord:
    return state.ClusterRecord(backend="local", cluster_id="c1", run_dir="/nowhere", kafka_version="4.1.1", net=1,
                               port_base=19092, api_port=18474, owner_pid=None, node_pids={"1": 5},
                               overrides={"a.b": "1"}, transaction_version=2)


def test_a_record_loads_back_as_saved(state_dir: Path) -> None:
    state.save(_record())
    assert state.load("local") == _record()


def test_a_record_with_unknown_fields_is_exit_2_naming_the_file_and_kept(state_dir: Path) -> None:
    data = {**asdict(_record()), "future_field": 1}
    path = state_dir / "local.json"
    path.write_text(json.dumps(data))
    r = cli("cluster", "status", "--backend", "local")
    refused(r, f"{path}: not a cluster record this eos-chaos reads (unknown fields: future_field)",
            "another version of eos-chaos")
    assert json.loads(path.read_text()) == data
    del data["future_field"]
    path.write_text(json.dumps({**data, "net": "one"}))
    with pytest.raises(ConfigError, match="net: Input should be a valid integer"):
        state.load("local")


@pytest.mark.parametrize("content", [b'{"backend": "loc', b"\xff\xfe{}", b"[1]"])
def test_status_keeps_a_record_it_cannot_parse_aside_and_says_so(state_dir: Path, content: bytes) -> None:
    (state_dir / "local.json").write_bytes(content)
    r = cli("cluster", "status", "--backend", "local")
    assert r.exit_code == 2 and "no local cluster is up" in r.stdout, r.output
    kept = list(state_dir.glob("local.json.broken-*"))
    assert len(kept) == 1 and kept[0].read_bytes() == content
    assert not (state_dir / "local.json").exists()
    assert f"{state_dir / 'local.json'}: " in r.stderr and f"kept aside as {kept[0]}" in r.stderr


def test_a_spark_record_that_is_a_folder_is_kept_aside(state_dir: Path) -> None:
    (state_dir / SPARK_RECORD).mkdir()
    r = cli("cluster", "status", "--backend", "local", "--json")
    assert r.exit_code == 2 and '"spark": null' in r.stdout and "internal error" not in r.output, r.output
    assert list(state_dir.glob(f"{SPARK_RECORD}.broken-*"))


@pytest.mark.parametrize("variable, folder", [("EOS_CHAOS_STATE", paths.state_dir), ("EOS_CHAOS_CACHE", paths.cache_dir),
                                              ("EOS_CHAOS_RESULTS", paths.results_dir)])
def test_a_variable_naming_a_file_for_a_folder_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               variable: str, folder: Any) -> None:
    (tmp_path / "f").write_text("x")
    for value, says in ((tmp_path / "f", "is a file"), (tmp_path / "f" / "sub", f"is under {tmp_path / 'f'}, which is a file")):
        monkeypatch.setenv(variable, str(value))
        with pytest.raises(ConfigError, match=f"^{variable}={value} {says}: {variable} names a folder"):
            folder()
    monkeypatch.setenv(variable, str(tmp_path / "new"))
    assert folder() == tmp_path / "new"


def test_status_with_the_state_variable_naming_a_file_is_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "f").write_text("x")
    monkeypatch.setenv("EOS_CHAOS_STATE", str(tmp_path / "f"))
    refused(cli("cluster", "status"), f"EOS_CHAOS_STATE={tmp_path / 'f'} is a file")
    assert os.listdir(tmp_path) == ["f"]
