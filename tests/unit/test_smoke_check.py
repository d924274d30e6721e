"""The smoke run's verdict must fire on each anomaly and stay silent on a clean history."""

from harness.kafka_io import TxnLedger
from harness.smoke import SmokeResult, check


def result(ok=(), fail=(), info=()) -> SmokeResult:
    r = SmokeResult(ledger=TxnLedger(ok=[list(t) for t in ok], fail=[list(t) for t in fail], info=[list(t) for t in info]))
    r.killed_node = 1
    return r


def test_clean_history_passes():
    r = check(result(ok=[["a", "b"]], fail=[["c"]], info=[["d"]]), ["a", "b", "d"])
    assert r.passed, r.summary()


def test_lost_committed_value_fails():
    r = check(result(ok=[["a", "b"]]), ["a"])
    assert not r.passed and r.missing == ["b"]


def test_duplicate_fails():
    r = check(result(ok=[["a"]]), ["a", "a"])
    assert not r.passed and r.duplicated == ["a"]


def test_aborted_read_fails():
    r = check(result(ok=[["a"]], fail=[["x"]]), ["a", "x"])
    assert not r.passed and r.aborted_read == ["x"]


def test_value_nobody_wrote_fails():
    r = check(result(ok=[["a"]]), ["a", "ghost"])
    assert not r.passed and r.unknown_values == ["ghost"]


def test_no_fault_injected_fails():
    r = check(result(ok=[["a"]]), ["a"])
    r.killed_node = None
    assert not r.passed


def test_unknown_outcome_may_be_absent_or_present_once():
    assert check(result(ok=[["a"]], info=[["u"]]), ["a"]).passed
    assert check(result(ok=[["a"]], info=[["u"]]), ["a", "u"]).passed
    assert not check(result(ok=[["a"]], info=[["u"]]), ["a", "u", "u"]).passed
