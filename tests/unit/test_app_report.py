"""``report.html`` of an app run (docs/APPS.md) on hand-written app histories (no cluster): an app
section (the contract, the instances with their logs and how each ended, the drain, the contract
function's error, the outputs read), the contract checks' examples with their record and the
faults active at their ``writer_op``, and the records of the app's output partitions placed in the
partition views (from ``app_outputs``, not ``reads``). The run folders: ``test_app_history_text.app_run``."""

from __future__ import annotations

import html
import re
from pathlib import Path

import numpy as np
import pytest

from harness.phases import app_run as app_run_phases
from harness.report import write_report
from harness.report.app_section import ended_says, log_says
from harness.report.data import load
from harness.workloads.app_wrapper import KILLED_AT_STOP
from tests.unit.histories import app_aggregate, app_map
from tests.unit.test_app_history_text import FACTS, app_run
from tests.unit.test_log_digest import STREAMS_DIED
from tests.unit.test_report import make_run
from tests.unit.test_report import text as words

# ---- report.html

@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    run = app_run(tmp_path_factory.mktemp("app-report"), app_map("duplicate", function=True), "app-run")
    return run, write_report(run).read_text()


def section(page: str, id_: str) -> str:
    start = page.index(f'<section id="{id_}">')
    return page[start:page.index("</section>", start)]


def said(page: str) -> str:
    """What a person reads of a piece of the page (entities decoded)."""
    return html.unescape(words(page))


def test_the_report_has_an_app_section_with_the_contract_the_instances_and_their_logs(page: tuple[Path, str]) -> None:
    app = section(page[1], "app")
    shown = said(app)
    assert "App under test: app" in shown
    assert "Pipeline:" not in shown and "app-stages" not in app  # one app: no pipeline's table
    assert "contract map, function tests.apps:twice, order per-key" in shown
    assert "inputs in" in shown and "outputs out" in shown
    assert "'{python}' app.py --out '{topic:out}'" in shown  # the command, placeholders as written
    for name in ("app-0", "app-1", "app-feeder", "app-reader"):
        assert f'href="workloads/{name}.log"' in app
    # how each instance's wrapper ended, the faults on it, when it was ready and exited
    assert "0: stopped cleanly: the app exited on SIGTERM" in shown
    assert f"{KILLED_AT_STOP}: killed at stop: the app ignored SIGTERM for stop_timeout_s (2 s)" in shown
    table = app[app.index('class="app-instances"'):]
    row0 = said(table[table.index("<td>app-0</td>"):table.index("<td>app-1</td>")])
    assert "F1" in row0 and row0.count(",") == 1  # killed by F1, ready twice
    # the drain not done, the instance started again for it, the function's error
    assert "not drained in 30.4 s (drain_s 30 s): not within drain_s 30s; last seen: {\"outputs_open\": true}" in shown
    assert "started again for the drain app-1" in shown
    assert "could not be applied: contract function tests.apps:twice: ValueError: no answer for i9" in shown
    # what was read of the output: the reader's polls and the two final scans (9 committed: i3:a twice)
    assert "out 1 9 11" in shown


def test_app_map_examples_show_the_record_and_the_faults_active_at_their_writer_op(page: tuple[Path, str]) -> None:
    html_ = page[1]
    examples = said(html_[html_.index('id="check-app-map"'):html_.index('<section id="app">')])
    # kind, app, count, inputs, writer_op, the expected record, its positions; the writer op's times, the fault then
    assert re.search(r"A1 duplicate app 1 i3 (\d+) out\[k0\]=i3:a out-0@4, out-0@20 write app-feeder.0 txn #\1: "
                     r"invoked t=0.005 s .* F1 kill-workload app-0", examples), examples


def test_an_apps_output_partition_places_its_records_by_their_inputs(tmp_path: Path) -> None:
    """Not read from ``reads`` (where an app's output is not): from ``app_outputs``, each record at its
    input's place in the order of all writes, and a record no input explains on the lower edge."""
    data = load(make_run(tmp_path, name="identity", history=app_map("unexplained")))
    view = next(p for p in data.partitions if p.topic == "out")
    committed = view.scan[view.scan["isolation"] == "read_committed"].set_index("offset")
    assert view.ylabel == "its input's write order" and "placed at its input (its own value)" in view.note
    # i2 and i4 of partition 1 in their write order; x9 explained by no input
    assert committed.loc[0, "order"] < committed.loc[2, "order"] and np.isnan(committed.loc[20, "order"])
    assert committed.loc[20, "writer"] == "no input" and committed.loc[0, "writer"] == "app, of app-feeder.0's input"
    assert view.unplaced == "no input explains it"
    page = write_report(data.run_dir).read_text()
    assert "no input explains it (1)" in page  # the legend counts what it could not place


