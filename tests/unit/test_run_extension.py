"""The run lasts as much past its duration as a blocking fault went past its budget
(harness/run/runner.py ``_wait_out``, chaos/nemesis.py ``extend_run``): an extension asked for while
the run waits counts, the largest one wins, it is capped, and the run's stop still ends the wait."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import orjson
import pytest

from chaos.faults import Fault
from chaos.faults.process import Kill
from chaos.nemesis import Nemesis
from harness.history.recorder import Recorder
from harness.history.tail import HistoryTail
from harness.run import runner
from tests.unit.test_faults import FakeCluster, FakeControl


def nemesis(tmp_path: Path, plan: Sequence[Fault] = ()) -> Nemesis:
    return Nemesis(FakeCluster(), FakeControl({}), Recorder(tmp_path, "nemesis"), plan)  # type: ignore[arg-type]


def test_an_extension_asked_for_during_the_wait_lengthens_the_run(tmp_path: Path) -> None:
    nem = nemesis(tmp_path)
    threading.Timer(0.1, nem.extend_run, args=(0.6,)).start()
    threading.Timer(0.2, nem.extend_run, args=(0.3,)).start()  # smaller: the larger one stands
    started = time.monotonic()
    assert runner._wait_out(nem, 0.3) == (0.6, 0.0)
    assert 0.85 < time.monotonic() - started < 1.5


def test_without_an_extension_the_run_lasts_its_duration(tmp_path: Path) -> None:
    started = time.monotonic()
    assert runner._wait_out(nemesis(tmp_path), 0.3) == (0.0, 0.0)
    assert 0.25 < time.monotonic() - started < 0.6


def test_the_extension_is_capped_and_the_stop_ends_the_wait(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "MAX_EXTENSION_S", 0.2)
    nem = nemesis(tmp_path)
    nem.extend_run(100)
    started = time.monotonic()
    assert runner._wait_out(nem, 0.1) == (0.2, 0.0)
    assert time.monotonic() - started < 0.6
    nem.stop.set()
    started = time.monotonic()
    runner._wait_out(nem, 30)
    assert time.monotonic() - started < 0.5


def test_a_run_whose_faults_are_over_ends_its_end_after_faults_s_later_and_says_how_early(tmp_path: Path) -> None:
    """``end_after_faults_s``: once the faults are over (seen at 0.2 s), the run lasts that long more
    and no longer (at 0.5 s of its 30 s), and says it ended early; its twin, faults never over, runs
    its whole duration and says nothing; a sooner duration still wins."""
    over_at = time.monotonic() + 0.2
    started = time.monotonic()
    added, short = runner._wait_out(nemesis(tmp_path), 30.0, early=(0.3, lambda: time.monotonic() >= over_at))
    took = time.monotonic() - started
    assert added == 0 and 0.45 <= took < 2.5 and 27.0 < short <= 29.6, (took, short)
    started = time.monotonic()
    assert runner._wait_out(nemesis(tmp_path), 0.5, early=(0.3, lambda: False)) == (0.0, 0.0)
    assert 0.45 <= time.monotonic() - started < 2.0
    assert runner._wait_out(nemesis(tmp_path), 0.3, early=(10.0, lambda: True)) == (0.0, 0.0)


def test_end_after_faults_s_is_refused_where_the_faults_are_never_over_before_the_duration(tmp_path: Path) -> None:
    from harness.base.errors import ConfigError
    from harness.run import scenario

    def load(faults: str) -> scenario.Scenario:
        f = tmp_path / "sc.yaml"
        f.write_text("name: x\ndescription: x\nduration: 60\nend_after_faults_s: 20\n"
                     "workloads:\n  - {kind: txn-producer, count: 1}\n" + faults)
        return scenario.load(str(f))

    assert load("faults:\n  - {kind: kill, at: 5, duration: 5}\n").end_after_faults_s == 20
    for faults, says in (("faults:\n  - {kind: kill, at: 5, duration: 5, every: 10}\n", "faults[0] repeats (every 10s)"),
                         ("faults: []\n", "no faults to end after"),
                         ("mix: {kinds: [[kill, 1]]}\n", "a mix draws faults until the duration ends")):
        with pytest.raises(ConfigError, match=re.escape(says)):
            load(faults)


def test_a_run_short_of_its_expected_commits_waits_for_them_at_most_its_duration_more(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A starved machine: the commits the scenario expects come late, and the run waits for them
    (a slow day must not fail an expectation); a run that never gets there stops at twice its duration,
    and a run that has them stops at its duration (the clean twin)."""
    monkeypatch.setattr(runner, "COMMITS_POLL_S", 0.1)
    made = {"n": 0}

    def committed() -> int:
        made["n"] += 1
        return made["n"]

    started = time.monotonic()
    assert 0.15 <= runner._wait_out(nemesis(tmp_path), 1.0, committed, 3)[0] < 0.9  # two more looks
    assert made["n"] == 3 and time.monotonic() - started < 3.5
    started = time.monotonic()
    # never: capped at the duration (bounds wide enough for a loaded machine's late wake-ups)
    assert 0.9 <= runner._wait_out(nemesis(tmp_path), 1.0, lambda: 0, 5)[0] <= 2.5
    assert time.monotonic() - started < 4.5
    started = time.monotonic()
    assert runner._wait_out(nemesis(tmp_path), 0.2, lambda: 5, 5) == (0.0, 0.0)
    assert time.monotonic() - started < 0.6


def _commit(path: Path, at_ns: int, process: str = "txn-producer-0.0") -> None:
    with open(path, "ab") as f:
        f.write(orjson.dumps({"time": at_ns, "process": process, "type": "ok", "f": "txn"}) + b"\n")


