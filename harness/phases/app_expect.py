"""An app contract's user functions applied by the runner after the run (docs/APPS.md, "Where a
contract's function runs"), in a child process (harness/workloads/app_function.py), their results
recorded as ``expect`` ops for the checker to compare with the app's output: it never runs user code.

- ``map`` with a function: per input the feeder wrote, its outputs;
- ``aggregate`` / ``windowed`` with ``by``: per input, its contributions ``[topic, key, amount]``;
- ``model``: once, after the final scans, on exactly the committed inputs (the final read_committed
  scan of the input topics, each partition in offset order): the expected final table;
- ``join``: per stream input, one alternative per table write of its key (committed or not: the
  checker decides which count) and one for "no table value yet";
- ``windowed`` with a ``window_key`` function: per output key the final scans read, its key and
  window start.

Every function is given input records ``{"topic", "partition", "offset", "key", "value", "timestamp",
"headers"}`` (the scenario's topic names) and must name only the app's output topics: anything else is
the function's error (exit 2 here; after a run, the check's unknown), never thousands of findings.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from harness.base.errors import ConfigError
from harness.history.app_values import content_id
from harness.history.model import APP, APP_FEEDER, EXPECT, INVOKE, OK, READ_COMMITTED, SCAN, TEXT, TXN, split_tp
from harness.history.recorder import HISTORY_DIR, Recorder
from harness.history.schema import window_key_function
from harness.workloads.app_function import FORMAT_FIELD
from harness.workloads.registry import AppSettings

#: Applying a contract's function to every input of a run (thousands): seconds; generous.
FUNCTION_TIMEOUT_S = 300.0
#: Inputs per ``expect`` op: keeps one history line reasonable.
EXPECT_CHUNK = 1000
#: an input as the runner read it from the feeder's history: its value (the id the checks know it by)
#: and the record a contract's function is given
Input = tuple[str, dict[str, Any]]
#: an output record as the checks compare them: topic (as the run names it), key, value
Output = tuple[str, Any, Any]


def _lines(path: Path) -> Iterator[dict[str, Any]]:
    with path.open("rb") as f:
        for line in f:
            try:
                yield orjson.loads(line)
            except orjson.JSONDecodeError:
                continue  # a line a kill cut off: the loader drops it too


def feeder_inputs(run_dir: Path, s: AppSettings) -> list[Input]:
    """Every record the feeder tried to write to the app's inputs (committed, aborted or unknown: the
    checker decides which count), from its history files, with the record a function takes (run
    topic names; ``offset`` as acknowledged, else None; ``value`` the payload when the feeder
    recorded one, else the written value)."""
    seen: list[Input] = []
    pending: dict[str, list[int]] = {}  # process -> the rows of its open transaction
    for path in sorted((run_dir / HISTORY_DIR).glob(f"{APP_FEEDER}.*jsonl")):
        for op in _lines(path):
            if op.get("f") != TXN:
                continue
            sends = op.get("value") or []
            if op.get("type") != INVOKE:
                rows = pending.pop(str(op.get("process")), [])
                if op.get("type") == OK:
                    for row, send in zip(rows, sends):
                        if row >= 0 and len(send) > 4:
                            seen[row][1]["offset"] = send[4]
                continue
            keys = op.get("keys") or [None] * len(sends)
            records = op.get("records") or [None] * len(sends)
            rows = []
            for (_, topic, partition, value), key, r in zip(sends, keys, records):
                if topic not in s.inputs:
                    rows.append(-1)
                    continue
                rows.append(len(seen))
                fmt = s.feeder.source(topic).format  # the child decodes key and value as the app read them
                seen.append((value, {"topic": topic, "partition": partition, "offset": None, "key": key,
                                     **({FORMAT_FIELD: fmt} if fmt != TEXT else {}),
                                     "value": r[0] if r else value, "timestamp": r[1] if r else None,
                                     "headers": dict(r[2] or []) if r else {}}))
            pending[str(op.get("process"))] = rows
    return seen


def apply_function(function: str, items: list[Any], cwd: Path, mode: str = "map",
                   outputs: list[str] | None = None) -> list[Any]:
    """``function`` (``module:function``) applied to each item (``model``: to the one item), in a
    child process (``cwd`` first on its import path) with a deadline: one result per item.
    ``ConfigError`` naming the function and the input when it cannot be imported, raises, returns
    the wrong shape, or names a topic not among ``outputs``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(cwd), *filter(None, [os.environ.get("PYTHONPATH")])])}
    payload = b"".join(orjson.dumps(r) + b"\n" for r in items)
    cmd = [sys.executable, "-m", "harness.workloads.app_function", "--mode", mode,
           *(["--outputs", ",".join(outputs)] if outputs is not None else []), function]
    try:
        done = subprocess.run(cmd, input=payload, capture_output=True, cwd=cwd, env=env, timeout=FUNCTION_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise ConfigError(f"contract function {function}: no answer within {FUNCTION_TIMEOUT_S:.0f}s for "
                          f"{len(items)} inputs (it must be quick and pure)") from None
    if done.returncode != 0:
        err = done.stderr.decode(errors="replace").strip().splitlines()
        raise ConfigError(f"contract function {function}: {err[-1] if err else f'exit {done.returncode}'}")
    results = [orjson.loads(line) for line in done.stdout.splitlines()]
    if len(results) != len(items):
        raise ConfigError(f"contract function {function}: {len(results)} answers for {len(items)} inputs")
    return results


def piped_inputs(run_dir: Path, s: AppSettings, upstream: list[Output]) -> list[Input]:
    """A pipeline's later stage's inputs (docs/APPS.md, "Pipelines"), each content once, known by its
    ``content_id``: the records of its upstream app's final scans (read_committed and
    read_uncommitted: which count is the checker's decision) in its input topics, then
    ``upstream``, what the upstream app's contract makes of its own inputs (the end-to-end judgement
    applies this stage's contract to those)."""
    seen: dict[str, dict[str, Any]] = {}

    def add(topic: str, partition: int | None, offset: int | None, key: Any, value: Any) -> None:
        cid = content_id(topic, key, value)
        if cid not in seen:
            seen[cid] = {"topic": topic, "partition": partition, "offset": offset, "key": key, "value": value,
                         "timestamp": None, "headers": {}}

    for tp, recs in scanned(run_dir, s.upstream):
        topic, partition = split_tp(tp)
        if topic in s.inputs:
            for r in recs:
                add(topic, partition, int(r[0]), r[2] if len(r) > 2 else None, r[1])
    for topic, key, value in upstream:
        if topic in s.inputs:
            add(topic, None, None, key, value)
    return list(seen.items())


def identity_outputs(items: list[Input], topic: str) -> list[Output]:
    """What an identity copy to ``topic`` makes of ``items``: each one's key and value."""
    return [(topic, r.get("key"), r.get("value")) for _, r in items]


def _events(rec: Recorder, rows: list[Any], field: str, app: str = APP) -> None:
    for i in range(0, len(rows), EXPECT_CHUNK):
        rec.event("runner", EXPECT, {"app": app, field: rows[i:i + EXPECT_CHUNK]}, type_="ok")


def record(run_dir: Path, s: AppSettings, rec: Recorder, to_run: dict[str, str], cwd: Path,
           upstream: list[Output] | None = None, made: list[Output] | None = None) -> int | None:
    """The ``expect`` ops of the app's contract (None: it names no function of the user's), topics
    as the run names them. How many inputs the function was applied to. A pipeline's later stage
    reads its upstream app's output and what ``upstream`` says that app's contract makes
    (``piped_inputs``); a map's outputs go to ``made``, for the stage after it. A windowed
    contract's ``window_key`` function decodes each output key the final scans read
    (``record_window_keys``)."""
    n = _record_outputs(run_dir, s, rec, to_run, cwd, upstream, made)
    record_window_keys(run_dir, s, rec, cwd)
    return n


def scanned(run_dir: Path, app: str | None) -> Iterator[tuple[str, list[list[Any]]]]:
    """Each topic-partition of the app's output and the records its final scans read there
    (read_committed and read_uncommitted, in the order of the runner's history): ``[offset, value,
    key]`` each, the key left out when the record has none."""
    for path in sorted((run_dir / HISTORY_DIR).glob("runner*.jsonl")):
        for op in _lines(path):
            if op.get("f") == SCAN and op.get("app") == app:
                yield from (op.get("value") or {}).items()


def scanned_keys(run_dir: Path, app: str) -> list[str]:
    """Each distinct key (as the history writes it) of the app's output records its final scans
    read, read_committed and read_uncommitted, in the order first read."""
    keys: dict[str, None] = {}
    for _, recs in scanned(run_dir, app):
        keys.update((str(r[2]), None) for r in recs if len(r) > 2 and r[2] is not None)
    return list(keys)


def record_window_keys(run_dir: Path, s: AppSettings, rec: Recorder, cwd: Path) -> int:
    """A windowed contract whose ``window_key`` is a function of the user's: the function applied to
    each output key the final scans read (in a child process, as the app wrote the key), each one's
    ``[key as recorded, key, window start]`` recorded as ``expect`` ops for the checker. How many
    keys; 0 for any other contract."""
    fn = window_key_function(s.contract.window_key) if s.contract.kind == "windowed" else None
    if fn is None:
        return 0
    keys = scanned_keys(run_dir, s.name)
    serde = s.contract.output_serde.key
    decoded = apply_function(fn, [[k, serde] for k in keys], cwd, "window-key")
    _events(rec, [[k, key, start] for k, (key, start) in zip(keys, decoded)], "window_keys", s.name)
    return len(keys)


def _record_outputs(run_dir: Path, s: AppSettings, rec: Recorder, to_run: dict[str, str], cwd: Path,
                    upstream: list[Output] | None, made: list[Output] | None) -> int | None:
    c = s.contract
    to_scenario = {run: name for name, run in to_run.items()}

    def named(item: Input) -> dict[str, Any]:
        return {**item[1], "topic": to_scenario.get(item[1]["topic"], item[1]["topic"])}

    def run_name(topic: str) -> str:
        return to_run.get(topic, topic)

    def scenario_names(topics: list[str]) -> list[str]:
        return [to_scenario.get(t, t) for t in topics]

    if c.kind == "model":
        return _record_model(run_dir, s, rec, cwd, named, run_name, scenario_names(list(s.outputs)))
    if c.kind == "join":
        return _record_join(run_dir, s, rec, cwd, named, run_name, scenario_names(list(s.outputs)))
    by = c.by if c.kind in ("aggregate", "windowed") else None
    inputs = feeder_inputs(run_dir, s) if s.fed() else piped_inputs(run_dir, s, upstream or [])
    if by is None and (c.kind != "map" or c.function == "identity"):
        if made is not None and c.kind == "map":
            made += identity_outputs(inputs, s.outputs[0])
        return None
    if by is not None:
        outs = apply_function(by, [named(i) for i in inputs], cwd, "by", scenario_names(list(c.aggregates)))
        pairs = [[i[0], [[run_name(t), k, a] for t, k, a in out]] for i, out in zip(inputs, outs)]
    else:
        outs = apply_function(c.function, [named(i) for i in inputs], cwd, "map", scenario_names(list(s.outputs)))
        pairs = [[i[0], [[run_name(o["topic"]), o.get("key"), o.get("value")] for o in out]] for i, out in zip(inputs, outs)]
        if made is not None:
            made += [(t, k, v) for _, out in pairs for t, k, v in out]
    _events(rec, pairs, "inputs", s.name)
    return len(pairs)


def committed_scan(run_dir: Path, topics: list[str]) -> list[tuple[str, int, int, str]]:
    """The final read_committed scan of ``topics`` (the runner's, of the scenario's topics): (topic,
    partition, offset, value), by topic as listed, then partition, then offset."""
    found: list[tuple[str, int, int, str]] = []
    for path in sorted((run_dir / HISTORY_DIR).glob("runner*.jsonl")):
        for op in _lines(path):
            if op.get("f") == SCAN and op.get("isolation") == READ_COMMITTED and op.get("app") is None:
                for tp, recs in (op.get("value") or {}).items():
                    topic, partition = split_tp(tp)
                    if topic in topics:
                        found += [(topic, partition, int(r[0]), str(r[1])) for r in recs]
    order = {t: i for i, t in enumerate(topics)}
    return sorted(found, key=lambda r: (order[r[0]], r[1], r[2]))


def _record_model(run_dir: Path, s: AppSettings, rec: Recorder, cwd: Path, named: Any, run_name: Any,
                  outputs: list[str]) -> int:
    """The model applied once to the committed inputs (each topic's records by partition, then
    offset), its table recorded as one ``expect`` op with how many inputs it was given."""
    by_id = dict(feeder_inputs(run_dir, s))
    inputs: dict[str, list[dict[str, Any]]] = {}
    n = 0
    for topic, partition, offset, value in committed_scan(run_dir, list(s.inputs)):
        r = by_id.get(value)
        record = {**r, "partition": partition, "offset": offset} if r is not None else {
            "topic": topic, "partition": partition, "offset": offset, "key": None, "value": value, "timestamp": None,
            "headers": {}}
        item = named(("", record))
        inputs.setdefault(item["topic"], []).append(item)
        n += 1
    table = apply_function(s.contract.function, [inputs], cwd, "model", outputs)[0]
    rec.event("runner", EXPECT, {"app": s.name, "table": [[run_name(t), k, v] for t, k, v in table], "inputs": n},
              type_="ok")
    return n


def _record_join(run_dir: Path, s: AppSettings, rec: Recorder, cwd: Path, named: Any, run_name: Any,
                 outputs: list[str]) -> int:
    """Per stream input, the outputs of each alternative: joined with each table write of its key
    (in the order written), and with none."""
    c = s.contract
    inputs = feeder_inputs(run_dir, s)
    table: dict[Any, list[Input]] = defaultdict(list)
    for item in inputs:
        if item[1]["topic"] == c.table:
            table[item[1]["key"]].append(item)
    pairs: list[tuple[str, str | None]] = []
    items: list[list[Any]] = []
    for sid, srec in (i for i in inputs if i[1]["topic"] == c.stream):
        for via in [None, *table.get(srec["key"], [])]:
            pairs.append((sid, None if via is None else via[0]))
            items.append([named((sid, srec)), None if via is None else named(via)])
    outs = apply_function(c.function, items, cwd, "join", outputs)
    rows = [[sid, via, [[run_name(o["topic"]), o.get("key"), o.get("value")] for o in out]]
            for (sid, via), out in zip(pairs, outs)]
    _events(rec, rows, "join", s.name)
    return sum(1 for i in inputs if i[1]["topic"] == c.stream)
