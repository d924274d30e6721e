"""``eos-chaos repro RUN_DIR``: the evidence a client's or Kafka's maintainers ask for (librdkafka's
issue template: the exact client and broker versions, the client configuration, debug logs, broker
log excerpts, a reproduction), gathered from a run folder alone.

One anomaly is told: the first example of the first check that fired whose ops the history has (or
the one ``--example CHECK[:N]`` picks), or with ``--error NAME`` the first transaction that ended
with that client error, in any run, a valid one too (kafka-bug-20785: the finding is a fatal error
on a run that stays valid). Its window is its ops, from the first invoke to the last
completion, with the first reads that saw the positions it names, and ``MARGIN_S`` either side.
What falls in the window is gathered:

- the anomaly's transactions: process, transactional.id, outcome, error, partitions, and the
  producer id and epoch the wire proxy decoded from their requests;
- the wire proxy's events (``wire``: the requests a fault's rule matched, each with its request
  header's API version and, for the transactional APIs, decoded fields), less those of the
  history's other producers; the API versions are read over the whole run;
- each workload's log, and each broker's ``server.log`` lines naming the anomaly's partitions,
  transactional.ids or producer ids (``logclip``);
- the history's lines (``history.txt``), the faults, and the moments of all of these as one timeline.

With them: the versions, the scenario's workload settings and broker overrides, the replay command,
and a draft of a smaller scenario (one instance of each workload the anomaly involves, only the
faults active in the window, each widened by its duration either side). ``repro_md`` writes them as
``REPORT.md`` and raw excerpts.

It reads the folder and writes nothing into it (the history is loaded without ``persist``): the
output folder is the caller's. Nothing here judges."""

from __future__ import annotations

import math
import re
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from harness.base.errors import ConfigError
from harness.checker import MEANING
from harness.history import store
from harness.history.model import POLL, split_tp
from harness.history.text import write_history_text
from harness.report.clock import Clock
from harness.report.data import FaultWindow, RunData, example_positions, load
from harness.report.loaded import LoadedRun
from harness.report.logclip import Clipped, clip
from harness.report.logs import partitions_named
from harness.report.ops import OpSpan, example_spans
from harness.report.wire_events import ApiSeen, WireEvent, api_versions, producers, read_wire, window_events
from harness.rundir import runinfo
from harness.rundir.journal import Journal
from harness.rundir.run_verdict import CheckRecord, RunVerdict
from harness.rundir.runfolder import NODES, WORKLOADS, RunFolder, run_tag

#: Seconds either side of the anomaly's ops that the excerpts cover.
MARGIN_S = 5.0
#: At most this many lines of one log, and wire events, go into the output folder's files.
FILE_LINES = 20_000
#: The shortest run a smaller scenario is cut to (``eos-chaos run --duration``'s shortest).
SHORTEST_S = 5.0
#: At most this many positions an example names are looked up in the reads (the first ones).
MAX_POSITIONS = 4
#: A broker log line at WARN or worse (what is looked for when the anomaly names nothing to grep).
_BROKER_WARN = r"^\[[^\]]+\] (?:WARN|ERROR|FATAL) "


@dataclass
class Anomaly:
    """The check example the report tells, with the ops it names placed in time."""

    check: str
    #: its place among the check's examples in verdict.json, from 1
    number: int
    #: what the check found in all
    count: int
    example: dict[str, Any]
    #: the ops it names, then the first reads that saw the positions it names
    spans: list[OpSpan]
    #: (topic, partition, offset or None) it names
    positions: list[tuple[str, int, int | None]]
    #: told for ``--error``: ``check`` is then the error's name, the example the first transaction
    #: that met it (a client's error, not a check's finding: the run may be valid)
    error: bool = False

    @property
    def meaning(self) -> str:
        if self.error:
            return "an error a client met (`stats.errors_seen`), told whatever the verdict"
        return MEANING.get(self.check, "")


@dataclass
class ReproTxn:
    """A transaction the anomaly names."""

    role: str
    index: int
    process: str
    txn_id: str | None
    outcome: str
    error: str | None
    start_s: float
    commit_s: float | None
    end_s: float | None
    #: ``topic-partition`` it wrote to, in order
    partitions: list[str]
    values: int
    #: ``producer id 7, epoch 0`` as the wire proxy decoded them from its requests (empty: no
    #: request of it was matched)
    producers: list[str] = field(default_factory=list)


@dataclass
class LogExcerpt:
    """A log's lines in the window."""

    #: the log as the report names it (``workloads/app-0.log``, ``n1/server.log``)
    source: str
    #: its file in the output folder (``logs/app-0.log``)
    file: str
    clipped: Clipped
    #: what the lines were picked by
    picked_by: str


