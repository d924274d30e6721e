"""``app-join``: an app whose contract is a stream-table join (docs/APPS.md, ``kind: join``). The
runner recorded, per stream input, its *alternatives*: the outputs the join function gives with each
table write of the input's key (committed or not) and with no table value (``app_expected`` rows whose
``via`` is the table write, null for none). Which table value a stream record meets depends on when
the app processed it, so the check does not pick one: each committed stream input must account for
exactly one of its alternatives over committed table writes (or none) in the final read_committed scan
of the outputs.

Matching: each committed stream input picks its best alternative against the output found: one
whose outputs are all there, the one with the most outputs first (an inner join's "no table value"
yields nothing and is always there: a missing join output of a key with no committed table write then
goes unseen), else the one with the most there, the rest ``missing``. Inputs whose picks need no
record more often than it is there claim them at once (column-wise); the others, which share a record
found too few times, claim one after the other in offset order, each from what is left. What is left over
is ``duplicate`` (a committed alternative yields it), ``aborted-table`` (only an alternative over an
aborted table write does), ``aborted-input`` (only an aborted stream input's) or ``unexplained``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pandas as pd

from harness.checker.checks import MAX_EXAMPLES, Found, HistoryError
from harness.checker.contracts import (
    Judged,
    codes_of,
    every_app,
    inputs,
    member,
    outputs_of,
    plain,
    plain_text,
    pos,
    row_ids,
)
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
    found = outputs_of(t, app, SCAN, READ_COMMITTED)
    # every alternative (input, via) of a committed stream input over the committed table (or none), numbered
    # in the order recorded; the input values factorized once, for all three (a third of the check's time each)
    codes = codes_of([e["input"], e["via"], ins["value"]])
    m = len(e)
    committed = np.zeros(int(codes.max(initial=-1)) + 1, dtype=bool)
    committed[codes[2 * m:][ins["committed"].to_numpy(bool)]] = True
    in_code, via_code = codes[:m], codes[m:2 * m]
    alt = pd.factorize(in_code * (len(committed) + 1) + via_code)[0]
    e = e.assign(alt=alt, via_ok=e["via"].isna().to_numpy(bool) | committed[via_code], in_ok=committed[in_code])
    out = e[(e["seq"] >= 0).to_numpy(bool)].reset_index(drop=True)
    e_id, f_id = row_ids([out, found], ["topic", "key", "value"])
    n = int(max([0, *(int(a.max()) + 1 for a in (e_id, f_id) if len(a))]))
    avail = np.bincount(f_id, minlength=n)
    chosen, short = _choose(e, out, e_id, avail)
    # phase 1: every input whose chosen outputs nobody else needs more of than there are claims them at once
    claim = np.bincount(chosen["rid"].to_numpy(np.int64), weights=chosen["take"].to_numpy(np.int64), minlength=n)
    contended = claim > avail
    touched = pd.unique(chosen.loc[contended[chosen["rid"].to_numpy(np.int64)], "input"]) if len(chosen) else []
    calm = ~chosen["input"].isin(touched).to_numpy(bool)
    np.subtract.at(avail, chosen["rid"].to_numpy(np.int64)[calm], chosen["take"].to_numpy(np.int64)[calm])
    lacking = short[~short["input"].isin(touched).to_numpy(bool)]
    # phase 2: the inputs that share a record too few copies of, in offset order, one after the other
    lacking = pd.concat([lacking, _greedy(list(touched), e, out, e_id, ins, avail)], ignore_index=True)
    by_kind = {"missing": _missing_examples(app, lacking, out, e_id, ins)}
    count = int(lacking["lacks"].sum()) + _leftovers(app, out, e_id, found, f_id, avail, by_kind)
    return count, by_kind


def _choose(e: pd.DataFrame, out: pd.DataFrame, e_id: np.ndarray, avail: np.ndarray) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per committed stream input, its best alternative against ``avail`` (whole first, the most
    outputs, the first recorded): its outputs (input, rid, take) and what it lacks (input, rid, lacks)."""
    ok = (e["in_ok"] & e["via_ok"]).to_numpy(bool)
    alts = e[ok].drop_duplicates("alt")[["input", "alt"]].assign(k=lambda d: np.arange(len(d)))
    sizes = out.assign(rid=e_id)[(out["in_ok"] & out["via_ok"]).to_numpy(bool)].groupby(["alt", "rid"]).size()
    need: pd.DataFrame = sizes.rename("need").reset_index()
    need["there"] = np.minimum(need["need"].to_numpy(), avail[need["rid"].to_numpy(np.int64)])
    per_alt = need.groupby("alt")[["need", "there"]].sum()
    alts = alts.join(per_alt, on="alt").fillna({"need": 0, "there": 0})
    alts["whole"] = alts["need"] == alts["there"]
    best = alts.sort_values(["input", "whole", "there", "k"], ascending=[True, False, False, True],
                            kind="stable").drop_duplicates("input")
    picked = need[need["alt"].isin(best["alt"]).to_numpy(bool)].merge(best[["alt", "input"]], on="alt")
    chosen = picked.assign(take=picked["there"])[["input", "rid", "take"]]
    short = picked.assign(lacks=picked["need"] - picked["there"])
    return chosen, short.loc[short["lacks"] > 0, ["input", "rid", "lacks"]]


