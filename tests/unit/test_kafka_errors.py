"""Finding the Kafka error behind what confluent-kafka raises: the fence that ``flush()`` reports as
a ``SystemError`` (its cause is the KafkaException) must be classified like the fence it is; and
what the confluent client tells the outcome rules about an error."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from harness.workloads.client import ClientError, ErrorFacts
from harness.workloads.clients.confluent import (
    ConfluentClient,
    ConfluentReader,
    client_errors,
    describe,
    error_facts,
    kafka_error,
    kafka_exception,
)


def test_a_system_error_caused_by_a_kafka_exception_yields_it() -> None:
    fence = KafkaException(KafkaError(KafkaError._FENCED, "fenced by a newer instance", fatal=True))
    try:
        try:
            raise fence
        except KafkaException as exc:
            raise SystemError("<built-in function isinstance> returned a result with an exception set") from exc
    except SystemError as wrapped:
        found = kafka_exception(wrapped)
    assert found is fence
    err = kafka_error(found)
    assert err is not None and err.code() == KafkaError._FENCED and err.fatal()


def test_other_errors_yield_nothing() -> None:
    assert kafka_exception(SystemError("unrelated")) is None
    assert kafka_exception(ValueError("x")) is None


def test_a_fence_behind_a_system_error_reaches_the_workload_as_client_error_facts() -> None:
    fence = KafkaException(KafkaError(KafkaError._FENCED, "fenced by a newer instance", fatal=True))
    with pytest.raises(ClientError) as caught, client_errors():
        try:
            raise fence
        except KafkaException as exc:
            raise SystemError("<built-in function isinstance> returned a result with an exception set") from exc
    facts = caught.value.facts
    assert facts.fenced and facts.fatal and not facts.retriable
    assert facts.describe() == "_FENCED: fenced by a newer instance"


def test_error_facts_carry_what_the_outcome_rules_read() -> None:
    timeout = error_facts(KafkaException(KafkaError(KafkaError._TIMED_OUT, "Timed out", retriable=True)))
    assert timeout == ErrorFacts("_TIMED_OUT", "Timed out", retriable=True, timed_out=True)
    abortable = error_facts(KafkaException(KafkaError(KafkaError.INVALID_TXN_STATE, "bad", txn_requires_abort=True)))
    assert abortable.txn_requires_abort and not abortable.fenced
    epoch = error_facts(KafkaException(KafkaError(KafkaError.INVALID_PRODUCER_EPOCH, "old epoch")))
    assert epoch.fenced and epoch.name == "INVALID_PRODUCER_EPOCH"


def test_other_exceptions_pass_unchanged_and_are_described_by_their_type() -> None:
    with pytest.raises(ValueError), client_errors():
        raise ValueError("x")
    with pytest.raises(SystemError), client_errors():
        raise SystemError("unrelated")
    assert describe(BufferError("queue full")) == "BufferError: queue full"


def test_the_confluent_client_reports_failed_calls_as_client_errors() -> None:
    # nothing listens at port 1: init times out (retriable: "retry call to resume")
    client = ConfluentClient("127.0.0.1:1", "eos-unit", 60_000)
    with pytest.raises(ClientError) as caught:
        client.init(0.5)
    assert caught.value.facts.timed_out and caught.value.facts.retriable, caught.value.facts
    client.close()
    reader = ConfluentReader("127.0.0.1:1", "eos-unit", [("t", 0)])
    assert reader.poll(10, 0.2) == []
    reader.close()
