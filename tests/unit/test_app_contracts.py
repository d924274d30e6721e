"""The app's contract checks (``app-map``, ``app-aggregate``; docs/APPS.md) on hand-written histories
(tests/unit/histories.py): each failure mode fires its check alone and shows its kind, the clean
twins are valid with every other check silent on the feeder's input and the app's output, and the
history vocabulary they read (keys, the app's reads, the contract, the expected outputs) is
validated as it loads and survives the Parquet store."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from harness.base.errors import ConfigError
from harness.checker import CHECKS, NO_FINAL_READS, check, run_checks, stats
from harness.checker.contracts import NO_AGGREGATE_APP, NO_APP_SCAN, NO_MAP_APP
from harness.history import schema, store
from harness.history.model import APP_CONTRACT, EXPECT, READ_COMMITTED, READ_UNCOMMITTED, SCAN
from tests.unit.histories import APP_AGGREGATE_VARIANTS, APP_MAP_VARIANTS, History, app_aggregate, app_map, clean

APP_CHECKS = ("app-map", "app-aggregate", "app-model", "app-windowed", "app-join", "app-pipeline")


def verdict(h: History) -> dict[str, Any]:
    return check(h.tables()).to_json()


def fired(v: dict[str, Any]) -> dict[str, int]:
    return {name: c["count"] for name, c in v["checks"].items() if c["count"]}


def kinds(v: dict[str, Any], name: str) -> set[str]:
    return {e["kind"] for e in v["checks"][name]["examples"]}


# ---- the clean twins

@pytest.mark.parametrize("history, judged", [(app_map(), "app-map"), (app_map(function=True), "app-map"),
                                             (app_aggregate(), "app-aggregate")], ids=["identity", "function", "aggregate"])
def test_a_clean_app_history_is_valid_and_no_check_misjudges_the_feeder_or_the_app(history: History, judged: str) -> None:
    v = verdict(history)
    assert fired(v) == {} and v["valid"] is True and v["unknown_because"] == [], v["checks"]
    assert "skipped" not in v["checks"][judged] and "error" not in v["checks"][judged]
    # the feeder's input is judged as any txn-producer's: committed, aborted, unknown, all read
    for name in ("lost-write", "aborted-read", "duplicate", "torn-transaction", "phantom-read"):
        assert "skipped" not in v["checks"][name], (name, v["checks"][name])


def test_the_apps_output_is_kept_out_of_the_reads_the_value_checks_judge() -> None:
    """An identity app's output repeats its input's values, in another topic: read as the input is,
    ``duplicate`` would call every copied value a duplicate and ``wrong-offset``/``inconsistent-
    offsets`` see values at two positions. The app's reads are the ``app_outputs`` table instead."""
    t = app_map().tables()
    assert set(t.reads["topic"]) == {"in"} and set(t.app_outputs["topic"]) == {"out"}
    assert list(t.app_outputs.columns) == ["app", "op", "process", "source", "isolation", "topic", "partition",
                                           "offset", "value", "key"]
    # the same history with the app's reads recorded as plain reads (no ``app``): misjudged
    h = app_map()
    h.ops = [{k: v for k, v in o.items() if k != "app"} if o["f"] in ("scan", "poll") else o for o in h.ops]
    assert fired(verdict(h)).get("duplicate", 0) > 0


# ---- app-map

@pytest.mark.parametrize("function", [False, True], ids=["identity", "function"])
@pytest.mark.parametrize("variant", list(APP_MAP_VARIANTS))
def test_each_map_failure_fires_app_map_alone_and_names_its_kind(variant: str, function: bool) -> None:
    v = verdict(app_map(variant, function=function))
    assert fired(v) == {"app-map": 1}, v["checks"]
    assert kinds(v, "app-map") == {APP_MAP_VARIANTS[variant]}
    example = v["checks"]["app-map"]["examples"][0]
    assert example["app"] == "app" and example["count"] == 1
    if variant not in ("unexplained", "undeclared"):  # the input values it is about, and the op that wrote one
        assert example["inputs"] and isinstance(example["writer_op"], int)


