"""How what kafka-python raises becomes ``ErrorFacts`` (with its transaction manager's state, where
kafka-python keeps what its exceptions do not say), and the threads that give its timeout-less
transactional calls a deadline. Real kafka-python objects; no cluster."""

from __future__ import annotations

import threading

import pytest
from kafka import errors as kerrors
from kafka.producer.transaction_manager import TransactionManager, TransactionState

from harness.workloads.client import ClientError, ErrorFacts
from harness.workloads.clients.kafka_python import _Calls, _settings, client_errors, facts_of
from harness.workloads.outcome import Phase, classify, retry_commit, should_abort


def manager(*path: TransactionState) -> TransactionManager:
    """A transaction manager walked through ``path`` (valid transitions only, as the client makes them)."""
    tm = TransactionManager(transactional_id="t")
    for state in path:
        tm._transition_to(state)
    return tm


IN_TXN = (TransactionState.INITIALIZING, TransactionState.READY, TransactionState.IN_TRANSACTION)


def test_a_fence_is_fenced_and_fatal() -> None:
    facts = facts_of(kerrors.ProducerFencedError())
    assert (facts.name, facts.fenced, facts.fatal, facts.retriable) == ("PRODUCER_FENCED", True, True, False)
    assert facts_of(kerrors.InvalidProducerEpochError()).fenced


def test_after_a_fence_every_call_raises_a_bare_kafka_error_and_the_manager_says_why() -> None:
    tm = manager(*IN_TXN)
    tm.transition_to_fatal_error(kerrors.ProducerFencedError())
    with pytest.raises(kerrors.KafkaError) as raised:
        tm.begin_commit()
    assert type(raised.value) is kerrors.KafkaError  # nothing in the type says "fenced"
    facts = facts_of(raised.value, tm)
    assert facts.fenced and facts.fatal and not facts.txn_requires_abort
    assert classify(Phase.BEFORE_COMMIT, facts).event == "fenced"


def test_an_abortable_error_asks_for_an_abort() -> None:
    tm = manager(*IN_TXN)
    tm.transition_to_abortable_error(kerrors.KafkaError("a batch failed"))
    with pytest.raises(kerrors.KafkaError) as raised:
        tm.begin_commit()
    facts = facts_of(raised.value, tm)
    assert facts.txn_requires_abort and not facts.fatal and not facts.fenced
    assert should_abort(Phase.COMMIT, facts) and not retry_commit(facts)


def test_an_abort_during_a_commit_is_refused_like_javas_invalid_transition() -> None:
    tm = manager(*IN_TXN, TransactionState.COMMITTING_TRANSACTION)
    with pytest.raises(kerrors.KafkaError) as raised:
        tm.begin_abort()
    facts = facts_of(raised.value, tm)
    assert "Invalid transition attempted from state COMMITTING_TRANSACTION to state ABORTING_TRANSACTION" in facts.message
    assert not (facts.retriable or facts.fatal or facts.txn_requires_abort or facts.timed_out)


@pytest.mark.parametrize("exc, expected", [
    (kerrors.KafkaTimeoutError("commit_transaction did not finish within 2s"),
     ErrorFacts("KafkaTimeoutError", "commit_transaction did not finish within 2s", retriable=True, timed_out=True)),
    (kerrors.NotLeaderForPartitionError(),
     ErrorFacts("NOT_LEADER_FOR_PARTITION", kerrors.NotLeaderForPartitionError.description, retriable=True)),
    (kerrors.KafkaConnectionError("socket disconnected"),
     ErrorFacts("KafkaConnectionError", "socket disconnected", retriable=True)),
])
def test_error_facts_carry_what_the_outcome_rules_read(exc: kerrors.KafkaError, expected: ErrorFacts) -> None:
    assert facts_of(exc, manager(*IN_TXN)) == expected


def test_kafka_errors_reach_the_workload_as_client_errors_and_bugs_pass() -> None:
    with pytest.raises(ClientError) as caught, client_errors():
        raise kerrors.ProducerFencedError()
    assert caught.value.facts.fenced
    with pytest.raises(ValueError), client_errors():
        raise ValueError("a bug, not a client failure")


def test_a_call_that_times_out_goes_on_and_the_next_waits_for_the_same_call() -> None:
    release, started = threading.Event(), []

    def commit() -> None:
        started.append(1)
        release.wait(10)

    calls = _Calls()
    with pytest.raises(kerrors.KafkaTimeoutError):
        calls.run("commit_transaction", commit, 0.05)
    release.set()
    calls.run("commit_transaction", commit, 10)  # waits for the first call: no second commit
    assert started == [1]


def test_a_call_that_failed_raises_its_error_in_the_callers_thread_and_is_then_forgotten() -> None:
    calls, n = _Calls(), []

    def fenced() -> None:
        n.append(1)
        raise kerrors.ProducerFencedError()

    for _ in range(2):
        with pytest.raises(kerrors.ProducerFencedError):
            calls.run("abort_transaction", fenced, 10)
    assert len(n) == 2


def test_client_settings_take_kafka_pythons_names_or_the_dotted_ones() -> None:
    assert _settings({"isolation.level": "read_uncommitted", "linger_ms": 0}) == \
        {"isolation_level": "read_uncommitted", "linger_ms": 0}


def test_an_endtxn_that_timed_out_is_fatal_but_its_commit_stays_unknown() -> None:
    """kafka-python makes an EndTxn whose request timed out a fatal error; the held request may still
    commit (the client table's kafka-python runs on TV2: recorded fail, then read committed)."""
    tm = manager(*IN_TXN, TransactionState.COMMITTING_TRANSACTION)
    exc = kerrors.KafkaError("Could not execute transactional request for unknown reasons: "
                             "[Error 7] RequestTimedOutError: Request timed out after 1999 ms")
    tm.transition_to_fatal_error(exc)
    facts = facts_of(exc, tm)
    assert facts.fatal and not facts.fenced
    assert classify(Phase.COMMIT, facts, sole_writer=True).type == "info"
