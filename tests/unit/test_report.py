"""report.html and compare, on run folders made from hand-written histories (no cluster): the
verdict comes first with its examples, partitions with anomalies get an order plot, fault windows
and node states are drawn and listed, the page loads nothing from anywhere — checked in a real
headless Chromium, with a page that does fetch something as the negative control."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import orjson
import pandas as pd
import pytest

from harness.checker import NO_FINAL_READS, check
from harness.history import store
from harness.history.builder import History
from harness.report import REPORT_FILE, write_report
from harness.report.compare import compare
from harness.report.data import anomaly_positions, fault_windows, label, load, node_lanes, spark_events
from harness.report.jinja_env import cell
from harness.report.plots import label_rows, plain_number, timeline_svg, zoom_window
from harness.run import verdict_file
from harness.rundir import runinfo
from harness.rundir.journal import Journal
from harness.rundir.run_verdict import RunVerdict
from harness.rundir.runfolder import RunFolder
from tests.browser import render
from tests.unit.histories import clean

SECOND = 1_000_000_000
FAULTS = [
    (2, {"kind": "kill", "phase": "start", "node": 2, "target": "leader", "of": None}),
    (6, {"kind": "kill", "phase": "stop", "node": 2}),
    (3, {"kind": "partition", "phase": "start", "links": ["client-to-n3", "n1-to-n3-internal"], "target": "random", "of": None}),
    (5, {"kind": "partition", "phase": "stop", "links": ["client-to-n3", "n1-to-n3-internal"]}),
    (7, {"kind": "pause", "phase": "start", "node": 1, "target": 1, "of": None}),  # never stopped: healed at the end
]


def make_run(root: Path, variant: str = "", name: str = "unit-run", died: bool = False,
             faults: list[tuple[float, dict[str, Any]]] | None = None, schedule: list[dict[str, Any]] | None = None,
             history: History | None = None, journal_fields: dict[str, Any] | None = None) -> Path:
    """A run folder as ``eos-chaos run`` leaves it: scenario.json, journal.json, history, Parquet,
    verdict; ``died``: as a runner killed before its final reads left it; ``faults``: the nemesis's
    events (default ``FAULTS``); ``schedule``: the plan, counted from t=0 of the history; ``history``:
    the ops (default ``clean(variant)``); ``journal_fields``: more of the journal (``app``, ``resolved``)."""
    run_dir = root / name
    (run_dir / "history").mkdir(parents=True)
    h = history if history is not None else clean(variant)
    if died:
        h.ops = [op for op in h.ops if op["process"] != "final"]
    # 1 ms apart; the faults come later
    ops = [{**op, "time": op["time"] * 1000, **({"commit_at": op["commit_at"] * 1000} if op.get("commit_at") else {})}
           for op in h.ops]
    ops += [{"time": int(at * SECOND), "process": "nemesis", "type": "info" if v["phase"] == "start" else "ok",
             "f": "fault", "value": v} for at, v in (FAULTS if faults is None else faults)]
    (run_dir / "history" / "runner.jsonl").write_bytes(b"".join(orjson.dumps(o) + b"\n" for o in ops))
    scenario = {"name": name, "description": f"hand-written history ({variant or 'clean'})", "duration": 10.0}
    (run_dir / "scenario.json").write_text(json.dumps({**scenario, "seed": 7, "backend": "local"}))
    journal = Journal(scenario=name, source=name, **{"resolved": scenario, **(journal_fields or {})}, seed=7, backend="local", kafka_version="4.1.1",
                      versions={"kafka": "4.1.1", "confluent_kafka": "2.12.0", "librdkafka": "2.12.0",
                                "pyspark": "4.0.0", "python": "3.11.7", "eos_chaos": "0.1.0"},
                      command=f"eos-chaos run {name} --backend local --seed 7 --duration 10", healed=True,
                      features={"transaction.version": 2, "metadata.version": 33},
                      schedule=schedule or [], schedule_t0_s=0.0 if schedule else None)
    journal.save(RunFolder(run_dir))
    all_ops, truncated = store.read_ops(run_dir)
    tables = store.flatten(all_ops, truncated)
    store.save(tables, run_dir)
    verdict_file.write(verdict_file.assemble(check(tables), journal, journal.expected), RunFolder(run_dir))
    return run_dir


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("runs")
    return {v or "clean": make_run(root, v, f"run-{v or 'clean'}") for v in ("", "duplicate", "aborted-read")}


def text(html: str) -> str:
    """The page's words without tags (what a person reads)."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_an_invalid_run_leads_with_its_verdict_and_examples(runs: dict[str, Path]) -> None:
    page = write_report(runs["duplicate"]).read_text()
    words = text(page)
    assert words.index("INVALID") < words.index("Checks") < words.index("Timeline")
    assert "duplicate: 1" in words and "a value visible more than once" in words
    # the example names the value, both offsets and the writer
    assert "a1" in words and "t-0@0, t-0@8" in words and "p1" in words
    assert "Partitions with anomalies" in words and "t-0: duplicate at 0, 8" in words
    assert "eos-chaos run run-duplicate --backend local --seed 7 --duration 10" in words
    assert "Kafka 4.1.1" in words
    assert "librdkafka 2.12.0" in words
    # the header names the transaction protocol the cluster ran, as read back from it
    header = words[:words.index("Checks")]
    assert "transaction.version 2 (KIP-890 part 2: epoch bumped after every transaction), metadata.version 33" in header


