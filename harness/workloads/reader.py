"""reader: a read_committed consumer in assign mode over every partition of the workload topics,
from offset 0, recording every poll (``{topic-partition: [[offset, value], ...]}``). A consumer
error retires the process id; the next one starts again from offset 0.
"""

from __future__ import annotations

from pathlib import Path

from harness.history.model import OK, POLL, tp_key
from harness.history.recorder import Recorder
from harness.workloads.client import ClientError
from harness.workloads.common import StopFlag, WorkloadConfig, new_reader
from harness.workloads.outcome import Phase, classify

#: One poll waits at most this long for records; it bounds how long a SIGTERM takes to act.
POLL_TIMEOUT_S = 1.0
BATCH = 500


def main() -> None:
    cfg = WorkloadConfig.from_argv()
    stop = StopFlag(cfg.max_seconds)
    incarnation = 0
    with Recorder(Path(cfg.run_dir), cfg.name) as rec:
        while not stop:
            process = rec.process(cfg.name, incarnation)
            incarnation += 1
            reader = new_reader(cfg)
            try:
                while not stop:
                    rec.invoke(process, POLL)
                    try:
                        records = reader.poll(BATCH, POLL_TIMEOUT_S)
                    except ClientError as exc:
                        outcome = classify(Phase.POLL, exc.facts)
                        rec.complete(process, outcome.type, POLL, None, error=exc.facts.describe())
                        break  # a poll error retires this consumer: the next one starts from offset 0
                    seen: dict[str, list[list[object]]] = {}
                    for topic, partition, offset, value in records:
                        seen.setdefault(tp_key(topic, partition), []).append([offset, value])
                    rec.complete(process, OK, POLL, seen)
            finally:
                reader.close()


if __name__ == "__main__":
    main()
