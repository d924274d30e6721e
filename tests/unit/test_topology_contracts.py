"""Issue 39's contracts (docs/APPS.md) on hand-written histories (tests/unit/topology_histories.py):
each failure fires its check alone and shows its kind, each clean twin is valid with every other
check silent, what cannot be judged is unknown naming why, and the runner's side (the functions in
their child process, the app's outputs enforced) gives what the checks read."""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
import pytest

from harness.apps.functions import java_words, words
from harness.base.errors import ConfigError
from harness.checker import check, windowed_contract
from harness.history import schema, store
from harness.history.recorder import Recorder
from harness.phases import app_expect
from harness.workloads.registry import AppSettings
from tests.unit.test_app_contracts import fired, kinds, verdict
from tests.unit.topology_histories import (
    JOIN_VARIANTS,
    JSON_WINDOW_KEY,
    MODEL_VARIANTS,
    WINDOWED_VARIANTS,
    WORD_COUNT_VARIANTS,
    History,
    _feed_lines,
    join,
    model_count,
    windowed_count,
    word_count,
)


def _valid(h: History, judged: str) -> None:
    v = verdict(h)
    assert fired(v) == {} and v["valid"] is True and v["unknown_because"] == [], v["checks"]
    assert "skipped" not in v["checks"][judged] and "error" not in v["checks"][judged], v["checks"][judged]
    for op in h.ops:
        schema.validate(op)  # every line a run would write is one the loader takes


# ---- every finding kind of every check fires it alone; what cannot be judged is unknown saying why

#: (builder, its variants and kinds, the check): the windowed count in both key forms
FIRING: list[tuple[Callable[[str], History], dict[str, set[str]], str]] = [
    (word_count, WORD_COUNT_VARIANTS, "app-aggregate"), (model_count, MODEL_VARIANTS, "app-model"),
    (windowed_count, WINDOWED_VARIANTS, "app-windowed"),
    (partial(windowed_count, how="time-windowed"), WINDOWED_VARIANTS, "app-windowed"),
    (partial(windowed_count, how=JSON_WINDOW_KEY), WINDOWED_VARIANTS, "app-windowed"), (join, JOIN_VARIANTS, "app-join")]


@pytest.mark.parametrize("builder, variant, kinds_shown, name", [
    pytest.param(b, v, k, name, id=f"{name}-{v}-{i}") for i, (b, variants, name) in enumerate(FIRING) for v, k in variants.items()])
def test_each_failure_fires_its_check_alone_and_names_its_kinds(builder: Callable[[str], History], variant: str,
                                                                kinds_shown: set[str], name: str) -> None:
    v = verdict(builder(variant))
    assert set(fired(v)) == {name}, v["checks"]
    assert kinds(v, name) == kinds_shown


@pytest.mark.parametrize("builder, variant, name, says", [
    (word_count, "no-expect", "app-aggregate", "no expected outputs recorded for 1 input value(s) (first 'w4')"),
    (word_count, "function-error", "app-aggregate", "returned a record for topic 'elsewhere'"),
    (model_count, "no-table", "app-model", "no expected table recorded"),
    (model_count, "function-error", "app-model", "raised KeyError: 'value' for 3 committed inputs of lines"),
    (windowed_count, "bad-key", "app-windowed", "output key 'k1-at-0' is not a windowed key (key@start_ms)"),
    (windowed_count, "no-timestamps", "app-windowed", "no timestamp recorded for input 'c1'"),
    (partial(windowed_count, how=JSON_WINDOW_KEY), "undecoded-key", "app-windowed",
     "output key '{\"key\": \"k1\", \"start\": 0}' has no decoding by tests.unit.topology_histories:json_window_key"),
    (partial(windowed_count, how=JSON_WINDOW_KEY), "window-key-error", "app-windowed",
     "app win: its output keys were not decoded: contract function tests.unit.topology_histories:json_window_key: raised KeyError"),
    (join, "no-expect", "app-join", "no join alternatives recorded for 1 stream input(s) (first 'o4')"),
    (join, "function-error", "app-join", "raised KeyError for input"),
])
def test_a_history_a_check_cannot_judge_is_unknown_saying_why(builder: Callable[[str], History], variant: str, name: str,
                                                              says: str) -> None:
    v = verdict(builder(variant))
    assert v["valid"] == "unknown" and says in v["checks"][name]["error"], v["checks"][name]


# ---- aggregate by a derived key (a word count)

