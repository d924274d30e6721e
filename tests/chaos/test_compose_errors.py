"""Compose backend: no engine, a cluster that fails to start, a failing image build, busy ports,
Ctrl-C and a crashed run. A clear message, exit code 2, and nothing labelled ``eos-chaos`` left.

Clusters here run at their own port base (ports, Toxiproxy API and bridge subnets all move with
it) and state folder, so they do not disturb the session cluster, which may be up meanwhile.
"""

from __future__ import annotations

import shutil
import signal
import socket
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from clusters.backends import artifacts, procs, state
from clusters.backends.compose import images
from clusters.backends.compose.compose_cluster import ComposeCluster
from clusters.backends.compose.engine import ensure_engine
from clusters.backends.compose.plan import LABEL, LABEL_CLUSTER, LABEL_OWNER, LABEL_STATE, ComposePlan
from harness.base.errors import ClusterError, EnvironmentProblem
from harness.base.wait import wait_until
from harness.rundir.runfolder import new_run_dir
from tests.chaos.cli_helpers import path_with, run, start, wait_for_line

pytestmark = pytest.mark.chaos

ALT_PORT_BASE = 29192  # away from the session cluster's 29092
ALT_PLAN = ComposePlan.at(ALT_PORT_BASE)


@pytest.fixture(scope="module")
def client() -> Iterator[docker.DockerClient]:
    ensure_engine()
    c = docker.from_env(timeout=120)
    yield c
    c.close()


def ours_left(client: docker.DockerClient, env: dict[str, str]) -> list[str]:
    """Containers, networks and volumes labelled ``eos-chaos`` that a test started with ``env`` (its
    own state folder, ``iso_env``, which its in-process clusters use too): not the session cluster's,
    nor another eos-chaos run's up beside the suite."""
    folder = str(procs.same_folder(Path(env["EOS_CHAOS_STATE"])))

    def ours(labels: dict[str, str] | None) -> bool:
        return (labels or {}).get(LABEL_STATE) == folder

    out = [f"container {c.name}" for c in client.containers.list(all=True, filters={"label": LABEL}) if ours(c.labels)]
    out += [f"network {n.name}" for n in client.networks.list(filters={"label": LABEL}) if ours(n.attrs.get("Labels"))]
    out += [f"volume {v.name}" for v in client.volumes.list(filters={"label": LABEL}) if ours(v.attrs.get("Labels"))]
    return out


def test_no_engine_and_no_way_to_start_one(iso_env: dict[str, str], tmp_path: Path) -> None:
    # No `docker` and no `apt-get` on PATH: nothing answers and we cannot install or start dockerd.
    env = dict(iso_env, PATH=path_with(tmp_path, java=shutil.which("java")))
    env.pop("DOCKER_HOST", None)
    r = run(["cluster", "up", "--backend", "compose", "--port-base", str(ALT_PORT_BASE)], env)
    assert r.returncode == 2, r.stderr
    assert "no Docker engine answers" in r.stderr and "not a Debian machine where we are root" in r.stderr, r.stderr


def test_docker_host_that_does_not_answer_is_not_replaced_by_our_own_engine(iso_env: dict[str, str], tmp_path: Path) -> None:
    env = dict(iso_env, DOCKER_HOST=f"unix://{tmp_path}/no-engine.sock")
    r = run(["cluster", "up", "--backend", "compose", "--port-base", str(ALT_PORT_BASE)], env)
    assert r.returncode == 2, r.stderr
    assert f"DOCKER_HOST=unix://{tmp_path}/no-engine.sock" in r.stderr and "unset DOCKER_HOST" in r.stderr, r.stderr


@pytest.mark.parametrize("args, says", [
    (["--kafka-version", "3.9.1", "--transaction-version", "2"], "Kafka 3.9.1 cannot be formatted at transaction.version=2"),
    (["--transaction-version", "5"], "5 is not a transaction.version; allowed: 0, 1, 2"),
])
def test_a_transaction_version_the_release_does_not_take_starts_nothing(client: docker.DockerClient, iso_env: dict[str, str],
                                                                        args: list[str], says: str) -> None:
    r = run(["cluster", "up", "--backend", "compose", "--port-base", str(ALT_PORT_BASE), *args], dict(iso_env, COLUMNS="400"))
    assert r.returncode == 2 and says in r.stderr, r.stderr
    assert ours_left(client, iso_env) == []


def test_busy_port_names_the_address_and_starts_nothing(client: docker.DockerClient, iso_env: dict[str, str]) -> None:
    port = ALT_PORT_BASE + 10  # node 2's CLIENT proxy
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", port))
    blocker.listen()
    try:
        r = run(["cluster", "up", "--backend", "compose", "--port-base", str(ALT_PORT_BASE)], iso_env)
    finally:
        blocker.close()
    assert r.returncode == 2, r.stderr
    assert f"127.0.0.1:{port}" in r.stderr and "client proxy to node 2" in r.stderr and "--port-base" in r.stderr, r.stderr
    assert ours_left(client, iso_env) == []


def test_bad_broker_config_flag_is_a_usage_error(iso_env: dict[str, str]) -> None:
    r = run(["cluster", "up", "--backend", "compose", "--broker-config", "no-equals-sign"], iso_env)
    assert r.returncode == 2 and "--broker-config 'no-equals-sign'" in r.stderr and "KEY=VALUE" in r.stderr, r.stderr


