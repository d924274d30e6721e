"""``app-model``: an app whose contract is a user's model (docs/APPS.md, ``kind: model``). The
runner applied the model once, after the final scans, to exactly the committed inputs, and recorded
the final table it expects (an ``expect`` op with ``table``: rows of ``app_expected`` whose input is
null). The check compares that table with the final read_committed scan of the app's outputs: per
(output topic, key), the last update in offset order. A null expected value, or a last update that
is a null (a tombstone), is "no value".
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from harness.checker.checks import MAX_EXAMPLES, Found, HistoryError
from harness.checker.contracts import Judged, every_app, integers, outputs_of, plain, plain_text, pos, row_ids
from harness.history.model import MODEL, READ_COMMITTED, SCAN
from harness.history.schema import AppContract
from harness.history.store import Tables

#: ``app-model``'s kinds of finding, in the order their examples are picked
MODEL_KINDS = ("final", "missing", "extra", "back", "split", "undeclared-topic")


def app_model(t: Tables) -> Found:
    """A ``model`` app's committed final table is not the one its model gives for its committed
    input: a key's last value differs, a key is missing or extra, (``monotone``) an update goes back,
    or a key's updates are in more than one partition."""
    return every_app(t, MODEL, _judge_model, MODEL_KINDS)


def expected_table(t: Tables, app: AppContract) -> pd.DataFrame:
    """The model's table (topic, key, value) without its null values. ``HistoryError`` when the
    runner could not apply the model, or recorded no table."""
    failed = (t.meta.get("app_function_errors") or {}).get(app.app)
    if failed:
        raise HistoryError(f"app {app.app}: its model {app.function} gave no table: {failed}")
    if app.app not in (t.meta.get("app_model_inputs") or {}):
        raise HistoryError(f"app {app.app}: no expected table recorded (an expect op with table): the runner "
                           f"records it after the final scans, by {app.function}")
    e = t.app_expected
    e = plain_text(e[((e["app"].astype(object) == app.app) & e["input"].isna()).to_numpy(bool)])
    return e[e["value"].notna().to_numpy(bool)][["topic", "key", "value"]].reset_index(drop=True)


def _judge_model(t: Tables, app: AppContract) -> Judged:
    want = expected_table(t, app)
    found = outputs_of(t, app, SCAN, READ_COMMITTED)
    found = found.iloc[np.lexsort((found["offset"].to_numpy(), found["partition"].to_numpy()))].reset_index(drop=True)
    w_id, f_id = row_ids([want, found], ["topic", "key"])
    n = int(max([0, *(int(a.max()) + 1 for a in (w_id, f_id) if len(a))]))
    parts = pd.Series(found["partition"].to_numpy(), index=f_id).groupby(level=0).nunique().reindex(range(n), fill_value=0)
    split = parts.to_numpy() > 1
    # the last update of each (topic, key): the frame is in (partition, offset) order; a split key is judged no further
    last = pd.Series(np.arange(len(found)), index=f_id).groupby(level=0).last()
    last_row = np.full(n, -1)
    last_row[last.index.to_numpy()] = last.to_numpy()
    have = np.zeros(n, dtype=bool)
    have_value = np.full(n, None, dtype=object)
    ok = last_row >= 0
    have_value[ok] = found["value"].to_numpy(object)[last_row[ok]]
    have[ok] = pd.notna(have_value[ok]).astype(bool)
    wanted = np.zeros(n, dtype=bool)
    wanted[w_id] = True
    want_value = np.full(n, None, dtype=object)
    want_value[w_id] = want["value"].to_numpy(object)
    judged = ~split
    missing = judged & wanted & ~have
    extra = judged & have & ~wanted
    both = judged & wanted & have
    final = both & (want_value != have_value)
    back = _back(found, f_id, split) if app.monotone else np.zeros(len(found), dtype=bool)
    by_kind = _examples(app, found, want, w_id, f_id, last_row, want_value, have_value,
                        {"missing": missing, "extra": extra, "final": final, "split": split}, back)
    return int(missing.sum() + extra.sum() + final.sum() + split.sum() + back.sum()), by_kind


def _back(found: pd.DataFrame, f_id: np.ndarray, split: np.ndarray) -> np.ndarray:
    """Per update: an integer below the key's update before it (of one partition, in offset order)."""
    good, nums = integers(found["value"])
    order = np.lexsort((found["offset"].to_numpy(), f_id))
    same = np.r_[False, f_id[order][1:] == f_id[order][:-1]]
    prev_ok = np.r_[False, good[order][:-1]]
    went_back = same & prev_ok & good[order] & (np.r_[0, np.diff(nums[order])] < 0) & ~split[f_id[order]]
    out = np.zeros(len(found), dtype=bool)
    out[order[went_back]] = True
    return out


def _examples(app: AppContract, found: pd.DataFrame, want: pd.DataFrame, w_id: np.ndarray, f_id: np.ndarray,
              last_row: np.ndarray, want_value: np.ndarray, have_value: np.ndarray, flags: dict[str, np.ndarray],
              back: np.ndarray) -> dict[str, list[dict[str, Any]]]:
    """A few examples of each kind: the topic, key, the value expected and found, where."""
    def record(r: int) -> dict[str, Any]:
        if last_row[r] >= 0:
            row = found.iloc[last_row[r]]
            topic, key, at = row["topic"], row["key"], pos(row["topic"], row["partition"], row["offset"])
        else:
            row = want.iloc[int(np.flatnonzero(w_id == r)[0])]
            topic, key, at = row["topic"], row["key"], None
        return {"app": app.app, "topic": plain(topic), "key": plain(key), "expected": plain(want_value[r]),
                "found": plain(have_value[r]), "at": at}

    def partitions(r: int) -> dict[str, Any]:
        return {"partitions": sorted(int(p) for p in found.loc[f_id == r, "partition"].unique())}

    by_kind = {kind: [{"kind": kind, **record(int(r)), **(partitions(int(r)) if kind == "split" else {})}
                      for r in np.flatnonzero(flag)[:MAX_EXAMPLES]]
               for kind, flag in flags.items()}
    by_kind["back"] = [{"kind": "back", "app": app.app, "topic": plain(found.at[b, "topic"]), "key": plain(found.at[b, "key"]),
                        "found": plain(found.at[b, "value"]),
                        "at": pos(found.at[b, "topic"], found.at[b, "partition"], found.at[b, "offset"])}
                       for b in np.flatnonzero(back)[:MAX_EXAMPLES]]
    return by_kind