def test_a_clean_word_count_is_valid() -> None:
    _valid(word_count(), "app-aggregate")


def test_a_word_count_example_names_the_word_and_its_counts() -> None:
    ex = verdict(word_count("overshoot"))["checks"]["app-aggregate"]["examples"]
    assert {"kind": "overshoot", "app": "wc", "topic": "wc", "aggregate": "count", "key": "the", "expected": 2,
            "found": 3, "at": {"topic": "wc", "partition": 0, "offset": 8}} in ex
    final = next(e for e in ex if e["kind"] == "final")
    assert final["inputs"] == 2  # the two contributions of "the" (w1, w2); w3's aborted one is not counted


def test_the_word_count_survives_the_parquet_store(tmp_path: Path) -> None:
    h = word_count("overshoot")
    store.save(h.tables(), tmp_path)
    assert check(store.load(tmp_path)).to_json()["checks"]["app-aggregate"] == verdict(h)["checks"]["app-aggregate"]


@pytest.mark.parametrize("line, parts", [("hello world", ["hello", "world"]), (" hello", ["", "hello"]),
                                         ("a,", ["a"]), (",", []), ("", [""]), ("it's", ["it", "s"])])
def test_words_splits_as_javas_string_split_does(line: str, parts: list[str]) -> None:
    assert java_words(line) == parts


def test_words_gives_one_contribution_per_word_lower_cased() -> None:
    assert words({"value": "The cat, the"}) == [["streams-wordcount-output", w, 1] for w in ("the", "cat", "the")]
    assert words({"value": None}) == []


# ---- the runner's side: the functions in their child, the app's outputs enforced

FUNCTIONS = '''
def by_word(record):
    return [["wc", w, 1] for w in record["value"].split()]

def by_dict(record):
    return [{"topic": "wc", "key": record["value"], "amount": 2}]

def elsewhere(record):
    return [["audit", record["value"], 1]]

def bad_amount(record):
    return [["wc", "x", "1"]]

def model(inputs):
    table = {}
    for records in inputs.values():
        for r in records:
            table[("wc", r["value"])] = table.get(("wc", r["value"]), 0) + 1
    return table

def model_twice(inputs):
    return [["wc", "k", "1"], ["wc", "k", "2"]]

def join(stream, table):
    return [{"topic": "out", "key": stream["key"], "value": stream["value"] + "@" + (table["value"] if table else "-")}]

def window_of_bytes(key):
    # the key as the app wrote it: a tag byte, the key, '|', the window's start in decimal
    word, _, start = key[1:].decode().partition("|")
    return (word, int(start))

def window_bad(key):
    return {"key": key}
'''
RECORD = {"topic": "lines", "partition": 0, "offset": 3, "key": None, "value": "the cat", "timestamp": 5, "headers": {}}


def test_a_by_function_gives_contributions_as_lists_or_dicts(tmp_path: Path) -> None:
    (tmp_path / "fns.py").write_text(FUNCTIONS)
    assert app_expect.apply_function("fns:by_word", [RECORD], tmp_path, "by", ["wc"]) == [[["wc", "the", 1], ["wc", "cat", 1]]]
    assert app_expect.apply_function("fns:by_dict", [RECORD], tmp_path, "by", ["wc"]) == [[["wc", "the cat", 2]]]


def test_a_model_and_a_join_are_applied_in_the_child(tmp_path: Path) -> None:
    (tmp_path / "fns.py").write_text(FUNCTIONS)
    table = app_expect.apply_function("fns:model", [{"lines": [RECORD, RECORD]}], tmp_path, "model", ["wc"])
    assert table == [[["wc", "the cat", "2"]]]
    out = app_expect.apply_function("fns:join", [[RECORD, None], [RECORD, {**RECORD, "value": "EU"}]], tmp_path, "join", ["out"])
    assert out == [[{"topic": "out", "key": None, "value": "the cat@-"}], [{"topic": "out", "key": None, "value": "the cat@EU"}]]


