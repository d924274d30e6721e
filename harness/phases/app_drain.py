"""An app's drain after heal (docs/APPS.md, "The drain"): the run waits, the app's ``drain_s`` and
longer while its group's lag falls fast enough (harness/base/progress_deadline.py), until the app has
processed every committed input it was given, asking the cluster over the DIRECT listener
(``DrainProbe``)."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from clusters.kafka.health import QUIET
from harness.base.progress_deadline import ProgressDeadline
from harness.history.model import READ_COMMITTED, READ_UNCOMMITTED, tp_key
from harness.kafka.group_offsets import GroupOffsets
from harness.rundir.journal import AppDrain
from harness.workloads.registry import AppSettings

log = logging.getLogger(__name__)

#: Without a consumer group to tell, the app is drained when its output has not grown for this long.
QUIET_S = 5.0
#: One question to the cluster while draining; generous for a loaded machine.
PROBE_TIMEOUT_S = 10.0


def drain(bootstrap: str, s: AppSettings, partitions: Mapping[str, int], inputs: list[str],
          not_running: Callable[[], list[str]] = lambda: []) -> AppDrain:
    """Wait, at most ``drain_s``, until the app has processed every committed input: its consumer
    group (``{id}``) has no committed record past its committed offsets on any partition it commits
    (its inputs, and what it repartitions through), and its outputs have no open transaction. An app
    whose group commits nothing is drained when its outputs have not grown for ``QUIET_S``. Neither
    holds while an instance started again is not ready again (``not_running`` names them): a
    restarting app writes nothing and commits nothing, which is not being done; such an instance is
    waited for up to the bound (3 budgets) whatever the lag does. What was found, for the journal.
    ``partitions``: each topic's partitions, by the run's name."""
    t0 = time.monotonic()
    # drain_s is a budget: past it, the drain goes on while the group's lag falls fast enough to
    # reach 0 within 3 budgets (a slow machine's app still catching up is not an app that cannot)
    deadline = ProgressDeadline(f"the drain of group {s.id}", s.drain_s)
    first_lag: int | None = None
    last: dict[str, Any] = {}
    quiet_since, last_ends = t0, None
    with DrainProbe(bootstrap) as probe:
        while True:
            try:
                lag = probe.group_lag(s.id, [TopicPartition(t, p) for t in inputs for p in range(partitions[t])])
                ends, open_txns = probe.output_ends(s.outputs, partitions)
            except KafkaException as exc:
                # a partition with no leader now (a broker the last fault killed is back, its
                # leadership moving): not drained yet, asked again; it crashed the run before
                lag, ends, open_txns = None, {f"no answer: {exc}": -1}, True
            late = not_running()
            if lag is not None:
                left = sum(lag.values())
                first_lag = left if first_lag is None else first_lag
                deadline.update(first_lag - left, left)
            if ends != last_ends or late:
                quiet_since, last_ends = time.monotonic(), ends
            last = {"group_lag": lag, "outputs_open": open_txns, "outputs_end": ends, "not_ready_again": late}
            if late:
                pass  # neither rule holds while an instance is starting again
            elif lag is not None and not any(lag.values()) and not open_txns:
                return AppDrain(drained=True, how=f"group {s.id} committed every input", took_s=_since(t0))
            elif lag is None and not open_txns and time.monotonic() - quiet_since >= QUIET_S:
                return AppDrain(drained=True, how=f"group {s.id} committed no offsets; outputs quiet for {QUIET_S:g}s",
                                took_s=_since(t0))
            # an instance starting again (a restart after a kill) is given up to the bound: on a
            # starved machine a restart can take longer than drain_s, and its lag is no measure of it
            if deadline.expired() and not (late and deadline.elapsed() <= deadline.bound_s):
                log.info(f"the app did not catch up within drain_s {s.drain_s:g}s: {last}; {deadline.state()}")
                return AppDrain(drained=False, how=f"not within drain_s {s.drain_s:g}s: the lag's {deadline.state()}",
                                took_s=_since(t0), last={k: _jsonable(v) for k, v in last.items()})
            time.sleep(0.5)  # polling the group's offsets and the outputs' ends: no event to wait on


def _since(t0: float) -> float:
    return round(time.monotonic() - t0, 2)


def _jsonable(v: Any) -> Any:
    return {str(k): x for k, x in v.items()} if isinstance(v, dict) else v


class DrainProbe:
    """The questions the drain asks, over the DIRECT listener."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        #: per group asked about: a handle of that group (not the admin client's offsets call, which
        #: crashes the process when the group's coordinator moves: harness/kafka/group_offsets.py)
        self.groups: dict[str, GroupOffsets] = {}
        base = {"bootstrap.servers": bootstrap, "group.id": f"eos-chaos-drain-{uuid.uuid4().hex[:8]}",
                "enable.auto.commit": False, "enable.partition.eof": True, "logger": QUIET}
        self.committed = Consumer({**base, "isolation.level": READ_COMMITTED})
        self.uncommitted = Consumer({**base, "isolation.level": READ_UNCOMMITTED})

    def __enter__(self) -> DrainProbe:
        return self

    def __exit__(self, *exc: object) -> None:
        self.committed.close()
        self.uncommitted.close()
        for g in self.groups.values():
            g.close()

    def group_lag(self, group: str, inputs: list[TopicPartition]) -> dict[str, bool] | None:
        """Per partition the group commits (every input partition, and those of the topics named
        after the group: a Streams app's repartition topics): whether a committed record lies at or
        past its committed offset (None: the group has committed nothing)."""
        offsets = self.groups.get(group)
        if offsets is None:
            offsets = self.groups[group] = GroupOffsets(self.bootstrap, group)
        try:
            own = offsets.topics_named_after_group(PROBE_TIMEOUT_S)
            asked = [*inputs, *(TopicPartition(t, p) for t, n in sorted(own.items()) for p in range(n))]
            at = offsets.committed(asked, PROBE_TIMEOUT_S)
        except Exception:  # noqa: BLE001 - no answer now: asked again
            return None
        if not at:
            return None
        for tp in inputs:
            at.setdefault((tp.topic, tp.partition), 0)
        return {tp_key(t, p): self._beyond(t, p, off) for (t, p), off in sorted(at.items())}

    def _beyond(self, topic: str, partition: int, offset: int) -> bool:
        """Whether a committed record is at or past ``offset`` (aborted records and markers are not)."""
        lso = self.committed.get_watermark_offsets(TopicPartition(topic, partition), timeout=PROBE_TIMEOUT_S)[1]
        if offset >= lso:
            return False
        self.committed.assign([TopicPartition(topic, partition, offset)])
        deadline = time.monotonic() + PROBE_TIMEOUT_S
        while time.monotonic() < deadline:
            msg = self.committed.poll(1.0)
            if msg is None:
                continue
            err = msg.error()
            if err is not None and err.code() == KafkaError._PARTITION_EOF:
                return False
            if err is None:
                return True
        return True  # no answer: not known to be drained

    def output_ends(self, topics: list[str], partitions: Mapping[str, int]) -> tuple[dict[str, int], bool]:
        """Each output partition's high watermark, and whether one has an open transaction (LSO < HW)."""
        ends, open_txns = {}, False
        for t in topics:
            for p in range(partitions[t]):
                tp = TopicPartition(t, p)
                hw = self.uncommitted.get_watermark_offsets(tp, timeout=PROBE_TIMEOUT_S)[1]
                lso = self.committed.get_watermark_offsets(tp, timeout=PROBE_TIMEOUT_S)[1]
                ends[tp_key(t, p)] = hw
                open_txns = open_txns or lso < hw
        return ends, open_txns
