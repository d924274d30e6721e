"""Local backend: bad input and broken environments: a clear message, exit code 2, nothing left running.

These run the real CLI in a subprocess with their own state folder and ports, so they do not
disturb (and are not disturbed by) the session cluster.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
from pathlib import Path

import pytest

from clusters.backends import procs, state
from clusters.backends.local import LocalCluster
from clusters.kafka.topology import Topology
from harness.base.errors import ClusterError
from harness.base.wait import wait_until
from harness.rundir.runfolder import new_run_dir
from tests.chaos.cli_helpers import CLI, path_with, run, start, started_here, wait_for_line

pytestmark = pytest.mark.chaos

ALT_PORT_BASE = 19192  # away from the session cluster's 19092


def test_unknown_backend_is_a_usage_error(iso_env: dict[str, str]) -> None:
    r = run(["cluster", "up", "--backend", "nomad"], iso_env)
    assert r.returncode == 2
    assert "nomad" in r.stderr and "local" in r.stderr


@pytest.mark.parametrize("version,expect", [("4.x", "MAJOR.MINOR.PATCH"), ("3.6.1", "older than 3.9.0")])
def test_bad_kafka_version_is_a_usage_error(iso_env: dict[str, str], version: str, expect: str) -> None:
    r = run(["cluster", "up", "--kafka-version", version], iso_env)
    assert r.returncode == 2 and expect in r.stderr, r.stderr
    assert started_here(iso_env) == []


@pytest.mark.parametrize("args, says", [
    (["cluster", "up", "--kafka-version", "3.9.1", "--transaction-version", "2"],
     "--transaction-version 2: Kafka 3.9.1 cannot be formatted at transaction.version=2; it accepts 0"),
    (["run", "txn-baseline", "--kafka-version", "3.9.1", "--transaction-version", "1"], "it accepts 0 (default 0)"),
    (["cluster", "up", "--transaction-version", "3"], "3 is not a transaction.version; allowed: 0, 1, 2"),
])
def test_a_transaction_version_the_release_does_not_take_starts_nothing(iso_env: dict[str, str], args: list[str],
                                                                        says: str) -> None:
    r = run(args, dict(iso_env, COLUMNS="400"))  # no wrapped lines in typer's error box
    assert r.returncode == 2 and says in r.stderr, r.stderr
    assert started_here(iso_env) == []


def test_kafka_version_missing_from_maven_central(iso_env: dict[str, str]) -> None:
    r = run(["setup", "--kafka-version", "4.99.0"], iso_env)
    assert r.returncode == 2, r.stderr
    assert "4.99.0" in r.stderr and "not on Maven Central" in r.stderr


@pytest.mark.parametrize("backend", ["local", "compose"])
def test_down_with_nothing_up_is_fine(iso_env: dict[str, str], backend: str) -> None:
    r = run(["cluster", "down", "--backend", backend], iso_env)
    assert r.returncode == 0 and f"no {backend} cluster was up" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("backend", ["local", "compose"])
def test_status_with_nothing_up_says_so(iso_env: dict[str, str], backend: str) -> None:
    r = run(["cluster", "status", "--backend", backend, "--json"], iso_env)
    assert r.returncode == 2 and '"up": false' in r.stdout and f'"backend": "{backend}"' in r.stdout


def test_busy_port_names_the_address_and_starts_nothing(iso_env: dict[str, str]) -> None:
    blocker = socket.socket()
    blocker.bind(("127.10.0.2", ALT_PORT_BASE))
    blocker.listen()
    try:
        r = run(["cluster", "up", "--port-base", str(ALT_PORT_BASE)], iso_env)
    finally:
        blocker.close()
    assert r.returncode == 2, r.stderr
    assert f"127.10.0.2:{ALT_PORT_BASE}" in r.stderr and "client-to-n2" in r.stderr and "--port-base" in r.stderr
    assert started_here(iso_env) == []


def test_missing_java(iso_env: dict[str, str], tmp_path: Path) -> None:
    env = dict(iso_env, PATH=path_with(tmp_path))
    env.pop("JAVA_HOME", None)
    r = run(["cluster", "up", "--port-base", str(ALT_PORT_BASE)], env)
    assert r.returncode == 2 and "Java not found" in r.stderr, r.stderr


def test_too_old_java(iso_env: dict[str, str], tmp_path: Path) -> None:
    old_java = '#!/bin/sh\necho \'openjdk version "11.0.21" 2023-10-17\' >&2\n'
    env = dict(iso_env, PATH=path_with(tmp_path, java=old_java))
    env.pop("JAVA_HOME", None)
    r = run(["cluster", "up", "--port-base", str(ALT_PORT_BASE)], env)
    assert r.returncode == 2 and "Java 11" in r.stderr and "17" in r.stderr, r.stderr


def test_missing_maven_for_a_cold_cache(iso_env: dict[str, str], tmp_path: Path) -> None:
    env = dict(iso_env, PATH=path_with(tmp_path, java=shutil.which("java")), EOS_CHAOS_CACHE=str(tmp_path / "cache"))
    env.pop("JAVA_HOME", None)
    r = run(["setup"], env)
    assert r.returncode == 2 and "`mvn` not found" in r.stderr and "apt-get install maven" in r.stderr, r.stderr


def test_node_that_fails_to_start_shows_its_log_and_leaves_nothing(arts, iso_env: dict[str, str]) -> None:
    run_dir = new_run_dir("pytest-badnode")
    cluster = LocalCluster(arts, run_dir, Topology.at(ALT_PORT_BASE),
                           overrides={"authorizer.class.name": "org.example.NoSuchAuthorizer"})
    with pytest.raises(ClusterError) as info:
        cluster.start()
    msg = str(info.value)
    assert "exited during start-up" in msg and "NoSuchAuthorizer" in msg, msg
    assert [t for t in procs.tagged_processes() if t.cluster_id == cluster.cluster_id] == []
    assert state.load("local") is None


def test_ctrl_c_during_start_takes_everything_down(iso_env: dict[str, str]) -> None:
    proc = start(["cluster", "up", "--port-base", str(ALT_PORT_BASE)], iso_env)
    try:
        wait_for_line(proc, "starting local cluster", 120)
        # let it get as far as starting processes before interrupting
        wait_until(lambda: bool(started_here(iso_env)), timeout=60,
                   what="the cluster's first processes")
        proc.send_signal(signal.SIGINT)
        rc = proc.wait(timeout=120)
    finally:
        proc.kill()
    assert rc == 130, proc.stderr.read() if proc.stderr else ""
    assert started_here(iso_env) == []
    assert not (Path(iso_env["EOS_CHAOS_STATE"]) / "local.json").exists()


def test_crashed_run_is_reclaimed_by_the_next_start(iso_env: dict[str, str]) -> None:
    proc = subprocess.Popen([CLI, "smoke", "--duration", "60", "--port-base", str(ALT_PORT_BASE)], env=iso_env,
                            stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        wait_for_line(proc, "cluster healthy", 180)
    finally:
        proc.kill()  # SIGKILL: no cleanup runs, like a crashed harness
        proc.wait(timeout=30)
    leftovers = [t for t in procs.tagged_processes() if t.owner == proc.pid]
    assert len(leftovers) == 5, leftovers  # 3 brokers, toxiproxy and the wire proxy survive the crash

    up = run(["cluster", "up", "--port-base", str(ALT_PORT_BASE)], iso_env)
    assert up.returncode == 0, up.stderr
    assert "reclaiming leftovers of a crashed run" in up.stderr
    assert not any(procs.alive(t.pid) for t in leftovers)
    down = run(["cluster", "down"], iso_env)
    assert down.returncode == 0, down.stderr
    assert started_here(iso_env) == []