def test_a_cycle_marks_each_of_its_ops_and_the_partitions_its_steps_name(tmp_path: Path) -> None:
    words = text(write_report(make_run(tmp_path, "g1c", "run-g1c")).read_text())
    assert "G1c-realtime" in words and words.count("in the cycle") == 3, words
    assert "t-0: g1c at 8" in words and "t-1: g1c at 9, 10" in words


def test_a_run_without_final_reads_says_so_at_the_top_and_is_unknown(tmp_path: Path) -> None:
    page = text(write_report(make_run(tmp_path, died=True)).read_text())
    assert "UNKNOWN" in page and "VALID" not in page.replace("UNKNOWN", "")
    header = page[:page.index("Checks")]
    assert f"Could not be judged as a whole: {NO_FINAL_READS}" in header, header
    assert f"(skipped: {NO_FINAL_READS})" in page  # on lost-write and the other checks that need the scan


def test_a_valid_run_has_no_anomaly_sections(runs: dict[str, Path]) -> None:
    words = text(write_report(runs["clean"]).read_text())
    assert "VALID" in words and "INVALID" not in words
    assert "Partitions with anomalies" not in words


def test_the_timeline_lists_each_fault_with_its_resolved_target(runs: dict[str, Path]) -> None:
    words = text(write_report(runs["clean"]).read_text())
    assert "kill n2 (leader)" in words
    assert "partition n3 (random 2 links)" in words  # the node every link touches
    assert "pause n1" in words and "end (healed)" in words  # never stopped: heal-all ended it


def test_fault_windows_pair_starts_with_stops_and_node_lanes_follow_them() -> None:
    events = [{"time": at * SECOND, "f": "fault", "value": v} for at, v in sorted(FAULTS, key=lambda f: f[0])]
    windows = fault_windows(events)
    assert [(w.kind, w.start_s, w.end_s, w.nodes) for w in windows] == [
        ("kill", 2, 6, [2]), ("partition", 3, 5, [3]), ("pause", 7, None, [1])]
    lanes = node_lanes(windows, [1, 2, 3], end_s=10)
    assert lanes == {1: [(7, 10, "paused")], 2: [(2, 6, "down")], 3: []}  # a partition is no process state


def test_spark_batches_skips_and_restarts_come_from_the_jobs_events(runs: dict[str, Path]) -> None:
    data = load(runs["clean"])
    assert data.spark_batches is None  # no Spark job ran
    spark_events(data, [
        {"time": 1 * SECOND, "f": "spark-start", "incarnation": 0},
        {"time": 3 * SECOND, "f": "spark-batch", "batch": 0, "records": 40, "outcome": "ok"},
        {"time": 5 * SECOND, "f": "spark-start", "incarnation": 1},
        {"time": 6 * SECOND, "f": "spark-skip", "batch": 0},
        {"time": 7 * SECOND, "f": "spark-batch", "batch": 1, "records": 12, "outcome": "ok"},
    ])
    assert data.spark_batches is not None and data.spark_batches["records"].tolist() == [40, 12]
    assert (data.spark_skips, data.spark_starts) == ([6.0], [1.0, 5.0])
    assert "Spark records / batch" in timeline_svg(data) and "driver restart" in timeline_svg(data)


