"""What each fault hit: what was in flight on its target while it was active (issue 31: every fault
proves it hit something). A pure function of the history and the wire proxy's rule matches.

For each fault's window (its start to its end; the history's end for one that never ended):

- transactions open: the ``txn`` / ``send`` ops of what it aimed at that were open at some moment
  of the window (invoked before its end, completed after its start or never), and of those the
  ones open at its start. What it aimed at: a
  workload fault, that workload's processes (or every process of the kind it names); a fault on
  the leader ``of`` a partition, the transactions that wrote to that partition; on the
  coordinator ``of`` a transactional.id, that id's transactions and those of the producers its
  txn-producer process runs beside it, which share its coordinator (``model.among_producers_of``;
  a ``prefix*``: each id of it); any other broker, link or feature fault, every producer's and copier's.
- micro-batches running: the Spark job's finished micro-batches that overlapped the window (the
  job's, for a fault aimed at it; those reading the partition, for a leader fault).
- requests caught: for a fault on the wire (its start event names ``api``), the requests its rule
  matched on its links in the window, by what the rule did (``hold``, ``drop-response``, ``error``).

A wire fault hit something when its rule caught a request; any other fault when a transaction was
open or a micro-batch running on its target. One that hit nothing is listed as such.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from harness.history import store
from harness.history.model import SPARK_BATCH, among_producers_of, kind_of, tp_key, workload_of

#: At most this many workloads are named per fault.
MAX_NAMED = 5
#: A Spark micro-batch event's duration field, in milliseconds.
_MS = 1_000_000


def open_in(invoked: np.ndarray, done: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Which ops were open at some moment of ``[lo, hi]`` (ns): invoked by its end, completed at or
    after its start or never (``done`` NaN)."""
    mask: np.ndarray = (invoked <= hi) & (np.isnan(done) | (done >= lo))
    return mask


@dataclass(frozen=True)
class Span:
    """A fault as it ran: its window on the history's clock (ns; ``end`` None: never ended) and its
    start event's fields (``workload``, ``target``, ``of``, ``links``, ``api``, ...)."""

    start: int
    end: int | None
    detail: Mapping[str, Any]

    @classmethod
    def of_seconds(cls, start_s: float, end_s: float | None, detail: Mapping[str, Any]) -> Span:
        """A fault as the journal records it (``FaultRun``: seconds on the history's clock)."""
        return cls(round(start_s * 1e9), None if end_s is None else round(end_s * 1e9), detail)


@dataclass(frozen=True)
class WireMatch:
    """A request a wire rule matched: when (ns on the history's clock), on which link, and what the
    rule did to it."""

    t: int
    link: str
    action: str


@dataclass
class Hit:
    """What one fault hit. ``requests`` is None when the fault is not on the wire, or the wire
    proxy's log could not be placed on the history's clock."""

    #: what it was aimed at, in words
    aimed_at: str
    txns_open: int = 0
    #: the workloads those transactions were of (at most ``MAX_NAMED``)
    workloads: list[str] = field(default_factory=list)
    batches_running: int = 0
    requests: dict[str, int] | None = None
    #: of ``txns_open``, those open at the fault's start (invoked by then, not yet completed)
    txns_open_at_start: int = 0

    @property
    def hit(self) -> bool:
        if self.requests is not None:
            return sum(self.requests.values()) > 0
        return self.txns_open > 0 or self.batches_running > 0

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "hit": self.hit}


def fault_hits(t: store.Tables, spans: Sequence[Span], wire: Sequence[WireMatch] | None) -> list[Hit]:
    """One ``Hit`` per span. ``wire`` None: the wire proxy's matches are unknown (a run without its
    log, or one that cannot be placed on the history's clock)."""
    tx = t.txns
    invoked = tx["invoke_time"].to_numpy(dtype="float64")
    done = tx["complete_time"].to_numpy(dtype="float64", na_value=np.nan)
    processes = tx["process"].astype(str).to_numpy()
    workloads = np.array([workload_of(p) or "" for p in processes], dtype=object)
    kinds = np.array([kind_of(w) if w else "" for w in workloads], dtype=object)
    txn_ids = tx["txn_id"].astype(object).to_numpy()
    batches = [e for e in store.spark_events(t) if e.get("f") == SPARK_BATCH]
    history_end = int(t.ops["time"].max()) if len(t.ops) else 0
    out = []
    for s in spans:
        lo, hi = s.start, float(s.end if s.end is not None else max(history_end, s.start))
        aimed_at, mine, batch_ok = _target(s.detail, t, tx, workloads, kinds, txn_ids)
        if _on_wire(s.detail):  # its rule is what it aimed, at the requests it names
            aimed_at = f"{', '.join(map(str, s.detail['api']))} requests on {', '.join(map(str, s.detail['links']))}"
        open_ = mine & open_in(invoked, done, lo, hi)
        named = sorted({w for w in workloads[open_] if w})
        running = sum(1 for e in batches if batch_ok(e) and _overlaps(e, lo, hi))
        requests = _requests(s.detail, wire, lo, hi)
        at_start = int((mine & open_in(invoked, done, lo, lo)).sum())
        listed = app_listed_open(s.detail)
        if listed:
            named = sorted({*named, str(s.detail["workload"])})
        out.append(Hit(aimed_at, int(open_.sum()) + listed, named[:MAX_NAMED], running, requests,
                       txns_open_at_start=at_start + listed))
    return out