@dataclass
class Moment:
    """One line of the timeline: what happened when, and who says so."""

    t_s: float
    source: str
    what: str


@dataclass
class Checked:
    """What ``eos-chaos minimize`` found by running smaller scenarios (REPORT.md cites it)."""

    #: the smallest scenario that reproduced, as YAML (None: none did)
    minimal: str | None
    #: the command that replays it, saved beside REPORT.md ("" when none reproduced)
    command: str
    #: in words: what it kept and how often it reproduced, or why none did
    says: str
    #: the candidates tried, as a Markdown table
    table: str
    #: the same, for a program
    record: dict[str, Any]


@dataclass
class Repro:
    """Everything ``REPORT.md`` says, gathered from one run folder."""

    run_dir: Path
    scenario: dict[str, Any]
    #: ``invalid`` or ``unknown``
    status: str
    unknown_because: list[str]
    #: whether the scenario expects what was found (a negative control), in words; empty: no
    expected: str
    #: (check, count) of every check that found something
    fired: list[tuple[str, int]]
    anomaly: Anomaly | None
    clock: Clock
    #: (lo, hi) in report seconds, and what it is
    window: tuple[float, float]
    window_says: str
    versions: list[tuple[str, str]]
    features: dict[str, int]
    api_versions: list[ApiSeen]
    workloads: list[dict[str, Any]]
    broker_config: dict[str, Any]
    txns: list[ReproTxn]
    faults: list[FaultWindow]
    wire: list[WireEvent]
    wire_says: str
    timeline: list[Moment]
    logs: list[LogExcerpt]
    #: logs that had nothing in the window: (source, why)
    quiet_logs: list[tuple[str, str]]
    history_lines: list[str]
    command: str
    minimal: str | None
    minimal_says: str
    #: the command that runs the draft (saved as ``minimal-scenario.yaml``) on the same cluster set-up
    minimal_command: str = ""
    notes: list[str] = field(default_factory=list)
    journal: Journal | None = None
    #: the scenario as run, to run again (``replayable``); None: the folder keeps none
    replayable: dict[str, Any] | None = None
    #: the draft as a cut of ``replayable`` (None: no draft)
    draft: Cut | None = None
    #: what ``eos-chaos minimize`` found by running smaller scenarios (None: not run)
    checked: Checked | None = None

    @property
    def name(self) -> str:
        return str(self.scenario.get("name") or self.run_dir.name)


def gather(run_dir: Path, verdict: RunVerdict, pick: str | None = None, error: str | None = None) -> Repro:
    """What ``REPORT.md`` says about the run in ``run_dir`` (its ``verdict`` already read; ``pick``:
    ``CHECK`` or ``CHECK:N``, which example to tell; ``error``: tell the first transaction that met
    this client error instead). ``ConfigError`` for a folder that is not a finished run's, or a
    ``pick`` or ``error`` that names nothing of it."""
    folder = RunFolder(run_dir)
    journal = Journal.load(folder)
    tables = store.load(run_dir)
    data = load(LoadedRun(folder, journal, verdict, tables))
    clock = data.clock
    anomaly = error_anomaly(error, data, tables) if error is not None else pick_anomaly(verdict, pick, data, tables)
    lo, hi, window_says = window_of(anomaly, data)
    notes: list[str] = []
    txns = transactions(anomaly, tables)
    zone = run_zone(journal)
    zero = unix_zero(clock, zone)
    cluster_dir = Path(journal.cluster_dir) if journal is not None and journal.cluster_dir else None

    events, wire_says = read_wire(run_dir, cluster_dir, zero)
    in_run = [e for e in events if e.t_s is None or data.start_s - MARGIN_S <= e.t_s <= data.duration_s + 60]
    mine = {t.txn_id for t in txns if t.txn_id}
    for t in txns:
        t.producers = producers(in_run, t.txn_id, t.start_s, t.end_s) if t.txn_id else []
    wire = window_events(in_run, lo, hi, mine, recorded_txn_ids(tables) - mine)
    if events and zero is None:
        notes.append("the run folder records no wall-clock time for t=0, so the wire events could not be placed in "
                     "time: those of the anomaly's transactional.ids are shown, whenever they were")
    if events:
        wire_says += f"; {len(wire)} of them in the window"

    timeline = moments(anomaly, txns, data.faults, wire, lo, hi, tables)
    logs, quiet = client_logs(run_dir, anomaly, clock, lo, hi, zone)
    blogs, bquiet = broker_logs(run_dir, cluster_dir, anomaly, txns, clock, lo, hi, zone)
    resolved = scenario_as_run(journal, data.scenario)
    again = replayable(resolved, journal, run_dir.name)
    minimal, minimal_says, cut = minimal_scenario(again, journal, data, anomaly, lo + MARGIN_S, hi - MARGIN_S)
    return Repro(
        run_dir=run_dir, scenario=data.scenario, status=verdict.label,
        unknown_because=list(verdict.unknown_because), expected=expected_says(verdict),
        fired=list(verdict.counts().items()), anomaly=anomaly, clock=clock,
        window=(lo, hi), window_says=window_says, versions=version_rows(journal, resolved),
        features=dict(journal.features) if journal is not None else {}, api_versions=api_versions(in_run),
        workloads=[dict(w) for w in resolved.get("workloads") or []],
        broker_config=dict(resolved.get("broker_config") or {}), txns=txns,
        faults=[f for f in data.faults if f.start_s <= hi and (f.end_s is None or f.end_s >= lo)],
        wire=wire, wire_says=wire_says, timeline=timeline, logs=logs + blogs, quiet_logs=quiet + bquiet,
        history_lines=history_lines(tables, clock, lo, hi), command=_command(journal, data.scenario),
        minimal=minimal, minimal_says=minimal_says,
        minimal_command=replay_command(journal, "minimal-scenario.yaml", cut.duration) if cut is not None else "",
        notes=notes, journal=journal, replayable=again, draft=cut)