def test_runs_record_whole_versions_and_a_command_that_parses_back() -> None:
    from importlib import metadata

    v = runinfo.versions("4.4.0")
    assert v["kafka"] == "4.4.0" and v["confluent_kafka"] == metadata.version("confluent-kafka")
    assert all(re.fullmatch(r"\d+\.\d+(\.\d+)?.*", v[k]) for k in ("confluent_kafka", "librdkafka", "python")), v
    # each workload's client library with its release: a Java or Go run's client is on record too
    libs = runinfo.versions("4.4.0", {"franz-go": "1.22.3", "confluent-kafka": None})["clients"]
    assert libs == {"franz-go": "1.22.3", "confluent-kafka": metadata.version("confluent-kafka")}
    cmd = runinfo.rerun_command("my scenario.yaml", "compose", 7, 30.0, "4.3.1")
    assert shlex.split(cmd) == ["eos-chaos", "run", "my scenario.yaml", "--backend", "compose", "--seed", "7",
                                "--duration", "30", "--kafka-version", "4.3.1"]
    assert runinfo.rerun_command("s", "local", 7, 30.0, "4.4.0", 0).endswith("--kafka-version 4.4.0 --transaction-version 0")


def test_labels_name_the_resolved_target() -> None:
    assert label({"kind": "latency", "links": ["a", "b"], "nodes": [1, 2, 3], "target": "all"}) == "latency n1,n2,n3 (all 2 links)"
    assert label({"kind": "kill-driver", "workload": "spark-job-0", "window": "in-txn"}) == "kill-driver spark-job-0 in-txn"
    assert label({"kind": "kill", "node": 3, "target": "coordinator", "of": "tx-1"}) == "kill n3 (coordinator of tx-1)"
    assert label({"kind": "set-transaction-version", "level": 0, "before": 2, "after": 0}) == "set-transaction-version 2 -> 0"


def test_the_report_is_one_file_that_names_no_address(runs: dict[str, Path]) -> None:
    page = write_report(runs["duplicate"]).read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert not re.search(r"@import|url\(\s*['\"]?https?:", page)
    assert page.count("<svg") >= 2  # the timeline and one partition


def test_compare_names_what_differs(runs: dict[str, Path]) -> None:
    rows = {(r.section, r.key): r for r in compare(runs["clean"], runs["duplicate"])}
    assert rows[("verdict", "valid")].a is True and rows[("verdict", "valid")].b is False
    assert rows[("checks", "duplicate")].differs and not rows[("checks", "lost-write")].differs
    assert rows[("run", "name")].differs and not rows[("run", "seed")].differs


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True, timeout=120)


def test_report_and_compare_commands(runs: dict[str, Path], tmp_path: Path) -> None:
    (runs["clean"] / REPORT_FILE).unlink(missing_ok=True)
    done = cli("report", str(runs["clean"]))
    assert done.returncode == 0 and (runs["clean"] / REPORT_FILE).exists(), done.stderr
    done = cli("compare", str(runs["clean"]), str(runs["aborted-read"]), "--json")
    assert done.returncode == 0, done.stderr
    differs = {(d["section"], d["key"]) for d in json.loads(done.stdout)["differs"]}
    assert ("checks", "aborted-read") in differs and ("checks", "duplicate") not in differs


@pytest.mark.parametrize("args, says", [
    (["report", "{tmp}/nope"], "does not exist"),
    (["report", "{tmp}"], "no verdict.json"),
    (["compare", "{clean}", "{tmp}/nope"], "does not exist"),
])
def test_bad_run_folders_are_exit_2_with_what_was_wrong(runs: dict[str, Path], tmp_path: Path, args: list[str], says: str) -> None:
    done = cli(*[a.format(tmp=tmp_path, clean=runs["clean"]) for a in args])
    assert done.returncode == 2 and says in done.stderr, done.stderr


