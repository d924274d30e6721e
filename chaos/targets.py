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
    (ListTransactions, KIP-664). ``LookupError`` when there is none (yet)."""
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=direct_bootstrap, request_timeout_ms=10_000)
    try:
        listed = admin.list_transactions()
    finally:
        admin.close()
    found = sorted((t.transactional_id, node) for node, txns in listed.items() for t in txns
                   if t.transactional_id.startswith(prefix))
    if not found:
        raise LookupError(f"no transactional.id starting with {prefix!r} on the cluster (yet): its app has not "
                          "initialised a transactional producer")
    return int(found[0][1])


#: How long the listing of open transactions may wait for every broker to answer: a broker a fault
#: just restarted refuses connections for a few seconds, and it may be the coordinator asked about.
LISTING_DEADLINE_S = 30.0


def open_transactions(direct_bootstrap: str, prefix: str, open_for_ms: int) -> list[str]:
    """The transactional.ids starting with ``prefix`` whose transaction is Ongoing at its coordinator and
    has been for over ``open_for_ms`` (ListTransactions with a duration filter, Kafka 3.8+), sorted.
    Each broker holds a slice of the transactions and is asked on its own, again until it answers
    (``LISTING_DEADLINE_S``: ``WaitTimeout`` naming the brokers that did not)."""
    return sorted(_listed(direct_bootstrap, prefix, state_filters=[ONGOING], duration_filter_ms=open_for_ms))


def transaction_states(direct_bootstrap: str, prefix: str) -> dict[str, str]:
    """Every transactional.id starting with ``prefix`` that the coordinators know, with its state
    (``Ongoing``: a transaction open; ``CompleteCommit``, ``Empty``, ...: none), asked as
    ``open_transactions`` asks."""
    return _listed(direct_bootstrap, prefix)


#: a transaction open at its coordinator (ListTransactions' state)
ONGOING = "Ongoing"


def _listed(direct_bootstrap: str, prefix: str, **filters: object) -> dict[str, str]:
    from kafka.admin import KafkaAdminClient
    from kafka.errors import UnknownBrokerIdError

    def admin_client() -> KafkaAdminClient:
        return KafkaAdminClient(bootstrap_servers=direct_bootstrap, request_timeout_ms=5_000)

    admins = [admin_client()]
    found: dict[str, str] = {}
    try:
        brokers = {int(b["broker_id"]) for b in admins[-1].describe_cluster()["brokers"]}
        left = set(brokers)

        def ask() -> bool:
            for broker in sorted(left):
                try:
                    listed = admins[-1].list_transactions(broker_ids=[broker], **filters)
                except UnknownBrokerIdError:
                    # the client's metadata lacks the broker (seen once: its bootstrap left it without the
                    # brokers' list, and it stayed so for the whole deadline): a new client bootstraps again
                    admins.append(admin_client())
                    raise
                found.update((t.transactional_id, str(getattr(t.state, "value", t.state)))
                             for txns in listed.values() for t in txns if t.transactional_id.startswith(prefix))
                left.discard(broker)
            return not left

        wait_until(ask, timeout=LISTING_DEADLINE_S, what=f"every broker's transactions of {prefix}*",
                   state=lambda: f"brokers {sorted(left)} of {sorted(brokers)} not answered")
    finally:
        for admin in admins:
            admin.close()
    return found


def random_node(rnd: random.Random, nodes: tuple[int, ...]) -> int:
    return rnd.choice(list(nodes))
