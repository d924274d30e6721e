"""The records an app's feeder wrote to its inputs, as a user's function takes them (docs/APPS.md,
"The feeder"): one dict per record, ``{"topic", "partition", "offset", "key", "value", "timestamp",
"headers"}``, key and value decoded by the feeder's format of the topic (text: str; json: the JSON
value; bytes: bytes), built from the tables (``writes``, ``keys``, ``payloads``, the outcomes and
the reads). The runner hands them to the contract's functions; the checker may read them too.

How a payload is written down in the history and read back: ``harness.history.app_values`` (a
module without pandas, for the feeder and the functions' child processes).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from harness.history.app_values import decoded
from harness.history.model import INFO, OK, READ_COMMITTED
from harness.history.schema import AppContract
from harness.history.store import Tables, with_values

#: the fields of an input record only the harness uses (``user_record`` drops them): the record's
#: id (its value in ``writes``) and whether it counts (committed, as ``lost-write`` decides)
ID, COMMITTED = "id", "committed"


def _plain(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with categorical columns (as Parquet loads the few-valued ones) as their values."""
    cats = [c for c in df.columns if isinstance(df[c].dtype, pd.CategoricalDtype)]
    return df.astype({c: object for c in cats}) if cats else df


def _by_value(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` (rows with a ``value``) indexed by value, its first row of each."""
    return _plain(df).drop_duplicates("value").set_index("value")


def input_frame(t: Tables, app: AppContract) -> pd.DataFrame:
    """Every write to the app's input topics, in input-partition offset order: id, topic, partition,
    offset (acknowledged, else where a read_committed read saw it; NA when neither), committed
    (``ok``, or ``info`` and seen by a read_committed read), key and payload as recorded (the id
    where the feeder recorded no payload: a history of values that are their own payload),
    timestamp (NA without one) and headers (JSON text or None)."""
    w = _plain(with_values(t, t.writes))
    w = w[w["topic"].isin(app.inputs).to_numpy(bool)]
    outcome = _plain(t.txns).set_index("txn")["outcome"].reindex(w["txn"].to_numpy()).to_numpy(object)
    r = _plain(t.reads)
    r = r[(r["isolation"] == READ_COMMITTED).to_numpy(bool) & r["topic"].isin(app.inputs).to_numpy(bool)]
    seen = _by_value(with_values(t, r)[["value", "offset"]])["offset"]
    ids = w["value"].astype(object)
    was_seen = ids.isin(seen.index).to_numpy(bool)
    committed = (outcome == OK) | ((outcome == INFO) & was_seen)
    offset = w["offset"].astype("Int64").fillna(pd.Series(seen.reindex(ids.to_numpy()).to_numpy(), index=w.index)
                                                .astype("Int64"))
    keys = _by_value(t.keys)["key"]
    pay = _by_value(t.payloads)
    has = ids.isin(pay.index).to_numpy(bool)
    at = pay.reindex(ids.to_numpy())
    payload = np.where(has, at["payload"].to_numpy(object), ids.to_numpy(object))
    out = pd.DataFrame({ID: ids.to_numpy(object), "topic": w["topic"].to_numpy(object),
                        "partition": w["partition"].to_numpy(np.int64), "offset": offset.to_numpy(),
                        COMMITTED: committed, "key": keys.reindex(ids.to_numpy()).to_numpy(object),
                        "payload": payload, "timestamp": at["timestamp"].astype("Int64").to_numpy(),
                        "headers": at["headers"].to_numpy(object), "order": np.arange(len(w))})
    out["topic_at"] = [app.inputs.index(x) for x in out["topic"]]
    out = out.sort_values(["topic_at", "partition", "offset", "order"], na_position="last", kind="stable")
    return out.drop(columns=["topic_at", "order"]).reset_index(drop=True)


def _none(v: Any) -> Any:
    return None if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)) else v


def input_records(t: Tables, app: AppContract, names: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """The app's input records (``input_frame``'s order and rows) as its functions take them:
    ``{"topic", "partition", "offset", "key", "value", "timestamp", "headers"}``, ``topic`` as
    ``names`` maps the run's names (the scenario's; as recorded without), key and value decoded by
    the topic's format (``app.formats``), headers the feeder's own as a dict; plus ``id`` and
    ``committed`` (``user_record`` drops them)."""
    f = input_frame(t, app)
    out = []
    for row in f.to_dict("records"):
        topic = str(row["topic"])
        fmt = app.format_of(topic)
        headers = _none(row["headers"])
        offset, ts = _none(row["offset"]), _none(row["timestamp"])
        out.append({"topic": (names or {}).get(topic, topic), "partition": int(row["partition"]),
                    "offset": None if offset is None else int(offset), "key": decoded(fmt, _none(row["key"])),
                    "value": decoded(fmt, _none(row["payload"])), "timestamp": None if ts is None else int(ts),
                    "headers": {str(k): str(v) for k, v in json.loads(headers)} if headers else {},
                    ID: str(row[ID]), COMMITTED: bool(row[COMMITTED])})
    return out


def user_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """An ``input_records`` record as a user's function gets it (without ``id`` and ``committed``)."""
    return {k: v for k, v in record.items() if k not in (ID, COMMITTED)}
