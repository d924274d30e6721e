"""copier: consume-transform-produce. Reads the input topic read_committed in a consumer group
(subscribe mode), writes one output record per input record to the same partition of the output
topic (the value names its input and the attempt: ``copy/<topic>/<partition>/<offset>/<attempt>/<value>``),
and commits the
consumed offsets in the same transaction (``send_offsets_to_transaction`` with the consumer group
metadata, so a copier that lost its partitions is fenced by generation, KIP-447). A share of
transactions is aborted on purpose, after which the copier rewinds to the committed offsets.

Settings: ``registry.CopierSettings``.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

from harness.history.model import FAIL, copy_value, tp_key
from harness.history.recorder import Recorder
from harness.workloads.client import CALL_TIMEOUT_S, ClientError
from harness.workloads.clients.confluent import client_errors
from harness.workloads.common import Retired, Stop, WorkloadConfig, drop, init, new_producer, transaction
from harness.workloads.registry import COPIER_GROUP, CopierSettings

POLL_TIMEOUT_S = 1.0
GROUP = COPIER_GROUP


def rewind(c: Consumer) -> None:
    """Back to the group's committed offsets (what the aborted transaction did not move)."""
    assigned = c.assignment()
    if not assigned:
        return
    for tp in c.committed(assigned, timeout=CALL_TIMEOUT_S):
        c.seek(TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else OFFSET_BEGINNING))


def main() -> None:
    from clusters.health import QUIET

    cfg = WorkloadConfig.from_argv()
    rnd = random.Random(f"{cfg.seed}/{cfg.name}")
    stop = Stop(cfg.max_seconds)
    s = CopierSettings.model_validate(cfg.settings)
    src, dst = s.input, s.output
    txn_id = f"eos-{cfg.name}"
    incarnation = 0
    with Recorder(Path(cfg.run_dir), cfg.name) as rec:
        while not stop:
            process = f"{cfg.name}.{incarnation}"
            incarnation += 1
            consumer = Consumer({"bootstrap.servers": cfg.bootstrap, "group.id": s.group,
                                 "enable.auto.commit": False,
                                 "isolation.level": "read_committed", "auto.offset.reset": "earliest",
                                 "logger": QUIET, **cfg.client})
            producer = new_producer(cfg, txn_id)
            try:
                init(rec, process, producer, txn_id)
                consumer.subscribe([src])
                seq = 0
                while not stop:
                    msgs = [m for m in consumer.consume(s.batch, POLL_TIMEOUT_S) if m.error() is None]
                    if not msgs:
                        continue
                    attempt = f"{process}-{seq}"
                    seq += 1
                    sends = [(dst, int(m.partition() or 0),
                              copy_value(str(m.topic()), int(m.partition() or 0), int(m.offset() or 0),
                                         (m.value() or b"").decode(), attempt)) for m in msgs]

                    def send_offsets() -> dict[str, Any]:
                        with client_errors():  # the consumer's failures count as the transaction's
                            pos = consumer.position(consumer.assignment())
                            group = consumer.consumer_group_metadata()
                        producer.send_offsets({(tp.topic, tp.partition): tp.offset for tp in pos}, group, CALL_TIMEOUT_S)
                        return {"offsets": {tp_key(tp.topic, tp.partition): tp.offset for tp in pos if tp.offset >= 0}}

                    outcome = transaction(rec, process, producer, txn_id, sends, rnd.random() < s.abort_share, rnd,
                                          before_commit=send_offsets)
                    if outcome == FAIL:
                        rewind(consumer)
            except (Retired, ClientError, KafkaException):
                continue
            finally:
                drop(producer)
                try:
                    consumer.close()
                except KafkaException:
                    pass


if __name__ == "__main__":
    main()
