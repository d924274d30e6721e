"""Kafka load the real-cluster tests need besides the workloads."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from confluent_kafka import Producer

from clusters.health import QUIET


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
