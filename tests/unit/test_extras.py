"""PySpark is an extra (``eos-chaos[spark]``): without it, what needs Spark says which extra to
install (exit 2, nothing started), and the rest works."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from clusters.backends.backends import Backend
from harness.base.errors import EnvironmentProblem
from harness.run import runner, scenario
from harness.sparkjob import session


@pytest.fixture
def no_pyspark(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pyspark" else real(name, *a))


def test_a_spark_scenario_without_pyspark_says_which_extra_before_starting(no_pyspark: None, tmp_path: Path) -> None:
    sc = scenario.load("spark-driver-kill")
    with pytest.raises(EnvironmentProblem, match=r"pip install 'eos-chaos\[spark\]'"):
        runner.run(sc, Backend.local, 1, tmp_path / "run")
    assert not (tmp_path / "run").exists(), "nothing started, no run folder"


def test_the_spark_checker_without_pyspark_says_which_extra(no_pyspark: None) -> None:
    with pytest.raises(EnvironmentProblem, match="needs PySpark"), session.checker_session():
        pass


def test_with_pyspark_nothing_is_refused() -> None:
    session.require_pyspark("this test")  # installed by make setup: silent