def test_the_report_renders_in_chromium_and_fetches_nothing(runs: dict[str, Path], faulted: dict[str, Path]) -> None:
    shown = render(write_report(runs["duplicate"]))
    assert shown.plots_rendered == 2, shown.dom[:500]  # timeline + the partition the duplicate names
    assert shown.requests == []
    assert "INVALID" in shown.dom
    # an anomaly inside a fault window: its marker is drawn inside the window's shade, as laid out
    shown = render(write_report(faulted["invalid"]), GEOMETRY)
    assert shown.requests == [], shown.requests  # the log links are not followed on load
    assert shown.measured is not None, shown.dom[:500]
    marker, fault = shown.measured["marker"], shown.measured["fault"]
    middle = (marker["left"] + marker["right"]) / 2  # the marker's triangles reach a few px beyond its ops
    assert fault["left"] < middle < fault["right"], shown.measured
    assert shown.measured["lanes"] == 1


def test_a_page_that_fetches_from_the_network_is_caught(tmp_path: Path) -> None:
    # the negative control of the test above: the same browser check on a page with a CDN script
    page = tmp_path / "fetching.html"
    page.write_text('<!DOCTYPE html><html><head><script src="https://cdn.example.invalid/plot.js"></script>'
                    '</head><body><figure class="plot"><svg width="10" height="10"></svg></figure></body></html>')
    shown = render(page)
    assert shown.requests == ["https://cdn.example.invalid/plot.js"], shown.requests
    assert shown.plots_rendered is None  # no self-check script: nothing claims to have rendered


def test_partitions_to_show_come_from_the_position_objects_examples_name() -> None:
    at = {"topic": "o", "partition": 1, "offset": 9}
    verdict = RunVerdict.of({"valid": False, "stats": {}, "checks": {
        "duplicate": {"count": 1, "examples": [{"value": "a1", "positions": [{"topic": "t", "partition": 0, "offset": 0},
                                                                             {"topic": "t", "partition": 0, "offset": 8}]}]},
        "copy-exactly-once": {"count": 1, "examples": [{"orphan_output": at, "copies": {"topic": "t", "partition": 0,
                                                                                        "offset": 40}}]},
        "lost-write": {"count": 0, "examples": []}}})
    assert anomaly_positions(verdict) == {("t", 0): {"duplicate": [0, 8], "copy-exactly-once": [40]},
                                          ("o", 1): {"copy-exactly-once": [9]}}
    assert cell(at) == "o-1@9" and cell({"topic": "o"}) == "topic: o"


def test_fault_windows_come_from_the_histories_faults_table_not_the_runners_file(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, name="run-parquet-only")
    (run_dir / "history" / "runner.jsonl").unlink()  # only the Parquet history is left
    assert [(w.kind, w.start_s, w.end_s) for w in load(run_dir).faults] == [("kill", 2, 6), ("partition", 3, 5),
                                                                            ("pause", 7, None)]


#: Run in the page: where the timeline drew anomaly A1's marker and fault F1's shade, and how many lane views it laid out.
GEOMETRY = """(() => {
  const box = sel => { const e = document.querySelector(sel); if (!e) return null;
    const r = e.getBoundingClientRect(); return {left: r.left, right: r.right, width: r.width}; };
  return {marker: box("#timeline g#anomaly-A1"), fault: box("#timeline g#fault-F1"),
          lanes: Array.from(document.querySelectorAll("figure.lanes > svg")).filter(s => s.getBoundingClientRect().width > 0).length};
})()"""


# --- from an anomaly to its cause -------------------------------------------------------------

#: A partition of n3 from t=0 to t=1 s: every op of the hand-written history (1 ms apart) runs in it.
AROUND = [(0.0, {"kind": "partition", "phase": "start", "links": ["client-to-n3"], "target": "random", "of": None}),
          (1.0, {"kind": "partition", "phase": "stop", "links": ["client-to-n3"]})]
PLANNED = [{"kind": "partition", "at": 0.0, "duration": 1.0}, {"kind": "kill", "at": 30.0, "duration": 5.0}]
BROKER_LINE = "[{stamp}] INFO [Partition t-0 broker=1] ISR shrank <b>from 1,2,3</b> (kafka.cluster.Partition)\n"


