"""A run folder is read once per command: ``eos-chaos check`` (checker, verdict, report and
history.txt) and ``eos-chaos report`` load the journal once and enter the history store once,
then hand the loaded run (``harness.report.loaded.LoadedRun``) to everything that needs it. Spies
on the journal loader and on every function of ``harness.history.store`` that reads a run's
files count what one command does to a hand-made run folder."""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.history import store, text
from harness.rundir.journal import Journal
from tests.unit.test_report import FAULTS, make_run

#: The store's ways into a run folder's files (``values_at`` and friends read the values of tables
#: already loaded: part of that one load, by design kept on disk).
STORE_READERS = ("load", "read_ops", "read_tables", "read_table", "ensure_parquet", "table_file", "read_meta", "parquet_is_current",
                 "stale_because")


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Counts of journal loads (``journal``) and of entries into the store from outside it
    (``store``; a store function calling another is one entry), with what entered (``store:NAME``)."""
    counts: Counter[str] = Counter()
    depth = [0]

    def spy(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if depth[0] == 0:
                counts["store"] += 1
                counts[f"store:{name}"] += 1
            depth[0] += 1
            try:
                return fn(*args, **kwargs)
            finally:
                depth[0] -= 1
        return wrapper

    for name in STORE_READERS:
        monkeypatch.setattr(store, name, spy(name, getattr(store, name)))
    real = Journal.load.__func__  # type: ignore[attr-defined]

    def load(cls: type[Journal], *args: Any, **kwargs: Any) -> Journal | None:
        counts["journal"] += 1
        return real(cls, *args, **kwargs)  # type: ignore[no-any-return]

    monkeypatch.setattr(Journal, "load", classmethod(load))
    yield counts


def test_check_loads_the_journal_once_and_enters_the_store_once(tmp_path: Path, counted: Counter[str]) -> None:
    run = make_run(tmp_path, "duplicate", "counted", faults=FAULTS)
    (run / "report.html").unlink(missing_ok=True)
    counted.clear()
    r = CliRunner().invoke(app, ["check", str(run)])
    assert r.exit_code == 1, r.output  # the duplicate is found
    assert (run / "report.html").is_file() and (run / text.HISTORY_TEXT).is_file()
    assert counted["journal"] == 1, counted
    assert counted["store"] == 1, counted
    assert counted["store:load"] == 1, counted


def test_a_check_of_json_lines_only_still_reads_them_once(tmp_path: Path, counted: Counter[str]) -> None:
    run = make_run(tmp_path, "", "lines-only")
    for p in (run / store.PARQUET_DIR).iterdir():
        p.unlink()
    (run / store.PARQUET_DIR).rmdir()
    counted.clear()
    r = CliRunner().invoke(app, ["check", str(run)])
    assert r.exit_code == 0, r.output
    assert "p1                   ok     txn           t-0@0=a1 t-1@0=a2" in (run / text.HISTORY_TEXT).read_text()
    assert (counted["journal"], counted["store"]) == (1, 1), counted


def test_report_loads_the_journal_once_and_enters_the_store_once(tmp_path: Path, counted: Counter[str]) -> None:
    run = make_run(tmp_path, "duplicate", "reported", faults=FAULTS)
    counted.clear()
    r = CliRunner().invoke(app, ["report", str(run)])
    assert r.exit_code == 0, r.output
    assert (counted["journal"], counted["store"]) == (1, 1), counted


@pytest.mark.parametrize("batch", [text.BATCH, 4])
def test_history_txt_reads_the_same_from_tables_loaded_from_parquet_or_flattened_from_lines(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch: int) -> None:
    monkeypatch.setattr(text, "BATCH", batch)  # 4: a transaction's records and a scan span batches
    run = make_run(tmp_path, "duplicate", "both", faults=FAULTS)
    loaded = store.load(run)
    assert loaded.values_file is not None and loaded.values is None  # the values stay on disk
    from_parquet = text.write_history_text(run, loaded).read_text()
    ops, truncated = store.read_ops(run)
    from_lines = text.write_history_text(run, store.flatten(ops, truncated)).read_text()
    assert from_parquet == from_lines
    assert "ok     txn           t-0@0=a1 t-1@0=a2" in from_lines and "(+" in from_lines  # a scan's records cut
