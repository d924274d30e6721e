"""The checks of an app's output against its declared contract (docs/APPS.md): ``app-map`` and
``app-aggregate``. The app is a black box: what it read is the feeder's writes to its input topics
(``writes``, their keys in ``keys``), what it wrote is what the reads of its output topics got
(``app_outputs``), and what it must write is its contract (``meta["apps"]``) and, for a ``map``
contract's own function, the outputs the runner recorded per input (``app_expected``). The checker
never runs the app's function: it compares history with history.

An input is *committed* when its transaction was acknowledged (``ok``), or its outcome was unknown
(``info``) and a read_committed read saw it (as ``lost-write`` decides); otherwise it is *aborted*.
These checks work on pandas frames of their rows; records are matched by integer codes of their text
columns (``codes_of``), never by grouping or comparing Python strings row by row, so that millions
of inputs are judged in seconds (docs/BENCHMARKS.md, "The app contract checks").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from harness.checker import stage_inputs
from harness.checker.arrays import OUTCOME_CODES
from harness.checker.checks import MAX_EXAMPLES, Found, HistoryError, cols
from harness.history.model import (
    AGGREGATE,
    COUNT,
    IDENTITY,
    INFO,
    MAP,
    MAX,
    MIN,
    OK,
    PER_KEY,
    POLL,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    SCAN,
    SUM,
    position,
)
from harness.history.schema import AppContract, contracts
from harness.history.store import Tables, with_values

NO_MAP_APP = "no app with a map contract in the history"
NO_AGGREGATE_APP = "no app with an aggregate contract in the history"
NO_APP_SCAN = "no final read_committed scan of the app's output topics"

#: ``app-map``'s kinds of finding, in the order their examples are picked
MAP_KINDS = ("missing", "duplicate", "aborted-input", "unexplained", "order", "undeclared-topic")
#: ``app-aggregate``'s kinds of finding
AGGREGATE_KINDS = ("final", "overshoot", "back", "split", "not-a-number", "undeclared-topic")


def apps_of(meta: dict[str, Any], contract: str) -> list[AppContract]:
    """The contracts (``app-contract`` values) of ``contract``'s kind in the history's meta."""
    return contracts(meta, contract)


def nothing_to_judge(meta: dict[str, Any], contract: str) -> str | None:
    """Why a history has nothing for the check of ``contract`` (``map`` / ``aggregate``) to judge,
    from its meta alone (both engines give this reason), or None."""
    apps = apps_of(meta, contract)
    if not apps:
        return {MAP: NO_MAP_APP, AGGREGATE: NO_AGGREGATE_APP}.get(contract, f"no app with a {contract} contract in the history")
    if not any(READ_COMMITTED in (meta.get("app_scans") or {}).get(a.app, []) for a in apps):
        return NO_APP_SCAN
    return None


def _judged(t: Tables, contract: str) -> list[AppContract]:
    """The apps of ``contract`` whose output the history has a final read_committed scan of."""
    scans = t.meta.get("app_scans") or {}
    return [a for a in apps_of(t.meta, contract) if READ_COMMITTED in scans.get(a.app, [])]


def plain_text(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with categorical columns (as Parquet loads the few-valued ones) as their values."""
    cats = [c for c in df.columns if isinstance(df[c].dtype, pd.CategoricalDtype)]
    return df.astype({c: object for c in cats}) if cats else df


def plain(v: Any) -> Any:
    """A JSON-friendly scalar: pandas' missing values as None, numpy numbers as Python's."""
    if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)):
        return None
    if isinstance(v, np.integer):
        return int(v)
    return v


