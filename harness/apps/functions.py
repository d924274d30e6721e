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


#: the output topic Kafka's WordCountDemo writes to, fixed in its code (a kept name: the scenario's name
#: is the run's)
WORDCOUNT_OUTPUT = "streams-wordcount-output"
#: what Java's ``String.split("\\W+")`` splits on: anything but ASCII letters, digits and ``_``
_NON_WORD = re.compile(r"\W+", re.ASCII)


def java_words(line: str) -> list[str]:
    """``line.toLowerCase().split("\\W+")`` as Java computes it: trailing empty strings dropped, a
    leading one kept (a line that starts with a non-word character), a line of none but them gives
    nothing, and an empty line one empty word."""
    parts = _NON_WORD.split(line.lower())
    if line == "":
        return [""]
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def words(record: dict[str, Any]) -> list[list[Any]]:
    """streams-wordcount's contributions (an ``aggregate`` contract's ``by``): one ``[topic, word, 1]``
    per word of the line (``WORDCOUNT_OUTPUT``), a repeated word once per occurrence; a null line
    none (the app's thread would fail on it: the feeder's ``lines`` never writes one)."""
    value = record["value"]
    if value is None:
        return []
    return [[WORDCOUNT_OUTPUT, w, 1] for w in java_words(value)]


#: the scenario's name of streams-join's output topic, which ``joined_order`` writes to
JOIN_OUTPUT = "app-joined"
#: what streams-join puts for the region of an order whose customer has none (StreamsJoin.NO_REGION)
NO_REGION = "-"


def joined_order(order: dict[str, Any], customer: dict[str, Any] | None) -> list[dict[str, Any]]:
    """streams-join's contract (a ``join`` contract's ``function``): the order joined with the
    customer's region the table held, ``<order>@<region>`` keyed by customer id, or ``<order>@-``
    when it held none (``customer`` None, or a deleted region)."""
    region = NO_REGION if customer is None or customer["value"] is None else customer["value"]
    return [{"topic": JOIN_OUTPUT, "key": order["key"], "value": f"{order['value']}@{region}"}]
