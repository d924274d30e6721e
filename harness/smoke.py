"""The smoke run behind ``make run``: commit transactions for ~30 s while one broker is killed -9
and restarted, then read everything back (read_committed, DIRECT listener) and check that every
committed value is there exactly once and nothing from an aborted transaction is."""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

from clusters.base import Cluster
from clusters.health import admin_client
from harness.kafka_io import (
    TxnLedger,
    TxnWriter,
    create_topic,
    partition_leader,
    read_all,
)

log = logging.getLogger(__name__)

TOPIC = "eos-smoke"
PARTITIONS = 3
VALUES_PER_TXN = 6
#: When, into the run, the leader of partition 0 is killed, and how long it stays down. The down
#: time is shorter than transaction.timeout.ms so transactions survive it rather than expire.
KILL_AT_S = 8.0
DOWN_FOR_S = 6.0



@dataclass
class SmokeResult:
    ledger: TxnLedger
    committed: int = 0
    read: int = 0
    missing: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    aborted_read: list[str] = field(default_factory=list)
    unknown_values: list[str] = field(default_factory=list)
    killed_node: int | None = None
    nemesis_error: str | None = None

    @property
    def passed(self) -> bool:
        return (
            self.committed > 0
            and not (self.missing or self.duplicated or self.aborted_read or self.unknown_values)
            and self.nemesis_error is None
            and self.killed_node is not None
        )

    def summary(self) -> str:
        l = self.ledger
        return (
            f"transactions ok={len(l.ok)} fail={len(l.fail)} info={len(l.info)} (producers {l.producers}); "
            f"committed values {self.committed}, read back {self.read}; missing {len(self.missing)}, "
            f"duplicated {len(self.duplicated)}, from aborted transactions {len(self.aborted_read)}, "
            f"never written {len(self.unknown_values)}; killed node {self.killed_node}"
        )


def run_smoke(cluster: Cluster, duration: float = 30.0, topic: str = TOPIC) -> SmokeResult:
    admin = admin_client(cluster.direct_bootstrap)
    create_topic(admin, topic, PARTITIONS)
    writer = TxnWriter(cluster.bootstrap)
    result = SmokeResult(ledger=writer.ledger)
    stop = threading.Event()

    def nemesis() -> None:
        # A timed schedule, not synchronisation: the fault lands mid-run whatever the producer does.
        if stop.wait(KILL_AT_S):
            return
        try:
            node = partition_leader(admin, topic, 0)
            log.info(f"nemesis: kill -9 node {node} (leader of {topic}-0)")
            cluster.kill(node)
            result.killed_node = node
            stop.wait(DOWN_FOR_S)
            log.info(f"nemesis: restarting node {node}")
            cluster.restart(node)
            log.info(f"nemesis: node {node} is back")
        except Exception as exc:  # noqa: BLE001 - reported in the result, the run still checks
            result.nemesis_error = f"{type(exc).__name__}: {exc}"

    thread = threading.Thread(target=nemesis, name="smoke-nemesis", daemon=True)
    start = time.monotonic()
    end = start + duration
    thread.start()
    try:
        txn = 0
        while time.monotonic() < end:
            values = [f"{topic}-{txn}-{i}" for i in range(VALUES_PER_TXN)]
            writer.write(topic, values, range(PARTITIONS), deadline=end)
            txn += 1
    finally:
        stop.set()
        writer.close()
        thread.join(timeout=120)
    log.info(f"producer done after {time.monotonic() - start:.0f}s: {len(writer.ledger.ok)} transactions committed")
    cluster.wait_healthy()
    back = read_all(cluster.direct_bootstrap, topic, PARTITIONS, "read_committed")
    return check(result, back.values())


def check(result: SmokeResult, read_values: list[str]) -> SmokeResult:
    """Compare what the writer knows with what a read_committed scan found."""
    l = result.ledger
    seen = Counter(read_values)
    committed = l.committed_values()
    aborted = {v for txn in l.fail for v in txn}
    maybe = {v for txn in l.info for v in txn}
    result.committed = len(committed)
    result.read = len(read_values)
    result.missing = [v for v in committed if seen[v] == 0]
    result.duplicated = [v for v, c in seen.items() if c > 1]
    result.aborted_read = [v for v in seen if v in aborted]
    known = aborted | maybe | set(committed)
    result.unknown_values = [v for v in seen if v not in known]
    return result
