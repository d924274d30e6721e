"""The ``Client``, ``Reader`` and ``GroupReader`` protocols over a client bridge: a child process that
hosts one workload process's clients of one library version and is spoken to over its
stdin/stdout, one JSON object per line each way, one request at a time (the Java bridge,
``harness/workloads/clients/java_src/eoschaos/Bridge.java``, and the Go bridges, ``harness/workloads/clients/go_src``, speak the same
protocol; docs/CLIENTS.md). What differs per library (the command, the settings, how a producer
and a group reader pair) is in ``java.py`` and ``gobridge.py``.

Records travel in bulk: ``send`` only buffers in Python; ``flush`` (or a full buffer) hands the
records to the bridge in one message, and ``flush``'s answer carries their offsets.

The bridge is this process's child in this process's group: a kill-workload or pause-workload fault
(``killpg``) hits it too, it inherits the process tags (``clusters/backends/procs.py``: reclaimed like the
workload), and it exits when its stdin closes, i.e. when this process ends in any way.
"""

from __future__ import annotations

import logging
import os
import select
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from harness.workloads.client import CALL_TIMEOUT_S, ClientError, ErrorFacts, OnOffset, Record

log = logging.getLogger(__name__)

#: A bridge starts in well under a second here; generous for a loaded machine.
START_TIMEOUT_S = 60.0
#: Past a call's own timeout, how long its answer may take (a flush's sends may each wait for
#: metadata first; a bridge that stays silent longer is broken).
ANSWER_MARGIN_S = 120.0
#: Records buffered by ``send`` before they go to the bridge without waiting for a flush.
SEND_CHUNK = 5000
#: How long closing a client may take (a consumer leaves its group: bounded in the bridge).
CLOSE_TIMEOUT_S = 30.0
#: A wait that lasts longer than its slice by this much was frozen (SIGSTOP of the group): frozen
#: time does not count against a deadline, or every pause-workload fault would end in a bogus timeout.
FROZEN_SLACK_S = 1.0


class BridgeError(RuntimeError):
    """The bridge itself failed (died, stayed silent, or reported a bug of its own): never a Kafka
    error, so it is not a ``ClientError`` and takes the workload down, with the bridge's log above it."""


class BridgeClientError(ClientError):
    """A ``ClientError`` from the bridge, with the offsets of the records a failed flush did get
    acknowledged (send order; None: not acknowledged)."""

    def __init__(self, facts: ErrorFacts, partial: list[int | None] | None = None) -> None:
        super().__init__(facts)
        self.partial = partial


def facts_from(err: dict[str, Any]) -> ErrorFacts:
    """The ``ErrorFacts`` of an ``error`` object the bridge sent (its extra fields, like the Java
    exception class, are in the message already)."""
    return ErrorFacts(str(err["name"]), str(err["message"]), retriable=bool(err.get("retriable")),
                      fatal=bool(err.get("fatal")), txn_requires_abort=bool(err.get("txn_requires_abort")),
                      fenced=bool(err.get("fenced")), timed_out=bool(err.get("timed_out")))


def owner_name() -> str:
    """Whose client this is: the workload's name (its config file is named after it), else the pid."""
    arg = sys.argv[1] if len(sys.argv) > 1 else ""
    return Path(arg).stem if arg.endswith(".json") else f"pid {os.getpid()}"


