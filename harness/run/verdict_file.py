"""``verdict.json`` (format 2): the checker's verdict of the history (``checks``, figures in
``stats``) + ``run``, the run's facts from its journal (healed, heal problems, nemesis errors,
interrupted, faulted at start, workloads killed at stop) + ``expected``, the scenario's expectation
+ ``as_expected``. ``eos-chaos run`` assembles it at the end of a run, ``eos-chaos check`` again
from the folder, keeping the expectation."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.checker.verdict import Verdict
from harness.run.scenario import Expect
from harness.rundir.journal import Journal
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
        out["as_expected"] = as_expected(out, expect)
    return out


def as_expected(v: Mapping[str, Any], e: Expect) -> bool:
    """Whether an assembled verdict ``v`` is what the scenario expects: the verdict and the checks
    that must fire, the minimums of the history's figures, the errors an incident replay must have
    met, and a run that tested what the scenario says (every fault applied, everything healed, every
    restarted Spark driver through a micro-batch again)."""
    s, run, checks = v["stats"], v.get("run") or {}, v["checks"]
    seen, spark = s.get("errors_seen") or {}, s.get("spark") or {}
    return ((e.valid is None or v["valid"] is e.valid)
            and all((checks.get(c, {}).get("count") or 0) > 0 for c in e.fires)
            and s["txn"]["ok"] >= e.min_ok_txns and s["fenced"] >= e.min_fenced
            and s.get("recreated", 0) >= e.min_recreated
            and run.get("healed") is not False and not run.get("nemesis_errors") and not run.get("not_recovered")
            and all(seen.get(name, 0) > 0 for name in e.errors)
            and spark.get("batches", 0) >= e.min_spark_batches
            and spark.get("replays_skipped", 0) >= e.min_replays_skipped)


def write(verdict: Mapping[str, Any], folder: RunFolder) -> Path:
    """Write the assembled ``verdict`` as the folder's ``verdict.json``, atomically."""
    return write_json(folder.verdict, dict(verdict))


def load(folder: RunFolder) -> dict[str, Any] | None:
    """The folder's ``verdict.json``; None when there is none yet."""
    return folder.read_json(folder.verdict)