@pytest.fixture(scope="module")
def faulted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """An aborted read whose ops all ran in a fault window, and its clean twin under the same fault;
    the invalid one with a run.log, broker logs (one line about t-0 at the anomaly, one about another
    partition) and a link out of the folder that must not be followed."""
    root = tmp_path_factory.mktemp("faulted")
    runs = {v: make_run(root, v, f"faulted-{v or 'clean'}", faults=AROUND, schedule=PLANNED) for v in ("", "aborted-read")}
    bad = runs["aborted-read"]
    journal = Journal.load(RunFolder(bad))
    assert journal is not None
    started = datetime.strptime(journal.started, "%Y-%m-%dT%H:%M:%S%z").replace(tzinfo=None)
    stamp = (started + timedelta(milliseconds=12)).strftime("%Y-%m-%dT%H:%M:%S,%f")[:-3]
    (bad / "nodes" / "n1").mkdir(parents=True)
    (bad / "nodes" / "n1" / "server.log").write_text(BROKER_LINE.format(stamp=stamp)
                                                     + BROKER_LINE.format(stamp=stamp).replace("t-0", "t-10"))
    (bad / "run.log").write_text("2026-01-01 00:00:00,000 INFO    MainThread harness.run.runner: hello\n")
    (bad / "workloads").mkdir()
    (bad / "workloads" / "outside.log").symlink_to(root / "faulted-clean" / "scenario.json")
    return {"clean": runs[""], "invalid": bad}


def test_an_examples_ops_carry_their_times_and_the_fault_active_then(faulted: dict[str, Path]) -> None:
    data = load(faulted["invalid"])
    [m] = data.marked
    assert (m.label, m.check, m.faults) == ("A1", "aborted-read", [1])
    assert [s.role for s in m.spans] == ["write", "read"] and [s.outcome for s in m.spans] == ["fail", "ok"]
    assert all(0 < s.start_s <= (s.end_s or 0) < 1 for s in m.spans)
    words = text(write_report(faulted["invalid"]).read_text())
    row = words[words.index("A1 c1"):]
    assert re.search(r"write p1 txn #9: invoked t=0\.009 s \(\d\d:\d\d:\d\d\.\d{3}\), commit called t=0\.\d+ s", row), row[:300]
    assert "aborted t=0.010 s" in row and "read r1 poll #16" in row
    assert "F1 partition n3 (random client-to-n3)" in row[:row.index("Partitions with anomalies")]
    clean = write_report(faulted["clean"]).read_text()
    assert load(faulted["clean"]).marked == [] and "when (its ops)" not in clean and 'id="anomaly-' not in clean


def test_the_timeline_marks_each_anomaly_and_a_clean_run_has_no_marks(faulted: dict[str, Path]) -> None:
    assert 'id="anomaly-A1"' in timeline_svg(load(faulted["invalid"])) and 'id="fault-F1"' in timeline_svg(load(faulted["invalid"]))
    assert 'id="anomaly-' not in timeline_svg(load(faulted["clean"]))


def test_lanes_show_each_process_around_the_anomaly_with_the_fault_across(faulted: dict[str, Path]) -> None:
    page = write_report(faulted["invalid"]).read_text()
    lanes = page[page.index('<section id="lanes">'):page.index('<section id="timeline">')]
    assert 'data-anomaly="A1"' in lanes and 'data-fault="F1"' in lanes
    assert lanes.count('data-own="1"') == 2  # the aborted write and the read outlined
    assert {"p1", "r1"} <= set(re.findall(r'text-anchor="end" font-size="11">([^<]+)<', lanes))
    assert 'class="op fail"' in lanes and 'class="op ok"' in lanes and "<script" not in lanes
    assert '<section id="lanes">' not in write_report(faulted["clean"]).read_text()


def test_anomalies_naming_the_same_ops_share_one_lane_view(faulted: dict[str, Path]) -> None:
    from dataclasses import replace

    from harness.report.lanes import lane_views

    data = load(faulted["invalid"])
    [m] = data.marked
    data.marked = [m, replace(m, label="A2"), replace(m, label="A3", spans=m.spans[:1])]  # A3: only the write
    views = lane_views(data)
    assert [(v.marked.label, v.also) for v in views] == [("A1", ["A2"]), ("A3", [])]


