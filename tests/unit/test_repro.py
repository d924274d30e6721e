"""``eos-chaos repro``: a maintainer's evidence gathered from a run folder alone, on run folders made
from a hand-written history (no cluster): a torn transaction of ``tx-1`` with the wire proxy's
events of it and of another producer, broker and client logs with lines inside and outside the
window, a scenario with a fault inside the window and one far from it."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner, Result

from harness.cli import app
from harness.history.builder import History
from harness.history.model import INFO, READ_UNCOMMITTED, tp_key
from harness.report import repro, repro_md
from harness.report.loaded import read_verdict
from harness.report.logclip import clip, stamp_of
from harness.report.wire_events import TXN_APIS
from harness.rundir.journal import Journal
from harness.rundir.runfolder import RunFolder
from tests.unit.test_report import make_run

WIDE = {"COLUMNS": "400", "TERMINAL_WIDTH": "400"}
RUN = "20261125-000000-torn-ab12"
TOPIC = "eos-a.ab12"
#: The scenario as run: two producers and a reader, a kill in the anomaly's window, a pause long after it.
RESOLVED: dict[str, Any] = {
    "name": "torn", "description": "hand-written", "duration": 60.0, "topics": [TOPIC], "partitions": 2,
    "workloads": [{"kind": "txn-producer", "count": 2, "settings": {"values_per_txn": 2, "topics": [TOPIC]},
                   "library": "confluent-kafka", "client": {"socket.timeout.ms": 2000}},
                  {"kind": "reader", "count": 1, "settings": {}, "library": "confluent-kafka", "client": {}}],
    "faults": [{"kind": "kill", "at": 2.0, "duration": 4.0, "target": "leader", "of": f"{TOPIC}/0"},
               {"kind": "pause", "at": 40.0, "duration": 5.0, "target": "random"}],
    "broker_config": {"transaction.max.timeout.ms": "60000"},
}
FAULTS = [(2, {"kind": "kill", "phase": "start", "node": 2, "target": "leader", "of": f"{TOPIC}/0"}),
          (6, {"kind": "kill", "phase": "stop", "node": 2}),
          (40, {"kind": "pause", "phase": "start", "node": 1, "target": "random", "of": None}),
          (45, {"kind": "pause", "phase": "stop", "node": 1})]


def torn_history() -> History:
    """tx-1 commits a1, a2; tx-2 commits c1; tx-1's next transaction (unknown outcome) leaves b1
    committed and b2 not: torn. Ops are 1 ms apart in the run folder (``make_run``)."""
    h = History()
    h.init("txn-producer-0.0", "tx-1")                                                    # ops 0, 1
    h.init("txn-producer-1.0", "tx-2")                                                    # 2, 3
    h.txn("txn-producer-0.0", [(TOPIC, 0, "a1", 0), (TOPIC, 1, "a2", 0)], txn_id="tx-1")  # 4, 5
    h.txn("txn-producer-1.0", [(TOPIC, 0, "c1", 2)], txn_id="tx-2")                       # 6, 7
    h.txn("txn-producer-0.0", [(TOPIC, 0, "b1", None), (TOPIC, 1, "b2", None)], outcome=INFO,
          txn_id="tx-1")                                                                  # 8, 9: 9 ms to 10 ms
    log = {tp_key(TOPIC, 0): [(0, "a1"), (2, "c1"), (4, "b1")], tp_key(TOPIC, 1): [(0, "a2")]}
    h.scan(log)
    h.scan({**log, tp_key(TOPIC, 1): [(0, "a2"), (2, "b2")]}, READ_UNCOMMITTED)
    return h


def _wall_zero(run_dir: Path) -> datetime:
    """The run's t=0 in local time, as the report's clock has it without a run.log (journal.started)."""
    j = Journal.load(RunFolder(run_dir))
    assert j is not None
    return datetime.strptime(j.started, "%Y-%m-%dT%H:%M:%S%z").replace(tzinfo=None)


def _unix_us(run_dir: Path, t_s: float) -> int:
    j = Journal.load(RunFolder(run_dir))
    assert j is not None
    return int((datetime.strptime(j.started, "%Y-%m-%dT%H:%M:%S%z").timestamp() + t_s) * 1e6)


def _kafka_stamp(run_dir: Path, t_s: float) -> str:
    w = _wall_zero(run_dir) + timedelta(seconds=t_s)
    return f"[{w:%Y-%m-%d %H:%M:%S},{w.microsecond // 1000:03d}]"


def make_torn_run(root: Path) -> Path:
    run_dir = make_run(root, name=RUN, history=torn_history(), faults=FAULTS, schedule=RESOLVED["faults"],
                       journal_fields={"resolved": RESOLVED})
    ev = [  # the wire proxy's events: tx-1's requests, one of tx-2's (left out), a rule, a bad line
        {"event": "rule-added", "rule": 1, "spec": {"apis": ["EndTxn"], "action": "hold"}, "t": 0.0095},
        {"event": "match", "link": "client-to-n2", "conn": 3, "api": "AddPartitionsToTxn", "api_key": 24, "version": 3,
         "correlation_id": 4, "client_id": "rdkafka", "details": {"transactional_id": "tx-1", "producer_id": 7,
                                                                 "producer_epoch": 0}, "t": 0.0091},
        {"event": "match", "link": "client-to-n1", "conn": 5, "api": "Produce", "api_key": 0, "version": 9,
         "correlation_id": 9, "client_id": "rdkafka", "details": {"transactional_id": "tx-1", "acks": -1}, "t": 0.0092},
        {"event": "match", "link": "client-to-n2", "conn": 3, "api": "EndTxn", "api_key": 26, "version": 1,
         "correlation_id": 6, "client_id": "rdkafka", "action": "hold", "until": "client-gone", "hold_ms": 300,
         "client_gone": False, "details": {"transactional_id": "tx-1", "producer_id": 7, "producer_epoch": 0,
                                           "committed": True}, "t": 0.0096},
        {"event": "match", "link": "client-to-n2", "conn": 8, "api": "EndTxn", "api_key": 26, "version": 1,
         "correlation_id": 2, "client_id": "rdkafka", "action": "hold", "details": {"transactional_id": "tx-2",
                                                                                    "producer_id": 8}, "t": 0.0097},
        {"event": "deliver", "link": "client-to-n2", "conn": 3, "api": "EndTxn", "version": 1, "correlation_id": 6,
         "client_gone": True, "held_ms": 3000.2, "details": {"transactional_id": "tx-1", "producer_id": 7,
                                                             "producer_epoch": 0, "committed": True}, "t": 3.0096},
        {"event": "response", "link": "client-to-n2", "conn": 3, "api": "EndTxn", "version": 1, "correlation_id": 6,
         "client_gone": True, "to_client": False, "error": "NONE",
         "details": {"transactional_id": "tx-1", "producer_id": 7, "producer_epoch": 0, "committed": True}, "t": 3.0097},
        {"event": "reset", "rules": 1, "released": 0, "t": 50.0},
    ]
    lines = [orjson.dumps({**{k: v for k, v in e.items() if k != "t"}, "unix_us": _unix_us(run_dir, e["t"])}).decode()
             for e in ev]
    (run_dir / "wire-events.jsonl").write_text("\n".join(lines[:3] + ["not json"] + lines[3:]) + "\n")
    node = run_dir / "nodes" / "n2"
    node.mkdir(parents=True)
    s = lambda t: _kafka_stamp(run_dir, t)  # noqa: E731
    (node / "server.log").write_text("\n".join([
        f"{s(-20)} INFO [Partition {TOPIC}-1 broker=2] long before the window (kafka.cluster.Partition)",
        f"{s(0.001)} INFO [TransactionCoordinator id=2] Initialized transactionalId tx-1 with producerId 7 and producer epoch 0",
        f"{s(0.002)} INFO [Partition other-topic.ab12-1 broker=2] a partition of no interest",
        f"{s(0.0095)} INFO [Partition {TOPIC}-10 broker=2] a longer partition name",
        f"{s(3.0097)} INFO [TransactionCoordinator id=2] Completed rollback of ongoing transaction for producerId=7",
        "\tat a.stack.Trace(line) of the line before",
        f"{s(4.0)} INFO [Partition {TOPIC}-1 broker=2] ISR updated (kafka.cluster.Partition)",
        f"{s(30)} INFO [Partition {TOPIC}-1 broker=2] long after the window (kafka.cluster.Partition)",
    ]) + "\n")
    t0 = _unix_us(run_dir, 0) / 1e6
    (run_dir / "workloads").mkdir()
    (run_dir / "workloads" / "txn-producer-0.log").write_text("\n".join([
        f"%7|{t0 - 30:.3f}|EOS|rdkafka#producer-1| [thrd:main]: before the window",
        f"%7|{t0 + 0.0096:.3f}|EOS|rdkafka#producer-1| [thrd:main]: EndTxn sent",
        f"%7|{t0 + 2.0:.3f}|EOS|rdkafka#producer-1| [thrd:main]: EndTxn timed out",
    ]) + "\n")
    (run_dir / "workloads" / "txn-producer-1.log").write_text("no stamp here\nnor here\n")
    (run_dir / "workloads" / "reader-0.log").write_text("")
    return run_dir


@pytest.fixture(scope="module")
def torn(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_torn_run(tmp_path_factory.mktemp("runs"))


@pytest.fixture(scope="module")
def gathered(torn: Path) -> repro.Repro:
    return repro.gather(torn, read_verdict(torn))


def cli(*args: str) -> Result:
    return CliRunner(env=WIDE).invoke(app, list(args))


def test_the_torn_transaction_is_told_with_its_transactional_id_producer_id_and_epoch(gathered: repro.Repro) -> None:
    a = gathered.anomaly
    assert a is not None and a.check == "torn-transaction" and a.number == 1 and a.count == 1
    assert gathered.status == "invalid"
    [t] = gathered.txns
    assert (t.index, t.process, t.txn_id, t.outcome) == (8, "txn-producer-0.0", "tx-1", "info")
    assert t.partitions == [f"{TOPIC}-0", f"{TOPIC}-1"] and t.values == 2
    assert t.producers == ["producer id 7, epoch 0"]
    lo, hi = gathered.window
    assert lo == pytest.approx(0.009 - repro.MARGIN_S, abs=1e-6) and hi == pytest.approx(0.010 + repro.MARGIN_S, abs=1e-6)


def test_the_wire_events_are_the_window_s_less_the_other_producers(gathered: repro.Repro) -> None:
    said = [e.says() for e in gathered.wire]
    assert not any("tx-2" in s for s in said), said  # another producer the history records
    assert not any(s.startswith("reset") for s in said)  # at t=50 s: out of the window
    assert any(s.startswith("rule-added") for s in said)
    deliver = next(s for s in said if s.startswith("deliver"))
    assert "EndTxn v1" in deliver and "held 3000.2 ms" in deliver and "client gone" in deliver
    response = next(s for s in said if s.startswith("response"))
    assert "NONE, the client had gone" in response and "producer id 7" in response and "commit" in response
    assert "1 lines that are not JSON objects left out" in gathered.wire_says


def test_the_api_versions_are_the_requests_the_proxy_logged(gathered: repro.Repro) -> None:
    seen = {a.api: a for a in gathered.api_versions}
    assert [a.api for a in gathered.api_versions][:4] == list(TXN_APIS)
    assert seen["EndTxn"].versions == {1: 2} and seen["AddPartitionsToTxn"].versions == {3: 1}
    assert seen["Produce"].versions == {9: 1} and seen["InitProducerId"].versions == {}
    assert seen["EndTxn"].clients == ["rdkafka"]


def test_the_timeline_puts_history_faults_and_wire_in_time_order(gathered: repro.Repro) -> None:
    whats = [m.what for m in gathered.timeline]
    order = [next(i for i, w in enumerate(whats) if key in w) for key in
             ("txn #8 begins", "match AddPartitionsToTxn", "commit called", "match EndTxn", "txn #8: outcome unknown",
              "fault F1 begins", "deliver EndTxn")]
    assert order == sorted(order), whats
    assert [m.t_s for m in gathered.timeline] == sorted(m.t_s for m in gathered.timeline)


def test_broker_lines_are_those_naming_the_anomaly_within_its_window(gathered: repro.Repro) -> None:
    [broker] = [lg for lg in gathered.logs if lg.source == "nodes/n2/server.log"]
    text = "\n".join(broker.clipped.lines)
    assert "Initialized transactionalId tx-1" in text and "producerId=7" in text and "ISR updated" in text
    assert "a.stack.Trace" not in text  # a continuation line names nothing
    for absent in ("long before", "long after", "no interest", "longer partition name"):
        assert absent not in text
    assert "transactional.id tx-1" in broker.picked_by and "producer id 7" in broker.picked_by


def test_client_logs_are_clipped_by_their_own_stamps_or_given_whole(gathered: repro.Repro) -> None:
    logs = {lg.source: lg for lg in gathered.logs}
    assert list(logs)[0] == "workloads/txn-producer-0.log"  # the anomaly's process first
    rdkafka = logs["workloads/txn-producer-0.log"].clipped.lines
    assert [line.rsplit(": ", 1)[1] for line in rdkafka] == ["EndTxn sent", "EndTxn timed out"]
    whole = logs["workloads/txn-producer-1.log"]
    assert whole.clipped.unstamped and whole.clipped.lines == ["no stamp here", "nor here"]
    assert ("workloads/reader-0.log", "empty") in gathered.quiet_logs


def test_the_minimal_scenario_keeps_the_window_s_faults_and_one_producer(gathered: repro.Repro, tmp_path: Path) -> None:
    from harness.run.scenario import load

    assert gathered.minimal is not None
    path = tmp_path / "minimal-scenario.yaml"
    path.write_text(gathered.minimal)
    sc = load(str(path))  # a scenario eos-chaos run accepts
    assert [(w.kind, w.count) for w in sc.workloads] == [("txn-producer", 1)]
    assert [f.kind for f in sc.faults] == ["kill"]  # the pause at 40 s is far from the window
    assert sc.topics == ["eos-a"] and sc.faults[0].of == "eos-a/0"  # the run's tag taken off
    assert sc.expect.valid is False and sc.expect.fires == ["torn-transaction"]
    assert sc.duration == 11.0  # the kill's end (6 s), the window's end (5.01 s) + 5 s
    assert gathered.minimal_command == ("eos-chaos run minimal-scenario.yaml --backend local --seed 7 --duration 11 "
                                        "--kafka-version 4.1.1 --transaction-version 2")


def test_report_md_reads_as_an_issue(gathered: repro.Repro) -> None:
    md = repro_md.report_md(gathered)
    assert md.startswith(f"# torn-transaction in eos-chaos scenario `{RUN}`\n\n## Summary\n")
    for section in ("## Summary", "## Versions", "## Configuration", "## Timeline", "## Logs", "## Reproduce",
                    "### A smaller scenario (draft)", "## Files"):
        assert f"\n{section}\n" in md, section
    assert "| Kafka (brokers) | 4.1.1 |" in md and "confluent-kafka 2.12.0, librdkafka 2.12.0" in md
    assert "| transaction.version (finalized, read back from the cluster) | 2; the release's default |" in md
    assert "| EndTxn | v1 (2) | rdkafka |" in md and "| InitProducerId | not seen | – |" in md
    assert '{"socket.timeout.ms": 2000}' in md and '{"transaction.max.timeout.ms": "60000"}' in md
    assert "<details><summary>nodes/n2/server.log:" in md and "</details>" in md
    assert "eos-chaos run unit-run" not in md and f"eos-chaos run {RUN} --backend local --seed 7 --duration 10" in md
    assert "transactional.id `tx-1`" in md and "producer id 7, epoch 0" in md


def test_report_md_is_cut_to_fit_an_issue(gathered: repro.Repro, monkeypatch: pytest.MonkeyPatch) -> None:
    lg = gathered.logs[0]
    big = repro.LogExcerpt(lg.source, lg.file, repro.Clipped([f"line {i} " + "x" * 300 for i in range(3000)], 3000),
                           "every line")
    monkeypatch.setattr(gathered, "logs", [big])
    md = repro_md.report_md(gathered)
    assert len(md) <= repro_md.MD_MAX_CHARS and "earlier lines in logs/" in md


def test_repro_writes_its_folder_and_replaces_an_earlier_one(torn: Path) -> None:
    r = cli("repro", str(torn))
    assert r.exit_code == 0, r.output
    out = torn / "repro"
    assert "torn-transaction example 1 of 1 found" in r.output and str(out / "REPORT.md") in r.output
    names = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert names == {"REPORT.md", "repro.json", "wire-events.jsonl", "history.txt", "logs/txn-producer-0.log",
                     "logs/txn-producer-1.log", "logs/n2-server.log", "minimal-scenario.yaml"}
    summary = json.loads((out / "repro.json").read_text())
    assert summary["anomaly"]["check"] == "torn-transaction" and summary["api_versions"]["EndTxn"] == {"v1": 2}
    assert summary["transactions"][0]["producers"] == ["producer id 7, epoch 0"]
    history = (out / "history.txt").read_text()
    assert "txn-producer-0.0" in history and history.startswith("# ")
    stale = out / "logs" / "gone.log"
    summary["files"].append("logs/gone.log")
    (out / "repro.json").write_text(json.dumps(summary))
    stale.write_text("from an earlier run")
    assert cli("repro", str(torn)).exit_code == 0
    assert not stale.exists() and (out / "REPORT.md").exists()


def test_a_valid_run_has_nothing_to_report(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, name="valid-run")
    r = cli("repro", str(run_dir))
    assert r.exit_code == 0 and "nothing to report (valid)" in r.output
    assert not (run_dir / "repro").exists()


def test_an_unknown_run_says_so_and_still_gathers(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, name="unknown-run")
    v = json.loads((run_dir / "verdict.json").read_text())
    v.update(valid="unknown", unknown_because=["check duplicate crashed: MemoryError"])
    (run_dir / "verdict.json").write_text(json.dumps(v))
    r = cli("repro", str(run_dir), "--out", str(tmp_path / "evidence"))
    assert r.exit_code == 0, r.output
    assert "verdict is unknown (check duplicate crashed: MemoryError)" in r.output
    md = (tmp_path / "evidence" / "REPORT.md").read_text()
    assert "verdict unknown" in md and "check duplicate crashed: MemoryError" in md
    assert "the whole run (no check found anything)" in md and "no draft" in md


@pytest.mark.parametrize(("setup", "args", "said"), [
    ("none", [], "does not exist"),
    ("no-verdict", [], "has no verdict.json"),
    ("file", [], "is a file, not a run folder"),
    ("no-scenario", [], "has no scenario.json: not a run folder of eos-chaos run"),
    ("torn", ["--example", "duplicate"], "check 'duplicate' found nothing in this run; checks that fired: torn-transaction"),
    ("torn", ["--example", "torn-transaction:9"], "give CHECK:N with N from 1 to 1"),
    ("torn", ["--out", "{busy}"], "holds files, and not an earlier eos-chaos repro's"),
])
def test_bad_input_is_exit_2_naming_what_and_where(tmp_path: Path, torn: Path, setup: str, args: list[str], said: str) -> None:
    target = {"none": tmp_path / "nope", "no-verdict": tmp_path / "half", "file": tmp_path / "f", "torn": torn,
              "no-scenario": tmp_path / "copy"}[setup]
    if setup == "no-scenario":
        shutil.copytree(torn, target, ignore=shutil.ignore_patterns("repro"))
        (target / "scenario.json").unlink()
    if setup == "no-verdict":
        (target / "history").mkdir(parents=True)
    if setup == "file":
        target.write_text("x")
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "mine.txt").write_text("x")
    r = cli("repro", str(target), *[a.replace("{busy}", str(busy)) for a in args])
    assert r.exit_code == 2, r.output
    assert said in " ".join(r.output.split()), r.output
    assert "Traceback" not in r.output


def test_an_example_can_be_picked(torn: Path, tmp_path: Path) -> None:
    r = cli("repro", str(torn), "--example", "torn-transaction:1", "--out", str(tmp_path / "picked"))
    assert r.exit_code == 0 and "torn-transaction example 1" in r.output


@pytest.mark.parametrize(("line", "stamp"), [
    ("[2026-11-25 20:45:16,285] INFO x", datetime(2026, 11, 25, 20, 45, 16, 285000)),
    ("[2026-11-25T20:45:16,285] INFO x", datetime(2026, 11, 25, 20, 45, 16, 285000)),
    ("2026-11-25T20:45:16.285 [main] INFO org.apache.kafka", datetime(2026, 11, 25, 20, 45, 16, 285000)),
    ("2026-11-25 20:45:16,285 INFO    MainThread harness", datetime(2026, 11, 25, 20, 45, 16, 285000)),
    ('{"transactionalId":"t-1","stage":"ProcessLoop","time":"2026/11/25 20:51:03:270"}',
     datetime(2026, 11, 25, 20, 51, 3, 270000)),
    ("copied 1882", None),
    ("2026-13-45 25:61:61 not a date", None),
])
def test_log_stamps_in_the_formats_the_workloads_write(line: str, stamp: datetime | None) -> None:
    assert stamp_of(line) == stamp


def test_librdkafka_stamps_are_seconds_since_the_epoch_in_the_run_s_zone() -> None:

    assert stamp_of("%7|1795637217.572|TXN|rdkafka#producer-1| [thrd:main]: x", UTC) == \
        datetime(2026, 11, 25, 20, 6, 57, 572000)


def test_clip_stops_past_the_window_and_caps_what_it_keeps(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("".join(f"[2026-11-25 20:00:{s:02d},000] INFO line {s}\n" for s in range(60)))
    c = clip(log, datetime(2026, 11, 25, 20, 0, 10), datetime(2026, 11, 25, 20, 0, 19), cap=3)
    assert c.matched == 10 and [x.rsplit(" ", 1)[1] for x in c.lines] == ["10", "11", "12"]
    assert c.first == datetime(2026, 11, 25, 20, 0, 10) and not c.unstamped


def test_clip_takes_a_line_a_little_out_of_order_and_stops_well_past_the_window(tmp_path: Path) -> None:
    log = tmp_path / "threads.log"
    stamp = "2026-11-25T20:00:{:02d}.000 [thread-{}] INFO {}\n".format
    log.write_text(stamp(19, 1, "in") + stamp(21, 2, "just past") + stamp(19, 3, "late but in")
                   + stamp(40, 1, "far past") + stamp(19, 4, "after the scan stopped"))
    c = clip(log, datetime(2026, 11, 25, 20, 0, 10), datetime(2026, 11, 25, 20, 0, 19))
    assert [x.rsplit("INFO ", 1)[1] for x in c.lines] == ["in", "late but in"]


def make_fatal_commit_run(root: Path) -> Path:
    """A valid run whose producer met a fatal INVALID_TXN_STATE on a commit (kafka-bug-20785: the
    coordinator had aborted the transaction; the values are not committed, and the run is valid)."""
    h = History()
    h.init("txn-producer-0.0", "tx-1")
    h.txn("txn-producer-0.0", [(TOPIC, 0, "a1", 0)], txn_id="tx-1")
    h.txn("txn-producer-0.0", [(TOPIC, 0, "a2", None)], outcome="fail", txn_id="tx-1",
          error="INVALID_TXN_STATE: The producer attempted a transactional operation in an invalid state.")
    h.scan({tp_key(TOPIC, 0): [(0, "a1")]})
    return make_run(root, name="fatal-commit-run", history=h, faults=[], journal_fields={"resolved": RESOLVED})


def test_a_client_error_of_a_valid_run_is_told_with_error(tmp_path: Path) -> None:
    run_dir = make_fatal_commit_run(tmp_path)
    assert read_verdict(run_dir).label == "valid"
    assert "nothing to report (valid); --error NAME tells a client error" in cli("repro", str(run_dir)).output
    r = cli("repro", str(run_dir), "--error", "INVALID_TXN_STATE", "--out", str(tmp_path / "kit"))
    assert r.exit_code == 0 and "the first of 1 transactions that ended with INVALID_TXN_STATE" in r.output, r.output
    md = (tmp_path / "kit" / "REPORT.md").read_text()
    assert md.startswith("\n# INVALID_TXN_STATE in eos-chaos scenario") or "# INVALID_TXN_STATE in eos-chaos" in md
    assert "**1** transaction of the run ended with the error `INVALID_TXN_STATE`" in md and "verdict: valid" in md
    draft = (tmp_path / "kit" / "minimal-scenario.yaml").read_text()
    assert "errors:\n  - INVALID_TXN_STATE" in draft and "fires" not in draft


def test_an_error_no_transaction_met_is_exit_2_naming_those_met(tmp_path: Path) -> None:
    run_dir = make_fatal_commit_run(tmp_path)
    r = cli("repro", str(run_dir), "--error", "PRODUCER_FENCED")
    assert r.exit_code == 2 and "no transaction of this run ended with it; errors the transactions ended with: " \
        "INVALID_TXN_STATE" in " ".join(r.output.split()), r.output
    r = cli("repro", str(run_dir), "--error", "INVALID_TXN_STATE", "--example", "duplicate")
    assert r.exit_code == 2 and "give one" in r.output