def test_cluster_that_fails_to_start_shows_compose_ps_and_the_log_and_leaves_nothing(
        client: docker.DockerClient, iso_env: dict[str, str]) -> None:
    r = run(["cluster", "up", "--backend", "compose", "--port-base", str(ALT_PORT_BASE),
             "--broker-config", "authorizer.class.name=org.example.NoSuchAuthorizer"], iso_env)
    assert r.returncode == 2, r.stderr
    assert "`docker compose up`" in r.stderr and "docker compose ps:" in r.stderr, r.stderr
    assert "last log lines of" in r.stderr and "NoSuchAuthorizer" in r.stderr, r.stderr
    assert ours_left(client, iso_env) == []
    assert not (Path(iso_env["EOS_CHAOS_STATE"]) / "compose.json").exists()


def test_failing_image_build_names_the_step(client: docker.DockerClient, tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text("FROM scratch\nCOPY no-such-file /\n")
    tag = "eos-chaos/failing-build:test"
    with pytest.raises(EnvironmentProblem) as info:
        images._build(client, tmp_path, tag, "kafka image")
    assert info.value.exit_code == 2
    assert "image build step 'kafka image' failed" in str(info.value) and "no-such-file" in str(info.value)
    assert client.images.list(name="eos-chaos/failing-build") == []


def test_failing_debootstrap_names_the_step_and_keeps_no_rootfs(
        client: docker.DockerClient, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # A mirror that refuses connections (loopback, port 9) and a suite no image exists for.
    monkeypatch.setattr(images, "apt_source", lambda: ("http://127.0.0.1:9/debian", "eos-chaos-test"))
    monkeypatch.setenv("EOS_CHAOS_CACHE", str(tmp_path / "cache"))
    with pytest.raises(EnvironmentProblem) as info:
        images.base_image(client)
    assert "image build step 'debootstrap' failed" in str(info.value), str(info.value)
    assert list((tmp_path / "cache" / "images").glob("*")) == []
    assert not [t for i in client.images.list(name="eos-chaos/base") for t in i.tags if ":eos-chaos-test" in t]


def test_ctrl_c_during_start_takes_everything_down(client: docker.DockerClient, iso_env: dict[str, str]) -> None:
    proc = start(["cluster", "up", "--backend", "compose", "--port-base", str(ALT_PORT_BASE)], iso_env)
    try:
        wait_for_line(proc, "compose project", 300)
        wait_until(lambda: bool(ours_left(client, iso_env)), timeout=120, what="the cluster's first containers or networks")
        proc.send_signal(signal.SIGINT)
        rc = proc.wait(timeout=300)
    finally:
        proc.kill()
    assert rc == 130, proc.stderr.read() if proc.stderr else ""
    assert ours_left(client, iso_env) == []
    assert not (Path(iso_env["EOS_CHAOS_STATE"]) / "compose.json").exists()


def test_crashed_run_is_reclaimed_by_the_next_start(client: docker.DockerClient, iso_env: dict[str, str]) -> None:
    proc = start(["smoke", "--backend", "compose", "--duration", "60", "--port-base", str(ALT_PORT_BASE)], iso_env)
    try:
        wait_for_line(proc, "cluster healthy", 300)
    finally:
        proc.kill()  # SIGKILL: no cleanup runs, like a crashed harness
        proc.wait(timeout=30)
    leftovers = [c.name for c in client.containers.list(filters={"label": f"{LABEL_OWNER}={proc.pid}"})]
    assert len(leftovers) == 5, leftovers  # 3 brokers, toxiproxy and the wire proxy survive the crash

    up = run(["cluster", "up", "--backend", "compose", "--port-base", str(ALT_PORT_BASE)], iso_env)
    assert up.returncode == 0, up.stderr
    assert "reclaiming leftovers of a crashed run" in up.stderr, up.stderr
    assert client.containers.list(all=True, filters={"label": f"{LABEL_OWNER}={proc.pid}"}) == []
    status = run(["cluster", "status", "--backend", "compose", "--json"], iso_env)
    assert status.returncode == 0 and '"backend": "compose"' in status.stdout, status.stdout
    down = run(["cluster", "down", "--backend", "compose"], iso_env)
    assert down.returncode == 0, down.stderr
    assert ours_left(client, iso_env) == []


def test_stop_is_idempotent_and_removes_the_record(arts: artifacts.Artifacts, client: docker.DockerClient,
                                                   iso_env: dict[str, str]) -> None:
    cluster = ComposeCluster(arts, new_run_dir("pytest-compose-twice"), ALT_PLAN)
    cluster.start()
    try:
        assert state.load("compose") is not None
        assert client.containers.list(filters={"label": f"{LABEL_CLUSTER}={cluster.cluster_id}"})
    finally:
        cluster.stop()
    cluster.stop()
    assert state.load("compose") is None
    assert ours_left(client, iso_env) == []
    logs = sorted(p.relative_to(cluster.run_dir).as_posix() for p in cluster.run_dir.rglob("*.log"))
    assert logs == ["nodes/n1/server.log", "nodes/n2/server.log", "nodes/n3/server.log", "toxiproxy.log", "wire.log"], logs
    with pytest.raises(ClusterError):
        cluster.container(1)

