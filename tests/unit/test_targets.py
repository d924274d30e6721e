"""Coordinator placement as the broker computes it (Java's String.hashCode, Kafka's Utils.abs)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from chaos.targets import coordinator_partition, leader, transaction_coordinator
from harness.kafka.placement import java_hash, kafka_abs


@pytest.mark.parametrize("s,h", [("", 0), ("a", 97), ("hello", 99162322), ("eos-txn-producer-0", None),
                                 ("polygenelubricants", -(1 << 31)), ("é✓", 233 * 31 + 0x2713)])
def test_java_hash_matches_java(s: str, h: int | None) -> None:
    if h is not None:
        assert java_hash(s) == h
    assert -(1 << 31) <= java_hash(s) < (1 << 31)


def test_kafka_abs_maps_min_int_to_zero() -> None:
    assert kafka_abs(-(1 << 31)) == 0 and kafka_abs(-5) == 5
    assert coordinator_partition("polygenelubricants", 10) == 0
    assert coordinator_partition("hello", 10) == 99162322 % 10


class FakeAdmin:
    """Metadata as list_topics returns it: only the shape the resolver reads."""

    def __init__(self, leaders: dict[str, list[int]]) -> None:
        self.leaders = leaders

    def list_topics(self, topic=None, timeout=-1):  # type: ignore[no-untyped-def]
        parts = {i: SimpleNamespace(leader=n) for i, n in enumerate(self.leaders.get(topic, []))}
        return SimpleNamespace(topics={topic: SimpleNamespace(error=None, partitions=parts)})


def test_coordinator_is_the_leader_of_the_hashed_state_partition() -> None:
    admin = FakeAdmin({"__transaction_state": [1, 2, 3, 1, 2, 3, 1, 2, 3, 1]})
    assert transaction_coordinator(admin, "hello") == [1, 2, 3, 1, 2, 3, 1, 2, 3, 1][99162322 % 10]


def test_no_leader_is_a_lookup_error() -> None:
    with pytest.raises(LookupError, match="no leader"):
        leader(FakeAdmin({"t": [-1]}), "t", 0)
