"""report.html and compare, on run folders made from hand-written histories (no cluster): the
verdict comes first with its examples, partitions with anomalies get an order plot, fault windows
and node states are drawn and listed, the page loads nothing from anywhere — checked in a real
headless Chromium, with a page that does fetch something as the negative control."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from harness import outcome, runinfo
from harness.checker import NO_FINAL_READS, check
from harness.history import store
from harness.journal import Journal
from harness.report import REPORT_FILE, cell, write_report
from harness.report.compare import compare
from harness.report.data import anomaly_positions, fault_windows, label, load, node_lanes, spark_events
from harness.report.plots import timeline_svg
from harness.runfolder import RunFolder
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


def make_run(root: Path, variant: str = "", name: str = "unit-run", died: bool = False) -> Path:
    """A run folder as ``eos-chaos run`` leaves it: scenario.json, journal.json, history, Parquet,
    verdict; ``died``: as a runner killed before its final reads left it."""
    run_dir = root / name
    (run_dir / "history").mkdir(parents=True)
    h = clean(variant)
    if died:
        h.ops = [op for op in h.ops if op["process"] != "final"]
    ops = [{**op, "time": op["time"] * 1000} for op in h.ops]  # 1 ms apart; the faults come later
    ops += [{"time": at * SECOND, "process": "nemesis", "type": "info" if v["phase"] == "start" else "ok",
             "f": "fault", "value": v} for at, v in FAULTS]
    (run_dir / "history" / "runner.jsonl").write_bytes(b"".join(orjson.dumps(o) + b"\n" for o in ops))
    scenario = {"name": name, "description": f"hand-written history ({variant or 'clean'})", "duration": 10.0}
    (run_dir / "scenario.json").write_text(json.dumps({**scenario, "seed": 7, "backend": "local"}))
    journal = Journal(scenario=name, source=name, resolved=scenario, seed=7, backend="local", kafka_version="4.1.1",
                      versions={"kafka": "4.1.1", "confluent_kafka": "2.12.0", "librdkafka": "2.12.0",
                                "pyspark": "4.0.0", "python": "3.11.7", "eos_chaos": "0.1.0"},
                      command=f"eos-chaos run {name} --backend local --seed 7 --duration 10", healed=True,
                      features={"transaction.version": 2, "metadata.version": 33})
    journal.save(RunFolder(run_dir))
    all_ops, truncated = store.read_ops(run_dir)
    tables = store.flatten(all_ops, truncated)
    store.save(tables, run_dir)
    outcome.write(outcome.assemble(check(tables), journal, journal.expected), RunFolder(run_dir))
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


def test_the_report_renders_in_chromium_and_fetches_nothing(runs: dict[str, Path]) -> None:
    shown = render(write_report(runs["duplicate"]))
    assert shown.plots_rendered == 2, shown.dom[:500]  # timeline + the partition the duplicate names
    assert shown.requests == []
    assert "INVALID" in shown.dom


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
    verdict = {"checks": {
        "duplicate": {"count": 1, "examples": [{"value": "a1", "positions": [{"topic": "t", "partition": 0, "offset": 0},
                                                                             {"topic": "t", "partition": 0, "offset": 8}]}]},
        "copy-exactly-once": {"count": 1, "examples": [{"orphan_output": at, "copies": {"topic": "t", "partition": 0,
                                                                                        "offset": 40}}]},
        "lost-write": {"count": 0, "examples": []}}}
    assert anomaly_positions(verdict) == {("t", 0): {"duplicate": [0, 8], "copy-exactly-once": [40]},
                                          ("o", 1): {"copy-exactly-once": [9]}}
    assert cell(at) == "o-1@9" and cell({"topic": "o"}) == "topic: o"


def test_fault_windows_come_from_the_histories_faults_table_not_the_runners_file(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, name="run-parquet-only")
    (run_dir / "history" / "runner.jsonl").unlink()  # only the Parquet history is left
    assert [(w.kind, w.start_s, w.end_s) for w in load(run_dir).faults] == [("kill", 2, 6), ("partition", 3, 5),
                                                                            ("pause", 7, None)]
