"""The standalone Spark cluster (clusters/spark/standalone.py), real JVMs, no Kafka: it starts with both workers
registered, its status names every JVM, a killed worker comes back in a heal, a paused one is
resumed, and nothing is left after a stop; and when its owner is SIGKILLed, the next start's
reclaim takes the master and workers (a crashed runner's leftovers)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clusters.backends import procs, reclaim
from clusters.spark.standalone import WORKERS, SparkStandalone, load_record, recorded_status
from harness.base.wait import wait_until
from harness.cli import app

pytestmark = pytest.mark.chaos


def _spark_jvms(cluster_id: str) -> list[int]:
    return [t.pid for t in procs.tagged_processes() if t.cluster_id == cluster_id
            and procs.describe(t.pid).startswith("spark ")]


def test_a_standalone_cluster_starts_heals_and_stops_clean(iso_env: dict[str, str], tmp_path: Path) -> None:
    s = SparkStandalone(tmp_path / "spark", "spark-test-1")
    with s:
        alive = [w for w in s.workers() if w["state"] == "ALIVE"]
        assert len(alive) == WORKERS, s.workers()
        st = recorded_status()
        assert st is not None and st["master_url"] == s.master_url and st["master_status"] == "ALIVE", st
        assert [w["state"] for w in st["workers"]] == ["up"] * WORKERS, st
        assert sorted(_spark_jvms("spark-test-1")) == sorted([s.master_pid, *s.worker_pids.values()])
        # and through the CLI (no Kafka cluster here: exit 2, the Spark cluster still shown)
        r = CliRunner().invoke(app, ["cluster", "status", "--json"])
        shown = json.loads(r.output)["spark"]
        assert r.exit_code == 2 and shown["master_pid"] == s.master_pid, r.output
        assert {w["pid"] for w in shown["workers"]} == set(s.worker_pids.values()), shown
        # a killed worker and a paused one: heal brings both back
        killed = s.kill_worker(1)
        s.signal_tree(s.worker_pids[2], signal.SIGSTOP)
        assert not procs.alive(killed)
        wait_until(lambda: procs.stopped(s.worker_pids[2]), timeout=10, what="worker 2 to be stopped")
        assert s.heal() == []
        assert s.worker_pids[1] != killed and procs.alive(s.worker_pids[1]) and not s.paused()
    assert _spark_jvms("spark-test-1") == [] and load_record() is None


OWNER = """
import sys, time
from pathlib import Path
from clusters.spark.standalone import SparkStandalone
s = SparkStandalone(Path(sys.argv[1]), "spark-test-2")
s.start()
print("started", flush=True)
time.sleep(600)  # until SIGKILLed: the crashed runner
"""


def test_a_crashed_owners_spark_cluster_is_reclaimed(iso_env: dict[str, str], tmp_path: Path) -> None:
    owner = subprocess.Popen([sys.executable, "-c", OWNER, str(tmp_path / "spark")], stdout=subprocess.PIPE,
                             env=iso_env, text=True)
    try:
        assert owner.stdout is not None
        line = owner.stdout.readline()  # the owner prints once its cluster is up (or exits)
        assert line.strip() == "started", f"owner said {line!r}, exit {owner.poll()}"
        jvms = _spark_jvms("spark-test-2")
        assert len(jvms) == 1 + WORKERS, [procs.describe(p) for p in jvms]
    finally:
        os.kill(owner.pid, signal.SIGKILL)
        owner.wait(30)
    gone = reclaim.kill_processes(reclaim.dead_runs_processes("local"), "test")
    assert {g.name for g in gone} >= {"spark master", "spark worker"}, gone.lines()
    wait_until(lambda: not _spark_jvms("spark-test-2"), timeout=60, what="the reclaimed Spark JVMs to be gone",
               state=lambda: str(_spark_jvms("spark-test-2")))
    assert recorded_status() is None  # the stale record is dropped
