"""No vacuous VALID (harness/checker/progress.py): a run in which a workload whose guarantee the
checks judge made no progress while the faults ran is unknown, saying so; a run whose workloads
worked through its faults, or that had none, keeps its verdict. Hand-written histories, each with
its clean twin."""

from __future__ import annotations

from harness.checker import PROGRESS_UNDER_FAULTS, check
from harness.checker.progress import IDLE_UNDER_FAULTS, NO_PROGRESS_BEFORE_FAULT
from harness.history.builder import History
from harness.history.model import (
    ABORTED_ON_PURPOSE,
    FAIL,
    FAULT_START,
    FAULT_STOP,
    INFO,
    OK,
    SPARK_BATCH,
    SPARK_START,
)

MS = 1_000_000
T = "t"
#: the faults' window in these histories: from 100 ms to 200 ms
START, STOP = 100 * MS, 200 * MS


class Run:
    """A run's history: committed transactions of a producer (each read by a reader and kept in the
    final scan), and whatever the test adds."""

    def __init__(self) -> None:
        self.h = History()
        self.kept: list[tuple[int, str]] = []
        self.n = 0

    def commit(self, at: int, process: str = "txn-producer-0.0", outcome: str = OK, error: str | None = None,
               took: int = 0) -> None:
        value = f"{process}/{self.n}"
        offset = len(self.kept) if outcome == OK else None
        self.n += 1
        self.h.at(at).txn(process, [(T, 0, value, offset)], outcome=outcome, error=error, took=took)
        if outcome == OK:
            self.kept.append((len(self.kept), value))

    def fault(self, at: int, until: int | None, kind: str = "kill", **detail: object) -> None:
        self.h.at(at).fault(kind, FAULT_START, **detail)
        if until is not None:
            self.h.at(until).fault(kind, FAULT_STOP, **{k: v for k, v in detail.items() if k in ("node", "workload")})

    def verdict(self) -> dict:  # type: ignore[type-arg]
        self.h.at(900 * MS).poll("reader-0.0", {f"{T}-0": self.kept})
        self.h.scan({f"{T}-0": self.kept})
        return check(self.h.tables()).to_json()


def idle_reasons(v: dict) -> list[str]:  # type: ignore[type-arg]
    return [r for r in v["unknown_because"] if r.startswith((IDLE_UNDER_FAULTS, NO_PROGRESS_BEFORE_FAULT))]


def test_a_run_without_faults_is_judged_as_before() -> None:
    r = Run()
    r.commit(10 * MS)
    v = r.verdict()
    assert v["valid"] is True and PROGRESS_UNDER_FAULTS not in v["stats"], v["unknown_because"]


def test_a_broker_fault_while_the_producer_commits_keeps_the_run_valid() -> None:
    r = Run()
    r.commit(10 * MS)
    r.fault(START, STOP, node=2)
    r.commit(150 * MS)
    v = r.verdict()
    assert v["valid"] is True, v["unknown_because"]
    fig = v["stats"][PROGRESS_UNDER_FAULTS]
    assert fig["idle"] == [] and fig["window_s"] == [0.1, 0.2] and fig["kinds"]["txn-producer"]["progress_in_window"] == 1


def test_a_producer_idle_through_a_broker_fault_makes_the_run_unknown() -> None:
    r = Run()
    r.commit(10 * MS)
    r.fault(START, STOP, node=2)
    r.commit(300 * MS)  # its next transaction only after the fault: nothing was in flight during it
    v = r.verdict()
    assert v["valid"] == "unknown", v
    [why] = idle_reasons(v)
    assert "txn-producer (no transaction)" in why and "0.1-0.2 s" in why


def test_a_transaction_a_broker_fault_held_up_counts_once_the_producer_recovers() -> None:
    r = Run()
    r.commit(10 * MS)
    r.commit(90 * MS, outcome=INFO, took=150 * MS)  # in flight through the fault, outcome unknown
    r.fault(START, STOP, node=2)
    r.commit(300 * MS)  # then it went on
    v = r.verdict()
    assert idle_reasons(v) == [] and v["stats"][PROGRESS_UNDER_FAULTS]["kinds"]["txn-producer"]["in_flight"] == 1, v


def test_aborting_on_purpose_is_progress_and_an_abort_met_is_not() -> None:
    chosen = Run()
    chosen.commit(10 * MS)
    chosen.fault(START, STOP, node=2)
    chosen.commit(150 * MS, outcome=FAIL, error=ABORTED_ON_PURPOSE)
    assert idle_reasons(chosen.verdict()) == []
    met = Run()
    met.commit(10 * MS)
    met.fault(START, STOP, node=2)
    met.commit(150 * MS, outcome=FAIL, error="KafkaError{code=INVALID_TXN_STATE}")
    assert len(idle_reasons(met.verdict())) == 1


def spark_run(batches: list[int]) -> Run:
    """A Spark job (its start, its micro-batches ending at ``batches``) killed twice by executor
    kills (the spark-executor-kill incident's shape), with its feeder committing all along."""
    r = Run()
    r.h.at(5 * MS).event("spark-job-0.0", SPARK_START, {"query": "spark-job-0", "incarnation": 0})
    for at in range(10, 400, 40):
        r.commit(at * MS)
    r.fault(START, START + MS, kind="kill-executor", workload="spark-job", window="any")
    r.fault(STOP - MS, STOP, kind="kill-executor", workload="spark-job", window="any")
    for i, at in enumerate(batches):
        r.h.at(at).event("spark-job-0.0", SPARK_BATCH, {"query": "spark-job-0", "batch": i, "outcome": OK, "ms": 5})
    return r