def test_map_examples_name_the_inputs_the_expected_record_and_the_output_positions() -> None:
    ex = verdict(app_map("missing"))["checks"]["app-map"]["examples"]
    # i3's output never committed, yet the app wrote it: the read_uncommitted scan has it
    assert ex == [{"kind": "missing", "app": "app", "count": 1, "inputs": ["i3"], "writer_op": 4,
                   "record": {"topic": "out", "key": "k0", "value": "i3"}, "outputs": [], "uncommitted": True}]
    ex = verdict(app_map("duplicate"))["checks"]["app-map"]["examples"]
    assert ex[0]["outputs"] == [{"topic": "out", "partition": 0, "offset": 2}, {"topic": "out", "partition": 0, "offset": 20}]
    ex = verdict(app_map("order"))["checks"]["app-map"]["examples"]
    assert ex == [{"kind": "order", "app": "app", "count": 1, "key": "k0", "inputs": ["i7", "i3"], "writer_op": 4,
                   "input_offsets": [6, 2], "outputs": [{"topic": "out", "partition": 0, "offset": 2},
                                                        {"topic": "out", "partition": 0, "offset": 4}]}]
    ex = verdict(app_map("polled-aborted"))["checks"]["app-map"]["examples"]
    assert ex[0]["inputs"] == ["i8"] and isinstance(ex[0]["read_op"], int)  # the poll that saw it


def test_order_is_judged_only_when_the_contract_asks_for_it() -> None:
    h = app_map("order")
    contract = next(o for o in h.ops if o["f"] == APP_CONTRACT)
    contract["value"] = {**contract["value"], "order": "none"}
    assert fired(verdict(h)) == {}


def test_an_input_without_recorded_expectations_makes_the_verdict_unknown_naming_it() -> None:
    h = app_map(function=True)
    expect = next(o for o in h.ops if o["f"] == EXPECT)
    expect["value"] = {**expect["value"], "inputs": [i for i in expect["value"]["inputs"] if i[0] != "i7"]}
    v = verdict(h)
    assert v["valid"] == "unknown" and "'i7'" in v["checks"]["app-map"]["error"]


def test_a_contract_function_that_failed_in_the_run_makes_the_verdict_unknown_saying_why() -> None:
    """The runner could not apply the function (it raised): it records why, with no outputs, and the
    check cannot judge: unknown naming the function's error, from the history alone."""
    h = app_map(function=True)
    h.ops = [o for o in h.ops if o["f"] != EXPECT]
    h.ops.append({"time": 10_000, "process": "runner", "type": "ok", "f": EXPECT,
                  "value": {"app": "app", "inputs": [], "error": "contract function tests.apps:twice: raised KeyError"}})
    v = verdict(h)
    assert v["valid"] == "unknown", v["checks"]["app-map"]
    assert "gave no outputs: contract function tests.apps:twice: raised KeyError" in v["checks"]["app-map"]["error"]
    assert schema.validate(h.ops[-1]) is None


def test_a_history_error_is_said_as_one_not_as_a_crash_of_the_check() -> None:
    """A documented history error printed "check crashed: ValueError", which reads as a bug."""
    from harness.cli.summary import verdict_details
    from harness.rundir.run_verdict import RunVerdict

    h = app_map(function=True)
    expect = next(o for o in h.ops if o["f"] == EXPECT)
    expect["value"] = {**expect["value"], "inputs": [i for i in expect["value"]["inputs"] if i[0] != "i7"]}
    v = verdict(h)
    assert v["valid"] == "unknown"
    assert v["checks"]["app-map"]["error"].startswith("history error: app app: no expected outputs recorded for 1 input")
    (line,) = [d for d in verdict_details(RunVerdict.of(v)) if d.startswith("app-map")]
    assert line.startswith("app-map: history error: app app:") and "crashed" not in line and "ValueError" not in line


