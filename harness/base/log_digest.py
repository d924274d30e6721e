"""What a process's log says went wrong, in a few lines: the exception it died of (a Java stack
trace's header with its first ``at`` and ``Caused by`` lines, a Python traceback's last line and
innermost frame), its ERROR lines (the first and the last, and how many), and its last lines.

Why not only the last lines: a Kafka Streams client that dies of ``MissingSourceTopicException``
logs the exception once, then a dozen "Closing reporter ..." lines while it shuts down; the last 12
lines of its log were all of those. Pure: lines in, a digest out (``digest_file`` reads a file)."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: A line longer than this is cut (a JSON log line, a minified stack): a digest stays readable.
LINE_CHARS = 300
#: The last lines a digest keeps (the log's end: what the process did last).
TAIL_LINES = 12
#: Stack lines kept under an exception's header: its first ``at`` frames ...
AT_LINES = 3
#: ... and its ``Caused by`` chain (each with its first frame).
CAUSES = 4
#: How many exceptions a digest keeps: the first and the last of the log are shown.
EXCEPTIONS_KEPT = 2

#: A Java stack trace's header at the start of a line: ``[Exception in thread "x" ]a.b.FooException[: msg]``
#: (a qualified class whose name ends in Exception or Error; ``Caused by: ``/``Suppressed: `` lines are causes).
_JAVA_HEADER = re.compile(r'^(?:Exception in thread "[^"]*" )?((?:[A-Za-z_$][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error|Throwable))(?::|\s*$)')
_JAVA_AT = re.compile(r"^\s+at [\w$.<>/]+\(")
_JAVA_CAUSE = re.compile(r"^\s*Caused by: ")
_JAVA_MORE = re.compile(r"^\s+\.\.\. \d+ more")
_PY_TRACEBACK = "Traceback (most recent call last):"
_PY_FRAME = re.compile(r'^\s+File "')
#: A log level that says something failed, as a word (log4j, slf4j, Python's logging, JUL).
_ERROR = re.compile(r"(?<![\w-])(?:ERROR|FATAL|SEVERE|CRITICAL)(?![\w-])")
#: The wrapper's own lines in an app's log (``[eos-chaos] ...``): never the app's error.
_OURS = "[eos-chaos]"


def _cut(line: str) -> str:
    line = line.rstrip("\r\n")
    return line if len(line) <= LINE_CHARS else line[:LINE_CHARS] + " ..."


@dataclass
class LogDigest:
    """A log's exceptions (each as its lines: header, first frames, causes), its first and last
    ERROR lines and how many, its last lines, and how many lines it had."""

    exceptions: list[list[str]] = field(default_factory=list)
    #: exceptions in the log, all told (``exceptions`` keeps the first and the last)
    exception_count: int = 0
    first_error: str | None = None
    last_error: str | None = None
    error_count: int = 0
    tail: list[str] = field(default_factory=list)
    lines: int = 0

    @property
    def failed(self) -> bool:
        """The log shows an exception or an ERROR line."""
        return bool(self.exceptions) or self.error_count > 0

    def headline(self) -> str | None:
        """The one line that says most: the last exception's header (a Python one's message), else
        the last ERROR line; None for a log that shows neither."""
        if self.exceptions:
            last = self.exceptions[-1]
            return last[-1].strip() if last[0] == _PY_TRACEBACK else last[0].strip()
        return self.last_error

    def lines_out(self, tail: int = TAIL_LINES) -> list[str]:
        """The digest as lines of text: the exceptions, the ERROR lines, then the last ``tail`` lines."""
        out: list[str] = []
        for i, exc in enumerate(self.exceptions):
            which = ("the first" if i == 0 else "the last") if self.exception_count > 1 else "the"
            out.append(f"{which} exception of {self.exception_count} in it:" if self.exception_count > 1
                       else "the exception in it:")
            out += [f"  {line}" for line in exc]
        if self.error_count:
            out.append(f"its ERROR lines ({self.error_count}), the first and the last:" if self.error_count > 1
                       else "its ERROR line:")
            out += [f"  {e}" for e in dict.fromkeys(x for x in (self.first_error, self.last_error) if x is not None)]
        kept = self.tail[-tail:] if tail else []
        if kept:
            out.append(f"its last {len(kept)} lines (of {self.lines}):")
            out += [f"  {line}" for line in kept]
        elif not self.lines:
            out.append("it is empty")
        return out

    def text(self, indent: str = "  ", tail: int = TAIL_LINES) -> str:
        """``lines_out`` as one block, each line indented by ``indent``."""
        return "\n".join(indent + line for line in self.lines_out(tail))

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> LogDigest:
        """A digest as ``to_json`` gave it (a field it lacks: empty)."""
        return cls(exceptions=[[str(x) for x in e] for e in d.get("exceptions") or []],
                   exception_count=int(d.get("exception_count") or 0), first_error=d.get("first_error"),
                   last_error=d.get("last_error"), error_count=int(d.get("error_count") or 0),
                   tail=[str(x) for x in d.get("tail") or []], lines=int(d.get("lines") or 0))

    def to_json(self) -> dict[str, Any]:
        return {"exceptions": self.exceptions, "exception_count": self.exception_count,
                "first_error": self.first_error, "last_error": self.last_error, "error_count": self.error_count,
                "tail": self.tail, "lines": self.lines}


class _Exception:
    """An exception being read: its header, then its frames and causes as they come."""

    def __init__(self, header: str, python: bool) -> None:
        self.lines = [header]
        self.python = python
        self.ats = 0  # frames kept under the current header or cause
        self.causes = 0
        self.frame: str | None = None  # a Python traceback's latest frame
        #: a Java message that carries a Python traceback (PySpark: "... Return Message: Traceback ..."):
        #: its frames and exception line follow, then the Java frames
        self.embedded = False

    def take(self, line: str, carries: bool) -> bool:
        """Whether ``line`` belongs to this exception (kept, or skipped as a frame beyond the first
        ones). ``carries``: the whole line (before it was cut) ends with a traceback's header."""
        return self._take_python(line, carries) if self.python else self._take_java(line, carries)

    def _take_java(self, line: str, carries: bool) -> bool:
        if _JAVA_AT.match(line) or _JAVA_MORE.match(line):
            if self.ats < (AT_LINES if self.causes == 0 else 1) and not _JAVA_MORE.match(line):
                self.lines.append(line.strip())
                self.ats += 1
            return True
        if _JAVA_CAUSE.match(line):
            if self.causes < CAUSES:
                self.lines.append(line.strip())
            self.causes += 1
            self.ats = 0
            self.embedded = carries
            return True
        if line.startswith((" ", "\t")) or not line.strip():
            # a message's own lines: a Python traceback a PySpark error carries (its frames), SQLSTATE
            if _PY_FRAME.match(line):
                self.frame = line.strip()
            return True
        if self.embedded:
            # the Python exception at the end of the traceback the message carries: the real cause
            if self.causes <= CAUSES:  # the header's, or a cause's that is kept
                self.lines += [x for x in (self.frame, line.strip()) if x is not None]
            self.embedded, self.frame = False, None
            return True
        return False

    def _take_python(self, line: str, carries: bool) -> bool:
        if line.startswith((" ", "\t")) or not line.strip():
            if _PY_FRAME.match(line):
                self.frame = line.strip()
            return True
        # the first line at the margin: the exception and its message; the block ends with it,
        # unless its message carries another traceback (PySpark's: the Python error behind a Java one)
        self.lines += [x for x in (self.frame, line.strip()) if x is not None]
        self.frame = None
        return carries


