"""A run's fault schedule starts when its workloads are ready (harness/run/readiness.py): each kind's
ready op read from the processes' own history files, with a deadline whose error names the workload
that never became ready and the last lines of its log."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from harness.base.errors import WaitTimeout
from harness.run.readiness import Readiness, await_ready, exited_before_ready


def append(path: Path, *ops: dict[str, object]) -> None:
    with open(path, "a") as f:
        for op in ops:
            f.write(json.dumps(op) + "\n")


def op(f: str, type_: str, process: str = "p.0") -> dict[str, object]:
    return {"time": 1, "process": process, "type": type_, "f": f, "value": None}


def test_a_process_is_ready_at_its_first_ok_of_its_op_not_before(tmp_path: Path) -> None:
    r = Readiness(tmp_path, {"txn-producer-0": ("txn", "send"), "spark-job-0": ("spark-batch",)})
    assert r.poll() is False  # no files yet
    append(tmp_path / "txn-producer-0.jsonl", op("init", "ok"), op("txn", "invoke"), op("txn", "fail"))
    append(tmp_path / "spark-job-0.0.jsonl", op("spark-start", "ok"))  # the driver: a file per incarnation
    assert r.poll() is False and set(r.waiting) == {"txn-producer-0", "spark-job-0"}
    append(tmp_path / "txn-producer-0.jsonl", op("txn", "invoke"), op("txn", "ok"))
    # a half-written line is read when it is whole, and the ready op of another process counts not
    with open(tmp_path / "spark-job-0.0.jsonl", "a") as f:
        f.write('{"time": 2, "process": "p.0", "type": "info", "f": "spark-ba')
    append(tmp_path / "txn-producer-1.jsonl", op("spark-batch", "ok"))
    append(tmp_path / "spark-job-01.jsonl", op("spark-batch", "ok"))  # another process's file
    assert r.poll() is False and set(r.waiting) == {"spark-job-0"}
    with open(tmp_path / "spark-job-0.0.jsonl", "a") as f:
        f.write('tch", "value": {"outcome": "ok"}}\n')
    assert r.poll() is True and set(r.ready_at) == {"txn-producer-0", "spark-job-0"}


def test_await_ready_returns_when_the_op_is_written(tmp_path: Path) -> None:
    def later() -> None:
        time.sleep(0.3)
        append(tmp_path / "copier-0.jsonl", op("txn", "ok"))

    th = threading.Thread(target=later)
    th.start()
    took = await_ready(tmp_path, {"copier-0": ("txn",)}, {}, dead=lambda: None, timeout=20)
    th.join()
    assert set(took) == {"copier-0"} and took["copier-0"] >= 0.2


def test_nothing_to_wait_for_is_ready_at_once(tmp_path: Path) -> None:
    assert await_ready(tmp_path, {}, {}, dead=lambda: None, timeout=0.1) == {}


def test_a_workload_never_ready_is_named_with_the_last_lines_of_its_log(tmp_path: Path) -> None:
    log = tmp_path / "spark-job-0.log"
    log.write_text("\n".join(f"line {i}" for i in range(30)) + "\nPy4JError: the answer from Java was empty\n")
    append(tmp_path / "spark-job-0.jsonl", op("spark-start", "ok"))
    with pytest.raises(WaitTimeout) as e:
        await_ready(tmp_path, {"spark-job-0": ("spark-batch",)}, {"spark-job-0": log}, dead=lambda: None, timeout=0.5)
    text = str(e.value)
    assert "every workload ready" in text and "spark-job-0 has finished no spark-batch yet" in text
    assert "Py4JError: the answer from Java was empty" in text and "line 29" in text and "line 5\n" not in text


def test_a_workload_that_exited_ends_the_wait_at_once(tmp_path: Path) -> None:
    t0 = time.monotonic()
    with pytest.raises(WaitTimeout) as e:
        await_ready(tmp_path, {"txn-producer-0": ("txn",)}, {}, dead=lambda: "txn-producer-0 exited with 1", timeout=60)
    assert time.monotonic() - t0 < 10 and "txn-producer-0 exited with 1" in str(e.value)


def test_an_abort_the_workload_chose_shows_it_ready_and_one_it_met_does_not(tmp_path: Path) -> None:
    r = Readiness(tmp_path, {"txn-producer-0": ("txn",)})
    met = {**op("txn", "fail"), "error": "KafkaError{code=_TIMED_OUT}"}
    append(tmp_path / "txn-producer-0.jsonl", op("txn", "invoke"), met)
    assert r.poll() is False
    append(tmp_path / "txn-producer-0.jsonl", op("txn", "invoke"), {**op("txn", "fail"), "error": "aborted on purpose"})
    assert r.poll() is True


def event(f: str, outcome: str) -> dict[str, object]:
    return {"time": 1, "process": "spark-job-0.0", "type": "info", "f": f, "value": {"batch": 0, "outcome": outcome}}


def test_a_spark_job_is_ready_at_its_first_micro_batch_whose_outcome_is_ok_in_the_driver_or_an_executor(tmp_path: Path) -> None:
    r = Readiness(tmp_path, {"spark-job-0": ("spark-batch",)})
    append(tmp_path / "spark-job-0.0.jsonl", event("spark-start", "ok"), event("spark-batch", "retired"),
           {**op("txn", "info", "spark-job-0.0"), "value": [["send", "t", 0, "v"]]})
    assert r.poll() is False
    append(tmp_path / "spark-job-0-exec-4242.jsonl", event("spark-batch", "ok"))  # the executor-side sink's batch
    assert r.poll() is True


def test_an_exception_deep_in_a_long_log_is_named_not_only_its_last_lines(tmp_path: Path) -> None:
    """Issue 39: a Streams client dead of MissingSourceTopicException ended the wait with 12 lines of
    "Closing reporter ..."; the exception and the first and last ERROR lines are in the message now."""
    from tests.unit.test_log_digest import STREAMS_DIED

    log = tmp_path / "app-0.log"
    log.write_text("\n".join(STREAMS_DIED) + "\n")
    with pytest.raises(WaitTimeout) as e:
        await_ready(tmp_path, {"app-0": ("app-ready",)}, {"app-0": log}, dead=lambda: None, timeout=0.3)
    text = str(e.value)
    assert "MissingSourceTopicException: One or more source topics were missing during rebalance" in text, text
    assert "StreamsRebalanceListener.onPartitionsAssigned" in text  # its first frame
    assert "Encountered the following exception" in text and "PENDING_ERROR to ERROR" in text  # first, last ERROR
    said = exited_before_ready("app-0", 1, log)
    assert said.startswith(f"app-0 exited with 1 before it was ready (its log: {log}):\n")
    assert "MissingSourceTopicException" in said and "PENDING_ERROR to ERROR" in said
