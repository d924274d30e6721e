"""What a report shows, read from a run folder alone: the verdict, the scenario, the fault windows
and node states (from the nemesis's events) with their planned starts, throughput and commit
latency over time (from the transactions table), each check example's ops placed in time (``ops``),
and for each partition an anomaly names, what Kafka kept there. Every time is in seconds on the
report's clock (``clock``: t=0 is the schedule's zero when recorded).

Everything here reads files; nothing talks to Kafka (docs/ARCHITECTURE.md: data flows one way)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from chaos.faults import node_states
from harness.history import store
from harness.history.model import SCAN, SPARK_BATCH, SPARK_SKIP, SPARK_START
from harness.report.app_section import AppView, app_view, output_app, output_scan
from harness.report.clock import Clock, clock_of
from harness.report.loaded import LoadedRun, load_run, read_json, read_verdict
from harness.report.logs import log_links
from harness.report.ops import MAX_MARKED, HistoryColumns, Marked, active_faults, example_spans
from harness.rundir.journal import FaultHit, Journal, fault_runs
from harness.rundir.run_verdict import RunVerdict

#: Broker process faults and the state a node is in during their window.
NODE_STATE = node_states()
#: At most this many partitions get an offset view (the first ones the examples name).
MAX_PARTITION_VIEWS = 4
_LINK_NODE = re.compile(r"n(\d+)")


@dataclass
class FaultWindow:
    kind: str
    start_s: float
    end_s: float | None  # None: never ended (the run stopped first; heal-all ended it)
    label: str
    nodes: list[int]
    detail: dict[str, Any]
    #: when the schedule planned it to start (report seconds); None: not known (no schedule entry,
    #: or a run that did not record its schedule's zero)
    planned_s: float | None = None
    #: what was in flight on its target while it was active (the journal's ``FaultRun.hit``); None:
    #: not recorded
    hit: FaultHit | None = None
    #: how long it waited for its workload's progress, and whether in vain (the journal's)
    waited_s: float | None = None
    wait_expired: bool = False


@dataclass
class PartitionView:
    topic: str
    partition: int
    #: check name -> offsets in this partition its examples name
    marks: dict[str, list[int]]
    #: the final scans of this partition: offset, isolation, writer process, and ``order``: the
    #: value's place in the order of all writes (NaN: written by no recorded write)
    scan: pd.DataFrame
    #: what ``order`` is, and what a record it cannot place is (an app's output places its
    #: records otherwise: ``harness.report.app_section.output_scan``)
    ylabel: str = "write order"
    unplaced: str = "no recorded write"
    #: what the figure's caption adds (an app's output partition: how its records are placed)
    note: str = ""


@dataclass
class RunData:
    run_dir: Path
    verdict: RunVerdict
    scenario: dict[str, Any]
    duration_s: float
    faults: list[FaultWindow]
    node_ids: list[int]
    txns: pd.DataFrame  # complete_s, outcome, latency_ms (ok only)
    partitions: list[PartitionView] = field(default_factory=list)
    #: the Spark job's micro-batches (time_s, records, outcome) and replays skipped (time_s), if it ran
    spark_batches: pd.DataFrame | None = None
    spark_skips: list[float] = field(default_factory=list)
    #: when each Spark driver incarnation started (the first, and each restart)
    spark_starts: list[float] = field(default_factory=list)
    clock: Clock = field(default_factory=lambda: Clock(0, ""))
    #: the earliest time drawn (a workload's first ops may come just before t=0)
    start_s: float = 0.0
    #: check examples placed in time (the first ``MAX_MARKED``), A1, A2, ... in page order
    marked: list[Marked] = field(default_factory=list)
    #: the history's ops, for the lane views (None: the history could not be read)
    history: HistoryColumns | None = None
    #: planned faults that never started: (kind, planned report seconds or None)
    never_started: list[tuple[str, float | None]] = field(default_factory=list)
    #: the run's journal (None: a folder made before journals)
    journal: Journal | None = None
    #: the history as loaded (None: not kept)
    tables: store.Tables | None = None
    #: the app under test (docs/APPS.md), if the run had one
    app: AppView | None = None


def load(run: Path | LoadedRun) -> RunData:
    """The report's data of a run folder, or of the run as already loaded (``LoadedRun``: its files
    are not read again); ``ConfigError`` if it is not a finished run folder."""
    if isinstance(run, Path):
        verdict = read_verdict(run)  # the folder and its verdict first: the clearest refusal
        scenario = _scenario(run)
        run = load_run(run, verdict)
    else:
        scenario = _scenario(run.run_dir)
    run_dir, verdict, journal = run.run_dir, run.verdict, run.journal
    clock = clock_of(run_dir, journal)
    h = _history(run.tables)
    faults = fault_windows(h.events)
    _shift(faults, h.txns, clock)
    never = planned_starts(faults, h.events, journal)
    attach_hits(faults, journal)
    first_s, last_s = (clock.s(t) for t in h.span_ns)
    duration_s = max([last_s, float(scenario.get("duration") or 0.0), *(f.end_s or f.start_s for f in faults)])
    node_ids = sorted({n for f in faults for n in f.nodes} | {1, 2, 3})
    data = RunData(run_dir, verdict, scenario, duration_s, faults, node_ids, h.txns, clock=clock,
                   start_s=min(0.0, first_s), history=h.lookup, never_started=never, journal=journal, tables=run.tables)
    data.partitions = partition_views(run.tables, verdict)
    spark_events(data, h.spark)
    data.marked = mark_examples(verdict, h.lookup, clock, faults)
    data.app = app_view(run.tables, journal, clock, log_links(run_dir), [(f.kind, f.detail.get("workload")) for f in faults],
                        verdict)
    return data


def _shift(faults: list[FaultWindow], txns: pd.DataFrame, clock: Clock) -> None:
    """History seconds -> report seconds (t=0 moves to the clock's zero)."""
    z = clock.zero_ns / 1e9
    for f in faults:
        f.start_s -= z
        f.end_s = None if f.end_s is None else f.end_s - z
    txns["complete_s"] -= z


def planned_starts(faults: list[FaultWindow], events: list[dict[str, Any]], journal: Journal | None) -> list[tuple[str, float | None]]:
    """Each fault window's planned start (``planned_s``), tied to its schedule entry as the journal
    ties them (``journal.fault_runs``); the planned faults that never started."""
    if journal is None or not journal.schedule:
        return []
    known = journal.schedule_t0_s is not None  # else the plan's zero is not on this clock
    runs = fault_runs(events, journal.schedule)
    for w, r in zip(faults, runs):
        if r.planned is not None and known:
            w.planned_s = float(journal.schedule[r.planned].get("at") or 0.0)

    started = {r.planned for r in runs}
    return [(str(f.get("kind")), float(f.get("at") or 0.0) if known else None)
            for i, f in enumerate(journal.schedule) if i not in started]


def attach_hits(faults: list[FaultWindow], journal: Journal | None) -> None:
    """What each fault hit and how long it waited, as the journal recorded them (its faults are
    these events, in this order)."""
    if journal is not None and len(journal.faults) == len(faults):
        for w, f in zip(faults, journal.faults):
            w.hit, w.waited_s, w.wait_expired = f.hit, f.waited_s, f.wait_expired


def mark_examples(verdict: RunVerdict, history: HistoryColumns | None, clock: Clock,
                  faults: list[FaultWindow]) -> list[Marked]:
    """The first ``MAX_MARKED`` check examples with the ops they name, timed, and the faults active
    while those ops ran (an example whose ops are not in the history is left out)."""
    if history is None:
        return []
    windows = [(f.start_s, f.end_s if f.end_s is not None else float("inf")) for f in faults]
    marked: list[Marked] = []
    for name, c in verdict.checks.items():
        for i, ex in enumerate(c.examples):
            if len(marked) >= MAX_MARKED or not isinstance(ex, dict):
                continue
            spans = example_spans(ex, history, clock)
            if not spans:
                continue
            m = Marked(f"A{len(marked) + 1}", name, i, spans,
                       partitions=list(dict.fromkeys((t, p) for t, p, _ in example_positions(ex))))
            m.faults = active_faults(m.start_s, m.end_s, windows)
            marked.append(m)
    return marked


def spark_events(data: RunData, events: list[dict[str, Any]]) -> None:
    """The Spark job's batches, skipped replays and starts (its events, ``store.spark_events``) onto ``data``."""
    s = data.clock.s
    batches = [(s(e["time"]), e.get("records") or 0, e.get("outcome", "ok")) for e in events if e.get("f") == SPARK_BATCH]
    if batches:
        data.spark_batches = pd.DataFrame(batches, columns=["time_s", "records", "outcome"])
    data.spark_skips = [s(e["time"]) for e in events if e.get("f") == SPARK_SKIP]
    data.spark_starts = [s(e["time"]) for e in events if e.get("f") == SPARK_START]


@dataclass
class _Read:
    """What ``load`` reads of the history."""

    txns: pd.DataFrame  # complete_s (history seconds), outcome, latency_ms
    events: list[dict[str, Any]]  # the nemesis's fault events
    spark: list[dict[str, Any]]  # the Spark job's events
    span_ns: tuple[int, int]  # the first and the last op's time
    lookup: HistoryColumns


def _scenario(run_dir: Path) -> dict[str, Any]:
    return read_json(run_dir / "scenario.json", "not a run folder of eos-chaos run")


def _history(tables: store.Tables) -> _Read:
    """The history's transactions, the nemesis's fault events, the Spark job's events and its ops."""
    tx = tables.txns[["outcome", "invoke_time", "complete_time", "commit_at"]]
    lookup = HistoryColumns.of_tables(tables)
    times = lookup.ops["time"]
    span = (int(times.iloc[0]), int(times.iloc[-1])) if len(times) else (0, 0)
    tx = tx[tx["complete_time"].notna()]
    out = pd.DataFrame({"complete_s": tx["complete_time"].astype("float64") / 1e9, "outcome": tx["outcome"].astype(str)})
    started = tx["commit_at"].fillna(tx["invoke_time"]).astype("float64")
    out["latency_ms"] = np.where(out["outcome"] == "ok", (tx["complete_time"].astype("float64") - started) / 1e6, np.nan)
    return _Read(out.reset_index(drop=True), store.fault_events(tables.faults), store.spark_events(tables), span, lookup)


def hit_text(hit: FaultHit | None) -> str:
    """What a fault hit, as the fault table says it: ``4 transactions open, 2 when it began
    (txn-producer-0, copier-1); 1 micro-batch running; requests: hold 2``, ``nothing``, or ``–``
    (not recorded)."""
    if hit is None:
        return "–"
    parts = []
    if hit.txns_open:
        named = ", ".join(hit.workloads)
        began = f", {hit.txns_open_at_start} when it began" if hit.txns_open_at_start is not None else ""
        parts.append(f"{_count(hit.txns_open, 'transaction')} open{began}" + (f" ({named})" if named else ""))
    if hit.batches_running:
        parts.append(f"{_count(hit.batches_running, 'micro-batch', 'micro-batches')} running")
    if hit.requests is not None:
        caught = ", ".join(f"{action} {n}" for action, n in sorted(hit.requests.items()))
        parts.append(f"requests: {caught}" if caught else "no request caught")
    said = "; ".join(parts)
    return said if hit.hit else f"nothing{f' ({said})' if said else ''}"


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def _key(value: dict[str, Any]) -> tuple[str, ...]:
    # the nemesis's own pairing: a stop carries the start's kind and node / links / workload
    return value["kind"], str(value.get("node")), str(value.get("links")), str(value.get("workload"))


def fault_windows(events: list[dict[str, Any]]) -> list[FaultWindow]:
    """Pair each fault's start with its stop; a start with no stop stays open (``end_s`` None)."""
    open_: dict[tuple[str, ...], list[FaultWindow]] = {}
    out: list[FaultWindow] = []
    for op in events:
        v = op.get("value") or {}
        if "kind" not in v:
            continue
        t = op["time"] / 1e9
        if v.get("phase") == "start":
            w = FaultWindow(v["kind"], t, None, label(v), _nodes(v), v)
            out.append(w)
            open_.setdefault(_key(v), []).append(w)
        elif v.get("phase") == "stop" and open_.get(_key(v)):
            open_[_key(v)].pop(0).end_s = t
    return out


def _nodes(v: dict[str, Any]) -> list[int]:
    """The nodes a fault acted on: its node, the nodes its target resolved to, or (older runs) the
    nodes every one of its links touches."""
    if isinstance(v.get("node"), int):
        return [v["node"]]
    if isinstance(v.get("nodes"), list):
        return [int(n) for n in v["nodes"]]
    links = v.get("links")
    if isinstance(links, list) and links:
        common = set.intersection(*(set(map(int, _LINK_NODE.findall(str(lk)))) for lk in links))
        return sorted(common)
    return []


def label(v: dict[str, Any]) -> str:
    """``kill n3 (leader)``, ``latency n1,n2,n3 (all, 12 links)``, ``kill-driver spark-job-0 in-txn``,
    ``set-transaction-version 2 -> 0``."""
    kind = v["kind"]
    nodes = _nodes(v)
    target = v.get("target")
    parts = [kind]
    if v.get("workload"):
        parts.append(str(v["workload"]))
    if v.get("window"):
        parts.append(str(v["window"]))
    if v.get("before") is not None and v.get("level") is not None:  # set-transaction-version
        parts.append(f"{v['before']} -> {v['level']}")
    if nodes:
        parts.append(",".join(f"n{n}" for n in nodes))
    why = [str(target)] if target is not None and not isinstance(target, int) else []
    if v.get("of"):
        why.append(f"of {v['of']}")
    links = v.get("links")
    if isinstance(links, list):
        why.append(links[0] if len(links) == 1 else f"{len(links)} links")
    if why:
        parts.append(f"({' '.join(why)})")
    return " ".join(parts)


def node_lanes(faults: list[FaultWindow], node_ids: list[int], end_s: float) -> dict[int, list[tuple[float, float, str]]]:
    """Per node, the spans it was down or paused (everything else: up)."""
    lanes: dict[int, list[tuple[float, float, str]]] = {n: [] for n in node_ids}
    for f in faults:
        state = NODE_STATE.get(f.kind)
        if state is None:
            continue
        for n in f.nodes:
            lanes.setdefault(n, []).append((f.start_s, f.end_s if f.end_s is not None else end_s, state))
    return lanes


def timeline(txns: pd.DataFrame, duration_s: float, bin_s: float | None = None, start_s: float = 0.0) -> pd.DataFrame:
    """Per time bin: transactions ok / fail / info completed per second, and commit latency p50 / max."""
    bin_s = bin_s or max(1.0, round((duration_s - start_s) / 300))  # ~300 bins whatever the run's length
    edges = np.arange(np.floor(start_s), duration_s + bin_s, bin_s)
    idx = np.clip(np.digitize(txns["complete_s"], edges) - 1, 0, len(edges) - 1)
    frame = pd.DataFrame({"bin": idx, "outcome": txns["outcome"], "lat": txns["latency_ms"]})
    counts = frame.groupby(["bin", "outcome"]).size().unstack(fill_value=0)
    lat = frame.dropna(subset=["lat"]).groupby("bin")["lat"]
    out = pd.DataFrame(index=pd.RangeIndex(len(edges), name="bin"))
    out["t"] = edges
    for k in ("ok", "fail", "info"):
        out[k] = (counts[k] if k in counts else pd.Series(dtype="float64")).reindex(out.index, fill_value=0) / bin_s
    out["lat_p50"] = lat.median().reindex(out.index)
    out["lat_max"] = lat.max().reindex(out.index)
    return out


def is_position(v: Any) -> bool:
    """``v`` is a position a check example names (``{"topic", "partition", "offset"}``)."""
    return isinstance(v, dict) and set(v) == {"topic", "partition", "offset"}


def position_text(p: dict[str, Any]) -> str:
    """A position as a person reads it: ``t-0@5``."""
    return f"{p['topic']}-{p['partition']}@{p['offset']}"


def example_positions(ex: dict[str, Any]) -> list[tuple[str, int, int | None]]:
    """The places an example names: its own topic / partition (/ offset), and every position object
    among its values (``positions``, ``orphan_output``, ``copies``, ``output``, ...), in that order."""
    spots: list[tuple[str, int, int | None]] = []
    if ex.get("topic") is not None and ex.get("partition") is not None:
        off = ex.get("offset")
        spots.append((str(ex["topic"]), int(ex["partition"]), int(off) if isinstance(off, (int, float)) else None))
    for v in ex.values():
        for p in v if isinstance(v, list) else [v]:
            # a position, or a step of a cycle (g0, g1c) that names some
            for q in [p] if is_position(p) else p.values() if isinstance(p, dict) else []:
                if is_position(q):
                    spots.append((str(q["topic"]), int(q["partition"]), int(q["offset"])))
    return spots


def anomaly_positions(verdict: RunVerdict) -> dict[tuple[str, int], dict[str, list[int]]]:
    """(topic, partition) -> check -> offsets, from every check's examples, in the order named."""
    found: dict[tuple[str, int], dict[str, list[int]]] = {}
    for name, c in verdict.checks.items():
        for ex in c.examples:
            if not isinstance(ex, dict):
                continue
            for topic, part, off in example_positions(ex):
                offsets = found.setdefault((topic, part), {}).setdefault(name, [])
                if off is not None and off not in offsets:
                    offsets.append(off)
    return found


def partition_views(tables: store.Tables, verdict: RunVerdict) -> list[PartitionView]:
    """What Kafka kept in each partition an anomaly names (the final scans), with writer processes."""
    spots = list(anomaly_positions(verdict).items())[:MAX_PARTITION_VIEWS]
    if not spots:
        return []
    store.add_ids(tables)  # value ids on writes and reads (tables flattened but not saved have none yet)
    # a value's place in the order of all writes is its first write's row
    writes = tables.writes[["txn", "vid"]].assign(row=np.arange(len(tables.writes))).drop_duplicates("vid")
    by_vid = writes.merge(tables.txns[["txn", "process"]], on="txn", how="left").set_index("vid")
    writer, order = by_vid["process"].astype(str), by_vid["row"].astype("float64")
    all_reads = tables.reads
    views = []
    for (topic, part), marks in spots:
        app = output_app(tables, topic)
        if app is not None:  # its records are app_outputs, placed by the app's contract
            o = output_scan(tables, app, topic, part, writer, order)
            views.append(PartitionView(topic, part, marks, o.scan, o.ylabel, o.unplaced, o.note))
            continue
        reads = all_reads.loc[(all_reads["source"] == SCAN).to_numpy() & (all_reads["topic"] == topic).to_numpy()
                              & (all_reads["partition"] == part).to_numpy(), ["isolation", "offset", "vid"]]
        scan = pd.DataFrame({"offset": reads["offset"].astype("int64"), "isolation": reads["isolation"].astype(str),
                             "writer": writer.reindex(reads["vid"].to_numpy()).fillna("?").to_numpy(),
                             "order": order.reindex(reads["vid"].to_numpy()).to_numpy()})
        views.append(PartitionView(topic, part, marks, scan))
    return views
