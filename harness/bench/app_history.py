"""``bench checker --app``'s history: a valid synthetic history of an app under test (docs/APPS.md),
built column-wise straight into the tables (no op objects, as ``producer_history.synthetic``), as a run of
an exactly-once app would leave it.

The feeder writes N values (``1`` ... ``N``, positive and distinct, as for an aggregate contract)
with one of ``KEYS`` keys each (seeded), in transactions of ``VALUES_PER_TXN``, every
``ABORT_EVERY``-th of them aborted, to ``IN_PARTITIONS`` partitions of the input topic, a key's
values in one partition (``key % IN_PARTITIONS``: a stand-in for murmur2, which the checks never
look at), each transaction end taking an offset in each partition it wrote for its marker. The final
scans of the input: every committed value (read_committed), every value (read_uncommitted).

The app processes each partition's committed input in offset order and writes, in transactions of
``OUT_TXN`` output records per partition (one marker offset after each), to the output topic's
partition of the same number:

- ``map`` (``identity``): each committed input once, same key and value;
- ``map-function`` (``module:function``): each committed input's two records ``<value>:a`` and
  ``<value>:b``, same key; the runner's ``expect`` rows give both for every input, aborted ones too;
- ``aggregate``: per committed input, the running count and the running sum of its key, to two
  topics (Kafka Streams with caching off: one update per input);
- ``aggregate-by``: a by-function's contributions, two derived keys per input (``a<key>`` and
  ``b<key>``: a word count's words), each one's running count; the ``expect`` rows give both for every
  input;
- ``model``: the running count of each key, judged by a model's final table (the count of each key's
  committed inputs), which the runner recorded after the final scans;
- ``windowed``: the running count of each key per tumbling window of ``WINDOW_MS`` on the record
  timestamps (a transaction's records ``TXN_MS`` after the one before), keys ``key@start``: every
  record on time;
- ``join``: the first transactions (two writes per key) write a table topic; each committed stream
  input is joined with its key's last committed table write, ``<value>@<table value>`` (``-``
  without one); the runner's alternatives: none and every table write of the key.

Every output record is in the output reader's read_committed polls (batches of ``POLL_BATCH``) and in
both final scans of the output, as after a run whose reader kept up and whose app aborted nothing.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from harness.history import store
from harness.history.model import (
    AGGREGATE,
    COUNT,
    FAIL,
    IDENTITY,
    JOIN,
    MAP,
    MODEL,
    OK,
    PER_KEY,
    POLL,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    SCAN,
    SUM,
    TEXT_WINDOW,
    WINDOWED,
)

#: The app histories ``bench checker --app`` builds: a ``map`` contract, ``identity`` or a function's, or an ``aggregate``.
APP_KINDS = ("map", "map-function", "aggregate", "aggregate-by", "model", "windowed", "join")
KEYS = 1000
IN_PARTITIONS = 3
VALUES_PER_TXN = 10
ABORT_EVERY = 5  # every 5th feeder transaction aborted: 20%
OUT_TXN = 100  # output records per app transaction and partition
POLL_BATCH = 500
SEED = 20261125
APP, FEEDER, FEEDER_TXN_ID, READER = "app", "app-feeder.0", "app-feeder-0", "app-reader.0"
IN_TOPIC, OUT_TOPIC = "app-in", "app-out"
AGGREGATE_TOPICS = {"app-count": COUNT, "app-sum": SUM}
FUNCTION = "bench_app:twice"  # never imported: the checker reads its outputs from the expect rows
FUNCTION_SUFFIXES = (":a", ":b")
WINDOW_MS = 60_000
TXN_MS = 10
TABLE_TOPIC = "app-table"


def _text(a: np.ndarray) -> pd.Series:
    return pd.Series(a, dtype="str")


def _in_partition_order(part: np.ndarray, group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For records already in write order: the permutation putting them in (partition, write) order,
    and each record's offset in its partition when each run of one ``group`` (a transaction) is
    followed by one marker offset."""
    order = np.argsort(part, kind="stable")
    p, g = part[order], group[order]
    m = len(order)
    first_of_part = np.r_[True, p[1:] != p[:-1]] if m else np.zeros(0, bool)
    starts = np.flatnonzero(first_of_part)
    start_of = np.repeat(starts, np.diff(np.r_[starts, m]))  # each record's partition's first row
    new_group = first_of_part | np.r_[True, g[1:] != g[:-1]] if m else first_of_part
    groups_before = np.cumsum(new_group) - 1 - (np.cumsum(new_group) - 1)[start_of]
    offset = np.empty(m, np.int64)
    offset[order] = (np.arange(m) - start_of) + groups_before
    return order, offset


