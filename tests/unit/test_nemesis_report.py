"""A test that used only the plugin's ``nemesis`` fixture gets a report: its faults in time, the
nodes' lanes, whether the heal worked, and relative links to the logs of the cluster it hit."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import unquote

import pytest

from harness.base.errors import ConfigError
from harness.report.nemesis_page import write_nemesis_report

SECOND = 1_000_000_000


def nemesis_folder(results: Path, healed: bool) -> Path:
    cluster = results / "20261125-100000-pytest-local-abcd"
    (cluster / "nodes" / "n2").mkdir(parents=True)
    (cluster / "nodes" / "n2" / "server.log").write_text("[2026-11-25T10:00:01,000] INFO started\n")
    (cluster / "toxiproxy.log").write_text("proxy up\n")
    run = results / "20261125-100005-pytest-nemesis-test_mine-1234"
    (run / "history").mkdir(parents=True)
    t0 = 50 * SECOND  # the process's history clock started before this test
    events = [(t0 + 2 * SECOND, "info", {"kind": "kill", "phase": "start", "node": 2, "target": "leader", "of": "orders/0"}),
              (t0 + 9 * SECOND, "ok", {"kind": "kill", "phase": "stop", "node": 2}),
              (t0 + 4 * SECOND, "info", {"kind": "latency", "phase": "start", "links": ["client-to-n1"], "target": 1, "of": None}),
              (t0 + 6 * SECOND, "ok", {"kind": "latency", "phase": "stop", "links": ["client-to-n1"]})]
    (run / "history" / "nemesis.jsonl").write_text("".join(
        json.dumps({"time": t, "process": "nemesis", "type": ty, "f": "fault", "value": v}) + "\n"
        for t, ty, v in sorted(events, key=lambda e: e[0])))
    (run / "nemesis.json").write_text(json.dumps({
        "test": "tests/test_mine.py::test_mine", "t0_ns": t0, "started": "2026-11-25T10:00:05+0000", "backend": "local",
        "bootstrap": "127.10.0.1:19092", "cluster_dir": str(cluster), "healed": healed,
        "heal_problems": [] if healed else ["node 2: not running"], "errors": [], "ended_ns": t0 + 12 * SECOND}))
    return run


def test_a_nemesis_only_test_gets_its_faults_lanes_and_the_clusters_logs(tmp_path: Path) -> None:
    run = nemesis_folder(tmp_path, healed=True)
    page = write_nemesis_report(run, "tests/test_mine.py::test_mine").read_text()
    assert '<span class="badge valid">HEALED</span>' in page and "tests/test_mine.py::test_mine" in page
    rows = re.findall(r"<tr><td>(F\d)</td><td>([\w-]+)</td><td>[^<]*</td><td class=\"num\">([\d.]+)</td>\s*<td class=\"num\">([\d.]+)", page)
    assert rows == [("F1", "kill", "2.0", "9.0"), ("F2", "latency", "4.0", "6.0")]  # seconds from the test's start
    assert 'id="fault-F1"' in page and "<svg" in page  # the windows over the node lanes
    hrefs = re.findall(r'<a href="([^"]+)"', page)
    assert len(hrefs) == 3  # n2's server.log, toxiproxy.log, the fault events
    for href in hrefs:
        target = (run / unquote(href)).resolve()
        assert target.is_file() and target.is_relative_to(tmp_path.resolve()), href  # inside the results folder


def test_a_heal_that_failed_is_the_first_thing_the_page_says(tmp_path: Path) -> None:
    page = write_nemesis_report(nemesis_folder(tmp_path, healed=False), "t").read_text()
    assert '<span class="badge invalid">NOT HEALED</span>' in page and "node 2: not running" in page


def test_a_folder_that_is_not_a_nemesis_run_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no nemesis.json: not the run folder of a test's nemesis fixture"):
        write_nemesis_report(tmp_path, "t")


def test_eos_chaos_report_remakes_a_nemesis_page_too(tmp_path: Path) -> None:
    from harness.report import write_report

    run = nemesis_folder(tmp_path, healed=True)
    assert "tests/test_mine.py::test_mine" in write_report(run).read_text()  # the test's id, from nemesis.json


def test_the_results_index_lists_a_nemesis_test_with_its_heal_and_report(tmp_path: Path) -> None:
    from harness.report.index_page import write_index

    write_nemesis_report(nemesis_folder(tmp_path, healed=False), "t")
    page = write_index(tmp_path).read_text()
    assert "FAULTS ONLY (not healed)" in page and "test: tests/test_mine.py::test_mine" in page
    assert "not healed: node 2: not running" in page
    assert 'href="20261125-100005-pytest-nemesis-test_mine-1234/report.html"' in page