def test_a_functions_outputs_are_placed_by_its_expected_outputs(tmp_path: Path) -> None:
    data = load(make_run(tmp_path, name="function", history=app_map("duplicate", function=True)))
    view = next(p for p in data.partitions if p.topic == "out")
    committed = view.scan[view.scan["isolation"] == "read_committed"].set_index("offset")
    # i3:a at 4 and again at 20: both at i3's place; i1:a and i1:b at i1's, before it
    assert committed.loc[4, "order"] == committed.loc[20, "order"] == committed.loc[6, "order"]
    assert committed.loc[0, "order"] == committed.loc[2, "order"] < committed.loc[4, "order"]
    assert "tests.apps:twice's expected outputs" in view.note


def test_an_aggregates_partition_shows_each_keys_updates(tmp_path: Path) -> None:
    data = load(make_run(tmp_path, name="aggregate", history=app_aggregate("back")))
    view = next(p for p in data.partitions if p.topic == "sm")
    committed = view.scan[view.scan["isolation"] == "read_committed"]
    assert view.ylabel == "sum (the update's value)" and set(committed["writer"]) == {"key k0"}
    assert committed.sort_values("offset")["order"].tolist() == [5, 8, 5, 16]  # the step back


@pytest.mark.parametrize("code, says", [(0, "stopped cleanly"), (KILLED_AT_STOP, "killed at stop: the app ignored SIGTERM"),
                                        (-9, "the wrapper was killed by SIGKILL"), (3, "exited 3: the app could not start"),
                                        (None, "no exit code recorded")])
def test_each_way_an_instance_ends_is_named(code: int | None, says: str) -> None:
    assert ended_says(code, 30.0).startswith(says)


def test_the_app_section_names_the_topics_it_wrote_to_undeclared(tmp_path: Path) -> None:
    app = said(section(write_report(app_run(tmp_path, app_map("undeclared"), "stray")).read_text(), "app"))
    assert "written undeclared audit-log: 1 records" in app


def test_a_run_without_an_app_has_no_app_section(tmp_path: Path) -> None:
    html_ = write_report(make_run(tmp_path, name="plain")).read_text()
    assert '<section id="app">' not in html_ and "App under test" not in html_


def test_an_instance_that_died_of_an_exception_shows_it_and_its_error_lines(tmp_path: Path) -> None:
    """Issue 39: the exception a Streams instance died of, and its first and last ERROR lines, from
    its log (the journal's ``app.logs``, which ``app_run.failed_logs`` makes at the stop); an
    instance whose log shows nothing wrong and that stopped cleanly shows nothing more."""
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "workloads").mkdir()
    (logs / "workloads" / "app-1.log").write_text("\n".join(STREAMS_DIED) + "\n")
    (logs / "workloads" / "app-0.log").write_text("[main] INFO started\n")
    failed = app_run_phases.failed_logs(logs, {"app-0": 0, "app-1": 1})
    assert set(failed) == {"app-1"}
    run = app_run(tmp_path, app_map("duplicate", function=True), "died",
                  facts={**FACTS, "exits": {"app-0": 0, "app-1": 1}, "logs": failed})
    app = section(write_report(run).read_text(), "app")
    table = said(app[app.index('class="app-instances"'):])
    row1 = table[table.index("app-1"):]
    assert "1: exited 1" in row1
    assert "its log says: the exception in it: org.apache.kafka.streams.errors.MissingSourceTopicException: " in row1
    assert "Encountered the following exception" in row1 and "PENDING_ERROR to ERROR" in row1
    assert "its log says" not in table[:table.index("app-1")]
    # an instance that ended badly with nothing in its log but lines: its last lines
    (logs / "workloads" / "app-0.log").write_text("cannot read my-app.properties\n")
    assert app_run_phases.failed_logs(logs, {"app-0": 3})["app-0"].tail == ["cannot read my-app.properties"]
    assert log_says(app_run_phases.failed_logs(logs, {"app-0": 3})["app-0"]) == [
        "its last 1 lines (of 1):", "  cannot read my-app.properties"]