def _app_records(topic: str, part: np.ndarray, key: np.ndarray, value: np.ndarray, batch: np.ndarray) -> pd.DataFrame:
    """Output records in the order the app wrote them, their offsets with a marker after each ``batch``."""
    order, offset = _in_partition_order(part, batch)
    return pd.DataFrame({"topic": topic, "partition": part[order], "offset": offset[order],
                         "value": value[order], "key": key[order]})


def _out_batches(part: np.ndarray) -> np.ndarray:
    """The app's transaction of each output record (in write order): ``OUT_TXN`` per partition."""
    rank = np.empty(len(part), np.int64)
    for p in np.unique(part):
        at = np.flatnonzero(part == p)
        rank[at] = np.arange(len(at))
    return rank // OUT_TXN


def _running(key: np.ndarray, value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per record (in processing order): its key's count and sum so far, itself included."""
    by_key = np.argsort(key, kind="stable")
    k, v = key[by_key], value[by_key]
    first = np.flatnonzero(np.r_[True, k[1:] != k[:-1]]) if len(k) else np.zeros(0, np.int64)
    start_of = np.repeat(first, np.diff(np.r_[first, len(k)]))
    total = np.cumsum(v)
    count, summed = np.empty(len(k), np.int64), np.empty(len(k), np.int64)
    count[by_key] = np.arange(len(k)) - start_of + 1
    summed[by_key] = total - (total[start_of] - v[start_of])
    return count, summed


def app_synthetic(n_values: int, kind: str) -> store.Tables:
    """The tables of a valid history of app ``kind`` (``APP_KINDS``) fed ``n_values`` values."""
    if kind not in APP_KINDS:
        raise ValueError(f"app history {kind!r}: expected one of {', '.join(APP_KINDS)}")
    rng = np.random.default_rng(SEED)
    n_txn = max(1, n_values // VALUES_PER_TXN)
    n = n_txn * VALUES_PER_TXN
    txn = np.arange(n, dtype=np.int64) // VALUES_PER_TXN
    aborted_txn = (np.arange(n_txn) % ABORT_EVERY) == ABORT_EVERY - 1
    committed = ~aborted_txn[txn]
    key_id = rng.integers(0, KEYS, n)
    part = key_id % IN_PARTITIONS
    # a join's table: the first transactions, two writes per key, in a partition of their own topic
    is_table = txn < (min(n_txn // 2, 2 * KEYS // VALUES_PER_TXN) if kind == "join" else 0)
    topic = np.where(is_table, TABLE_TOPIC, IN_TOPIC).astype(object)
    part = np.where(is_table, IN_PARTITIONS, part)
    numbers = np.arange(1, n + 1, dtype=np.int64)
    value = np.arange(1, n + 1).astype(str).astype(object)
    key = np.char.add("k", np.arange(KEYS).astype(str)).astype(object)[key_id]
    in_order, offset = _in_partition_order(part, txn)

    t_inv = np.arange(n_txn, dtype=np.int64) * 1000
    txns = pd.DataFrame({
        "txn": np.arange(n_txn, dtype=np.int64), "process": FEEDER, "f": "txn",
        "outcome": np.where(aborted_txn, FAIL, OK), "invoke_time": t_inv,
        "complete_time": pd.array(t_inv + 900, dtype="Int64"), "commit_at": pd.array(t_inv + 500, dtype="Int64"),
        "txn_id": FEEDER_TXN_ID, "error": None})
    writes = pd.DataFrame({"txn": txn, "value": _text(value), "topic": topic, "partition": part,
                           "offset": pd.array(np.where(committed, offset, 0), dtype="Int64")})
    writes.loc[~committed, "offset"] = pd.NA
    keys = pd.DataFrame({"value": _text(value), "key": _text(key)})

    scan_op = n_txn + 1  # after the feeder's transactions and the app's contract
    shown = in_order[committed[in_order]]  # committed input, each partition in offset order

    def in_scan(rows: np.ndarray, iso: str, op: int) -> pd.DataFrame:
        return pd.DataFrame({"op": np.full(len(rows), op, np.int64), "process": "final", "source": SCAN,
                             "isolation": iso, "topic": topic[rows], "partition": part[rows], "offset": offset[rows],
                             "value": _text(value[rows])})

    reads = pd.concat([in_scan(shown, READ_COMMITTED, scan_op), in_scan(in_order, READ_UNCOMMITTED, scan_op + 1)],
                      ignore_index=True)

    app_expected: pd.DataFrame | None
    extra: dict[str, Any]
    if kind in TOPOLOGY_KINDS:
        out, contract, app_expected, extra = topology_output(kind, Fed(value, key, key_id, part, txn, committed,
                                                                       shown, is_table, offset))
    else:
        (out, contract, app_expected), extra = _app_output(kind, value[shown], key[shown], part[shown], key_id[shown],
                                                           numbers[shown], value, key), {}
    m = len(out)
    poll_op = scan_op + 2 + np.arange(m, dtype=np.int64) // POLL_BATCH
    out_scan_op = int(poll_op[-1]) + 1 if m else scan_op + 2

    def app_reads(op: np.ndarray, process: str, source: str, iso: str) -> pd.DataFrame:
        return pd.DataFrame({"app": APP, "op": op, "process": process, "source": source, "isolation": iso,
                             "topic": out["topic"].to_numpy(object), "partition": out["partition"].to_numpy(np.int64),
                             "offset": out["offset"].to_numpy(np.int64), "value": _text(out["value"].to_numpy(object)),
                             "key": _text(out["key"].to_numpy(object))})

    app_outputs = pd.concat([app_reads(poll_op, READER, POLL, READ_COMMITTED),
                             app_reads(np.full(m, out_scan_op, np.int64), "final", SCAN, READ_COMMITTED),
                             app_reads(np.full(m, out_scan_op + 1, np.int64), "final", SCAN, READ_UNCOMMITTED)],
                            ignore_index=True)
    inits = pd.DataFrame({"op": np.zeros(1, np.int64), "process": [FEEDER], "txn_id": [FEEDER_TXN_ID], "outcome": OK,
                          "invoke_time": np.zeros(1, np.int64), "complete_time": pd.array([1], dtype="Int64")})
    ops = pd.DataFrame({"index": pd.array([], dtype="int64"), "time": pd.array([], dtype="int64"), "process": [],
                        "type": [], "f": [], "error": []})
    groups = pd.DataFrame({"topic": pd.Series([], dtype="str"), "partition": pd.array([], dtype="int64"),
                           "offset": pd.array([], dtype="int64")})
    scans = [READ_COMMITTED, READ_UNCOMMITTED]
    meta = {"ops": out_scan_op + 2, "truncated": [], "fenced": [], "duration_ns": int(t_inv[-1] + 1000),
            "final_scans": scans, "apps": [contract], "app_scans": {APP: scans}, **extra.get("meta", {})}
    tables = store.Tables(ops, txns, writes, reads, inits, groups, keys=keys, app_outputs=app_outputs, meta=meta)
    if "payloads" in extra:
        tables.payloads = extra["payloads"]
    if app_expected is not None:
        tables.app_expected = app_expected
    return tables


def _app_output(kind: str, v_in: np.ndarray, k_in: np.ndarray, p_in: np.ndarray, key_id_in: np.ndarray,
                numbers_in: np.ndarray, value: np.ndarray, key: np.ndarray,
                ) -> tuple[pd.DataFrame, dict[str, Any], pd.DataFrame | None]:
    """The app's output records, in the order it processed its committed input (``*_in``: value, key,
    partition, key id and number of each, each input partition in offset order), its contract, and
    the runner's expect rows (a function's contract only; ``value`` and ``key``: every input the
    feeder wrote, in write order)."""
    contract: dict[str, Any] = {"app": APP, "inputs": [IN_TOPIC]}
    if kind == "aggregate":
        count, summed = _running(key_id_in, numbers_in)
        batch = _out_batches(p_in)
        out = pd.concat([_app_records(topic, p_in, k_in, (count if fn == COUNT else summed).astype(str).astype(object), batch)
                         for topic, fn in AGGREGATE_TOPICS.items()], ignore_index=True)
        contract.update(contract=AGGREGATE, outputs=list(AGGREGATE_TOPICS), aggregates=AGGREGATE_TOPICS)
        return out, contract, None
    if kind == "map":
        contract.update(contract=MAP, outputs=[OUT_TOPIC], function=IDENTITY, order=PER_KEY)
        return _app_records(OUT_TOPIC, p_in, k_in, v_in, _out_batches(p_in)), contract, None
    twice = len(FUNCTION_SUFFIXES)
    p2 = np.repeat(p_in, twice)
    out = _app_records(OUT_TOPIC, p2, np.repeat(k_in, twice), _yields(v_in), _out_batches(p2))
    expected = pd.DataFrame({"app": APP, "input": _text(np.repeat(value, twice)),
                             "seq": np.tile(np.arange(twice, dtype=np.int64), len(value)), "topic": OUT_TOPIC,
                             "key": _text(np.repeat(key, twice)), "value": _text(_yields(value)),
                             "via": _text(np.full(twice * len(value), None))})
    contract.update(contract=MAP, outputs=[OUT_TOPIC], function=FUNCTION, order=PER_KEY)
    return out, contract, expected


def _yields(values: np.ndarray) -> np.ndarray:
    """``FUNCTION``'s outputs of ``values``, in order: each value's records, one after the other."""
    return np.column_stack([np.char.add(values.astype(str), s) for s in FUNCTION_SUFFIXES]).ravel().astype(object)


#: the kinds of issue 39's contracts (``topology_output`` builds their output)
TOPOLOGY_KINDS = ("aggregate-by", "model", "windowed", "join")
BY_FUNCTION, MODEL_FUNCTION, JOIN_FUNCTION = "bench_app:words", "bench_app:counts", "bench_app:region"
COUNT_TOPIC = "app-count"


class Fed(NamedTuple):
    """What the feeder wrote (every write, in write order) and which of it the app reads: ``shown``,
    the committed writes, each partition in offset order."""

    value: np.ndarray
    key: np.ndarray
    key_id: np.ndarray
    part: np.ndarray
    txn: np.ndarray
    committed: np.ndarray
    shown: np.ndarray
    is_table: np.ndarray
    offset: np.ndarray


def _expect_rows(inputs: np.ndarray, topic: str, keys: np.ndarray, values: np.ndarray,
                 via: np.ndarray | None = None, seq: np.ndarray | None = None) -> pd.DataFrame:
    return pd.DataFrame({"app": APP, "input": _text(inputs), "seq": np.zeros(len(inputs), np.int64) if seq is None else seq,
                         "topic": topic, "key": _text(keys), "value": _text(values),
                         "via": _text(np.full(len(inputs), None) if via is None else via)})


def topology_output(kind: str, f: Fed) -> tuple[pd.DataFrame, dict[str, Any], pd.DataFrame, dict[str, Any]]:
    """The app's output, contract and expect rows of ``TOPOLOGY_KINDS`` ``kind``, and what else the
    tables hold for it (``payloads``, ``meta``)."""
    s = f.shown
    contract: dict[str, Any] = {"app": APP, "inputs": [IN_TOPIC], "outputs": [COUNT_TOPIC]}
    if kind == "aggregate-by":
        words = [np.char.add(prefix, f.key_id[s].astype(str)).astype(object) for prefix in ("a", "b")]
        count, _ = _running(f.key_id[s], np.ones(len(s), np.int64))
        out = pd.concat([_app_records(COUNT_TOPIC, f.part[s], w, count.astype(str).astype(object), _out_batches(f.part[s]))
                         for w in words], ignore_index=True)
        every = [np.char.add(prefix, f.key_id.astype(str)).astype(object) for prefix in ("a", "b")]
        expected = pd.concat([_expect_rows(f.value, COUNT_TOPIC, w, np.full(len(f.value), "1", dtype=object),
                                           seq=np.full(len(f.value), k, np.int64)) for k, w in enumerate(every)],
                             ignore_index=True)
        contract.update(contract=AGGREGATE, aggregates={COUNT_TOPIC: COUNT}, by=BY_FUNCTION)
        return out, contract, expected, {}
    if kind == "model":
        count, _ = _running(f.key_id[s], np.ones(len(s), np.int64))
        out = _app_records(COUNT_TOPIC, f.part[s], f.key[s], count.astype(str).astype(object), _out_batches(f.part[s]))
        final = pd.Series(f.key[s]).value_counts()
        expected = _expect_rows(np.full(len(final), None), COUNT_TOPIC, final.index.to_numpy(object),
                                final.to_numpy().astype(str).astype(object), seq=np.arange(len(final), dtype=np.int64))
        contract.update(contract=MODEL, function=MODEL_FUNCTION, monotone=True)
        return out, contract, expected, {"meta": {"app_model_inputs": {APP: len(s)}}}
    if kind == "windowed":
        ts = f.txn * TXN_MS
        start = (ts[s] // WINDOW_MS) * WINDOW_MS
        count, _ = _running(f.key_id[s] * (int(start.max(initial=0)) // WINDOW_MS + 1) + start // WINDOW_MS,
                            np.ones(len(s), np.int64))
        wkey = np.char.add(np.char.add(f.key[s].astype(str), "@"), start.astype(str)).astype(object)
        out = _app_records(COUNT_TOPIC, f.part[s], wkey, count.astype(str).astype(object), _out_batches(f.part[s]))
        payloads = pd.DataFrame({"value": _text(f.value), "payload": _text(f.value), "timestamp": pd.array(ts, dtype="Int64"),
                                 "headers": _text(np.full(len(f.value), None))})
        contract.update(contract=WINDOWED, aggregates={COUNT_TOPIC: COUNT}, window={"size_ms": WINDOW_MS},
                        window_key=TEXT_WINDOW)
        return out, contract, _expect_rows(np.zeros(0), COUNT_TOPIC, np.zeros(0), np.zeros(0)).iloc[:0], {"payloads": payloads}
    return _join_output(f, contract)


def _join_output(f: Fed, contract: dict[str, Any]) -> tuple[pd.DataFrame, dict[str, Any], pd.DataFrame, dict[str, Any]]:
    """Each committed stream input joined with its key's last committed table write (written before
    any stream input); the alternatives: none, and every table write of the key."""
    s = f.shown[~f.is_table[f.shown]]
    table = np.flatnonzero(f.is_table)
    last = pd.Series(f.value[table[f.committed[table]]], index=f.key[table[f.committed[table]]])
    last = last[~last.index.duplicated(keep="last")]
    region = last.reindex(f.key[s]).fillna("-").to_numpy(object)
    out = _app_records(OUT_TOPIC, f.part[s], f.key[s], np.char.add(np.char.add(f.value[s].astype(str), "@"),
                                                                   region.astype(str)).astype(object), _out_batches(f.part[s]))
    stream = np.flatnonzero(~f.is_table)
    writes = pd.DataFrame({"key": f.key[table], "via": f.value[table]})
    alts = pd.DataFrame({"input": f.value[stream], "key": f.key[stream]}).merge(writes, on="key", how="left")
    alts = pd.concat([pd.DataFrame({"input": f.value[stream], "key": f.key[stream], "via": None}),
                      alts[alts["via"].notna()]], ignore_index=True)
    vals = np.char.add(np.char.add(alts["input"].to_numpy(str), "@"), alts["via"].fillna("-").to_numpy(str)).astype(object)
    expected = _expect_rows(alts["input"].to_numpy(object), OUT_TOPIC, alts["key"].to_numpy(object), vals,
                            via=alts["via"].to_numpy(object))
    contract.update(contract=JOIN, inputs=[IN_TOPIC, TABLE_TOPIC], outputs=[OUT_TOPIC], function=JOIN_FUNCTION,
                    stream=IN_TOPIC, table=TABLE_TOPIC)
    return out, contract, expected, {}
