"""``bench txn-throughput``'s figures on hand-built histories and run folders: transactions committed
inside the fault windows (their union; an abort or a commit outside does not count), those open on
a fault's target when it began, the producers a run ran, medians and ratios; and its command line,
which refuses bad input before a cluster starts and reads finished runs with --from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.bench import throughput
from harness.bench.throughput import fault_windows, folder_figures, producers_of, run_figures, summary
from harness.cli import bench as bench_cli
from harness.history.builder import History
from harness.history.hits import Span
from harness.history.model import FAIL
from tests.unit.test_cli import _restore_logging, cli  # noqa: F401 - the logging fixture applies to every test
from tests.unit.test_report import make_run
from tests.unit.test_scenario_bad_input import _refused

MS = 1_000_000
#: two faults, 100-200 ms and 150-300 ms (one window, 100-300 ms), and one at 500-600 ms
SPANS = [Span(100 * MS, 200 * MS, {"node": 1}), Span(150 * MS, 300 * MS, {"node": 2}), Span(500 * MS, 600 * MS, {"node": 1})]


def busy(producers: int = 1) -> History:
    """Transactions of ``producers`` producers: each commits one at 50 ms (before the faults), one
    across 90-110 ms (open at the first fault's start, committed inside), one aborted inside, one
    inside the last window, and one after it."""
    h = History()
    for k in range(producers):
        p = f"txn-producer-0.{k}"
        h.at(50 * MS + k).txn(p, [("t", k, f"{p}-a", 0)])
        h.at(90 * MS + k).txn(p, [("t", k, f"{p}-b", 1)], took=20 * MS)
        h.at(250 * MS + k).txn(p, [("t", k, f"{p}-c", None)], outcome=FAIL, error="aborted on purpose")
        h.at(550 * MS + k).txn(p, [("t", k, f"{p}-d", 2)])
        h.at(700 * MS + k).txn(p, [("t", k, f"{p}-e", 3)])
    return h


def test_the_fault_windows_are_their_union_and_one_never_ended_lasts_to_the_history_s_end() -> None:
    assert fault_windows(SPANS, 900 * MS) == [(100 * MS, 300 * MS), (500 * MS, 600 * MS)]
    assert fault_windows([Span(5, None, {}), Span(1, 3, {})], 10) == [(1, 3), (5, 10)]
    assert fault_windows([], 10) == []


def test_committed_in_the_fault_windows_and_open_at_each_fault_s_start() -> None:
    got = run_figures(busy().tables(), SPANS)
    assert got["committed"] == 4 and got["committed_in_faults"] == 2, got  # b and d; not the abort, not a or e
    assert got["fault_s"] == 0.3 and got["committed_in_faults_per_s"] == round(2 / 0.3, 2)
    assert got["open_at_fault_start"] == [1, 0, 0] and got["open_at_fault_start_mean"] == 0.33, got
    more = run_figures(busy(producers=4).tables(), SPANS)
    assert more["committed_in_faults"] == 8 and more["open_at_fault_start"] == [4, 0, 0], more
    assert more["open_at_fault_start_mean"] == 1.33


def test_a_run_without_faults_has_no_rate() -> None:
    got = run_figures(busy().tables(), [])
    assert got["committed_in_faults"] == 0 and got["committed_in_faults_per_s"] is None
    assert got["open_at_fault_start_mean"] is None and got["faults"] == 0


def test_the_producers_a_run_ran_come_from_the_scenario_as_run() -> None:
    resolved = {"workloads": [{"kind": "reader"}, {"kind": "txn-producer", "settings": {"producers": 8}},
                              {"kind": "txn-producer", "settings": {}}]}
    assert producers_of(resolved) == 8 and producers_of({"workloads": [{"kind": "copier"}]}) == 1


def sample(name: str, n: int, committed: int, open_: float | None, valid: Any = True) -> dict[str, Any]:
    return {"scenario": name, "producers": n, "committed_in_faults": committed, "committed_in_faults_per_s": committed / 10,
            "open_at_fault_start_mean": open_, "committed": committed * 3, "valid": valid}


def test_the_summary_takes_medians_per_setting_and_ratios_to_the_fewest_producers() -> None:
    got = summary([sample("s", 1, 10, 1), sample("s", 16, 150, 14), sample("s", 1, 30, 1), sample("s", 16, 170, 16),
                   sample("s", 1, 20, 2), sample("s", 16, 100, None, valid=None)])
    one, many = got["s"]["1"], got["s"]["16"]
    assert one["committed_in_faults"] == 20 and one["open_at_fault_start"] == 1 and one["runs"] == 3
    assert many["committed_in_faults"] == 150 and many["open_at_fault_start"] == 15  # a run with no fault left out
    assert many["ratio"] == {"committed_in_faults": 7.5, "open_at_fault_start": 15.0}
    assert one["ratio"] == {"committed_in_faults": 1.0, "open_at_fault_start": 1.0}
    assert many["each"]["valid"] == [True, True, None]


def run_folder(root: Path, name: str, producers: int) -> Path:
    """A finished run of ``producers`` producers with the three faults of ``SPANS`` in its journal."""
    h = busy(producers)
    # make_run multiplies the builder's times by 1000: these are in microseconds there
    h.ops = [{**op, "time": op["time"] // 1000, **({"commit_at": op["commit_at"] // 1000} if op.get("commit_at") else {})}
             for op in h.ops]
    faults = [{"kind": "kill", "planned": i, "start_s": s.start / 1e9, "end_s": None if s.end is None else s.end / 1e9,
               "detail": dict(s.detail)} for i, s in enumerate(SPANS)]
    resolved = {"name": "s", "workloads": [{"kind": "txn-producer", "settings": {"producers": producers}}]}
    return make_run(root, name=name, faults=[], history=h, journal_fields={"faults": faults, "resolved": resolved})


def test_a_run_folder_s_figures_name_its_scenario_setting_and_verdict(tmp_path: Path) -> None:
    got = folder_figures(run_folder(tmp_path, "r1", 4))
    assert got["producers"] == 4 and got["scenario"] == "r1" and got["seed"] == 7
    assert got["committed_in_faults"] == 8 and got["open_at_fault_start"] == [4, 0, 0], got
    assert "valid" in got


def test_from_reads_finished_runs_and_prints_one_row_per_setting(tmp_path: Path) -> None:
    for i, n in enumerate((1, 4, 1, 4)):
        run_folder(tmp_path / f"round{i}", "s", n)
    r = cli("bench", "txn-throughput", "--from", str(tmp_path))
    assert r.exit_code == 0, r.output
    assert "s: transactions under faults" in r.output and "x4" in r.output, r.output
    r = cli("bench", "txn-throughput", "--from", str(tmp_path), "--producers", "4", "--json")
    assert r.exit_code == 0 and '"1"' not in r.output.split('"scenarios"')[1], r.output


@pytest.fixture
def no_cluster(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Benches that would have started a cluster (none may)."""
    started: list[Any] = []
    monkeypatch.setattr(bench_cli, "_on_one_cluster", lambda *a, **kw: started.append(a))
    return started


@pytest.mark.parametrize("args,said", [
    (["--producers", "0"], "--producers 0: comma-separated numbers"),
    (["--producers", "1,1"], "none twice"),
    (["--producers", "1,x"], "each 1 to 64"),
    (["--scenarios", "zombie-fencing"], "scenario zombie-fencing has no txn-producer workload"),
    (["--scenarios", "no-such-scenario"], "no-such-scenario"),
    (["--scenarios", "mixed", "--duration", "4"], "--duration"),
    (["--from", "/nonexistent/eos", "--runs", "2"], "--from reads runs already made: --runs"),
    (["--from", "/nonexistent/eos"], "no finished run folder"),
])
def test_bad_input_is_refused_before_a_cluster_starts(args: list[str], said: str, no_cluster: list[Any]) -> None:
    _refused(cli("bench", "txn-throughput", *args), said)
    assert no_cluster == []


def test_the_bench_interleaves_the_settings_with_one_seed_per_round(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    made: list[tuple[str, int, int]] = []

    class Result:
        def __init__(self, run_dir: Path) -> None:
            self.run_dir = run_dir

    def run_on_shared(sc: Any, backend: Any, seed: int, run_dir: Path, cluster: Any, source: str) -> Result:
        n = next(w.settings["producers"] for w in sc.workloads if w.kind == "txn-producer")
        made.append((source, n, seed))
        return Result(run_dir)

    from harness.run import runner

    monkeypatch.setattr(runner, "run_on_shared", run_on_shared)
    monkeypatch.setattr(throughput, "folder_figures", lambda d: {"committed_in_faults": 0, "fault_s": 0,
                                                                  "open_at_fault_start": [], "valid": None})
    throughput.bench(None, None, tmp_path, ["txn-baseline", "mixed"], [1, 16], 2, 5, None)  # type: ignore[arg-type]
    assert made == [("txn-baseline", 1, 5), ("txn-baseline", 16, 5), ("mixed", 1, 5), ("mixed", 16, 5),
                    ("txn-baseline", 1, 6), ("txn-baseline", 16, 6), ("mixed", 1, 6), ("mixed", 16, 6)]
