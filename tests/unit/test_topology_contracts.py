"""Issue 39's contracts (docs/APPS.md) on hand-written histories (tests/unit/topology_histories.py):
each failure fires its check alone and shows its kind, each clean twin is valid with every other
check silent, what cannot be judged is unknown naming why, and the runner's side (the functions in
their child process, the app's outputs enforced) gives what the checks read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.apps.functions import java_split, words
from harness.base.errors import ConfigError
from harness.checker import check
from harness.history import schema, store
from harness.phases import app_expect
from tests.unit.test_app_contracts import fired, kinds, verdict
from tests.unit.topology_histories import WORD_COUNT_VARIANTS, History, word_count


def _valid(h: History, judged: str) -> None:
    v = verdict(h)
    assert fired(v) == {} and v["valid"] is True and v["unknown_because"] == [], v["checks"]
    assert "skipped" not in v["checks"][judged] and "error" not in v["checks"][judged], v["checks"][judged]
    for op in h.ops:
        schema.validate(op)  # every line a run would write is one the loader takes


# ---- aggregate by a derived key (a word count)

def test_a_clean_word_count_is_valid() -> None:
    _valid(word_count(), "app-aggregate")


@pytest.mark.parametrize("variant", list(WORD_COUNT_VARIANTS))
def test_each_word_count_failure_fires_app_aggregate_alone_and_names_its_kinds(variant: str) -> None:
    v = verdict(word_count(variant))
    assert set(fired(v)) == {"app-aggregate"}, v["checks"]
    assert kinds(v, "app-aggregate") == WORD_COUNT_VARIANTS[variant]


def test_a_word_count_example_names_the_word_and_its_counts() -> None:
    ex = verdict(word_count("overshoot"))["checks"]["app-aggregate"]["examples"]
    assert {"kind": "overshoot", "app": "wc", "topic": "wc", "aggregate": "count", "key": "the", "expected": 2,
            "found": 3, "at": {"topic": "wc", "partition": 0, "offset": 8}} in ex
    final = next(e for e in ex if e["kind"] == "final")
    assert final["inputs"] == 2  # the two contributions of "the" (w1, w2); w3's aborted one is not counted


@pytest.mark.parametrize("variant, says", [
    ("no-expect", "no expected outputs recorded for 1 input value(s) (first 'w4')"),
    ("function-error", "returned a record for topic 'elsewhere'"),
])
def test_a_word_count_whose_contributions_are_not_all_recorded_is_unknown(variant: str, says: str) -> None:
    v = verdict(word_count(variant))
    assert v["valid"] == "unknown" and says in v["checks"]["app-aggregate"]["error"], v["checks"]["app-aggregate"]


def test_the_word_count_survives_the_parquet_store(tmp_path: Path) -> None:
    h = word_count("overshoot")
    store.save(h.tables(), tmp_path)
    assert check(store.load(tmp_path)).to_json()["checks"]["app-aggregate"] == verdict(h)["checks"]["app-aggregate"]


@pytest.mark.parametrize("line, parts", [("hello world", ["hello", "world"]), (" hello", ["", "hello"]),
                                         ("a,", ["a"]), (",", []), ("", [""]), ("it's", ["it", "s"])])
def test_words_splits_as_javas_string_split_does(line: str, parts: list[str]) -> None:
    assert java_split(line) == parts


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
    return {("wc", r["value"]): len(rs) for t, rs in inputs.items() for r in rs}

def model_twice(inputs):
    return [["wc", "k", "1"], ["wc", "k", "2"]]

def join(stream, table):
    return [{"topic": "out", "key": stream["key"], "value": stream["value"] + "@" + (table["value"] if table else "-")}]
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
