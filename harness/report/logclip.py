"""Log lines within a time window, whatever stamps a log puts on its lines: Kafka's log4j
(``[2026-11-25 20:45:16,285]``), Java and Python loggers (``2026-11-25T20:45:16.285``,
``2026-11-25 20:45:16,285``), the TransactionalMessageCopier's JSON (``"time":"2026/11/25
20:51:03:270"``), librdkafka's own (``%7|1795637217.572|TXN|...``: seconds since the epoch). Every
stamp but librdkafka's is local time, as the machine that ran the run wrote it; a line with no
stamp (a stack trace's, a Go app's) goes with the stamped line before it.

``harness.report.repro`` clips the workloads' and the brokers' logs with it; nothing here reads the
history."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, tzinfo
from pathlib import Path

#: Kafka's log4j pattern ``[%d{ISO8601}]`` at the start of the line (the fast path: a broker's log
#: is tens of MB).
_KAFKA = re.compile(r"^\[(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d),(\d{3})\]")
#: A date and time anywhere in a line's first ``_LOOK`` characters (``-`` or ``/`` between the
#: date's parts; ``.``, ``,`` or ``:`` before the fraction).
_ANY = re.compile(r"(?<!\d)(\d{4})[-/](\d\d)[-/](\d\d)[T ](\d\d):(\d\d):(\d\d)(?:[.,:](\d{1,6}))?")
#: librdkafka's default log line: ``%LEVEL|SECONDS.MILLIS|FACILITY|NAME| message``.
_RDKAFKA = re.compile(r"^%\d\|(\d{9,}\.\d+)\|")
_LOOK = 200
#: A log written by several threads may put a line a little out of time order: the scan stops only
#: this far past the window.
_SLACK = timedelta(seconds=5)


def stamp_of(line: str, zone: tzinfo | None = None) -> datetime | None:
    """The local wall-clock time ``line`` is stamped with (naive), or None. ``zone``: the run's time
    zone, for stamps in seconds since the epoch (None: this machine's)."""
    m = _KAFKA.match(line) or _ANY.search(line, 0, _LOOK)
    if m is not None:
        y, mo, d, h, mi, s, frac = m.groups()
        try:
            return datetime(int(y), int(mo), int(d), int(h), int(mi), int(s), int((frac or "0").ljust(6, "0")[:6]))
        except ValueError:  # 2026-13-45: digits that look like a date but are not one
            return None
    r = _RDKAFKA.match(line)
    if r is not None:
        return datetime.fromtimestamp(float(r.group(1)), zone).replace(tzinfo=None)
    return None


@dataclass
class Clipped:
    """What of a log falls in a window."""

    #: the lines kept (at most the cap given), in the log's order, without their newline
    lines: list[str] = field(default_factory=list)
    #: how many lines matched in all (more than ``lines`` when the cap cut them)
    matched: int = 0
    #: the log has no stamp a line could be placed by: ``lines`` are its last lines, unclipped
    unstamped: bool = False
    #: the stamps of the first and the last line kept
    first: datetime | None = None
    last: datetime | None = None


def clip(path: Path, lo: datetime, hi: datetime, pattern: re.Pattern[str] | None = None, cap: int = 20_000,
         zone: tzinfo | None = None, max_chars: int = 2000) -> Clipped:
    """The lines of ``path`` stamped from ``lo`` to ``hi`` (local times) that ``pattern`` finds
    (None: every one), at most ``cap``, each cut at ``max_chars``. A log with no stamp at all gives
    its last ``cap`` lines, marked ``unstamped``: a Go or Python app's log may stamp nothing, and a
    short one is still worth reading whole. The scan stops at the first stamp ``_SLACK`` past ``hi``
    (logs are written in time order, nearly)."""
    out = Clipped()
    tail: deque[str] = deque(maxlen=cap)  # a log with no stamp: its last lines
    unstamped = 0
    stamp: datetime | None = None
    for line in _lines(path):
        now = stamp_of(line, zone)
        if now is not None:
            stamp = now
            if stamp > hi + _SLACK:
                break
        if stamp is None:
            tail.append(line[:max_chars])
            unstamped += 1
            continue
        if not lo <= stamp <= hi or (pattern is not None and not pattern.search(line)):
            continue
        out.matched += 1
        if len(out.lines) < cap:
            out.lines.append(line[:max_chars])
            out.first = out.first or stamp
            out.last = stamp
    if stamp is None:
        out.lines, out.matched, out.unstamped = list(tail), unstamped, True
    return out


def _lines(path: Path) -> Iterator[str]:
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            for line in f:
                yield line.rstrip("\n")
    except OSError:
        return
