"""No vacuous verdicts: whether each workload whose guarantee the checks judge made progress while
the faults ran (issue 31: a Spark job with 0 micro-batches was judged VALID "under executor kills").

The window is the faults' own, from the first fault's start to the last fault's end (to the
history's end when a fault never ended), from the nemesis's events. Each kind judged
(txn-producers, copiers, Spark jobs, an app; ``harness.history.model.kind_of`` tells a process's
kind by its name, ``<kind>-<n>.<incarnation>`` as a run names its workloads' processes) must show
progress there: a finished op of ``PROGRESS_OPS`` (a transaction or plain send that committed or
that the producer chose to abort, a copy, a micro-batch), and for an app an output record its
reader read. A kind the faults stopped or stalled (a kill or pause aimed at it, or an op of it
in flight in the window: a transaction or micro-batch held up by a broker fault) may show it
after the window instead: it recovered. Otherwise it was idle while the faults ran: the verdict
is unknown (``unknown_because``). So is a run where a fault began on a workload that made no
progress for the nemesis's whole wait (its start event's ``wait_expired``).

Runs without faults, and kinds no check judges (readers, the zombie choreography), are not
judged here. Both engines compute the figure (``figure``) from the same per-process counts.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from harness.history import store
from harness.history.hits import open_in
from harness.history.model import (
    ABORTED_ON_PURPOSE,
    APP,
    COPIER,
    FAIL,
    FAULT_START,
    FAULT_STOP,
    OK,
    POLL,
    PROGRESS_OPS,
    SPARK_BATCH,
    SPARK_JOB,
    SPARK_START,
    TXN_PRODUCER,
    kind_of,
    workload_of,
)

#: The kinds whose progress is judged, and what shows it, as the reason says it.
JUDGED: dict[str, str] = {TXN_PRODUCER: "transaction", COPIER: "copy", SPARK_JOB: "micro-batch",
                          APP: "output record read"}
NS = 1_000_000_000
#: The start of each reason, for tests and readers that look for it.
IDLE_UNDER_FAULTS = "idle while the faults ran: a workload whose guarantee is judged made no progress"
NO_PROGRESS_BEFORE_FAULT = ("a fault began on a workload that made no progress for the nemesis's whole wait "
                            "(it hit a stuck workload)")


@dataclass(frozen=True)
class Window:
    """The faults' window on the history's clock (ns); ``end`` is inf when a fault never ended."""

    start: int
    end: float


def fault_window(events: Iterable[Mapping[str, Any]]) -> Window | None:
    """The window of the nemesis's fault events (``store.fault_events``); None: no fault started."""
    starts = [int(e["time"]) for e in events if (e.get("value") or {}).get("phase") == FAULT_START]
    if not starts:
        return None
    stops = [int(e["time"]) for e in events if (e.get("value") or {}).get("phase") == FAULT_STOP]
    return Window(min(starts), max(stops) if len(stops) >= len(starts) else math.inf)


@dataclass
class Counts:
    """One kind's ops around the window: progress in it and after it, and whether the faults
    stopped or stalled it (an op of it in flight in the window, or a fault aimed at it)."""

    done_in: int = 0
    done_after: int = 0
    in_flight: int = 0
    aimed_at: bool = False

    @property
    def live(self) -> bool:
        return self.done_in > 0 or (self.done_after > 0 and (self.in_flight > 0 or self.aimed_at))

    def to_json(self) -> dict[str, Any]:
        return {"progress_in_window": self.done_in, "progress_after": self.done_after, "in_flight": self.in_flight,
                "aimed_at": self.aimed_at}


@dataclass
class Tally:
    """Counts per judged kind, gathered from each engine's aggregates."""

    kinds: dict[str, Counts] = field(default_factory=dict)

    def of(self, kind: str) -> Counts:
        return self.kinds.setdefault(kind, Counts())


def txn_counts(txns: pd.DataFrame, w: Window) -> pd.DataFrame:
    """Per ``process`` and ``f`` (txn, send) of the transactions table: ``done_in``, ``done_after``
    (finished: committed, or aborted on purpose; at its completion, in the window or after it) and
    ``in_flight`` (invoked before the window's end, completed after its start or never). The Spark
    engine computes the same in Spark (``spark_engine.progress_counts``)."""
    done_at = txns["complete_time"].to_numpy(dtype="float64", na_value=np.nan)
    invoked = txns["invoke_time"].to_numpy(dtype="float64")
    outcome = txns["outcome"].astype(str).to_numpy()
    error = txns["error"].astype(object).to_numpy()
    finished = (outcome == OK) | ((outcome == FAIL) & (error == ABORTED_ON_PURPOSE))
    frame = pd.DataFrame({
        "process": txns["process"].astype(str).to_numpy(), "f": txns["f"].astype(str).to_numpy(),
        "done_in": finished & (done_at >= w.start) & (done_at <= w.end),
        "done_after": finished & (done_at > w.end),
        "in_flight": open_in(invoked, done_at, w.start, w.end),
    })
    return frame.groupby(["process", "f"], as_index=False)[["done_in", "done_after", "in_flight"]].sum()


