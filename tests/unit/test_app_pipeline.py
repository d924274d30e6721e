"""A pipeline of two apps judged per hop and end to end (docs/APPS.md, "Pipelines"), on hand-written
histories (tests/unit/pipeline_histories.py): each fault of one stage fires that stage's own check on
its hop and ``app-pipeline`` end to end, blaming that stage alone; the clean twin is valid."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.base.errors import ConfigError
from harness.checker import check
from harness.checker.pipeline import NO_PIPELINE
from harness.history.model import APP_CONTRACT
from harness.phases import app_run
from harness.run import runner, scenario
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
    # each app's findings, so a report can say each hop's verdict: the hop checks' per stage, the chain's by its end
    by_check = {"app-map": {"copy": 0, "finish": 0}} if finish == "map" else {"app-map": {"copy": 0}, "app-aggregate": {"finish": 0}}
    assert {c: v["checks"][c]["by_app"] for c in by_check} == by_check
    assert v["checks"]["app-pipeline"]["by_app"] == {"finish": 0}
    for name in ("app-map", "app-pipeline"):
        assert "skipped" not in v["checks"][name] and "error" not in v["checks"][name], v["checks"][name]


@pytest.mark.parametrize("variant", list(PIPELINE_VARIANTS))
def test_a_fault_of_one_stage_is_found_on_its_hop_and_end_to_end_and_blamed_on_it(variant: str) -> None:
    hops, end_kind, blame = PIPELINE_VARIANTS[variant]
    v = verdict("map", variant)
    assert fired(v) == {"app-map": 1, "app-pipeline": 1}, v["checks"]
    assert hop_kinds(v) == hops
    assert v["checks"]["app-map"]["by_app"] == {"copy": int("copy" in hops), "finish": int("finish" in hops)}
    assert v["checks"]["app-pipeline"]["by_app"] == {"finish": 1}
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


# ---- the scenario: a pipeline's stages fit together, or the run is refused before anything starts

SHIPPED = Path(__file__).resolve().parents[2] / "harness" / "scenarios" / "app-pipeline-copiers.yaml"


def _pipeline_file(tmp_path: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    doc = yaml.safe_load(SHIPPED.read_text())
    edit(doc)
    f = tmp_path / "p.yaml"
    f.write_text(yaml.safe_dump(doc, sort_keys=False))
    return f


def _second(doc: dict[str, Any]) -> dict[str, Any]:
    settings: dict[str, Any] = doc["workloads"][1]["settings"]
    return settings


@pytest.mark.parametrize("edit, said", [
    (lambda d: d["workloads"].append(d["workloads"][1]), "name: 'forward' is an earlier app's too"),
    (lambda d: _second(d).update(name="copy"), "upstream: 'copy' is this app's own name"),
    (lambda d: _second(d).pop("upstream"), "a second app fed by the harness (no upstream)"),
    (lambda d: _second(d).update(upstream="nosuch"), "upstream: 'nosuch' is no earlier app's name; allowed: copy"),
    (lambda d: _second(d).update(inputs=["app-in"]), "inputs: ['app-in'] not among app 'copy''s outputs"),
    (lambda d: _second(d).update(feeder={"rate": 10}), "a stage fed by app 'copy' has a map or aggregate contract and no feeder"),
    (lambda d: _second(d).update(contract={"kind": "model", "function": "m:f"}),
     "a stage fed by app 'copy' has a map or aggregate contract"),
    (lambda d: d["workloads"][0]["settings"].update(contract={"kind": "aggregate", "aggregates": {"app-mid": "count"}}),
     "upstream: app 'copy' has an aggregate contract; a stage another reads is a map"),
], ids=["same-name", "own-name", "two-fed", "unknown-upstream", "input-not-upstreams", "feeder", "model", "upstream-aggregate"])
def test_a_pipeline_whose_stages_do_not_fit_is_refused_naming_the_entry(
        tmp_path: Path, edit: Callable[[dict[str, Any]], None], said: str) -> None:
    with pytest.raises(ConfigError) as info:
        scenario.load(str(_pipeline_file(tmp_path, edit)))
    assert info.value.exit_code == 2 and said in str(info.value), str(info.value)


def test_the_shipped_pipeline_runs_each_stage_with_its_own_id_reader_and_contract() -> None:
    sc = runner.physical(scenario.load(str(SHIPPED)), "r1")
    procs = {cfg.name: cfg.settings for _, cfg, _ in runner.workload_configs(sc, Path("/tmp/r"), "b:1", 1)}
    assert set(procs) == {"app-0", "app-1", "app-feeder", "app-reader", "app-reader-forward"}  # one feeder: the first stage's
    assert (procs["app-0"]["id"], procs["app-1"]["id"]) == ("eos-chaos-app-copy.r1", "eos-chaos-app-forward.r1")
    assert procs["app-feeder"]["topics"] == ["app-in.r1"] and procs["app-reader-forward"]["app"] == "forward"
    stages = app_run.stages_of(sc)
    assert [app_run.contract_value(s).get("upstream") for s in stages] == [None, "copy"]
    assert app_run.stage_instances(sc) == {"copy": ["app-0"], "forward": ["app-1"]}
    assert app_run.outputs(sc) == ["app-mid.r1", "app-out.r1"]  # kept out of the other workloads' reads