@pytest.mark.parametrize("function, mode, says", [
    ("fns:elsewhere", "by", "returned a record for topic 'audit', not one of the app's outputs (wc), for input {'topic': "
                            "'lines'"),
    ("fns:bad_amount", "by", "each contribution is [topic: str, key: str or None, amount: int]"),
    ("fns:model_twice", "model", "returned two rows for topic 'wc' key 'k' for 1 committed inputs of lines"),
])
def test_a_function_that_names_another_topic_or_misbehaves_is_its_error_naming_the_input(
        tmp_path: Path, function: str, mode: str, says: str) -> None:
    """Its outputs on a topic the app does not write were thousands of app-map counts; now the
    function's error (exit 2 at preflight, unknown after a run), naming the input."""
    (tmp_path / "fns.py").write_text(FUNCTIONS)
    item: Any = {"lines": [RECORD]} if mode == "model" else RECORD
    with pytest.raises(ConfigError, match=f"contract function {function}: ") as e:
        app_expect.apply_function(function, [item], tmp_path, mode, ["wc"])
    assert says in str(e.value), str(e.value)


def test_a_map_function_naming_a_topic_the_app_does_not_write_is_its_error(tmp_path: Path) -> None:
    (tmp_path / "fns.py").write_text(FUNCTIONS)
    with pytest.raises(ConfigError, match="returned a record for topic 'out', not one of the app's outputs \\(app-out\\)"):
        app_expect.apply_function("fns:join", [[RECORD, None]], tmp_path, "join", ["app-out"])


# ---- model

def test_a_clean_model_history_is_valid_monotone_or_not() -> None:
    _valid(model_count(), "app-model")
    _valid(model_count(monotone=False), "app-model")


def test_an_update_going_back_is_a_finding_only_for_a_monotone_model() -> None:
    assert fired(verdict(model_count("back", monotone=False))) == {}


def test_model_examples_name_the_key_the_values_and_where() -> None:
    ex = verdict(model_count("final"))["checks"]["app-model"]["examples"]
    assert ex == [{"kind": "final", "app": "wc", "topic": "wc", "key": "cat", "expected": "2", "found": "3",
                   "at": {"topic": "wc", "partition": 0, "offset": 6}}]
    ex = verdict(model_count("missing"))["checks"]["app-model"]["examples"]
    assert ex == [{"kind": "missing", "app": "wc", "topic": "wc", "key": "dog", "expected": "1", "found": None, "at": None}]


def test_the_model_table_survives_the_parquet_store(tmp_path: Path) -> None:
    h = model_count("extra")
    store.save(h.tables(), tmp_path)
    loaded = store.load(tmp_path)
    assert loaded.meta["app_model_inputs"] == {"wc": 3}
    assert check(loaded).to_json()["checks"]["app-model"] == verdict(h)["checks"]["app-model"]


def _run_dir(tmp_path: Path, contract: dict[str, Any], inputs: list[str]) -> tuple[AppSettings, Path]:
    """A run folder with the feeder's history (the lines of ``_feed_lines``, run topic names
    ``NAME.r``) and the runner's final scans of the input topics, and the app's settings."""
    h = History()
    _feed_lines(h)
    (tmp_path / "history").mkdir()
    feeder = [o | {"value": [[s[0], f"{s[1]}.r", *s[2:]] for s in o["value"]]} for o in h.ops if o["f"] == "txn"]
    scans = [o | {"value": {k.replace("lines-", "lines.r-"): v for k, v in o["value"].items()}}
             for o in h.ops if o["f"] == "scan"]
    (tmp_path / "history" / "app-feeder.jsonl").write_bytes(b"".join(orjson.dumps(o) + b"\n" for o in feeder))
    (tmp_path / "history" / "runner.jsonl").write_bytes(b"".join(orjson.dumps(o) + b"\n" for o in scans))
    (tmp_path / "fns.py").write_text(FUNCTIONS)
    s = AppSettings.model_validate({"command": ["x"], "inputs": inputs, "outputs": ["wc.r"], "ready": {"log": "x"},
                                    "contract": contract})
    return s, tmp_path


def _expect_ops(run_dir: Path) -> list[dict[str, Any]]:
    lines = (run_dir / "history" / "runner.jsonl").read_bytes().splitlines()
    return [orjson.loads(x)["value"] for x in lines if b'"expect"' in x]


def test_the_runner_records_a_by_functions_contributions_per_input(tmp_path: Path) -> None:
    s, run_dir = _run_dir(tmp_path, {"kind": "aggregate", "aggregates": {"wc.r": "count"}, "by": "fns:by_word"},
                          ["lines.r"])
    with Recorder(run_dir, "runner") as rec:
        assert app_expect.record(run_dir, s, rec, {"lines": "lines.r", "wc": "wc.r"}, tmp_path) == 4
    (op,) = _expect_ops(run_dir)
    assert op["inputs"][0] == ["w1", [["wc.r", "the", 1], ["wc.r", "cat", 1]]] and len(op["inputs"]) == 4