@pytest.mark.parametrize("line", ["expect", "app-stray"])
def test_an_apps_line_about_an_app_without_a_contract_is_a_history_error(line: str) -> None:
    """It was ignored, and the history passed for valid: nothing judged it."""
    h = app_map(function=True)
    if line == "expect":
        h.expect("ghost", [("i1", [("out", "k0", "i1:a")])])
    else:
        h.app_stray("ghost", {"audit-log": 3})
    with pytest.raises(ConfigError, match=rf"op \d+ \(runner {line}, at .* s\) is about app 'ghost', which has no "
                                          r"app-contract op; the history's apps: 'app'"):
        h.tables()


def test_two_contracts_for_one_app_are_a_history_error() -> None:
    """Both were accepted, and the identity one judged the function's outputs: a false finding."""
    h = app_map(function=True)
    h.app_contract("app", "map", ["in"], ["out"])
    with pytest.raises(ConfigError, match=r"app 'app' has two contracts, op \d+ \(runner app-contract, .*\) and op "
                                          r"\d+ \(runner app-contract, .*\): a history has one app-contract per app"):
        h.tables()


def test_order_judges_each_records_first_copy_so_a_duplicated_stale_value_is_still_out_of_order() -> None:
    """i3's output lands after i7's (newer, same key) and is then written again: judged only among
    records found exactly once, the order finding was hidden by the duplicate."""
    h = app_map()
    scan = next(o for o in h.ops if o["f"] == SCAN and o.get("app") and o.get("isolation", READ_COMMITTED) == READ_COMMITTED)
    assert {r[1] for r in scan["value"]["out-0"]} == {"i1", "i3", "i7"}  # k0's inputs, in this order
    scan["value"]["out-0"] = [[0, "i1", "k0"], [2, "i7", "k0"], [4, "i3", "k0"], [6, "i3", "k0"]]
    v = verdict(h)
    assert kinds(v, "app-map") == {"duplicate", "order"}, v["checks"]["app-map"]
    (order,) = [e for e in v["checks"]["app-map"]["examples"] if e["kind"] == "order"]
    assert order["inputs"] == ["i7", "i3"] and [o["offset"] for o in order["outputs"]] == [2, 4]


def test_an_input_yielding_nothing_is_judged_so() -> None:
    """With ``function``, i4 yields no output (an ``expect`` row of seq -1): an output of it is
    unexplained, its absence is right."""
    t = app_map(function=True).tables()
    rows = t.app_expected[t.app_expected["input"] == "i4"]
    assert rows["seq"].tolist() == [-1] and rows["topic"].isna().all()
    h = app_map(function=True)
    scan = next(o for o in h.ops if o.get("app") and o["f"] == SCAN and o["isolation"] == READ_COMMITTED)
    scan["value"]["out-1"].append([40, "i4:a", "k1"])
    v = verdict(h)
    assert fired(v) == {"app-map": 1} and kinds(v, "app-map") == {"unexplained"}


@pytest.mark.parametrize("drop", [None, 0])
def test_null_keys_and_values_are_records_like_any_other(drop: int | None, tmp_path: Path) -> None:
    """A function may yield records without key or value (a tombstone): matched as records, also
    after the Parquet store; the one that is not there is missing."""
    h = History()
    h.txn("f.0", [("in", 0, "a", 0), ("in", 0, "b", 2)], keys=[None, "k"])
    for isolation in (READ_COMMITTED, READ_UNCOMMITTED):
        h.scan({"in-0": [(0, "a"), (2, "b")]}, isolation)
    h.app_contract("app", "map", ["in"], ["out"], function="m:f", order="per-key")
    h.expect("app", [("a", [("out", None, None)]), ("b", [("out", "k", None), ("out", None, "b")])])
    out: list[tuple[int, str | None, str | None]] = [(0, None, None), (1, None, "k"), (2, "b", None)]
    h.app_scan("app", {"out-0": [r for r in out if r[0] != drop]})
    h.app_scan("app", {"out-0": out}, READ_UNCOMMITTED)
    store.save(h.tables(), tmp_path)
    for t in (h.tables(), store.load(tmp_path)):
        c = check(t).to_json()["checks"]["app-map"]
        if drop is None:
            assert c == {"count": 0, "examples": [], "by_app": {"app": 0}}
        else:
            assert c["count"] == 1 and c["examples"][0]["record"] == {"topic": "out", "key": None, "value": None}
            assert c["examples"][0]["inputs"] == ["a"] and c["examples"][0]["uncommitted"] is True


