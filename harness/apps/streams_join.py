"""The shipped Kafka Streams app streams-join (docs/APPS.md, "The shipped apps"): a KStream-KTable left
join of a stream of orders (keyed by customer id) with a table of customers' regions, one output per
order, ``<order>@<region>`` (``<order>@-`` when the table has none yet), keyed by customer id.
``python -m harness.apps.streams_join ...`` builds the Streams apps into the cache if missing, then
execs its JVM. On ``at_least_once`` it reads its inputs read_uncommitted (Streams' default for that
guarantee): aborted orders and regions are joined, the negative control.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import NoReturn

from clusters.builds import javac
from harness.apps import streams_jvm

MODULE = "harness.apps.streams_join"
MAIN_CLASS = "eoschaos.apps.StreamsJoin"


def prepare() -> javac.Build:
    """The app, fetched and compiled into the cache if missing."""
    return streams_jvm.prepare()


def parser() -> argparse.ArgumentParser:
    p = streams_jvm.parser(MODULE, "A Kafka Streams app: orders joined with their customer's region.", (
        ("--orders", "the stream: orders keyed by customer id"),
        ("--customers", "the table: each customer's region, keyed by customer id (co-partitioned with --orders)"),
        ("--output", "the joined orders")))
    streams_jvm.commit_interval(p)
    return p


def main(argv: Sequence[str] | None = None) -> NoReturn:
    streams_jvm.main(parser(), argv, MAIN_CLASS, lambda: prepare())  # looked up when called: tests replace it


if __name__ == "__main__":
    main()
