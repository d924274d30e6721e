"""Topics and who leads their partitions, through an ``AdminClient`` (DIRECT listener)."""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]  # not in its __all__

from harness.base.errors import HarnessError
from harness.base.wait import wait_until

#: Creating a topic with RF 3 takes well under a second on a healthy cluster.
TOPIC_TIMEOUT_S = 60.0


def create_topic(admin: AdminClient, name: str, partitions: int, replication: int = 3,
                 config: dict[str, str] | None = None) -> None:
    """Create ``name`` (with topic ``config``) and wait until every partition has a leader."""
    futures = admin.create_topics([NewTopic(name, partitions, replication, config=config or {})], operation_timeout=30)
    try:
        futures[name].result(timeout=TOPIC_TIMEOUT_S)
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
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
