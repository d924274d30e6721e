"""The functions of the shipped apps' contracts (docs/APPS.md, "The contract": ``function:`` or
``by: harness.apps.functions:NAME``). The runner calls one per input record after the drain, in a
child process, to know what the app owes: a dict ``{"topic", "partition", "offset", "key", "value",
"timestamp", "headers"}`` in (the topic is the scenario's name); a map function gives a list of
``{"topic", "key", "value"}``, a by-function a list of ``[topic, key, amount]``. They must be
deterministic and pure, and import nothing heavy: each run loads this module."""

from __future__ import annotations

import re
from typing import Any

#: the scenario's name of go-copier's output topic, which ``go_suffix`` writes to: a scenario using
#: it names its output topic so (the run's name of it is ``{topic:app-out}`` in the command)
GO_COPIER_OUTPUT = "app-out"
#: what go-copier appends to each value (its main.go: ``Suffix``)
GO_SUFFIX = ":go"


def go_suffix(record: dict[str, Any]) -> list[dict[str, Any]]:
    """go-copier's contract: one output per input, same key, the value with ``:go`` appended (a null
    value is copied as empty, as the service reads it)."""
    return [{"topic": GO_COPIER_OUTPUT, "key": record["key"], "value": (record["value"] or "") + GO_SUFFIX}]


#: the scenario's name of flink-job's output topic, which ``flink_suffix`` writes to
FLINK_JOB_OUTPUT = "app-out"
#: what flink-job appends to each value (FlinkSuffixJob.java: ``SUFFIX``)
FLINK_SUFFIX = ":flink"


def flink_suffix(record: dict[str, Any]) -> list[dict[str, Any]]:
    """flink-job's contract: one output per input, same key, the value with ``:flink`` appended (a
    null value is written as the suffix alone, as the job maps it)."""
    return [{"topic": FLINK_JOB_OUTPUT, "key": record["key"], "value": (record["value"] or "") + FLINK_SUFFIX}]
#: the output topic of Kafka's WordCountDemo (its name fixed in its code), which ``words`` counts into
WORDCOUNT_OUTPUT = "streams-wordcount-output"
#: Java's ``\\W+``: one or more characters outside [a-zA-Z0-9_] (Java's ``\\W`` is ASCII unless told)
_NON_WORD = re.compile(r"\W+", re.ASCII)


def java_split(text: str) -> list[str]:
    """``text.split("\\W+")`` as Java's String.split gives it: a leading empty string kept (a line
    that starts with a non-word character counts the word ""), trailing ones dropped, and a text
    with no match (the empty line too) as itself."""
    parts = _NON_WORD.split(text)
    if len(parts) == 1:
        return parts
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def words(record: dict[str, Any]) -> list[list[Any]]:
    """Kafka's WordCountDemo (``flatMapValues(value.toLowerCase().split("\\W+"))``, ``groupBy`` the
    word, ``count``) as contributions: one ``[streams-wordcount-output, word, 1]`` per word of the
    line. A null line gives none (the demo would fail on it; the feeder never writes one)."""
    line = record.get("value")
    if not isinstance(line, str):
        return []
    return [[WORDCOUNT_OUTPUT, w, 1] for w in java_split(line.lower())]
