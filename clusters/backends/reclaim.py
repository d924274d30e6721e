"""What a dead run left behind, named: the record a start, ``cluster down`` and ``cluster status``
share. A start and ``cluster down`` return what they took down; a status says what they would take."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from clusters.backends import procs, state
from clusters.toxiproxy.toxiproxy_api import Toxiproxy
from clusters.wire.wire_api import WireProxy
from harness.base.errors import FaultError

log = logging.getLogger(__name__)

Kind = Literal["process", "container", "network", "volume", "link fault", "node change"]


@dataclass(frozen=True)
class Leftover:
    """One thing left running: a host process (with its pid), a container, network or volume (by
    name), or a fault still on a Toxiproxy link."""

    kind: Kind
    name: str
    pid: int | None = None

    def __str__(self) -> str:
        return f"{self.kind} {self.name}" + (f" (pid {self.pid})" if self.pid else "")

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "pid": self.pid}


@dataclass
class Reclaimed:
    """Leftovers in the order they were found (each once); empty = nothing was left behind."""

    items: list[Leftover] = field(default_factory=list)

    def add(self, item: Leftover) -> None:
        if item not in self.items:
            self.items.append(item)

    def __iadd__(self, other: Reclaimed) -> Reclaimed:
        for item in other.items:
            self.add(item)
        return self

    def __add__(self, other: Reclaimed) -> Reclaimed:
        both = Reclaimed(list(self.items))
        both += other
        return both

    def __bool__(self) -> bool:
        return bool(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[Leftover]:
        return iter(self.items)

    def lines(self) -> list[str]:
        """One line per leftover, as the CLI prints them."""
        return [str(item) for item in self.items]

    def to_json(self) -> list[dict[str, Any]]:
        return [item.to_json() for item in self.items]


def process(t: procs.Tagged) -> Leftover:
    """A tagged process, named by what it runs (node 2, toxiproxy, workload reader-0, ...)."""
    return Leftover("process", procs.describe(t.pid), t.pid)


def processes(tagged: list[procs.Tagged]) -> Reclaimed:
    return Reclaimed([process(t) for t in tagged])


def kill_processes(tagged: list[procs.Tagged], why: str) -> Reclaimed:
    """SIGKILL each of ``tagged`` (logged with ``why``); returns them, named."""
    gone = Reclaimed()
    for t in tagged:
        item = process(t)
        log.info(f"reclaiming {item} of cluster {t.cluster_id}: {why}")
        procs.kill_hard(t.pid, str(item))
        gone.add(item)
    return gone


def dead_runs_processes(backend: str) -> list[procs.Tagged]:
    """Host processes of ours whose run is over: the process that spawned them is gone, and the
    owner died too, or they were detached and ``backend``'s record does not claim them. A run still
    going is left alone (a start still going as well: a detached start's first processes, the
    storage formatters, run before its record exists), and so is a cluster another backend records
    (its own start or ``cluster down`` takes it), and so is one of another state folder (another
    eos-chaos's: another user's, another test session's; ``procs.ENV_STATE``). The same for every
    backend: a compose run's workloads run on the host too."""
    own = state.claimed(backend)  # every xdist worker's record too (clusters/backends/state.py family)
    elsewhere = set().union(*(state.claimed(b) for b in state.BACKENDS if b != backend))
    return [t for t in procs.tagged_processes() if t.cluster_id not in elsewhere and not t.spawner_alive
            and state.of_family(t.state) and (t.orphaned or (t.owner == 0 and t.cluster_id not in own))]


def link_faults(tox: Toxiproxy, wire: WireProxy | None = None) -> Reclaimed:
    """The faults still on the links: Toxiproxy's (toxics, disabled proxies) and the wire proxy's
    (rules, held requests); nothing from a server whose API does not answer (a dead or frozen
    server takes its faults with it when it is stopped)."""
    found = Reclaimed()
    for server in (tox, wire):
        if server is None:
            continue
        try:
            found += Reclaimed([Leftover("link fault", problem) for problem in server.unhealed()])
        except FaultError as exc:
            log.info(f"cannot list the faults left on the links: {exc}")
    return found


@dataclass(frozen=True)
class Owner:
    """Who will stop a cluster: the process that started it (alive or dead), or nobody (detached,
    ``cluster up`` or ``run --keep``: it stays up until ``cluster down``)."""

    pid: int | None

    @property
    def detached(self) -> bool:
        return self.pid is None

    @property
    def dead(self) -> bool:
        """It was started by a process that is gone without stopping it: a crashed or killed run."""
        return self.pid is not None and self.pid != os.getpid() and not procs.alive(self.pid)

    def __str__(self) -> str:
        if self.detached:
            return "none (detached: up until `eos-chaos cluster down`)"
        return f"pid {self.pid}, " + ("dead (it never stopped its cluster)" if self.dead else "alive")

    def to_json(self) -> dict[str, Any]:
        return {"pid": self.pid, "alive": None if self.detached else not self.dead, "detached": self.detached}
