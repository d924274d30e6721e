"""The arithmetic of ``eos-chaos bench producer`` and ``bench txn-rate``, kept pure so unit tests
feed it synthetic data: the steady-state window of one run (its warm-up left out) for our workload
(from its history) and for Kafka's ProducerPerformance (from its periodic lines), and the median and
spread of repeated runs.

What each side counts (docs/BENCHMARKS.md says the same for readers):

- our workload: the transactions whose commit *completed* inside the window (from the history's
  timestamps), times the records each held, over the window's length. The window starts
  ``warmup_s`` after the first transaction began (the producer's ``init_transactions`` is before it);
- ProducerPerformance: the records its periodic lines report acknowledged, over those lines' own
  elapsed times, for the lines whose interval lies inside the window. Its clock starts right after
  ``initTransactions`` too, so both warm-ups are measured from the same point.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from harness.workloads.clients import DEFAULT_JAVA_VERSION, DEFAULT_LIBRARY

#: The producers ``bench producer`` knows besides client libraries, and its defaults (here, not in the
#: driver, so the CLI's --help need not import the drivers).
PRODUCER_PERFORMANCE = "producer-performance"
DEFAULT_LIBRARIES = (DEFAULT_LIBRARY, f"java@{DEFAULT_JAVA_VERSION}")
DEFAULT_PRODUCERS = (*DEFAULT_LIBRARIES, PRODUCER_PERFORMANCE)
#: A spread (max - min) above this share of the median marks a series noisy.
NOISY_SPREAD = 0.2
#: ProducerPerformance's periodic line (``Stats.printWindow``; the JVM runs with an English locale,
#: so the decimal point is a point). The total lines go on after "max latency" and do not match.
PERIODIC = re.compile(r"^(\d+) records sent, ([\d.]+) records/sec \([\d.]+ MB/sec\), ([\d.]+) ms avg latency, "
                      r"([\d.]+) ms max latency\.$")


@dataclass(frozen=True)
class Txn:
    """One transaction of our workload's history: when it began and completed (ns, the history's
    clock), its outcome (``ok`` committed, ``fail`` aborted, ``info`` unknown), its records, and how
    many of them lack the offset Kafka acknowledged (0 for a sound committed transaction)."""

    start_ns: int
    end_ns: int
    outcome: str
    records: int
    offsets_missing: int = 0


@dataclass(frozen=True)
class Measured:
    """One run's steady-state figures."""

    records_per_s: float
    txns_per_s: float          # committed transactions per second
    aborted_per_s: float       # transactions aborted (on purpose or not) per second
    records: int               # records counted in the window
    txns: int                  # committed transactions counted in the window
    window_s: tuple[float, float]  # the window actually measured, from the producer's first send
    records_per_txn: float     # committed records per committed transaction in the window
    txn_ms_p50: float | None   # begin to commit completed, median, in the window (ours only)

    def to_json(self) -> dict[str, object]:
        return {"records_per_s": round(self.records_per_s, 1), "txns_per_s": round(self.txns_per_s, 2),
                "aborted_per_s": round(self.aborted_per_s, 2), "records": self.records, "txns": self.txns,
                "window_s": [round(x, 3) for x in self.window_s], "records_per_txn": round(self.records_per_txn, 1),
                "txn_ms_p50": None if self.txn_ms_p50 is None else round(self.txn_ms_p50, 2)}