# ---- app-aggregate

@pytest.mark.parametrize("variant", list(APP_AGGREGATE_VARIANTS))
def test_each_aggregate_failure_fires_app_aggregate_alone_and_names_its_kinds(variant: str) -> None:
    v = verdict(app_aggregate(variant))
    assert set(fired(v)) == {"app-aggregate"}, v["checks"]
    assert kinds(v, "app-aggregate") == APP_AGGREGATE_VARIANTS[variant]
    assert v["checks"]["app-aggregate"]["count"] == len(APP_AGGREGATE_VARIANTS[variant])


def test_aggregate_examples_name_the_key_expected_found_and_offsets() -> None:
    ex = verdict(app_aggregate("overshoot"))["checks"]["app-aggregate"]["examples"]
    at = {"topic": "cnt", "partition": 0, "offset": 6}
    assert {"kind": "overshoot", "app": "agg", "topic": "cnt", "aggregate": "count", "key": "k0", "expected": 3,
            "found": 4, "at": at} in ex
    assert {"kind": "final", "app": "agg", "topic": "cnt", "aggregate": "count", "key": "k0", "expected": 3,
            "found": 4, "inputs": 3, "at": at} in ex
    ex = verdict(app_aggregate("back"))["checks"]["app-aggregate"]["examples"]
    assert ex == [{"kind": "back", "app": "agg", "topic": "sm", "aggregate": "sum", "key": "k0", "expected": 16,
                   "found": 5, "previous_found": 8, "at": {"topic": "sm", "partition": 0, "offset": 4},
                   "previous": {"topic": "sm", "partition": 0, "offset": 2}}]


def test_a_key_of_aborted_input_only_must_have_no_update() -> None:
    """k2's only input aborted: a count of it overshoots 0 and is a wrong last update."""
    h = app_aggregate()
    scan = next(o for o in h.ops if o.get("app") and o["f"] == SCAN and o["isolation"] == READ_COMMITTED)
    scan["value"]["cnt-0"].append([40, "1", "k2"])
    ex = verdict(h)["checks"]["app-aggregate"]["examples"]
    assert sorted((e["kind"], e["key"], e["expected"], e["found"]) for e in ex) == [
        ("final", "k2", 0, 1), ("overshoot", "k2", 0, 1)]


def test_an_input_that_is_not_an_integer_makes_the_verdict_unknown_naming_it() -> None:
    h = app_aggregate()
    h.txn("app-feeder.0", [("ain", 0, "eight", 8)], keys=["k0"])
    for scan in (o for o in h.ops if o["f"] == SCAN and not o.get("app")):
        scan["value"]["ain-0"].append([8, "eight"])
    v = verdict(h)
    assert v["valid"] == "unknown" and "'eight' is not an integer" in v["checks"]["app-aggregate"]["error"]


# ---- nothing to judge

def test_without_an_app_both_checks_say_why_they_skipped() -> None:
    checks = verdict(clean())["checks"]
    assert checks["app-map"] == {"count": 0, "examples": [], "skipped": NO_MAP_APP}
    assert checks["app-aggregate"] == {"count": 0, "examples": [], "skipped": NO_AGGREGATE_APP}
    assert verdict(app_map())["checks"]["app-aggregate"]["skipped"] == NO_AGGREGATE_APP
    assert verdict(app_aggregate())["checks"]["app-map"]["skipped"] == NO_MAP_APP


