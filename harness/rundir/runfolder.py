"""A run folder: one per run under ``results/``, named so they sort by time. ``RunFolder`` owns the
name of every file in it and every write of one, each atomic (temp file + ``os.replace``): a reader,
or a run killed mid-write, sees the old file or the new one, never half of one.

Layout::

    scenario.json      the resolved scenario (with seed and schedule), written once at the start
    journal.json       the run facts (harness/rundir/journal.py), written at the start and rewritten at the end
    verdict.json       the checker's verdict + run facts + expectation (harness/run/verdict_file.py)
    report.html        what a person reads (harness/report)
    run.log            the run's narrative (harness/base/logsetup.py)
    history/           one JSON-lines file per process (harness/history/recorder.py)
    history.parquet/   the history as tables (harness/history/store.py)
    workloads/         each workload's config and log (harness/run/supervisor.py)
    nodes/             each broker's config, data and log (clusters/)
    soak.json, soak.html   a soak's summary (harness/campaigns/soak.py), in the soak's folder

Beside the run folders, in the results folder: ``index.html``, every run in it (harness/report/
index_page.py), and ``latest``, a relative symlink to the run that finished last (one with a
verdict, so a report); both are rewritten when a run finishes.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.base.errors import ConfigError
from harness.base.paths import nearest_existing, results_dir

SCENARIO = "scenario.json"
JOURNAL = "journal.json"
VERDICT = "verdict.json"
REPORT = "report.html"
RUN_LOG = "run.log"
#: The history's folders. Their names belong to the history package (recorder.HISTORY_DIR,
#: store.PARQUET_DIR), which sits above this module and so cannot be imported here;
#: tests/unit/test_runfolder.py keeps the two spellings equal.
HISTORY = "history"
HISTORY_PARQUET = "history.parquet"
WORKLOADS = "workloads"
NODES = "nodes"
#: the wire proxy's event log (clusters/wire/kwire): the cluster's own when the run started the cluster,
#: else the run's slice of a shared cluster's, copied at the end of the run
WIRE_EVENTS = "wire-events.jsonl"
SOAK_JSON = "soak.json"
SOAK_HTML = "soak.html"
#: in the results folder, beside the run folders
INDEX = "index.html"
LATEST = "latest"


def new_run_id(kind: str) -> str:
    """``20261123-043417-<kind>-<4 hex>``: sorts by time, unique among runs started the same second."""
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{kind}-{secrets.token_hex(2)}"


#: The run's tag, put on its topic names (``NAME.<tag>``, harness.run.runner.physical), is this long
#: at most: a scenario's topic names keep ``1 + RUN_TAG_MAX`` of Kafka's 249 characters free for it.
RUN_TAG_MAX = 8
_TAG = re.compile(rf"[a-zA-Z0-9_]{{1,{RUN_TAG_MAX}}}")


def run_tag(name: str) -> str:
    """The tag of the run folder called ``name``: its last ``-`` part (``new_run_id``'s 4 hex); for a
    folder named otherwise (``--out``) whose last part is longer than ``RUN_TAG_MAX`` or holds
    characters a topic name cannot, the first 8 hex of its name's sha256."""
    last = name.rsplit("-", 1)[-1]
    return last if _TAG.fullmatch(last) else hashlib.sha256(name.encode()).hexdigest()[:RUN_TAG_MAX]


def new_run_dir(kind: str, parent: Path | None = None) -> Path:
    """A new, empty run folder under ``parent`` (default: the results folder)."""
    return make_folder((parent or results_dir()) / new_run_id(kind), exist_ok=False)


def point_latest(results: Path, run_dir: Path) -> Path:
    """``results/latest``, a relative symlink (it survives the results folder being moved or copied)
    to ``run_dir``, replaced atomically: a reader sees the old run or the new one, never no link."""
    link = results / LATEST
    tmp = results / f".{LATEST}.tmp{os.getpid()}-{secrets.token_hex(4)}"
    os.symlink(os.path.relpath(run_dir.resolve(), results.resolve()), tmp)
    try:
        os.replace(tmp, link)
    finally:
        tmp.unlink(missing_ok=True)  # only left when the rename failed
    return link


def write_text(path: Path, text: str) -> Path:
    """``path`` holding ``text``, written through a temporary file and a rename."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)  # only left when the write failed
    return path


def write_json(path: Path, data: Any) -> Path:
    """``path`` holding ``data`` as indented JSON (values JSON cannot hold as their ``str``), atomically."""
    return write_text(path, json.dumps(data, indent=2, default=str) + "\n")


def not_a_file(path: Path) -> str | None:
    """What ``path`` is when it exists as something other than a regular file (a symlink, a
    device node, a FIFO, a socket, a folder), in words; None when it is a regular file or absent.
    A write by rename would replace that thing with a file (as root, ``/dev/full`` itself), so a
    command's output may go only into a regular file or a new path."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot be looked at ({_why(exc)})"
    if stat.S_ISREG(mode):
        return None
    kinds = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"))
    return next((f"is {name}" for test, name in kinds if test(mode)), "is not a regular file")


def write_output(path: Path, text: str) -> Path:
    """``write_text`` for a file a command was asked to make (a report, an index page): a path
    that cannot be written is a ``ConfigError`` naming it, never an ``OSError`` (exit 2, not an
    internal error); so is one that exists as anything but a regular file (``not_a_file``), which
    is left as it was. Nothing is left half-written: the old file stays, and no temporary file."""
    what = not_a_file(path)
    if what is not None:
        raise ConfigError(f"{path} cannot be written (it {what}, which the write would replace); give a regular "
                          "file or a new path")
    try:
        return write_text(path, text)
    except OSError as exc:
        raise ConfigError(f"{path} cannot be written ({_why(exc)}); give a file in a folder that exists and "
                          "can be written") from None


def make_folder(path: Path, exist_ok: bool = True) -> Path:
    """``path`` as a folder, with its parents, made if missing (``exist_ok=False``: it must not
    exist); ``ConfigError`` naming it when it cannot be made (a read-only folder, a file in the way)."""
    try:
        path.mkdir(parents=True, exist_ok=exist_ok)
    except FileExistsError:
        if not exist_ok and path.is_dir():
            raise  # a folder of that name already: the caller's to avoid (a run id made twice)
        raise ConfigError(f"folder {path} cannot be made (a file of that name is in the way)") from None
    except OSError as exc:
        raise ConfigError(f"folder {path} cannot be made ({_why(exc)})") from None
    return path


def _why(exc: OSError | UnicodeDecodeError) -> str:
    """What went wrong reading or writing a file, in words (the path is said by the caller)."""
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 text: byte {exc.object[exc.start]:#04x} at offset {exc.start}"
    if isinstance(exc, IsADirectoryError):
        return "a folder, not a file"
    if isinstance(exc, NotADirectoryError):
        return "a file is in the way of a folder on its path"
    return exc.strerror or str(exc)


def unreadable(path: Path, exc: OSError | UnicodeDecodeError) -> ConfigError:
    """The ``ConfigError`` of a file that cannot be read: ``path``, and why."""
    return ConfigError(f"{path}: cannot be read ({_why(exc)})")


def read_json_object(path: Path) -> dict[str, Any] | None:
    """The JSON object in ``path``; None when there is no such file. ``ConfigError`` naming the
    file for anything else it is or holds: a folder, an unreadable file, bytes that are not UTF-8,
    text that is not JSON, JSON that is not an object."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise unreadable(path, exc) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a JSON object was expected, found {type(data).__name__}")
    return data


def check_out(path: Path, flag: str, what: str = "folder", *, file: bool = False, resumable: bool = False) -> Path:
    """Refuse, before anything starts, an output path a command cannot write to. ``path`` (given
    as ``flag``) is a ``file`` to (re)write, else a folder to make (``what``: "run folder", ...)
    that must be new or empty (a ``resumable`` one may hold an earlier result: the command checks
    it); a file that exists must be a regular one (``not_a_file``: a symlink, device node or FIFO
    would be replaced). Either way its parent must be a folder that exists and can be written. ``ConfigError``
    naming the path and what is allowed; ``path`` when it will do. ``os.access`` does not stop root,
    so the writes are guarded too (``write_output``, ``make_folder``)."""
    allowed = (f"{flag} takes a file name (a regular file or a new one) in a folder that exists and can be written" if file else
               f"{flag} takes a new folder (in one that exists and can be written), or an empty one"
               + (", or one an earlier run of this command made" if resumable else ""))
    if path.is_dir():
        if file:
            raise ConfigError(f"{flag} {path} is a folder; {allowed}")
        if not os.access(path, os.W_OK | os.X_OK):
            raise ConfigError(f"{flag} {path}: the folder cannot be written; {allowed}")
        if not resumable and any(path.iterdir()):
            raise ConfigError(f"{flag} {path} holds files already, which this command's would be mixed with; "
                              f"{allowed}")
        return path
    if path.exists() or path.is_symlink():
        if file:
            other = not_a_file(path)
            if other is not None:
                raise ConfigError(f"{flag} {path} {other}, which writing would replace; {allowed}")
            if not os.access(path, os.W_OK):
                raise ConfigError(f"{flag} {path}: the file cannot be written; {allowed}")
        else:
            raise ConfigError(f"{flag} {path} is a file, not a {what}; {allowed}")
    parent = path.parent
    blocker = nearest_existing(parent)
    if blocker is not None and not blocker.is_dir():
        raise ConfigError(f"{flag} {path}: {blocker} is a file, so nothing can be made under it; {allowed}")
    if blocker != parent:
        raise ConfigError(f"{flag} {path}: the folder it goes in, {parent}, does not exist; {allowed} "
                          f"(mkdir -p {parent} first)")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ConfigError(f"{flag} {path}: its folder {parent} cannot be written; {allowed}")
    return path


@dataclass(frozen=True)
class RunFolder:
    """The files of the run folder at ``path`` (which may not exist yet: ``create`` makes it)."""

    path: Path

    @classmethod
    def new(cls, kind: str, parent: Path | None = None) -> RunFolder:
        """A new, empty run folder under ``parent`` (default: the results folder)."""
        return cls(new_run_dir(kind, parent))

    def create(self) -> RunFolder:
        """This folder, made if missing (a ``--out`` folder may exist already); ``ConfigError``
        naming it when it cannot be made."""
        make_folder(self.path)
        return self

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def scenario(self) -> Path:
        return self.path / SCENARIO

    @property
    def journal(self) -> Path:
        return self.path / JOURNAL

    @property
    def verdict(self) -> Path:
        return self.path / VERDICT

    @property
    def report(self) -> Path:
        return self.path / REPORT

    @property
    def run_log(self) -> Path:
        return self.path / RUN_LOG

    @property
    def history(self) -> Path:
        return self.path / HISTORY

    @property
    def history_parquet(self) -> Path:
        return self.path / HISTORY_PARQUET

    @property
    def workloads(self) -> Path:
        return self.path / WORKLOADS

    @property
    def nodes(self) -> Path:
        return self.path / NODES

    @property
    def wire_events(self) -> Path:
        return self.path / WIRE_EVENTS

    @property
    def soak_json(self) -> Path:
        return self.path / SOAK_JSON

    @property
    def soak_html(self) -> Path:
        return self.path / SOAK_HTML

    def read_json(self, path: Path) -> dict[str, Any] | None:
        """The JSON object in ``path`` (one of this folder's files), None if there is none;
        ``ConfigError`` naming the file when it is or holds something else (``read_json_object``)."""
        return read_json_object(path)
