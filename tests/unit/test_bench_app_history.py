"""``bench checker --app``'s synthetic app histories (harness/bench/app_history.py): valid as built,
judged by their contract check (not skipped past), and a finding planted in one is found, so the
benchmark times the check's real path; its refusals are exit 2 before anything is built."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.bench import checker as bench_checker
from harness.bench.app_history import APP_KINDS, KEYS, app_synthetic
from harness.checker import check
from harness.history import store
from harness.history.model import READ_COMMITTED, SCAN
from tests.unit.test_cli import _restore_logging, cli  # noqa: F401 - the fixture puts the loggers back

N = 1000
CONTRACT_CHECK = {"map": "app-map", "map-function": "app-map", "aggregate": "app-aggregate",
                  "aggregate-by": "app-aggregate", "model": "app-model", "windowed": "app-windowed", "join": "app-join"}


def _saved_and_loaded(t: store.Tables, folder: Path) -> store.Tables:
    store.save(t, folder)
    return store.load(folder)


def _fired(t: store.Tables) -> dict[str, int]:
    return {name: c.count or 0 for name, c in check(t).checks.items() if c.count or c.error}


@pytest.mark.parametrize("kind", APP_KINDS)
def test_the_synthetic_app_history_is_valid_and_judged_by_its_contract_check(kind: str, tmp_path: Path) -> None:
    t = _saved_and_loaded(app_synthetic(N, kind), tmp_path)
    v = check(t)
    judged = v.checks[CONTRACT_CHECK[kind]]
    assert v.valid is True and judged.count == 0 and judged.skipped is None, v.to_json()["checks"]
    # the feeder's input is judged as any txn-producer's: a fifth of its transactions aborted
    assert v.stats["written_values"] == N and v.stats["committed_values"] == N * 4 // 5
    assert v.stats["txn"] == {"ok": 80, "fail": 20, "info": 0}
    assert t.keys["key"].nunique() > KEYS * 0.6  # keyed (1000 keys drawn for 1000 values)
    final = t.app_outputs[(t.app_outputs["source"] == SCAN) & (t.app_outputs["isolation"] == READ_COMMITTED)]
    # records, or updates of count and sum, or of two words; a join's table inputs (the first 50 transactions,
    # 40 of them committed) yield none
    per_input = {"map": 1, "map-function": 2, "aggregate": 2, "aggregate-by": 2}.get(kind, 1)
    assert len(final) == per_input * N * 4 // 5 - (400 if kind == "join" else 0)
    expected = {"map-function": 2 * N, "aggregate-by": 2 * N, "model": len(final.drop_duplicates("key"))}
    if kind != "join":  # a join's: per stream input, none and each table write of its key
        assert len(t.app_expected) == expected.get(kind, 0)  # for every input, aborted too


def _plant(t: store.Tables, counted_twice: bool = False) -> store.Tables:
    """One record of the final read_committed scan written a second time, after everything else
    in its partition (an input processed twice, its second output committed); ``counted_twice``:
    the last update of a key's running count, one higher (an input counted twice)."""
    o = t.app_outputs
    final = np.flatnonzero(((o["source"] == SCAN) & (o["isolation"] == READ_COMMITTED)).to_numpy(bool))
    row = o.iloc[[final[len(final) // 2]]].copy()
    if counted_twice:
        last = o.iloc[final].drop_duplicates(["topic", "key"], keep="last")
        row = last[last["topic"] == "app-count"].iloc[[0]].copy()
        row["value"] = str(int(row["value"].iloc[0]) + 1)
    row["offset"] = o["offset"].max() + 1
    t.app_outputs = pd.concat([o, row], ignore_index=True)
    return t


@pytest.mark.parametrize("kind", ["map", "map-function"])
def test_a_duplicate_planted_in_the_output_is_found_by_app_map_alone(kind: str, tmp_path: Path) -> None:
    t = _saved_and_loaded(_plant(app_synthetic(N, kind)), tmp_path)
    v = check(t)
    assert _fired(t) == {"app-map": 1}
    assert [e["kind"] for e in v.checks["app-map"].examples] == ["duplicate"]


def test_an_input_planted_as_counted_twice_in_the_aggregate_output_is_found(tmp_path: Path) -> None:
    t = _saved_and_loaded(_plant(app_synthetic(N, "aggregate"), counted_twice=True), tmp_path)
    assert _fired(t) == {"app-aggregate": 2}
    assert {e["kind"] for e in check(t).checks["app-aggregate"].examples} == {"overshoot", "final"}


def test_the_bench_measures_the_contract_check_and_refuses_a_history_with_findings(tmp_path: Path) -> None:
    bench_checker.generate(N, tmp_path / "valid", "map-function")
    measured = bench_checker.measure(tmp_path / "valid")
    assert measured["values"] == N and measured["app_check"] == "app-map"
    assert measured["app_check_s"] == measured["by_check_s"]["app-map"] <= measured["check_s"]
    store.save(_plant(app_synthetic(N, "map")), tmp_path / "planted")
    with pytest.raises(AssertionError, match="must be valid"):
        bench_checker.measure(tmp_path / "planted")


@pytest.mark.parametrize("args, said", [
    (["--engine", "spark"], "default engine only"),
    (["--values", "20000001"], "at most 20000000"),
])
def test_bench_checker_app_refuses_what_it_cannot_measure(args: list[str], said: str) -> None:
    r = cli("bench", "checker", "--app", "map", *args)
    assert r.exit_code == 2, r.output
    assert said in " ".join(r.output.split()) and "--app" in r.output and "Traceback" not in r.output
