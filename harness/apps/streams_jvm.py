"""What the shipped Kafka Streams apps' launchers share (docs/APPS.md, "The shipped apps"): one build
of every source under ``harness/apps/streams/src`` against kafka-streams (Maven Central, into the
cache), the flags each app takes (argparse: a usage message and exit 2 before anything is built),
and the JVM's arguments. Each app is its own launcher module and main class; they share the build,
so the first of them a run starts builds all of them.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

from clusters.builds import javac, pins
from harness.apps import jvm
from harness.base.paths import REPO_ROOT, cache_dir

SOURCES = REPO_ROOT / "harness" / "apps" / "streams" / "src"
GUARANTEES = ("exactly_once_v2", "at_least_once")
#: Kafka Streams logs through slf4j: the simple backend, INFO and up, to stderr with a timestamp
#: (the harness's readiness watches KafkaStreams' "State transition from REBALANCING to RUNNING").
LOG_FLAGS = ("-Dorg.slf4j.simpleLogger.logFile=System.err", "-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
             "-Dorg.slf4j.simpleLogger.showDateTime=true",
             "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSS")


def program() -> javac.Program:
    deps = [("org.apache.kafka", "kafka-streams", pins.KAFKA_STREAMS_VERSION),
            ("org.slf4j", "slf4j-api", pins.SLF4J_VERSION), ("org.slf4j", "slf4j-simple", pins.SLF4J_VERSION)]
    return javac.Program("the shipped Kafka Streams apps", SOURCES, javac.pom("streams-apps", deps),
                         cache_dir() / "apps" / "streams" / pins.KAFKA_STREAMS_VERSION,
                         f"kafka-streams {pins.KAFKA_STREAMS_VERSION}")


def prepare() -> javac.Build:
    """Every Streams app, fetched and compiled into the cache if missing."""
    return javac.ready(program()) or javac.ensure(program())


def _integer(least: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            n = least - 1
        if n < least:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer of {least} or more")
        return n
    return parse


#: an argparse ``type``: an integer of 1 or more
positive = _integer(1)
#: an argparse ``type``: an integer of 0 or more
non_negative = _integer(0)


#: the flags every Streams launcher requires, with their help: the brokers first, the app's own
#: topics (``parser``'s ``required``) between, its id and state folder last
BOOTSTRAP = ("--bootstrap", "HOST:PORT,... of the brokers")
APP_FLAGS = (("--application-id", "Kafka Streams' application.id (the group, the internal topics' prefix)"),
            ("--state-dir", "the state folder of this instance (kept across its restarts)"))


def parser(module: str, description: str, required: Sequence[tuple[str, str]] = ()) -> argparse.ArgumentParser:
    """A launcher's parser: ``--bootstrap``, ``required`` (flag, help) pairs (the app's topics),
    ``--application-id`` and ``--state-dir``, then ``--guarantee``; the app adds the rest."""
    p = jvm.parser(module, description)
    for flag, what in (BOOTSTRAP, *required, *APP_FLAGS):
        p.add_argument(flag, required=True, help=what)
    p.add_argument("--guarantee", choices=GUARANTEES, default=GUARANTEES[0], help="processing.guarantee")
    return p


def commit_interval(p: argparse.ArgumentParser) -> None:
    """Adds ``--commit-interval-ms`` (Streams' default for the guarantee when not given)."""
    p.add_argument("--commit-interval-ms", type=positive, default=None,
                   help="commit.interval.ms (default: Streams' own: 100 ms on exactly_once_v2, 30 s on at_least_once)")


def java_args(main_class: str, ns: argparse.Namespace, build: javac.Build) -> list[str]:
    """The JVM's arguments after its options: the class path, the main class and every flag of ``ns``
    that has a value, in the parser's order, as ``--name value``."""
    flags = [(f"--{dest.replace('_', '-')}", str(v)) for dest, v in vars(ns).items() if v is not None]
    return [*LOG_FLAGS, "-cp", build.classpath, main_class, *(x for kv in flags for x in kv)]


def main(p: argparse.ArgumentParser, argv: Sequence[str] | None, main_class: str,
         prepare_app: Callable[[], javac.Build]) -> NoReturn:
    """Check ``argv`` against ``p`` (usage, exit 2), build with ``prepare_app``, then become the JVM."""
    ns = p.parse_args(argv)

    def prepared() -> tuple[Path, list[str]]:
        build = prepare_app()
        return build.java, java_args(main_class, ns, build)

    jvm.launch(p.prog, prepared)
