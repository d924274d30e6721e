"""A runner SIGKILLed mid-fault on a cluster it started, on each backend: its workloads stop by
themselves within seconds (a frozen one cannot, and is left to reclaim); ``cluster status`` names
the dead owner and what it would reclaim; ``cluster down`` says what it reclaimed; and nothing
tagged is left (processes, containers, networks, the faults on the links).

The run gets its own state folder and port base, so it starts (and owns) its own cluster beside the
session's: the only way to leave a cluster whose owner is dead."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from clusters.backends import backends, procs, state
from clusters.backends.backends import Backend
from clusters.backends.protocol import NodeState
from harness.base import lifeline
from harness.base.wait import wait_until
from tests.chaos.cli_helpers import run, start, wait_for_line

#: node 3 down, client-to-n1 cut, latency on node 2's INTERNAL links, the reader frozen (a frozen
#: process cannot notice anything: reclaim's job); all for far longer than the test waits
from tests.chaos.test_heal import MID_FAULT_FROZEN
from tests.conftest import selected_backends

pytestmark = pytest.mark.chaos

#: Away from the session clusters' port bases (19092 local, 29092 compose), as the error tests do.
ALT_PORT_BASE = {"local": 19192, "compose": 29192}
#: Starting a cluster of its own: ~30 s local, up to ~4 min compose (`compose up --wait`) on 2 cores.
START_TIMEOUT_S = 360.0
#: The lifeline's grace plus a margin for a loaded machine.
STOP_BY_ITSELF_S = lifeline.LOST_GRACE_S + 10.0


def _workloads(owner: int) -> dict[str, int]:
    """The runner's workload processes, by name."""
    named = {t.pid: procs.describe(t.pid) for t in procs.tagged_processes() if t.owner == owner}
    return {what.removeprefix("workload "): pid for pid, what in named.items() if what.startswith("workload ")}


@pytest.mark.parametrize("backend", selected_backends())
def test_runner_killed_mid_fault_leaves_nothing_behind(backend: str, iso_env: dict[str, str], tmp_path: Path) -> None:
    scenario = tmp_path / "mid-fault.yaml"
    scenario.write_text(MID_FAULT_FROZEN)
    proc = start(["run", str(scenario), "--backend", backend, "--seed", "1", "--out", str(tmp_path / "run"),
                  "--port-base", str(ALT_PORT_BASE[backend])], iso_env)
    try:
        wait_for_line(proc, "nemesis: ", timeout=START_TIMEOUT_S)
        rec = state.load(backend)
        assert rec is not None and rec.owner_pid == proc.pid, rec
        cluster = backends.attach(rec)

        def faults_on() -> bool:
            w = _workloads(proc.pid)
            return (len(w) == 2 and procs.stopped(w.get("reader-0")) and bool(cluster.toxiproxy.unhealed())
                    and cluster.node_state(3) is NodeState.DOWN)

        wait_until(faults_on, timeout=60, what="node 3 down, latency on node 2's links and the reader frozen",
                   state=lambda: f"workloads {_workloads(proc.pid)}, links {cluster.toxiproxy.unhealed()}, "
                                 f"node 3 {cluster.node_state(3).value}")
        workloads = _workloads(proc.pid)
        proc.kill()  # SIGKILL: the runner heals nothing and stops nothing
        proc.wait(timeout=30)
    finally:
        proc.kill()
        proc.wait(timeout=30)

    # 1. the workload that can act stops by itself; the frozen one is left to reclaim
    wait_until(lambda: not procs.alive(workloads["txn-producer-0"]), timeout=STOP_BY_ITSELF_S,
               what="the killed runner's txn-producer to stop by itself",
               state=lambda: procs.describe(workloads["txn-producer-0"]))
    assert procs.stopped(workloads["reader-0"])

    # 2. status names the dead owner and what a start or down would reclaim
    r = run(["cluster", "status", "--backend", backend, "--json"], iso_env)
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert s["owner"] == {"pid": proc.pid, "alive": False, "detached": False}, s["owner"]
    assert [n["pid"] for n in s["nodes"] if n["id"] == 3] == [None], s["nodes"]
    would = s["would_reclaim"]
    assert {"kind": "process", "name": "workload reader-0", "pid": workloads["reader-0"]} in would, would
    assert any(w["kind"] == "link fault" and w["name"].startswith("n2-") for w in would), would
    assert _kinds_of_the_cluster(backend, would), would
    said = run(["cluster", "status", "--backend", backend], iso_env).stdout
    assert f"pid {proc.pid}, dead" in said and "would reclaim" in said and "workload reader-0" in said, said

    # 3. down says what it reclaimed
    down = run(["cluster", "down", "--backend", backend], iso_env)
    assert down.returncode == 0, down.stderr
    assert f"reclaimed (its owner, pid {proc.pid}, was dead)" in down.stdout, down.stdout
    assert f"process workload reader-0 (pid {workloads['reader-0']})" in down.stdout, down.stdout
    assert "link fault n2-" in down.stdout, down.stdout

    # 4. nothing tagged is left
    assert [t for t in procs.tagged_processes() if t.owner == proc.pid or t.cluster_id == rec.cluster_id] == []
    assert not cluster.toxiproxy.ping()  # the faults on the links went with it
    assert state.load(backend) is None
    if backend == Backend.compose.value:
        assert _containers_and_networks(rec.cluster_id) == []


def _kinds_of_the_cluster(backend: str, would: list[dict[str, Any]]) -> bool:
    """The cluster itself is listed: its running nodes and Toxiproxy (local), its containers and
    networks (compose)."""
    names = {(w["kind"], w["name"]) for w in would}
    if backend == Backend.local.value:
        return {("process", "node 1"), ("process", "node 2"), ("process", "toxiproxy")} <= names
    return {k for k, _ in names} >= {"container", "network"}


def _containers_and_networks(cluster_id: str) -> list[str]:
    from clusters.backends.compose.plan import LABEL_CLUSTER

    label = f"label={LABEL_CLUSTER}={cluster_id}"
    found = []
    for what in ("container", "network", "volume"):
        cmd = ["docker", what, "ls", "-q", "--filter", label] + (["-a"] if what == "container" else [])
        found += subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=dict(os.environ)).stdout.split()
    return found
