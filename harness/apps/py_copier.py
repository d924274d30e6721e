"""py-copier: a small exactly-once consume-transform-produce service in Python (confluent-kafka), the
kind of app a team writes and puts under test as an ``app`` workload (docs/APPS.md). It copies each
record of ``--input`` to ``--output`` with the same key and value, in transactions that commit the
consumed offsets of its consumer group (``--group``) with them, as librdkafka's transactions example
does. ``--unsafe`` is its negative control: no transactions, offsets auto-committed, read_uncommitted
(a kill duplicates what it had copied since the last auto-commit).

``{python} -m harness.apps.py_copier --bootstrap B --input T --output T --group G --txn-id ID``
"""

from __future__ import annotations

import argparse
import signal
import sys
from types import FrameType

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

#: Records per transaction at most; a poll that returns fewer commits what it got.
BATCH = 100
#: Each transactional call's timeout: generous, the cluster may be under faults.
CALL_TIMEOUT_S = 30.0


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="py-copier", description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--input", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--group", required=True)
    p.add_argument("--txn-id", required=True)
    p.add_argument("--unsafe", action="store_true", help="no transactions (the negative control)")
    return p.parse_args(argv)  # a bad flag: argparse's usage and exit 2


def main(argv: list[str] | None = None) -> None:
    a = parse(sys.argv[1:] if argv is None else argv)
    stopping = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    # a killed instance's partitions wait for its session to time out: 10 s, not the default 45 s
    consumer = Consumer({"bootstrap.servers": a.bootstrap, "group.id": a.group, "auto.offset.reset": "earliest",
                         "session.timeout.ms": 10_000,
                         "enable.auto.commit": a.unsafe, "isolation.level": "read_uncommitted" if a.unsafe else "read_committed"})
    producer = Producer({"bootstrap.servers": a.bootstrap, "linger.ms": 5,
                         **({} if a.unsafe else {"transactional.id": a.txn_id})})
    if not a.unsafe:
        producer.init_transactions(CALL_TIMEOUT_S)
    announced, assigned = False, []

    def on_assign(c: Consumer, parts: list[TopicPartition]) -> None:
        assigned.append(True)
        print(f"ready: assigned {sorted(p.partition for p in parts)}", flush=True)

    consumer.subscribe([a.input], on_assign=on_assign)
    try:
        while not stopping:
            msgs = [m for m in consumer.consume(BATCH, 1.0) if m.error() is None]
            # ready once in its group with a poll done, records or not: an instance started again
            # after its input ended has nothing to copy, and is ready all the same (the drain waits
            # for every instance started again to say so)
            if assigned and not announced:
                print(f"copying from {a.input} to {a.output}", flush=True)
                announced = True
            if not msgs:
                continue
            if not a.unsafe:
                producer.begin_transaction()
            for m in msgs:
                producer.produce(a.output, key=m.key(), value=m.value())
            if a.unsafe:
                producer.flush(CALL_TIMEOUT_S)
                continue
            ends: dict[tuple[str, int], int] = {}
            for m in msgs:
                ends[(str(m.topic()), int(m.partition() or 0))] = int(m.offset() or 0) + 1
            producer.send_offsets_to_transaction([TopicPartition(t, p, o) for (t, p), o in ends.items()],
                                                 consumer.consumer_group_metadata(), CALL_TIMEOUT_S)
            try:
                producer.commit_transaction(CALL_TIMEOUT_S)
            except KafkaException as exc:
                if not exc.args[0].txn_requires_abort():
                    raise  # fatal (fenced): the process ends and is started again
                producer.abort_transaction(CALL_TIMEOUT_S)
                _rewind(consumer)
    finally:
        consumer.close()
        producer.flush(5)


def _rewind(consumer: Consumer) -> None:
    """Back to the group's committed offsets: what the aborted transaction read is read again."""
    committed = consumer.committed(consumer.assignment(), CALL_TIMEOUT_S)
    for tp in committed:
        consumer.seek(TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else 0))


if __name__ == "__main__":
    main()
