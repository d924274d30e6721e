"""A pipeline of two apps judged per hop and end to end (docs/APPS.md, "Pipelines"), on hand-written
histories (tests/unit/pipeline_histories.py): each fault of one stage fires that stage's own check on
its hop and ``app-pipeline`` end to end, blaming that stage alone; the clean twin is valid."""

from __future__ import annotations

from typing import Any

import pytest

from harness.checker import check
from harness.checker.pipeline import NO_PIPELINE
from harness.history.model import APP_CONTRACT
from tests.unit.pipeline_histories import PIPELINE_VARIANTS, pipeline


def verdict(finish: str = "map", variant: str = "") -> dict[str, Any]:
    return check(pipeline(variant, finish).tables()).to_json()


def fired(v: dict[str, Any]) -> dict[str, int]:
    return {name: c["count"] for name, c in v["checks"].items() if c["count"]}


def hop_kinds(v: dict[str, Any]) -> dict[str, set[str]]:
    """Per app, the kinds of finding its own check (app-map, app-aggregate) showed."""
    out: dict[str, set[str]] = {}
    for name in ("app-map", "app-aggregate"):
        for e in v["checks"][name].get("examples", []):
            out.setdefault(e["app"], set()).add(e["kind"])
    return out


@pytest.mark.parametrize("finish", ["map", "count"])
def test_a_clean_pipeline_is_valid_per_hop_and_end_to_end(finish: str) -> None:
    v = verdict(finish)
    assert fired(v) == {} and v["valid"] is True and v["unknown_because"] == [], v["checks"]
    for name in ("app-map", "app-pipeline"):
        assert "skipped" not in v["checks"][name] and "error" not in v["checks"][name], v["checks"][name]


@pytest.mark.parametrize("variant", list(PIPELINE_VARIANTS))
def test_a_fault_of_one_stage_is_found_on_its_hop_and_end_to_end_and_blamed_on_it(variant: str) -> None:
    hops, end_kind, blame = PIPELINE_VARIANTS[variant]
    v = verdict("map", variant)
    assert fired(v) == {"app-map": 1, "app-pipeline": 1}, v["checks"]
    assert hop_kinds(v) == hops
    [end] = v["checks"]["app-pipeline"]["examples"]
    assert (end["kind"], end["blame"], end["pipeline"], end["app"]) == (end_kind, blame, ["copy", "finish"], "finish")


def test_the_end_to_end_expectation_is_the_contracts_composed() -> None:
    """``finish`` copied what ``copy`` doubled: its own hop is exact (each record of ``mid`` once),
    the chain's output is not (i3 entered once, left twice)."""
    ex = verdict("map", "a-duplicate")["checks"]["app-pipeline"]["examples"][0]
    assert ex["record"] == {"topic": "out", "key": "k0", "value": "i3:a:b"} and ex["inputs"] == ['["mid","k0","i3:a"]']
    assert ex["count"] == 1 and len(ex["outputs"]) == 2


@pytest.mark.parametrize("variant, end_kinds, blame", [("a-duplicate", {"overshoot", "final"}, ["copy"]),
                                                       ("b-loss", {"final"}, ["finish"])])
def test_an_aggregate_after_a_copy_is_judged_on_the_copys_committed_output_and_end_to_end(
        variant: str, end_kinds: set[str], blame: list[str]) -> None:
    v = verdict("count", variant)
    assert {e["kind"] for e in v["checks"]["app-pipeline"]["examples"]} == end_kinds
    assert {tuple(e["blame"]) for e in v["checks"]["app-pipeline"]["examples"]} == {tuple(blame)}
    # the count's own hop: exact after a doubled copy (it counted what it read), short after its loss
    assert ("finish" in hop_kinds(v)) == (variant == "b-loss")


def test_a_history_without_a_pipeline_is_skipped_saying_why() -> None:
    h = pipeline()

    def about_finish(o: dict[str, Any]) -> bool:
        return o.get("app") == "finish" or (isinstance(o.get("value"), dict) and o["value"].get("app") == "finish")

    h.ops = [o for o in h.ops if not about_finish(o)]
    v = check(h.tables()).to_json()
    assert v["checks"]["app-pipeline"]["skipped"] == NO_PIPELINE and v["valid"] is True


def test_a_stage_whose_upstream_is_not_a_map_cannot_be_judged_end_to_end() -> None:
    """An aggregate's updates are not per input: nothing says what the next stage must make of them."""
    h = pipeline()
    copy = next(o for o in h.ops if o["f"] == APP_CONTRACT and o["value"]["app"] == "copy")
    copy["value"] = {"app": "copy", "contract": "aggregate", "inputs": ["in"], "outputs": ["mid"],
                     "aggregates": {"mid": "count"}}
    v = check(h.tables()).to_json()
    assert v["valid"] is not True and "its upstream app copy has an aggregate contract" in v["checks"]["app-pipeline"]["error"]