class DigestBuilder:
    """A digest made line by line (a log as it is written, or a file read once)."""

    def __init__(self, tail: int = TAIL_LINES) -> None:
        self.d = LogDigest()
        self._tail: deque[str] = deque(maxlen=tail)
        self._open: _Exception | None = None

    def feed(self, raw: str) -> None:
        line = _cut(raw)
        self.d.lines += 1
        self._tail.append(line)
        carries = raw.rstrip().endswith(_PY_TRACEBACK)
        if self._open is not None:
            if self._open.take(line, carries):
                return
            python = self._open.python
            self._close()
            if python:
                return  # a traceback's exception line: its last, taken
        if line.startswith(_PY_TRACEBACK):
            self._open = _Exception(_PY_TRACEBACK, python=True)
        elif _JAVA_HEADER.match(line):
            self._open = _Exception(line.strip(), python=False)
            self._open.embedded = carries
        elif _ERROR.search(line) and not line.startswith(_OURS):
            self.d.error_count += 1
            self.d.first_error = self.d.first_error or line.strip()
            self.d.last_error = line.strip()

    def _close(self) -> None:
        exc, self._open = self._open, None
        if exc is None:
            return
        self.d.exception_count += 1
        if len(self.d.exceptions) < EXCEPTIONS_KEPT:
            self.d.exceptions.append(exc.lines)
        else:
            self.d.exceptions[-1] = exc.lines  # the first stays; the last is the latest

    def digest(self) -> LogDigest:
        """The digest of what was fed (an exception still open at the end counts as read)."""
        if self._open is not None:
            if self._open.python and self._open.frame is not None:
                self._open.lines.append(self._open.frame)
            self._close()
        self.d.tail = list(self._tail)
        return self.d


def digest_lines(lines: Iterable[str], tail: int = TAIL_LINES) -> LogDigest:
    """The digest of ``lines``."""
    b = DigestBuilder(tail)
    for line in lines:
        b.feed(line)
    return b.digest()


def digest_file(path: Path, tail: int = TAIL_LINES) -> LogDigest | str:
    """The digest of the log at ``path``, or why it could not be read (a sentence)."""
    try:
        with path.open(errors="replace") as f:
            return digest_lines(f, tail)
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"


def describe(path: Path | None, tail: int = TAIL_LINES, indent: str = "  ") -> str:
    """What ``path``'s log says went wrong, as an indented block for an error message."""
    if path is None:
        return f"{indent}(no log)"
    d = digest_file(path, tail)
    return f"{indent}({d})" if isinstance(d, str) else d.text(indent, tail)