def test_the_runner_records_each_output_keys_decoding_by_the_window_key_function(tmp_path: Path) -> None:
    """A windowed contract's ``window_key`` function of the user's: after the run, the runner gives it
    each distinct key the final scans read (bytes, as the app wrote them: the bytes serde, a
    windowed contract's default) and records ``[key as recorded, key, start]`` for the checker."""
    s, run_dir = _run_dir(tmp_path, {"kind": "windowed", "aggregates": {"wc.r": "count"}, "window": {"size_ms": 10},
                                     "window_key": "fns:window_of_bytes"}, ["lines.r"])
    assert s.contract.output_serde.key == "bytes"
    k0, k1 = (base64.b64encode(b"\x01" + k).decode() for k in (b"the|0", b"cat|10"))
    scan = {"time": 9, "process": "runner", "type": "ok", "f": "scan", "app": s.name,
            "value": {"wc.r-0": [[0, "1", k0], [1, "1", k1], [2, "2", k0]]}}
    with (run_dir / "history" / "runner.jsonl").open("ab") as f:
        f.write(orjson.dumps(scan) + b"\n")
    with Recorder(run_dir, "runner") as rec:
        assert app_expect.record(run_dir, s, rec, {"lines": "lines.r", "wc": "wc.r"}, tmp_path) is None
    (op,) = _expect_ops(run_dir)
    assert op == {"app": s.name, "window_keys": [[k0, "the", 0], [k1, "cat", 10]]}
    schema.validate({"time": 10, "process": "runner", "type": "ok", "f": "expect", "value": op})


def test_a_window_key_function_that_returns_no_key_and_start_is_its_error_naming_the_key(tmp_path: Path) -> None:
    (tmp_path / "fns.py").write_text(FUNCTIONS)
    assert app_expect.apply_function("fns:window_of_bytes", [[base64.b64encode(b"\x01a|5").decode(), "bytes"]],
                                     tmp_path, "window-key") == [["a", 5]]
    says = r"returned {'key': b'\x01a|5'} for key b'\x01a|5'; a window_key function returns [key: str, window start: int ms]"
    with pytest.raises(ConfigError, match=re.escape(says)):
        app_expect.apply_function("fns:window_bad", [[base64.b64encode(b"\x01a|5").decode(), "bytes"]], tmp_path,
                                  "window-key")


@pytest.mark.parametrize("how, says", [
    ("time-windowed", None), ("text", None), ("fns:window_of_bytes", None),
    ("windowed", "'windowed' is not a form of windowed key; allowed: time-windowed, text, or a module:function"),
    ("fns.window", "'fns.window' is not a form of windowed key"),
])
def test_window_key_takes_the_two_forms_or_a_function_and_names_what_is_allowed(how: str, says: str | None) -> None:
    contract = {"kind": "windowed", "aggregates": {"out": "count"}, "window": {"size_ms": 10}, "window_key": how}
    settings = {"command": ["x"], "inputs": ["in"], "outputs": ["out"], "ready": {"log": "x"}, "contract": contract}
    if says is None:
        assert AppSettings.model_validate(settings).contract.window_key == how
    else:
        with pytest.raises(ValueError, match=re.escape(says)):
            AppSettings.model_validate(settings)


def test_the_runner_applies_the_model_to_exactly_the_committed_inputs_in_offset_order(tmp_path: Path) -> None:
    s, run_dir = _run_dir(tmp_path, {"kind": "model", "function": "fns:model"}, ["lines.r"])
    with Recorder(run_dir, "runner") as rec:
        assert app_expect.record(run_dir, s, rec, {"lines": "lines.r", "wc": "wc.r"}, tmp_path) == 3
    (op,) = _expect_ops(run_dir)
    # w3 (aborted) is not in the final read_committed scan: the model never sees it
    assert op == {"app": "app", "table": [["wc.r", "the cat", "1"], ["wc.r", "a cat", "1"], ["wc.r", "the dog", "1"]],
                  "inputs": 3}


# ---- windowed

@pytest.mark.parametrize("how", ["text", "time-windowed", JSON_WINDOW_KEY])
@pytest.mark.parametrize("variant", ["", "restarted", "late-counted-restarted"])
def test_a_clean_windowed_count_is_valid(variant: str, how: str) -> None:
    """A late record counted after the instance started again is within what Streams promises: a
    task created anew starts its stream time over."""
    _valid(windowed_count(variant, how), "app-windowed")