def replay_command(journal: Journal | None, file: str, duration: float) -> str:
    """``eos-chaos run FILE`` with the run's backend, seed, Kafka release and the transaction.version
    its cluster ran at: a smaller scenario replayed as the run was ("" without a journal)."""
    if journal is None:
        return ""
    return runinfo.rerun_command(file, journal.backend, journal.seed, duration, replay_kafka_version(journal),
                                 replay_transaction_version(journal))


def replay_kafka_version(journal: Journal) -> str | None:
    """The Kafka release the run's brokers ran."""
    return journal.versions.get("kafka") or journal.kafka_version


def replay_transaction_version(journal: Journal) -> int | None:
    """The transaction.version the run's cluster ran at (read back from it; else the one asked for)."""
    tv = journal.features.get("transaction.version", journal.transaction_version_asked)
    return None if tv is None else int(tv)


def _command(journal: Journal | None, scenario: dict[str, Any]) -> str:
    from harness.report import rerun

    return rerun(scenario, journal)


# ---- the anomaly ----

def pick_anomaly(verdict: RunVerdict, pick: str | None, data: RunData, tables: store.Tables) -> Anomaly | None:
    """The example to tell: ``pick``'s (``CHECK`` or ``CHECK:N``), else the first of the first check
    that fired whose ops the history has, else the first example there is; None: no check fired."""
    fired = verdict.fired()
    if pick is not None:
        name, c = _picked(pick, fired)
        numbers = [int(pick.rpartition(":")[2])] if ":" in pick else range(1, len(c.examples) + 1)
        candidates = [(name, c, n) for n in numbers]
    else:
        candidates = [(name, c, n) for name, c in fired.items() for n in range(1, len(c.examples) + 1)]
    first = None
    for name, c, n in candidates:
        ex = c.examples[n - 1]
        if not isinstance(ex, dict):
            continue
        a = _anomaly(name, n, c, ex, data, tables)
        if a.spans:
            return a
        first = first or a
    return first


def error_anomaly(error: str, data: RunData, tables: store.Tables) -> Anomaly:
    """The first transaction (in history order) whose error is ``error`` (its name, the text before
    the first ':'), told as the example; ``ConfigError`` naming the errors the run has when none is."""
    txns = tables.txns
    names = txns["error"].map(lambda e: str(e).split(":", 1)[0].strip() if isinstance(e, str) and e else None)
    met = txns[names == error]
    if met.empty:
        seen = sorted({n for n in names if isinstance(n, str) and n})
        raise ConfigError(f"--error {error}: no transaction of this run ended with it; errors the transactions "
                          f"ended with: {', '.join(seen) if seen else 'none'}")
    first = met.iloc[0]
    ex = {"txn": int(first["txn"]), "process": str(first["process"]), "error": str(first["error"])}
    spans = example_spans(ex, data.history, data.clock) if data.history is not None else []
    return Anomaly(error, 1, len(met), ex, spans, [], error=True)