def app_listed_open(detail: Mapping[str, Any]) -> int:
    """An app's transactions are not in the history: its coordinators' listings are the evidence
    that a kill of it landed inside one (chaos/faults/workload.py). 1 when either says so: at the
    kill every transactional.id of the app's had a transaction open (``in_transaction``, ``open``
    as long as ``known``), so the killed instance's was too; or the kill left one open, begun
    before it (``left_open``, the stop record's ``open_transactions``). Else 0: ``open`` short of
    ``known`` says only that some other instance's was open."""
    if not isinstance(detail.get("workload"), str):
        return 0
    at_kill = detail.get("in_transaction")
    every_id_open = (isinstance(at_kill, Mapping) and bool(at_kill.get("open"))
                     and sorted(at_kill.get("open") or []) == sorted(at_kill.get("known") or []))
    return int(every_id_open or bool(detail.get("left_open")))


def _target(detail: Mapping[str, Any], t: store.Tables, tx: pd.DataFrame, workloads: np.ndarray, kinds: np.ndarray,
            txn_ids: np.ndarray) -> tuple[str, np.ndarray, Any]:
    """What a fault aimed at: its words, a mask of the transactions of it, and a test of the Spark
    micro-batches of it."""
    every = np.ones(len(tx), dtype=bool)
    target, of = detail.get("target"), detail.get("of")
    workload = detail.get("workload")
    if isinstance(workload, str):
        mask = (workloads == workload) | (kinds == workload)

        def of_workload(e: Mapping[str, Any]) -> bool:
            w = workload_of(str(e.get("process", ""))) or ""
            return workload in (w, kind_of(w))

        return f"workload {workload}", mask, of_workload
    if target == "leader" and isinstance(of, str) and "/" in of:
        topic, _, part = of.rpartition("/")
        w = t.writes
        txns = w["txn"][(w["topic"].astype(str) == topic).to_numpy(bool) & (w["partition"] == int(part)).to_numpy(bool)]
        key = tp_key(topic, int(part))
        return (f"partition {of} (its leader)", tx["txn"].isin(txns.unique()).to_numpy(bool),
                lambda e: key in (e.get("ranges") or {}))
    if target == "coordinator" and isinstance(of, str):
        ids = np.array([isinstance(i, str) and (i.startswith(of[:-1]) if of.endswith("*") else among_producers_of(i, of))
                        for i in txn_ids], dtype=bool)
        return f"transactional.id {of} (its coordinator)", ids, lambda e: False
    return "the cluster (every transaction)", every, lambda e: True


def _overlaps(batch: Mapping[str, Any], lo: float, hi: float) -> bool:
    end = int(batch["time"])
    began = end - int(float(batch.get("ms") or 0) * _MS)
    return began <= hi and end >= lo


def _requests(detail: Mapping[str, Any], wire: Sequence[WireMatch] | None, lo: float, hi: float) -> dict[str, int] | None:
    """The requests a wire fault's rule matched on its links in ``[lo, hi]``, by action; None for a
    fault not on the wire, or when the matches are unknown."""
    links = detail.get("links")
    if not _on_wire(detail) or wire is None or not isinstance(links, list):
        return None
    counts: dict[str, int] = {}
    for m in wire:
        if m.link in links and lo <= m.t <= hi:
            counts[m.action] = counts.get(m.action, 0) + 1
    return counts


def _on_wire(detail: Mapping[str, Any]) -> bool:
    """A fault on the wire: its start event names the APIs its rule matches, and its links."""
    return isinstance(detail.get("api"), list) and isinstance(detail.get("links"), list)


def wire_matches(events: Sequence[Mapping[str, Any]], zero_unix_s: float) -> list[WireMatch]:
    """The rule matches among the wire proxy's events (its log's lines), placed on the history's
    clock: ``zero_unix_s`` is the wall-clock time (seconds since the epoch) of the history's zero."""
    out = []
    for e in events:
        us, link, action = e.get("unix_us"), e.get("link"), e.get("action")
        if e.get("event") == "match" and isinstance(us, (int, float)) and isinstance(link, str):
            t = (us / 1e6 - zero_unix_s) * 1e9
            if math.isfinite(t):
                out.append(WireMatch(int(t), link, str(action)))
    return out

