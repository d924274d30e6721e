"""The Java bridge's start-up for ``eos-chaos bench txn-rate``: process start to its first answer,
which needs no cluster. (Committed transactions/s per library is ``bench txn-rate`` itself, in
harness/bench/producer.py.)
"""

from __future__ import annotations

import time


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
