"""The Go clients' own loop in ``bench producer`` (``franz-go-perf``, ``sarama-perf``) without a
cluster: the names, the command (the bridge's producer settings, not a copy of them), the run as
ProducerPerformance's is run (a stand-in tool printing its lines), the bridge's cost beside it; the
perf mode's Go tests and the real binary's answer to bad input."""

from __future__ import annotations

import re
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from harness.base.errors import ConfigError, HarnessError
from harness.bench import goperf, producer
from harness.bench.producer import Shape, bridge_costs, libraries_to_prepare, parse_producers
from harness.bench.window import COMPLETE_COMMIT, ONGOING, PRODUCER_PERFORMANCE, bridge_cost, covered_s, parse_periodic
from harness.workloads.client import TRANSACTION_TIMEOUT_MS
from harness.workloads.clients import DEFAULT_FRANZ_VERSION, DEFAULT_SARAMA_VERSION, go_build, gobridge
from tests.unit.test_go_clients import Fake

ROOT = Path(__file__).resolve().parents[2]
PERF_GO = ROOT / "harness" / "workloads" / "clients" / "go_src" / "common" / "perf.go"
FRANZ_PERF, SARAMA_PERF = f"franz-go-perf@{DEFAULT_FRANZ_VERSION}", f"sarama-perf@{DEFAULT_SARAMA_VERSION}"


# ---------------------------------------------------------------- names

def test_one_list_names_bridged_clients_their_own_loops_and_the_tools() -> None:
    assert parse_producers("confluent-kafka,franz-go,franz-go-perf,sarama,sarama-perf") == [
        "confluent-kafka", f"franz-go@{DEFAULT_FRANZ_VERSION}", FRANZ_PERF, f"sarama@{DEFAULT_SARAMA_VERSION}", SARAMA_PERF]
    assert parse_producers(" franz-go-perf@1.18.1 ,franz-go@1.18.1,producer-performance") == [
        "franz-go-perf@1.18.1", "franz-go@1.18.1", PRODUCER_PERFORMANCE]
    assert goperf.is_perf(FRANZ_PERF) and not goperf.is_perf("franz-go@1.22.3") and not goperf.is_perf(PRODUCER_PERFORMANCE)
    assert str(goperf.library_of("franz-go-perf@1.18.1")) == "franz-go@1.18.1"


@pytest.mark.parametrize(("spec", "says"), [
    ("kafka-python-perf", "'kafka-python-perf': a perf mode (the client's own producer loop, no bridge) exists for the "
                          "Go clients only: franz-go-perf[@VERSION], sarama-perf[@VERSION]"),
    ("java-perf@4.4.0", "exists for the Go clients only"),
    ("franz-go-perf@v1.22.3", "'franz-go-perf@v1.22.3': 'v1.22.3' is not a release version; expected "
                              "franz-go-perf@MAJOR.MINOR.PATCH, e.g. franz-go-perf@" + DEFAULT_FRANZ_VERSION),
    ("franz-go-perf@", "'' is not a release version"),
    ("sarama-perf,sarama-perf", f"{SARAMA_PERF} is named twice"),
    ("franz-go-perff", "unknown client library"),
])
def test_a_bad_perf_name_is_refused_naming_the_flag_and_what_is_allowed(spec: str, says: str) -> None:
    with pytest.raises(ConfigError) as exc:
        parse_producers(spec)
    assert str(exc.value).startswith("--producers") and says in str(exc.value)
    assert str(exc.value).count("sarama-perf[@VERSION]") <= 1  # what is allowed, said once


def test_the_help_shows_the_perf_names_as_typed() -> None:
    from typer.testing import CliRunner

    from harness.cli import app

    r = CliRunner(env={"COLUMNS": "400", "TERMINAL_WIDTH": "400"}).invoke(app, ["bench", "producer", "--help"])
    assert r.exit_code == 0 and "franz-go-perf or franz-go-perf@VERSION" in r.output, r.output


def test_where_only_libraries_run_a_tool_is_refused_as_one() -> None:
    for tool in ("franz-go-perf", PRODUCER_PERFORMANCE):
        with pytest.raises(ConfigError, match=rf"--libraries: '{tool}' is a tool, not a client library"):
            parse_producers(tool, flag="--libraries", allow_tool=False)
    with pytest.raises(ConfigError) as exc:
        parse_producers("nope", flag="--libraries", allow_tool=False)
    assert "-perf" not in str(exc.value)  # a tool is not offered where none runs


