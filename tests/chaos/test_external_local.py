"""The external backend on a real cluster it did not start: a local cluster brought up by its own
``cluster up`` (own state folder and port base), described by an inventory whose nodes are reached
through ``local`` (and, behind the ``library`` marker, ``ssh`` to 127.0.0.1 with a key of its own).

- a baseline run through the proxies is valid, its clients see only the proxies' addresses, and its
  topics and groups are gone afterwards; the journal records the cluster as read;
- a runner SIGKILLed with a paused and a killed broker leaves them so; ``eos-chaos cluster heal
  --inventory FILE`` puts every node back (up, not stopped, healthy) and retires the journal;
- (library) leader-kill and kip890-late-commit-tight give the built-in backends' verdicts, through
  ``local`` and ``ssh``; the KIP-890 finding reproduces through the rewriting proxy."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clusters.backends import procs, reclaim
from clusters.backends.external import inventory
from clusters.backends.external.external_cluster import cluster_id_of
from clusters.backends.external.heal_journal import folder_for
from clusters.backends.external.proxy_plan import ExternalPlan
from clusters.kafka import health
from harness.base.wait import wait_until
from harness.rundir.runfolder import run_tag
from tests.chaos.cli_helpers import run, start
from tests.chaos.external_helpers import (
    PROXY_PORT_BASE,
    UnderCluster,
    assert_kip890_torn_through_the_proxy,
    local_inventory,
    runner_env,
    under_cluster,
    verdict_of,
)
from tests.external_nodes import proc_state

pytestmark = pytest.mark.chaos

#: node 3 killed for far longer than the test waits (a runner has one broker fault on at a time:
#: chaos/nemesis.py never overlaps them, so a SIGKILLed runner leaves at most one open)
KILL_HELD = """\
name: ext-kill-held
description: node 3 killed, held for far longer than the test waits
duration: 120
workloads:
  - {kind: txn-producer, count: 1}
faults:
  - {at: 1, kind: kill, target: 3, duration: 110}
"""


@pytest.fixture(scope="module")
def under(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UnderCluster]:
    with under_cluster(tmp_path_factory.mktemp("under")) as c:
        yield c


def _admin(bootstrap: str) -> Any:
    return health.admin_client(bootstrap)


def _brokers_seen(bootstrap: str) -> set[str]:
    md = _admin(bootstrap).list_topics(timeout=10)
    return {f"{b.host}:{b.port}" for b in md.brokers.values()}


def test_a_baseline_through_the_proxies_is_valid_and_leaves_no_topic(under: UnderCluster, tmp_path: Path) -> None:
    t0 = time.monotonic()
    inv = local_inventory(under, tmp_path / "inv.yaml", "local-ext")
    env, out = runner_env(tmp_path), tmp_path / "run"
    p = start(["run", "baseline", "--inventory", str(inv), "--duration", "8", "--seed", "1", "--out", str(out)], env)
    plan = ExternalPlan(tuple((n, a) for n, a in under.direct.items()), PROXY_PORT_BASE)
    proxies = set(plan.advertised().values())
    try:  # while it runs: a client that bootstraps through the proxies learns of the proxies only
        wait_until(lambda: (out / "cluster.json").exists() or p.poll() is not None, timeout=120, what="the proxies")
        assert _brokers_seen(plan.bootstrap) == proxies
    finally:
        _, err = p.communicate(timeout=240)
    v = verdict_of(out)
    assert v["valid"] is True and v["run"]["healed"] is True, err[-3000:]
    tag = run_tag(out.name)
    left = [t for t in _admin(under.direct_bootstrap).list_topics(timeout=10).topics if tag in t]
    assert left == [], f"the run's topics are still on the cluster: {left}"
    journal = json.loads((out / "journal.json").read_text())
    facts = journal["cluster"]
    assert facts["kafka_version"] and facts["broker_settings"]["1"] and facts["features"], facts
    assert journal["cleanup_problems"] == []
    created = journal["run_topics"]  # what the run created, each deleted
    assert created and all(tag in t["name"] and t["deleted"] is True for t in created), created
    print(f"baseline on local-as-external: {time.monotonic() - t0:.1f}s")


#: A user's own chaos tests, as they would write them for any backend (run by the plugin's --eos-inventory).
USERS_TESTS = """\
import pytest

pytestmark = pytest.mark.chaos


