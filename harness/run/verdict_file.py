"""``verdict.json`` (format 2): the checker's verdict of the history (``checks``, figures in
``stats``) + ``run``, the run's facts from its journal (healed, heal problems, nemesis errors,
interrupted, faulted at start, workloads killed at stop) + ``expected``, the scenario's expectation
+ ``as_expected``. ``eos-chaos run`` assembles it at the end of a run, ``eos-chaos check`` again
from the folder, keeping the expectation. Everything reads it as a ``RunVerdict``
(harness/rundir/run_verdict.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.checker.verdict import Verdict
from harness.run.scenario import Expect
from harness.rundir.journal import Journal
from harness.rundir.run_verdict import RunFacts, RunVerdict, SparkFigures
from harness.rundir.runfolder import RunFolder, write_json

FORMAT = 2
#: ``note`` of a verdict whose folder has no journal.json (made before runs kept one).
NO_JOURNAL = ("no journal.json (a run made before runs kept one): the run's facts (heal, fault errors, "
              "interruption) are unknown and left out of as_expected")


def assemble(verdict: Verdict | Mapping[str, Any], journal: Journal | None,
             expected: Mapping[str, Any] | None) -> dict[str, Any]:
    """``verdict.json``'s content: the checker's ``verdict``, the ``journal``'s run facts (None: an
    old folder without one, then ``run`` is None and a ``note`` says so) and the expectation (None:
    none known, then neither ``expected`` nor ``as_expected``)."""
    out = verdict.to_json() if isinstance(verdict, Verdict) else dict(verdict)
    out["format"] = FORMAT
    out["run"] = journal.run_facts() if journal is not None else None
    if journal is None:
        out["note"] = NO_JOURNAL
    if expected is not None:
        expect = Expect.model_validate(dict(expected))
        out["expected"] = expect.model_dump()
        out["as_expected"] = as_expected(RunVerdict.of(out), expect)
    return out


#: In ``expect.errors``, between names of which one must have been met: ``INVALID_TXN_STATE|PRODUCER_FENCED``
#: (kafka-bug-20785: the same late commit gets one on transaction.version 2, the other on 1).
ANY_OF = "|"


def as_expected(v: RunVerdict | Mapping[str, Any], e: Expect) -> bool:
    """Whether an assembled verdict ``v`` (or verdict.json's content) is what the scenario expects:
    the verdict and the checks that must fire, the minimums of the history's figures, the errors an
    incident replay must have met, and a run that tested what the scenario says (every fault
    applied, everything healed, every restarted Spark driver through a micro-batch again)."""
    v = v if isinstance(v, RunVerdict) else RunVerdict.of(v)
    s, run = v.figures, v.run or RunFacts()
    spark, fired = s.spark or SparkFigures(), v.fired()
    return ((e.valid is None or v.valid is e.valid)
            and all(c in fired for c in e.fires)
            and s.txn.ok >= e.min_ok_txns and s.fenced >= e.min_fenced
            and s.recreated >= e.min_recreated
            and run.healed is not False and not run.nemesis_errors and not run.not_recovered
            and all(any(s.errors_seen.get(n, 0) > 0 for n in names.split(ANY_OF)) for names in e.errors)
            and spark.batches >= e.min_spark_batches
            and spark.replays_skipped >= e.min_replays_skipped)


def write(verdict: Mapping[str, Any], folder: RunFolder) -> RunVerdict:
    """Write the assembled ``verdict`` as the folder's ``verdict.json``, atomically; returns it typed."""
    write_json(folder.verdict, dict(verdict))
    return RunVerdict.of(verdict, folder.verdict)


def load(folder: RunFolder) -> RunVerdict | None:
    """The folder's ``verdict.json``; None when there is none yet (``ConfigError`` when it is broken)."""
    return RunVerdict.load(folder)