def tally(w: Window, txn_rows: Iterable[tuple[str, str, int, int, int]], spark: Iterable[Mapping[str, Any]],
          app_output_times: Iterable[int], apps: bool, events: Iterable[Mapping[str, Any]]) -> Tally:
    """The counts of each judged kind: from ``txn_rows`` (``txn_counts``' rows), the Spark job's
    events, the times the app's output reader read records (``apps``: the run had an app), and
    the faults' events (what they were aimed at)."""
    t = Tally()
    for process, f, done_in, done_after, in_flight in txn_rows:
        workload = workload_of(process)
        kind = kind_of(workload) if workload is not None else None
        if kind not in JUDGED:
            continue
        c = t.of(kind)
        c.in_flight += int(in_flight)
        if f in PROGRESS_OPS.get(kind, ()):
            c.done_in += int(done_in)
            c.done_after += int(done_after)
    for e in spark:
        if e.get("f") == SPARK_START:  # a job that started is judged, micro-batches or none
            t.of(SPARK_JOB)
        if e.get("f") != SPARK_BATCH:
            continue
        c, at = t.of(SPARK_JOB), int(e["time"])
        if e.get("outcome") == OK:
            c.done_in += w.start <= at <= w.end
            c.done_after += at > w.end
        began = at - int(float(e.get("ms") or 0) * 1e6)
        c.in_flight += began <= w.end and at >= w.start
    if apps:
        c = t.of(APP)
        for at in app_output_times:
            c.done_in += w.start <= at <= w.end
            c.done_after += at > w.end
    for e in events:
        v = e.get("value") or {}
        if v.get("phase") == FAULT_START and isinstance(v.get("workload"), str):
            kind = kind_of(v["workload"])  # a workload process (copier-0) or a kind (spark-job)
            if kind in JUDGED:
                t.of(kind).aimed_at = True
    return t


def figure(w: Window | None, t: Tally, events: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """``stats["progress_under_faults"]``: the window (history seconds), each judged kind's counts,
    the kinds idle while the faults ran, and the faults that began on a workload that had made no
    progress for the nemesis's whole wait. None: the run had no faults."""
    if w is None:
        return None
    expired = [f"{v.get('kind')} on {v.get('workload')} at {int(e['time']) / NS:.1f} s"
               for e in events for v in [e.get("value") or {}]
               if v.get("phase") == FAULT_START and v.get("wait_expired")]
    return {"window_s": [round(w.start / NS, 3), None if math.isinf(w.end) else round(w.end / NS, 3)],
            "kinds": {k: c.to_json() for k, c in sorted(t.kinds.items())},
            "idle": sorted(k for k, c in t.kinds.items() if not c.live),
            "began_without_progress": expired}


def reasons(fig: Mapping[str, Any] | None) -> list[str]:
    """Why the history cannot be judged as a whole, from ``figure`` (``unknown_because``)."""
    if not fig:
        return []
    out = []
    if fig.get("idle"):
        lo, hi = fig["window_s"]
        span = f"{lo:.1f}-{hi:.1f} s" if hi is not None else f"{lo:.1f} s to the end"
        idle = ", ".join(f"{k} (no {JUDGED.get(k, 'progress')})" for k in fig["idle"])
        out.append(f"{IDLE_UNDER_FAULTS}: {idle} while the faults ran ({span} on the history's clock), nor after "
                   "them once the faults let go of it")
    if fig.get("began_without_progress"):
        out.append(f"{NO_PROGRESS_BEFORE_FAULT}: {'; '.join(fig['began_without_progress'])}")
    return out



def of_tables(t: store.Tables) -> dict[str, Any] | None:
    """``figure`` of a history's tables (the default engine)."""
    events = store.fault_events(t.faults)
    w = fault_window(events)
    if w is None:
        return None
    rows = txn_counts(t.txns, w).itertuples(index=False, name=None) if len(t.txns) else []
    polls = t.app_outputs["op"][(t.app_outputs["source"] == POLL).to_numpy(bool)].to_numpy(dtype="int64")
    times = pd.Series(t.ops["time"].to_numpy(dtype="int64"), index=t.ops["index"].to_numpy(dtype="int64"))
    app_times = times.reindex(np.unique(polls)).dropna().to_numpy(dtype="int64")
    apps = bool(t.meta.get("apps"))
    return figure(w, tally(w, rows, store.spark_events(t), app_times, apps, events), events)
