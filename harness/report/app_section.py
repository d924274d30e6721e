"""The report's view of an app under test (docs/APPS.md): its contract and settings, its instances
with their logs, when each was ready and exited and how its wrapper ended, the drain after heal, the
contract function's error, and what was read of its output; and what an output partition the
examples name holds, for the partition views (an app's output records are ``app_outputs``, not
``reads``). From the journal (``journal.app``, the resolved scenario) and the history's tables;
nothing here judges."""

from __future__ import annotations

import json
import shlex
import signal
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from pydantic import ValidationError

from harness.base.log_digest import LogDigest
from harness.history import store
from harness.history.model import (
    AGGREGATE,
    APP_EXIT,
    APP_FEEDER,
    APP_READER,
    APP_READY,
    IDENTITY,
    JOIN,
    MODEL,
    READ_UNCOMMITTED,
    SCAN,
    WINDOWED,
)
from harness.history.schema import AppContract, contracts
from harness.history.text import keyed
from harness.report.clock import Clock
from harness.report.logs import LogLink
from harness.report.pipeline_section import PipelineView, StageRuns, pipeline_view
from harness.rundir.journal import AppDrain, AppFacts, Journal
from harness.rundir.run_verdict import RunVerdict
from harness.rundir.runfolder import WORKLOADS
from harness.workloads.app_wrapper import KILLED_AT_STOP, MAX_RESTARTS
from harness.workloads.registry import AppSettings, instance_names, reader_name

#: The kind of workload an app is in a scenario (``registry.KindName``).
APP_KIND = "app"
#: The last lines of an instance's log the report shows when it ended badly with no exception or
#: ERROR line in it (its log is linked for the rest).
LOG_SAYS_TAIL = 6


@dataclass
class Instance:
    """One instance of the app (``<app>-<n>``): its log, its incarnations' readiness and exits, how
    its wrapper ended the run, and the faults that acted on it."""

    name: str
    log: LogLink | None
    ready_s: list[float]
    exits_s: list[float]
    #: the wrapper's exit code at the run's end (``journal.app.exits``; None: not recorded)
    code: int | None
    ended: str
    #: fault numbers (F1 = 1) of the faults on this instance
    faults: list[int] = field(default_factory=list)
    #: what its log says went wrong (its exception, its first and last ERROR lines; its last lines when
    #: it shows neither but did not end as the stop asked), from ``journal.app.logs``; empty: nothing
    log_says: list[str] = field(default_factory=list)


@dataclass
class OutputRead:
    """What the reads of one output topic got: records polled during the run, and in the final scans."""

    topic: str
    polled: int
    committed: int
    uncommitted: int
    #: the app whose output it is
    app: str = ""


@dataclass
class AppRow:
    """One row of the app's table: what, what it was, whether it is a warning."""

    what: str
    text: str
    warn: bool = False


@dataclass
class AppView:
    name: str
    #: the ``app-contract`` the checks judged by (topics as the run names them)
    contract: AppContract
    #: the contract, the settings, the drain, the contract function, as rows
    facts: list[AppRow]
    #: the command of an instance (placeholders unfilled; empty: the journal does not say)
    command: str
    instances: list[Instance]
    #: the feeder's and the output reader's logs
    helpers: list[tuple[str, LogLink]]
    #: every app's outputs (a pipeline's stages' in the order written)
    outputs: list[OutputRead]
    #: a pipeline's stages and its end-to-end verdict (None: a single app)
    pipeline: PipelineView | None = None


def contract_says(c: AppContract) -> str:
    """``map, function identity, order per-key`` / ``aggregate: cnt count, sm sum`` / ``windowed: ...,
    window 10000 ms every 10000 ms, grace 0 ms`` / ``model, function m:f, monotone`` / ``join ...``."""
    if c.contract in (AGGREGATE, WINDOWED):
        says = f"{c.contract}: " + ", ".join(f"{t} {fn}" for t, fn in c.aggregates.items())
        says += f", by {c.by}" if c.by else ""
        if c.window is not None:
            says += (f", window {c.window.size_ms} ms every {c.window.advance} ms, grace {c.window.grace_ms} ms, "
                     f"keys {c.window_key}")
        return says
    if c.contract == MODEL:
        return f"model, function {c.function}" + (", monotone" if c.monotone else "")
    if c.contract == JOIN:
        return f"join of stream {c.stream} with table {c.table}, function {c.function}"
    return f"{c.contract}, function {c.function}, order {c.order}"


