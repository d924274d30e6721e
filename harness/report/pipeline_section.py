"""The report's view of a pipeline of apps (docs/APPS.md, "Pipelines"): one row per stage (its
name, upstream, contract, what its own check found on its hop, the output records/s its reader
polled, the kills on its instances and their restarts), and the chain's end-to-end verdict
(``app-pipeline``) with the stages it blames. From the verdict's checks (``by_app``: each app's
findings), the history's tables and the app section's instances; nothing here judges."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.history import store
from harness.history.model import CONTRACT_CHECKS, PIPELINE_CHECK, SCAN
from harness.history.schema import AppContract
from harness.rundir.run_verdict import CheckRecord, RunVerdict

#: The fault that kills an app instance (chaos/faults/workload.py ``KillWorkload``).
KILL = "kill-workload"


@dataclass
class StageRow:
    """One stage of the pipeline, as its row of the report's table."""

    name: str
    #: the app whose output it reads (None: the first stage, fed by the harness)
    upstream: str | None
    #: the check that judges its hop (``app-map``, ...) and what it found there
    check: str
    hop: str
    #: its hop was found exact (None: not judged, or its findings cannot be told apart from the others')
    exact: bool | None
    instances: list[str]
    #: output records per second its reader polled, from its first poll with records to its last (None: too few)
    records_per_s: float | None
    kills: int
    #: incarnations started after the first, over its instances (a kill's restart, the drain's)
    restarts: int
    #: its drain after heal, as the journal has it
    drain: str = ""


@dataclass
class PipelineView:
    """The stages in the order written, and the end-to-end verdict."""

    stages: list[StageRow]
    #: the chain, first stage first
    chain: list[str]
    end_to_end: str
    #: the chain's output was found exact end to end (None: not judged)
    exact: bool | None
    #: the stages whose own hop found something, as the end-to-end examples name them
    blame: list[str]


@dataclass
class StageRuns:
    """What the app section knows of one stage's processes: its instances, each one's readiness
    times (one per incarnation) and the kinds of fault that acted on it."""

    instances: list[str]
    ready_s: dict[str, list[float]]
    faults: dict[str, list[str]]
    #: its drain after heal, in words (the journal's ``app.stages.<name>.drain``)
    drain: str = ""


def pipeline_view(apps: list[AppContract], verdict: RunVerdict | None, tables: store.Tables,
                  runs: dict[str, StageRuns]) -> PipelineView | None:
    """The pipeline of ``apps`` (the history's contracts, in the order written); None when they are
    not one (a single app)."""
    if len(apps) < 2 or not any(a.upstream is not None for a in apps):
        return None
    checks = verdict.checks if verdict is not None else {}
    rates = _rates(tables, [a.app for a in apps])
    rows = []
    for a in apps:
        check = CONTRACT_CHECKS.get(a.contract, "")
        hop, exact = hop_says(checks.get(check), check, a.app)
        r = runs.get(a.app, StageRuns([], {}, {}))
        rows.append(StageRow(a.app, a.upstream, check, hop, exact, r.instances, rates.get(a.app),
                             sum(kinds.count(KILL) for kinds in r.faults.values()),
                             sum(max(len(t) - 1, 0) for t in r.ready_s.values()), r.drain))
    end = checks.get(PIPELINE_CHECK)
    says, exact = hop_says(end, PIPELINE_CHECK, None)
    blame = list(dict.fromkeys(s for e in (end.examples if end is not None else []) for s in e.get("blame") or []))
    return PipelineView(rows, _chain(apps), says, exact, blame)


def hop_says(rec: CheckRecord | None, check: str, app: str | None) -> tuple[str, bool | None]:
    """What ``check`` found for ``app`` (None: over every app it judged, as ``app-pipeline``), in
    words, and whether that is exact (None: not judged, or not known for ``app`` alone)."""
    if rec is None:
        return f"not judged: the verdict has no {check}", None
    if rec.count is None:
        return f"{check} could not judge: {(rec.error or '').splitlines()[0] if rec.error else 'no reason given'}", None
    if rec.skipped:
        return f"not judged: {rec.skipped}", None
    if app is None:
        n: int | None = rec.count
    elif rec.by_app is None:  # a verdict from before the checks kept each app's findings
        n = 0 if rec.count == 0 else None
    else:
        n = rec.by_app.get(app)
        if n is None:
            return f"not judged: {check} did not judge {app}", None
    if n is None:
        return f"{check}: {rec.count} over every app (this verdict does not say per app)", None
    if n == 0:
        return f"{check}: exact", True
    kinds = sorted({str(e.get("kind")) for e in rec.examples if app is None or e.get("app") == app})
    return f"{check}: {n} found" + (f" ({', '.join(kinds)})" if kinds else ""), False


def _chain(apps: list[AppContract]) -> list[str]:
    """The stages from the first to the last (a chain: each later stage's upstream is before it)."""
    by_name = {a.app: a for a in apps}
    last = next((a for a in reversed(apps) if a.upstream is not None), apps[-1])
    out = [last.app]
    while (up := by_name[out[0]].upstream) is not None and up in by_name and up not in out:
        out.insert(0, up)
    return out


def _rates(tables: store.Tables, names: list[str]) -> dict[str, float | None]:
    """Per app, the output records its reader's polls got per second, from the first poll that got
    records to the last (None: no poll, or all at one instant)."""
    out = tables.app_outputs
    polled = out[(out["source"] != SCAN).to_numpy(bool)]
    at = tables.ops.set_index("index")["time"]
    rates: dict[str, float | None] = {}
    for name in names:
        ops = polled.loc[(polled["app"] == name).to_numpy(bool), "op"].to_numpy(np.int64)
        times = at.reindex(ops).dropna().to_numpy(np.int64)
        span_s = (int(times.max()) - int(times.min())) / 1e9 if len(times) else 0.0
        rates[name] = round(len(ops) / span_s, 1) if span_s > 0 else None
    return rates