def inputs(t: Tables, app: AppContract) -> pd.DataFrame:
    """Every write to the app's input topics: value (its id), key, payload (what the record's value
    was: the ``payloads`` table's, else the value itself), topic, partition, offset (acknowledged,
    else where a read_committed read saw it; NA when neither), writer_op and ``committed``. A
    pipeline's later stage (``upstream``) reads its upstream app's output instead: the records of
    that app's final scans (``stage_inputs.piped``)."""
    if app.upstream is not None:
        return stage_inputs.piped(t, app)
    c = cols(t)
    rows = np.flatnonzero(t.writes["topic"].astype(object).isin(app.inputs).to_numpy(bool))
    w = plain_text(with_values(t, t.writes.iloc[rows]))
    out = c.w_out[rows]
    committed = (out == OUTCOME_CODES[OK]) | ((out == OUTCOME_CODES[INFO]) & c.in_cv[c.w_vid[rows]])
    mine = np.zeros(c.n_values, dtype=bool)
    mine[c.w_vid[rows]] = True
    at = c.cv & mine[c.r_vid]  # the reads of these values (all of them an app's input)
    seen = pd.Series(c.r_off[at], index=c.r_vid[at])
    seen = seen[~seen.index.duplicated()]
    acked = w["offset"].astype("Int64")
    offset = acked.fillna(pd.Series(seen.reindex(c.w_vid[rows]).to_numpy(), index=acked.index).astype("Int64"))
    keys = plain_text(t.keys).drop_duplicates("value").set_index("value")["key"]
    # what the feeder wrote as the record's value (its payload), where it recorded one: else the value is its own
    pay = plain_text(t.payloads).drop_duplicates("value").set_index("value")["payload"]
    ids = w["value"].astype(object)
    payload = np.where(ids.isin(pay.index).to_numpy(bool), pay.reindex(ids).to_numpy(object), ids.to_numpy(object))
    return pd.DataFrame({"value": w["value"].to_numpy(object), "key": keys.reindex(w["value"]).to_numpy(object),
                         "payload": payload,
                         "topic": w["topic"].to_numpy(object), "partition": w["partition"].to_numpy(np.int64),
                         "offset": offset.to_numpy(), "writer_op": w["txn"].to_numpy(np.int64),
                         "committed": committed})


def outputs_of(t: Tables, app: AppContract, source: str, isolation: str) -> pd.DataFrame:
    o = t.app_outputs  # few-valued columns (categories once loaded): compared as they are, by their codes
    sel = (o["app"] == app.app) & (o["source"] == source) & (o["isolation"] == isolation) & o["topic"].isin(app.outputs)
    return plain_text(o[sel.to_numpy(bool)]).reset_index(drop=True)


def codes_of(columns: list[pd.Series]) -> np.ndarray:
    """One integer per distinct value over ``columns`` end to end, numbered in order of first
    appearance, nulls equal to nulls. Text is factorized as pandas' Arrow strings (Arrow's
    dictionary encoding): as Python objects, hashing a string per row took seconds per million."""
    text = [c.astype("str") if c.dtype == object or isinstance(c.dtype, pd.CategoricalDtype) else c for c in columns]
    both = text[0] if len(text) == 1 else pd.concat(text, ignore_index=True)
    codes: np.ndarray = pd.factorize(both, use_na_sentinel=False)[0].astype(np.int64)
    return codes


def row_ids(frames: list[pd.DataFrame], columns: list[str]) -> list[np.ndarray]:
    """One id per distinct row of ``columns`` over all ``frames`` (nulls equal to nulls), numbered in
    order of first appearance (as ``groupby(sort=False, dropna=False).ngroup()``), one array per frame."""
    ids = np.zeros(sum(len(f) for f in frames), np.int64)
    for col in columns:
        codes = codes_of([f[col] for f in frames])
        # ids and codes are below the row count: their pair as one int64 (rows**2 fits up to 3e9 rows)
        ids = pd.factorize(ids * (int(codes.max(initial=-1)) + 1) + codes)[0].astype(np.int64)
    return np.split(ids, np.cumsum([len(f) for f in frames])[:-1])


def member(values: pd.Series, of: pd.Series) -> np.ndarray:
    """Which of ``values`` are among ``of`` (``isin``, by ``codes_of``: pandas' ``isin`` of Arrow
    strings makes a Python object of each value of ``of``)."""
    codes = codes_of([values, of])
    known = np.zeros(int(codes.max(initial=-1)) + 1, dtype=bool)
    known[codes[len(values):]] = True
    found: np.ndarray = known[codes[:len(values)]]
    return found


def mixed(by_kind: dict[str, list[dict[str, Any]]], kinds: tuple[str, ...]) -> list[dict[str, Any]]:
    """Up to ``MAX_EXAMPLES`` examples, one of each kind in turn, so every kind found shows."""
    out: list[dict[str, Any]] = []
    for k in range(MAX_EXAMPLES):
        out += [by_kind[kind][k] for kind in kinds if k < len(by_kind.get(kind, []))]
    return out[:MAX_EXAMPLES]