def _picked(pick: str, found: dict[str, CheckRecord]) -> tuple[str, CheckRecord]:
    """The fired check ``pick`` names, with its example number checked; ``ConfigError`` naming what is allowed."""
    name, colon, n = pick.partition(":")
    if name not in found:
        allowed = ", ".join(f"{k} ({len(c.examples)} examples)" for k, c in found.items()) or "none fired"
        raise ConfigError(f"--example {pick}: check {name!r} found nothing in this run; checks that fired: {allowed}")
    examples = found[name].examples
    if colon and not (n.isdigit() and 1 <= int(n) <= len(examples)):
        raise ConfigError(f"--example {pick}: {name} has {len(examples)} examples in verdict.json; "
                          f"give CHECK:N with N from 1 to {len(examples)}, or CHECK alone")
    if not examples:
        raise ConfigError(f"--example {pick}: {name} found {found[name].count} but verdict.json keeps no "
                          "example of it")
    return name, found[name]


def _anomaly(check: str, number: int, c: CheckRecord, ex: dict[str, Any], data: RunData,
             tables: store.Tables) -> Anomaly:
    positions = example_positions(ex)
    if isinstance(ex.get("partition"), str):  # lso-stall names its partition as "topic-N"
        try:
            positions.append((*split_tp(ex["partition"]), None))
        except ValueError:
            pass
    spans = example_spans(ex, data.history, data.clock) if data.history is not None else []
    if data.history is not None:
        seen = {s.index for s in spans}
        spans += [s for s in first_reads(positions, tables, data) if s.index not in seen]
    return Anomaly(check, number, c.count or 0, ex, spans, positions)


def first_reads(positions: list[tuple[str, int, int | None]], tables: store.Tables, data: RunData) -> list[OpSpan]:
    """For each position (the first ``MAX_POSITIONS`` with an offset), the first poll during the run
    that got it: when its record was first seen, so when it was written at the latest."""
    assert data.history is not None
    spans: list[OpSpan] = []
    for topic, part, off in [p for p in positions if p[2] is not None][:MAX_POSITIONS]:
        ops = []
        for frame in (tables.reads, tables.app_outputs):
            if not len(frame):
                continue
            hit = ((frame["source"] == POLL).to_numpy(bool) & (frame["topic"] == topic).to_numpy(bool)
                   & (frame["partition"] == part).to_numpy(bool) & (frame["offset"] == off).to_numpy(bool))
            ops += frame.loc[hit, "op"].astype("int64").tolist()
        if ops:
            span = data.history.span(min(ops), f"first read of {topic}-{part}@{off}", data.clock)
            if span is not None:
                span.named = min(ops)
                spans.append(span)
    return spans


def window_of(anomaly: Anomaly | None, data: RunData) -> tuple[float, float, str]:
    """The anomaly's ops from the first invoke to the last completion, ``MARGIN_S`` either side; the
    whole run when it names no op in time."""
    if anomaly is not None and anomaly.spans:
        lo = min(s.start_s for s in anomaly.spans)
        hi = max(s.end_s if s.end_s is not None else s.start_s for s in anomaly.spans)
        return (lo - MARGIN_S, hi + MARGIN_S,
                f"the anomaly's ops, t={lo:.3f} s to t={hi:.3f} s, and {MARGIN_S:g} s either side")
    why = "no check found anything" if anomaly is None else "the example names no op the history has"
    return data.start_s, data.duration_s, f"the whole run ({why})"


def transactions(anomaly: Anomaly | None, tables: store.Tables) -> list[ReproTxn]:
    """The transactions among the anomaly's ops, with their transactional.id, error and partitions."""
    if anomaly is None:
        return []
    txns = tables.txns.set_index("txn")
    out: list[ReproTxn] = []
    for s in anomaly.spans:
        if s.index not in txns.index:
            continue
        row = txns.loc[s.index]
        w = tables.writes.loc[(tables.writes["txn"] == s.index).to_numpy(bool), ["topic", "partition"]]
        parts = list(dict.fromkeys(f"{t}-{p}" for t, p in zip(w["topic"].astype(str), w["partition"])))
        out.append(ReproTxn(s.role, s.index, s.process, _str(row.get("txn_id")), s.outcome, _str(row.get("error")),
                       s.start_s, s.commit_s, s.end_s, parts, len(w)))
    return out


def _str(v: Any) -> str | None:
    return None if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA else str(v)


def recorded_txn_ids(tables: store.Tables) -> set[str]:
    """Every transactional.id the history's producers used (an app's own are not among them)."""
    ids = set(tables.txns["txn_id"].dropna().astype(str)) | set(tables.inits["txn_id"].dropna().astype(str))
    return {i for i in ids if i}


