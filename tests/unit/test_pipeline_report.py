"""``report.html`` of a pipeline run (docs/APPS.md, "Pipelines") on hand-written histories
(tests/unit/pipeline_histories.py, no cluster): every stage has its row (its name, its upstream,
what its own check found on its hop, the output records/s its reader polled, the kills on its
instances and their restarts), and the chain's end-to-end verdict names the stages it blames; a
clean pipeline's twin shows each hop and the chain exact, and a single app shows no pipeline."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import pytest

from harness.history.builder import History
from harness.history.model import APP_READY, OK, tp_key
from harness.report import write_report
from harness.report.pipeline_section import hop_says
from harness.rundir.run_verdict import CheckRecord
from tests.unit.pipeline_histories import pipeline
from tests.unit.test_app_history_text import SETTINGS
from tests.unit.test_report import make_run
from tests.unit.test_report import text as words

#: the two stages' scenario entries as the journal's resolved scenario has them: copy's 2 instances
#: (app-0, app-1), finish's 1 (app-2)
STAGES = [{"kind": "app", "count": 2, "settings": {**SETTINGS, "name": "copy", "inputs": ["in"], "outputs": ["mid"]}},
          {"kind": "app", "count": 1, "settings": {**SETTINGS, "name": "finish", "upstream": "copy", "inputs": ["mid"],
                                                   "outputs": ["out"]}}]
#: finish's only instance killed (and started again: ready twice), over the whole history
KILL_FINISH = [(0.0, {"kind": "kill-workload", "phase": "start", "workload": "app-2"}),
               (1.0, {"kind": "kill-workload", "phase": "stop", "workload": "app-2"})]


def with_runs(h: History) -> History:
    """``h`` with its stages' readers' polls (copy's 3 records over 4 ms, finish's 2 over 4 ms: make_run's ops are 1 ms apart) and
    their instances' readiness: app-0 and app-1 ready once, app-2 twice (killed and restarted)."""
    h.app_poll("app-reader", "copy", {tp_key("mid", 0): [(0, "i1:a", "k0")]})
    h.app_poll("app-reader-finish", "finish", {tp_key("out", 0): [(0, "i1:a:b", "k0")]})
    h.app_poll("app-reader", "copy", {tp_key("mid", 0): [(2, "i3:a", "k0")], tp_key("mid", 1): [(0, "i2:a", "k1")]})
    h.app_poll("app-reader-finish", "finish", {tp_key("out", 1): [(0, "i2:a:b", "k1")]})
    for process in ("app-0.0", "app-1.0", "app-2.0", "app-2.1"):
        h._add(process=process, type=OK, f=APP_READY, value={"how": "log line matched 'started': started"})
    return h


DRAINED = {"drained": True, "how": "caught up", "took_s": 1.0}


def pipeline_run(root: Path, variant: str, name: str) -> str:
    """What a reader reads of the app section of the report of a pipeline run breaking ``variant``."""
    run = make_run(root, name=name, faults=KILL_FINISH, history=with_runs(pipeline(variant)),
                   journal_fields={"resolved": {"name": name, "duration": 10.0, "workloads": STAGES},
                                   "app": {"drain": DRAINED, "stages": {"copy": {"drain": DRAINED}, "finish": {
                                       "drain": {"drained": False, "how": "not within drain_s 30s", "took_s": 30.5}}}}})
    page = write_report(run).read_text()
    start = page.index('<section id="app">')
    return html.unescape(words(page[start:page.index("</section>", start)]))


def row(section: str, first: str, after: str) -> str:
    return section[section.index(first):section.index(after, section.index(first))]


def test_a_pipelines_report_shows_every_stage_and_the_end_to_end_verdict_blaming_the_stage(tmp_path: Path) -> None:
    """finish lost a record: its hop says so, copy's is exact, and the chain's loss is blamed on finish."""
    app = pipeline_run(tmp_path, "b-loss", "loss")
    assert "Pipeline: copy → finish" in app
    copy = row(app, "copy the feeder", "finish copy")
    finish = row(app, "finish copy", "end to end")
    # name, upstream, the hop's verdict, records/s polled (3 over 4 ms; 2 over 4 ms), instances, kills, restarts
    # ... and its drain
    assert copy == "copy the feeder app-map: exact 750.0 app-0, app-1 0 0 drained in 1 s (drain_s 30 s): caught up ", copy
    assert finish == ("finish copy app-map: 1 found (missing) 500.0 app-2 1 1 not drained in 30.5 s (drain_s 30 s): "
                      "not within drain_s 30s "), finish
    end = app[app.index("end to end"):]
    assert end.startswith("end to end copy's input app-pipeline: 1 found (missing); blamed on finish"), end
    # every stage's outputs read, by app
    assert "copy mid" in app and "finish out" in app


def test_a_clean_pipelines_report_shows_each_hop_and_the_chain_exact(tmp_path: Path) -> None:
    app = pipeline_run(tmp_path, "", "clean")
    assert "copy the feeder app-map: exact" in app and "finish copy app-map: exact" in app
    assert "end to end copy's input app-pipeline: exact" in app and "blamed" not in app


def test_a_doubled_record_upstream_is_exact_on_the_next_hop_and_blamed_on_its_stage(tmp_path: Path) -> None:
    app = pipeline_run(tmp_path, "a-duplicate", "dup")
    assert "copy the feeder app-map: 1 found (duplicate)" in app and "finish copy app-map: exact" in app
    assert "app-pipeline: 1 found (duplicate); blamed on copy" in app


@pytest.mark.parametrize("rec, app, says, exact", [
    ({"count": 0, "examples": [], "by_app": {"a": 0, "b": 0}}, "b", "app-map: exact", True),
    ({"count": 2, "examples": [{"kind": "missing", "app": "b"}], "by_app": {"a": 0, "b": 2}}, "b", "app-map: 2 found (missing)", False),
    ({"count": 2, "examples": [{"kind": "missing", "app": "b"}], "by_app": {"a": 0, "b": 2}}, "a", "app-map: exact", True),
    ({"count": 0, "examples": [], "by_app": {"a": 0}}, "b", "not judged: app-map did not judge b", None),
    # a verdict from before each app's findings were kept: exact only when the check found nothing at all
    ({"count": 0, "examples": []}, "b", "app-map: exact", True),
    ({"count": 3, "examples": []}, "b", "app-map: 3 over every app (this verdict does not say per app)", None),
    ({"count": 0, "examples": [], "skipped": "no scan"}, "b", "not judged: no scan", None),
    ({"count": None, "examples": [], "error": "history error: x\nmore"}, "b", "app-map could not judge: history error: x", None),
])
def test_each_hops_verdict_is_said_from_its_checks_findings_of_that_app(rec: dict[str, Any], app: str, says: str,
                                                                      exact: bool | None) -> None:
    assert hop_says(CheckRecord.model_validate(rec), "app-map", app) == (says, exact)
