"""What a history's tables were built from, so that ``store`` knows when they are stale: each
history file's name, size and content hash, and a digest of the code that flattens. ``store``
keeps this record beside the Parquet tables and rebuilds them from the JSON lines when it no longer
matches.

File times cannot decide this: an edit that keeps (or puts back, ``os.utime``) a file's time and
size left the old tables in use, and ``eos-chaos check`` gave the old verdict (issue 31). The
content hash decides. Hashing costs about what loading the tables costs (10M values: 2.6 GB of
JSON lines, 4-5 s of sha256, against 4.3 s to load the Parquet on a quiet machine;
docs/BENCHMARKS.md), so a file is read again only when its stat differs from the one recorded:
(size, mtime, ctime, inode), which takes milliseconds. ctime changes with
every write, ``utime`` and ``chmod``, and no call sets it back, so an edit whose mtime was put back
still changes it. A file last changed less than ``RACY_NS`` before its stat was taken gets no stat
recorded (always hashed, until a later load records one): it could change again within the same
tick of the file system's clock without its ctime moving (git's "racily clean" entries).

A history file is refused (``ConfigError``, naming it and why) when it cannot be opened, is not a
regular file (a named pipe would block the reader for ever), or resolves outside the run folder
(through a symlink, or a dangling one): a run folder's verdict depends on its own files only.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from harness.base.errors import ConfigError
from harness.rundir.runfolder import unreadable

#: The content hash: sha256, as ``hashlib`` has it (OpenSSL: SHA extensions where the CPU has them;
#: 1.2-2.8 times blake2b's speed here, docs/BENCHMARKS.md).
HASH = "sha256"
#: Bytes read at a time when a file is hashed.
CHUNK = 1 << 20
#: A file changed this recently when its stat was taken gets no stat recorded (module docstring).
#: Two seconds: the coarsest timestamps a file system keeps (FAT's mtime), far above Linux's tick.
RACY_NS = 2_000_000_000


@dataclass(frozen=True)
class FileKey:
    """One history file as its tables were built from it."""

    size: int
    #: ``HASH`` of its bytes, hex
    digest: str
    #: (mtime_ns, ctime_ns, inode) when they were recorded; None: to be hashed at the next load
    stat: tuple[int, int, int] | None

    def to_json(self) -> dict[str, Any]:
        return {"size": self.size, HASH: self.digest, "stat": list(self.stat) if self.stat is not None else None}

    @staticmethod
    def from_json(data: Any) -> FileKey:
        """``ValueError`` (or ``KeyError``/``TypeError``) for anything ``to_json`` did not write."""
        st = data["stat"]
        if st is not None and (len(st) != 3 or not all(isinstance(x, int) for x in st)):
            raise ValueError(f"stat {st!r}")
        if not isinstance(data["size"], int) or not isinstance(data[HASH], str):
            raise ValueError(f"size {data['size']!r}, {HASH} {data[HASH]!r}")
        return FileKey(data["size"], data[HASH], (st[0], st[1], st[2]) if st is not None else None)


#: file name (in the history folder) -> its key
Files = dict[str, FileKey]


def history_files(folder: Path) -> list[Path]:
    """The ``*.jsonl`` files in ``folder``, by name (none when the folder is missing); ``ConfigError``
    when the folder cannot be listed (an unreadable folder must not pass for an empty history)."""
    try:
        names = [e.name for e in os.scandir(folder) if e.name.endswith(".jsonl")]
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise unreadable(folder, exc) from None
    return [folder / n for n in sorted(names)]


def _refuse_outside(path: Path, root: Path) -> None:
    """``ConfigError`` when ``path`` is a dangling symlink, or resolves outside the run folder ``root``."""
    try:
        target = path.resolve()
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop, before Python 3.13
        raise ConfigError(f"{path}: cannot be resolved ({exc})") from None
    if path.is_symlink() and not target.exists():
        raise ConfigError(f"{path}: a symlink to {target}, which does not exist (a dangling symlink): a history "
                          "file must be a file of the run folder")
    folder = root.resolve()
    if not target.is_relative_to(folder):
        raise ConfigError(f"{path}: resolves to {target}, outside the run folder {folder}: a run's history must be "
                          "files of its own folder (copy the file in instead of linking to it)")


def _open(path: Path, root: Path) -> io.FileIO:
    """The history file ``path`` opened for reading, after the checks of the module docstring."""
    _refuse_outside(path, root)
    try:
        # O_NONBLOCK: opening a named pipe nobody writes to returns at once (and is refused below)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise unreadable(path, exc) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        what = "a folder" if stat.S_ISDIR(mode) else "a named pipe" if stat.S_ISFIFO(mode) else "a device or socket"
        raise ConfigError(f"{path}: cannot be read ({what}, not a file)")
    return io.FileIO(fd, "rb")


def _stat_of(st: os.stat_result) -> tuple[int, int, int] | None:
    """The stat to record; None when the file changed too recently for it to be trusted."""
    if time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) < RACY_NS:
        return None
    return st.st_mtime_ns, st.st_ctime_ns, st.st_ino


def read(path: Path, root: Path) -> tuple[bytes, FileKey]:
    """The bytes of the history file ``path`` (of the run folder ``root``), and their key."""
    with _open(path, root) as f:
        try:
            st = os.fstat(f.fileno())  # before reading: a change while it is read moves the ctime past this one
            data = f.read()
        except OSError as exc:
            raise unreadable(path, exc) from None
    return data, FileKey(len(data), hashlib.new(HASH, data).hexdigest(), _stat_of(st))


def key_of(path: Path, root: Path, recorded: FileKey | None) -> FileKey:
    """The key of the history file ``path``: ``recorded`` itself when the file's size and stat are
    the ones recorded (not read), else hashed from its bytes, a ``CHUNK`` at a time."""
    with _open(path, root) as f:
        try:
            st = os.fstat(f.fileno())
            if recorded is not None and recorded.stat is not None and recorded.size == st.st_size \
                    and recorded.stat == (st.st_mtime_ns, st.st_ctime_ns, st.st_ino):
                return recorded
            size, digest = _digest(f)
        except OSError as exc:
            raise unreadable(path, exc) from None
    return FileKey(size, digest, _stat_of(st))


def _digest(f: io.FileIO) -> tuple[int, str]:
    """The size and ``HASH`` of what is left to read of ``f``, read a ``CHUNK`` at a time."""
    h, size, buf = hashlib.new(HASH), 0, bytearray(CHUNK)
    view = memoryview(buf)
    while n := f.readinto(buf):
        h.update(view[:n])
        size += n
    return size, h.hexdigest()


def keys_of(files: Iterable[Path], root: Path, recorded: Files) -> Files:
    """``key_of`` each of ``files``, by name."""
    return {f.name: key_of(f, root, recorded.get(f.name)) for f in files}


def differences(folder: str, recorded: Files, now: Files, most: int = 3) -> list[str]:
    """What differs between the files ``recorded`` and those there ``now``, in words, the first ``most``."""
    said = []
    for name in sorted(recorded.keys() | now.keys()):
        was, is_ = recorded.get(name), now.get(name)
        if was is None:
            said.append(f"{folder}/{name} is new")
        elif is_ is None:
            said.append(f"{folder}/{name} is gone")
        elif was.size != is_.size:
            said.append(f"{folder}/{name} changed ({was.size:,} -> {is_.size:,} bytes)")
        elif was.digest != is_.digest:
            said.append(f"{folder}/{name} changed (same size, other content)")
    return said[:most] + ([f"and {len(said) - most} more"] if len(said) > most else [])


def code_digests(modules: Iterable[ModuleType]) -> dict[str, str]:
    """Each module's file (source, or compiled when there is no source) -> ``HASH`` of its bytes."""
    out = {}
    for m in modules:
        path = Path(str(m.__file__))
        out[path.name] = hashlib.new(HASH, path.read_bytes()).hexdigest()
    return dict(sorted(out.items()))