def expected_says(verdict: RunVerdict) -> str:
    """What the scenario expected, when it expected this verdict: a negative control."""
    exp = verdict.expected or {}
    if exp.get("valid") is False and verdict.as_expected:
        fires = ", ".join(exp.get("fires") or []) or "any check"
        return (f"The scenario expects this verdict (a negative control: {fires} must fire): the finding is "
                "the harness working, not a bug to report.")
    return ""


# ---- time ----

def run_zone(journal: Journal | None) -> tzinfo | None:
    """The time zone of the machine that ran the run (``journal.started``'s offset); None: this machine's."""
    try:
        return datetime.strptime(journal.started, "%Y-%m-%dT%H:%M:%S%z").tzinfo if journal is not None else None
    except ValueError:
        return None


def unix_zero(clock: Clock, zone: tzinfo | None) -> float | None:
    """t=0 in seconds since the epoch (the wire proxy stamps its events so), or None when the folder
    records no wall-clock time for it."""
    if clock.wall_zero is None:
        return None
    return clock.wall_zero.replace(tzinfo=zone).timestamp() if zone is not None else clock.wall_zero.timestamp()


def _wall_window(clock: Clock, lo: float, hi: float) -> tuple[datetime, datetime] | None:
    a, b = clock.wall_at(lo), clock.wall_at(hi)
    return None if a is None or b is None else (a, b)


# ---- the timeline ----

def moments(anomaly: Anomaly | None, txns: list[ReproTxn], faults: list[FaultWindow], wire: list[WireEvent],
            lo: float, hi: float, tables: store.Tables) -> list[Moment]:
    """The anomaly's ops, the faults and the wire events in the window, in time order."""
    out: list[Moment] = []
    by_index = {t.index: t for t in txns}
    for s in anomaly.spans if anomaly is not None else []:
        t = by_index.get(s.index)
        if t is not None:
            parts = ", ".join(t.partitions) or "no partition"
            out.append(Moment(s.start_s, s.process, f"{s.role}: txn #{s.index} begins (transactional.id "
                                                    f"{t.txn_id or '?'}; {t.values} values to {parts})"))
            if s.commit_s is not None:
                out.append(Moment(s.commit_s, s.process, f"txn #{s.index}: commit called"))
            if s.end_s is not None:
                ended = {"ok": "committed", "fail": "aborted"}.get(s.outcome, "outcome unknown")
                out.append(Moment(s.end_s, s.process, f"txn #{s.index}: {ended}" + (f" ({t.error})" if t.error else "")))
            continue
        out.append(Moment(s.start_s, s.process, f"{s.role}: {s.f} #{s.named if s.named is not None else s.index} invoked"))
        if s.end_s is not None:
            out.append(Moment(s.end_s, s.process, f"{s.f} #{s.named if s.named is not None else s.index}: {s.outcome}"))
    for n, f in enumerate(faults, 1):
        if lo <= f.start_s <= hi:
            out.append(Moment(f.start_s, "nemesis", f"fault F{n} begins: {f.label}"))
        if f.end_s is not None and lo <= f.end_s <= hi:
            out.append(Moment(f.end_s, "nemesis", f"fault F{n} ends: {f.label}"))
    out += [Moment(e.t_s if e.t_s is not None else math.nan, e.source, e.says()) for e in wire]
    return sorted(out, key=lambda m: (math.isnan(m.t_s), m.t_s))


# ---- logs ----

def _workload_of(process: str) -> str:
    return process.rsplit(".", 1)[0]


def client_logs(run_dir: Path, anomaly: Anomaly | None, clock: Clock, lo: float, hi: float,
                zone: tzinfo | None) -> tuple[list[LogExcerpt], list[tuple[str, str]]]:
    """Each workload's log clipped to the window, those of the anomaly's processes first."""
    files = sorted((run_dir / WORKLOADS).glob("*.log"))
    mine = {_workload_of(s.process) for s in anomaly.spans} if anomaly is not None else set()
    files.sort(key=lambda p: p.stem not in mine)
    return _clip_all([(f"{WORKLOADS}/{p.name}", f"logs/{p.name}", p) for p in files], clock, lo, hi, None, zone,
                     "every line in the window")


