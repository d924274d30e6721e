"""A fault aimed at a workload waits, with a deadline, until the workload made progress since the
previous fault on it (chaos/nemesis.py), asking ``harness.run.readiness.ProgressLog``, which reads
the progress from the history files; the wait is on its start event, and the other faults' schedule
does not move."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from chaos import faults, nemesis
from chaos.nemesis import Nemesis
from harness.base.errors import WaitTimeout
from harness.base.wait import wait_until
from harness.history.recorder import Recorder
from harness.run.readiness import ProgressLog
from harness.rundir.journal import fault_runs
from tests.unit.test_faults import FakeCluster, FakeControl


def append(path: Path, *ops: dict[str, Any]) -> None:
    with open(path, "a") as f:
        for op in ops:
            f.write(json.dumps(op) + "\n")


def test_the_progress_log_counts_each_process_s_finished_progress_ops_since_a_time(tmp_path: Path) -> None:
    kinds = {"txn-producer-0": "txn-producer", "copier-0": "copier", "spark-job-0": "spark-job", "app-0": "app",
             "app-1": "app", "reader-0": "reader"}
    log = ProgressLog(tmp_path, kinds)
    assert log.finished_since("txn-producer-0", 0) == 0 and log.finished_since("reader-0", 0) is None
    append(tmp_path / "txn-producer-0.jsonl",
           {"time": 10, "f": "txn", "type": "ok"}, {"time": 20, "f": "txn", "type": "info"},  # unknown: no progress
           {"time": 30, "f": "txn", "type": "fail", "error": "aborted on purpose"}, {"time": 40, "f": "send", "type": "ok"})
    append(tmp_path / "copier-0.jsonl", {"time": 15, "f": "txn", "type": "fail", "error": "KafkaError: fenced"},
           {"time": 16, "f": "send", "type": "ok"})  # a copier shows progress by its transactions only
    append(tmp_path / "spark-job-0.1.jsonl", {"time": 50, "f": "spark-batch", "type": "info", "value": {"outcome": "ok"}},
           {"time": 60, "f": "spark-batch", "type": "info", "value": {"outcome": "failed"}})
    append(tmp_path / "app-reader.jsonl", {"time": 70, "f": "poll", "type": "ok", "app": "app", "value": {}},
           {"time": 80, "f": "poll", "type": "ok", "app": "app", "value": {"out-0": [[0, "v", None]]}})
    assert [log.finished_since("txn-producer-0", t) for t in (0, 11, 31, 41)] == [3, 2, 1, 0]
    assert log.finished_since("copier-0", 0) == 0 and log.finished_since("spark-job-0", 0) == 1
    # an app's progress is its output, read by its reader: the same for each of its instances
    assert log.finished_since("app-0", 75) == 1 and log.finished_since("app-1", 81) == 0
    append(tmp_path / "copier-0.jsonl", {"time": 90, "f": "txn", "type": "ok"})  # read as the file grows
    assert log.finished_since("copier-0", 85) == 1


class Control(FakeControl):
    """Every process alive (the shared fake answers None to what it does not know)."""

    def alive(self, name: str) -> bool:
        return True


class FakeProgress:
    """Progress set by the test: process -> times (ns) of its finished progress ops."""

    def __init__(self) -> None:
        self.times: dict[str, list[int]] = {}
        self.silent: set[str] = set()  # kinds that show no progress
        self.lock = threading.Lock()

    def add(self, name: str, t: int) -> None:
        with self.lock:
            self.times.setdefault(name, []).append(t)

    def finished_since(self, name: str, since_ns: int) -> int | None:
        if name in self.silent:
            return None
        with self.lock:
            return sum(1 for t in self.times.get(name, []) if t >= since_ns)


def starts(tmp_path: Path) -> list[dict[str, Any]]:
    lines = (tmp_path / "history" / "nemesis.jsonl").read_text().splitlines()
    return [{"time": op["time"], **op["value"]} for op in map(json.loads, lines) if op["value"]["phase"] == "start"]


def planned(tmp_path: Path, plan: list[dict[str, Any]], progress: FakeProgress,
            ready_s: dict[str, float] | None = None) -> tuple[Nemesis, threading.Thread]:
    """A nemesis running ``plan``; ``ready_s``: the workloads' readiness it is paced by before its
    schedule starts, as the runner does (harness/run/runner.py)."""
    control = Control({"copier": ["copier-0", "copier-1"], "reader": ["reader-0"]})
    nem = Nemesis(FakeCluster(), control, Recorder(tmp_path, "nemesis"), [faults.parse(f) for f in plan],  # type: ignore[arg-type]
                  progress=progress)
    if ready_s is not None:
        nem.pace(ready_s)
    th = threading.Thread(target=nem.run, daemon=True)
    th.start()
    return nem, th


def test_a_fault_on_a_workload_begins_once_it_made_progress_since_the_previous_fault_on_it(tmp_path: Path) -> None:
    progress = FakeProgress()
    plan = [{"at": 0, "kind": "kill-workload", "workload": "copier", "duration": 0.01},
            {"at": 0.05, "kind": "kill", "target": 1, "duration": 0.01},  # a broker fault waits for nothing
            {"at": 0.1, "kind": "pause-workload", "workload": "copier", "duration": 0.01}]
    nem, th = planned(tmp_path, plan, progress)

    def kinds() -> list[str]:
        return [s["kind"] for s in starts(tmp_path)]

    def waiting_for(kind: str) -> bool:
        return any(f.kind == kind and id(begun) in nem._waiting for f, begun in nem._begun)

    # no copier made progress since the schedule began: the kill waits, the broker kill after it does not
    wait_until(lambda: (kinds() == ["kill"] and waiting_for("kill-workload")) or None, timeout=20,
               what="the broker kill to begin while the copier kill waits", state=lambda: str(kinds()))
    progress.add("copier-1", nem.rec.now())  # one of them made progress: the kill begins (on both)
    # the pause waits for progress since that kill ended: what came before does not count
    wait_until(lambda: (kinds() == ["kill", "kill-workload", "kill-workload"] and waiting_for("pause-workload")) or None,
               timeout=20, what="the pause to wait for progress since the kill", state=lambda: str(kinds()))
    progress.add("copier-0", nem.rec.now())
    nem.await_begun(timeout=20)
    nem.stop.set()
    th.join(timeout=20)
    assert kinds() == ["kill", "kill-workload", "kill-workload", "pause-workload", "pause-workload"]
    by_kind = {s["kind"]: s for s in starts(tmp_path)}
    assert "waited_s" not in by_kind["kill"], by_kind
    assert all(by_kind[k]["waited_s"] > 0 and "wait_expired" not in by_kind[k] for k in ("kill-workload", "pause-workload"))
    assert nem.errors == []


def test_a_fault_whose_workload_made_no_progress_begins_at_the_deadline_saying_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nemesis, "PROGRESS_TIMEOUT_S", 0.5)
    nem, th = planned(tmp_path, [{"at": 0, "kind": "pause-workload", "workload": "copier", "instance": 1,
                                  "duration": 0.01}], FakeProgress())
    nem.await_begun(timeout=20)
    nem.stop.set()
    th.join(timeout=20)
    [start] = starts(tmp_path)
    assert start["workload"] == "copier-1" and start["wait_expired"] is True and start["waited_s"] >= 0.5, start
    assert nem.errors == []  # it began: a fault on a stuck workload is on record, not an error of the run


def test_a_fault_still_waiting_when_the_run_stops_never_begins(tmp_path: Path) -> None:
    nem, th = planned(tmp_path, [{"at": 0, "kind": "kill-workload", "workload": "copier", "duration": 0.01}],
                      FakeProgress())
    wait_until(lambda: nem._waiting or None, timeout=20, what="the kill to wait for the copiers' progress")
    assert "copier-0, copier-1" in nem._why_late(nem._begun[0][1])
    nem.await_begun(timeout=0.2)  # the run's duration is over: it has not begun, and says why
    assert len(nem.errors) == 1 and "waits for progress of copier-0, copier-1" in nem.errors[0], nem.errors
    nem.stop.set()
    th.join(timeout=20)
    assert not th.is_alive() and starts(tmp_path) == [] and nem.faults == 0


def test_a_workload_with_no_progress_to_show_is_not_waited_for(tmp_path: Path) -> None:
    progress = FakeProgress()
    progress.silent.add("reader-0")  # a reader: no progress ops
    nem, th = planned(tmp_path, [{"at": 0, "kind": "pause-workload", "workload": "reader", "duration": 0.01}], progress)
    nem.await_begun(timeout=20)
    nem.stop.set()
    th.join(timeout=20)
    [start] = starts(tmp_path)
    assert start["workload"] == "reader-0" and "waited_s" not in start


def test_the_journal_records_how_long_each_fault_waited_and_whether_in_vain() -> None:
    events = [{"time": 1_000_000_000, "value": {"kind": "kill-workload", "phase": "start", "workload": "copier-0",
                                                "waited_s": 3.5}},
              {"time": 2_000_000_000, "value": {"kind": "kill", "phase": "start", "node": 1}},
              {"time": 3_000_000_000, "value": {"kind": "pause-workload", "phase": "start", "workload": "copier-0",
                                                "waited_s": 120.1, "wait_expired": True}}]
    runs = fault_runs(events, [])
    assert [(r.waited_s, r.wait_expired) for r in runs] == [(3.5, False), (None, False), (120.1, True)]
    assert runs[2].detail == {"workload": "copier-0"}


def test_the_wait_for_progress_scales_with_the_workloads_measured_readiness(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine on which the workloads were slow to get ready (a Spark job's first micro-batch
    after 121 s) gives a fault's wait for progress after a restart as much: not a fixed 120 s."""
    monkeypatch.setattr(nemesis, "PROGRESS_TIMEOUT_S", 0.2)
    nem = Nemesis(FakeCluster(), Control({}), Recorder(tmp_path, "nemesis"))  # type: ignore[arg-type]
    assert nem.pace({"copier-0": 0.01}) == 0.2, "a quick machine keeps the fixed deadline"
    assert nem.pace({"copier-0": 0.05, "copier-1": 0.6}) == pytest.approx(nemesis.PROGRESS_PER_READY * 0.6)
    nem, th = planned(tmp_path, [{"at": 0, "kind": "pause-workload", "workload": "copier", "instance": 1,
                                  "duration": 0.01}], FakeProgress(), ready_s={"copier-1": 0.6})
    nem.await_begun()  # its own deadline follows the wait for progress
    nem.stop.set()
    th.join(timeout=20)
    [start] = starts(tmp_path)
    assert start["wait_expired"] is True and start["waited_s"] >= nemesis.PROGRESS_PER_READY * 0.6, start
    assert nem.errors == []