# ---------------------------------------------------------------------------------------------- map
Judged = tuple[int, dict[str, list[dict[str, Any]]]]


def every_app(t: Tables, contract: str, judge: Callable[[Tables, AppContract], Judged],
               kinds: tuple[str, ...]) -> Found:
    """``judge`` on every app of ``contract`` the history can judge: the findings summed, the
    examples of each kind in turn."""
    skipped = nothing_to_judge(t.meta, contract)
    if skipped:
        return Found(0, skipped=skipped)
    count = 0
    by_kind: dict[str, list[dict[str, Any]]] = {}
    by_app: dict[str, int] = {}
    for app in _judged(t, contract):
        n, examples = judge(t, app)
        stray = (t.meta.get("app_stray") or {}).get(app.app) or {}
        n += sum(stray.values())  # every record written where the contract says nothing may be
        examples["undeclared-topic"] = [{"kind": "undeclared-topic", "app": app.app, "topic": topic, "count": records}
                                        for topic, records in sorted(stray.items())][:MAX_EXAMPLES]
        count += n
        by_app[app.app] = n
        for kind, ex in examples.items():
            by_kind.setdefault(kind, []).extend(ex)
    return Found(count, mixed(by_kind, kinds), by_app=by_app)


def app_map(t: Tables) -> Found:
    """A ``map`` app's committed output is not exactly what its committed input yields: an output
    missing, one too many, one of an aborted input, one no input explains, or (``order: per-key``)
    two outputs of one key in the other order than their inputs."""
    return every_app(t, MAP, _judge_map, MAP_KINDS)


def expected_outputs(t: Tables, app: AppContract, ins: pd.DataFrame) -> pd.DataFrame:
    """The outputs each input must yield (input, seq, topic, key, value): its own record on the one
    output topic for ``identity``, else the ``expect`` rows of the app. An input the runner recorded
    nothing for cannot be judged: an error (the verdict is then unknown), never a finding."""
    if app.function == IDENTITY:
        # one row per input value: a pipeline stage's inputs share one when their content is the same
        # (``content_id``), and the caller joins each input to its value's rows
        one = ins.drop_duplicates("value")
        return pd.DataFrame({"input": one["value"], "seq": 0, "topic": app.outputs[0], "key": one["key"],
                             "value": one["payload"]})
    return recorded(t, app, ins, app.function)


def recorded(t: Tables, app: AppContract, ins: pd.DataFrame, function: str) -> pd.DataFrame:
    """The app's ``expect`` rows (input, seq, topic, key, value, via) that name an output (an input
    yielding nothing has none). ``HistoryError`` (the verdict is then unknown, never a finding) when
    the runner could not apply ``function``, or recorded nothing for one of ``ins``."""
    failed = (t.meta.get("app_function_errors") or {}).get(app.app)
    if failed:
        raise HistoryError(f"app {app.app}: its contract function {function} gave no outputs: {failed}")
    e = t.app_expected
    e = plain_text(e[(e["app"].astype(object) == app.app).to_numpy(bool)])
    lacking = ins.loc[~member(ins["value"], e["input"]), "value"]
    if len(lacking):
        raise HistoryError(f"app {app.app}: no expected outputs recorded for {len(lacking)} input value(s) "
                         f"(first {lacking.iloc[0]!r}): the runner records them (expect ops) for every input "
                         f"the feeder wrote, by {function}")
    e = e[e["seq"] >= 0].drop_duplicates(["input", "seq", "via"])  # a value's rows once, however many inputs share it
    return e[["input", "seq", "topic", "key", "value", "via"]].reset_index(drop=True)


def _record_ids(*frames: pd.DataFrame) -> list[np.ndarray]:
    """One id per distinct (topic, key, value) over all ``frames`` (nulls equal to nulls)."""
    return row_ids(list(frames), ["topic", "key", "value"])


def _judge_map(t: Tables, app: AppContract) -> Judged:
    return judge_map(t, app, inputs(t, app))


