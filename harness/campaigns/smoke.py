"""The smoke run behind ``make run``: the library scenario ``smoke`` (one transactional producer for
~30 s while the leader of a partition is killed -9 and restarted) through the ordinary pipeline
(``harness.run.runner.run``: workloads, nemesis, heal, final reads over DIRECT, the real checker), and
its verdict in one PASS/FAIL line."""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from clusters.backends.backends import Backend
from clusters.backends.protocol import Cluster
from harness.history import store
from harness.run import scenario
from harness.run.runner import run
from harness.rundir.run_verdict import CheckRecord, RunVerdict
from harness.rundir.runfolder import new_run_dir

SCENARIO = "smoke"
#: The checks the summary names, in its words; every other check that fires is "other anomalies".
NAMED = {"lost-write": "missing", "duplicate": "duplicated", "aborted-read": "from aborted transactions",
         "phantom-read": "never written"}


@dataclass(frozen=True)
class SmokeResult:
    """A smoke run's verdict (the real checker's) and the two facts its summary adds: how many
    producer instances ran, and which node the nemesis killed (None: the fault never landed)."""

    run_dir: Path
    verdict: RunVerdict
    producers: int
    killed_node: int | None

    @property
    def committed(self) -> int:
        return self.verdict.figures.committed_values

    @property
    def read(self) -> int:
        return self.verdict.figures.reads.get("final_committed", 0)

    @property
    def nemesis_error(self) -> str | None:
        return "; ".join(self.verdict.run.nemesis_errors if self.verdict.run is not None else []) or None

    def findings(self) -> dict[str, CheckRecord]:
        """Every check that found something (or crashed): name -> its result."""
        return {name: c for name, c in self.verdict.checks.items() if c.count != 0}

    def details(self) -> list[str]:
        """What a person needs after a FAIL: each finding's first examples, the nemesis's failure."""
        lines = [f"{name}: {c.error or c.examples[:10]}" for name, c in self.findings().items()]
        if self.nemesis_error:
            lines.append(f"nemesis failed: {self.nemesis_error}")
        if self.killed_node is None:
            lines.append("no broker was killed: the fault did not land, so the run tested nothing")
        return lines

    @property
    def passed(self) -> bool:
        # as_expected: valid, healed, no nemesis error; a smoke that killed nothing tested nothing
        return (self.verdict.as_expected is True and self.committed > 0
                and self.killed_node is not None and self.nemesis_error is None)

    def summary(self) -> str:
        txn = self.verdict.figures.txn
        found = self.findings()
        named = ", ".join(f"{words} {(found[check].count if check in found else 0) or 0}" for check, words in NAMED.items())
        others = sum(c.count or 0 for name, c in found.items() if name not in NAMED)
        return (f"transactions ok={txn.ok} fail={txn.fail} info={txn.info} (producers {self.producers}); "
                f"committed values {self.committed}, read back {self.read}; {named}, "
                f"other anomalies {others}; killed node {self.killed_node}")


def run_smoke(cluster: Cluster, duration: float = 30.0, run_dir: Path | None = None,
              seed: int | None = None) -> SmokeResult:
    """The ``smoke`` scenario, ``duration`` seconds long, on ``cluster`` (healthy, left up), in
    ``run_dir`` (a new ``smoke-*`` folder if None); its result, report.html written."""
    sc = scenario.load(SCENARIO).with_duration(duration, flag="--duration")
    run_dir = run_dir or new_run_dir("smoke")
    s = seed if seed is not None else random.randrange(2**31)
    result = run(sc, Backend(cluster.backend), s, run_dir, cluster=cluster, source=SCENARIO)
    return summarise(run_dir, result.verdict, store.load(run_dir))


def summarise(run_dir: Path, verdict: RunVerdict, tables: store.Tables) -> SmokeResult:
    """The smoke's result from a run's verdict and its history tables (producer instances: their
    ``init`` calls; the killed node: the nemesis's first ``kill``)."""
    producers = int(tables.inits["process"].nunique())
    kills = [e["value"].get("node") for e in store.fault_events(tables.faults)
             if e["value"].get("kind") == "kill" and e["value"].get("phase") == "start"]
    return SmokeResult(run_dir, verdict, producers, kills[0] if kills else None)