def test_windowed_examples_name_the_key_the_window_and_the_bounds() -> None:
    ex = verdict(windowed_count("late-counted"))["checks"]["app-windowed"]["examples"]
    assert ex == [{"kind": "late-counted", "app": "win", "topic": "wcount", "aggregate": "count", "key": "k0",
                   "window_start": 0, "expected": 2, "may_be": [2, 3], "found": 3,
                   "at": {"topic": "wcount", "partition": 0, "offset": 8}}]


@pytest.mark.parametrize("size, advance, ts, starts", [(10, 10, 25, [20]), (10, 5, 25, [20, 25]), (10, 5, 3, [0]),
                                                       (10, 3, 10, [3, 6, 9])])
def test_a_record_falls_in_the_windows_streams_gives_it(size: int, advance: int, ts: int, starts: list[int]) -> None:
    """TimeWindows.windowsFor: starts from max(0, ts - size + advance) rounded down to the advance."""
    frame = pd.DataFrame({"ts": [ts], "stream_time": [ts]})
    assert list(windowed_contract._windows(frame, size, advance, 0)["start"]) == starts


# ---- stream-table join

@pytest.mark.parametrize("variant", ["", "contended-clean"])
def test_a_clean_join_is_valid(variant: str) -> None:
    """``contended-clean``: two stream inputs' first picks share one record found once; taken in
    offset order, the second is joined with its table value instead."""
    _valid(join(variant), "app-join")


def test_join_examples_name_the_stream_input_and_the_table_write() -> None:
    ex = verdict(join("aborted-table"))["checks"]["app-join"]["examples"]
    assert ex == [{"kind": "aborted-table", "app": "join", "count": 1, "inputs": ["o1"], "via": ["r2"],
                   "record": {"topic": "enriched", "key": "c1", "value": "o1@US"},
                   "outputs": [{"topic": "enriched", "partition": 0, "offset": 6}]}]
    ex = verdict(join("missing"))["checks"]["app-join"]["examples"]
    assert ex[0]["kind"] == "missing" and ex[0]["inputs"] == ["o4"] and isinstance(ex[0]["writer_op"], int)


def test_the_runner_records_one_alternative_per_table_write_of_the_key_and_none(tmp_path: Path) -> None:
    h = join()
    (tmp_path / "history").mkdir()
    (tmp_path / "history" / "app-feeder.jsonl").write_bytes(b"".join(orjson.dumps(o) + b"\n" for o in h.ops
                                                                      if o["f"] == "txn"))
    (tmp_path / "fns.py").write_text(FUNCTIONS)
    s = AppSettings.model_validate({"command": ["x"], "inputs": ["orders", "regions"], "outputs": ["out"],
                                    "ready": {"log": "x"}, "contract": {"kind": "join", "function": "fns:join",
                                                                       "stream": "orders", "table": "regions"}})
    with Recorder(tmp_path, "runner") as rec:
        assert app_expect.record(tmp_path, s, rec, {}, tmp_path) == 4
    (op,) = _expect_ops(tmp_path)
    assert op["join"][:3] == [["o1", None, [["out", "c1", "o1@-"]]], ["o1", "r1", [["out", "c1", "o1@EU"]]],
                              ["o1", "r2", [["out", "c1", "o1@US"]]]]
    assert len(op["join"]) == 10  # o1, o3: 3 alternatives each; o2, o4: 2 each


@pytest.mark.parametrize("history, says", [
    (word_count(), "aggregate: wc count, by harness.apps.functions:words"),
    (model_count(), "model, function tests.models:count_words, monotone"),
    (windowed_count(), "windowed: wcount count, window 10 ms every 10 ms, grace 5 ms, keys text"),
    (join(), "join of stream orders with table regions, function tests.joins:region"),
])
def test_the_report_says_each_contract_and_history_txt_counts_its_inputs(history: History, says: str,
                                                                        tmp_path: Path) -> None:
    from harness.history.text import write_history_text
    from harness.report.app_section import contract_says

    t = history.tables()
    assert contract_says(schema.contracts(t.meta)[0]) == says
    write_history_text(tmp_path, t)
    text = "\n".join(p.read_text() for p in tmp_path.rglob("*.txt"))
    inputs = {"aggregate": 4, "model": None, "windowed": None, "join": 4}[schema.contracts(t.meta)[0].contract]
    if inputs is not None:
        assert f": {inputs} inputs" in text, text[-2000:]
