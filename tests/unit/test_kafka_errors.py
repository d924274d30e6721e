"""Finding the Kafka error behind what confluent-kafka raises: the fence that ``flush()`` reports as
a ``SystemError`` (its cause is the KafkaException) must be classified like the fence it is."""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException

from harness.kafka_io import kafka_error, kafka_exception


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
