"""What a pipeline's later stage read (docs/APPS.md, "Pipelines"): the records its upstream app left
in the topics between them, as the final scans of that app's output found them. A record of the
read_committed scan is a committed input; one only the read_uncommitted scan has (the upstream app's
aborted or never-ended transaction) is an aborted one, which the stage must not have processed.

Each is known by its content (``content_id``): the upstream app's outputs repeat when it wrote one
twice, and the stage's function was applied per content by the runner.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from harness.history.app_values import content_id
from harness.history.model import READ_COMMITTED, READ_UNCOMMITTED, SCAN
from harness.history.schema import AppContract
from harness.history.store import Tables

#: the columns of an app's inputs (``harness.checker.contracts.inputs``)
INPUT_COLUMNS = ["value", "key", "payload", "topic", "partition", "offset", "writer_op", "committed"]


def contents(topics: pd.Series, keys: pd.Series, values: pd.Series) -> np.ndarray:
    """``content_id`` of each (topic, key, value)."""
    return np.array([content_id(str(t), k, v) for t, k, v in zip(topics.astype(object), _nulls(keys), _nulls(values))],
                    dtype=object)


def _nulls(s: pd.Series) -> list[str | None]:
    return [None if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)) else str(v) for v in s.astype(object)]


def piped(t: Tables, app: AppContract) -> pd.DataFrame:
    """Every record of ``app``'s input topics its upstream app's final scans found, once per
    position (the read_committed scan's where it has one): value (the content id), key, payload,
    topic, partition, offset, writer_op (the scan op) and ``committed`` (in the read_committed scan)."""
    o = t.app_outputs
    o = o[((o["app"].astype(object) == app.upstream) & (o["source"].astype(object) == SCAN)
           & o["topic"].astype(object).isin(app.inputs)).to_numpy(bool)]
    o = o.astype({c: object for c in o.columns if isinstance(o[c].dtype, pd.CategoricalDtype)})
    rank = {READ_COMMITTED: 0, READ_UNCOMMITTED: 1}
    o = o[o["isolation"].isin(list(rank))].assign(rank=o["isolation"].map(rank))
    o = o.sort_values(["topic", "partition", "offset", "rank"], kind="stable").drop_duplicates(
        ["topic", "partition", "offset"])
    if o.empty:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in INPUT_COLUMNS})
    return pd.DataFrame({"value": contents(o["topic"], o["key"], o["value"]), "key": o["key"].to_numpy(object),
                         "payload": o["value"].to_numpy(object), "topic": o["topic"].to_numpy(object),
                         "partition": o["partition"].to_numpy(np.int64),
                         "offset": o["offset"].astype("Int64").to_numpy(), "writer_op": o["op"].to_numpy(np.int64),
                         "committed": (o["rank"] == 0).to_numpy(bool)}).reset_index(drop=True)
