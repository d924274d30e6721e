"""The map functions of the shipped apps' contracts (docs/APPS.md, "The contract": ``function:
harness.apps.functions:NAME``). The runner calls one per input record after the drain, in a child
process, to know the outputs the app owes: a dict ``{"topic", "partition", "key", "value"}`` of
strings in (the topic is the scenario's name), a list of ``{"topic", "key", "value"}`` out. They
must be deterministic and pure, and import nothing heavy: each run loads this module."""

from __future__ import annotations

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
