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
  ``initTransactions`` too, so both warm-ups are measured from the same point. Its transactions are
  counted from the transaction coordinator's log (``__transaction_state``): the CompleteCommit
  entries of its ``transactional.id`` inside the window, timed from its first Ongoing entry.
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
class TimedTxn:
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


def workload_window(txns: Sequence[TimedTxn], warmup_s: float, seconds: float) -> Measured:
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


def periodic_window(lines: Sequence[Periodic], warmup_s: float, seconds: float, interval_s: float,
                    who: str = "ProducerPerformance") -> Measured:
    """ProducerPerformance's steady state (or ``who``'s, a tool printing its lines: a Go client's
    perf mode): the lines whose interval starts at or after ``warmup_s`` and ends by the window's
    end (``warmup_s + seconds``, with half an interval of slack: each interval is a little longer
    than ``interval_s``, so the ends drift later). ValueError when the lines do not reach the
    window's end or none falls inside."""
    end = warmup_s + seconds
    if covered_s(lines) < end:
        raise ValueError(f"{who}'s periodic lines reach {covered_s(lines):.1f}s, not the window's end "
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
        raise ValueError(f"no periodic line of {who} lies within {warmup_s:g}s..{end:g}s")
    records = sum(p.records for p in picked)
    span = sum(p.seconds for p in picked)
    return Measured(records_per_s=records / span, txns_per_s=0.0, aborted_per_s=0.0, records=records, txns=0,
                    window_s=(first, last), records_per_txn=0.0, txn_ms_p50=None)


#: ``TransactionLogValue.TransactionStatus`` (Kafka's ``TransactionState`` ids).
ONGOING, COMPLETE_COMMIT = 1, 4
#: Where the status byte is in a ``__transaction_state`` value: after the version (int16),
#: ProducerId (int64), ProducerEpoch (int16) and TransactionTimeoutMs (int32). Fixed in versions 0
#: and 1 (version 1's additions are tagged fields, which go at the end).
_STATUS_AT = 2 + 8 + 2 + 4


def txn_log_status(key: bytes | None, value: bytes | None, txn_id: str) -> int | None:
    """The status of a ``__transaction_state`` record of ``txn_id`` (None: another id's, or a
    tombstone). The key is a version (int16) and the id as a string (int16 length, UTF-8)."""
    want = txn_id.encode()
    if key is None or value is None or len(value) <= _STATUS_AT or key[4:] != want:
        return None
    if int.from_bytes(key[2:4], "big") != len(want):
        return None
    return value[_STATUS_AT]


def commits_in_window(states: Sequence[tuple[int, int]], warmup_s: float, seconds: float,
                      who: str = "ProducerPerformance") -> int:
    """How many transactions committed within the window, from ``(status, timestamp ms)`` entries
    of one transactional.id's log (``who``'s), timed from its first Ongoing entry. ValueError when
    the log does not reach the window's end."""
    starts = [ts for st, ts in states if st == ONGOING]
    if not starts:
        raise ValueError(f"the transaction log holds no transaction of {who}")
    t0 = min(starts)
    lo, hi = t0 + warmup_s * 1000, t0 + (warmup_s + seconds) * 1000
    if max(ts for _, ts in states) < hi:
        raise ValueError(f"the transaction log of {who} ends before the window's end at "
                         f"{warmup_s + seconds:g}s")
    return sum(1 for st, ts in states if st == COMPLETE_COMMIT and lo < ts <= hi)


@dataclass(frozen=True)
class TxnCost:
    """A producer's time per transaction as a line in the records it holds: ``fixed_ms`` (begin,
    commit, markers: paid once per transaction) + ``per_record_ms`` x records. Fitted to runs of
    ProducerPerformance at several transaction sizes (it sizes them by time only, so it cannot be
    given exactly N); a run at s records is then moved along the line to N."""

    fixed_ms: float
    per_record_ms: float

    def rate_at(self, records_per_txn: float, records_per_s: float, wanted: int) -> float:
        """A run's records/s had its transactions held ``wanted`` records instead of ``records_per_txn``:
        its own time per transaction, plus the line's slope times the difference."""
        took_ms = 1000 * records_per_txn / records_per_s + self.per_record_ms * (wanted - records_per_txn)
        return 1000 * wanted / took_ms if took_ms > 0 else records_per_s


def fit_txn_cost(points: Sequence[tuple[float, float]]) -> TxnCost | None:
    """Least squares of time per transaction (ms) on records per transaction over ``(records per
    transaction, records/s)`` points, its slope held to >= 0; None without two distinct sizes."""
    pts = [(n, 1000 * n / r) for n, r in points if n > 0 and r > 0]
    if len({round(n) for n, _ in pts}) < 2:
        return None
    mean_n = statistics.fmean(n for n, _ in pts)
    mean_t = statistics.fmean(t for _, t in pts)
    slope = sum((n - mean_n) * (t - mean_t) for n, t in pts) / sum((n - mean_n) ** 2 for n, _ in pts)
    # No transaction gets cheaper by holding more records: a falling line is noise around a flat one
    # (least squares held to a slope >= 0 is then the flat line through the mean).
    slope = max(0.0, slope)
    return TxnCost(fixed_ms=mean_t - slope * mean_n, per_record_ms=slope)


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


@dataclass(frozen=True)
class BridgeCost:
    """What a bridged client's path (the JSON-lines bridge and our Python workload with its history)
    costs against the same client's own loop, from the two medians of records/s at one shape."""

    bridged_per_s: float
    native_per_s: float

    @property
    def ratio(self) -> float:
        return self.bridged_per_s / self.native_per_s

    @property
    def us_per_record(self) -> float:
        """Time per record through the bridge minus the client's own (µs; below 0: the bridge was faster)."""
        return 1e6 / self.bridged_per_s - 1e6 / self.native_per_s

    def to_json(self) -> dict[str, float]:
        return {"ratio": round(self.ratio, 3), "us_per_record": round(self.us_per_record, 2)}


def bridge_cost(bridged_per_s: float, native_per_s: float) -> BridgeCost | None:
    """The ``BridgeCost`` of two medians; None when either is 0 (nothing to divide by)."""
    return BridgeCost(bridged_per_s, native_per_s) if bridged_per_s > 0 and native_per_s > 0 else None
