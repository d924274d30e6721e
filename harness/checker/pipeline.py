"""``app-pipeline``: a chain of apps judged end to end (docs/APPS.md, "Pipelines"). Each stage's own
check judges its hop (the first stage against the feeder's input, a later one against what its
upstream app committed: harness/checker/stage_inputs.py). End to end, a later stage's committed
output is judged against its contract applied to what its upstream's contract makes of the
upstream's own input (committed where that input is), as if the upstream app had been exact: the
contracts composed. A finding there is a record the chain's output got wrong; its example names
the stages whose own hop found something (``blame``): the stage that lost, doubled or let in an
aborted record.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from harness.checker import contracts
from harness.checker.checks import Found, HistoryError
from harness.checker.stage_inputs import INPUT_COLUMNS, contents
from harness.history.model import AGGREGATE, MAP, READ_COMMITTED
from harness.history.schema import AppContract
from harness.history.schema import contracts as recorded_contracts
from harness.history.store import Tables

NO_PIPELINE = "no pipeline in the history (no app reads another app's output)"
#: ``app-pipeline``'s kinds of finding: ``app-map``'s and ``app-aggregate``'s, as the last stage's contract gives them
PIPELINE_KINDS = tuple(dict.fromkeys(contracts.MAP_KINDS + contracts.AGGREGATE_KINDS))


def stages(meta: dict[str, Any]) -> list[AppContract]:
    """The history's apps that read another app's output (a pipeline's later stages)."""
    return [a for a in recorded_contracts(meta) if a.upstream is not None]


def nothing_to_judge(meta: dict[str, Any]) -> str | None:
    """Why a history has no pipeline to judge end to end, from its meta alone, or None."""
    later = stages(meta)
    if not later:
        return NO_PIPELINE
    scans = meta.get("app_scans") or {}
    if not all(READ_COMMITTED in scans.get(a.app, []) for a in later):
        return contracts.NO_APP_SCAN
    return None


def _judge(t: Tables, app: AppContract, ins: pd.DataFrame) -> contracts.Judged:
    if app.contract == MAP:
        return contracts.judge_map(t, app, ins)
    if app.contract == AGGREGATE:
        return contracts.judge_aggregates(t, app, ins)
    raise HistoryError(f"app {app.app}: a {app.contract} contract cannot be a pipeline's stage")


def _by_name(t: Tables) -> dict[str, AppContract]:
    return {a.app: a for a in recorded_contracts(t.meta)}


def upstream_of(t: Tables, app: AppContract) -> AppContract:
    """The app whose output ``app`` reads: a ``map`` (only a per-record contract says what each of its
    inputs makes, which the next stage's contract then applies to). ``HistoryError`` otherwise."""
    up = _by_name(t).get(str(app.upstream))
    if up is None:
        raise HistoryError(f"app {app.app}: its upstream app {app.upstream!r} has no contract in the history")
    if up.contract != MAP:
        raise HistoryError(f"app {app.app}: its upstream app {up.app} has {'an' if up.contract[0] in 'aeiou' else 'a'} {up.contract} "
                           "contract; a pipeline's "
                           "earlier stage is a map (what each of its inputs makes is what the next stage reads)")
    return up


def end_inputs(t: Tables, app: AppContract) -> pd.DataFrame:
    """What ``app`` would have read had every stage before it been exact: for the first stage, the
    feeder's writes (``contracts.inputs``); for a later one, its upstream's expected outputs of the
    upstream's own end-to-end inputs that land in ``app``'s inputs, each committed when the input it
    comes of is, known by its content (``content_id``), at no offset (no order is judged end to end)."""
    if app.upstream is None:
        return contracts.inputs(t, app)
    up = upstream_of(t, app)
    ins = end_inputs(t, up)
    exp = contracts.expected_outputs(t, up, ins).merge(
        ins[["value", "committed", "writer_op", "partition"]].rename(columns={"value": "input"}), on="input", how="inner")
    exp = exp[exp["topic"].astype(object).isin(app.inputs).to_numpy(bool)]
    if exp.empty:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in INPUT_COLUMNS})
    return pd.DataFrame({"value": contents(exp["topic"], exp["key"], exp["value"]), "key": exp["key"].to_numpy(object),
                         "payload": exp["value"].to_numpy(object), "topic": exp["topic"].to_numpy(object),
                         "partition": exp["partition"].to_numpy(np.int64),
                         "offset": pd.array([pd.NA] * len(exp), dtype="Int64"),
                         "writer_op": exp["writer_op"].to_numpy(np.int64),
                         "committed": exp["committed"].to_numpy(bool)}).reset_index(drop=True)


def chain(t: Tables, app: AppContract) -> list[AppContract]:
    """The stages from the first (fed by the feeder) to ``app``."""
    out = [app]
    while out[0].upstream is not None:
        out.insert(0, upstream_of(t, out[0]))
        if len(out) > len(_by_name(t)):
            raise HistoryError(f"app {app.app}: its upstream apps make a cycle ({' > '.join(a.app for a in out)})")
    return out


def hop_findings(t: Tables, app: AppContract) -> int:
    """How many findings ``app``'s own check has on its hop (its own input)."""
    return _judge(t, app, contracts.inputs(t, app))[0]


def app_pipeline(t: Tables) -> Found:
    """A pipeline's last stage's committed output is not what the stages' contracts, composed, make of
    the first stage's committed input; each example names the stages whose own hop found something."""
    skipped = nothing_to_judge(t.meta)
    if skipped:
        return Found(0, skipped=skipped)
    later = {a.upstream for a in stages(t.meta)}
    count = 0
    by_kind: dict[str, list[dict[str, Any]]] = {}
    by_app: dict[str, int] = {}
    for app in stages(t.meta):
        if app.app in later:
            continue  # a middle stage: the chain through it is judged at its end
        hops = chain(t, app)
        blame = [a.app for a in hops if hop_findings(t, a)]
        n, examples = _judge(t, app, end_inputs(t, app))
        count += n
        by_app[app.app] = n
        for kind, ex in examples.items():
            by_kind.setdefault(kind, []).extend({**e, "pipeline": [a.app for a in hops], "blame": blame} for e in ex)
    return Found(count, contracts.mixed(by_kind, PIPELINE_KINDS), by_app=by_app)
