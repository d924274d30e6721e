"""A consumer group's committed offsets, asked through a consumer handle of that group that never
joins it (``GroupOffsets``).

Not ``AdminClient.list_consumer_group_offsets``: librdkafka (2.16.0, the one confluent-kafka 2.16.1
bundles, and its main branch as read in 2026-07) answers a coordinator's ``NOT_COORDINATOR`` or
``COORDINATOR_NOT_AVAILABLE`` to an admin client's OffsetFetch by asking the client's own consumer
group to look its coordinator up again (``rd_kafka_handle_OffsetFetch`` -> ``rd_kafka_cgrp_op(
rk->rk_cgrp, ...)``), and an admin client has no consumer group: a NULL dereference on librdkafka's
thread, SIGSEGV of the whole process. A group's coordinator moves whenever a broker is killed or the
cluster rebalances its leaders, which is what a run does (and what ``bench app`` met while it polled
the copier's new group). tests/unit/test_group_offsets.py shows the crash on librdkafka's mock cluster
and that this way survives the same answers. A consumer's handle has its group, so the same answer
makes it look the coordinator up again and ask again.

The handle is never subscribed or assigned: it does not join the group, commits nothing and leaves
nothing behind (``enable.auto.commit`` off). ``read_uncommitted`` makes librdkafka ask without
``require_stable``, as the admin call did: offsets a transaction has not committed yet are answered,
not waited for.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from clusters.kafka.health import QUIET
from harness.history.model import READ_UNCOMMITTED

#: a coordinator's answers that say "ask again, elsewhere or later" (the handle finds the coordinator anew)
COORDINATOR_MOVING = frozenset({KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_NOT_AVAILABLE,
                                KafkaError.COORDINATOR_LOAD_IN_PROGRESS})
#: between two askings of a moving coordinator: its new place is known within a metadata round trip
RETRY_S = 0.2


class GroupOffsets:
    """The committed offsets of consumer group ``group``, asked over ``bootstrap``; close it (or use it
    as a context manager) when done."""

    def __init__(self, bootstrap: str, group: str) -> None:
        self.group = group
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                                  "isolation.level": READ_UNCOMMITTED, "logger": QUIET})

    def __enter__(self) -> GroupOffsets:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.consumer.close()

    def committed(self, partitions: Iterable[TopicPartition], timeout: float) -> dict[tuple[str, int], int]:
        """``(topic, partition) -> offset`` for each of ``partitions`` the group has committed an offset
        for (the others left out: an empty dict when it has committed none). ``KafkaException`` when the
        cluster does not answer within ``timeout`` seconds."""
        asked = [TopicPartition(tp.topic, tp.partition) for tp in partitions]
        if not asked:
            return {}
        deadline = time.monotonic() + timeout
        while True:
            try:
                got = self.consumer.committed(asked, timeout=max(0.1, deadline - time.monotonic()))
                break
            except KafkaException as exc:
                # a coordinator that moved or loads: the handle looks it up again; asked again until the deadline
                if exc.args[0].code() not in COORDINATOR_MOVING or time.monotonic() + RETRY_S >= deadline:
                    raise
                time.sleep(RETRY_S)
        return {(tp.topic, tp.partition): tp.offset for tp in got if tp.error is None and tp.offset >= 0}

    def topics_named_after_group(self, timeout: float) -> dict[str, int]:
        """Topics whose name starts with ``<group>-`` (a Kafka Streams app's repartition topics, whose
        offsets its group commits beside its inputs') and their partition counts."""
        md = self.consumer.list_topics(timeout=timeout)
        return {name: len(t.partitions) for name, t in md.topics.items()
                if name.startswith(f"{self.group}-") and t.error is None}
