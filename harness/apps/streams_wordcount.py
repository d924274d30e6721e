"""The shipped Kafka Streams app streams-wordcount: Kafka's own WordCountDemo, its topic names fixed in
its code (``streams-plaintext-input`` -> ``streams-wordcount-output``, docs/APPS.md "The shipped
apps"), so a scenario must keep those names. ``python -m harness.apps.streams_wordcount --bootstrap ...``
builds the Streams apps into the cache if missing, then execs its JVM. Each line is lower-cased and
split on non-word characters, and each word's running count goes out (String word, Long count):
exact under any kill on ``exactly_once_v2``; on ``at_least_once`` a killed instance's lines since its
last commit are counted again: the negative control.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import NoReturn

from clusters.builds import javac
from harness.apps import streams_jvm

MODULE = "harness.apps.streams_wordcount"
MAIN_CLASS = "eoschaos.apps.StreamsWordCount"
#: the topics fixed in its code (StreamsWordCount.INPUT_TOPIC, OUTPUT_TOPIC)
INPUT_TOPIC = "streams-plaintext-input"
OUTPUT_TOPIC = "streams-wordcount-output"


def prepare() -> javac.Build:
    """The app, fetched and compiled into the cache if missing."""
    return streams_jvm.prepare()


def parser() -> argparse.ArgumentParser:
    p = streams_jvm.parser(MODULE, f"Kafka's WordCountDemo: counts the words of {INPUT_TOPIC}'s lines into "
                           f"{OUTPUT_TOPIC} (names fixed in its code).")
    streams_jvm.commit_interval(p)
    return p


def main(argv: Sequence[str] | None = None) -> NoReturn:
    streams_jvm.main(parser(), argv, MAIN_CLASS, lambda: prepare())  # looked up when called: tests replace it


if __name__ == "__main__":
    main()