def test_planned_and_actual_starts_share_the_schedules_zero(faulted: dict[str, Path]) -> None:
    from harness.cli.dryrun import PLAN_ZERO
    from harness.report.clock import SCHEDULE_ZERO

    data = load(faulted["invalid"])
    assert [(f.planned_s, f.start_s) for f in data.faults] == [(0.0, 0.0)]
    assert data.never_started == [("kill", 30.0)]
    words = text(write_report(faulted["invalid"]).read_text())
    assert SCHEDULE_ZERO.replace("'", "&#39;") in words and "Planned, never started: kill at 30.0 s" in words
    assert "planned s from s late s" in words and "F1 partition n3 (random client-to-n3) 0.0 0.0 +0.00" in words
    assert PLAN_ZERO.split(" (")[0] == SCHEDULE_ZERO.split(" (")[0]  # the dry run says the same zero


def test_every_log_link_is_a_file_inside_the_run_folder(faulted: dict[str, Path]) -> None:
    run_dir = faulted["invalid"]
    page = write_report(run_dir).read_text()
    hrefs = [h for h in re.findall(r'href="([^"#][^"]*)"', page)]
    assert {"run.log", "history.txt", "nodes/n1/server.log"} <= set(hrefs)
    assert "workloads/outside.log" not in hrefs  # a symbolic link out of the folder
    for h in hrefs:
        target = (run_dir / unquote(h)).resolve()
        assert target.is_file() and target.is_relative_to(run_dir.resolve()), h


def test_a_run_on_a_shared_cluster_links_the_clusters_logs_and_quotes_them(faulted: dict[str, Path]) -> None:
    """A pytest session's, a soak's runs: the brokers' logs are in the cluster's own run folder, a
    sibling in the results folder; the links go there (relative, so a zip of the folder keeps them)."""
    root = faulted["invalid"].parent
    run_dir, cluster = root / "shared-cluster-run", root / "20261125-000000-pytest-local-abcd"
    shutil.copytree(faulted["invalid"], run_dir, symlinks=True)
    cluster.mkdir()
    shutil.move(run_dir / "nodes", cluster / "nodes")
    (cluster / "toxiproxy.log").write_text("proxies up\n")
    journal = Journal.load(RunFolder(run_dir))
    assert journal is not None
    journal.cluster_dir = str(cluster)
    journal.save(RunFolder(run_dir))
    page = write_report(run_dir).read_text()
    hrefs = re.findall(r'href="([^"#][^"]*)"', page)
    assert {f"../{cluster.name}/nodes/n1/server.log", f"../{cluster.name}/toxiproxy.log", "run.log"} <= set(hrefs)
    for h in hrefs:
        target = (run_dir / unquote(h)).resolve()
        assert target.is_file() and target.is_relative_to(root.resolve()), h
    assert '<div class="excerpt" data-anomaly="A1">' in page  # quoted from the cluster's server.log


def test_broker_lines_about_the_anomalys_partition_are_quoted_escaped(faulted: dict[str, Path]) -> None:
    page = write_report(faulted["invalid"]).read_text()
    excerpt = page[page.index('<div class="excerpt" data-anomaly="A1">'):]
    excerpt = excerpt[:excerpt.index("</div>")]
    assert "[Partition t-0 broker=1] ISR shrank &lt;b&gt;from 1,2,3&lt;/b&gt;" in excerpt
    assert "t-10" not in excerpt and "<b>" not in excerpt
    assert 'class="excerpt"' not in write_report(faulted["clean"]).read_text()


def test_history_txt_has_one_line_per_op_in_time_order(faulted: dict[str, Path]) -> None:
    run_dir = faulted["invalid"]
    write_report(run_dir)
    lines = [ln for ln in (run_dir / "history.txt").read_text().splitlines() if not ln.startswith("#")]
    ops = store.read_table(run_dir, "ops", columns=["time", "process", "type", "f"])
    assert len(lines) == len(ops)
    times = [float(ln.split()[0]) for ln in lines]
    assert times == sorted(times) and [ln.split()[2:5] for ln in lines] == ops[["process", "type", "f"]].astype(str).values.tolist()
    assert any(re.search(r" ok +txn +t-0@0=a1 t-1@0=a2$", ln) for ln in lines)  # a commit with its offsets
    assert any(re.search(r" invoke +txn +t-0=a1 t-1=a2$", ln) for ln in lines)  # its invoke without them


