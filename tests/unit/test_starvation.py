"""What makes a real-cluster test run its scenario again rather than fail (tests/chaos/test_scenarios.py
``starvation``): a machine that starved the workloads, never a finding or a broken run."""

from __future__ import annotations

from harness.checker.progress import IDLE_UNDER_FAULTS, NO_PROGRESS_BEFORE_FAULT
from tests.chaos.test_scenarios import starvation


def verdict(unknown: list[str] = (), **run: object) -> dict:  # type: ignore[assignment]
    return {"valid": "unknown" if unknown else True, "unknown_because": list(unknown),
            "run": {"healed": True, "nemesis_errors": [], "not_recovered": [], **run}}


def test_a_fed_run_and_a_broken_one_are_judged_not_run_again() -> None:
    assert starvation(verdict()) == []
    assert starvation(verdict(["no final reads: the cluster did not answer"])) == []
    assert starvation(verdict(nemesis_errors=["kill-driver at 5s: FaultError: no such workload"])) == []


def test_a_starved_run_says_how() -> None:
    said = starvation(verdict([f"{NO_PROGRESS_BEFORE_FAULT}: kill-driver@10s on spark-job-0 waited 120s"],
                              not_recovered=["spark-job-0: driver pid 7 alive: True"],
                              nemesis_errors=["kill-driver at 10s: had not begun 240s after the run's duration (x)"]))
    assert len(said) == 3 and said[0].startswith(NO_PROGRESS_BEFORE_FAULT) and "spark-job-0" in said[1], said
    assert starvation(verdict([f"{IDLE_UNDER_FAULTS}: spark-job (no micro-batch)"])) != []