class SlowArming(Control):
    """A driver armed a moment after the fault began (writing its arm file, on a loaded machine)."""

    def arm_driver(self, name: str, window: str, action: str) -> int:
        time.sleep(0.5)
        return super().arm_driver(name, window, action)


def test_a_driver_fault_has_begun_once_the_driver_is_armed(tmp_path: Path) -> None:
    """The run ends once every due fault began and every armed driver fault fired
    (Supervisor.await_recovered): a kill-driver that counted as begun before it armed the driver let
    a run end in between, and the kill never fired (driver_kills 1 of the scenario's 2)."""
    control = SlowArming({"spark-job": ["spark-job-0"]})
    nem = Nemesis(FakeCluster(), control, Recorder(tmp_path, "nemesis"),  # type: ignore[arg-type]
                  [faults.parse({"at": 0, "kind": "kill-driver", "window": "after-commit"})])
    th = threading.Thread(target=nem.run, daemon=True)
    th.start()
    wait_until(lambda: nem._begun or None, timeout=20, what="the kill's time to come")
    nem.await_begun(timeout=20)
    assert ("arm", "spark-job-0", "after-commit", "kill") in control.calls, "begun before the driver was armed"
    assert [s["kind"] for s in starts(tmp_path)] == ["kill-driver"]
    nem.stop.set()
    th.join(timeout=20)
    assert nem.errors == []


