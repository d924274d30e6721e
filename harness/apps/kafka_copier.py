"""Kafka's own ``TransactionalMessageCopier`` (org.apache.kafka:kafka-tools, the copier of Kafka's
system tests), shipped as an app (docs/APPS.md, "The shipped apps"): it copies an input partition,
or in group mode the partitions its group assigns it, to an output topic, key and value unchanged,
into the input's partition number, committing the consumed offsets in each transaction.
``python -m harness.apps.kafka_copier FLAGS`` fetches Kafka's tools into the cache if missing, checks
the flags (the tool's own, passed through unchanged) and execs the JVM.

The tool copies what its partitions held when it started (or at its group's last rebalance) and
then exits 0: a scenario feeds the input before it starts, or restarts it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from clusters.builds import cache, jdk
from clusters.kafka import kafka_release
from harness.apps import jvm
from harness.base.paths import REPO_ROOT

MODULE = "harness.apps.kafka_copier"
MAIN_CLASS = "org.apache.kafka.tools.TransactionalMessageCopier"
#: Its log to stderr at WARN (log4j2, as Kafka's tools jar brings it); stdout is its JSON status lines.
LOG_CONFIG = REPO_ROOT / "harness" / "apps" / "copier" / "log4j2.properties"


def prepare() -> Path:
    """Kafka's tools, fetched into the cache if missing: the folder of their jars."""
    ready = kafka_release.kafka_tools_ready()
    if ready is not None:
        return ready
    with cache.cache_lock():
        return kafka_release.fetch_kafka_tools()


def parser() -> argparse.ArgumentParser:
    """The tool's flags (kafka-tools 4.3.1, ``--help``), so that a wrong one is a usage error (exit 2)
    before any JVM starts; the tool's own parser would exit 1."""
    p = jvm.parser(MODULE, "Kafka's TransactionalMessageCopier: copies an input partition (or, with "
                           "--group-mode, the group's) to an output topic in transactions.")
    p.add_argument("--input-topic", required=True, help="consume from this topic")
    p.add_argument("--input-partition", required=True, type=int,
                   help="consume this partition (required, but ignored with --group-mode)")
    p.add_argument("--output-topic", required=True, help="produce to this topic (into the input's partition number)")
    p.add_argument("--broker-list", required=True, help="HOST1:PORT1[,HOST2:PORT2[...]]")
    p.add_argument("--max-messages", type=int, help="copy at most this many (default: to the end offset at the start)")
    p.add_argument("--consumer-group", help="the group whose offsets are committed (default: a group named -1)")
    p.add_argument("--transaction-size", type=int, help="messages per transaction at most (default 200)")
    p.add_argument("--transaction-timeout", type=int, help="transaction.timeout.ms (default 60000)")
    p.add_argument("--transactional-id", required=True, help="the producer's transactional.id")
    p.add_argument("--enable-random-aborts", action="store_true", help="abort about one transaction in three")
    p.add_argument("--group-mode", action="store_true", help="subscribe to the input topic in the group")
    p.add_argument("--use-group-metadata", action="store_true",
                   help="commit offsets with the consumer's group metadata (generation: a zombie is fenced)")
    return p


def java_args(libs: Path, argv: Sequence[str]) -> list[str]:
    """The JVM's arguments after its options: the log configuration, the class path, the tool and its flags."""
    return [f"-Dlog4j2.configurationFile={LOG_CONFIG}", "-cp", str(libs / "*"), MAIN_CLASS, *argv]


def main(argv: Sequence[str] | None = None) -> NoReturn:
    args = list(sys.argv[1:] if argv is None else argv)
    p = parser()
    p.parse_args(args)

    def prepared() -> tuple[Path, list[str]]:
        libs = prepare()
        java, _ = jdk.find_java()
        return java, java_args(libs, args)

    jvm.launch(p.prog, prepared)


if __name__ == "__main__":
    main()
