"""``app-windowed``: an app whose contract is a windowed aggregate (docs/APPS.md, ``kind: windowed``),
judged by the rule Kafka Streams' ``KStreamWindowAggregate`` applies (read from its source; docs/APPS.md,
"Windows: what Kafka Streams promises"):

- a task's *stream time* is the largest timestamp it has processed: per input partition (a
  ``groupByKey`` aggregate's task reads one partition of each input), in offset order, over the
  committed inputs only (a read_committed consumer never sees the others);
- a record with timestamp ``ts`` falls in every window ``[start, start + size)`` with ``start`` a
  multiple of ``advance`` (``start >= 0``) that holds ``ts``, and is added to one iff
  ``start + size > stream_time - grace``, stream time counting the record itself; otherwise Streams
  drops it as late ("Skipping record for expired window").

The processor's stream time lives in the processor object, not in its state: a task created anew
(an instance restarted, or the task moved to another instance) starts it over. A record late by the
first stream time may then be counted, so Streams promises only bounds: every on-time record counted
(the lower bound), and no record counted that is not in the window at all or is aborted (the upper
bound: on-time plus late records). ``late-counted`` is judged only where no task can have started over:
the app ran as one instance, started once.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from harness.checker.checks import MAX_EXAMPLES, Found, HistoryError
from harness.checker.contracts import (
    Judged,
    codes_of,
    contributions,
    every_app,
    inputs,
    integers,
    outputs_of,
    plain,
    pos,
    row_ids,
)
from harness.history.model import APP_START, COUNT, MAX, MIN, READ_COMMITTED, SCAN, TEXT_WINDOW, WINDOWED
from harness.history.schema import AppContract, window_key_function
from harness.history.store import Tables

#: ``app-windowed``'s kinds of finding, in the order their examples are picked
WINDOWED_KINDS = ("final", "overshoot", "late-counted", "back", "split", "not-a-number", "undeclared-topic")
#: the bytes of a window's start after the key in Kafka Streams' TimeWindowedSerializer
START_BYTES = 8


def app_windowed(t: Tables) -> Found:
    """A ``windowed`` app's committed updates of a window: the last one outside what its committed
    on-time (and possibly late) input gives, one beyond it, one showing a record past grace counted
    (where no task started over), one going back, split over partitions, or not an integer."""
    return every_app(t, WINDOWED, _judge_windowed, WINDOWED_KINDS)


def window_key(text: Any, how: str, decoded: Mapping[str, list[Any]] | None = None) -> tuple[str, int]:
    """An output key as (key, window start): ``key@start`` (``text``), (``time-windowed``) the
    base64 of the key's bytes and the start's 8 bytes big-endian, or (a ``module:function`` of the
    user's) as the runner recorded that function's answer in ``decoded``. ``HistoryError`` naming the
    key when it is none of these."""
    fn = window_key_function(how)
    if fn is not None:
        pair = (decoded or {}).get(str(text))
        if pair is None:
            raise HistoryError(f"output key {text!r} has no decoding by {fn} on record: the runner records one for "
                               "every key the final scans read (expect ops with window_keys)")
        return str(pair[0]), int(pair[1])
    try:
        if how == TEXT_WINDOW:
            key, at, start = str(text).rpartition("@")
            if not at:
                raise ValueError("no '@'")
            return key, int(start)
        raw = base64.b64decode(str(text), validate=True)
        if len(raw) < START_BYTES:
            raise ValueError(f"{len(raw)} bytes, fewer than the start's {START_BYTES}")
        return raw[:-START_BYTES].decode("utf-8"), int.from_bytes(raw[-START_BYTES:], "big", signed=True)
    except (ValueError, binascii.Error, UnicodeDecodeError) as exc:
        shape = "key@start_ms" if how == TEXT_WINDOW else "a key and an 8-byte start (TimeWindowedSerializer)"
        raise HistoryError(f"output key {text!r} is not a windowed key ({shape}): {exc}") from None


def _timed(t: Tables, app: AppContract) -> pd.DataFrame:
    """The committed inputs with their timestamp and their partition's stream time then, in (topic,
    partition, offset) order. Values are matched by codes (``codes_of``), not by text: a reindex of
    millions of strings took seconds."""
    ins = inputs(t, app)
    ins = ins[ins["committed"].to_numpy(bool)]
    p = t.payloads
    codes = codes_of([p["value"], ins["value"]])
    ts_of = np.full(int(codes.max(initial=-1)) + 1, -1, dtype=np.int64)
    ts_of[codes[:len(p)]] = p["timestamp"].fillna(-1).to_numpy(np.int64)
    ts = ts_of[codes[len(p):]]
    if (ts < 0).any():
        first = ins["value"].to_numpy(object)[np.flatnonzero(ts < 0)[0]]
        raise HistoryError(f"app {app.app}: no timestamp recorded for input {first!r}: a windowed contract needs the "
                           "feeder's records (the txn op's records)")
    lane = pd.factorize(ins["topic"].astype(object))[0].astype(np.int64) * (int(ins["partition"].to_numpy(np.int64).max(initial=0)) + 1)
    lane += ins["partition"].to_numpy(np.int64)
    order = np.lexsort((ins["offset"].to_numpy(np.int64), lane))
    ins = ins.iloc[order].assign(ts=ts[order], lane=lane[order])
    return ins.assign(stream_time=ins.groupby("lane", sort=False)["ts"].cummax().to_numpy())


def _windows(contrib: pd.DataFrame, size: int, advance: int, grace: int) -> pd.DataFrame:
    """One row per (contribution, window holding its timestamp): ``start`` and ``on_time``."""
    ts = contrib["ts"].to_numpy(np.int64)
    base = (np.maximum(0, ts - size + advance) // advance) * advance
    rows = []
    for j in range(-(-size // advance)):
        start = base + j * advance
        ok = start <= ts
        rows.append(contrib[ok].assign(start=start[ok], on_time=(start[ok] + size) > (contrib["stream_time"].to_numpy()[ok] - grace)))
    return pd.concat(rows, ignore_index=True) if rows else contrib.assign(start=0, on_time=True)


def _bounds(fn: str, w: pd.DataFrame, n: int, wid: np.ndarray) -> tuple[pd.Series, pd.Series, pd.Series]:
    """Per window id: the aggregate of its on-time contributions (what must be counted), and the
    lowest and highest value it may show with late ones counted or not."""
    amount = pd.Series(w["amount"].to_numpy(np.int64), index=wid)
    on = w["on_time"].to_numpy(bool)
    idx = pd.RangeIndex(n)
    if fn in (COUNT, "sum"):
        a = amount if fn != COUNT else pd.Series(1, index=wid)
        must = a[on].groupby(level=0).sum().reindex(idx, fill_value=0)
        late = a[~on]
        low = must + late.clip(upper=0).groupby(level=0).sum().reindex(idx, fill_value=0)
        high = must + late.clip(lower=0).groupby(level=0).sum().reindex(idx, fill_value=0)
        return must.astype("Int64"), low.astype("Int64"), high.astype("Int64")
    agg = "min" if fn == MIN else "max"
    must = amount[on].groupby(level=0).agg(agg).reindex(idx).astype("Int64")
    every = amount.groupby(level=0).agg(agg).reindex(idx).astype("Int64")
    return (must, every, must) if fn == MIN else (must, must, every)


def _restarted(t: Tables, app: AppContract) -> bool:
    """Whether a task of the app may have started over: more than one start of an instance."""
    ops = t.ops
    starts = ops[(ops["f"].astype(object) == APP_START).to_numpy(bool)]
    return int(starts["process"].astype(str).str.startswith(f"{app.app}-").sum()) > 1


def _judge_windowed(t: Tables, app: AppContract) -> Judged:
    assert app.window is not None  # the schema holds it
    ins = _timed(t, app)
    contrib = contributions(t, app, ins.assign(committed=True))
    timing = ins.set_index("value")[["ts", "stream_time"]]
    contrib = contrib.join(timing, on="input")
    ok, nums = integers(contrib["value"])
    contrib = contrib.assign(amount=np.where(ok, nums, 1))
    win = _windows(contrib, app.window.size_ms, app.window.advance, app.window.grace_ms)
    found = outputs_of(t, app, SCAN, READ_COMMITTED)
    found = found[found["key"].notna().to_numpy(bool)]
    # a window's updates share its key: each distinct key decoded once (millions of updates, thousands of windows)
    codes, uniques = pd.factorize(found["key"].astype(object))
    failed = (t.meta.get("app_function_errors") or {}).get(app.app)
    if failed and window_key_function(app.window_key):
        raise HistoryError(f"app {app.app}: its output keys were not decoded: {failed}")
    by_function = (t.meta.get("app_window_keys") or {}).get(app.app)
    decoded = [window_key(k, app.window_key, by_function) for k in uniques]
    keys = np.array([k for k, _ in decoded] or [""], dtype=object)
    starts = np.array([s for _, s in decoded] or [0], dtype=np.int64)
    found = found.assign(wkey=keys[codes] if len(found) else [], start=starts[codes] if len(found) else np.zeros(0, np.int64))
    strict = not _restarted(t, app)
    count, by_kind = 0, dict[str, list[dict[str, Any]]]()
    for topic, fn in app.aggregates.items():
        n, ex = _judge_topic(app, topic, fn, win[(win["topic"] == topic).to_numpy(bool)],
                             found[(found["topic"] == topic).to_numpy(bool)], strict)
        count += n
        for kind, e in ex.items():
            by_kind.setdefault(kind, []).extend(e)
    return count, by_kind


def _judge_topic(app: AppContract, topic: str, fn: str, win: pd.DataFrame, found: pd.DataFrame,
                 strict: bool) -> Judged:
    """One output topic: per (key, window), its committed updates against the bounds."""
    good, values = integers(found["value"])
    bad = found[~good]
    upd = found.assign(number=values)[good].reset_index(drop=True)
    w_id, u_id = row_ids([win.rename(columns={"key": "wkey"}), upd], ["wkey", "start"])
    n = int(max([0, *(int(a.max()) + 1 for a in (w_id, u_id) if len(a))]))
    parts = pd.Series(upd["partition"].to_numpy(), index=u_id).groupby(level=0).nunique().reindex(range(n), fill_value=0)
    split = parts.to_numpy() > 1
    must, low, high = _bounds(fn, win, n, w_id)
    order = np.lexsort((upd["offset"].to_numpy(), u_id))
    upd, u_id = upd.iloc[order].reset_index(drop=True), u_id[order]
    keep = ~split[u_id]
    nums = upd["number"].to_numpy(np.int64)
    sign = -1 if fn == MIN else 1
    hi = (high if fn != MIN else low).to_numpy(dtype="float64", na_value=np.nan)[u_id]
    over = keep & ~np.isnan(hi) & (sign * (nums - hi) > 0)
    over |= keep & np.isnan(hi)  # an update of a window no committed input falls in
    m = must.to_numpy(dtype="float64", na_value=np.nan)[u_id]
    late = keep & ~over & strict & (np.isnan(m) | (sign * (nums - m) > 0))
    same = np.r_[False, u_id[1:] == u_id[:-1]]
    back = keep & same & (sign * np.r_[0, np.diff(nums)] < 0)
    last = np.r_[u_id[1:] != u_id[:-1], True] if len(u_id) else np.zeros(0, dtype=bool)
    last_of = np.full(n, -1)
    last_of[u_id[last]] = np.flatnonzero(last)
    lo_a, hi_a = low.to_numpy(dtype="float64", na_value=np.nan), high.to_numpy(dtype="float64", na_value=np.nan)
    has = last_of >= 0
    final_num = np.where(has, upd["number"].to_numpy(np.int64)[np.maximum(last_of, 0)] if len(upd) else 0, 0)
    want_some = ~np.isnan(lo_a) & ((must.to_numpy(dtype="float64", na_value=0) != 0) | (fn in (MIN, MAX)))
    final = ~split & ((has & (np.isnan(lo_a) | (final_num < lo_a) | (final_num > hi_a))) | (~has & want_some))
    ex = _examples(app, topic, fn, upd, u_id, win, w_id, must, low, high, last_of,
                   {"overshoot": over, "late-counted": late, "back": back}, final, split, bad)
    return int(over.sum() + late.sum() + back.sum() + final.sum() + split.sum() + len(bad)), ex


def _examples(app: AppContract, topic: str, fn: str, upd: pd.DataFrame, u_id: np.ndarray, win: pd.DataFrame,
              w_id: np.ndarray, must: pd.Series, low: pd.Series, high: pd.Series, last_of: np.ndarray,
              per_update: dict[str, np.ndarray], final: np.ndarray, split: np.ndarray,
              bad: pd.DataFrame) -> dict[str, list[dict[str, Any]]]:
    """A few examples of each kind: the key and window, what was found, what was expected, where."""
    keyed = {"app": app.app, "topic": topic, "aggregate": fn}

    def window(r: int) -> dict[str, Any]:
        rows = np.flatnonzero(u_id == r)
        if len(rows):
            key, start = upd.at[int(rows[0]), "wkey"], upd.at[int(rows[0]), "start"]
        else:
            at = int(np.flatnonzero(w_id == r)[0])
            key, start = win["key"].to_numpy(object)[at], win["start"].to_numpy()[at]
        return {"key": plain(key), "window_start": plain(start), "expected": plain(must.iloc[r]),
                "may_be": [plain(low.iloc[r]), plain(high.iloc[r])]}

    def at(b: int) -> dict[str, Any]:
        return {"found": plain(upd.at[b, "number"]), "at": pos(upd.at[b, "topic"], upd.at[b, "partition"], upd.at[b, "offset"])}

    by_kind: dict[str, list[dict[str, Any]]] = {
        kind: [{"kind": kind, **keyed, **window(int(u_id[b])), **at(int(b))} for b in np.flatnonzero(flag)[:MAX_EXAMPLES]]
        for kind, flag in per_update.items()}
    by_kind["final"] = [{"kind": "final", **keyed, **window(int(r)),
                         **(at(int(last_of[r])) if last_of[r] >= 0 else {"found": None, "at": None})}
                        for r in np.flatnonzero(final)[:MAX_EXAMPLES]]
    by_kind["split"] = [{"kind": "split", **keyed, **window(int(r)),
                         "partitions": sorted(int(p) for p in upd.loc[u_id == r, "partition"].unique())}
                        for r in np.flatnonzero(split)[:MAX_EXAMPLES]]
    by_kind["not-a-number"] = [{"kind": "not-a-number", **keyed, "key": plain(r["key"]), "found": plain(r["value"]),
                                "at": pos(r["topic"], r["partition"], r["offset"])}
                               for _, r in bad.head(MAX_EXAMPLES).iterrows()]
    return by_kind