def test_a_spark_job_with_no_micro_batch_under_executor_kills_is_unknown_not_valid() -> None:
    v = spark_run([]).verdict()
    assert v["valid"] == "unknown", v
    [why] = idle_reasons(v)
    assert "spark-job (no micro-batch)" in why and "txn-producer" not in why
    assert v["stats"][PROGRESS_UNDER_FAULTS]["kinds"]["spark-job"]["aimed_at"] is True


def test_a_spark_job_that_ran_batches_between_its_kills_or_recovered_after_them_is_judged() -> None:
    assert idle_reasons(spark_run([150 * MS]).verdict()) == []
    assert idle_reasons(spark_run([350 * MS]).verdict()) == []  # the faults aimed at it; it came back


def test_a_killed_copier_that_came_back_is_live_and_one_that_never_did_is_not() -> None:
    def copier_run(after: bool) -> dict:  # type: ignore[type-arg]
        r = Run()
        for at in (10, 120, 180):
            r.commit(at * MS)  # the producer feeding it works on
        r.commit(20 * MS, process="copier-0.0")
        r.fault(START, STOP, kind="kill-workload", workload="copier-0")
        if after:
            r.commit(250 * MS, process="copier-0.1")
        return r.verdict()

    assert idle_reasons(copier_run(after=True)) == []
    [why] = idle_reasons(copier_run(after=False))
    assert "copier (no copy)" in why


def test_a_fault_that_began_on_a_stuck_workload_makes_the_run_unknown() -> None:
    stuck = Run()
    stuck.commit(10 * MS)
    stuck.fault(START, STOP, kind="pause-workload", workload="txn-producer-0", waited_s=120.0, wait_expired=True)
    stuck.commit(150 * MS)
    v = stuck.verdict()
    assert v["valid"] == "unknown"
    [why] = idle_reasons(v)
    assert why.startswith(NO_PROGRESS_BEFORE_FAULT) and "pause-workload on txn-producer-0 at 0.1 s" in why
    waited = Run()
    waited.commit(10 * MS)
    waited.fault(START, STOP, kind="pause-workload", workload="txn-producer-0", waited_s=3.0)
    waited.commit(150 * MS)
    assert waited.verdict()["valid"] is True


def test_a_finding_stands_in_a_run_idle_under_its_faults() -> None:
    r = Run()
    r.commit(10 * MS)
    r.fault(START, STOP, node=2)
    r.commit(300 * MS)
    r.kept.append((len(r.kept), "txn-producer-0.0/0"))  # the first value twice: a duplicate
    v = r.verdict()
    assert v["valid"] is False and v["checks"]["duplicate"]["count"] == 1 and len(idle_reasons(v)) == 1


def test_workloads_no_check_judges_by_progress_are_left_alone() -> None:
    r = Run()
    r.commit(10 * MS)
    r.commit(150 * MS)
    # the zombie's first instance is frozen through its fault and never commits: by design
    r.h.at(20 * MS).txn("zombie-first.0", [(T, 1, "z0", None)], outcome=FAIL, error="KafkaError{code=PRODUCER_FENCED}",
                        took=300 * MS)
    r.fault(START, STOP, kind="pause-workload", workload="zombie-first")
    v = r.verdict()
    assert idle_reasons(v) == [] and set(v["stats"][PROGRESS_UNDER_FAULTS]["kinds"]) == {"txn-producer"}, v


def test_an_app_is_judged_by_its_output_read_while_the_faults_ran() -> None:
    def app_run(output_at: int) -> dict:  # type: ignore[type-arg]
        r = Run()
        r.h.app_contract("app", "map", [T], ["out"])
        for at in (10, 150, 300):
            r.commit(at * MS, process="app-feeder.0")
        r.fault(START, STOP, node=2)
        r.h.at(output_at).app_poll("app-reader.0", "app", {"out-0": [(0, "v", None)]})
        r.h.app_scan("app", {"out-0": [(0, "v", None)]})
        return r.verdict()

    assert idle_reasons(app_run(150 * MS)) == []
    [why] = idle_reasons(app_run(50 * MS))  # its only output came before the faults
    assert "app (no output record read)" in why and "txn-producer" not in why


def under_faults() -> list[tuple[str, History]]:
    """Histories with faults, idle and live, for the engines' agreement (tests/unit/test_spark_engine.py)."""
    idle, live = Run(), Run()
    for r, later in ((idle, 300), (live, 150)):
        r.commit(10 * MS)
        r.commit(90 * MS, process="copier-0.0", outcome=INFO, took=150 * MS)
        r.fault(START, STOP, node=2)
        r.commit(later * MS)
        r.commit(later * MS + MS, process="copier-0.1", outcome=FAIL, error=ABORTED_ON_PURPOSE)
    spark_idle, spark_live = spark_run([]), spark_run([150 * MS])
    stuck = Run()
    stuck.commit(10 * MS)
    stuck.fault(START, None, kind="pause-workload", workload="txn-producer-0", waited_s=120.0, wait_expired=True)
    cases = [("faults:idle", idle), ("faults:live", live), ("faults:spark-idle", spark_idle),
             ("faults:spark-live", spark_live), ("faults:never-ended", stuck)]
    for _, r in cases:
        r.h.at(900 * MS).poll("reader-0.0", {f"{T}-0": r.kept})
        r.h.scan({f"{T}-0": r.kept})
    return [(name, r.h) for name, r in cases]
