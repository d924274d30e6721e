"""The final scans' read-back (harness/kafka/reads.py ``read_all``) on a fake consumer: a scan still
reading at its timeout goes on while its rate projects the end within 3 timeouts (a slow machine's
long topic), and one that reads nothing gives up past its timeout naming progress, rate and
projection. Time is the fake consumer's: each poll moves a clock of its own, so a starved machine
(the suite's unit part beside the real-cluster tests measured 7.4 polls a second for 20) changes
nothing."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError

from harness.base.errors import WaitTimeout
from harness.base.progress_deadline import ProgressDeadline
from harness.kafka import reads


class Msg:
    def __init__(self, partition: int, offset: int, eof: bool = False) -> None:
        self._p, self._o, self._eof = partition, offset, eof

    def error(self) -> Any:
        return type("E", (), {"code": lambda _: KafkaError._PARTITION_EOF})() if self._eof else None

    def partition(self) -> int:
        return self._p

    def offset(self) -> int:
        return self._o

    def value(self) -> bytes:
        return str(self._o).encode()

    def key(self) -> None:
        return None

    def headers(self) -> None:
        return None


#: the fake clock's reading at the start: as a monotonic clock's, far from 0
START = 1000.0


class SlowTopic:
    """One partition of ``end`` records, one record per poll, each poll ``poll_s`` long on ``now``,
    the clock the read-back is given (``stuck``: never a record)."""

    def __init__(self, end: int, poll_s: float, stuck: bool = False) -> None:
        self.end, self.poll_s, self.stuck, self.next = end, poll_s, stuck, 0
        self.clock = START

    def now(self) -> float:
        return self.clock

    def __call__(self, config: dict[str, Any]) -> SlowTopic:
        return self

    def get_watermark_offsets(self, tp: Any, timeout: float = 0) -> tuple[int, int]:
        return 0, self.end

    def assign(self, tps: Any) -> None:
        pass

    def position(self, tps: Any) -> list[Any]:
        return [type("TP", (), {"partition": 0, "offset": self.next})()]

    def poll(self, timeout: float) -> Msg | None:
        self.clock += self.poll_s
        if self.stuck:
            return None
        if self.next >= self.end:
            return Msg(0, self.end, eof=True)
        self.next += 1
        return Msg(0, self.next - 1)

    def close(self) -> None:
        pass


def _on_its_clock(monkeypatch: pytest.MonkeyPatch, topic: SlowTopic) -> None:
    monkeypatch.setattr(reads, "Consumer", topic)
    monkeypatch.setattr(reads, "time", SimpleNamespace(monotonic=topic.now))
    monkeypatch.setattr(reads, "ProgressDeadline",
                        lambda what, budget_s: ProgressDeadline(what, budget_s, clock=topic.now))


def test_a_scan_still_reading_at_its_timeout_goes_on_while_it_projects_the_end(monkeypatch: pytest.MonkeyPatch) -> None:
    topic = SlowTopic(end=40, poll_s=0.05)  # 2 s, past a 1 s timeout
    _on_its_clock(monkeypatch, topic)
    got = reads.read_all("127.0.0.1:1", "t", 1, timeout=1.0)
    assert len(got.records[0]) == 40 and 1.0 < topic.now() - START < 3.0


def test_a_scan_that_reads_nothing_gives_up_past_its_timeout_naming_its_rate(monkeypatch: pytest.MonkeyPatch) -> None:
    topic = SlowTopic(end=40, poll_s=0.05, stuck=True)
    _on_its_clock(monkeypatch, topic)
    with pytest.raises(WaitTimeout, match=r"read-back of t did not reach the end offsets \{0: 40\} within 1s and its "
                                          r"rate does not project it: 0 of 40 done in 1.\ds; rate 0.0/s.*; positions \{0: 0\}"):
        reads.read_all("127.0.0.1:1", "t", 1, timeout=1.0)
    assert topic.now() - START < 2.0
