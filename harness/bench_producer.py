"""``eos-chaos bench producer``: our txn-producer workload and Kafka's own ``ProducerPerformance``
(kafka-tools, transactional), one after the other on the same healthy cluster, same record size and
the same transaction length in time (``ProducerPerformance`` only sizes transactions by time, so ours
runs with ``txn_ms``); their rates and the ratio (ours / Kafka's).

Ours includes what makes it a test workload: a history line per transaction, flushed as written,
and a delivery report per record (for the offsets). No faults; aborts off.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any

from clusters.artifacts import Artifacts
from clusters.base import Cluster
from clusters.health import admin_client
from harness.history import store
from harness.history.recorder import ENV_T0
from harness.kafka.admin import create_topic
from harness.runfolder import write_json
from harness.supervisor import Supervisor
from harness.workloads.common import WorkloadConfig
from harness.workloads.registry import TxnProducerSettings

log = logging.getLogger(__name__)

PARTITIONS = 6
#: ProducerPerformance's summary line: "N records sent, X records/sec (Y MB/sec), ..."
SUMMARY = re.compile(r"(\d+) records sent, ([\d.]+) records/sec")


def ours(cluster: Cluster, run_dir: Path, seconds: float, record_bytes: int, txn_ms: int) -> dict[str, Any]:
    topic = f"bench-ours-{run_dir.name.rsplit('-', 1)[-1]}"
    create_topic(admin_client(cluster.direct_bootstrap), topic, PARTITIONS)
    env = dict(os.environ, **{ENV_T0: str(time.monotonic_ns())})
    sup = Supervisor(run_dir, env)
    cfg = WorkloadConfig(run_dir=str(run_dir), name="txn-producer-0", bootstrap=cluster.bootstrap, topics=[topic],
                         partitions=PARTITIONS, max_seconds=seconds + 600,
                         settings=TxnProducerSettings(values_per_txn=100, txn_ms=txn_ms, abort_share=0.0,
                                                      value_bytes=record_bytes).model_dump(exclude_defaults=True))
    sup.start("txn-producer", cfg)
    time.sleep(seconds)  # the measurement window itself, not a synchronisation
    sup.stop_all()
    ops, _ = store.read_ops(run_dir)
    t = store.flatten(ops)
    ok = t.txns[t.txns["outcome"] == "ok"]
    span_s = (ok["complete_time"].max() - ok["invoke_time"].min()) / 1e9
    records = int(len(t.writes[t.writes["txn"].isin(ok["txn"])]))
    took_ms = float(((ok["complete_time"] - ok["invoke_time"]).astype("int64") / 1e6).median())
    return {"records": records, "records_per_s": round(records / span_s, 1), "txns": len(ok),
            "records_per_txn_median": int(t.writes.groupby("txn").size().median()), "txn_ms_median": round(took_ms, 1)}


def kafkas(arts: Artifacts, cluster: Cluster, run_dir: Path, num_records: int, record_bytes: int, txn_ms: int,
           timeout: float) -> dict[str, Any]:
    topic = f"bench-kafka-{run_dir.name.rsplit('-', 1)[-1]}"
    create_topic(admin_client(cluster.direct_bootstrap), topic, PARTITIONS)
    from clusters.artifacts import fetch_kafka_tools

    tools = fetch_kafka_tools()
    cmd = [str(arts.java), "-Xmx512m", "-cp", f"{tools}/*", "org.apache.kafka.tools.ProducerPerformance",
           "--topic", topic, "--num-records", str(num_records), "--record-size", str(record_bytes),
           "--throughput", "-1", "--transactional-id", f"bench-pp-{topic}", "--transaction-duration-ms", str(txn_ms),
           "--producer-props", f"bootstrap.servers={cluster.bootstrap}", "linger.ms=5"]
    log.info(f"ProducerPerformance: {num_records} records of {record_bytes} B, transactions of {txn_ms} ms")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    (run_dir / "producer-performance.log").write_text(proc.stdout + proc.stderr)
    m = SUMMARY.findall(proc.stdout)
    if proc.returncode != 0 or not m:
        raise RuntimeError(f"ProducerPerformance failed (exit {proc.returncode}):\n{(proc.stdout + proc.stderr)[-1500:]}")
    sent, rate = m[-1]
    return {"records": int(sent), "records_per_s": float(rate), "transaction_duration_ms": txn_ms}


def bench(arts: Artifacts, cluster: Cluster, run_dir: Path, seconds: float, record_bytes: int, txn_ms: int) -> dict[str, Any]:
    a = ours(cluster, run_dir / "ours", seconds, record_bytes, txn_ms)
    # Enough records for Kafka's tool to run about as long as ours did, if it were 5x faster.
    num = max(10_000, int(a["records_per_s"] * seconds * 5))
    (run_dir / "kafka").mkdir(parents=True, exist_ok=True)
    k = kafkas(arts, cluster, run_dir / "kafka", num, record_bytes, txn_ms, timeout=seconds * 20 + 120)
    return {"ours": a, "kafka_producer_performance": k, "ratio": round(a["records_per_s"] / k["records_per_s"], 3),
            "record_bytes": record_bytes}


def write(result: dict[str, Any], run_dir: Path) -> None:
    write_json(run_dir / "bench-producer.json", result)