def broker_logs(run_dir: Path, cluster_dir: Path | None, anomaly: Anomaly | None, txns: list[ReproTxn], clock: Clock,
                lo: float, hi: float, zone: tzinfo | None) -> tuple[list[LogExcerpt], list[tuple[str, str]]]:
    """Each broker's ``server.log`` lines in the window that name the anomaly's partitions,
    transactional.ids or producer ids (the coordinator's lines name the transactional.id), from the
    run folder or, for a run on a shared cluster, the cluster's."""
    logs = sorted((run_dir / NODES).glob("*/server.log"))
    where = ""
    if not logs and cluster_dir is not None:
        logs, where = sorted((cluster_dir / NODES).glob("*/server.log")), f"{cluster_dir.name}/"
    parts = {f"{t}-{p}" for t, p, _ in (anomaly.positions if anomaly is not None else [])}
    parts |= {p for t in txns for p in t.partitions}
    ids = {t.txn_id for t in txns if t.txn_id}
    pids = {m.group(1) for t in txns for p in t.producers if (m := re.match(r"producer id (\d+)", p))}
    alts = ([partitions_named(sorted(parts))] if parts else []) + \
        ([r"(?<![\w.-])(?:" + "|".join(map(re.escape, sorted(ids))) + r")(?![\w.-])"] if ids else []) + \
        ([r"(?i:producer\s?id[=: ]+(?:" + "|".join(sorted(pids)) + r"))\b"] if pids else [])
    if alts:
        pattern = re.compile("|".join(alts))
        named = [("partitions " + ", ".join(sorted(parts))) if parts else "",
                 ("transactional.id " + ", ".join(sorted(ids))) if ids else "",
                 ("producer id " + ", ".join(sorted(pids))) if pids else ""]
        picked_by = "lines naming " + "; ".join(n for n in named if n)
    else:
        pattern, picked_by = re.compile(_BROKER_WARN), "WARN and ERROR lines (the anomaly names no partition)"
    entries = [(f"{where}{NODES}/{p.parent.name}/server.log", f"logs/{p.parent.name}-server.log", p) for p in logs]
    return _clip_all(entries, clock, lo, hi, pattern, zone, picked_by)


def _clip_all(entries: list[tuple[str, str, Path]], clock: Clock, lo: float, hi: float,
              pattern: re.Pattern[str] | None, zone: tzinfo | None,
              picked_by: str) -> tuple[list[LogExcerpt], list[tuple[str, str]]]:
    window = _wall_window(clock, lo, hi)
    kept: list[LogExcerpt] = []
    quiet: list[tuple[str, str]] = []
    for source, file, path in entries:
        if window is None:
            quiet.append((source, "not clipped: the run folder records no wall-clock time for t=0"))
            continue
        c = clip(path, window[0] - timedelta(milliseconds=1), window[1], pattern, FILE_LINES, zone)
        if c.lines:
            kept.append(LogExcerpt(source, file, c, "the whole log (it stamps no line with a time)" if c.unstamped
                                   else picked_by))
        else:
            quiet.append((source, "empty" if c.unstamped else "nothing in the window"))
    return kept, quiet


def history_lines(tables: store.Tables, clock: Clock, lo: float, hi: float) -> list[str]:
    """``history.txt``'s lines in the window, made afresh on the report's clock (a folder's own
    may predate it), with its header."""
    with tempfile.TemporaryDirectory(prefix="eos-chaos-repro-") as tmp:
        path = write_history_text(Path(tmp), tables, clock.zero_ns, clock.wall_zero_ns, clock.basis)
        out = []
        with path.open(encoding="utf-8") as f:
            for line in f:
                if line.startswith("#"):
                    out.append(line.rstrip("\n"))
                    continue
                try:
                    t = float(line.split(None, 1)[0])
                except (ValueError, IndexError):
                    continue
                if t > hi:
                    break
                if t >= lo:
                    out.append(line.rstrip("\n"))
                    if len(out) >= FILE_LINES:
                        break
    return out


# ---- versions and configuration ----

def scenario_as_run(journal: Journal | None, scenario: dict[str, Any]) -> dict[str, Any]:
    """The scenario as run (``journal.resolved``; a folder without a journal: scenario.json without
    what the run added to it)."""
    if journal is not None and journal.resolved:
        return dict(journal.resolved)
    return {k: v for k, v in scenario.items() if k not in ("seed", "backend", "schedule", "versions", "command")}