def _greedy(touched: list[Any], e: pd.DataFrame, out: pd.DataFrame, e_id: np.ndarray, ins: pd.DataFrame,
            avail: np.ndarray) -> pd.DataFrame:
    """The inputs ``touched`` claim, in offset order, one alternative each from ``avail`` (``_claim``);
    what each lacks (input, rid, lacks)."""
    if not len(touched):
        return pd.DataFrame({"input": [], "rid": pd.array([], dtype="int64"), "lacks": pd.array([], dtype="int64")})
    mine = e[e["input"].isin(touched).to_numpy(bool) & (e["in_ok"] & e["via_ok"]).to_numpy(bool)]
    alts: dict[Any, list[Any]] = {}
    for inp, alt in zip(mine["input"].to_numpy(object), mine["alt"].to_numpy(np.int64)):
        if alt not in alts.setdefault(inp, []):
            alts[inp].append(alt)
    rows = out["input"].isin(touched).to_numpy(bool)
    alt_rids: dict[tuple[Any, Any], list[int]] = {}
    for inp, alt, rid in zip(out["input"].to_numpy(object)[rows], out["alt"].to_numpy(np.int64)[rows], e_id[rows]):
        alt_rids.setdefault((inp, alt), []).append(int(rid))
    offset = ins.set_index("value")["offset"]
    lacks: list[tuple[Any, int, int]] = []
    for inp in sorted(touched, key=lambda i: (pd.isna(offset.get(i)), offset.get(i) if not pd.isna(offset.get(i)) else 0, str(i))):
        lacks += [(inp, r, c) for r, c in _claim(alts.get(inp, []), inp, alt_rids, avail).items()]
    return pd.DataFrame(lacks, columns=["input", "rid", "lacks"])


def _missing_examples(app: AppContract, lacking: pd.DataFrame, out: pd.DataFrame, e_id: np.ndarray,
                      ins: pd.DataFrame) -> list[dict[str, Any]]:
    writer = ins.set_index("value")["writer_op"]
    first = lacking.drop_duplicates("input").head(MAX_EXAMPLES)
    return [{"kind": "missing", "app": app.app, "count": int(lacking.loc[lacking["input"] == inp, "lacks"].sum()),
             "inputs": [plain(inp)], "writer_op": plain(writer.get(inp)),
             "record": _record(out.iloc[int(np.flatnonzero(e_id == rid)[0])]), "outputs": []}
            for inp, rid in zip(first["input"], first["rid"])]


def _leftovers(app: AppContract, out: pd.DataFrame, e_id: np.ndarray, found: pd.DataFrame, f_id: np.ndarray,
               avail: np.ndarray, by_kind: dict[str, list[dict[str, Any]]]) -> int:
    """The output copies no input claimed, each by the best alternative that yields it: ``duplicate``
    (a committed one), ``aborted-table``, ``aborted-input``, else ``unexplained``. How many."""
    rank = np.where(~out["in_ok"].to_numpy(bool), 1, np.where(out["via_ok"].to_numpy(bool), 3, 2))
    best = np.zeros(len(avail), np.int64)
    np.maximum.at(best, e_id, rank)
    names = ("unexplained", "aborted-input", "aborted-table", "duplicate")
    for r in np.flatnonzero(avail > 0):
        kind = names[best[r]]
        if len(by_kind.setdefault(kind, [])) < MAX_EXAMPLES:
            rows = found[f_id == r]
            yielding = out[e_id == r]
            by_kind[kind].append({"kind": kind, "app": app.app, "count": int(avail[r]),
                                  "inputs": sorted({plain(i) for i in yielding["input"]}),
                                  "via": sorted({plain(v) for v in yielding["via"] if not pd.isna(v)}),
                                  "record": _record(rows.iloc[0]),
                                  "outputs": [pos(*p) for p in zip(rows["topic"], rows["partition"], rows["offset"])]})
    return int(avail[avail > 0].sum())


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


def _record(row: pd.Series) -> dict[str, Any]:
    return {"topic": plain(row["topic"]), "key": plain(row["key"]), "value": plain(row["value"])}