def test_a_perf_mode_is_prepared_as_its_client_s_bridge() -> None:
    assert libraries_to_prepare(["confluent-kafka", FRANZ_PERF, "franz-go@1.18.1", PRODUCER_PERFORMANCE, SARAMA_PERF,
                                 f"sarama@{DEFAULT_SARAMA_VERSION}"]) == [
        "confluent-kafka", f"franz-go@{DEFAULT_FRANZ_VERSION}", "franz-go@1.18.1", f"sarama@{DEFAULT_SARAMA_VERSION}"]


# ---------------------------------------------------------------- the command: the bridge's settings

@pytest.mark.parametrize(("perf", "client"), [(FRANZ_PERF, gobridge.FranzClient), (SARAMA_PERF, gobridge.SaramaClient)])
def test_the_perf_command_opens_the_client_with_the_settings_the_bridge_s_producer_gets(
        monkeypatch: pytest.MonkeyPatch, perf: str, client: type[gobridge.FranzClient]) -> None:
    fake = Fake()  # a bridge that records what it is asked
    monkeypatch.setattr(gobridge, "bridge", lambda name, version: fake)
    monkeypatch.setattr(gobridge, "_unpaired", {})
    # the txn-producer's bridge producer, as bench producer runs it (its default timeout, no overrides)
    client(perf.partition("@")[2], "127.0.0.1:9092", "bench-x", TRANSACTION_TIMEOUT_MS, {})
    opened = fake.requests[-1]["config"]
    cmd = goperf.perf_command(Path("/cache/bridge"), perf, "127.0.0.1:9092", "bench-t", 6, "bench-x", 500, 100, 146.0, 1000)
    assert cmd[:2] == ["/cache/bridge", "perf"]
    flags = dict(zip(cmd[2::2], cmd[3::2]))
    assert orjson.loads(flags.pop("--config")) == opened
    assert flags == {"--topic": "bench-t", "--partitions": "6", "--records-per-txn": "500", "--record-size": "100",
                     "--seconds": "146.0", "--reporting-interval": "1000"}
    assert opened["linger.ms"] == 5 and opened["transaction.timeout.ms"] == TRANSACTION_TIMEOUT_MS
    assert ("delivery.timeout.ms" in opened) == (perf == FRANZ_PERF)  # sarama has none


# ---------------------------------------------------------------- its lines, as window.py reads them

def go_format() -> str:
    """The perf mode's periodic line, from its source (Go's %d / %.1f / %.2f read as Python's)."""
    found = re.findall(r'"(%d records sent, [^"]+)"', PERF_GO.read_text())
    assert len(found) == 1, found
    return found[0]


def test_the_perf_mode_prints_the_line_window_py_reads_and_its_total_is_not_read_as_one() -> None:
    line = go_format() % (1500, 1200.0, 0.11, 2.0, 7.0)
    lines = parse_periodic(f"franz-go 1.22.3 perf: transactions of ...\n{line}.\n{line}.\n{line}, 9 transactions committed.\n")
    assert [(p.records, p.per_s) for p in lines] == [(1500, 1200.0)] * 2
    assert covered_s(lines) == pytest.approx(2.5)


# ---------------------------------------------------------------- the run, with a stand-in for the binary

class FakeCluster:
    cluster_id = "unit"
    bootstrap = direct_bootstrap = "127.0.0.1:9"


STAND_IN = """#!{python}
import sys, time, pathlib
pathlib.Path(sys.argv[0] + ".args").write_text("\\n".join(sys.argv[1:]))
print("franz-go 1.22.3 perf: a stand-in", flush=True)
for _ in range(int({lines})):
    print("1000 records sent, 1000.0 records/sec (0.10 MB/sec), 1.0 ms avg latency, 2.0 ms max latency.", flush=True)
{then}
"""


def stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lines: int, then: str = "time.sleep(60)") -> Path:
    binary = tmp_path / "franz-go-bridge"
    binary.write_text(STAND_IN.format(python=sys.executable, lines=lines, then=then))
    binary.chmod(binary.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setattr(go_build, "ensure", lambda client, version: binary)
    monkeypatch.setattr(producer, "_fresh_topic", lambda cluster, prefix, partitions: f"bench-{prefix}-t")
    monkeypatch.setattr(producer, "_tagged_env", lambda cluster, t0: None)  # untagged: no cluster's process
    return binary


SHAPE = Shape(500, 100, warmup_s=2, seconds=5)


def test_a_perf_run_is_measured_from_its_lines_and_the_coordinator_s_log_then_stopped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    binary = stand_in(tmp_path, monkeypatch, lines=10)
    t0 = 1_000_000
    states = [(ONGOING, t0)] + [(COMPLETE_COMMIT, t0 + 500 * k) for k in range(1, 16)]  # 2 commits a second
    asked: list[str] = []
    monkeypatch.setattr(producer, "read_txn_log", lambda cluster, txn_id: asked.append(txn_id) or states)
    got = producer.run_go_perf(FakeCluster(), tmp_path / "run", FRANZ_PERF, SHAPE)  # type: ignore[arg-type]
    assert got["records_per_s"] == 1000.0 and got["records"] == 5000 and got["window_s"] == [2.0, 7.0]
    assert got["txns"] == 10 and got["txns_per_s"] == 2.0 and got["records_per_txn"] == 500.0
    slug = "franz-go-perf-" + DEFAULT_FRANZ_VERSION.replace(".", "-")
    assert got["topic"] == f"bench-{slug}-t" and asked == [f"bench-{slug}-bench-{slug}-t"]
    args = (tmp_path / "franz-go-bridge.args").read_text().splitlines()
    assert args[:2] == ["perf", "--config"] and orjson.loads(args[2])["transactional.id"] == asked[0]
    assert "perf: a stand-in" in (tmp_path / "run" / f"{slug}.log").read_text()
    assert binary.exists()


def test_a_perf_run_that_dies_is_an_error_with_its_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stand_in(tmp_path, monkeypatch, lines=1, then="print('perf: init failed: NOT_COORDINATOR', flush=True); sys.exit(1)")
    with pytest.raises(HarnessError, match=r"(?s)franz-go's perf mode exited with code 1:.*perf: init failed: NOT_COORDINATOR"):
        producer.run_go_perf(FakeCluster(), tmp_path / "run", FRANZ_PERF, SHAPE)  # type: ignore[arg-type]


def test_a_perf_run_whose_log_stops_short_is_refused_not_a_low_figure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stand_in(tmp_path, monkeypatch, lines=10)
    monkeypatch.setattr(producer, "read_txn_log", lambda cluster, txn_id: [(ONGOING, 0), (COMPLETE_COMMIT, 3000)])
    with pytest.raises(HarnessError, match=rf"{FRANZ_PERF}: the transaction log of franz-go's perf mode ends before "
                                           r"the window's end at 7s"):
        producer.run_go_perf(FakeCluster(), tmp_path / "run", FRANZ_PERF, SHAPE)  # type: ignore[arg-type]


# ---------------------------------------------------------------- the bridge's cost

def series(median: float) -> dict[str, Any]:
    return {"records_per_s": {"median": median}}


def test_the_bridge_s_cost_is_each_bridged_client_against_its_own_loop() -> None:
    cost = bridge_cost(6000.0, 8000.0)
    assert cost is not None and cost.ratio == 0.75 and cost.us_per_record == pytest.approx(1e6 / 6000 - 1e6 / 8000)
    assert bridge_cost(0.0, 8000.0) is None and bridge_cost(6000.0, 0.0) is None
    costs = bridge_costs({"confluent-kafka": series(9000), "franz-go@1.22.3": series(6000), "franz-go-perf@1.22.3": series(8000),
                          "franz-go@1.18.1": series(5000), "sarama-perf@1.61.1": series(7000), "sarama@1.45.2": series(3000),
                          "java@4.4.0": series(6500), PRODUCER_PERFORMANCE: series(7500), "sarama@1.61.1": series(7700)})
    assert costs == {"franz-go@1.22.3": {"native": "franz-go-perf@1.22.3", "ratio": 0.75, "us_per_record": 41.67},
                     "java@4.4.0": {"native": PRODUCER_PERFORMANCE, "ratio": 0.867, "us_per_record": 20.51},
                     # faster than its own loop (noise): a negative cost, not hidden
                     "sarama@1.61.1": {"native": "sarama-perf@1.61.1", "ratio": 1.1, "us_per_record": -12.99}}


def test_bench_producer_runs_every_producer_interleaved_and_states_the_bridge_s_cost(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[str] = []
    rates = {"confluent-kafka": 9000.0, f"franz-go@{DEFAULT_FRANZ_VERSION}": 6000.0, FRANZ_PERF: 8000.0}

    def one(name: str) -> dict[str, Any]:
        ran.append(name)
        return {"records_per_s": rates[name], "records_per_txn": 500}

    monkeypatch.setattr(producer, "run_workload", lambda cluster, d, p, shape: one(p))
    monkeypatch.setattr(producer, "run_go_perf", lambda cluster, d, p, shape: one(p))
    names = parse_producers("confluent-kafka,franz-go,franz-go-perf")
    result = producer.bench_producers(None, None, tmp_path, names, SHAPE, runs=2)  # type: ignore[arg-type]
    assert ran == names * 2 and result["order"] == ran
    assert result["bridge_cost"] == {f"franz-go@{DEFAULT_FRANZ_VERSION}": {"native": FRANZ_PERF, "ratio": 0.75,
                                                                            "us_per_record": 41.67}}
    settings = result["go_perf"][FRANZ_PERF]["settings"]
    assert settings["linger.ms"] == 5 and "bootstrap.servers" not in settings and "transactional.id" not in settings
    assert result["producers"][FRANZ_PERF]["ratio"] is None  # no producer-performance among them


# ---------------------------------------------------------------- the Go side

def test_the_perf_mode_s_go_tests_pass(tmp_path: Path) -> None:
    proc = go_build.go_test(gobridge.FRANZ, DEFAULT_FRANZ_VERSION, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_real_binary_refuses_bad_input_with_exit_2_and_a_client_error_with_exit_1() -> None:
    binary = go_build.ensure(gobridge.FRANZ, DEFAULT_FRANZ_VERSION)
    bad = subprocess.run([str(binary), "perf", "--topic", "t"], capture_output=True, text=True, timeout=30)
    assert bad.returncode == 2 and bad.stderr.startswith("perf: --config: a JSON object of client settings"), bad.stderr
    args = ["--topic", "t", "--partitions", "1", "--records-per-txn", "1", "--record-size", "10"]
    refused = subprocess.run([str(binary), "perf", "--config", '{"max.block.ms": 5}', *args], capture_output=True,
                             text=True, timeout=30)
    assert refused.returncode == 1, refused.stderr
    assert refused.stderr.startswith("perf: open failed: CLIENT_ERROR: franz-go: unknown client settings max.block.ms; "
                                     "known: bootstrap.servers"), refused.stderr


def test_the_command_prints_each_bridge_s_cost_under_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from harness.bench.window import spread_of
    from harness.cli import app
    from harness.cli import bench as cli_bench
    from harness.workloads import clients

    runs = [{"records_per_s": v, "records_per_txn": 500} for v in (6000.0, 8000.0)]
    result = {"producers": {n: {"runs": runs[i:i + 1], "records_per_s": spread_of([runs[i]["records_per_s"]]).to_json(),
                                "ratio": None} for i, n in enumerate([f"franz-go@{DEFAULT_FRANZ_VERSION}", FRANZ_PERF])},
              "bridge_cost": {f"franz-go@{DEFAULT_FRANZ_VERSION}": {"native": FRANZ_PERF, "ratio": 0.75, "us_per_record": 41.67}}}
    prepared: list[tuple[list[str], str | None]] = []
    monkeypatch.setattr(clients, "prepare", lambda libraries, flag=None: prepared.append((list(libraries), flag)))
    monkeypatch.setattr(cli_bench, "_on_one_cluster", lambda *a, **kw: result)
    r = CliRunner(env={"COLUMNS": "400", "TERMINAL_WIDTH": "400"}).invoke(
        app, ["bench", "producer", "--producers", "franz-go,franz-go-perf", "--runs", "1"])
    assert r.exit_code == 0, r.output
    assert (f"franz-go@{DEFAULT_FRANZ_VERSION} through our workload and its bridge: 0.750 of {FRANZ_PERF}'s records/s "
            "(its own loop), +41.67 us per record") in r.output
    assert prepared == [([f"franz-go@{DEFAULT_FRANZ_VERSION}"], "--producers")]  # one bridge for both, before the cluster