def version_rows(journal: Journal | None, resolved: dict[str, Any]) -> list[tuple[str, str]]:
    """(what, version) for the brokers, each client library the workloads used, and the harness."""
    v = dict(journal.versions) if journal is not None else {}
    kafka = v.get("kafka") or (journal.kafka_version if journal is not None else None)
    rows = [("Kafka (brokers)", str(kafka or "not recorded"))]
    if journal is not None:
        tv = journal.features.get("transaction.version")
        asked = journal.transaction_version_asked
        rows.append(("transaction.version (finalized, read back from the cluster)",
                     ("not recorded" if tv is None else str(tv))
                     + (f"; --transaction-version {asked}" if asked is not None else "; the release's default")))
        if "metadata.version" in journal.features:
            rows.append(("metadata.version", str(journal.features["metadata.version"])))
    for lib in dict.fromkeys(str(w.get("library") or "confluent-kafka") for w in resolved.get("workloads") or []):
        rows.append((f"client library {lib}", library_version(lib, v)))
    if any(w.get("kind") == "app" for w in resolved.get("workloads") or []):
        rows.append(("the app under test", "its own client, as its command builds it (configuration below); the "
                                           "library above is the harness's feeder's and reader's"))
    rows.append(("backend", journal.backend if journal is not None else "not recorded"))
    rows += [(k, str(v[k])) for k in ("eos_chaos", "python") if v.get(k)]
    return rows


def library_version(lib: str, versions: dict[str, Any]) -> str:
    """What is known of ``lib``'s version: confluent-kafka's and librdkafka's from the journal; a
    versioned library's from its ``@VERSION``."""
    name, _, version = lib.partition("@")
    version = version or (versions.get("clients") or {}).get(name) or ""  # recorded since issue 30
    if name == "confluent-kafka":
        return f"confluent-kafka {versions.get('confluent_kafka', '?')}, librdkafka {versions.get('librdkafka', '?')}"
    if version:
        bridge = {"java": " (kafka-clients, through the harness's Java bridge)",
                  "franz-go": " (through the harness's Go bridge)", "sarama": " (through the harness's Go bridge)"}
        return f"{name} {version}{bridge.get(name, '')}"
    if name == "kafka-python" and versions.get("kafka_python"):
        return f"kafka-python {versions['kafka_python']}"
    return f"{name}: the harness's default release then (not recorded in the run folder)"


# ---- a smaller scenario ----

@dataclass(frozen=True)
class Cut:
    """A smaller scenario as a cut of the run's own (``replayable``'s): which of its faults (indices
    into its list), which of its workload entries with how many instances each, and how long."""

    faults: tuple[int, ...]
    #: (index into the workload entries, count), in the entries' order
    workloads: tuple[tuple[int, int], ...]
    duration: float


def replayable(resolved: dict[str, Any], journal: Journal | None, run_name: str) -> dict[str, Any] | None:
    """The scenario as run, as a file ``eos-chaos run`` takes again: the run's tag taken off its
    names (``physical`` puts it on afresh), its planned faults (``journal.schedule``: the scenario's
    own and its mix's, drawn from the seed) as its explicit faults with no mix, and a ``random``
    target that hit one node pinned to it (taking a fault out must not move the others: the nemesis
    draws every ``random`` target from one seeded generator). None when the folder keeps no
    scenario with workloads."""
    if not resolved.get("workloads"):
        return None
    suffix = "." + run_tag(run_name)
    sc: dict[str, Any] = _untagged(resolved, suffix)  # a dict's names untagged: a dict
    schedule = journal.schedule if journal is not None and journal.schedule else sc.get("faults") or []
    sc.update(faults=[_pinned(_untagged(f, suffix), i, journal) for i, f in enumerate(schedule)], mix=None)
    return sc


def _pinned(fault: dict[str, Any], planned: int, journal: Journal | None) -> dict[str, Any]:
    """``fault`` (the ``planned``-th of the schedule) with ``target: random`` replaced by the node it
    hit, when it ran once on one node; as it is otherwise."""
    runs = [r for r in journal.faults if r.planned == planned] if journal is not None else []
    if fault.get("target") != "random" or len(runs) != 1:
        return fault
    d = runs[0].detail
    nodes = [d["node"]] if isinstance(d.get("node"), int) else d.get("nodes") or []
    return {**fault, "target": nodes[0]} if len(nodes) == 1 and isinstance(nodes[0], int) else fault


def cut_scenario(sc: dict[str, Any], cut: Cut, **update: Any) -> dict[str, Any]:
    """``sc`` (``replayable``'s) cut down to ``cut``, with ``update``'s fields (name, description, expect)."""
    return {**sc, "workloads": [{**sc["workloads"][i], "count": n} for i, n in cut.workloads],
            "faults": [sc["faults"][i] for i in cut.faults], "mix": None, "duration": cut.duration, **update}