def judge_map(t: Tables, app: AppContract, ins: pd.DataFrame) -> Judged:
    """``app-map``'s findings of ``app`` (count, examples by kind) given its inputs ``ins`` (as
    ``inputs`` makes them; a pipeline's end to end judgement gives others: harness/checker/pipeline.py)."""
    exp = expected_outputs(t, app, ins).merge(ins[["value", "committed", "writer_op", "topic", "partition", "offset"]]
                                       .rename(columns={"value": "input", "topic": "in_topic",
                                                        "partition": "in_partition", "offset": "in_offset"}),
                                       on="input", how="inner")
    found = outputs_of(t, app, SCAN, READ_COMMITTED)
    polled = outputs_of(t, app, POLL, READ_COMMITTED)
    uncommitted = outputs_of(t, app, SCAN, READ_UNCOMMITTED)
    e_id, f_id, p_id, u_id = _record_ids(exp, found, polled, uncommitted)
    n = int(max([0, *(int(a.max()) + 1 for a in (e_id, f_id, p_id, u_id) if len(a))]))
    committed = exp["committed"].to_numpy(bool)
    want = np.bincount(e_id[committed], minlength=n)  # per output record: committed inputs yielding it
    from_aborted = np.bincount(e_id[~committed], minlength=n)
    got = np.bincount(f_id, minlength=n)  # in the final read_committed scan
    seen = np.bincount(p_id, minlength=n) > 0  # by a read_committed poll
    in_uncommitted = np.bincount(u_id, minlength=n) > 0

    missing = np.flatnonzero(want > got)
    excess = np.flatnonzero(got > want)
    only_polled = np.flatnonzero(seen & (got == 0) & (want == 0))
    count = int((want - got)[missing].sum() + (got - want)[excess].sum() + len(only_polled))
    by_kind: dict[str, list[dict[str, Any]]] = {}

    def example(kind: str, r: int, how_many: int, outs: pd.DataFrame, at: np.ndarray) -> None:
        if len(by_kind.get(kind, [])) >= MAX_EXAMPLES:
            return
        yielding = exp[e_id == r]
        yielding = yielding[yielding["committed"] == (kind in ("missing", "duplicate"))]
        outs = outs[at == r]
        record = (yielding if len(yielding) else outs).iloc[0]
        by_kind.setdefault(kind, []).append({
            "kind": kind, "app": app.app, "count": how_many, "inputs": [plain(v) for v in yielding["input"]],
            "writer_op": plain(yielding["writer_op"].iloc[0]) if len(yielding) else None,
            "record": {"topic": plain(record["topic"]), "key": plain(record["key"]), "value": plain(record["value"])},
            "outputs": [position(*p) for p in zip(outs["topic"], outs["partition"], outs["offset"])],
            **({"read_op": plain(outs["op"].iloc[0])} if at is p_id else {}),
            **({"uncommitted": bool(in_uncommitted[r])} if kind == "missing" else {})})

    def kind_of(r: int) -> str:
        return "duplicate" if want[r] else "aborted-input" if from_aborted[r] else "unexplained"

    for r in missing:
        example("missing", int(r), int(want[r] - got[r]), found, f_id)
    for r in excess:
        example(kind_of(int(r)), int(r), int(got[r] - want[r]), found, f_id)
    for r in only_polled:
        example(kind_of(int(r)), int(r), 1, polled, p_id)
    if app.order == PER_KEY:
        # every record one committed input yields, at its first copy (a later copy is duplicate's),
        # as docs/CYCLES.md places a record: a stale value also written twice is still out of order
        n_order, by_kind["order"] = _order(app, exp, e_id, found, f_id, (want == 1) & (got >= 1))
        count += n_order
    return count, by_kind


