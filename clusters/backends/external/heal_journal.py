"""The heal journal of an external cluster: every change the harness makes on a node (a killed,
stopped or paused broker; a tc or iptables rule) is written to disk, and synced, *before* it is made,
and marked when it is undone. Heal, Ctrl-C and SIGTERM undo what is open; after a SIGKILL of the
runner, ``eos-chaos cluster heal --inventory FILE`` replays it. Every undo is idempotent, so
replaying a change that was already undone, or never made, is harmless.

One folder per inventory file: ``<state dir>/external/<name>-<sha8 of the file's path>/`` holds
``journal.jsonl``, ``lock`` (held by the process faulting the cluster, for its whole life) and
``owner.json`` (who holds it, for messages). A journal with nothing open is kept as
``journal-<time>.healed.jsonl`` for whoever audits the cluster.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from clusters.backends.external import chaos_mesh
from clusters.backends.external.inventory import Action, Inventory
from clusters.backends.external.lifecycle import Broker
from clusters.backends.external.transport import NodeCommandError
from clusters.backends.protocol import NodeState
from harness.base.errors import ClusterError, ConfigError, HarnessError
from harness.base.paths import state_dir

log = logging.getLogger(__name__)

JOURNAL_VERSION = 1
#: What undoes each change the harness makes to a broker.
UNDO_ACTION: dict[Action, Literal["start", "resume"]] = {"kill": "start", "stop": "start", "pause": "resume"}


class _Line(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    v: int = JOURNAL_VERSION
    seq: int
    id: int
    time: float


class UndoStep(BaseModel):
    """One step of an undo: a broker action (``start``: only if the broker is not up, then until it is;
    ``resume``: only if it is paused), or a script on the node or the control host."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    action: Literal["start", "resume"] | None = None
    run: str | None = None
    on: Literal["node", "control"] = "node"


class Applied(_Line):
    """A change about to be made on a node, and how to undo it."""

    op: Literal["apply"] = "apply"
    owner: str  # "<pid>:<host>" of the process that made it
    node: int
    what: str  # kill, stop, pause, net-chain, tc-root, ...
    detail: dict[str, Any] = {}
    undo: tuple[UndoStep, ...]


class Settled(_Line):
    """What became of a change: made (``done``), undone, or its undo failed (it stays open)."""

    op: Literal["done", "undone", "undo-failed"]
    rc: int | None = None
    err: str | None = None


JournalLine = Annotated[Applied | Settled, Field(discriminator="op")]
_LINE: TypeAdapter[Applied | Settled] = TypeAdapter(JournalLine)


def folder_for(inv: Inventory, root: Path | None = None) -> Path:
    """Where the journal of ``inv`` (read from its file) lives."""
    where = str(inv.path.resolve()) if inv.path else inv.name
    return (root or state_dir()) / "external" / f"{inv.name}-{hashlib.sha256(where.encode()).hexdigest()[:8]}"


class JournalBusy(ConfigError):
    """Another live process holds the journal: it is faulting the cluster now."""


@dataclass
class HealJournal:
    """The journal in ``folder``; ``lock()`` before writing to it."""

    folder: Path
    _lock: IO[str] | None = None
    _seq: int = 0
    _torn: list[str] = field(default_factory=list)

    @property
    def path(self) -> Path:
        return self.folder / "journal.jsonl"

    def lock(self) -> None:
        """Hold the journal for this process's life (the kernel lets go when it dies, SIGKILL too);
        JournalBusy naming the holder if a live process holds it."""
        self.folder.mkdir(parents=True, exist_ok=True)
        f = (self.folder / "lock").open("a+")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.close()
            raise JournalBusy(f"the cluster's heal journal {self.folder} is held by {self._owner()}: it is faulting "
                              "this cluster now; wait for it to end (or stop it: it heals on Ctrl-C and SIGTERM)") from None
        self._lock = f
        (self.folder / "owner.json").write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                                            "since": time.time()}) + "\n")
        self._seq = max((line.seq for line in self.lines()), default=0)

    def unlock(self) -> None:
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def _owner(self) -> str:
        try:
            o = json.loads((self.folder / "owner.json").read_text())
            return f"pid {o['pid']} on {o['host']} (since {time.strftime('%H:%M:%S', time.localtime(o['since']))})"
        except (OSError, ValueError, KeyError, TypeError):
            return "another process"

    def _write(self, line: Applied | Settled) -> None:
        if self._lock is None:
            raise ClusterError(f"the heal journal {self.path} is written only while it is held (lock() first)")
        with self.path.open("a") as f:
            f.write(line.model_dump_json() + "\n")
            f.flush()
            os.fsync(f.fileno())  # on disk before the change is made: a SIGKILL next leaves it to replay

    def _next(self) -> int:
        self._seq += 1
        return self._seq

    def apply(self, node: int, what: str, undo: tuple[UndoStep, ...], detail: dict[str, Any] | None = None) -> int:
        """Record a change about to be made on ``node`` (synced to disk); its id."""
        seq = self._next()
        self._write(Applied(seq=seq, id=seq, time=time.time(), owner=f"{os.getpid()}:{socket.gethostname()}",
                            node=node, what=what, detail=detail or {}, undo=undo))
        return seq

    def mark(self, change: int, op: Literal["done", "undone", "undo-failed"], rc: int | None = None,
             err: str | None = None) -> None:
        """Record what became of change ``change``."""
        self._write(Settled(seq=self._next(), id=change, time=time.time(), op=op, rc=rc, err=err))

    def lines(self) -> list[Applied | Settled]:
        """Every line of the journal; a line that does not parse (the last one, torn by a crash mid-write)
        is set aside (``torn``) and the rest kept."""
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return []
        out: list[Applied | Settled] = []
        self._torn = []
        for raw in text.splitlines():
            try:
                out.append(_LINE.validate_json(raw))
            except ValidationError:
                self._torn.append(raw)
        return out

    @property
    def torn(self) -> list[str]:
        """The lines the last ``lines()`` could not read."""
        return list(self._torn)

    def open_changes(self) -> list[Applied]:
        """The changes made and not undone yet, oldest first."""
        lines = self.lines()
        closed = {line.id for line in lines if isinstance(line, Settled) and line.op == "undone"}
        return [line for line in lines if isinstance(line, Applied) and line.id not in closed]

    def retire(self) -> Path | None:
        """Keep a journal with nothing open as ``journal-<time>.healed.jsonl``; its new path (None: none, or still open)."""
        if not self.path.exists() or self.open_changes():
            return None
        kept = self.folder / f"journal-{time.strftime('%Y%m%d-%H%M%S')}-{time.time_ns() % 10**9:09d}.healed.jsonl"
        self.path.rename(kept)
        self._seq = 0
        return kept


