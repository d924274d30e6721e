"""Reading whole topics after a run, over the DIRECT listener no fault touches: every partition
from offset 0 to its end (the final scans), and how long each partition's last stable offset took
to reach its high watermark (LSO lag)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaError, TopicPartition

from clusters.kafka.health import QUIET
from harness.base.errors import HarnessError, WaitTimeout
from harness.base.progress_deadline import ProgressDeadline
from harness.base.wait import wait_until
from harness.history.model import feeder_id

#: A whole-topic scan of a run's few hundred thousand records takes seconds; a stuck LSO is waited
#: for separately (``lso_lag``), so this only bounds a broker that stops answering.
READ_BACK_TIMEOUT_S = 120.0
#: How often the scan tells its progress deadline where it is (not per record: millions of them).
PROGRESS_EVERY_S = 0.5


@dataclass
class ReadBack:
    """Everything a reader saw in a whole-topic scan: partition -> [(offset, value)]."""

    records: dict[int, list[tuple[Any, ...]]]
    end_offsets: dict[int, int]

    def values(self) -> list[str]:
        return [v for recs in self.records.values() for _, v in recs]


def value_of(msg: Any) -> str:
    """A consumed record's value as the history records it: the app feeder's id when the record
    carries one (``FEEDER_ID_HEADER``: its payload may repeat, its id does not), else its value as text."""
    found = feeder_id(msg.headers())
    return found if found is not None else (msg.value() or b"").decode()


def lso_lag(bootstrap: str, partitions: Mapping[str, int],
            bound: float) -> tuple[dict[tuple[str, int], float | None], dict[tuple[str, int], int]]:
    """Per (topic, partition) of ``partitions`` (topic -> its partitions): seconds until its last stable offset reached its high watermark (no
    open transaction), measured from now, None if it had not within ``bound`` seconds; and, for
    those, the LSO it was stuck at. One deadline for all topics: a stuck partition in every topic
    costs one ``bound``, and every lag is measured from the same zero."""
    group = f"eos-chaos-lso-{uuid.uuid4().hex[:8]}"
    base = {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False, "logger": QUIET}
    committed = Consumer({**base, "isolation.level": "read_committed"})
    uncommitted = Consumer({**base, "isolation.level": "read_uncommitted"})
    lag: dict[tuple[str, int], float | None] = {(t, p): None for t, n in partitions.items() for p in range(n)}
    stuck: dict[tuple[str, int], int] = {}
    t0 = time.monotonic()
    try:
        while any(v is None for v in lag.values()) and time.monotonic() - t0 < bound:
            for t, p in [k for k, v in lag.items() if v is None]:
                tp = TopicPartition(t, p)
                lso = committed.get_watermark_offsets(tp, timeout=5)[1]
                hw = uncommitted.get_watermark_offsets(tp, timeout=5)[1]
                if lso == hw:
                    lag[(t, p)] = round(time.monotonic() - t0, 3)
                    stuck.pop((t, p), None)
                else:
                    stuck[(t, p)] = lso
            if any(v is None for v in lag.values()):
                time.sleep(0.2)  # polling the broker's offsets: there is no event to wait on
        return lag, stuck
    finally:
        committed.close()
        uncommitted.close()


def read_all(bootstrap: str, topic: str, partitions: int, isolation: str = "read_committed",
             timeout: float = READ_BACK_TIMEOUT_S, stable: bool = True,
             record: Callable[[Any], tuple[Any, ...]] | None = None) -> ReadBack:
    """Read every partition of ``topic`` from offset 0 to its end: per partition ``(offset, value
    text)`` (``value_of``: a feeder record's id), or what ``record`` makes of each message (an app's
    output: its key too, its value as it is).

    For read_committed the end is the last stable offset; with ``stable`` we require it to equal
    the high watermark (no transaction left open) within ``timeout``. Without (a transaction is
    known to hang), the scan reads up to the LSO as it stands.
    """
    group = f"eos-chaos-readback-{uuid.uuid4().hex[:8]}"
    base = {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
            "enable.partition.eof": True, "auto.offset.reset": "earliest", "logger": QUIET}
    consumer = Consumer({**base, "isolation.level": isolation})
    probe = Consumer({**base, "isolation.level": "read_uncommitted"})
    try:
        tps = [TopicPartition(topic, p, 0) for p in range(partitions)]
        deadline = time.monotonic() + timeout
        end: dict[int, int] = {}

        def ends_settled() -> bool:
            # Queried with the reader's isolation, the end is the LSO (read_committed) or the HW.
            ends = {tp.partition: consumer.get_watermark_offsets(tp, timeout=5)[1] for tp in tps}
            highs = {tp.partition: probe.get_watermark_offsets(tp, timeout=5)[1] for tp in tps}
            end.clear()
            end.update(ends)
            return ends == highs or not stable

        wait_until(ends_settled, timeout=timeout, what=f"the last stable offset of every partition of {topic} "
                   "to reach its high watermark (no open transaction)", state=lambda: f"end offsets {end}")
        consumer.assign(tps)
        records: dict[int, list[tuple[Any, ...]]] = {p: [] for p in range(partitions)}
        done = {p for p, off in end.items() if off == 0}
        # what is left of the timeout is a budget: past it, the scan goes on while the offsets it
        # reads project the end within 3 budgets (a slow machine's long topic is still being read)
        scan = ProgressDeadline(f"read-back of {topic}", max(1.0, deadline - time.monotonic()))
        reached: dict[int, int] = {}  # per partition, the next offset the scan is at
        total, looked = sum(end.values()), 0.0
        while len(done) < partitions:
            if time.monotonic() - looked >= PROGRESS_EVERY_S:
                looked = time.monotonic()
                left = sum(max(0, end[p] - reached.get(p, 0)) for p in end if p not in done)
                scan.update(total - left, left)
            if scan.expired():
                pos = {tp.partition: tp.offset for tp in consumer.position(tps)}
                raise WaitTimeout(f"read-back of {topic} did not reach the end offsets {end} within {timeout:.0f}s "
                                  f"and its rate does not project it: {scan.state()}; positions {pos}")
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            err = msg.error()
            part, offset = int(msg.partition() or 0), int(msg.offset() or 0)
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    if offset >= end[part]:
                        done.add(part)
                    continue
                raise HarnessError(f"read-back of {topic} failed: {err}")
            reached[part] = offset + 1
            records[part].append(record(msg) if record is not None else (offset, value_of(msg)))
        return ReadBack(records=records, end_offsets=end)
    finally:
        consumer.close()
        probe.close()
