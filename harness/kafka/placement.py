"""Where Kafka places a key's coordinator: ``__transaction_state`` (``__consumer_offsets``) partition
``abs(javaHash(key)) % partitions``, whose leader is the coordinator (the broker's own rule;
confluent-kafka's Admin API has no FindCoordinator call). ``chaos.targets`` resolves coordinators
with it; a txn-producer running several producers names their transactional.ids with ``colocated``
so that a fault on its coordinator hits all of them."""

from __future__ import annotations

from clusters.kafka.render import TXN_STATE_PARTITIONS

#: ``transaction.state.log.num.partitions`` when a broker is not told (Kafka's default).
KAFKA_DEFAULT_TXN_STATE_PARTITIONS = 50
#: ``colocated`` tries this many suffixes at most (a match comes about once in 50).
MAX_TRIES = 100_000


def java_hash(s: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units, 32-bit wrap-around)."""
    h = 0
    units = s.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def kafka_abs(n: int) -> int:
    """Kafka's ``Utils.abs``: like ``Math.abs`` but 0 for ``Integer.MIN_VALUE``."""
    return 0 if n == -(1 << 31) else abs(n)


def coordinator_partition(key: str, partitions: int) -> int:
    return kafka_abs(java_hash(key)) % partitions


def colocated(base: str, candidate: str,
              partitions: tuple[int, ...] = (TXN_STATE_PARTITIONS, KAFKA_DEFAULT_TXN_STATE_PARTITIONS)) -> str:
    """``candidate``, else ``candidate-<j>`` for the smallest j >= 1, whichever Kafka places on the
    same ``__transaction_state`` partition as ``base`` with each of ``partitions`` (our clusters'
    count and Kafka's default): the same coordinator as ``base``'s, on a cluster of either."""
    want = [coordinator_partition(base, p) for p in partitions]
    for j in range(MAX_TRIES):
        name = f"{candidate}-{j}" if j else candidate
        if [coordinator_partition(name, p) for p in partitions] == want:
            return name
    raise LookupError(f"no name {candidate}-<j> below {MAX_TRIES} shares {base!r}'s coordinator")  # never seen


def partition_of_bytes(key: bytes, partitions: int) -> int:
    """The partition Kafka's default partitioner gives a record of ``key`` (its Java clients: murmur2
    of the key's bytes, made positive, modulo the partitions)."""
    from kafka.partitioner.default import murmur2

    return int(murmur2(key) & 0x7FFFFFFF) % partitions