@pytest.mark.parametrize("history, name", [(app_map, "app-map"), (app_aggregate, "app-aggregate")])
def test_without_the_final_scans_of_the_output_or_the_input_there_is_nothing_to_judge(history: Any, name: str) -> None:
    h = history("final" if name == "app-aggregate" else "missing")
    h.ops = [o for o in h.ops if not (o["f"] == SCAN and o.get("app") and o["isolation"] == READ_COMMITTED)]
    assert verdict(h)["checks"][name]["skipped"] == NO_APP_SCAN
    h = history("final" if name == "app-aggregate" else "missing")
    h.ops = [o for o in h.ops if not (o["f"] == SCAN and not o.get("app") and o["isolation"] == READ_COMMITTED)]
    v = verdict(h)
    assert v["checks"][name]["skipped"] == NO_FINAL_READS and v["valid"] == "unknown"


# ---- the Spark engine

def test_the_spark_engine_skips_as_the_default_engine_and_is_unknown_where_an_app_must_be_judged() -> None:
    """The app checks are default-engine only (``spark_engine.DEFAULT_ENGINE_ONLY``): on a history
    without an app the Spark engine gives the default engine's reason (the engines' verdicts stay
    equal, tests/unit/test_spark_engine.py); with one, the check fails and the verdict is unknown,
    never valid for a history it did not look at."""
    from harness.checker import spark_engine

    assert set(spark_engine.DEFAULT_ENGINE_ONLY) == set(APP_CHECKS)
    assert list(spark_engine.CHECKS) == list(CHECKS)
    from tests.unit.topology_histories import join, model_count, windowed_count, word_count

    for h in (clean(), app_map(), app_aggregate(), word_count(), model_count(), windowed_count(), join()):
        t = h.tables()
        default = check(t).to_json()["checks"]
        fake = SimpleNamespace(meta=t.meta)
        v = run_checks({name: partial(spark_engine.CHECKS[name], fake) for name in APP_CHECKS}, partial(stats, t),
                       t.meta, engine="spark").to_json()
        for name in APP_CHECKS:
            if default[name].get("skipped"):
                assert v["checks"][name] == default[name]
            else:
                assert "default engine only" in v["checks"][name]["error"] and v["valid"] == "unknown"


# ---- the vocabulary: schema and store

def test_the_app_tables_and_meta_survive_the_parquet_store(tmp_path: Path) -> None:
    for name, h in {"map": app_map("order", function=True), "aggregate": app_aggregate("overshoot")}.items():
        t = h.tables()
        store.save(t, tmp_path / name)
        loaded = store.load(tmp_path / name)
        assert loaded.meta["apps"] == t.meta["apps"] and loaded.meta["app_scans"] == t.meta["app_scans"]
        assert len(loaded.keys) == len(t.keys) and len(loaded.app_outputs) == len(t.app_outputs)
        assert len(loaded.app_expected) == len(t.app_expected)
        for c in APP_CHECKS:
            assert check(loaded).to_json()["checks"][c] == check(h.tables()).to_json()["checks"][c], c
    assert store.LAYOUT == 5


def test_the_feeders_keys_are_one_per_value_written() -> None:
    t = app_map().tables()
    assert dict(zip(t.keys["value"], t.keys["key"])) == {
        "i1": "k0", "i2": "k1", "i3": "k0", "i4": "k1", "i5": "k0", "i6": "k1", "i7": "k0", "i8": "k1"}


TXN = {"time": 1, "process": "f.0", "type": "invoke", "f": "txn", "value": [["send", "in", 0, "a"], ["send", "in", 1, "b"]]}
APP_SCAN = {"time": 5, "process": "final", "type": "ok", "f": "scan", "isolation": "read_committed", "app": "app",
            "value": {"out-0": [[0, "a", "k"], [1, None, None]]}}