def test_fault_labels_get_rows_that_keep_them_apart() -> None:
    rows = label_rows([0.0, 0.1, 0.2, 30.0], ["F1 a long label of a fault"] * 4, span_s=60.0)
    assert rows[:3] == [0, 1, 2] and rows[3] == 0  # far apart: the first row again
    assert label_rows([0.0] * 6, ["F"] * 6, 60.0)[-1] is None  # no row left: number only


def test_small_fixes_latency_ticks_zoom_and_folded_checks(runs: dict[str, Path]) -> None:
    assert [plain_number(v) for v in (1000.0, 20.0, 0.5)] == ["1,000", "20", "0.5"]
    assert zoom_window(0, pd.Series(range(9))) == (0, 8)  # a 9-offset partition is not drawn on 0..30
    assert zoom_window(100, pd.Series(range(200))) == (85, 115)
    words = text(write_report(runs["duplicate"]).read_text())
    assert "0 found: lost-write , aborted-read ," in words  # clean checks in one line, under the fired one
    assert words.index("duplicate 1") < words.index("0 found:")


#: One fault of each category but the broker's; drawn blue ("network") before each model said what it acts on.
BY_CATEGORY = [
    (1, {"kind": "kill-executor", "phase": "start", "workload": "spark-job", "executor": "0", "pid": 11}),
    (2, {"kind": "kill-executor", "phase": "stop", "workload": "spark-job", "executor": "0"}),
    (3, {"kind": "hold-requests", "phase": "start", "links": ["client-to-n1"], "api": ["EndTxn"]}),
    (4, {"kind": "hold-requests", "phase": "stop", "links": ["client-to-n1"]}),
    (5, {"kind": "set-transaction-version", "phase": "start", "level": 1, "was": 2}),
    (6, {"kind": "set-transaction-version", "phase": "stop", "level": 2}),
    (7, {"kind": "kill-workload", "phase": "start", "workload": "reader-0"}),
    (8, {"kind": "kill-workload", "phase": "stop", "workload": "reader-0"}),
    (8.5, {"kind": "partition", "phase": "start", "links": ["client-to-n3"], "target": "random", "of": None}),
    (9, {"kind": "partition", "phase": "stop", "links": ["client-to-n3"]}),
]


def test_each_fault_is_drawn_and_named_by_the_category_its_model_gives(tmp_path: Path) -> None:
    page = write_report(make_run(tmp_path, name="run-categories", faults=BY_CATEGORY)).read_text()
    shades = dict(re.findall(r'<g id="fault-F(\d)">\s*<path [^>]*?style="fill: (#[0-9a-f]{6})', page))
    assert shades == {"1": "#8c564b", "2": "#17becf", "3": "#bcbd22", "4": "#ff7f0e", "5": "#1f77b4"}, shades
    assert ("Shaded: fault windows (blue: network links, orange: workload processes, brown: the Spark cluster, "
            "cyan: Kafka requests on the wire, olive: cluster features)") in text(page)
    assert "red: broker processes" not in text(page)  # no broker fault in this run


def test_an_external_runs_report_shows_the_cluster_as_read(tmp_path: Path, runs: dict[str, Path]) -> None:
    facts = {"kafka_version": "4.1.1", "cluster_id": "q1Zx", "brokers": {"1": "10.0.0.11:9092"},
             "features": {"transaction.version": 2}, "broker_settings": {"1": {"min.insync.replicas": "2"}},
             "inventory": "/etc/staging.yaml"}
    run_dir = make_run(tmp_path, name="run-external", journal_fields={"cluster": facts,
                                                                       "cleanup_problems": ["topic t.x: denied"]})
    page = text(write_report(run_dir).read_text())
    assert "Cluster (as read)" in page and "min.insync.replicas" in page and "/etc/staging.yaml" in page, page
    assert "topic t.x: denied" in page
    # a built-in backend's run has no such section
    assert "Cluster (as read)" not in text(write_report(runs["clean"]).read_text())
