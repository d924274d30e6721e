"""The ``client:`` settings a library takes, by the names a scenario gives them.

A scenario's ``client:`` holds a library's own settings; one scenario file runs on every client of a
matrix or a hunt, so a setting that librdkafka and Kafka's Java client call by different names is
given under both (``socket.timeout.ms`` and ``request.timeout.ms``), and each library reads its own.
librdkafka knows both names and Java ignores an unknown one with a warning, but the Go bridges and
kafka-python refuse what they do not know, and must: a misspelt setting that a client silently
ignores makes a run test another setup than the one its scenario says. So the clients that follow
Java's names read librdkafka's name of a setting as the Java one, when the Java one is not given
(``java_names``), and a setting such a client does not take is refused before anything starts
(``unknown``), naming what it takes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

#: librdkafka's name of a setting -> the name Kafka's Java client (and the Go bridges, kafka-python) gives it
LIBRDKAFKA_NAMES = {"socket.timeout.ms": "request.timeout.ms"}

#: The settings of a Go bridge's workloads that the harness sets itself (gobridge.producer_config,
#: consumer_config): a scenario gives none of them.
GO_SET_BY_HARNESS = frozenset({"bootstrap.servers", "transactional.id", "group.id"})
#: The settings the franz-go and sarama bridges map onto their library (harness/workloads/clients/go_src/*/*.go,
#: their ``known``; tests/unit/test_client_setting_names.py holds the two lists to each other).
FRANZ_GO_SETTINGS = frozenset({
    "bootstrap.servers", "transactional.id", "transaction.timeout.ms", "linger.ms", "socket.connection.setup.timeout.ms",
    "delivery.timeout.ms", "request.timeout.ms", "isolation.level", "group.id", "session.timeout.ms",
    "auto.offset.reset", "enable.auto.commit"})
SARAMA_SETTINGS = frozenset({
    "bootstrap.servers", "transactional.id", "transaction.timeout.ms", "linger.ms", "socket.connection.setup.timeout.ms",
    "request.timeout.ms", "isolation.level", "group.id", "session.timeout.ms", "auto.offset.reset",
    "enable.auto.commit", "sarama.version"})


def java_names(settings: Mapping[str, Any]) -> dict[str, Any]:
    """``settings`` with librdkafka's names of a setting read as Java's: dropped when the Java name
    is given too (the Java one is this client's), else renamed."""
    out = dict(settings)
    for theirs, ours in LIBRDKAFKA_NAMES.items():
        if theirs in out:
            value = out.pop(theirs)
            out.setdefault(ours, value)
    return out


def unknown(settings: Iterable[str], takes: Iterable[str]) -> list[str]:
    """The names of ``settings`` a library that ``takes`` these (by Java's names) does not take,
    after librdkafka's names are read as Java's; sorted. ``_`` counts as ``.`` (kafka-python's
    keyword names, which its client takes too)."""
    known = {n.replace("_", ".") for n in takes}
    return sorted(n for n in java_names(dict.fromkeys(settings)) if n.replace("_", ".") not in known)


def kafka_python_settings() -> frozenset[str]:
    """kafka-python's producer and consumer settings, by the dotted names a scenario gives (its
    keyword names are Java's with ``_`` for ``.``)."""
    from kafka import KafkaConsumer, KafkaProducer

    return frozenset(k.replace("_", ".") for k in (*KafkaProducer.DEFAULT_CONFIG, *KafkaConsumer.DEFAULT_CONFIG))
