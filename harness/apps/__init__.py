"""Applications shipped to be put under test as ``app`` workloads (docs/APPS.md): real exactly-once
consume-transform-produce programs in their own languages, which the library's app scenarios run and
judge as black boxes, as a user's own app would be. Each is built into the cache the first time a run
needs it (or by ``eos-chaos setup --all``) and started by a launcher module,
``{python} -m harness.apps.<module> ARGS``, that builds what is missing and then execs the program, so
signals (the workload faults' SIGKILL, SIGSTOP, SIGTERM) reach it directly."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

from clusters.builds import pins


@dataclass(frozen=True)
class ShippedApp:
    name: str
    #: the launcher: ``python -m MODULE ARGS``
    module: str
    #: what it is, in one line (the docs' table)
    what: str
    #: build it into the cache if missing (idempotent; raises ConfigError / EnvironmentProblem)
    prepare: Callable[[], object]
    #: built by ``eos-chaos setup --all`` (`make test`'s set-up); else the first run that starts it
    #: builds it (its launcher, within the app's ready_timeout_s)
    ahead: bool = True


def _prepare(module: str) -> Callable[[], object]:
    """The ``prepare`` of launcher ``module``, imported when called (a launcher imports this package)."""
    return lambda: importlib.import_module(module).prepare()


def _shipped(name: str, module: str, what: str, ahead: bool = True) -> ShippedApp:
    return ShippedApp(name, module, what, _prepare(module), ahead)


#: name -> the app; each entry's module registers nothing else
SHIPPED: dict[str, ShippedApp] = {app.name: app for app in (
    _shipped("streams-count-sum", "harness.apps.streams_count_sum",
             f"Kafka Streams (kafka-streams {pins.KAFKA_STREAMS_VERSION}): per-key count and sum of integer values through a repartition "
             "topic, each to its own output topic; --guarantee exactly_once_v2 (default) or at_least_once"),
    _shipped("streams-wordcount", "harness.apps.streams_wordcount",
             "Kafka Streams: Kafka's WordCountDemo, topics fixed in its code (streams-plaintext-input -> "
             "streams-wordcount-output); flatMapValues, groupBy(word), count; --guarantee as streams-count-sum"),
    _shipped("streams-windowed-count", "harness.apps.streams_windowed_count",
             "Kafka Streams: per-key counts in tumbling windows with grace on the records' timestamps, keyed by "
             "Streams' TimeWindowedSerializer or <key>@<start ms>; --guarantee as streams-count-sum"),
    _shipped("streams-join", "harness.apps.streams_join",
             "Kafka Streams: a KStream-KTable left join of orders with their customer's region, one output per "
             "order; at_least_once reads read_uncommitted (Streams' default), its negative control"),
    _shipped("kafka-copier", "harness.apps.kafka_copier",
             f"Kafka's own TransactionalMessageCopier (kafka-tools {pins.KAFKA_TOOLS_VERSION}): copies input to output unchanged in "
             "transactions with the consumed offsets; copies what was there at its start, then exits"),
    _shipped("flink-job", "harness.apps.flink_job",
             f"Flink {pins.FLINK_VERSION} on a MiniCluster JVM, flink-connector-kafka {pins.FLINK_KAFKA_CONNECTOR_VERSION}: "
             "KafkaSource -> value + ':flink' -> KafkaSink, EXACTLY_ONCE (--guarantee at_least_once: the negative control), "
             "resuming from its last retained checkpoint on each start",
             ahead=False),  # 83 MB of jars and ~30 s cold: only `make library` runs it
    _shipped("go-copier", "harness.apps.go_copier",
             "Go, franz-go's GroupTransactSession: each input copied with ':go' appended (--unsafe: no transactions)",
             ahead=False),  # only `make library` runs it: its 20 s of Go are not make test's to pay
    _shipped("pyspark-copier", "harness.apps.pyspark_job.spark_copier",
             "a user's own PySpark Structured Streaming job, started by its file: each micro-batch in one Kafka "
             "transaction with its marker (--sink eos, default), or Spark's built-in Kafka sink (--sink kafka)",
             ahead=False),  # nothing to build: the connector's jars are eos-chaos setup's (spark_jars)
)}


def prepare_all() -> list[str]:
    """Build every shipped app built ahead that is not built yet (``eos-chaos setup --all``); their names."""
    ahead = [app for app in SHIPPED.values() if app.ahead]
    for app in ahead:
        app.prepare()
    return [app.name for app in ahead]
