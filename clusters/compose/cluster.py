"""The ``compose`` backend: the cluster of ``plan.py`` as containers, driven by Compose v2 (up/down)
and the Docker SDK (kill, stop, pause, restart, logs)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Callable

import docker
from confluent_kafka.admin import AdminClient
from docker.errors import APIError, NotFound
from docker.models.containers import Container

from chaos.toxiproxy import ProxySpec, Toxiproxy
from clusters import health, procs
from clusters.artifacts import Artifacts
from clusters.base import HEALTHY_TIMEOUT_S, NODE_START_TIMEOUT_S, ClusterStatus, NodeState, NodeStatus
from clusters.compose.cli import find_compose
from clusters.compose.engine import ensure_engine
from clusters.compose.images import Images, ensure_images
from clusters.compose.plan import LABEL, ComposePlan, compose_yaml, toxiproxy_json
from clusters.local import STARTED_MESSAGE, new_cluster_id
from harness.errors import ClusterError
from harness.wait import wait_until

BACKEND = "compose"
#: `compose up --wait`: image start + KRaft quorum + healthchecks, on a busy 2-core machine.
UP_TIMEOUT_S = 240
Log = Callable[[str], None]


class ComposeCluster:
    """A 3-node KRaft cluster as containers; a context manager that always cleans up."""

    backend = BACKEND

    def __init__(self, artifacts: Artifacts, run_dir: Path, plan: ComposePlan | None = None, log: Log = lambda m: None) -> None:
        self.artifacts = artifacts
        self.run_dir = run_dir
        self.plan = plan or ComposePlan()
        self.topology = self.plan.topology
        self.log = log
        self.cluster_id = new_cluster_id()
        # The run id makes the project name unique, so two runs never share containers or networks.
        self.project = "eos-chaos-" + run_dir.name.lower().replace(".", "-")
        self.images: Images | None = None
        self._compose_cmd: list[str] = []
        self._docker: docker.DockerClient | None = None
        self._tox = Toxiproxy(self.plan.toxiproxy_url)
        self._admin: AdminClient | None = None
        self._started = False

    def __enter__(self) -> "ComposeCluster":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ compose plumbing
    @property
    def docker(self) -> docker.DockerClient:
        if self._docker is None:
            self._docker = docker.from_env(timeout=120)
        return self._docker

    def _env(self) -> dict[str, str]:
        assert self.images is not None
        return dict(os.environ, EOS_CLUSTER_ID=self.cluster_id, EOS_KAFKA_IMAGE=self.images.kafka,
                    EOS_TOXIPROXY_IMAGE=self.images.toxiproxy, EOS_PROJECT=self.project)

    def _compose(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        cmd = [*self._compose_cmd, "-p", self.project, "-f", str(self.run_dir / "docker-compose.yml"), *args]
        return subprocess.run(cmd, env=self._env(), capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)

    def container(self, node: int | str) -> Container:
        service = node if isinstance(node, str) else self.plan.service(node)
        found = self.docker.containers.list(all=True, filters={
            "label": [f"com.docker.compose.project={self.project}", f"com.docker.compose.service={service}"]})
        if not found:
            raise ClusterError(f"no container for {service} in project {self.project}")
        return found[0]

    # ------------------------------------------------------------------ start / stop
    def start(self) -> None:
        ensure_engine(self.log)
        self._compose_cmd = find_compose(self.log)
        self.images = ensure_images(self.artifacts, self.log)
        reclaim_leftovers(self.docker, self.log)
        procs.check_free(self.plan.host_binds())
        self._started = True
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            (self.run_dir / "docker-compose.yml").write_text(compose_yaml(self.plan))
            (self.run_dir / "toxiproxy.json").write_text(toxiproxy_json(self.plan))
            up = self._compose("up", "-d", "--wait", "--wait-timeout", str(UP_TIMEOUT_S), timeout=UP_TIMEOUT_S + 60)
            if up.returncode != 0:
                ps = self._compose("ps", "-a").stdout
                tails = "\n".join(f"--- {c.name} ({c.status}):\n{self._tail(c)}" for c in self._containers()
                                  if c.status != "running" or "unhealthy" in str(c.attrs.get("State", {}).get("Health", {})))
                raise ClusterError(f"`docker compose up` failed (exit {up.returncode}): {up.stderr.strip()[-600:]}\n"
                                   f"docker compose ps:\n{ps}\n{tails}")
            self._tox.populate(ProxySpec(link.name, *self.plan.proxy(link)) for link in self.topology.links)
            self.wait_healthy()
        except BaseException:
            self.stop()
            raise

    def _containers(self) -> list[Container]:
        return self.docker.containers.list(all=True, filters={"label": f"com.docker.compose.project={self.project}"})

    @staticmethod
    def _tail(c: Container, lines: int = 30) -> str:
        try:
            return c.logs(tail=lines).decode("utf-8", "replace")
        except APIError as exc:
            return f"(no logs: {exc})"

    def stop(self) -> None:
        """Keep each container's log in the run folder, then remove containers, networks, volumes."""
        if not self._started:
            return
        self._started = False
        for c in self._containers():
            service = c.labels.get("com.docker.compose.service", c.name)
            dest = self.run_dir / "nodes" / service.replace("broker-", "n") / "server.log" if service.startswith("broker-") \
                else self.run_dir / f"{service}.log"
            dest.parent.mkdir(parents=True, exist_ok=True)
            try:
                dest.write_bytes(c.logs())
            except APIError:
                pass
        down = self._compose("down", "-v", "--remove-orphans", "-t", "5", timeout=180)
        left = self._containers()
        nets = self.docker.networks.list(filters={"label": f"com.docker.compose.project={self.project}"})
        if down.returncode != 0 or left or nets:
            raise ClusterError(f"project {self.project} did not come down cleanly: {down.stderr.strip()[-400:]}; "
                               f"containers {[c.name for c in left]}, networks {[n.name for n in nets]}")

    # ------------------------------------------------------------------ process faults
    def node_state(self, node: int) -> NodeState:
        try:
            c = self.container(node)
            c.reload()
        except (NotFound, ClusterError):
            return NodeState.DOWN
        if c.status == "paused":
            return NodeState.PAUSED
        return NodeState.UP if c.status == "running" else NodeState.DOWN

    def kill(self, node: int) -> None:
        if self.node_state(node) is not NodeState.DOWN:
            self.container(node).kill("SIGKILL")
        wait_until(lambda: self.node_state(node) is NodeState.DOWN, timeout=30, what=f"node {node}'s container to stop")

    def stop_node(self, node: int) -> None:
        if self.node_state(node) is NodeState.PAUSED:
            self.resume(node)
        self.container(node).stop(timeout=60)

    def pause(self, node: int) -> None:
        self.container(node).pause()

    def resume(self, node: int) -> None:
        self.container(node).unpause()

    def restart(self, node: int) -> None:
        if self.node_state(node) is not NodeState.DOWN:
            self.stop_node(node)
        since = int(time.time()) - 1
        c = self.container(node)
        c.start()

        def started() -> bool:
            return STARTED_MESSAGE in c.logs(since=since).decode("utf-8", "replace")

        def exited() -> str | None:
            c.reload()
            return None if c.status == "running" else f"node {node} container {c.status}; last log lines:\n{self._tail(c)}"

        wait_until(started, timeout=NODE_START_TIMEOUT_S, what=f"node {node} to log '{STARTED_MESSAGE}'", fatal=exited)

    # ------------------------------------------------------------------ health and status
    def quorum_views(self) -> list[health.QuorumView]:
        views = []
        for n in self.topology.node_ids:
            if self.node_state(n) is not NodeState.UP:
                continue
            res = self.container(n).exec_run(["cat", "/var/lib/kafka/data/__cluster_metadata-0/quorum-state"])
            view = health.parse_quorum_state(n, res.output.decode("utf-8", "replace")) if res.exit_code == 0 else None
            if view is not None:
                views.append(view)
        return views

    def active_controller(self) -> int | None:
        return health.raft_leader(self.quorum_views(), len(self.topology.node_ids))

    def health(self) -> health.Health:
        if self._admin is None:
            self._admin = health.admin_client(self.direct_bootstrap)
        return health.probe(self._admin, list(self.topology.node_ids), self.quorum_views())

    def wait_healthy(self, timeout: float = HEALTHY_TIMEOUT_S) -> None:
        health.wait_healthy(self, timeout)

    @property
    def toxiproxy(self) -> Toxiproxy:
        return self._tox

    @property
    def bootstrap(self) -> str:
        return self.plan.bootstrap

    @property
    def direct_bootstrap(self) -> str:
        return self.plan.direct_bootstrap

    def status(self) -> ClusterStatus:
        nodes = [NodeStatus(n, self.node_state(n), None) for n in self.topology.node_ids]
        return ClusterStatus(
            backend=BACKEND, kafka_version=self.artifacts.kafka_version, bootstrap=self.bootstrap,
            direct_bootstrap=self.direct_bootstrap, toxiproxy=self.plan.toxiproxy_url, nodes=nodes,
            run_dir=str(self.run_dir), cluster_id=self.cluster_id, active_controller=self.active_controller(),
            extra={"project": self.project, "images": self.images.__dict__ if self.images else None},
        )


def reclaim_leftovers(client: docker.DockerClient, log: Log) -> None:
    """Remove every container, network and volume labelled ``eos-chaos`` (one cluster at a time)."""
    for c in client.containers.list(all=True, filters={"label": LABEL}):
        log(f"reclaiming leftover container {c.name}")
        c.remove(force=True, v=True)
    for n in client.networks.list(filters={"label": LABEL}):
        log(f"reclaiming leftover network {n.name}")
        n.remove()
    for v in client.volumes.list(filters={"label": LABEL}):
        v.remove(force=True)
