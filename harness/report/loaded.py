"""A run folder read once: its journal, its verdict and its history tables, handed to everything
that makes the report (``harness.report.data``, ``history.txt``), so that one command reads each
file once. The runner and ``eos-chaos check`` make one from what they already hold."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.base.errors import ConfigError
from harness.checker import VERDICT_FILE
from harness.history import store
from harness.rundir.journal import Journal
from harness.rundir.run_verdict import RunVerdict
from harness.rundir.runfolder import RunFolder, read_json_object


@dataclass
class LoadedRun:
    """A finished run as read from its folder (or as the run that wrote it holds it)."""

    folder: RunFolder
    #: None: a folder made before journals
    journal: Journal | None
    verdict: RunVerdict
    #: the history (``store.load``: values of Parquet-loaded tables stay on disk until asked for)
    tables: store.Tables

    @property
    def run_dir(self) -> Path:
        return self.folder.path


def read_json(path: Path, what: str) -> dict[str, Any]:
    """``path``'s JSON object; ``ConfigError`` naming the file and ``what`` its absence means, or
    what is wrong with it (a folder, bad bytes, not JSON, not an object: ``read_json_object``)."""
    data = read_json_object(path)
    if data is None:
        raise ConfigError(f"{path.parent} has no {path.name}: {what}")
    return data


def read_verdict(run_dir: Path) -> RunVerdict:
    """``run_dir``'s verdict; ``ConfigError`` if it is not a finished run folder."""
    if not run_dir.is_dir():
        raise ConfigError(f"run folder {run_dir} does not exist")
    where = run_dir / VERDICT_FILE
    return RunVerdict.of(read_json(where, "not a finished run (eos-chaos check RUN_DIR makes a verdict from its history)"), where)


def load_run(run_dir: Path, verdict: RunVerdict | None = None) -> LoadedRun:
    """The run in ``run_dir``, each of its files read once (``verdict``: already read). A history
    only in JSON lines is saved as Parquet on the way (the Spark engine and later reports read it)."""
    if verdict is None:
        verdict = read_verdict(run_dir)
    folder = RunFolder(run_dir)
    return LoadedRun(folder, Journal.load(folder), verdict, store.load(run_dir, persist=True))
