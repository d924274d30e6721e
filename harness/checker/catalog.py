"""Every check as one record (``Check``), in the order docs/reference/checks.md lists them (which
reports and verdict.json keep): its name, what a finding means, the default engine's implementation,
the Spark engine's or why it has none, and what it needs. Every table keyed by check name is derived
from ``CATALOG``: ``harness.checker``'s ``CHECKS``, ``MEANING`` and ``NEEDS_FINAL_READS``, and the
Spark engine's ``CHECKS`` and ``DEFAULT_ENGINE_ONLY`` (harness/checker/spark_engine.py).

The Spark engine's implementation is named, not imported (``"module:function"``): importing the
checker never imports the Spark engine, which only the Spark engine resolves (``Check.spark_check``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

from harness.checker import (
    checks,
    contracts,
    cycle_checks,
    join_contract,
    model_contract,
    pipeline,
    sparkjob_check,
    windowed_contract,
)
from harness.checker.checks import (
    NO_ACKED_OFFSETS,
    NO_COMMITTED_READS,
    NO_COMMITTED_RECORDS,
    NO_FAILED_WRITES,
    NO_OFFSETS,
    NO_OK_WRITES,
    NO_POLLS,
    NO_POSITIONS,
    NO_TXN_WRITES,
    Found,
)
from harness.history.model import AGGREGATE, JOIN, MAP, MODEL, WINDOWED
from harness.history.store import Tables

#: What a check can need to have something to look at (``Check.needs``): committed reads (``cv``),
#: values of ok / fail / any transactions, read or acknowledged positions, acknowledged offsets (of
#: any write / of committed transactions), polls, the final read_committed scan's records (``fc``).
#: The Spark engine answers each from its summary's totals (``spark_engine._there_is``).
Subject = Literal["cv", "ok", "fail", "txn", "positions", "offsets", "acked", "polls", "fc"]

SPARK_ENGINE = "harness.checker.spark_engine"
SPARK_CYCLES = "harness.checker.spark_cycles"


@dataclass(frozen=True)
class Check:
    """One check: what both engines need to run it, and what reports say about it."""

    #: its name in verdict.json, reports and ``expect: fires``
    name: str
    #: what its finding something means, in one line (reports, failure messages)
    meaning: str
    #: the default engine's implementation (numpy/pandas, in memory)
    default: Callable[[Tables], Found]
    #: the Spark engine's implementation, ``"module:function"`` (a function of a ``SparkHistory``),
    #: or None with the reason in ``spark_missing``
    spark: str | None
    #: why the Spark engine does not run it (only with ``spark`` None); it then says the default
    #: engine's reason for skipping when ``nothing_to_judge`` gives one, and otherwise fails with
    #: this reason (the verdict is unknown, never valid for want of a look)
    spark_missing: str | None = None
    #: it judges from the final read_committed scan: skipped when the history has none (``harness.checker.run_checks``)
    needs_final_reads: bool = False
    #: what it needs to have something to look at, each with the reason it gives without it
    #: (``Found.skipped``): the Spark engine skips by these before any query; the default engine's
    #: implementation finds the same and says the same reason itself
    needs: tuple[tuple[Subject, str], ...] = ()
    #: why a history gives it nothing to judge, from the meta alone (None: something to judge), for
    #: an engine without it (``spark_missing``)
    nothing_to_judge: Callable[[dict[str, Any]], str | None] | None = None

    def spark_check(self) -> Callable[[Any], Found]:
        """The Spark engine's implementation, imported now (``ValueError`` when it has none)."""
        if self.spark is None:
            raise ValueError(f"{self.name}: the Spark engine does not run it: {self.spark_missing}")
        module, _, attr = self.spark.partition(":")
        found: Callable[[Any], Found] = getattr(importlib.import_module(module), attr)
        return found


_APP_CONTRACT_ON_DEFAULT_ENGINE = (
    "an app's contract is judged by the default engine only (run eos-chaos check without --engine spark): "
    "an app history is a feeder's rate, small for pandas, and nothing was gained yet by writing it twice")



def _app_check(name: str, meaning: str, default: Callable[[Tables], Found],
               nothing: Callable[[dict[str, Any]], str | None]) -> Check:
    """The record of an app contract's check: the default engine's only, from the final scans, with
    ``nothing`` saying why a history has nothing for it to judge."""
    return Check(name, meaning, default, None, _APP_CONTRACT_ON_DEFAULT_ENGINE, needs_final_reads=True,
                 nothing_to_judge=nothing)


def _of(contract: str) -> Callable[[dict[str, Any]], str | None]:
    return partial(contracts.nothing_to_judge, contract=contract)