def test_a_fault_aimed_at_an_app_s_coordinator_waits_for_its_first_transactional_id(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An app initialises its transactional producer a while after it is ready (13-23 s into a
    hunt's run on a starved machine): a fault aimed at its coordinator then failed with "no
    transactional.id starting with ..." (docs/HUNT.md, 5 of the seventh draw's faults). It waits."""
    listed: list[float] = []

    def coordinator(bootstrap: str, prefix: str) -> int:
        listed.append(time.monotonic())
        if len(listed) < 3:
            raise LookupError(f"no transactional.id starting with {prefix!r} on the cluster (yet)")
        return 0  # node 0: an answer, not "none yet"

    monkeypatch.setattr(nemesis.targets, "prefixed_transaction_coordinator", coordinator)
    nem = Nemesis(FakeCluster(), Control({}), Recorder(tmp_path, "nemesis"))  # type: ignore[arg-type]
    nem.progress_timeout_s = 30
    assert nem.resolve("coordinator", "app.*") == 0 and len(listed) == 3


def test_its_twin_with_no_app_id_ever_gives_up_at_the_deadline_naming_the_prefix_and_the_last_answer(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def never(bootstrap: str, prefix: str) -> int:
        raise LookupError(f"no transactional.id starting with {prefix!r} on the cluster (yet)")

    monkeypatch.setattr(nemesis.targets, "prefixed_transaction_coordinator", never)
    nem = Nemesis(FakeCluster(), Control({}), Recorder(tmp_path, "nemesis"))  # type: ignore[arg-type]
    nem.progress_timeout_s = 1.0
    with pytest.raises(WaitTimeout, match=r"a transactional.id starting with 'app\.'.*no transactional.id starting"):
        nem.resolve("coordinator", "app.*")
    nem.stop.set()  # the run ended: at once, not at the deadline
    nem.progress_timeout_s = 60
    started = time.monotonic()
    with pytest.raises(WaitTimeout, match="the run ended"):
        nem.resolve("coordinator", "app.*")
    assert time.monotonic() - started < 5
