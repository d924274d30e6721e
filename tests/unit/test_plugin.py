"""The pytest plugin as a user meets it, in a fresh pytest run (pytester), without a cluster:
markers and options registered, bad option values refused, the library collected one test per
scenario with junit names that say which, and a failing scenario's message carrying the check
counts, the first example and the report. (The fixtures on a real cluster: tests/chaos/test_plugin.py.)"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from harness import scenario
from harness.pytest_plugin import Verdict

pytest_plugins = ["pytester"]

INVALID = {
    "valid": False, "as_expected": False, "expected": {"valid": True, "fires": [], "min_ok_txns": 0, "min_fenced": 0},
    "checks": {"duplicate": {"count": 6, "examples": [{"value": "txn-producer-0.0-1459-0",
                                                      "positions": ["eos-a-2@247", "eos-a-2@248"]}]},
               "lost-write": {"count": 0, "examples": []}},
    "stats": {"txn": {"ok": 10, "fail": 0, "info": 0}, "fenced": 0},
    "run": {"healed": True, "nemesis_errors": []},
}

# Stands in for the cluster run: what the plugin does with the verdict is what is tested here.
CONFTEST = f"""
import pytest
from harness.pytest_plugin import Verdict

@pytest.fixture
def run_scenario(tmp_path):
    def run(name, **overrides):
        ok = dict({INVALID!r}, valid=True, as_expected=True)
        ok["checks"] = {{k: {{"count": 0, "examples": []}} for k in ok["checks"]}}
        return Verdict({INVALID!r} if name == "baseline" else ok, tmp_path, name, 42, "local")
    return run
"""


def test_markers_and_options_are_registered(pytester: pytest.Pytester) -> None:
    markers = pytester.runpytest("--markers").stdout.str()
    assert "@pytest.mark.chaos:" in markers and "@pytest.mark.library:" in markers
    helptext = pytester.runpytest("--help").stdout.str()
    for opt in ("--eos-backend", "--eos-kafka-version", "--eos-duration", "--eos-seed", "--eos-results", "--eos-library",
                "--eos-transaction-version", "--eos-client"):
        assert opt in helptext


@pytest.mark.parametrize("args, says", [
    (["--eos-duration", "2"], "a scenario runs at least 5 seconds"),
    (["--eos-duration", "soon"], "'soon' is not a number of seconds"),
    (["--eos-backend", "k8s"], "invalid choice: 'k8s'"),
    (["--eos-kafka-version", "4.x"], "--eos-kafka-version '4.x' is not a release version"),
    (["--eos-kafka-version", "3.0.0"], "--eos-kafka-version 3.0.0 is older than"),
    (["--eos-transaction-version", "3"], "invalid choice: 3 (choose from 0, 1, 2)"),
    (["--eos-transaction-version", "2", "--eos-kafka-version", "3.9.1"],
     "--eos-transaction-version 2: Kafka 3.9.1 cannot be formatted at transaction.version=2"),
    (["--eos-client", "jav"], "--eos-client: library 'jav': unknown client library; allowed: confluent-kafka, java"),
])
def test_bad_option_values_are_usage_errors_that_say_what_is_allowed(pytester: pytest.Pytester, args: list[str], says: str) -> None:
    done = pytester.runpytest(*args)
    assert done.ret == pytest.ExitCode.USAGE_ERROR
    assert says in done.stderr.str()


def test_the_library_is_one_test_per_scenario(pytester: pytest.Pytester) -> None:
    done = pytester.runpytest("-m", "chaos", "--eos-library", "--collect-only", "-q")
    ids = [line for line in done.stdout.lines if "::test_scenario[" in line]
    assert sorted(ids) == sorted(f"test_eos_chaos_library.py::test_scenario[{n}]" for n in scenario.names())


def test_a_failing_scenario_says_what_fired_and_where_the_report_is(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    junit = pytester.path / "junit.xml"
    done = pytester.runpytest("-m", "chaos", "--eos-library", "-k", "baseline", f"--junitxml={junit}")
    done.assert_outcomes(passed=1, failed=1)  # baseline (canned invalid), txn-baseline (canned valid)
    cases = {c.get("name"): c for c in ET.parse(junit).iter("testcase")}
    assert set(cases) == {"test_scenario[baseline]", "test_scenario[txn-baseline]"}
    failure = cases["test_scenario[baseline]"].find("failure")
    assert failure is not None and cases["test_scenario[txn-baseline]"].find("failure") is None
    message = failure.get("message", "") + (failure.text or "")
    assert "baseline (seed 42, local): INVALID, expected valid" in message
    assert "checks: duplicate 6" in message
    assert 'first duplicate: {"value": "txn-producer-0.0-1459-0"' in message
    assert "report.html" in message and "re-run: eos-chaos run baseline --backend local --seed 42" in message


def test_summary_names_unmet_minimums_and_unhealed_faults(tmp_path) -> None:  # type: ignore[no-untyped-def]
    v = dict(INVALID, valid=True, expected={"valid": True, "min_fenced": 1},
             checks={"duplicate": {"count": 0, "examples": []}},
             stats={"txn": {"ok": 5}, "fenced": 0},
             run={"healed": False, "heal_problems": ["node 2: down"], "nemesis_errors": ["kill at 5.0s: LookupError"]})
    text = Verdict(v, tmp_path, "leader-kill", 1, "compose", "eos-chaos run leader-kill --backend compose --seed 1 --duration 20").summary()
    assert "checks: none fired" in text and "below the scenario's minimum: min_fenced 0" in text
    assert "not healed: ['node 2: down']" in text and "faults that failed: ['kill at 5.0s: LookupError']" in text
    assert text.endswith("re-run: eos-chaos run leader-kill --backend compose --seed 1 --duration 20")  # as recorded