CATALOG: tuple[Check, ...] = (
    Check("duplicate", "a value visible more than once to read_committed readers",
          checks.duplicate, f"{SPARK_ENGINE}:duplicate", needs=(("cv", NO_COMMITTED_READS),)),
    Check("lost-write", "a committed value missing from the final read_committed scan: its transaction was acknowledged "
                        "committed (ok), or a read_committed reader saw it (which proves the commit, whatever the producer was told)",
          checks.lost_write, f"{SPARK_ENGINE}:lost_write", needs_final_reads=True, needs=(("ok", NO_OK_WRITES),)),
    Check("aborted-read", "a read_committed reader saw a value of a transaction that definitely aborted (fail); Jepsen's G1a",
          checks.aborted_read, f"{SPARK_ENGINE}:aborted_read",
          needs=(("cv", NO_COMMITTED_READS), ("fail", NO_FAILED_WRITES))),
    Check("precommitted-read", "a read_committed poll completed before the commit of the value's transaction was even "
                               "invoked (Jepsen's precommitted-read)",
          checks.precommitted_read, f"{SPARK_ENGINE}:precommitted_read", needs=(("polls", NO_POLLS),)),
    Check("phantom-read", "a read_committed reader saw a value no process of the run ever wrote (a phantom or garbage read)",
          checks.phantom_read, f"{SPARK_ENGINE}:phantom_read", needs=(("cv", NO_COMMITTED_READS),)),
    Check("torn-transaction", "some but not all values of one transaction visible to read_committed",
          checks.torn_transaction, f"{SPARK_ENGINE}:torn_transaction", needs_final_reads=True,
          needs=(("txn", NO_TXN_WRITES),)),
    Check("inconsistent-offsets", "one partition offset observed holding different values",
          checks.inconsistent_offsets, f"{SPARK_ENGINE}:inconsistent_offsets", needs=(("positions", NO_POSITIONS),)),
    Check("wrong-offset", "a value in the final read_committed scan, but not at the offset its delivery report gave, "
                          "where no read saw anything",
          checks.wrong_offset, f"{SPARK_ENGINE}:wrong_offset", needs_final_reads=True, needs=(("offsets", NO_OFFSETS),)),
    Check("nonmonotonic-send", "a producer's later transaction landed at lower offsets in a partition than its earlier one",
          checks.nonmonotonic_send, f"{SPARK_ENGINE}:nonmonotonic_send", needs=(("acked", NO_ACKED_OFFSETS),)),
    Check("int-nonmonotonic-send", "within one committed transaction, a send to a partition landed at a lower offset than "
                                   "the send before it to that partition (Jepsen's int-nonmonotonic-send)",
          checks.int_nonmonotonic_send, f"{SPARK_ENGINE}:int_nonmonotonic_send", needs=(("acked", NO_ACKED_OFFSETS),)),
    Check("nonmonotonic-poll", "a reader (assign mode) went backwards in a partition",
          checks.nonmonotonic_poll, f"{SPARK_ENGINE}:nonmonotonic_poll", needs=(("polls", NO_POLLS),)),
    Check("poll-skip", "a reader (assign mode) skipped committed records in a partition",
          checks.poll_skip, f"{SPARK_ENGINE}:poll_skip", needs_final_reads=True,
          needs=(("polls", NO_POLLS), ("fc", NO_COMMITTED_RECORDS))),
    Check("zombie-commit", "a transaction of an older producer epoch committed or became visible after a newer instance "
                           "with the same transactional.id finished init_transactions",
          checks.zombie_commit, f"{SPARK_ENGINE}:zombie_commit"),
    Check("copy-exactly-once", "consume-transform-produce: a committed input record has zero or several committed outputs, "
                               "the committed group offsets disagree with the outputs, an output copies no committed input, "
                               "or a copy is malformed (names no input)",
          checks.copy_exactly_once, f"{SPARK_ENGINE}:copy_exactly_once", needs_final_reads=True),
    Check("g0", "a write-order cycle (Jepsen's G0-process / G0-realtime): a transaction that completed ok before another "
                "was invoked has a record after one of the other's in a partition (docs/CYCLES.md)",
          cycle_checks.g0, f"{SPARK_CYCLES}:g0", needs_final_reads=True),
    Check("g1c", "a read-write cycle (Jepsen's G1c, -process, -realtime): a poll or a copier read a value whose transaction "
                 "could not have committed before the read: a transaction invoked after the read, or the reader itself, has a "
                 "record before one of the writer's, or the writer began after it (docs/CYCLES.md)",
          cycle_checks.g1c, f"{SPARK_CYCLES}:g1c", needs_final_reads=True),
    Check("spark-exactly-once", "the Spark job's committed output is not exactly its committed input",
          sparkjob_check.spark_exactly_once, f"{SPARK_ENGINE}:spark_exactly_once", needs_final_reads=True),
    _app_check("app-map", "an app's committed output is not what its map contract makes of its committed input: an output "
                          "missing or too many, one of an aborted input, one no input explains, or one key's outputs out of "
                          "their inputs' order",
               contracts.app_map, _of(MAP)),
    _app_check("app-aggregate", "an app's committed running aggregate of a key is not the exact aggregate of its committed "
                                "input: the last update differs, an update overshoots it or goes back, or is not an integer",
               contracts.app_aggregate, _of(AGGREGATE)),
    _app_check("app-model", "an app's committed final table is not the one its model gives for its committed input: a key's "
                            "last value differs, a key is missing or extra, an update goes back (monotone), or a key is in "
                            "two partitions",
               model_contract.app_model, _of(MODEL)),
    _app_check("app-windowed", "an app's committed windowed aggregate is not what Kafka Streams' window rule makes of its "
                               "committed input: a window's last update outside it, an update beyond it, a record past grace "
                               "counted, an update going back, split over partitions or not an integer",
               windowed_contract.app_windowed, _of(WINDOWED)),
    _app_check("app-join", "an app's committed stream-table join output is not one alternative per committed stream input "
                           "over the committed table: an output missing or one too many, one built from an aborted table "
                           "write or stream input, or one nothing explains",
               join_contract.app_join, _of(JOIN)),
    _app_check("app-pipeline", "a pipeline's last committed output is not what its stages' contracts, composed, make "
                               "of the first stage's committed input (each example blames the stages whose own hop "
                               "found something)",
               pipeline.app_pipeline, pipeline.nothing_to_judge),
    Check("lso-stall", "after heal, a partition's last stable offset did not reach its high watermark in time "
                       "(a hanging transaction)",
          checks.lso_stall, f"{SPARK_ENGINE}:lso_stall"),
)
