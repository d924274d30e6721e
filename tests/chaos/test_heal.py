"""Healing is proven, not assumed: a hung Toxiproxy is healed by escalation; a runner stopped
mid-fault (SIGTERM, as Ctrl-C or a CI cancel) heals, checks what ran and writes its verdict; a
runner SIGKILLed mid-fault (no cleanup possible) leaves its faults and workloads behind, and the
next run on that cluster finds them, reclaims and heals them before it starts."""

from __future__ import annotations

import json
import logging
import os
import signal
from pathlib import Path

import pytest

from chaos.heal import heal_all
from clusters.backends import procs, state
from clusters.backends.protocol import Cluster, NodeState
from harness.base.wait import wait_until
from tests.chaos.cli_helpers import run, start, wait_for_line

pytestmark = pytest.mark.chaos

#: A run whose faults are still on when the runner is stopped: node 3 killed, the client link
#: to node 1 cut, latency on node 2's INTERNAL links; all for far longer than the test waits.
MID_FAULT = """\
name: mid-fault
description: "Faults that stay on until healed, for tests that stop the runner in the middle."
duration: 300
workloads:
  - kind: txn-producer
    count: 1
  - kind: reader
    count: 1
faults:
  - {at: 2, kind: kill, target: 3, duration: 280}
  - {at: 2, kind: partition, partition: clients-from-node, target: 1, listeners: client, duration: 280}
  - {at: 2, kind: latency, target: 2, listeners: internal, duration: 280, params: {latency_ms: 200}}
"""


#: The same, and the reader frozen: a frozen workload cannot notice its runner's death (the others
#: stop by themselves, harness/base/lifeline.py), so a SIGKILLed runner leaves it for the next run to reclaim.
MID_FAULT_FROZEN = MID_FAULT + """\
  - {at: 2, kind: pause-workload, workload: reader, duration: 280}
"""


def _hang_toxiproxy(cluster: Cluster) -> None:
    """Make the Toxiproxy API hang, as it can under load: the process (or container) frozen."""
    if cluster.backend == "local":
        os.kill(int(cluster.status().extra["toxiproxy_pid"]), signal.SIGSTOP)
    else:
        cluster.container("toxiproxy").pause()  # type: ignore[attr-defined]


def test_heal_escalates_to_restarting_a_hung_toxiproxy(cluster: Cluster, caplog: pytest.LogCaptureFixture) -> None:
    tox = cluster.toxiproxy
    tox.add_toxic("n1-to-n2-internal", "latency", {"latency": 500}, name="slow")
    tox.set_enabled("client-to-n3", False)
    assert len(tox.unhealed()) == 2
    _hang_toxiproxy(cluster)
    with caplog.at_level(logging.INFO, logger="chaos.heal"):
        problems = heal_all(cluster)
    said = [r.getMessage() for r in caplog.records]
    assert problems == [], problems
    assert any("escalating to 'restart toxiproxy'" in m for m in said), said
    assert tox.unhealed() == [] and len(tox.proxies()) == 15


def _mid_fault_run(cluster: Cluster, tmp_path: Path, text: str = MID_FAULT) -> tuple[object, Path, dict[str, str]]:
    scenario = tmp_path / "mid-fault.yaml"
    scenario.write_text(text)
    out = tmp_path / "run"
    env = dict(os.environ)  # the session's state folder: the run uses the session cluster
    proc = start(["run", str(scenario), "--backend", cluster.backend, "--seed", "1", "--out", str(out)], env)
    wait_for_line(proc, "nemesis: latency", timeout=180)  # the last of the three faults is starting
    # on: node 3 down, client-to-n1 cut, a toxic on each of node 2's 4 INTERNAL links
    wait_until(lambda: len(_faulted(cluster)) >= 6 or None, timeout=60, what="the three faults to be on",
               state=lambda: str(_faulted(cluster)))
    return proc, out, env


def _still_owned_by_the_session(cluster: Cluster) -> None:
    """A run that healed the session's cluster (restarting node 3) must not have become its owner:
    it exits first, and the cluster would then look orphaned to the next start."""
    rec = state.load(cluster.backend)
    assert rec is not None and rec.owner_pid == os.getpid(), rec
    nodes = [t for t in procs.tagged_processes() if t.cluster_id == cluster.cluster_id and "kafka.Kafka" in " ".join(procs.cmdline(t.pid))]
    assert all(t.owner == os.getpid() for t in nodes), nodes


def _faulted(cluster: Cluster) -> list[str]:
    return cluster.toxiproxy.unhealed() + [f"node {n}" for n in cluster.topology.node_ids
                                           if cluster.node_state(n) is not NodeState.UP]


def test_runner_stopped_mid_fault_heals_and_writes_its_verdict(cluster: Cluster, tmp_path: Path) -> None:
    proc, out, _ = _mid_fault_run(cluster, tmp_path)
    proc.send_signal(signal.SIGTERM)
    rc = proc.wait(timeout=300)
    said = proc.stderr.read() if proc.stderr else ""
    print(said)
    assert rc == 130, said
    assert _faulted(cluster) == []
    verdict = json.loads((out / "verdict.json").read_text())
    run_facts = verdict["run"]
    assert run_facts["interrupted"] is True and run_facts["healed"] is True and verdict["stats"]["faults"] == 3, verdict
    assert verdict["valid"] is True, {k: c["count"] for k, c in verdict["checks"].items() if c["count"]}
    left = [t for t in procs.tagged_processes() if t.cluster_id == cluster.cluster_id and t.owner == proc.pid]
    assert left == [], left
    _still_owned_by_the_session(cluster)


def test_runner_killed_mid_fault_is_healed_by_the_next_run(cluster: Cluster, tmp_path: Path) -> None:
    proc, _, env = _mid_fault_run(cluster, tmp_path, MID_FAULT_FROZEN)
    wait_until(lambda: any(procs.stopped(t.pid) for t in procs.tagged_processes() if t.owner == proc.pid),
               timeout=60, what="the reader to be frozen")
    proc.kill()  # SIGKILL: the runner heals nothing, its frozen workload stays
    proc.wait(timeout=60)
    left_faults = _faulted(cluster)
    assert len(left_faults) >= 6, left_faults
    orphans = [t.pid for t in procs.tagged_processes() if t.cluster_id == cluster.cluster_id and t.owner == proc.pid]
    assert orphans, "the killed runner's frozen workload should still be running"

    out = tmp_path / "next"
    r = run(["run", "baseline", "--backend", cluster.backend, "--duration", "10", "--seed", "2", "--out", str(out)],
            env, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "healing before the run" in r.stderr and "reclaiming process" in r.stderr, r.stderr
    s = json.loads((out / "verdict.json").read_text())["run"]
    assert len(s["faulted_at_start"]) >= 6 and s["healed"] is True, s
    assert _faulted(cluster) == []
    assert not any(procs.alive(pid) for pid in orphans)
    _still_owned_by_the_session(cluster)
