"""``eos-chaos bench clients``: the workloads on each client library, same scenario, same settings,
same cluster: committed transactions per second of the txn-producers (their ``ok`` transactions
over the run's duration), runs of the libraries interleaved so that a slow spell of the machine hits
all of them alike; and the Java bridge's start-up (process start to its first answer), which needs
no cluster.
"""

from __future__ import annotations

import logging
import random
import secrets
import statistics
import time
from pathlib import Path
from typing import Any

from clusters.backends import Backend
from clusters.base import Cluster
from harness import runner, scenario

log = logging.getLogger(__name__)


def one_run(cluster: Cluster, run_dir: Path, name: str, library: str, seconds: float) -> dict[str, Any]:
    """``name`` on ``library`` for ``seconds`` on ``cluster``: its committed transactions per second."""
    sc = scenario.load(name).with_library(library).with_duration(seconds)
    result = runner.run(sc, Backend(cluster.backend), random.randrange(2**31), run_dir, cluster=cluster, report=False)
    stats = result.verdict["stats"]
    ok = int(stats["txn"]["ok"])
    return {"library": library, "valid": result.valid, "ok_txns": ok, "ok_txn_per_s": round(ok / seconds, 2),
            "commit_p50_ms": stats["commit_latency_ms"].get("p50"), "run_dir": str(run_dir)}


def bench(cluster: Cluster, run_dir: Path, name: str, libraries: list[str], seconds: float, runs: int) -> dict[str, Any]:
    """``runs`` runs of ``name`` per library, interleaved; medians per library."""
    samples: list[dict[str, Any]] = []
    for i in range(runs):
        for library in libraries:
            # the folder name's last part tags the run's topics (runner.physical): unique per run, or
            # later runs would read (and be checked against) an earlier run's records
            folder = run_dir / f"{library.replace('@', '_').replace('.', '_')}_run{i + 1}-{secrets.token_hex(3)}"
            samples.append(one_run(cluster, folder, name, library, seconds))
            log.info(f"run {i + 1}/{runs} {library}: {samples[-1]['ok_txn_per_s']} committed txn/s")
            if not samples[-1]["valid"]:
                log.warning(f"run {i + 1}/{runs} {library} was not valid: see {folder}/verdict.json")
    medians = {lib: statistics.median(s["ok_txn_per_s"] for s in samples if s["library"] == lib) for lib in libraries}
    return {"scenario": name, "seconds": seconds, "ok_txn_per_s_median": medians, "samples": samples}


def jvm_startup(version: str, runs: int) -> list[float]:
    """Seconds from starting the bridge JVM to its first answer, ``runs`` times (each JVM then ended)."""
    from harness.workloads.clients import java, java_build

    build = java_build.ensure(version)
    took = []
    for _ in range(runs):
        t0 = time.monotonic()
        b = java.Bridge(build)
        took.append(time.monotonic() - t0)
        b.shutdown()
    return took