class LineBridge:
    """One bridge process: started with ``command``, answering ``hello`` within the start timeout.
    ``what`` names it in errors ("the java client JVM")."""

    def __init__(self, command: list[str], what: str) -> None:
        self.what = what
        t0 = time.monotonic()
        # stderr inherited: the bridge's log lands in the workload's log. Same process group (no new
        # session): killpg of the workload reaches the bridge.
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None, close_fds=True)
        self._next = 0
        self._lock = threading.Lock()
        self._buf = b""
        self.hello: dict[str, Any] = self.request("hello", START_TIMEOUT_S)
        self.startup_s = time.monotonic() - t0

    def request(self, op: str, wait_s: float, **args: Any) -> Any:
        """Send one request and return its ``ok`` result; ``ClientError`` for a failed client call
        (with the acknowledged offsets, if any, in ``partial``), ``BridgeError`` for a broken bridge."""
        answer = self.exchange(op, wait_s, **args)
        if "error" in answer:
            raise BridgeClientError(facts_from(answer["error"]), answer.get("offsets"))
        return answer.get("ok")

    def exchange(self, op: str, wait_s: float, **args: Any) -> dict[str, Any]:
        """Send one request and return the whole answer (``ok`` or ``error``)."""
        with self._lock:
            self._next += 1
            ident = self._next
            if self.proc.stdin is None or self.proc.poll() is not None:
                raise BridgeError(f"the {self.what} (pid {self.proc.pid}) is gone (exit {self.proc.returncode}); "
                                  "its output is in this workload's log")
            try:
                self.proc.stdin.write(orjson.dumps({"id": ident, "op": op, **args}) + b"\n")
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError) as exc:
                raise BridgeError(f"cannot write to the {self.what} (pid {self.proc.pid}): {exc}") from exc
            line = self._read_line(op, wait_s)
        answer: dict[str, Any] = orjson.loads(line)
        if "bug" in answer:
            raise BridgeError(f"the {self.what} failed on {op}: {answer['bug']} (its log is in this workload's log)")
        if answer.get("id") != ident:
            raise BridgeError(f"the {self.what} answered request {answer.get('id')} to request {ident} ({op})")
        return answer

    def _read_line(self, op: str, wait_s: float) -> bytes:
        """One answer line within ``wait_s`` of running time (time frozen by SIGSTOP excluded)."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        waited = 0.0
        while b"\n" not in self._buf:
            if waited > wait_s:
                self.kill()
                raise BridgeError(f"no answer from the {self.what} (pid {self.proc.pid}) to {op} within {wait_s:.0f}s; "
                                  f"last state: {len(self._buf)} bytes of a partial answer; killed it")
            t = time.monotonic()
            readable, _, _ = select.select([fd], [], [], 1.0)
            slept = time.monotonic() - t
            waited += slept if slept < 1.0 + FROZEN_SLACK_S else 1.0
            if readable:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    code = self.proc.wait(timeout=CLOSE_TIMEOUT_S)
                    raise BridgeError(f"the {self.what} (pid {self.proc.pid}) exited ({code}) during {op}; "
                                      "its output is in this workload's log")
                self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=CLOSE_TIMEOUT_S)

    def shutdown(self) -> None:
        """Close its stdin (the bridge ends on end of input) and reap it; kill it if it lingers."""
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self.kill()


@dataclass
class _Pending:
    """Records handed to the client but not yet acknowledged: what to tell ``on_offset`` per record."""

    records: list[tuple[str, int, str | None, str]] = field(default_factory=list)
    callbacks: list[tuple[bytes, OnOffset]] = field(default_factory=list)


@dataclass(frozen=True)
class GroupToken:
    """``GroupReader.group_metadata()`` of a bridged client: a snapshot of the consumer's group
    generation kept in the bridge, named by consumer handle and token."""

    consumer: int
    token: int


def _report(waiting: list[tuple[bytes, OnOffset]], offsets: list[int | None]) -> None:
    """``on_offset`` for every acknowledged record (offsets in send order, None: not acknowledged)."""
    for (value, on_offset), offset in zip(waiting, offsets):
        if offset is not None:
            on_offset(value, offset)


def close_handle(b: LineBridge, handle: int) -> None:
    """Close a client in the bridge; never raises (a broken bridge or client is being dropped anyway)."""
    try:
        b.request("close", CLOSE_TIMEOUT_S, h=handle)
    except (ClientError, BridgeError) as exc:
        log.info(f"closing {b.what} client {handle}: {exc}")


class BridgedClient:
    """A transactional producer in a bridge behind the ``Client`` protocol. A library's subclass says
    how its bridge is had (``_open_bridge``), its settings (``_config``) and its group reader's name."""

    #: the class name ``send_offsets`` asks group metadata of, in its error
    GROUP_READER = "GroupReader"

    def __init__(self, version: str, bootstrap: str, txn_id: str, transaction_timeout_ms: int,
                 overrides: dict[str, Any] | None = None) -> None:
        self.bridge = self._open_bridge(version)
        conf = self._config(bootstrap, txn_id, transaction_timeout_ms, overrides or {})
        self.handle = int(self.bridge.request("producer.open", CLOSE_TIMEOUT_S, config=conf, **self._pairing(version)))
        self.buffer = _Pending()       # sent by the workload, not yet handed to the bridge
        self.in_flight: list[tuple[bytes, OnOffset]] = []  # handed to the bridge, not yet reported

    def _open_bridge(self, version: str) -> LineBridge:
        raise NotImplementedError

    def _config(self, bootstrap: str, txn_id: str, transaction_timeout_ms: int, overrides: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def _pairing(self, version: str) -> dict[str, Any]:
        """Extra ``producer.open`` arguments: none unless the library pairs producers with consumers."""
        return {}

    def _call(self, op: str, timeout_s: float, **args: Any) -> Any:
        return self.bridge.request(op, timeout_s + ANSWER_MARGIN_S, h=self.handle, timeout=timeout_s, **args)

    def init(self, timeout_s: float) -> None:
        self._call("producer.init", timeout_s)

    def begin(self) -> None:
        self.buffer, self.in_flight = _Pending(), []  # the bridge forgets the last transaction's records too
        self._call("producer.begin", 0)

    def send(self, topic: str, partition: int, value: bytes, key: bytes | None, on_offset: OnOffset) -> None:
        self.buffer.records.append((topic, partition, None if key is None else key.decode("latin-1"), value.decode()))
        self.buffer.callbacks.append((value, on_offset))
        if len(self.buffer.records) >= SEND_CHUNK:
            records, self.in_flight = self._take()
            self._call("producer.send", 0, records=records)

    def _take(self) -> tuple[list[tuple[str, int, str | None, str]], list[tuple[bytes, OnOffset]]]:
        """The buffered records to hand over, and every callback they and earlier ones await."""
        records, waiting = self.buffer.records, self.in_flight + self.buffer.callbacks
        self.buffer = _Pending()
        return records, waiting

    def flush(self, timeout_s: float) -> None:
        records, waiting = self._take()
        self.in_flight = []
        if not records and not waiting:
            return
        try:
            offsets = self._call("producer.flush", timeout_s, records=records)
        except BridgeClientError as exc:
            _report(waiting, exc.partial or [])
            raise
        _report(waiting, offsets)

    def send_offsets(self, offsets: dict[tuple[str, int], int], group_metadata: object, timeout_s: float) -> None:
        if not isinstance(group_metadata, GroupToken):
            raise TypeError(f"send_offsets needs the group metadata of a {self.GROUP_READER}, "
                            f"not {type(group_metadata).__name__}")
        self._call("producer.send_offsets", timeout_s, offsets=[[t, p, o] for (t, p), o in offsets.items()],
                   group=group_metadata.consumer, token=group_metadata.token)

    def commit(self, timeout_s: float) -> None:
        self._call("producer.commit", timeout_s)

    def abort(self, timeout_s: float) -> None:
        self._call("producer.abort", timeout_s)

    def close(self) -> None:
        close_handle(self.bridge, self.handle)


class BridgedConsumer:
    """What both readers share: a consumer in the bridge, its polls, its close."""

    def __init__(self, bridge: LineBridge, conf: dict[str, Any], **spec: Any) -> None:
        self.bridge = bridge
        self.handle = int(self.bridge.request("consumer.open", CLOSE_TIMEOUT_S, config=conf, **spec))

    def _call(self, op: str, timeout_s: float, **args: Any) -> Any:
        return self.bridge.request(op, timeout_s + ANSWER_MARGIN_S, h=self.handle, **args)

    def poll(self, max_records: int, timeout_s: float) -> list[Record]:
        rows = self._call("consumer.poll", timeout_s, max=max_records, timeout=timeout_s)
        return [(str(t), int(p), int(o), str(v)) for t, p, o, v in rows]

    def close(self) -> None:
        close_handle(self.bridge, self.handle)


class BridgedGroupMember(BridgedConsumer):
    """The ``GroupReader`` calls over a subscribe-mode consumer in the bridge."""

    def positions(self) -> dict[tuple[str, int], int]:
        return {(str(t), int(p)): int(o) for t, p, o in self._call("consumer.positions", CALL_TIMEOUT_S)}

    def group_metadata(self) -> object:
        return GroupToken(self.handle, int(self._call("consumer.group_metadata", 0)))

    def rewind(self, timeout_s: float) -> None:
        self._call("consumer.rewind", timeout_s, timeout=timeout_s)
