"""The smoke run's verdict is the real checker's: each anomaly it names must make it FAIL, and a clean
history must PASS (the ``smoke`` scenario's expectation, applied as the runner applies it)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from harness.campaigns.smoke import SmokeResult, summarise
from harness.checker import check
from harness.history.model import FAULT, NEMESIS, READ_UNCOMMITTED, tp_key
from harness.run import scenario
from harness.run.verdict_file import as_expected
from harness.rundir.run_verdict import RunVerdict
from tests.unit.histories import History

Sends = list[tuple[str, int, str, int | None]]


def smoke(ok: Sequence[Sends] = (), fail: Sequence[Sends] = (), info: Sequence[Sends] = (),
          read: Sequence[tuple[int, str]] = (), killed: int | None = 1) -> SmokeResult:
    """The smoke result of one producer's transactions (on partition 0 of ``t``) and a final
    read_committed scan of ``read`` [(offset, value)]; ``killed``: the node the nemesis killed."""
    h = History()
    h.init("txn-producer-0.0", "eos-txn-producer-0")
    if killed is not None:  # the node killed while the producer works (harness/checker/progress.py)
        h._add(process=NEMESIS, type="info", f=FAULT, value={"kind": "kill", "phase": "start", "node": killed})
    for outcome, txns in (("ok", ok), ("fail", fail), ("info", info)):
        for sends in txns:
            h.txn("txn-producer-0.0", sends, outcome=outcome, txn_id="eos-txn-producer-0")
    h.scan({tp_key("t", 0): list(read)})
    h.scan({tp_key("t", 0): list(read)}, READ_UNCOMMITTED)
    h.lso({tp_key("t", 0): 0.1})
    tables = h.tables()
    verdict = check(tables).to_json()
    verdict["run"] = {"healed": True, "heal_problems": [], "nemesis_errors": []}
    verdict["as_expected"] = as_expected(verdict, scenario.load("smoke").expect)
    return summarise(Path("smoke-run"), RunVerdict.of(verdict), tables)


A = [("t", 0, "a", 0), ("t", 0, "b", 1)]


def test_clean_history_passes() -> None:
    r = smoke(ok=[A], fail=[[("t", 0, "c", None)]], info=[[("t", 0, "d", None)]],
              read=[(0, "a"), (1, "b"), (4, "d")])
    assert r.passed, r.summary()
    assert r.committed == 3 and r.read == 3 and r.producers == 1 and r.killed_node == 1
    assert r.summary().startswith("transactions ok=1 fail=1 info=1 (producers 1); committed values 3, read back 3; "
                                  "missing 0, duplicated 0, from aborted transactions 0, never written 0, other anomalies 0; "
                                  "killed node 1")


def test_lost_committed_value_fails() -> None:
    r = smoke(ok=[A], read=[(0, "a")])
    assert not r.passed and r.findings()["lost-write"].count == 1, r.summary()
    assert "missing 1" in r.summary()


def test_duplicate_fails() -> None:
    r = smoke(ok=[A], read=[(0, "a"), (1, "b"), (3, "a")])
    assert not r.passed and r.findings()["duplicate"].count == 1, r.summary()
    assert "duplicated 1" in r.summary()


def test_aborted_read_fails() -> None:
    r = smoke(ok=[A], fail=[[("t", 0, "x", None)]], read=[(0, "a"), (1, "b"), (3, "x")])
    assert not r.passed and r.findings()["aborted-read"].count == 1, r.summary()
    assert "from aborted transactions 1" in r.summary()


def test_value_nobody_wrote_fails() -> None:
    r = smoke(ok=[A], read=[(0, "a"), (1, "b"), (3, "ghost")])
    assert not r.passed and r.findings()["phantom-read"].count == 1, r.summary()
    assert r.findings()["phantom-read"].examples[0]["value"] == "ghost"
    assert "never written 1" in r.summary() and "other anomalies 0" in r.summary()


def test_no_fault_injected_fails() -> None:
    r = smoke(ok=[A], read=[(0, "a"), (1, "b")], killed=None)
    assert r.verdict.valid is True and not r.passed
    assert any("no broker was killed" in line for line in r.details())


def test_unknown_outcome_may_be_absent_or_present_once() -> None:
    u = [[("t", 0, "u", None)]]
    assert smoke(ok=[A], info=u, read=[(0, "a"), (1, "b")]).passed
    assert smoke(ok=[A], info=u, read=[(0, "a"), (1, "b"), (3, "u")]).passed
    assert not smoke(ok=[A], info=u, read=[(0, "a"), (1, "b"), (3, "u"), (5, "u")]).passed
