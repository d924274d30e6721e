"""Topics and who leads their partitions, through an ``AdminClient`` (DIRECT listener)."""

from __future__ import annotations

from concurrent.futures import Future

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]  # not in its __all__

from harness.base.errors import ConfigError, HarnessError
from harness.base.wait import wait_until

#: Creating a topic with RF 3 takes well under a second on a healthy cluster.
TOPIC_TIMEOUT_S = 60.0
#: What CreateTopics answers to a topic's settings it refuses (an unknown config, a bad value, too
#: many partitions): the scenario's to fix, not the cluster's.
REFUSED_SETTINGS = (KafkaError.INVALID_CONFIG, KafkaError.INVALID_PARTITIONS, KafkaError.INVALID_REPLICATION_FACTOR,
                    KafkaError.POLICY_VIOLATION, KafkaError.TOPIC_EXCEPTION, KafkaError.INVALID_REQUEST)


def create_topic(admin: AdminClient, name: str, partitions: int, replication: int = 3,
                 config: dict[str, str] | None = None, exist_ok: bool = True) -> None:
    """Create ``name`` (with topic ``config``) and wait until every partition has a leader. A topic
    of that name already there is taken as it is, unless not ``exist_ok`` (``HarnessError``).
    Settings Kafka refuses are ``ConfigError``, naming the topic and them."""
    futures = admin.create_topics([NewTopic(name, partitions, replication, config=config or {})], operation_timeout=30)
    try:
        futures[name].result(timeout=TOPIC_TIMEOUT_S)
    except KafkaException as exc:
        code = exc.args[0].code()
        if code in REFUSED_SETTINGS:
            raise ConfigError(f"topic {name}: Kafka refused to create it with {partitions} partitions and config "
                              f"{config or {}}: {exc.args[0].str()}") from None
        if code != KafkaError.TOPIC_ALREADY_EXISTS or not exist_ok:
            raise HarnessError(f"could not create topic {name}: {exc}") from exc

    def ready() -> bool:
        md = admin.list_topics(topic=name, timeout=5)
        t = md.topics.get(name)
        return bool(t and t.error is None and len(t.partitions) == partitions and all(p.leader >= 0 for p in t.partitions.values()))

    wait_until(ready, timeout=TOPIC_TIMEOUT_S, what=f"topic {name} to have a leader for all {partitions} partitions")


def partition_isr(admin: AdminClient, topic: str, partition: int) -> list[int]:
    """The node ids in the in-sync replica set of ``topic``-``partition``, sorted."""
    md = admin.list_topics(topic=topic, timeout=10)
    return sorted(md.topics[topic].partitions[partition].isrs)


def delete_topics(admin: AdminClient, names: list[str], timeout: float = TOPIC_TIMEOUT_S) -> list[str]:
    """Delete ``names`` (a topic already gone is fine); what could not be deleted, one line each."""
    if not names:
        return []
    return _not_deleted(admin.delete_topics(list(names), operation_timeout=30), "topic",
                        KafkaError.UNKNOWN_TOPIC_OR_PART, timeout)


def delete_groups_tagged(admin: AdminClient, tag: str, timeout: float = TOPIC_TIMEOUT_S) -> list[str]:
    """Delete every consumer group whose id carries ``tag`` (a run's: its groups are named with its
    tag); what could not be deleted, one line each."""
    listed = admin.list_consumer_groups(request_timeout=timeout).result(timeout=timeout)
    groups = [g.group_id for g in listed.valid if tag in g.group_id]
    if not groups:
        return []
    return _not_deleted(admin.delete_consumer_groups(groups, request_timeout=timeout), "group",
                        KafkaError.GROUP_ID_NOT_FOUND, timeout)


def _not_deleted(futures: dict[str, Future[None]], what: str, gone: int, timeout: float) -> list[str]:
    """One line per deletion that failed, but for ``gone`` (already deleted: fine)."""
    failed = []
    for name, future in futures.items():
        try:
            future.result(timeout=timeout)
        except KafkaException as exc:
            if exc.args[0].code() != gone:
                failed.append(f"{what} {name}: {exc.args[0].str()}")
    return failed
