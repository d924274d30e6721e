"""The outcome rules, one row per rule: what an error met in each phase makes of the operation
(fail = definitely did not happen, info = unknown), whether the producer retires, and whether an
abort is tried first."""

from __future__ import annotations

import pytest

from harness.history.model import FAIL, FENCED, INFO, OK, RETIRED
from harness.workloads.client import ErrorFacts
from harness.workloads.outcome import (
    Outcome,
    Phase,
    classify,
    indefinite,
    retry_commit,
    should_abort,
)

TIMEOUT = ErrorFacts("_TIMED_OUT", "Timed out", retriable=True, timed_out=True)
TRANSPORT = ErrorFacts("_TRANSPORT", "Broker transport failure", retriable=True)
ABORTABLE = ErrorFacts("INVALID_TXN_STATE", "Abortable", txn_requires_abort=True)
FENCE = ErrorFacts("_FENCED", "fenced", fatal=True, fenced=True)
EPOCH = ErrorFacts("INVALID_PRODUCER_EPOCH", "old epoch", fenced=True)
FATAL = ErrorFacts("_FATAL", "fatal idempotent producer error", fatal=True)
NOT_LEADER = ErrorFacts("NOT_LEADER_OR_FOLLOWER", "Broker: Not leader for partition", retriable=True)

B, C = Phase.BEFORE_COMMIT, Phase.COMMIT

# (rule, phase, facts, sole writer, abort succeeded, expected outcome)
RULES = [
    ("failed init changes nothing", Phase.INIT, TIMEOUT, False, False, Outcome(FAIL, retire=True)),
    ("error before commit, abort succeeded", B, NOT_LEADER, False, True, Outcome(FAIL, retire=False)),
    ("error before commit, abort refused", B, TRANSPORT, False, False, Outcome(FAIL, retire=True)),
    ("error before commit, abort refused as fenced", B, TIMEOUT, False, "fenced",
     Outcome(FAIL, retire=True, event=FENCED)),
    ("commit result unknown, an abort refused as fenced changes nothing", C, TIMEOUT, False, "fenced",
     Outcome(INFO, retire=True)),
    ("abortable error during commit, abort succeeded", C, ABORTABLE, False, True, Outcome(FAIL, retire=False)),
    ("commit result unknown (timeout)", C, TIMEOUT, False, False, Outcome(INFO, retire=True)),
    ("abortable error during commit, abort refused", C, ABORTABLE, False, False, Outcome(INFO, retire=True)),
    ("fenced before commit", B, FENCE, False, False, Outcome(FAIL, retire=True, event=FENCED)),
    ("old epoch before commit", B, EPOCH, False, False, Outcome(FAIL, retire=True, event=FENCED)),
    ("fatal before commit", B, FATAL, False, False, Outcome(FAIL, retire=True, event=RETIRED)),
    ("fenced during commit: maybe a retry of a commit that happened", C, FENCE, False, False,
     Outcome(INFO, retire=True, event=FENCED)),
    ("fatal during commit", C, FATAL, False, False, Outcome(INFO, retire=True, event=RETIRED)),
    ("fenced during commit, sole writer: the coordinator's timeout abort", C, FENCE, True, False,
     Outcome(FAIL, retire=True, event=FENCED)),
    ("fatal during commit, sole writer: no fence, so the commit may have happened (kafka-python's EndTxn timeout)",
     C, FATAL, True, False, Outcome(INFO, retire=True, event=RETIRED)),
    ("plain send NotLeaderOrFollower: may have been written", Phase.PLAIN_SEND, NOT_LEADER, False, False,
     Outcome(INFO, retire=False)),
    ("plain send timeout", Phase.PLAIN_SEND, TIMEOUT, False, False, Outcome(INFO, retire=False)),
    ("poll error retires the consumer", Phase.POLL, TRANSPORT, False, False, Outcome(INFO, retire=True)),
]


@pytest.mark.parametrize("rule, phase, facts, sole_writer, aborted, expected", RULES, ids=[r[0] for r in RULES])
def test_classify(rule: str, phase: Phase, facts: ErrorFacts, sole_writer: bool, aborted: bool | str,
                  expected: Outcome) -> None:
    # ``aborted``: True (the abort succeeded), False (refused), "fenced" (refused as fenced)
    assert classify(phase, facts, sole_writer=sole_writer, aborted=aborted is True,
                    abort_fenced=aborted == "fenced") == expected


# (rule, phase, facts, abort tried?)
ABORTS = [
    ("any error before commit ends the transaction", B, NOT_LEADER, True),
    ("never after a fence", B, FENCE, False),
    ("never after a fatal error", C, FATAL, False),
    ("during commit only when the client requires it", C, ABORTABLE, True),
    ("not after a commit timeout (the commit goes on)", C, TIMEOUT, False),
    ("not for a plain send", Phase.PLAIN_SEND, NOT_LEADER, False),
]


@pytest.mark.parametrize("rule, phase, facts, expected", ABORTS, ids=[r[0] for r in ABORTS])
def test_should_abort(rule: str, phase: Phase, facts: ErrorFacts, expected: bool) -> None:
    assert should_abort(phase, facts) is expected


@pytest.mark.parametrize("facts, expected", [(TIMEOUT, True), (TRANSPORT, True), (ABORTABLE, False), (FENCE, False),
                                             (ErrorFacts("_X", "retriable but abortable", retriable=True,
                                                         txn_requires_abort=True), False)])
def test_retry_commit_only_on_retriable_errors_that_need_no_abort(facts: ErrorFacts, expected: bool) -> None:
    assert retry_commit(facts) is expected


# (rule, outcome type, errors met, commit retried, expected reason; None: definite, keep the producer)
INDEFINITE = [
    ("a clean commit", OK, [], False, None),
    ("an abort on purpose", FAIL, [], False, None),
    ("an error before commit, then an abort that went through", FAIL, [NOT_LEADER], False, None),
    ("an abortable commit error, aborted", FAIL, [ABORTABLE], False, None),
    ("a sole writer fenced during commit: the coordinator aborted it", FAIL, [FENCE], False, None),
    ("a commit whose outcome is unknown", INFO, [TIMEOUT, TIMEOUT], True, "the transaction's outcome is unknown"),
    ("a commit that timed out, retried until it committed: the first EndTxn may still be on its way",
     OK, [TIMEOUT], True, "a call timed out (_TIMED_OUT: Timed out)"),
    ("a flush that timed out, then aborted: its produce requests may still be on their way",
     FAIL, [TIMEOUT], False, "a call timed out (_TIMED_OUT: Timed out)"),
    ("a commit retried after a lost connection, then committed", OK, [TRANSPORT], True, "its commit was retried"),
]


@pytest.mark.parametrize("rule, outcome_type, met, retried, expected", INDEFINITE, ids=[r[0] for r in INDEFINITE])
def test_indefinite(rule: str, outcome_type: str, met: list[ErrorFacts], retried: bool, expected: str | None) -> None:
    assert indefinite(outcome_type, met, retried) == expected
