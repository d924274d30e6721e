"""What "healthy" means, asked of the cluster over the never-faulted DIRECT listener."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from confluent_kafka.admin import AdminClient

from harness.base.wait import wait_until

#: One metadata request; the surrounding wait has the real deadline.
METADATA_TIMEOUT_S = 5.0

#: librdkafka logs every refused connection; during faults that is noise, so it goes nowhere.
QUIET = logging.getLogger("eos_chaos.librdkafka")
QUIET.addHandler(logging.NullHandler())
QUIET.propagate = False


def admin_client(direct_bootstrap: str) -> AdminClient:
    """An Admin client on the DIRECT listener; librdkafka's connection chatter goes to a quiet logger."""
    # Typed as a plain dict: confluent-kafka's stubs omit the documented `logger` entry.
    conf: dict[str, object] = {
        "bootstrap.servers": direct_bootstrap,
        "socket.connection.setup.timeout.ms": 5000,
        "reconnect.backoff.max.ms": 1000,
        "logger": QUIET,
    }
    return AdminClient(conf)  # type: ignore[arg-type]


@dataclass(frozen=True)
class QuorumView:
    """One node's view of the raft quorum, read from its ``quorum-state`` file."""

    node: int
    leader: int | None
    epoch: int


def read_quorum_state(node: int, metadata_dir: Path) -> QuorumView | None:
    """Each KRaft node persists its current leader and epoch at every election."""
    try:
        return parse_quorum_state(node, (metadata_dir / "__cluster_metadata-0" / "quorum-state").read_text())
    except FileNotFoundError:
        return None


def parse_quorum_state(node: int, text: str) -> QuorumView | None:
    try:
        data = json.loads(text)
    except ValueError:
        return None
    leader = data.get("leaderId", -1)
    return QuorumView(node=node, leader=leader if leader is not None and leader >= 0 else None, epoch=int(data.get("leaderEpoch", -1)))


def raft_leader(views: list[QuorumView], quorum_size: int) -> int | None:
    """The leader a majority of voters agree on at the newest epoch, or None."""
    known = [v for v in views if v.leader is not None]
    if not known:
        return None
    newest = max(v.epoch for v in known)
    at_newest = [v.leader for v in known if v.epoch == newest]
    leader = at_newest[0]
    agree = sum(1 for v in known if v.epoch == newest and v.leader == leader)
    return leader if agree > quorum_size // 2 and len(set(at_newest)) == 1 else None


@dataclass
class Health:
    """A snapshot of cluster health; ``ok`` when nothing below is wrong."""

    brokers: list[int] = field(default_factory=list)
    raft_leader: int | None = None
    under_replicated: list[str] = field(default_factory=list)
    offline: list[str] = field(default_factory=list)
    expected: list[int] = field(default_factory=list)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return (
            self.error is None
            and sorted(self.brokers) == sorted(self.expected)
            and self.raft_leader is not None
            and not self.under_replicated
            and not self.offline
        )

    def describe(self) -> str:
        parts = [f"brokers registered {sorted(self.brokers)} of {sorted(self.expected)}", f"raft leader {self.raft_leader}"]
        if self.under_replicated:
            parts.append(f"under-replicated {self.under_replicated[:5]}{' ...' if len(self.under_replicated) > 5 else ''}")
        if self.offline:
            parts.append(f"leaderless {self.offline[:5]}")
        if self.error:
            parts.append(f"metadata error: {self.error}")
        return "; ".join(parts)


def probe(admin: AdminClient, expected: list[int], views: list[QuorumView]) -> Health:
    """Ask for metadata of every topic; never raises (an error is part of the snapshot)."""
    health = Health(expected=list(expected), raft_leader=raft_leader(views, len(expected)))
    try:
        md = admin.list_topics(timeout=METADATA_TIMEOUT_S)
    except Exception as exc:  # noqa: BLE001 - an unreachable cluster is a state, not a crash
        health.error = str(exc)
        return health
    health.brokers = sorted(md.brokers)
    for topic in md.topics.values():
        if topic.error is not None:
            health.offline.append(f"{topic.topic}: {topic.error}")
            continue
        for p in topic.partitions.values():
            name = f"{topic.topic}-{p.id}"
            if p.leader < 0:
                health.offline.append(name)
            elif len(p.isrs) < len(p.replicas):
                health.under_replicated.append(f"{name} isr {sorted(p.isrs)} of {sorted(p.replicas)}")
    return health


class _Observable(Protocol):
    topology: Any

    def health(self) -> Health: ...

    def node_state(self, node: int) -> Any: ...


def wait_healthy(cluster: _Observable, timeout: float) -> None:
    """Poll ``cluster.health()`` until ok; fail at once when a node is not up (it cannot get healthy)."""
    last: list[Health] = []

    def healthy() -> bool:
        h = cluster.health()
        last[:] = [h]
        return h.ok

    def node_down() -> str | None:
        states = {n: cluster.node_state(n).value for n in cluster.topology.node_ids}
        down = {n: s for n, s in states.items() if s != "up"}
        return f"nodes {down} are not up, so the cluster cannot become healthy" if down else None

    wait_until(healthy, timeout=timeout, what="the cluster to be healthy (3 brokers registered, a raft leader, "
               "no under-replicated partitions)", fatal=node_down,
               state=lambda: last[0].describe() if last else "no answer yet")
