"""app-reader: the harness's own read_committed reader of an app's output topics during the run
(docs/APPS.md), in assign mode over every partition from offset 0, recording each poll with the
records' keys, ``{topic-partition: [[offset, value, key], ...]}`` and the app's name. What an
aborted or never-ended transaction of the app let a read_committed reader see shows here even when
the final scans no longer have it. A consumer error retires the process id; the next starts again
from offset 0. Always confluent-kafka: it is the harness's reader, not a client under test."""

from __future__ import annotations

from pathlib import Path

from confluent_kafka import Consumer, KafkaException, TopicPartition

from clusters.kafka.health import QUIET
from harness.history.model import INFO, OK, POLL, tp_key
from harness.history.recorder import Recorder
from harness.kafka.serde import decode
from harness.workloads.common import StopFlag, WorkloadConfig
from harness.workloads.registry import AppReaderSettings

#: One poll waits at most this long for records; it bounds how long a SIGTERM takes to act.
POLL_TIMEOUT_S = 1.0
BATCH = 500


def main() -> None:
    cfg = WorkloadConfig.from_argv()
    s = AppReaderSettings.model_validate(cfg.settings)
    stop = StopFlag(cfg.max_seconds)
    parts = [TopicPartition(t, p, 0) for t in s.outputs for p in range(cfg.partitions_of(t))]
    incarnation = 0
    with Recorder(Path(cfg.run_dir), cfg.name) as rec:
        while not stop:
            process = rec.process(cfg.name, incarnation)
            incarnation += 1
            consumer = Consumer({"bootstrap.servers": cfg.bootstrap, "group.id": f"eos-chaos-{cfg.name}",
                                 "isolation.level": "read_committed", "enable.auto.commit": False,
                                 "auto.offset.reset": "earliest", "logger": QUIET})
            consumer.assign(parts)
            try:
                while not stop:
                    rec.invoke(process, POLL, app=s.app)
                    try:
                        msgs = consumer.consume(BATCH, POLL_TIMEOUT_S)
                        errors = [m.error() for m in msgs if m.error() is not None]
                        if errors:
                            raise KafkaException(errors[0])
                    except KafkaException as exc:
                        rec.complete(process, INFO, POLL, None, error=str(exc), app=s.app)
                        break  # the next consumer starts from offset 0
                    seen: dict[str, list[list[object]]] = {}
                    for m in msgs:
                        seen.setdefault(tp_key(str(m.topic()), int(m.partition() or 0)), []).append(
                            [m.offset(), decode(s.output_serde.value, m.value()), decode(s.output_serde.key, m.key())])
                    rec.complete(process, OK, POLL, seen, app=s.app)
            finally:
                consumer.close()


if __name__ == "__main__":
    main()
