"""The shipped Kafka Streams app (``harness/apps/streams/src``): a per-key count and a per-key sum of
an input topic's integer values, through a repartition topic, each to an output topic of its own
(docs/APPS.md, "The shipped apps"). ``python -m harness.apps.streams_count_sum --bootstrap ...``
builds it against kafka-streams (Maven Central, into the cache) if missing, then execs its JVM.
Under ``--guarantee exactly_once_v2`` (the default) both outputs are exact under any kill; under
``at_least_once`` a killed instance's last 30 s of input is counted again: the negative control.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from clusters.builds import javac, pins
from harness.apps import jvm
from harness.base.paths import REPO_ROOT, cache_dir

MODULE = "harness.apps.streams_count_sum"
SOURCES = REPO_ROOT / "harness" / "apps" / "streams" / "src"
MAIN_CLASS = "eoschaos.apps.StreamsCountSum"
GUARANTEES = ("exactly_once_v2", "at_least_once")
#: Kafka Streams logs through slf4j: the simple backend, INFO and up, to stderr with a timestamp
#: (the harness's readiness watches KafkaStreams' "State transition from REBALANCING to RUNNING").
LOG_FLAGS = ("-Dorg.slf4j.simpleLogger.logFile=System.err", "-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
             "-Dorg.slf4j.simpleLogger.showDateTime=true",
             "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSS")


def program() -> javac.Program:
    deps = [("org.apache.kafka", "kafka-streams", pins.KAFKA_STREAMS_VERSION),
            ("org.slf4j", "slf4j-api", pins.SLF4J_VERSION), ("org.slf4j", "slf4j-simple", pins.SLF4J_VERSION)]
    return javac.Program("the Kafka Streams app streams-count-sum", SOURCES,
                             javac.pom("streams-count-sum", deps),
                             cache_dir() / "apps" / "streams-count-sum" / pins.KAFKA_STREAMS_VERSION,
                             f"kafka-streams {pins.KAFKA_STREAMS_VERSION}")


def prepare() -> javac.Build:
    """The app, fetched and compiled into the cache if missing."""
    return javac.ready(program()) or javac.ensure(program())


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer of 1 or more")
    return n


def parser() -> argparse.ArgumentParser:
    p = jvm.parser(MODULE, "A Kafka Streams app: per-key count and sum of an input topic's integer values.")
    for flag, what in (("--bootstrap", "HOST:PORT,... of the brokers"), ("--input", "the input topic"),
                       ("--count-topic", "the output topic of the per-key counts"),
                       ("--sum-topic", "the output topic of the per-key sums"),
                       ("--application-id", "Kafka Streams' application.id (the group, the internal topics' prefix)"),
                       ("--state-dir", "the state folder of this instance (kept across its restarts)")):
        p.add_argument(flag, required=True, help=what)
    p.add_argument("--guarantee", choices=GUARANTEES, default=GUARANTEES[0], help="processing.guarantee")
    p.add_argument("--threads", type=_positive, default=1, help="num.stream.threads")
    return p


def java_args(ns: argparse.Namespace, build: javac.Build) -> list[str]:
    """The JVM's arguments after its options: the class path, the main class and the app's flags."""
    flags = {"--bootstrap": ns.bootstrap, "--input": ns.input, "--count-topic": ns.count_topic,
             "--sum-topic": ns.sum_topic, "--application-id": ns.application_id, "--state-dir": ns.state_dir,
             "--guarantee": ns.guarantee, "--threads": str(ns.threads)}
    return [*LOG_FLAGS, "-cp", build.classpath, MAIN_CLASS, *(x for kv in flags.items() for x in kv)]


def main(argv: Sequence[str] | None = None) -> NoReturn:
    p = parser()
    ns = p.parse_args(argv)

    def prepared() -> tuple[Path, list[str]]:
        build = prepare()
        return build.java, java_args(ns, build)

    jvm.launch(p.prog, prepared)


if __name__ == "__main__":
    main()