def ended_says(code: int | None, stop_timeout_s: float | None) -> str:
    """How an instance's wrapper ended, from its exit code (``harness.workloads.app_wrapper``)."""
    if code is None:
        return "no exit code recorded"
    if code == 0:
        return "stopped cleanly: the app exited on SIGTERM"
    if code == KILLED_AT_STOP:
        within = f" for stop_timeout_s ({stop_timeout_s:g} s)" if stop_timeout_s is not None else ""
        return f"killed at stop: the app ignored SIGTERM{within}"
    if code < 0:
        try:
            return f"the wrapper was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"the wrapper was killed by signal {-code}"
    return (f"exited {code}: the app could not start, exited before it was ready, or exited after "
            f"{MAX_RESTARTS} restarts (its log says which)")


def log_says(digest: LogDigest | None) -> list[str]:
    """An instance's log digest (``journal.app.logs``) as lines: its exceptions and ERROR lines,
    or, when it shows neither, its last lines (none: no digest)."""
    if digest is None:
        return []
    return digest.lines_out(tail=0 if digest.failed else LOG_SAYS_TAIL)


def stages_of(journal: Journal | None) -> list[tuple[AppSettings, int]]:
    """Each app's settings as the run resolved them, with its instance count, in the order written
    (empty: no app, or a journal this version cannot read so)."""
    if journal is None:
        return []
    try:
        return [(AppSettings.model_validate(w.get("settings") or {}), int(w.get("count") or 1))
                for w in journal.resolved.get("workloads") or [] if w.get("kind") == APP_KIND]
    except (ValidationError, TypeError, ValueError):
        return []


def app_view(tables: store.Tables, journal: Journal | None, clock: Clock, links: list[LogLink],
             faults: list[tuple[str, str | None]], verdict: RunVerdict | None = None) -> AppView | None:
    """The run's app (the first ``app-contract``), and a pipeline's stages, or None when the run had
    no app. ``links``: the run's log files; ``faults``: each fault window's kind and the workload it
    acted on (None: no workload); ``verdict``: the run's, for a pipeline's verdicts per stage."""
    apps = contracts(tables.meta)
    if not apps:
        return None
    contract = apps[0]
    name = contract.app
    facts = journal.app if journal is not None and journal.app is not None else AppFacts()
    stages = stages_of(journal)
    settings = stages[0][0] if stages else None
    by_path = {lk.path: lk for lk in links}
    events = _events(tables.ops, clock)
    exits = facts.exits
    names = sorted(set(exits) | {n for n, _ in events}, key=_instance_order)
    stop_timeout_s = settings.stop_timeout_s if settings is not None else None
    instances = [Instance(n, by_path.get(_log(n)), events.get((n, APP_READY), []),
                          events.get((n, APP_EXIT), []), exits.get(n), ended_says(exits.get(n), stop_timeout_s),
                          [k for k, (_, w) in enumerate(faults, 1) if w == n], log_says(facts.logs.get(n)))
                 for n in names]
    helpers = [(what, by_path[_log(w)]) for w, what in ((APP_FEEDER, "feeder"), (APP_READER, "output reader"))
               if _log(w) in by_path]
    helpers += [(f"{s.name}'s output reader", by_path[_log(reader_name(s))]) for s, _ in stages[1:]
                if _log(reader_name(s)) in by_path]
    stray = (tables.meta.get("app_stray") or {}).get(name) or {}
    runs = {s.name: StageRuns(mine, {n: events.get((n, APP_READY), []) for n in mine},
                              {n: [kind for kind, w in faults if w == n] for n in mine},
                              _drain_says(facts.stages[s.name].drain if s.name in facts.stages else None, s))
            for (s, _), mine in zip(stages, instance_names(stages).values())}
    return AppView(name, contract, _facts(contract, settings, facts, stray), shlex.join(settings.command) if settings else "",
                   instances, helpers, [o for a in apps for o in _outputs_read(tables, a.app, a)],
                   pipeline_view(apps, verdict, tables, runs))