@dataclass
class NodeChanges:
    """Changes to brokers, each journaled before it is made: what the external backend's node faults call."""

    journal: HealJournal
    brokers: dict[int, Broker]

    def change(self, node: int, action: Action, detail: dict[str, Any] | None = None) -> int:
        """``action`` (kill, stop, pause) on ``node``'s broker, journaled first; the change's id."""
        if action not in UNDO_ACTION:
            raise ClusterError(f"{action} is not a change the journal undoes (allowed: {', '.join(UNDO_ACTION)})")
        b = self.brokers[node]
        undo: tuple[UndoStep, ...] = (UndoStep(action=UNDO_ACTION[action]),)
        if action == "kill" and b.node.broker.chaos_mesh and "kill" not in b.node.broker.commands:
            # the PodChaos is deleted first, then the pod waited for (its StatefulSet makes it again)
            undo = (UndoStep(run=chaos_mesh.kill_undo(b.tag, b.node), on="control"), *undo)
            detail = {**(detail or {}), "chaos_mesh": "PodChaos", "name": chaos_mesh.kill_name(b.tag, b.node)}
        change = self.journal.apply(node, action, undo, detail)
        ran = b.run(action, check=False)
        self.journal.mark(change, "done", rc=ran.rc)
        if ran.rc != 0:  # it stays open: whatever the command did is undone by the next heal
            raise NodeCommandError(b.node.where, " ".join(ran.argv[-1:]), f"exited {ran.rc}", ran.rc,
                                   ran.err.strip() or ran.out)
        return change

    def undo_node(self, node: int, what: tuple[str, ...] = tuple(UNDO_ACTION)) -> list[str]:
        """Undo the open changes of kinds ``what`` on ``node``, newest first; what failed."""
        return replay(self.journal, self.brokers, only=lambda a: a.node == node and a.what in what)


def undo(step: UndoStep, broker: Broker) -> str:
    """Run one undo step; what it did, in words."""
    if step.action == "start":
        state = broker.state()
        if state is NodeState.PAUSED:
            broker.run("resume")  # a stopped broker cannot start: a kill after a pause
            state = broker.state()
        if state is not NodeState.UP:
            broker.run("start")
            # its status says up (the inventory's ``broker.start_timeout_s``): a status, not a Metadata
            # answer; the cluster's health is waited for by the backend
            broker.wait_state(NodeState.UP, timeout=broker.node.broker.start_timeout_s)
            return "started"
        return "already up"
    if step.action == "resume":
        if broker.state() is NodeState.PAUSED:
            broker.run("resume")
            return "resumed"
        return "not paused"
    if step.run is not None:
        t = broker.on_control if step.on == "control" else broker.on_node
        t.run(step.run)
        return f"ran `{step.run}`"
    return "nothing to do"


def replay(journal: HealJournal, brokers: dict[int, Broker], only: Any = None) -> list[str]:
    """Undo every open change (those ``only(applied)`` accepts), newest first, marking each undone
    or undo-failed; the failures, one line each naming the node (an empty list: all undone)."""
    failed = []
    for a in reversed(journal.open_changes()):
        if only is not None and not only(a):
            continue
        b = brokers.get(a.node)
        if b is None:
            failed.append(f"node {a.node}: change {a.id} ({a.what}) is on a node the inventory no longer lists")
            continue
        try:
            for step in a.undo:
                log.info(f"{b.node.where}: undo {a.what} (change {a.id}): {undo(step, b)}")
            journal.mark(a.id, "undone")
        except HarnessError as exc:
            journal.mark(a.id, "undo-failed", err=str(exc)[-600:])
            failed.append(f"{b.node.where}: undoing {a.what} (change {a.id}) failed: {exc}")
    return failed


@contextmanager
def held(journal: HealJournal) -> Iterator[HealJournal]:
    """The journal held for the block."""
    journal.lock()
    try:
        yield journal
    finally:
        journal.unlock()
