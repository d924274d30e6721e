"""``app-join``: an app whose contract is a stream-table join (docs/APPS.md, ``kind: join``). The
runner recorded, per stream input, its *alternatives*: the outputs the join function gives with each
table write of the input's key (committed or not) and with no table value (``app_expected`` rows whose
``via`` is the table write, null for none). Which table value a stream record meets depends on when
the app processed it, so the check does not pick one: each committed stream input must account for
exactly one of its alternatives over committed table writes (or none) in the final read_committed scan
of the outputs.

Matching is greedy, stream input by stream input in offset order: the alternative whose outputs are
all still unclaimed, the one with the most outputs first (an inner join's "no table value" yields
nothing and is always available: a missing join output of a key with no committed table write then
goes unseen); else the one with the most unclaimed outputs, the rest ``missing``. What is left over
is ``duplicate`` (a committed alternative yields it), ``aborted-table`` (only an alternative over an
aborted table write does), ``aborted-input`` (only an aborted stream input's) or ``unexplained``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pandas as pd

from harness.checker.checks import MAX_EXAMPLES, Found, HistoryError
from harness.checker.contracts import Judged, every_app, inputs, member, outputs_of, plain, plain_text, pos, row_ids
from harness.history.model import JOIN, READ_COMMITTED, SCAN
from harness.history.schema import AppContract
from harness.history.store import Tables

#: ``app-join``'s kinds of finding, in the order their examples are picked
JOIN_KINDS = ("missing", "duplicate", "aborted-table", "aborted-input", "unexplained", "undeclared-topic")


def app_join(t: Tables) -> Found:
    """A ``join`` app's committed output is not one alternative per committed stream input over the
    committed table: an output missing or one too many, one built from an aborted table write or an
    aborted stream input, or one nothing explains."""
    return every_app(t, JOIN, _judge_join, JOIN_KINDS)


def alternatives(t: Tables, app: AppContract, ins: pd.DataFrame) -> pd.DataFrame:
    """The join's ``expect`` rows (input, via, seq, topic, key, value; an alternative yielding nothing
    has one row of seq -1). ``HistoryError`` when the runner could not apply the function, or recorded
    nothing for a stream input."""
    failed = (t.meta.get("app_function_errors") or {}).get(app.app)
    if failed:
        raise HistoryError(f"app {app.app}: its join function {app.function} gave no outputs: {failed}")
    e = t.app_expected
    e = plain_text(e[(e["app"].astype(object) == app.app).to_numpy(bool)]).reset_index(drop=True)
    stream = ins[(ins["topic"] == app.stream).to_numpy(bool)]
    lacking = stream.loc[~member(stream["value"], e["input"]), "value"]
    if len(lacking):
        raise HistoryError(f"app {app.app}: no join alternatives recorded for {len(lacking)} stream input(s) (first "
                           f"{lacking.iloc[0]!r}): the runner records them for every input the feeder wrote, by {app.function}")
    return e


def _judge_join(t: Tables, app: AppContract) -> Judged:
    ins = inputs(t, app)
    e = alternatives(t, app, ins)
    committed = dict(zip(ins["value"].to_numpy(object), ins["committed"].to_numpy(bool)))
    offset = dict(zip(ins["value"].to_numpy(object), ins["offset"].to_numpy(object)))
    writer = dict(zip(ins["value"].to_numpy(object), ins["writer_op"].to_numpy(object)))
    found = outputs_of(t, app, SCAN, READ_COMMITTED)
    out = e[(e["seq"] >= 0).to_numpy(bool)]
    e_id, f_id = row_ids([out, found], ["topic", "key", "value"])
    n = int(max([0, *(int(a.max()) + 1 for a in (e_id, f_id) if len(a))]))
    avail = np.bincount(f_id, minlength=n)
    # per alternative (input, via): the record ids of its outputs
    alt_rids: dict[tuple[Any, Any], list[int]] = {}
    for (inp, via), rid in zip(zip(out["input"].to_numpy(object), out["via"].to_numpy(object)), e_id):
        alt_rids.setdefault((inp, None if pd.isna(via) else via), []).append(int(rid))
    per_input: dict[Any, list[Any]] = {}
    for inp, via in zip(e["input"].to_numpy(object), e["via"].to_numpy(object)):
        v = None if pd.isna(via) else via
        if committed.get(inp) and (v is None or committed.get(v)) and v not in per_input.setdefault(inp, []):
            per_input[inp].append(v)
    by_kind: dict[str, list[dict[str, Any]]] = {}
    count = 0
    for inp in sorted(per_input, key=lambda i: (offset.get(i) is None, offset.get(i) or 0, str(i))):
        short = _claim(per_input[inp], inp, alt_rids, avail)
        if short:
            count += sum(short.values())
            if len(by_kind.setdefault("missing", [])) < MAX_EXAMPLES:
                rid = next(iter(short))
                row = out.iloc[int(np.flatnonzero(e_id == rid)[0])]
                by_kind["missing"].append({"kind": "missing", "app": app.app, "count": sum(short.values()), "inputs": [inp],
                                           "writer_op": plain(writer.get(inp)), "record": _record(row), "outputs": []})
    left = np.flatnonzero(avail > 0)
    kind_of = _leftover_kinds(out, e_id, committed, n)
    for r in left:
        kind = kind_of[int(r)]
        count += int(avail[r])
        if len(by_kind.setdefault(kind, [])) < MAX_EXAMPLES:
            rows = found[f_id == r]
            yielding = out[e_id == r]
            by_kind[kind].append({"kind": kind, "app": app.app, "count": int(avail[r]),
                                  "inputs": sorted({plain(i) for i in yielding["input"]}),
                                  "via": sorted({plain(v) for v in yielding["via"] if not pd.isna(v)}),
                                  "record": _record(rows.iloc[0]),
                                  "outputs": [pos(*p) for p in zip(rows["topic"], rows["partition"], rows["offset"])]})
    return count, by_kind


def _claim(alts: list[Any], inp: Any, alt_rids: dict[tuple[Any, Any], list[int]], avail: np.ndarray) -> Counter[int]:
    """Claim the outputs of one alternative of ``inp`` from ``avail``: one whose outputs are all
    there (the most outputs first), else the one with the most there. What it lacks."""
    best: tuple[int, int, int] | None = None
    chosen: Counter[int] = Counter()
    for k, via in enumerate(alts):
        need = Counter(alt_rids.get((inp, via), []))
        there = sum(min(c, int(avail[r])) for r, c in need.items())
        score = (int(there == sum(need.values())), there, -k)
        if best is None or score > best:
            best, chosen = score, need
    short: Counter[int] = Counter()
    for r, c in chosen.items():
        took = min(c, int(avail[r]))
        avail[r] -= took
        if c > took:
            short[r] = c - took
    return short


def _leftover_kinds(out: pd.DataFrame, e_id: np.ndarray, committed: dict[Any, bool], n: int) -> list[str]:
    """Per output record: what an unclaimed copy of it is (``duplicate``, ``aborted-table``,
    ``aborted-input``, ``unexplained``), by the best alternative that yields it."""
    rank = {"duplicate": 3, "aborted-table": 2, "aborted-input": 1, "unexplained": 0}
    best = ["unexplained"] * n
    for inp, via, rid in zip(out["input"].to_numpy(object), out["via"].to_numpy(object), e_id):
        v = None if pd.isna(via) else via
        kind = ("aborted-input" if not committed.get(inp) else
                "duplicate" if v is None or committed.get(v) else "aborted-table")
        if rank[kind] > rank[best[rid]]:
            best[rid] = kind
    return best


def _record(row: pd.Series) -> dict[str, Any]:
    return {"topic": plain(row["topic"]), "key": plain(row["key"]), "value": plain(row["value"])}