def _facts(contract: AppContract, s: AppSettings | None, facts: AppFacts, stray: dict[str, int]) -> list[AppRow]:
    """The contract, the topics written to undeclared (``stray``: topic -> records), the settings
    that shape the run, the drain and the contract function, as rows."""
    rows = [AppRow("contract", contract_says(contract)), AppRow("inputs", ", ".join(contract.inputs)),
            AppRow("outputs", ", ".join(contract.outputs))]
    if stray:
        rows.append(AppRow("written undeclared", ", ".join(f"{t}: {n} records" for t, n in stray.items()), warn=True))
    if s is not None:
        serde = s.contract.output_serde
        f = s.feeder
        rows += [AppRow("output serde", f"key {serde.key}, value {serde.value}"),
                 AppRow("feeder", f"{f.values_per_txn} values a transaction, {f.abort_share:.0%} aborted on purpose, "
                                f"{f.keys} keys, {f'{f.rate:g} values/s at most' if f.rate else 'as fast as it goes'}, "
                                f"values as {f.value_serde}"),
                 AppRow("ready when", f"{_ready_says(s)} (within ready_timeout_s {s.ready_timeout_s:g} s)"),
                 AppRow("stop", f"SIGTERM, then SIGKILL after stop_timeout_s {s.stop_timeout_s:g} s")]
    drain = facts.drain
    if drain is not None or facts.model_fields_set:  # a journal that recorded the app at all
        rows.append(AppRow("drain", _drain_says(drain, s), warn=drain is None or not drain.drained))
    if facts.restarted_for_drain:
        rows.append(AppRow("started again for the drain", ", ".join(facts.restarted_for_drain)))
    if facts.function_error:
        rows.append(AppRow("contract function", f"could not be applied: {facts.function_error}", warn=True))
    elif facts.expected_inputs is not None:
        rows.append(AppRow("contract function", f"applied to {facts.expected_inputs} inputs (the expect ops)"))
    if facts.outputs_read is not None:
        rows.append(AppRow("outputs read", f"{facts.outputs_read} records in the final scans (both isolations)"))
    return rows


def _ready_says(s: AppSettings) -> str:
    r = s.ready
    if r.log is not None:
        return f"a line of its output matches {r.log!r}"
    if r.group is not None:
        return f"its consumer group {s.id if r.group in ('stable', '{id}') else r.group} is Stable"
    return "a first record in an output topic since its start (each start)"


def _drain_says(drain: AppDrain | None, s: AppSettings | None) -> str:
    """The drain after heal as the journal has it: drained or not, how, how long."""
    if drain is None:
        return "none recorded"
    took = f" in {drain.took_s:g} s" if drain.took_s is not None else ""
    within = f" (drain_s {s.drain_s:g} s)" if s is not None else ""
    if drain.drained:
        return f"drained{took}{within}: {drain.how}"
    last = drain.last
    return f"not drained{took}{within}: {drain.how}" + (f"; last seen: {json.dumps(last, default=str)}" if last else "")


def _log(workload: str) -> str:
    """A workload's log as ``log_links`` names it (the supervisor writes it there)."""
    return f"{WORKLOADS}/{workload}.log"


def _instance_order(name: str) -> tuple[str, int]:
    """``app-2`` before ``app-10``."""
    base, _, n = name.rpartition("-")
    return (base, int(n)) if n.isdigit() else (name, -1)


def _events(ops: pd.DataFrame, clock: Clock) -> dict[tuple[str, str], list[float]]:
    """(instance, ``app-ready`` / ``app-exit``) -> report seconds of each (the process ``<instance>.<k>``)."""
    mine = ops[ops["f"].isin([APP_READY, APP_EXIT]).to_numpy(bool)]
    out: dict[tuple[str, str], list[float]] = {}
    for process, f, t in zip(mine["process"].astype(str), mine["f"].astype(str), mine["time"].to_numpy(np.int64)):
        out.setdefault((process.rpartition(".")[0] or process, f), []).append(clock.s(int(t)))
    return out


def _outputs_read(tables: store.Tables, app: str, contract: AppContract) -> list[OutputRead]:
    """Per output topic: records the reader's polls got, and the final read_committed and
    read_uncommitted scans (column comparisons: no string made per record)."""
    out = tables.app_outputs
    mine = (out["app"] == app).to_numpy(bool)
    scan = (out["source"] == SCAN).to_numpy(bool)
    uncommitted = (out["isolation"] == READ_UNCOMMITTED).to_numpy(bool)
    rows = []
    for topic in contract.outputs:
        of = mine & (out["topic"] == topic).to_numpy(bool)
        rows.append(OutputRead(topic, int((of & ~scan).sum()), int((of & scan & ~uncommitted).sum()),
                               int((of & scan & uncommitted).sum()), app))
    return rows