def workload_window(txns: Sequence[Txn], warmup_s: float, seconds: float) -> Measured:
    """The steady state of our workload: transactions completed within (first begin + warmup,
    + seconds]. ValueError when the history does not reach the window's end (the producer stopped
    or died early: the figure would be too low), or holds no transaction."""
    if not txns:
        raise ValueError("the history holds no transaction")
    t0 = min(t.start_ns for t in txns)
    lo, hi = t0 + int(warmup_s * 1e9), t0 + int((warmup_s + seconds) * 1e9)
    last = max(t.end_ns for t in txns)
    if last < hi:
        raise ValueError(f"the history ends {(last - t0) / 1e9:.1f}s after the first transaction began, before the "
                         f"window's end at {warmup_s + seconds:g}s: the producer stopped early")
    inside = [t for t in txns if lo < t.end_ns <= hi]  # a commit at the warm-up's last instant is the warm-up's
    ok = [t for t in inside if t.outcome == "ok"]
    records = sum(t.records for t in ok)
    took = [(t.end_ns - t.start_ns) / 1e6 for t in ok]
    return Measured(records_per_s=records / seconds, txns_per_s=len(ok) / seconds,
                    aborted_per_s=sum(1 for t in inside if t.outcome == "fail") / seconds, records=records,
                    txns=len(ok), window_s=(warmup_s, warmup_s + seconds),
                    records_per_txn=records / len(ok) if ok else 0.0,
                    txn_ms_p50=statistics.median(took) if took else None)


@dataclass(frozen=True)
class Periodic:
    """One periodic line of ProducerPerformance: records acknowledged in its interval, and the rate
    it printed; the interval's length follows from the two."""

    records: int
    per_s: float

    @property
    def seconds(self) -> float:
        return self.records / self.per_s if self.per_s > 0 else 0.0


def parse_periodic(text: str) -> list[Periodic]:
    """ProducerPerformance's periodic lines in ``text`` (its stdout), in order; other lines skipped."""
    found = []
    for line in text.splitlines():
        m = PERIODIC.match(line.strip())
        if m:
            found.append(Periodic(int(m.group(1)), float(m.group(2))))
    return found


def covered_s(lines: Sequence[Periodic]) -> float:
    """How far ProducerPerformance's lines reach, in seconds from its first send."""
    return sum(p.seconds for p in lines)


def periodic_window(lines: Sequence[Periodic], warmup_s: float, seconds: float, interval_s: float) -> Measured:
    """ProducerPerformance's steady state: the lines whose interval starts at or after ``warmup_s``
    and ends by the window's end (``warmup_s + seconds``, with half an interval of slack: each
    interval is a little longer than ``interval_s``, so the ends drift later). ValueError when the
    lines do not reach the window's end or none falls inside."""
    end = warmup_s + seconds
    if covered_s(lines) < end:
        raise ValueError(f"ProducerPerformance's periodic lines reach {covered_s(lines):.1f}s, not the window's end "
                         f"at {end:g}s ({len(lines)} lines)")
    start, picked, first, last = 0.0, [], None, 0.0
    for p in lines:
        stop = start + p.seconds
        if start >= warmup_s - 1e-9 and stop <= end + interval_s / 2:
            picked.append(p)
            first = start if first is None else first
            last = stop
        start = stop
    if not picked or first is None:
        raise ValueError(f"no periodic line of ProducerPerformance lies within {warmup_s:g}s..{end:g}s")
    records = sum(p.records for p in picked)
    span = sum(p.seconds for p in picked)
    return Measured(records_per_s=records / span, txns_per_s=0.0, aborted_per_s=0.0, records=records, txns=0,
                    window_s=(first, last), records_per_txn=0.0, txn_ms_p50=None)


@dataclass(frozen=True)
class Spread:
    """The runs of one series: each value, their median, min and max, and whether it is noisy."""

    values: tuple[float, ...]

    @property
    def median(self) -> float:
        return float(statistics.median(self.values))

    @property
    def low(self) -> float:
        return min(self.values)

    @property
    def high(self) -> float:
        return max(self.values)

    @property
    def spread(self) -> float:
        """(max - min) / median; 0 for a median of 0."""
        return (self.high - self.low) / self.median if self.median else 0.0

    @property
    def noisy(self) -> bool:
        return self.spread > NOISY_SPREAD

    def to_json(self, digits: int = 1) -> dict[str, object]:
        return {"values": [round(v, digits) for v in self.values], "median": round(self.median, digits),
                "min": round(self.low, digits), "max": round(self.high, digits),
                "spread_pct": round(100 * self.spread, 1), "noisy": self.noisy}


def spread_of(values: Sequence[float]) -> Spread:
    """The ``Spread`` of ``values``; ValueError for none."""
    if not values:
        raise ValueError("no samples")
    return Spread(tuple(float(v) for v in values))
