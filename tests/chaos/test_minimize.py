"""``eos-chaos minimize`` on a real invalid run, on the test session's cluster (the cluster that is
up): ``negative-duplicates`` (idempotence off, the leaders' responses dropped, so the client resends
what was written) with three latency faults of 20 ms that do not matter. The run is invalid with
``duplicate``; minimizing it must keep the drop-responses fault alone, every candidate without it
must not reproduce, and the minimal scenario's own run must show the duplicates.

About 8 runs of 13-18 s and their set-up, heal and final reads: 5-6 minutes, so in ``make library``.
Local backend only: the runs are ``eos-chaos run``'s, which run on both backends elsewhere."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clusters.backends.protocol import Cluster
from harness.run.scenario import load

pytestmark = [pytest.mark.chaos, pytest.mark.library, pytest.mark.timeout(1800)]
REPO = Path(__file__).resolve().parents[2]
RUN_TIMEOUT_S = 300
MINIMIZE_TIMEOUT_S = 1500
#: The fault that matters is the second.
SCENARIO = """\
name: minimize-duplicates
description: "negative-duplicates with three latency faults that do not matter: only drop-responses makes the client
  resend what was written"
duration: 18
workloads:
  - kind: txn-producer
    count: 1
    settings: {transactional: false}
    client: {enable.idempotence: false, acks: all, retries: 1000000, request.timeout.ms: 2000, message.timeout.ms: 60000,
             max.in.flight.requests.per.connection: 5}
  - kind: reader
    count: 1
faults:
  - {at: 1, kind: latency, target: 1, listeners: client, params: {latency_ms: 20, jitter_ms: 0}, duration: 2}
  - {at: 4, kind: drop-responses, target: all, listeners: client, duration: 3}
  - {at: 8, kind: latency, target: 2, listeners: client, params: {latency_ms: 20, jitter_ms: 0}, duration: 2}
  - {at: 11, kind: latency, target: 3, listeners: client, params: {latency_ms: 20, jitter_ms: 0}, duration: 2}
expect: {valid: false, fires: [duplicate]}
"""


def eos_chaos(args: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, stdin=subprocess.DEVNULL, cwd=cwd, timeout=timeout,
                          env={**os.environ, "CI": "true", "PYTHONPATH": str(REPO)})


def test_minimize_keeps_the_one_fault_that_matters(cluster: Cluster, tmp_path: Path) -> None:
    if cluster.backend != "local":
        pytest.skip("the runs are eos-chaos run's, which run on both backends elsewhere")
    (tmp_path / "dup.yaml").write_text(SCENARIO)
    run = eos_chaos(["run", "dup.yaml", "--backend", "local", "--seed", "11", "--out", "run"], tmp_path, RUN_TIMEOUT_S)
    assert run.returncode == 1, run.stdout[-3000:]
    verdict = json.loads((tmp_path / "run" / "verdict.json").read_text())
    assert verdict["checks"]["duplicate"]["count"] > 0, verdict["checks"]

    proc = eos_chaos(["minimize", "run", "--max-runs", "10", "--tries", "1"], tmp_path, MINIMIZE_TIMEOUT_S)
    assert proc.returncode == 0, proc.stdout[-5000:]
    out = tmp_path / "run" / "repro"
    record = json.loads((out / "minimize.json").read_text())
    assert record["outcome"] == "smaller" and record["runs"] <= 10, record
    assert (record["seed"], record["backend"], record["checks"]) == (11, "local", ["duplicate"])
    minimal = load(str(out / "minimal.yaml"))
    assert [f.kind for f in minimal.faults] == ["drop-responses"], (minimal.faults, out / "candidates.md")
    assert minimal.duration <= 18 and minimal.expect.fires == ["duplicate"]
    for c in record["candidates"]:  # the drop-responses fault is #2: without it, nothing reproduced
        if 2 not in c["faults"] and c["runs"]:
            assert c["reproduced"] is False, c
    best = next(c for c in record["candidates"] if c["number"] == record["minimal"]["candidate"])
    shown = json.loads((out / best["runs"][-1]["run_dir"] / "verdict.json").read_text())
    assert shown["checks"]["duplicate"]["count"] > 0 and shown["run"]["healed"] is True, shown["run"]
    report = (out / "REPORT.md").read_text()
    assert "### The minimal scenario (checked by running it)" in report and record["minimal"]["command"] in report
    assert "eos-chaos run minimal.yaml --backend local --seed 11" in record["minimal"]["command"]
    assert "| 1 |" in (out / "candidates.md").read_text()
