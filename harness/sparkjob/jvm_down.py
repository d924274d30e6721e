"""Ctrl-C or SIGTERM during a Spark session of this process: the session's JVM taken down, and one
``KeyboardInterrupt`` for the CLI to turn into exit 130.

Left to PySpark, an interrupt went wrong three ways: py4j logged the ``KeyboardInterrupt`` it was
sending a command under as a traceback; a later call over the broken connection raised a py4j error,
an "internal error"; or Python exited with the JVM still running (it exits on its stdin's end, which
did not always come; and PySpark starts it with SIGINT ignored). So, while ``interrupts_end_the_jvm``
holds: the first Ctrl-C or SIGTERM is noted and raised (later ones, while taking down, ignored);
whatever the body then raises becomes that interrupt; the JVM (the process tree PySpark started,
found under this process) gets SIGTERM, and SIGKILL when it is still there after ``JVM_STOP_S``."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Iterator
from types import FrameType

#: How long the JVM gets to run its shutdown hooks (Spark removes its temp folders) after SIGTERM
#: before SIGKILL: a local checker JVM stopped in 1-3 s here; more only when the machine starves it.
JVM_STOP_S = 10.0
#: The last argument PySpark gives ``spark-submit`` (pyspark/java_gateway.py), in every process of
#: the chain it starts (the bash script, the launcher, the JVM the script becomes): how ours are known.
PYSPARK_MARK = b"pyspark-shell"
_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class _Quiet(logging.Filter):
    """Drops py4j's ``logging.exception("KeyboardInterrupt while sending command.")``: the interrupt
    is said once, by the CLI."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, KeyboardInterrupt)


class JvmGuard:
    """What ``interrupts_end_the_jvm`` yields: whether an interrupt came, and ``arm``."""

    def __init__(self) -> None:
        self.interrupted = False
        self._before: dict[int, object] = {}

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self.interrupted:
            return  # a second Ctrl-C while taking the JVM down: that is under way already
        self.interrupted = True
        raise KeyboardInterrupt

    def arm(self) -> None:
        """Ctrl-C and SIGTERM to this guard (again after PySpark set its own SIGINT handler, which
        makes a py4j call to cancel the jobs first); an ignored signal stays ignored."""
        for sig in _SIGNALS:
            current = signal.getsignal(sig)
            self._before.setdefault(sig, current)
            if self._before[sig] is not signal.SIG_IGN:
                signal.signal(sig, self._on_signal)

    def disarm(self) -> None:
        for sig, handler in self._before.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]  # what getsignal gave


@contextlib.contextmanager
def interrupts_end_the_jvm() -> Iterator[JvmGuard]:
    """A guard for the Spark session started inside: on Ctrl-C or SIGTERM the JVM is taken down
    (``take_down``) and ``KeyboardInterrupt`` raised, whatever py4j made of it. Signals can be
    handled only in the main thread: elsewhere, a guard that does nothing."""
    guard = JvmGuard()
    if threading.current_thread() is not threading.main_thread():
        yield guard
        return
    quiet = _Quiet()
    root = logging.getLogger()  # py4j logs to the root logger
    root.addFilter(quiet)
    guard.arm()
    try:
        yield guard
        if guard.interrupted:  # a body that swallowed the interrupt
            raise KeyboardInterrupt
    except BaseException as exc:
        if not (guard.interrupted or isinstance(exc, KeyboardInterrupt)):
            raise
        guard.interrupted = True
        take_down()
        raise KeyboardInterrupt from None
    finally:
        guard.disarm()
        root.removeFilter(quiet)


def _parents() -> dict[int, int]:
    """Every process's parent, from /proc (pid -> ppid)."""
    found: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue  # gone meanwhile
        # the name (field 2) is in parentheses and may hold spaces: the fields after its last ')'
        found[int(entry.name)] = int(stat[stat.rindex(b")") + 2:].split()[1])
    return found


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


def our_jvms(parent: int | None = None) -> list[int]:
    """The processes PySpark started under ``parent`` (default: this process) and their descendants:
    the children whose command line carries ``PYSPARK_MARK``, and everything under them."""
    parents = _parents()
    top = parent if parent is not None else os.getpid()
    found = [pid for pid, ppid in parents.items() if ppid == top and PYSPARK_MARK in _cmdline(pid)]
    for pid in found:  # grows while it is walked: breadth first
        found += [child for child, ppid in parents.items() if ppid == pid and child not in found]
    return found


def _alive(pid: int) -> bool:
    """``pid`` is running (a child that ended is reaped here, as nothing else will)."""
    with contextlib.suppress(ChildProcessError):
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rindex(b")") + 2:][:1] != b"Z"


def take_down(deadline_s: float = JVM_STOP_S) -> list[int]:
    """SIGTERM to ``our_jvms``, SIGKILL to those still there after ``deadline_s``; the pids."""
    pids = our_jvms()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        end = time.monotonic() + deadline_s
        while any(_alive(p) for p in pids) and time.monotonic() < end:
            time.sleep(0.1)
        if not any(_alive(p) for p in pids):
            break
    return pids
