"""The app contract checks match records by integer codes of their text columns
(``contracts.codes_of``, ``row_ids``, ``member``) instead of pandas' grouping and ``isin`` of
Python strings (seconds per million rows; docs/BENCHMARKS.md, "The app contract checks"). The codes
must be what the grouping gave: nulls equal to nulls, whatever the column's type (categories as
loaded, Arrow strings, objects), numbered in order of first appearance, which decides the order of
the examples."""

from __future__ import annotations

import numpy as np
import pandas as pd

from harness.bench.app_history import app_synthetic
from harness.checker import check
from harness.checker.contracts import member, row_ids
from harness.history.model import READ_COMMITTED, SCAN


def _frames(seed: int) -> list[pd.DataFrame]:
    """Three frames of (topic, key, value), few distinct values and nulls (None and NaN), each
    column of another type per frame: categories, Arrow strings, Python objects."""
    rng = np.random.default_rng(seed)
    frames = []
    for dtype in ("category", "str", object):
        n = int(rng.integers(0, 40))
        cells = {c: rng.choice(np.array(["a", "b", "c", None, np.nan], dtype=object), n) for c in ("topic", "key", "value")}
        frames.append(pd.DataFrame({c: pd.Series(v, dtype=dtype) for c, v in cells.items()}))
    return frames


def test_row_ids_are_pandas_groups_numbered_by_first_appearance() -> None:
    for seed in range(20):
        frames = _frames(seed)
        both = pd.concat([f.astype(object) for f in frames], ignore_index=True)
        groups = both.groupby(["topic", "key", "value"], dropna=False, sort=False).ngroup().to_numpy()
        ids = row_ids(frames, ["topic", "key", "value"])
        assert [len(i) for i in ids] == [len(f) for f in frames]
        assert np.concatenate(ids).tolist() == groups.tolist(), seed


def test_member_is_isin_with_nulls_equal() -> None:
    for seed in range(20):
        a, b, _ = _frames(seed)
        assert member(a["value"], b["value"]).tolist() == a["value"].astype(object).isin(b["value"].astype(object)).tolist()
    assert member(pd.Series([], dtype="str"), pd.Series(["x"])).tolist() == []


def test_outputs_of_one_key_swapped_are_one_order_finding_naming_both_inputs() -> None:
    t = app_synthetic(3000, "map")
    o = t.app_outputs
    final = o[(o["source"] == SCAN) & (o["isolation"] == READ_COMMITTED)]
    key = final["key"].value_counts().index[0]
    first, second = final.index[final["key"] == key][:2]
    swapped = o.loc[[second, first], "value"].to_numpy()
    o.loc[[first, second], "value"] = swapped
    v = check(t).checks["app-map"]
    assert v.count == 1 and [e["kind"] for e in v.examples] == ["order"]
    assert v.examples[0]["key"] == key and v.examples[0]["inputs"] == list(swapped)
