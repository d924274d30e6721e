"""Kafka load the real-cluster tests need besides the workloads."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from confluent_kafka import KafkaError, Message, Producer

from clusters.kafka.health import QUIET, admin_client
from harness.base.wait import wait_until
from harness.kafka.admin import partition_isr

#: One acks=all record per partition of a new topic: every follower must fetch it first (seconds
#: here; a node still catching up on metadata after the previous test's fault can take longer).
REPLICATED_TIMEOUT_S = 120.0


def replicated(bootstrap: str, topic: str, partitions: int = 3, timeout: float = REPLICATED_TIMEOUT_S) -> None:
    """Return once a record with acks=all is in every partition of ``topic``: each follower is then
    fetching for real. A new topic's ISR lists every replica before any follower fetched, so a test
    that waits for "some ISR loses node 2 or 3" could otherwise see a shrink of followers that never
    started (CI: a partition's ISR went from 1,2,3 to 2 alone, both followers at offset -1)."""
    results: dict[int, str] = {}

    def done(err: KafkaError | None, msg: Message) -> None:
        results[msg.partition() or 0] = "ok" if err is None else str(err)

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "message.timeout.ms": int(timeout * 1000),
                  "logger": QUIET})
    for part in range(partitions):
        p.produce(topic, b"replicated", partition=part, on_delivery=done)
    left = p.flush(timeout + 10)
    bad = {part: r for part, r in results.items() if r != "ok"}
    if left or bad or len(results) < partitions:
        raise AssertionError(f"an acks=all record in every partition of {topic} within {timeout:.0f}s: "
                             f"delivered {sorted(part for part, r in results.items() if r == 'ok')}, failed {bad}, "
                             f"{left} still in flight")
    # acks=all waits for the ISR of the moment: a follower stuck since the previous test may have been
    # dropped first. Every replica back in every ISR means each fetched up to the leader's end.
    admin = admin_client(bootstrap)

    def isrs() -> list[list[int]]:
        return [partition_isr(admin, topic, part) for part in range(partitions)]

    wait_until(lambda: all(len(i) == 3 for i in isrs()), timeout=timeout,
               what=f"every replica in every ISR of {topic} after an acks=all record in each partition",
               state=lambda: f"isrs {isrs()}")


def _keep_writing(bootstrap: str, topic: str, stop: threading.Event) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "1", "logger": QUIET})
    i = 0
    while not stop.wait(0.05):
        for part in range(3):
            p.produce(topic, f"w{i}".encode(), partition=part)
        p.poll(0)
        i += 1
    p.flush(10)


@contextmanager
def writes(bootstrap: str, topic: str) -> Iterator[None]:
    """Keep every partition of ``topic`` growing inside the block. Kafka counts a follower whose
    log end equals the leader's as caught up even when it stopped fetching: without writes an ISR
    never shrinks."""
    stop = threading.Event()
    th = threading.Thread(target=_keep_writing, args=(bootstrap, topic, stop), daemon=True)
    th.start()
    try:
        yield
    finally:
        stop.set()
        th.join(timeout=30)
