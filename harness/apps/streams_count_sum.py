"""The shipped Kafka Streams app streams-count-sum (``harness/apps/streams/src``): a per-key count and
a per-key sum of an input topic's integer values, through a repartition topic, each to an output topic
of its own (docs/APPS.md, "The shipped apps"). ``python -m harness.apps.streams_count_sum --bootstrap ...``
builds the Streams apps against kafka-streams (Maven Central, into the cache) if missing, then execs its
JVM. Under ``--guarantee exactly_once_v2`` (the default) both outputs are exact under any kill; under
``at_least_once`` a killed instance's last 30 s of input is counted again: the negative control.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import NoReturn

from clusters.builds import javac
from harness.apps import streams_jvm

MODULE = "harness.apps.streams_count_sum"
MAIN_CLASS = "eoschaos.apps.StreamsCountSum"


def prepare() -> javac.Build:
    """The app, fetched and compiled into the cache if missing."""
    return streams_jvm.prepare()


def parser() -> argparse.ArgumentParser:
    p = streams_jvm.parser(MODULE, "A Kafka Streams app: per-key count and sum of an input topic's integer values.", (
        ("--input", "the input topic"),
        ("--count-topic", "the output topic of the per-key counts"),
        ("--sum-topic", "the output topic of the per-key sums")))
    p.add_argument("--threads", type=streams_jvm.positive, default=1, help="num.stream.threads")
    return p


def main(argv: Sequence[str] | None = None) -> NoReturn:
    streams_jvm.main(parser(), argv, MAIN_CLASS, lambda: prepare())  # looked up when called: tests replace it


if __name__ == "__main__":
    main()