def test_a_run_whose_last_fault_ended_late_waits_for_a_commit_after_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fault that ran late on a slow machine (a producer's restart) leaves no time after it for
    the recovery the progress check looks for: the run waits for a commit after the last fault's
    end, at most its timeout; a run with one already (the clean twin), with a fault still on, or
    that never committed, does not wait."""
    monkeypatch.setattr(runner, "COMMITS_POLL_S", 0.05)
    history = tmp_path / "history"
    history.mkdir()
    producer = history / "txn-producer-0.jsonl"
    _commit(producer, 1_000)
    nem = nemesis(tmp_path)
    nem._end("kill-workload", workload="txn-producer")
    tail = HistoryTail(tmp_path)
    threading.Timer(0.3, lambda: _commit(producer, nem.rec.now())).start()
    assert 0.2 <= runner._await_progress_after_faults(nem, tail, 5.0) < 3.0, "waited for the late commit"
    assert runner._await_progress_after_faults(nem, tail, 5.0) == 0, "it has one: no wait"
    nem._end("kill-workload", workload="txn-producer")  # a later fault: none since
    started = time.monotonic()
    assert 0.3 <= runner._await_progress_after_faults(nem, tail, 0.4) < 2.0, "capped at its timeout"
    assert time.monotonic() - started < 2.5
    empty = tmp_path / "other"
    (empty / "history").mkdir(parents=True)
    assert runner._await_progress_after_faults(nem, HistoryTail(empty), 5.0) == 0, "never committed: no wait"


def test_a_commit_while_the_faults_ran_is_progress_enough_and_the_run_does_not_wait(tmp_path: Path) -> None:
    """The check's window starts at the first fault: a commit in it is the progress it asks for, so a
    run whose producer stops committing later by design (a fenced zombie) is not held (CI: the zombie
    test waited 120 s for a commit that could never come)."""
    history = tmp_path / "history"
    history.mkdir()
    nem = nemesis(tmp_path)
    nem._start("kill", node=1)
    _commit(history / "txn-producer-0.jsonl", nem.rec.now())
    nem._end("kill", node=1)
    assert runner._await_progress_after_faults(nem, HistoryTail(tmp_path), 5.0) == 0


def test_a_fault_still_on_past_its_planned_end_is_waited_for_and_then_a_commit_after_it(tmp_path: Path) -> None:
    """CI: a coordinator's broker killed at 2 s for 4 s of a 16 s run took until 25.7 s to restart;
    the run ended with the fault still on, so the producer restarted beside it had no time to commit
    (unknown). A fault the schedule planned to have ended by the run's duration is late: the run
    waits for it to end, then for a commit after it. Its twin: a fault planned to outlast the run
    (the heal ends it) holds nothing."""
    history = tmp_path / "history"
    history.mkdir()
    producer = history / "txn-producer-0.jsonl"
    _commit(producer, 1_000)
    nem = nemesis(tmp_path, [Kill(at=2.0, duration=4.0, target="coordinator")])
    nem._start("kill", node=1)
    assert nem.planned_to_end_by(16.0) and not nem.planned_to_end_by(5.0)

    def restarted_then_committed() -> None:
        nem._end("kill", node=1)
        threading.Timer(0.3, lambda: _commit(producer, nem.rec.now())).start()

    threading.Timer(0.4, restarted_then_committed).start()
    waited = runner._await_progress_after_faults(nem, HistoryTail(tmp_path), 5.0, 16.0)
    assert 0.6 <= waited < 4.0, "waited for the late fault's end, then for the commit after it"
    assert not nem.active_faults()

    twin = nemesis(tmp_path / "twin", [Kill(at=2.0, duration=30.0, target="coordinator")])
    (tmp_path / "twin" / "history").mkdir(parents=True, exist_ok=True)
    _commit(tmp_path / "twin" / "history" / "txn-producer-0.jsonl", 1_000)
    twin._start("kill", node=1)
    started = time.monotonic()
    assert runner._await_progress_after_faults(twin, HistoryTail(tmp_path / "twin"), 5.0, 16.0) == 0
    assert time.monotonic() - started < 0.5, "a fault planned to last until the heal is not waited for"


def test_each_kind_idle_since_the_first_fault_is_waited_for_not_only_one_commit_of_any(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """CI: a Java copier killed at 7 s of a 20 s run restarted too slowly to copy again before the
    end, while the producers beside it committed: the run did not wait (a commit of any kind was
    enough) and was unknown for the copier. Each kind that made progress before and none since the
    first fault began is waited for; its twin, a copier that copied in the window, holds nothing."""
    monkeypatch.setattr(runner, "COMMITS_POLL_S", 0.05)
    history = tmp_path / "history"
    history.mkdir()
    _commit(history / "copier-0.jsonl", 1_000, "copier-0.0")
    nem = nemesis(tmp_path)
    nem._start("kill-workload", workload="copier-0")
    _commit(history / "txn-producer-0.jsonl", nem.rec.now())
    nem._end("kill-workload", workload="copier-0")
    threading.Timer(0.3, lambda: _commit(history / "copier-0.jsonl", nem.rec.now(), "copier-0.1")).start()
    assert 0.2 <= runner._await_progress_after_faults(nem, HistoryTail(tmp_path), 5.0, 20.0) < 3.0, "waited for the copier"
    assert runner._await_progress_after_faults(nem, HistoryTail(tmp_path), 5.0, 20.0) == 0, "the copier copied: no wait"