CONTRACT = {"time": 1, "process": "runner", "type": "ok", "f": "app-contract",
            "value": {"app": "app", "contract": "map", "inputs": ["in"], "outputs": ["out"]}}
EXPECT_OP = {"time": 9, "process": "runner", "type": "ok", "f": "expect",
             "value": {"app": "app", "inputs": [["a", [["out", "k", "a"]]], ["b", []]]}}


def test_the_app_lines_are_valid() -> None:
    for line in (TXN | {"keys": ["k", None]}, APP_SCAN, CONTRACT, EXPECT_OP,
                 CONTRACT | {"value": {"app": "agg", "contract": "aggregate", "inputs": ["in"], "outputs": ["c", "s"],
                                       "aggregates": {"c": "count", "s": "sum"}}}):
        schema.validate(json.loads(json.dumps(line)))


@pytest.mark.parametrize("line, field, expected", [
    (TXN | {"keys": ["k"]}, "keys", "one key per send (2)"),
    (TXN | {"keys": ["k", 3]}, "keys[1]", "a valid string"),
    (TXN | {"app": "app"}, "app", "app only on a scan or poll op"),
    ({**APP_SCAN, "value": {"out-0": [[0, "a", 7]]}}, "value.out-0[0][2]", "a valid string"),
    (CONTRACT | {"value": {**CONTRACT["value"], "contract": "reduce"}}, "value.contract", "'map', 'aggregate', 'windowed', 'model' or 'join'"),
    (CONTRACT | {"value": {**CONTRACT["value"], "outputs": ["o1", "o2"]}}, "value", "one output topic for the identity"),
    (CONTRACT | {"value": {**CONTRACT["value"], "contract": "aggregate"}}, "value", "an aggregate for one or more"),
    (CONTRACT | {"value": {**CONTRACT["value"], "contract": "aggregate", "aggregates": {"out": "avg"}}},
     "value.aggregates.out", "'count', 'sum', 'min' or 'max'"),
    (CONTRACT | {"value": {**CONTRACT["value"], "colour": "red"}}, "value.colour", "Extra inputs are not permitted"),
    (EXPECT_OP | {"value": {"app": "app", "inputs": [["a", [["out", "k"]]]]}}, "value.inputs[0][1][0][2]",
     "a value (the field is required)"),
    (EXPECT_OP | {"value": {"inputs": []}}, "value.app", "the app's name"),
])
def test_a_malformed_app_line_names_the_field_and_what_was_expected(line: dict[str, Any], field: str,
                                                                     expected: str) -> None:
    with pytest.raises(schema.BadLine) as err:
        schema.validate(json.loads(json.dumps(line)))
    assert err.value.field == field and expected in err.value.expected, (err.value.field, err.value.expected)


def test_a_malformed_app_line_in_a_run_folder_is_bad_input_with_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "history").mkdir()
    (tmp_path / "history" / "runner.jsonl").write_text(json.dumps(CONTRACT) + "\n" + json.dumps(TXN | {"keys": []}) + "\n")
    with pytest.raises(ConfigError, match=r"runner.jsonl:2: field keys: expected one key per send \(2\), found 0 keys"):
        store.read_ops(tmp_path)


def test_the_report_shows_an_app_example_with_the_write_it_names_and_the_fault_then(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The report places an example's ``writer_op`` on the clock and names the fault active then:
    what docs/APPS.md promises an app's failure shows."""
    from harness.report import write_report
    from tests.unit import test_report

    monkeypatch.setattr(test_report, "clean", lambda variant="": app_map("order"))
    words = test_report.text(write_report(test_report.make_run(tmp_path, name="app-run")).read_text())
    assert "app-map: 1" in words and "i7, i3" in words and "out-0@2, out-0@4" in words
    assert "write app-feeder.0 txn #4" in words and "fault active" in words