def record_text(record: dict[str, Any]) -> str:
    """An output record an example names (``{"topic", "key", "value"}``) as history.txt writes it:
    ``topic[key]=value``."""
    return f"{record['topic']}{keyed(record.get('key'), record.get('value'))}"


def is_record(v: Any) -> bool:
    """``v`` is an output record an ``app-map`` example names."""
    return isinstance(v, dict) and set(v) == {"topic", "key", "value"}


# --------------------------------------------------------------------------------------- partition views
@dataclass
class OutputScan:
    """The final scans of one of an app's output partitions, placed for the partition view."""

    #: offset, isolation, writer (the legend's colour), order (the y value; NaN: cannot be placed)
    scan: pd.DataFrame
    ylabel: str
    unplaced: str
    note: str


def output_app(tables: store.Tables, topic: str) -> AppContract | None:
    """The app contract whose outputs include ``topic`` (None: not an app's output)."""
    return next((a for a in contracts(tables.meta) if topic in a.outputs), None)


def output_scan(tables: store.Tables, app: AppContract, topic: str, partition: int, writer: pd.Series,
                order: pd.Series) -> OutputScan:
    """What the final scans of an app's output partition hold. A ``map`` output is placed at the
    place, in the order of all writes, of the input it is the output of (its own value for
    ``identity``, else the input whose expected outputs include it), coloured by that input's
    writer, so a healthy partition climbs as any other; an ``aggregate`` update at its value,
    coloured by its key, so each key's updates climb (down for min). ``writer`` / ``order``: by
    value id, as the partition views give them for every write."""
    out = tables.app_outputs
    sel = out.loc[(out["source"] == SCAN).to_numpy(bool) & (out["topic"] == topic).to_numpy(bool)
                  & (out["partition"] == partition).to_numpy(bool), ["isolation", "offset", "value", "key"]]
    sel = sel.reset_index(drop=True)
    base = pd.DataFrame({"offset": sel["offset"].astype("int64"), "isolation": sel["isolation"].astype(str)})
    name = app.app
    if app.contract in (AGGREGATE, WINDOWED, MODEL):
        fn = app.aggregates.get(topic, "aggregate" if app.contract != MODEL else "value")
        return OutputScan(base.assign(writer=[f"key {k}" for k in sel["key"].astype(object)],
                                      order=pd.to_numeric(sel["value"], errors="coerce").to_numpy(np.float64)),
                          f"{fn} (the update's value)", "not a number",
                          f"{name}'s {fn} updates, one colour per key: each key's climb")
    inputs = _inputs_of(tables, app, topic, sel)
    vids = {v: i for i, v in store.vids_of(tables, list(dict.fromkeys(x for x in inputs if isinstance(x, str)))).items()}
    at = pd.Series(inputs).map(vids)
    found = at.notna().to_numpy(bool)
    placed = at[found].astype("int64").to_numpy()
    writers = np.full(len(sel), "no input", dtype=object)
    orders = np.full(len(sel), np.nan)
    writers[found] = [f"{name}, of {w}'s input" for w in writer.reindex(placed).fillna("?")]
    orders[found] = order.reindex(placed).to_numpy(np.float64)
    how = "its own value" if app.function == IDENTITY else f"{app.function}'s expected outputs"
    return OutputScan(base.assign(writer=writers, order=orders), "its input's write order", "no input explains it",
                      f"{name}'s output, placed at its input ({how})")


def _inputs_of(tables: store.Tables, app: AppContract, topic: str, sel: pd.DataFrame) -> list[Any]:
    """The input each output record of ``sel`` is the output of (None: none): the record's own value
    for ``identity``, else the first input whose expected outputs (``app_expected``) include it."""
    if app.function == IDENTITY:
        return list(sel["value"].astype(object))
    exp = tables.app_expected
    exp = exp[(exp["app"] == app.app).to_numpy(bool) & (exp["topic"] == topic).to_numpy(bool)]
    first = exp.drop_duplicates(["key", "value"])[["key", "value", "input"]].astype(object)
    # a merge matches a null key with a null key, as the check does
    found = sel[["key", "value"]].astype(object).merge(first, on=["key", "value"], how="left")["input"]
    return [None if v != v else v for v in found]