def draft_cut(sc: dict[str, Any], journal: Journal | None, clock: Clock, anomaly: Anomaly, lo: float,
              hi: float) -> Cut:
    """The draft's cut of ``sc`` (``replayable``'s): one instance of each workload entry the
    anomaly's ops came from, only the faults active in ``[lo, hi]`` (report seconds) or within their
    own duration of it, and the run long enough for those faults and the anomaly and ``MARGIN_S``."""
    entries = sc["workloads"]
    procs = {_workload_of(s.process) for s in anomaly.spans}
    touched = [i for i, w in enumerate(entries) if any(p.startswith(f"{w.get('kind')}-") for p in procs)]
    kept, ends = _faults_in(sc["faults"], journal, clock, lo, hi)
    need = max([hi, *ends]) + MARGIN_S  # the anomaly and the kept faults over, and a little more
    duration = float(min(float(sc.get("duration") or 45.0), max(SHORTEST_S, math.ceil(need))))
    return Cut(tuple(kept), tuple((i, 1) for i in (touched or range(len(entries)))), duration)


def minimal_scenario(sc: dict[str, Any] | None, journal: Journal | None, data: RunData, anomaly: Anomaly | None,
                     lo: float, hi: float) -> tuple[str | None, str, Cut | None]:
    """A draft of a smaller scenario as YAML, what it is, and its cut of ``sc`` (``replayable``'s):
    ``draft_cut``, with the run's topic names as the scenario wrote them. None when there is no
    anomaly in time or no scenario to cut down."""
    if anomaly is None or not anomaly.spans:
        return None, "no draft: the anomaly names no op in time, so no window to keep faults of", None
    if sc is None:
        return None, "no draft: the run folder keeps no scenario with workloads (journal.json's resolved)", None
    cut = draft_cut(sc, journal, data.clock, anomaly, lo, hi)
    kinds = ", ".join(str(sc["workloads"][i].get("kind")) for i, _ in cut.workloads)
    draft = cut_scenario(sc, cut, name=f"{sc.get('name', 'scenario')}-minimal",
                         description=(f"Draft cut down from run {data.run_dir.name} to {anomaly.check} example "
                                      f"{anomaly.number}: one instance of {kinds}, and only the faults active from "
                                      f"t={lo:.2f} s to t={hi:.2f} s (each widened by its duration)."),
                         expect={"errors": [anomaly.check]} if anomaly.error else
                         {"valid": False, "fires": [anomaly.check]})
    text = scenario_yaml(draft)
    n = len(cut.workloads)
    says = (f"{len(cut.faults)} of the run's {len(sc['faults'])} faults, {n} workload "
            f"{'entry' if n == 1 else 'entries'} with count 1")
    return text, says, cut


def scenario_yaml(sc: dict[str, Any]) -> str:
    """``sc`` as a scenario file, its fields in the order the scenario wrote them."""
    return yaml.safe_dump(sc, sort_keys=False, allow_unicode=True, width=110)


def _untagged(value: Any, suffix: str) -> Any:
    """``value`` with the run's tag taken off every name that ends in it (``eos-a.9880`` -> ``eos-a``,
    ``eos-a.9880/0`` -> ``eos-a/0``: the runner makes topic and group names unique to a run so)."""
    if isinstance(value, str):
        return re.sub(r"(?<=.)" + re.escape(suffix) + r"(?=$|/)", "", value)
    if isinstance(value, list):
        return [_untagged(v, suffix) for v in value]
    if isinstance(value, dict):
        return {_untagged(k, suffix): _untagged(v, suffix) for k, v in value.items()}
    return value


def _faults_in(faults: list[dict[str, Any]], journal: Journal | None, clock: Clock, lo: float,
               hi: float) -> tuple[list[int], list[float]]:
    """Which of the planned faults (``journal.schedule``'s order) were on from ``lo`` to ``hi`` or
    within their duration of it (as they ran, from the journal; a fault that never ran, as planned),
    and when each kept one ends as planned."""
    zero = clock.zero_ns / 1e9
    ran: dict[int, list[tuple[float, float]]] = {}
    for r in journal.faults if journal is not None else []:
        if r.planned is not None:
            ran.setdefault(r.planned, []).append((r.start_s - zero, (r.end_s if r.end_s is not None else math.inf) - zero))
    kept, ends = [], []
    for i, f in enumerate(faults):
        d = float(f.get("duration") or 0.0)
        at = float(f.get("at") or 0.0)
        spans = ran.get(i) or [(at, at + d)]
        if any(a - d <= hi and b + d >= lo for a, b in spans):
            kept.append(i)
            ends.append(at + d)
    return kept, ends