def test_a_scenario_runs_on_my_cluster(kafka_cluster, run_scenario):
    assert kafka_cluster.backend == "external"
    result = run_scenario("baseline")  # 8 s (--eos-duration): valid, if short of the scenario's own minimum of commits
    assert result.valid and result.verdict.run.healed is True, result.summary()
    assert "--inventory" in result.command, result.command


def test_a_pause_of_my_broker_is_healed(kafka_cluster, nemesis):
    with nemesis.fault("pause", target=2):
        pass
"""


# in `make library`: a pytest session of its own, about 80 s with the cluster's start; the options'
# refusals and a cluster the proxies cannot front are unit tests (tests/unit/test_plugin.py)
@pytest.mark.library
def test_the_pytest_plugin_runs_a_users_chaos_tests_on_the_inventorys_cluster(under: UnderCluster,
                                                                               tmp_path: Path) -> None:
    """``pytest -m chaos --eos-inventory FILE`` in a session of its own, as a user runs it: the
    scenario's run and a nemesis pause act on the cluster through its node commands; the run's
    topics are deleted (and its journal says so); the proxies are gone after the session."""
    t0 = time.monotonic()
    inv = local_inventory(under, tmp_path / "inv.yaml", "local-pytest")
    (tmp_path / "test_mine.py").write_text(USERS_TESTS)
    results = tmp_path / "results"
    done = subprocess.run([sys.executable, "-m", "pytest", "-m", "chaos", "-q", "-p", "no:cacheprovider",
                           "--rootdir", str(tmp_path), "--eos-inventory", str(inv), "--eos-duration", "8",
                           "--eos-seed", "1", "--eos-results", str(results), str(tmp_path / "test_mine.py")],
                          env=runner_env(tmp_path), cwd=tmp_path, capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-2000:]
    run_dir = next(results.glob("*-pytest-baseline-*"))
    journal = json.loads((run_dir / "journal.json").read_text())
    assert journal["backend"] == "external" and journal["cluster"]["kafka_version"], journal
    created, tag = journal["run_topics"], run_tag(run_dir.name)
    assert created and all(t["deleted"] is True for t in created), created
    assert not [t for t in _admin(under.direct_bootstrap).list_topics(timeout=10).topics if tag in t]
    left = [t for t in procs.tagged_processes() if t.cluster_id == cluster_id_of(inventory.load(inv))]
    assert left == [], f"the session's proxies are still running: {left}"
    print(f"the plugin on local-as-external: {time.monotonic() - t0:.1f}s")


def _done_changes(journal: Path) -> list[dict[str, Any]]:
    try:
        lines = [json.loads(x) for x in journal.read_text().splitlines() if x.strip()]
    except FileNotFoundError:
        return []
    return [x for x in lines if x["op"] == "done"]


def test_a_sigkilled_runner_then_cluster_heal_leaves_every_node_as_it_was(under: UnderCluster, tmp_path: Path) -> None:
    """The runner SIGKILLed with node 3 killed by its fault (an open change in the journal), and node
    2 paused besides (SIGSTOP by hand: what the journal does not know, the heal's sweep finds)."""
    t0 = time.monotonic()
    inv_file = local_inventory(under, tmp_path / "inv.yaml", "local-heal")
    inv = inventory.load(inv_file)
    sc = tmp_path / "kill-held.yaml"
    sc.write_text(KILL_HELD)
    env = runner_env(tmp_path)
    journal = folder_for(inv, Path(env["EOS_CHAOS_STATE"])) / "journal.jsonl"
    try:
        _kill_and_heal(under, inv_file, sc, env, journal)
    finally:  # whatever failed: nothing of this test's runner left running (the next test needs the ports)
        reclaim.kill_processes([t for t in procs.tagged_processes() if t.cluster_id == cluster_id_of(inv)], "test over")
    print(f"SIGKILL + cluster heal on local-as-external: {time.monotonic() - t0:.1f}s")


def _kill_and_heal(under: UnderCluster, inv_file: Path, sc: Path, env: dict[str, str], journal: Path) -> None:
    inv = inventory.load(inv_file)
    p = start(["run", str(sc), "--inventory", str(inv_file), "--seed", "1", "--out", str(sc.parent / "run")], env)
    try:
        wait_until(lambda: len(_done_changes(journal)) >= 1 or p.poll() is not None, timeout=120,
                   what="the kill to be journaled done")
    finally:
        ended = p.poll() is not None
        if not ended:
            os.kill(p.pid, signal.SIGKILL)
        _, err = p.communicate(timeout=30)
    assert not ended, f"the run ended by itself: {err[-3000:]}"
    # the killed run's journal names the topics it left on the cluster, none marked deleted
    left = json.loads((sc.parent / "run" / "journal.json").read_text())["run_topics"]
    assert left and all(t["deleted"] is None for t in left), left
    assert [(x["what"], x["node"]) for x in _applied(journal)] == [("kill", 3)], journal.read_text()
    paused = _pid(under, 2)
    assert paused is not None and _pid(under, 3) is None, "node 3 must be down before the heal"
    os.kill(paused, signal.SIGSTOP)  # delivered to every thread of the JVM, not at once: waited for
    wait_until(lambda: proc_state(paused) in ("T", "t"), timeout=30, what=f"node 2 (pid {paused}) to be stopped",
               state=lambda: f"its state {proc_state(paused)!r}")

    healed = run(["cluster", "heal", "--inventory", str(inv_file)], env, timeout=300)
    assert healed.returncode == 0, healed.stdout + healed.stderr
    assert "was paused, resumed" in healed.stdout and "undo kill" in healed.stdout, healed.stdout
    for n in under.node_ids:
        pid = _pid(under, n)
        assert pid is not None and proc_state(pid) not in ("T", "t", "Z", ""), f"node {n} is not running"
    wait_until(lambda: _healthy(under), timeout=120, what="the cluster to be healthy again")
    assert not journal.exists() and list(journal.parent.glob("journal-*.healed.jsonl"))
    left = [t for t in procs.tagged_processes() if t.cluster_id == cluster_id_of(inv)]
    assert left == [], f"the killed runner's proxies or workloads are still running: {left}"


def _applied(journal: Path) -> list[dict[str, Any]]:
    return [x for x in (json.loads(line) for line in journal.read_text().splitlines() if line.strip())
            if x["op"] == "apply"]


def _pid(c: UnderCluster, n: int) -> int | None:
    props = str(c.node_dir(n) / "server.properties")
    found = [t.pid for t in procs.tagged_processes() if props in procs.cmdline(t.pid)]
    return found[0] if found else None


def _healthy(c: UnderCluster) -> bool:
    h = health.probe(_admin(c.direct_bootstrap), list(c.node_ids), [])
    return h.error is None and sorted(h.brokers) == list(c.node_ids) and not h.under_replicated and not h.offline


# ---------------------------------------------------------------- library: the built-in verdicts


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from tests.sshd import local_sshd

    with local_sshd(tmp_path_factory.mktemp("sshd")) as server:
        yield server


def _external_run(under: UnderCluster, tmp_path: Path, transport: str, name: str, seed: int,
                  sshd_server: Any = None, library: str | None = None) -> tuple[dict[str, Any], Path]:
    inv = local_inventory(under, tmp_path / f"inv-{seed}.yaml", f"local-{transport}", sshd=sshd_server)
    out = tmp_path / f"run-{seed}"
    args = ["run", name, "--inventory", str(inv), "--seed", str(seed), "--out", str(out)]
    run(args + (["--library", library] if library else []), runner_env(tmp_path), timeout=600)
    v = verdict_of(out)
    assert v["run"]["healed"] is True and v["run"]["nemesis_errors"] == [], v["run"]
    tag = run_tag(out.name)
    assert not [t for t in _admin(under.direct_bootstrap).list_topics(timeout=10).topics if tag in t]
    return v, out


@pytest.mark.library
@pytest.mark.parametrize("transport", ["local", "ssh"])
def test_leader_kill_on_an_external_cluster_is_valid(under: UnderCluster, tmp_path: Path, transport: str,
                                                     request: pytest.FixtureRequest) -> None:
    server = request.getfixturevalue("sshd") if transport == "ssh" else None
    v, _ = _external_run(under, tmp_path, transport, "leader-kill", 1, server)
    assert v["valid"] is True, v


@pytest.mark.library
@pytest.mark.parametrize("transport", ["local", "ssh"])
def test_kip890_late_commits_tear_transactions_through_the_rewriting_proxy(under: UnderCluster, tmp_path: Path,
                                                                           transport: str,
                                                                           request: pytest.FixtureRequest) -> None:
    server = request.getfixturevalue("sshd") if transport == "ssh" else None
    assert_kip890_torn_through_the_proxy(lambda seed: _external_run(under, tmp_path, transport, "kip890-late-commit-tight",
                                                                    seed, server, "confluent-kafka"))
