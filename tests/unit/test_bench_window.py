"""The arithmetic of ``bench producer`` / ``bench txn-rate`` on synthetic data: the steady-state
windows (warm-up left out), ProducerPerformance's periodic lines, median and spread, and the
producer list the command line accepts."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.bench.window import NOISY_SPREAD, Periodic, TimedTxn, covered_s, parse_periodic, periodic_window, spread_of, workload_window

S = 1_000_000_000  # ns per second


def steady(start_s: float, every_s: float, until_s: float, records: int = 500, outcome: str = "ok",
           took_s: float = 0.01) -> list[TimedTxn]:
    """A transaction completing every ``every_s`` from ``start_s`` until ``until_s``."""
    n = int(round((until_s - start_s) / every_s)) + 1
    return [TimedTxn(round((start_s + k * every_s - took_s) * S), round((start_s + k * every_s) * S), outcome, records)
            for k in range(n)]


def test_the_warm_up_is_not_counted_and_the_window_is_the_steady_rate() -> None:
    # a slow start (one commit a second for 5 s from t=100 s), then 10 commits a second
    txns = [TimedTxn(100 * S, 100 * S + S // 2, "ok", 500)] + steady(101, 1.0, 105) + steady(105.1, 0.1, 130)
    m = workload_window(txns, warmup_s=5, seconds=20)
    # the window is 105..125 s from the first transaction's begin at 100 s: commits at 105.1 .. 125.0
    assert m.txns == 200
    assert m.records_per_s == pytest.approx(200 * 500 / 20)
    assert m.txns_per_s == pytest.approx(10)
    assert m.records_per_txn == 500
    assert m.window_s == (5, 25)
    assert m.txn_ms_p50 == pytest.approx(10)


def test_counted_with_the_warm_up_the_rate_would_be_lower() -> None:
    txns = [TimedTxn(0, S // 2, "ok", 500)] + steady(1, 1.0, 5) + steady(5.1, 0.1, 30)
    assert workload_window(txns, 0, 25).records_per_s < workload_window(txns, 5, 20).records_per_s


def test_aborted_and_unknown_transactions_count_no_records() -> None:
    txns = steady(0.05, 0.1, 30) + steady(0.06, 0.5, 30, outcome="fail") + steady(0.07, 1.0, 30, outcome="info")
    m = workload_window(txns, 5, 20)
    assert m.txns == 200
    assert m.records == 200 * 500
    assert m.aborted_per_s == pytest.approx(40 / 20)


def test_a_history_that_ends_before_the_window_does_is_refused() -> None:
    txns = steady(0.1, 0.1, 18)
    with pytest.raises(ValueError, match="before the window's end at 25s"):
        workload_window(txns, 5, 20)
    with pytest.raises(ValueError, match="no transaction"):
        workload_window([], 5, 20)


PP_OUTPUT = """\
SLF4J(W): No SLF4J providers were found.
{lines}
1200 records sent, 4000.000000 records/sec (0.38 MB/sec), 3.10 ms avg latency, 44.00 ms max latency, 2 ms 50th, 9 ms 95th, 20 ms 99th, 44 ms 99.9th.
"""


def pp_lines(rates: list[float], seconds: float = 1.02) -> str:
    return "\n".join(f"{int(r * seconds)} records sent, {r:.1f} records/sec (0.38 MB/sec), 3.2 ms avg latency, "
                     f"41.0 ms max latency." for r in rates)


def test_periodic_lines_are_parsed_and_the_total_line_is_not() -> None:
    got = parse_periodic(PP_OUTPUT.format(lines=pp_lines([1000.0, 2000.0])))
    assert [p.records for p in got] == [1020, 2040]
    assert [p.per_s for p in got] == [1000.0, 2000.0]
    assert got[0].seconds == pytest.approx(1.02)
    assert covered_s(got) == pytest.approx(2.04)


def test_the_periodic_window_leaves_the_warm_up_out() -> None:
    # 5 slow lines (warm-up), then 30 lines at 50k/s; each line covers 1.02 s
    lines = parse_periodic(pp_lines([5000.0] * 5 + [50000.0] * 30))
    m = periodic_window(lines, warmup_s=5, seconds=20, interval_s=1.0)
    assert m.records_per_s == pytest.approx(50000, rel=1e-3)
    # the first line inside starts at 5.1 s (5 x 1.02), the last ends by 25.5 s
    assert m.window_s[0] == pytest.approx(5.1)
    assert 24.5 <= m.window_s[1] <= 25.5
    assert m.records == pytest.approx(50000 * (m.window_s[1] - m.window_s[0]), rel=1e-3)


def test_the_periodic_window_picks_the_lines_inside_it_only() -> None:
    lines = [Periodic(1000, 1000.0)] * 5 + [Periodic(2000, 2000.0)] * 20 + [Periodic(9000, 9000.0)] * 5
    m = periodic_window(lines, 5, 20, 1.0)
    assert m.records_per_s == pytest.approx(2000)
    assert m.window_s == pytest.approx((5, 25))


def test_periodic_lines_that_stop_short_of_the_window_are_refused() -> None:
    with pytest.raises(ValueError, match="reach 10.2s, not the window's end at 25s"):
        periodic_window(parse_periodic(pp_lines([1000.0] * 10)), 5, 20, 1.0)


def test_median_spread_and_noise() -> None:
    sp = spread_of([100.0, 90.0, 110.0])
    assert (sp.median, sp.low, sp.high) == (100.0, 90.0, 110.0)
    assert sp.spread == pytest.approx(0.2)
    assert not sp.noisy  # exactly 20% is the limit, not above it
    assert spread_of([100.0, 79.0, 100.0]).noisy
    assert spread_of([5.0]).spread == 0
    assert NOISY_SPREAD == 0.2
    assert sp.to_json() == {"values": [100.0, 90.0, 110.0], "median": 100.0, "min": 90.0, "max": 110.0,
                            "spread_pct": 20.0, "noisy": False}
    with pytest.raises(ValueError):
        spread_of([])


@pytest.mark.parametrize(("args", "says"), [
    (["producer", "--producers", "foo"], "library 'foo': unknown client library"),
    (["producer", "--producers", "confluent-kafka,producer-performance,confluent-kafka"], "confluent-kafka is named twice"),
    (["producer", "--producers", "confluent-kafka,,producer-performance"], "without empty items"),
    (["producer", "--producers", "java@4.x"], "not a release version"),
    (["producer", "--records-per-txn", "0"], "--records-per-txn"),
    (["producer", "--record-size", "2"], "--record-size"),
    (["producer", "--warmup", "-1"], "--warmup"),
    (["producer", "--seconds", "inf"], "--seconds"),
    (["producer", "--runs", "0"], "--runs"),
    (["txn-rate", "--libraries", "producer-performance"], "'producer-performance' is a tool, not a client library"),
    (["txn-rate", "--libraries", "franz-go-perf"], "'franz-go-perf' is a tool, not a client library"),
    (["producer", "--producers", "confluent-kafka-perf"],
     "--producers: 'confluent-kafka-perf': a perf mode (the client's own producer loop, no bridge) exists for the Go "
     "clients only: franz-go-perf[@VERSION], sarama-perf[@VERSION]"),
    (["producer", "--producers", "sarama-perf@1.61"], "'1.61' is not a release version; expected sarama-perf@MAJOR.MINOR.PATCH"),
    (["producer", "--producers", "franz-go-perf,franz-go-perf@1.22.3"], "franz-go-perf@1.22.3 is named twice"),
    (["producer", "--producers", "franz-go-perf@1.17.1"], "--producers: library franz-go@1.17.1: the bridge needs franz-go 1.18.0"),
    (["txn-rate", "--seconds", "nan"], "--seconds"),
    (["checker", "--master", "standalone"], "only the Spark engine runs on a Spark master"),
    (["spark", "--values-per-txn", "0"], "--values-per-txn"),
    (["checker", "--engine", "spark", "--master", "yarn"], "expected local, standalone or spark://HOST:PORT"),
])
def test_bad_bench_input_exits_2_naming_it_and_starts_nothing(monkeypatch: pytest.MonkeyPatch, args: list[str],
                                                               says: str) -> None:
    from typer.testing import CliRunner

    from clusters.backends import artifacts, backends
    from harness.cli import app

    started: list[object] = []
    monkeypatch.setattr(backends, "new_cluster", lambda *a, **kw: started.append(a))
    monkeypatch.setattr(artifacts, "ensure", lambda *a, **kw: started.append(a))
    r = CliRunner(env={"COLUMNS": "400", "TERMINAL_WIDTH": "400"}).invoke(app, ["bench", *args])
    assert r.exit_code == 2, r.output
    assert says in r.output
    assert started == []


def test_the_producer_list_is_normalised() -> None:
    from harness.bench.producer import parse_producers

    assert parse_producers(" confluent-kafka , java ,producer-performance") == [
        "confluent-kafka", "java@4.4.0", "producer-performance"]
    assert parse_producers("java@3.9.1", flag="--libraries", allow_tool=False) == ["java@3.9.1"]


def txn_log_key(txn_id: str) -> bytes:
    raw = txn_id.encode()
    return b"\x00\x00" + len(raw).to_bytes(2, "big") + raw


def txn_log_value(status: int, version: int = 1) -> bytes:
    # version, ProducerId, ProducerEpoch, TransactionTimeoutMs, TransactionStatus, then the rest
    return (version.to_bytes(2, "big") + (7).to_bytes(8, "big") + (3).to_bytes(2, "big") + (60000).to_bytes(4, "big")
            + bytes([status]) + b"\x01" + (0).to_bytes(16, "big") + b"\x00")


def test_transaction_log_entries_of_one_id_are_read_and_others_skipped() -> None:
    from harness.bench.window import COMPLETE_COMMIT, txn_log_status

    assert txn_log_status(txn_log_key("bench-pp-x"), txn_log_value(COMPLETE_COMMIT), "bench-pp-x") == COMPLETE_COMMIT
    assert txn_log_status(txn_log_key("bench-pp-x"), txn_log_value(2, version=0), "bench-pp-x") == 2
    assert txn_log_status(txn_log_key("bench-pp-xy"), txn_log_value(4), "bench-pp-x") is None
    assert txn_log_status(txn_log_key("other"), txn_log_value(4), "bench-pp-x") is None
    assert txn_log_status(txn_log_key("bench-pp-x"), None, "bench-pp-x") is None  # a tombstone


def test_commits_in_the_window_are_counted_from_the_first_ongoing() -> None:
    from harness.bench.window import COMPLETE_COMMIT, ONGOING, commits_in_window

    t0 = 1_700_000_000_000
    # init (Empty) before the first transaction; then a commit every 100 ms for 30 s
    states = [(0, t0 - 500)] + [(ONGOING, t0)]
    states += [(s, t0 + ms) for ms in range(100, 30_001, 100) for s in (ONGOING, 2, COMPLETE_COMMIT)]
    assert commits_in_window(states, 5, 20) == 200
    with pytest.raises(ValueError, match="ends before the window's end at 35s"):
        commits_in_window(states, 5, 30)
    with pytest.raises(ValueError, match="no transaction"):
        commits_in_window([(0, t0)], 5, 20)


def test_the_cost_line_fits_time_per_transaction_and_moves_a_run_to_the_wanted_size() -> None:
    from harness.bench.window import fit_txn_cost

    # 50 ms per transaction + 0.04 ms per record, exactly
    def rate(n: float) -> float:
        return 1000 * n / (50 + 0.04 * n)

    cost = fit_txn_cost([(n, rate(n)) for n in (100.0, 1000.0, 3000.0)])
    assert cost is not None
    assert cost.fixed_ms == pytest.approx(50)
    assert cost.per_record_ms == pytest.approx(0.04)
    # a run at 2000 records per transaction, moved to 500, is the rate at 500
    assert cost.rate_at(2000, rate(2000), 500) == pytest.approx(rate(500))
    # a run that was 10% slower than the line stays slower after the move, by its own time per transaction
    slow = cost.rate_at(2000, rate(2000) / 1.1, 500)
    assert slow < rate(500)
    assert cost.rate_at(500, 1234.0, 500) == 1234.0  # at the wanted size: unchanged


def test_a_falling_cost_line_is_noise_around_a_flat_one() -> None:
    from harness.bench.window import fit_txn_cost

    # time per transaction 82, 96, 75, 64, 66 ms at growing sizes: no cost per record to see
    points = [(90.4, 1103.4), (803.5, 8356.7), (969.5, 12845.9), (937.6, 14720.4), (607.5, 9143.4)]
    cost = fit_txn_cost(points)
    assert cost is not None and cost.per_record_ms == 0
    assert cost.fixed_ms == pytest.approx(sum(1000 * n / r for n, r in points) / len(points))
    # flat: a run keeps its own transactions per second, each holding the wanted records
    assert cost.rate_at(969.5, 12845.9, 500) == pytest.approx(500 * 12845.9 / 969.5)


def test_no_cost_line_without_two_sizes() -> None:
    from harness.bench.window import fit_txn_cost

    assert fit_txn_cost([(500.0, 1000.0), (500.0, 1100.0)]) is None
    assert fit_txn_cost([]) is None


@pytest.mark.parametrize("library", ["confluent-kafka", "java@4.4.0"])
def test_a_library_runs_our_workload_with_a_fixed_transaction_size(library: str, tmp_path: object) -> None:
    from pathlib import Path

    from harness.bench.producer import Shape, workload_config
    from harness.workloads.registry import TxnProducerSettings

    cfg = workload_config(Path(str(tmp_path)), library, Shape(500, 100, 5, 20), "127.0.0.1:1", ["t"])
    assert cfg.library == library
    s = TxnProducerSettings.model_validate(cfg.settings)
    assert (s.values_per_txn, s.txn_ms, s.abort_share, s.value_bytes, s.transactional) == (500, 0, 0.0, 100, True)
    assert cfg.max_seconds > 5 + 20


def test_the_table_shows_median_spread_ratio_and_how_producer_performance_was_moved(monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from harness.cli import app
    from harness.cli import bench as cli_bench

    def run(rate: float, size: float, **extra: object) -> dict[str, object]:
        return {"records_per_s": rate, "records_per_txn": size, **extra}

    ours = [run(9000.0, 500), run(10000.0, 500), run(12500.0, 500)]
    pp = [run(v, 1100, records_per_s_measured=v * 2, transaction_duration_ms=4) for v in (10000.0, 11000.0, 10500.0)]
    result = {"producers": {"confluent-kafka": {"runs": ours, "records_per_s": spread_of([9000, 10000, 12500]).to_json(),
                                                "ratio": 0.952},
                            "producer-performance": {"runs": pp, "records_per_s": spread_of([10000, 11000, 10500]).to_json(),
                                                     "ratio": 1.0}},
              "producer_performance": {"txn_cost": {"fixed_ms": 50.0, "per_record_ms": 0.01}, "calibration": {"txn_ms": 4}}}
    monkeypatch.setattr(cli_bench, "_on_one_cluster", lambda *a, **kw: result)
    r = CliRunner(env={"COLUMNS": "400", "TERMINAL_WIDTH": "400"}).invoke(
        app, ["bench", "producer", "--producers", "confluent-kafka,producer-performance"])
    assert r.exit_code == 0, r.output
    assert "10,000.0" in r.output and "35.0% noisy" in r.output and "0.952" in r.output
    assert "1,100 (4, 4, 4 ms)" in r.output
    assert "50.0 ms + 0.01 ms x records" in r.output and "20,000.0, 22,000.0, 21,000.0" in r.output


def test_the_checker_bench_counts_spark_jobs_stages_and_shuffles_per_check(tmp_path: Path) -> None:
    """From a hand-written event log: jobs by their group, stages run, and the stages that wrote
    shuffle output (a stage that wrote none is no shuffle)."""
    import json

    from harness.bench.checker import spark_work

    def stage(sid: int, shuffle_bytes: int) -> dict[str, object]:
        acc = [{"Name": "internal.metrics.shuffle.write.bytesWritten", "Value": shuffle_bytes}] if shuffle_bytes else []
        return {"Event": "SparkListenerStageCompleted", "Stage Info": {"Stage ID": sid, "Accumulables": acc}}

    events = [
        {"Event": "SparkListenerJobStart", "Job ID": 0, "Stage IDs": [0], "Properties": {}},
        stage(0, 0),
        {"Event": "SparkListenerJobStart", "Job ID": 1, "Stage IDs": [1, 2], "Properties": {"spark.jobGroup.id": "summary"}},
        stage(1, 3 * 2**20), stage(2, 0),
        {"Event": "SparkListenerJobStart", "Job ID": 2, "Stage IDs": [3], "Properties": {"spark.jobGroup.id": "summary"}},
        stage(3, 2**20),
    ]
    (tmp_path / "app-1").write_text("\n".join(json.dumps(e) for e in events))
    work = spark_work(tmp_path)
    assert work["by_check"] == {"(setup)": {"jobs": 1, "stages": 1, "shuffles": 0, "shuffle_mb": 0},
                                "summary": {"jobs": 2, "stages": 3, "shuffles": 2, "shuffle_mb": 4}}
    assert work["total"] == {"jobs": 3, "stages": 4, "shuffles": 2, "shuffle_mb": 4}
