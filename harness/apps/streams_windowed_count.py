"""The shipped Kafka Streams app streams-windowed-count (docs/APPS.md, "The shipped apps"): the count
of each input key's records in tumbling windows on the records' own timestamps, with grace, each
update to the output topic keyed by Streams' TimeWindowedSerializer (or ``<key>@<window start ms>``
with ``--window-key text``), the count a Long. ``python -m harness.apps.streams_windowed_count ...``
builds the Streams apps into the cache if missing, then execs its JVM.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import NoReturn

from clusters.builds import javac
from harness.apps import streams_jvm

MODULE = "harness.apps.streams_windowed_count"
MAIN_CLASS = "eoschaos.apps.StreamsWindowedCount"
WINDOW_KEYS = ("time-windowed", "text")


def prepare() -> javac.Build:
    """The app, fetched and compiled into the cache if missing."""
    return streams_jvm.prepare()


def parser() -> argparse.ArgumentParser:
    p = streams_jvm.parser(MODULE, "A Kafka Streams app: per-key counts in tumbling windows with grace.", (
        ("--input", "the input topic (String keys)"),
        ("--output", "the output topic of the windowed counts")))
    p.add_argument("--window-size-ms", type=streams_jvm.positive, default=2000, help="the windows' size")
    p.add_argument("--grace-ms", type=streams_jvm.non_negative, default=1000,
                   help="how long after a window's end (in stream time) a late record still counts")
    p.add_argument("--window-key", choices=WINDOW_KEYS, default=WINDOW_KEYS[0],
                   help="the output key: Streams' TimeWindowedSerializer, or the text <key>@<window start ms>")
    streams_jvm.commit_interval(p)
    return p


def main(argv: Sequence[str] | None = None) -> NoReturn:
    streams_jvm.main(parser(), argv, MAIN_CLASS, lambda: prepare())  # looked up when called: tests replace it


if __name__ == "__main__":
    main()
