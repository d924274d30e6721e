"""reader: a read_committed consumer in assign mode over every partition of the workload topics,
from offset 0, recording every poll (``{topic-partition: [[offset, value], ...]}``). A consumer
error retires the process id; the next one starts again from offset 0.
"""

from __future__ import annotations

from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

from harness.history.model import OK, POLL, tp_key
from harness.history.recorder import Recorder
from harness.workloads.clients.confluent import error_facts
from harness.workloads.common import Stop, WorkloadConfig
from harness.workloads.outcome import Phase, classify

#: One poll waits at most this long for records; it bounds how long a SIGTERM takes to act.
POLL_TIMEOUT_S = 1.0
BATCH = 500


def main() -> None:
    from clusters.health import QUIET

    cfg = WorkloadConfig.from_argv()
    stop = Stop(cfg.max_seconds)
    incarnation = 0
    with Recorder(Path(cfg.run_dir), cfg.name) as rec:
        while not stop:
            process = f"{cfg.name}.{incarnation}"
            incarnation += 1
            c = Consumer({"bootstrap.servers": cfg.bootstrap, "group.id": f"eos-chaos-{cfg.name}",
                          "enable.auto.commit": False, "isolation.level": "read_committed",
                          "logger": QUIET, **cfg.client})
            try:
                c.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t in cfg.topics for p in range(cfg.partitions)])
                while not stop:
                    rec.invoke(process, POLL)
                    try:
                        msgs = c.consume(BATCH, POLL_TIMEOUT_S)
                    except KafkaException as exc:
                        facts = error_facts(exc)
                        rec.complete(process, classify(Phase.POLL, facts).type, POLL, None, error=facts.describe())
                        break  # a poll error retires this consumer: the next one starts from offset 0
                    seen: dict[str, list[list[object]]] = {}
                    for m in msgs:
                        if m.error() is None:
                            seen.setdefault(tp_key(str(m.topic()), int(m.partition() or 0)), []).append(
                                [m.offset(), (m.value() or b"").decode()])
                    rec.complete(process, OK, POLL, seen)
            finally:
                c.close()


if __name__ == "__main__":
    main()