def _order(app: AppContract, exp: pd.DataFrame, e_id: np.ndarray, found: pd.DataFrame, f_id: np.ndarray,
           single: np.ndarray) -> tuple[int, list[dict[str, Any]]]:
    """Per output key and partition, in offset order, the outputs each matched to exactly one
    committed input (``single``), each at its first copy, whose inputs are in one input partition:
    an output of an earlier input (or an earlier output of the same input) after a later one is one
    count."""
    mine = exp["committed"].to_numpy(bool) & single[e_id]
    one = exp[mine].assign(rid=e_id[mine])
    firsts = found.assign(rid=f_id)[single[f_id]]
    firsts = firsts.iloc[np.lexsort((firsts["offset"].to_numpy(), firsts["partition"].to_numpy()))]
    m = firsts.drop_duplicates("rid").merge(
        one[["rid", "input", "seq", "writer_op", "in_topic", "in_partition", "in_offset"]], on="rid")
    m = m[m["in_offset"].notna()]
    if m.empty:
        return 0, []
    lane = row_ids([m], ["topic", "partition", "key", "in_topic", "in_partition"])[0]
    # the columns the examples name, in (lane, offset) order (a stable sort, as sort_values'), no more:
    # every column of a few million rows is a take
    m = m[["topic", "partition", "offset", "key", "input", "seq", "writer_op", "in_offset"]].assign(
        lane=lane, in_offset=m["in_offset"].astype("int64"))
    m = m.iloc[np.lexsort((m["offset"].to_numpy(), lane))].reset_index(drop=True)
    same = m["lane"].to_numpy()[1:] == m["lane"].to_numpy()[:-1]
    at, seq = m["in_offset"].to_numpy(np.int64), m["seq"].to_numpy(np.int64)
    earlier = (at[1:] < at[:-1]) | ((at[1:] == at[:-1]) & (seq[1:] < seq[:-1]))
    bad = np.flatnonzero(same & earlier) + 1
    ex = [{"kind": "order", "app": app.app, "count": 1, "key": plain(m.at[b, "key"]),
           "inputs": [plain(m.at[b - 1, "input"]), plain(m.at[b, "input"])], "writer_op": plain(m.at[b, "writer_op"]),
           "input_offsets": [plain(m.at[b - 1, "in_offset"]), plain(m.at[b, "in_offset"])],
           "outputs": [pos(m.at[k, "topic"], m.at[k, "partition"], m.at[k, "offset"]) for k in (b - 1, b)]}
          for b in bad[:MAX_EXAMPLES]]
    return len(bad), ex


# ---------------------------------------------------------------------------------------------- aggregate
def app_aggregate(t: Tables) -> Found:
    """An ``aggregate`` app's committed updates of a key: the last one is not the exact aggregate of
    the key's committed input, one overshoots it, one goes back from the one before, the updates
    are in more than one partition, or one is not an integer."""
    return every_app(t, AGGREGATE, _judge_aggregates, AGGREGATE_KINDS)


def contributions(t: Tables, app: AppContract, ins: pd.DataFrame) -> pd.DataFrame:
    """Per committed input, what it adds to which (topic, key): with ``by``, the contributions the
    runner recorded (input, topic, key, value = the amount as text), else the input itself on every
    aggregated topic (its key, its value). A contribution without a key is not aggregated (Kafka
    Streams drops a record whose key is null)."""
    ins = ins[ins["committed"]]
    if app.by is None:
        ins = ins[ins["key"].notna()]
        return pd.concat([pd.DataFrame({"input": ins["value"], "topic": topic, "key": ins["key"], "value": ins["payload"]})
                          for topic in app.aggregates], ignore_index=True)
    e = recorded(t, app, ins, app.by)
    e = e[e["key"].notna().to_numpy(bool)]
    # one set of contributions per committed input: inputs that share a value (a pipeline stage's
    # repeated content) each contribute
    e = ins[["value"]].rename(columns={"value": "input"}).merge(e, on="input", how="inner")
    return e[["input", "topic", "key", "value"]].reset_index(drop=True)


def _judge_aggregates(t: Tables, app: AppContract) -> Judged:
    return judge_aggregates(t, app, inputs(t, app))


def judge_aggregates(t: Tables, app: AppContract, ins: pd.DataFrame) -> Judged:
    """``app-aggregate``'s findings of ``app`` given its inputs ``ins`` (as ``judge_map``)."""
    contrib = contributions(t, app, ins)
    found = outputs_of(t, app, SCAN, READ_COMMITTED)
    count = 0
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for topic, fn in app.aggregates.items():
        mine = contrib[(contrib["topic"] == topic).to_numpy(bool)]
        n, examples = _judge_aggregate(app.app, topic, fn, mine, found[found["topic"] == topic])
        count += n
        for kind, ex in examples.items():
            by_kind.setdefault(kind, []).extend(ex)
    return count, by_kind


