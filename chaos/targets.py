"""Fault targets resolved at fault time: a node id, ``random``, or a role — the leader of a
partition, the transaction coordinator of a ``transactional.id``, the coordinator of a consumer
group, the active controller. Roles are asked of the cluster over the DIRECT listener, which no
fault touches.

confluent-kafka's Admin API has no FindCoordinator call, so a coordinator is found the way the
broker places it (``harness.kafka.placement``): ``__transaction_state`` (``__consumer_offsets``)
partition ``abs(javaHash(id)) % partitions``, whose leader is the coordinator.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Protocol

from harness.base.errors import WaitTimeout
from harness.base.wait import wait_until
from harness.kafka.placement import coordinator_partition

TXN_STATE_TOPIC = "__transaction_state"
OFFSETS_TOPIC = "__consumer_offsets"


@dataclass(frozen=True)
class TargetDefaults:
    """What a role is of when a fault gives no ``of``: plain data from the run's scenario."""

    #: leader: this topic's partition 0
    topic: str | None = None
    #: coordinator: of this transactional.id (the first txn-producer's); ending in ``*``, of the first
    #: (in name order) of the cluster's transactional.ids that start with what precedes it (an app's:
    #: ``{id}*``, whose ids the app chose)
    transactional_id: str | None = None
    #: group-coordinator: of this consumer group (the copier's)
    group: str | None = None


class _Admin(Protocol):
    def list_topics(self, topic: str | None = None, timeout: float = -1): ...  # type: ignore[no-untyped-def]


def leader(admin: _Admin, topic: str, partition: int, timeout: float = 10.0) -> int:
    md = admin.list_topics(topic=topic, timeout=timeout).topics[topic]
    if md.error is not None or partition not in md.partitions:
        raise LookupError(f"no metadata for {topic}-{partition}: {md.error}")
    node = md.partitions[partition].leader
    if node < 0:
        raise LookupError(f"{topic}-{partition} has no leader right now")
    return int(node)


def transaction_coordinator(admin: _Admin, transactional_id: str) -> int:
    parts = len(admin.list_topics(topic=TXN_STATE_TOPIC, timeout=10).topics[TXN_STATE_TOPIC].partitions)
    if parts == 0:
        raise LookupError(f"{TXN_STATE_TOPIC} does not exist yet (no transaction has started)")
    return leader(admin, TXN_STATE_TOPIC, coordinator_partition(transactional_id, parts))


def group_coordinator(admin: _Admin, group: str) -> int:
    parts = len(admin.list_topics(topic=OFFSETS_TOPIC, timeout=10).topics[OFFSETS_TOPIC].partitions)
    if parts == 0:
        raise LookupError(f"{OFFSETS_TOPIC} does not exist yet (no group has committed)")
    return leader(admin, OFFSETS_TOPIC, coordinator_partition(group, parts))


def prefixed_transaction_coordinator(direct_bootstrap: str, prefix: str) -> int:
    """The coordinator of the first (in name order) transactional.id starting with ``prefix`` that
    the cluster's coordinators know: each broker lists the transactions it coordinates
    (ListTransactions, KIP-664), asked as ``open_transactions`` asks. A broker that does not answer
    by the deadline (a fault killed it) leaves the first among those the others list.
    ``LookupError`` when there is none (yet)."""
    try:
        listed = _listed(direct_bootstrap, prefix)
    except IncompleteListing as exc:
        listed = exc.found
    if not listed:
        raise LookupError(f"no transactional.id starting with {prefix!r} on the cluster (yet): its app has not "
                          "initialised a transactional producer")
    return listed[min(listed)].node


#: How long the listing of open transactions may wait for every broker to answer: a broker a fault
#: just restarted refuses connections for a few seconds, and it may be the coordinator asked about.
LISTING_DEADLINE_S = 30.0


def open_transactions(direct_bootstrap: str, prefix: str, open_for_ms: int) -> list[str]:
    """The transactional.ids starting with ``prefix`` whose transaction is Ongoing at its coordinator and
    has been for over ``open_for_ms`` (ListTransactions with a duration filter, Kafka 3.8+), sorted.
    Each broker holds a slice of the transactions and is asked on its own, again until it answers
    (``LISTING_DEADLINE_S``: ``IncompleteListing`` naming the brokers that did not)."""
    return sorted(_listed(direct_bootstrap, prefix, state_filters=[ONGOING], duration_filter_ms=open_for_ms))


def transaction_states(direct_bootstrap: str, prefix: str) -> dict[str, str]:
    """Every transactional.id starting with ``prefix`` that the coordinators know, with its state
    (``Ongoing``: a transaction open; ``CompleteCommit``, ``Empty``, ...: none), asked as
    ``open_transactions`` asks."""
    return {txn_id: t.state for txn_id, t in _listed(direct_bootstrap, prefix).items()}


#: a transaction open at its coordinator (ListTransactions' state)
ONGOING = "Ongoing"


#: kafka-python's errors after which the listing makes its client again (its metadata lacks the broker)
NEW_CLIENT_AFTER = ("UnknownBrokerIdError", "NoBrokersAvailable")


@dataclass(frozen=True)
class Listed:
    """One transactional.id as its coordinator lists it."""

    state: str
    node: int


class IncompleteListing(WaitTimeout):
    """Not every broker answered by the deadline; ``found``: what those that did listed."""

    def __init__(self, message: str, found: dict[str, Listed]) -> None:
        super().__init__(message)
        self.found = found


def _listed(direct_bootstrap: str, prefix: str, **filters: object) -> dict[str, Listed]:
    """Every broker asked on its own until each has answered once: a broker down or still loading its
    coordinators (refused connections, ``COORDINATOR_LOAD_IN_PROGRESS``) is asked again, the others
    kept; the client itself is made again after a failure to bootstrap, or when its metadata lacks a
    broker (``UnknownBrokerIdError``, seen once for a whole deadline)."""
    from kafka.admin import KafkaAdminClient

    admins: list[KafkaAdminClient] = []
    found: dict[str, Listed] = {}
    brokers: set[int] = set()
    left: set[int] = set()
    fresh = [True]

    def ask() -> bool:
        if fresh[0]:
            admins.append(KafkaAdminClient(bootstrap_servers=direct_bootstrap, request_timeout_ms=5_000))
            fresh[0] = False
        if not brokers:
            brokers.update(int(b["broker_id"]) for b in admins[-1].describe_cluster()["brokers"])
            left.update(brokers)
        failed: Exception | None = None
        for broker in sorted(left):
            try:
                listed = admins[-1].list_transactions(broker_ids=[broker], **filters)
            except Exception as exc:  # noqa: BLE001 - each broker's failure is retried; the last one is reported
                failed = exc
                fresh[0] = fresh[0] or type(exc).__name__ in NEW_CLIENT_AFTER
                continue
            found.update((t.transactional_id, Listed(str(getattr(t.state, "value", t.state)), int(node)))
                         for node, txns in listed.items() for t in txns if t.transactional_id.startswith(prefix))
            left.discard(broker)
        if failed is not None:
            raise failed
        return not left

    try:
        wait_until(ask, timeout=LISTING_DEADLINE_S, what=f"every broker's transactions of {prefix}*",
                   state=lambda: f"brokers {sorted(left)} of {sorted(brokers) or '(not yet known)'} not answered")
    except WaitTimeout as exc:
        raise IncompleteListing(str(exc), dict(found)) from exc.__cause__
    finally:
        for admin in admins:
            admin.close()
    return found


def random_node(rnd: random.Random, nodes: tuple[int, ...]) -> int:
    return rnd.choice(list(nodes))