def integers(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Which ``values`` (text or null) are integers (of int64), and their values (0 where not)."""
    text = values.astype(object).where(values.notna(), "").astype(str)
    ok = text.str.fullmatch(r"-?\d{1,18}").to_numpy(bool)
    numbers = np.zeros(len(values), dtype=np.int64)
    numbers[ok] = text[ok].astype(np.int64).to_numpy()
    return ok, numbers


def _judge_aggregate(app: str, topic: str, fn: str, ins: pd.DataFrame,
                     found: pd.DataFrame) -> Judged:
    """One output topic of an aggregate: per key, its committed updates against the exact aggregate."""
    ok, numbers = integers(ins["value"])
    if fn != COUNT and not ok.all():
        raise HistoryError(f"app {app}: input value {ins['value'][~ok].iloc[0]!r} is not an integer; the feeder writes "
                         f"integers for an aggregate contract ({fn} of {topic})")
    exact = pd.Series(numbers, index=ins["key"].to_numpy(object)).groupby(level=0).agg(
        {COUNT: "size", SUM: "sum", MIN: "min", MAX: "max"}[fn])

    def expected(keys: Any) -> pd.Series:
        """The exact aggregate of each key (nullable): count and sum 0 for a key of no committed
        input, min and max none."""
        e = exact.reindex(pd.Index(keys, dtype=object)).astype("Int64")
        return e.fillna(0) if fn in (COUNT, SUM) else e

    good, values = integers(found["value"])
    upd = found.assign(number=values)[good & found["key"].notna().to_numpy(bool)]
    parts = upd.groupby("key", sort=False)["partition"].nunique()
    split = parts.index[parts.to_numpy() > 1]
    upd = upd[~upd["key"].isin(split)].sort_values(["key", "offset"], kind="stable").reset_index(drop=True)
    sign = -1 if fn == MIN else 1  # the way the aggregate moves: min goes down, the rest up
    keys, nums = upd["key"].to_numpy(object), upd["number"].to_numpy(np.int64)
    want = expected(keys)
    back = np.r_[False, (keys[1:] == keys[:-1]) & (sign * (nums[1:] - nums[:-1]) < 0)]
    over = (want.notna() & (sign * (pd.Series(nums, index=want.index) - want) > 0)).to_numpy(bool)
    last = upd.drop_duplicates("key", keep="last").set_index("key")
    every = pd.Index(exact.index, dtype=object).union(pd.Index(last.index, dtype=object)).difference(split)
    final_want = expected(every)
    final_have = last["number"].reindex(every).astype("Int64")
    final = ((final_want.isna() != final_have.isna()) | (final_want != final_have).fillna(False)).to_numpy(bool)

    bad_value = found[~good]
    keyed = {"app": app, "topic": topic, "aggregate": fn}
    by_kind = {
        "not-a-number": [{"kind": "not-a-number", **keyed, "key": plain(r["key"]), "found": plain(r["value"]),
                          "at": position(r["topic"], r["partition"], r["offset"])}
                         for _, r in bad_value.head(MAX_EXAMPLES).iterrows()],
        "split": [{"kind": "split", **keyed, "key": plain(k),
                   "partitions": sorted(int(p) for p in found.loc[found["key"] == k, "partition"].unique())}
                  for k in split[:MAX_EXAMPLES]],
        "back": [{"kind": "back", **keyed, "key": plain(keys[b]), "expected": plain(want.iloc[b]),
                  "found": int(nums[b]), "previous_found": int(nums[b - 1]), "at": _at(upd, b), "previous": _at(upd, b - 1)}
                 for b in np.flatnonzero(back)[:MAX_EXAMPLES]],
        "overshoot": [{"kind": "overshoot", **keyed, "key": plain(keys[b]), "expected": plain(want.iloc[b]),
                       "found": int(nums[b]), "at": _at(upd, b)} for b in np.flatnonzero(over)[:MAX_EXAMPLES]],
        "final": [{"kind": "final", **keyed, "key": plain(k), "expected": plain(final_want[k]),
                   "found": plain(final_have[k]), "inputs": int((ins["key"] == k).sum()),
                   "at": pos(topic, last.at[k, "partition"], last.at[k, "offset"]) if k in last.index else None}
                  for k in every[final][:MAX_EXAMPLES]],
    }
    return int((~good).sum() + len(split) + back.sum() + over.sum() + final.sum()), by_kind


def _at(df: pd.DataFrame, row: int) -> Any:
    """The position of row ``row`` of output records ``df``."""
    return pos(df.at[row, "topic"], df.at[row, "partition"], df.at[row, "offset"])


def pos(topic: Any, partition: Any, offset: Any) -> Any:
    """A position of a frame's cells (whatever scalar types pandas gives)."""
    return position(str(topic), int(partition), int(offset))
