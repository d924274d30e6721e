"""The ``compose`` backend: the cluster of ``plan.py`` as containers, driven by Compose v2 (up/down)
and the Docker SDK (kill, stop, pause, restart, logs)."""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import os
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import docker
from confluent_kafka.admin import AdminClient
from docker.errors import APIError, NotFound
from docker.models.containers import Container

from clusters.backends import procs, reclaim, state
from clusters.backends.artifacts import Artifacts
from clusters.backends.built_cluster import STARTED_MESSAGE, BuiltCluster, recorded_artifacts
from clusters.backends.compose.cli import find_compose
from clusters.backends.compose.engine import ensure_engine
from clusters.backends.compose.images import Images, ensure_images
from clusters.backends.compose.plan import (
    LABEL,
    LABEL_CLUSTER,
    LABEL_OWNER,
    LABEL_STATE,
    WIRE_SERVICE,
    ComposePlan,
    compose_yaml,
    toxiproxy_json,
)
from clusters.backends.protocol import NODE_START_TIMEOUT_S, ClusterStatus, NodeState, NodeStatus
from clusters.backends.reclaim import Leftover, Reclaimed
from clusters.kafka import feature_levels, health
from clusters.toxiproxy.toxiproxy_api import ProxySpec, Toxiproxy
from clusters.wire.wire_api import WireProxy
from harness.base.errors import ClusterError, EnvironmentProblem
from harness.base.paths import state_dir
from harness.base.wait import Moving, wait_until
from harness.rundir.runfolder import RunFolder

log = logging.getLogger(__name__)

BACKEND = "compose"
#: `compose up --wait`: image start + KRaft quorum + healthchecks, on a busy 2-core machine.
UP_TIMEOUT_S = 240
#: Toxiproxy starts in a second; generous for a loaded machine.
TOXIPROXY_RESTART_TIMEOUT_S = 60.0
#: How long a pause is tried again while runc cannot freeze the container, and how often
PAUSE_TIMEOUT_S, PAUSE_RETRY_S = 60.0, 1.0


class ComposeCluster(BuiltCluster):
    """A 3-node KRaft cluster as containers; a context manager that always cleans up."""

    backend = BACKEND

    def __init__(
        self,
        artifacts: Artifacts,
        run_dir: Path,
        plan: ComposePlan | None = None,
        overrides: Mapping[str, str] | None = None,
        detached: bool = False,
        transaction_version: int | None = None,
    ) -> None:
        super().__init__(artifacts, run_dir, detached, transaction_version)
        self.plan = plan or ComposePlan()
        if overrides:
            self.plan = dataclasses.replace(self.plan, overrides=tuple(sorted(overrides.items())))
        self.topology = self.plan.topology
        # The run id makes the project name unique, so two runs never share containers or networks.
        self.project = "eos-chaos-" + run_dir.name.lower().replace(".", "-")
        self.images: Images | None = None
        self._compose_cmd: list[str] = []
        self._docker: docker.DockerClient | None = None
        self._tox = Toxiproxy(self.plan.toxiproxy_url)
        self._wire = WireProxy(self.plan.wire_url)
        self._admin: AdminClient | None = None

    @classmethod
    def attach(cls, rec: state.ClusterRecord) -> ComposeCluster:
        """A handle on a cluster another process started (for ``cluster down`` / ``status``)."""
        plan = ComposePlan.at(rec.port_base)
        c = cls(recorded_artifacts(rec), Path(rec.run_dir), plan, rec.overrides, detached=rec.owner_pid is None,
                transaction_version=rec.transaction_version)
        c.cluster_id, c.project = rec.cluster_id, rec.project
        c.images = Images(rec.images["kafka"], rec.images["toxiproxy"], rec.images["source"]) if rec.images else None
        c._compose_cmd = find_compose()
        c._attached_owner = rec.owner_pid or 0
        c._started = True
        return c

    def _record(self) -> state.ClusterRecord:
        return state.ClusterRecord(
            backend=BACKEND, cluster_id=self.cluster_id, run_dir=str(self.run_dir), kafka_version=self.artifacts.kafka_version,
            net=self.topology.net, port_base=self.plan.port_base, api_port=self.plan.api_port,
            owner_pid=self._owner or None, kafka_libs=str(self.artifacts.kafka_libs),
            toxiproxy_bin=str(self.artifacts.toxiproxy_bin), java=str(self.artifacts.java),
            overrides=dict(self.plan.overrides), project=self.project,
            images=dict(self.images.__dict__) if self.images else {}, transaction_version=self.transaction_version,
        )

    # ------------------------------------------------------------------ compose plumbing
    @property
    def docker(self) -> docker.DockerClient:
        if self._docker is None:
            self._docker = docker.from_env(timeout=120)
        return self._docker

    def _env(self) -> dict[str, str]:
        assert self.images is not None
        return dict(os.environ, EOS_CLUSTER_ID=self.cluster_id, EOS_KAFKA_IMAGE=self.images.kafka,
                    EOS_TOXIPROXY_IMAGE=self.images.toxiproxy, EOS_PROJECT=self.project,
                    EOS_CHAOS_OWNER=str(self._owner), **{procs.ENV_STATE: str(procs.same_folder(state_dir()))},
                    EOS_FORMAT_FEATURES=" ".join(feature_levels.format_args(self.transaction_version)[1::2]))

    def _compose(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        cmd = [*self._compose_cmd, "-p", self.project, "-f", str(self.run_dir / "docker-compose.yml"), *args]
        return subprocess.run(cmd, env=self._env(), capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)

    def container(self, node: int | str) -> Container:
        service = node if isinstance(node, str) else self.plan.service(node)
        found = self.docker.containers.list(all=True, ignore_removed=True, filters={
            "label": [f"com.docker.compose.project={self.project}", f"com.docker.compose.service={service}"]})
        if not found:
            raise ClusterError(f"no container for {service} in project {self.project}")
        return found[0]

    # ------------------------------------------------------------------ start / stop
    def start(self) -> None:
        """Engine, Compose, images; reclaim a crashed run's leftovers; check ports; ``compose up
        --wait``; populate the proxies; wait healthy. Any failure (or Ctrl-C) takes it all down."""
        with self._lock:
            if self._started:
                return
            ensure_engine()
            self._compose_cmd = find_compose()
            # The official image formats its storage without feature flags; the local stand-in takes
            # them (EOS_FORMAT_FEATURES, images/kafka/run), so a level asked for needs the stand-in.
            self.images = ensure_images(self.artifacts, prefer_local=self.transaction_version is not None)
            self._reclaim_leftovers()
            procs.check_free(self.plan.host_binds())
            check_subnets_free(self.docker, self.plan)
            self._started = True
            self._owned(True)
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            (self.run_dir / "docker-compose.yml").write_text(compose_yaml(self.plan))
            (self.run_dir / "toxiproxy.json").write_text(toxiproxy_json(self.plan))
            (self.run_dir / "wire").mkdir(exist_ok=True)  # the wire proxy's event log, bind-mounted
            state.save(self._record())
            log.info(f"compose project {self.project}: up (images {self.images.source})")
            up = self._compose("up", "-d", "--wait", "--wait-timeout", str(UP_TIMEOUT_S), timeout=UP_TIMEOUT_S + 60)
            if up.returncode != 0:
                raise ClusterError(f"`docker compose up` of project {self.project} failed (exit {up.returncode}): "
                                   f"{_compose_errors(up.stderr)}\n{self._diagnosis()}")
            self._tox.populate(self.proxy_specs())
            self.wait_healthy()
            (self.run_dir / "cluster.json").write_text(json.dumps(self.status().to_json(), indent=2))
        except BaseException:
            self.stop()
            raise
        if self.detached:
            self._owned(False)  # ``cluster up``: the cluster outlives this process on purpose

    def _diagnosis(self) -> str:
        """`docker compose ps -a` and the last log lines of every container that is not running healthy."""
        ps = self._compose("ps", "-a").stdout
        tails = []
        for c in self._containers():
            health_state = c.attrs.get("State", {}).get("Health", {}).get("Status", "")
            if c.status != "running" or health_state == "unhealthy":
                tails.append(f"--- last log lines of {c.name} ({c.status}{', ' + health_state if health_state else ''}):\n{self._tail(c)}")
        return f"docker compose ps:\n{ps}" + "\n".join(tails)

    def _reclaim_leftovers(self) -> None:
        """Take down what a crashed run left behind; refuse to touch a cluster that is legitimately up."""
        rec = state.load(BACKEND)
        if rec is not None:
            running = self.docker.containers.list(filters={"label": f"{LABEL_CLUSTER}={rec.cluster_id}"})
            where = f"project {rec.project}, run folder {rec.run_dir}"
            self._reclaim_crashed_run(rec, bool(running), where, f"project {rec.project}",
                                      "eos-chaos cluster down --backend compose", f"({where})")
        reclaim_leftovers(self.docker)

    def _containers(self) -> list[Container]:
        # ignore_removed: a container compose removes between the SDK's list and its inspect of each
        # (a Ctrl-C during `up`, while compose still tears down) is gone, not an error
        return self.docker.containers.list(all=True, filters={"label": f"{LABEL_CLUSTER}={self.cluster_id}"},
                                           ignore_removed=True)

    @staticmethod
    def _tail(c: Container, lines: int = 30) -> str:
        try:
            return c.logs(tail=lines).decode("utf-8", "replace")
        except APIError as exc:
            return f"(no logs: {exc})"

    def stop(self) -> Reclaimed:
        """Keep each container's log in the run folder, then remove containers, networks, volumes,
        and the host processes of runs on it (workloads). Returns what there was. Idempotent; safe
        after a failed start."""
        with self._lock:
            self._owned(False)
            if not self._started:
                return Reclaimed()
            self._started = False
            gone = self.leftovers()
            self._tox.close()
            self._wire.close()
            self._admin = None
            for c in self._containers():
                self._keep_log(c)
            down = self._compose("down", "-v", "--remove-orphans", "-t", "5", timeout=180)
            # Whatever compose did not remove (a half-created project) goes by label.
            for c in self._containers():
                try:
                    c.remove(force=True, v=True)
                except NotFound:
                    pass  # removed meanwhile: what we wanted
            for n in self._networks():
                n.remove()
            # The workloads of runs on this cluster are host processes: they go with it.
            reclaim.kill_processes(self._host_processes(), f"its cluster (project {self.project}) is stopping")
            left, nets = self._containers(), self._networks()
            state.clear(BACKEND, self.cluster_id)
            if down.returncode != 0 and (left or nets):
                raise ClusterError(f"project {self.project} did not come down cleanly: {down.stderr.strip()[-400:]}; "
                                   f"containers {[c.name for c in left]}, networks {[n.name for n in nets]}")
            return gone

    def _host_processes(self) -> list[procs.Tagged]:
        return [t for t in procs.tagged_processes() if t.cluster_id == self.cluster_id]

    def leftovers(self) -> Reclaimed:
        """This cluster's containers, networks and volumes, and the host processes of runs on it."""
        found = Reclaimed([Leftover("container", c.name) for c in self._containers()]
                          + [Leftover("network", n.name) for n in self._networks()]
                          + [Leftover("volume", v.name) for v in self.docker.volumes.list(
                              filters={"label": f"{LABEL_CLUSTER}={self.cluster_id}"})])
        return found + reclaim.processes(self._host_processes())

    def _networks(self) -> list:  # type: ignore[type-arg]
        return self.docker.networks.list(filters={"label": f"{LABEL_CLUSTER}={self.cluster_id}"})

    def keep_logs(self) -> None:
        """Each container's log so far into the run folder (again in full: a later call, or the stop,
        writes it over with more)."""
        with self._lock:
            if self._started:
                for c in self._containers():
                    self._keep_log(c)

    def _keep_log(self, c: Container) -> None:
        service = c.labels.get("com.docker.compose.service", c.name)
        dest = (RunFolder(self.run_dir).nodes / service.replace("broker-", "n") / "server.log" if service.startswith("broker-")
                else self.run_dir / f"{service}.log")
        dest.parent.mkdir(parents=True, exist_ok=True)
        try:
            dest.write_bytes(c.logs())
        except APIError:
            pass

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
        pause_container(self.container(node), node)

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

        # past the timeout, on while the container's log still grows (a starved machine's broker loading)
        wait_until(started, timeout=NODE_START_TIMEOUT_S, what=f"node {node} to log '{STARTED_MESSAGE}'", fatal=exited,
                   moving=Moving(lambda: len(c.logs(since=since))))

    def node_pid(self, node: int) -> int | None:
        """The host pid of the node's JVM (the container's main process), None when it is down."""
        try:
            c = self.container(node)
            c.reload()
        except (NotFound, ClusterError):
            return None
        return c.attrs.get("State", {}).get("Pid") or None

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

    @property
    def toxiproxy(self) -> Toxiproxy:
        return self._tox

    def proxy_specs(self) -> list[ProxySpec]:
        return [ProxySpec(link.name, *self.plan.proxy(link)) for link in self.topology.links]

    def restart_toxiproxy(self) -> None:
        c = self.container("toxiproxy")
        c.reload()
        if c.status == "paused":
            c.unpause()  # docker refuses to restart a paused container
        c.restart(timeout=5)  # its config file brings back every proxy, enabled and without toxics
        wait_until(self._tox.ping, timeout=TOXIPROXY_RESTART_TIMEOUT_S, what=f"the Toxiproxy API at {self.plan.toxiproxy_url}",
                   state=lambda: f"container {c.name} {c.status}")
        self._tox.populate(self.proxy_specs())

    @property
    def wire(self) -> WireProxy:
        return self._wire

    @property
    def wire_events(self) -> Path:
        return self.run_dir / "wire" / "wire-events.jsonl"

    def restart_wire(self) -> None:
        c = self.container(WIRE_SERVICE)
        c.reload()
        if c.status == "paused":
            c.unpause()
        c.restart(timeout=5)  # it starts without rules
        wait_until(self._wire.ping, timeout=TOXIPROXY_RESTART_TIMEOUT_S, what=f"the wire proxy's API at {self.plan.wire_url}",
                   state=lambda: f"container {c.name} {c.status}")

    @property
    def bootstrap(self) -> str:
        return self.plan.bootstrap

    @property
    def direct_bootstrap(self) -> str:
        return self.plan.direct_bootstrap

    def direct_address(self, node: int) -> str:
        return self.plan.direct_address(node)

    def status(self) -> ClusterStatus:
        nodes = [NodeStatus(n, self.node_state(n), self.node_pid(n)) for n in self.topology.node_ids]
        return ClusterStatus(
            backend=BACKEND, kafka_version=self.artifacts.kafka_version, bootstrap=self.bootstrap,
            direct_bootstrap=self.direct_bootstrap, toxiproxy=self.plan.toxiproxy_url, nodes=nodes,
            run_dir=str(self.run_dir), cluster_id=self.cluster_id, active_controller=self.active_controller(),
            extra={"project": self.project, "images": self.images.__dict__ if self.images else None,
                   "wire": self.plan.wire_url},
        )


#: Compose's per-container progress lines; what is left of its stderr is the reason it failed.
_PROGRESS = ("Creating", "Created", "Starting", "Started", "Waiting", "Healthy", "Running", "Network ", "Volume ")


def _compose_errors(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    reasons = [ln for ln in lines if not (ln.startswith(("Container ", "Network ", "Volume ")) and ln.endswith(_PROGRESS))
               and not ln.startswith(_PROGRESS)]
    return "\n".join((reasons or lines)[-10:])


def _claimed_elsewhere(labels: Mapping[str, str], claimed: set[str]) -> bool:
    """Belongs to a recorded cluster, to a run whose owner process is still alive, or to another
    state folder's eos-chaos (``LABEL_STATE``: its own start or ``cluster down`` takes it)."""
    owner = labels.get(LABEL_OWNER, "0")
    folder = labels.get(LABEL_STATE)
    return (labels.get(LABEL_CLUSTER) in claimed or (owner.isdigit() and owner != "0" and procs.alive(int(owner)))
            or not state.of_family(Path(folder) if folder else None))


def _dead_runs_resources(client: docker.DockerClient) -> list[tuple[Leftover, Callable[[], None]]]:
    """Containers, networks and volumes labelled ``eos-chaos`` whose run is over (the owner process
    died, or it was detached and no record claims it), each with how to remove it."""
    claimed = state.claimed(BACKEND)  # every xdist worker's record too
    found: list[tuple[Leftover, Callable[[], None]]] = []
    for c in client.containers.list(all=True, filters={"label": LABEL}, ignore_removed=True):
        if not _claimed_elsewhere(c.labels, claimed):
            found.append((Leftover("container", c.name), functools.partial(c.remove, force=True, v=True)))
    for n in client.networks.list(filters={"label": LABEL}):
        if not _claimed_elsewhere(n.attrs.get("Labels") or {}, claimed):
            found.append((Leftover("network", n.name), n.remove))
    for v in client.volumes.list(filters={"label": LABEL}):
        if not _claimed_elsewhere(v.attrs.get("Labels") or {}, claimed):
            found.append((Leftover("volume", v.name), functools.partial(v.remove, force=True)))
    return found


def dead_runs_leftovers(client: docker.DockerClient) -> Reclaimed:
    """What ``reclaim_leftovers`` would remove now (nothing is touched)."""
    return Reclaimed([item for item, _ in _dead_runs_resources(client)]) + reclaim.processes(
        reclaim.dead_runs_processes(BACKEND))


def reclaim_leftovers(client: docker.DockerClient) -> Reclaimed:
    """Remove what runs that are over left: containers, networks, volumes, and their host processes
    (workloads). Runs still going are left alone. Returns what was removed."""
    gone = Reclaimed()
    for item, remove in _dead_runs_resources(client):
        log.info(f"reclaiming leftover {item}")
        remove()
        gone.add(item)
    return gone + reclaim.kill_processes(reclaim.dead_runs_processes(BACKEND), "its run is over")


def check_subnets_free(client: docker.DockerClient, plan: ComposePlan) -> None:
    """The private bridge subnets must not be taken (by another run at the same port base, or by
    anyone's network): Docker would refuse them halfway through ``compose up``."""
    ours = set(plan.subnets())
    for net in client.networks.list():
        taken = {c.get("Subnet") for c in (net.attrs.get("IPAM") or {}).get("Config") or []} & ours
        if taken:
            owner = (net.attrs.get("Labels") or {}).get(LABEL_OWNER)
            whose = f"an eos-chaos run (owner process {owner})" if owner else "not eos-chaos"
            raise EnvironmentProblem(
                f"subnet {sorted(taken)[0]} is already used by Docker network {net.name} ({whose}). One cluster per "
                f"port base: wait for that run, take it down (eos-chaos cluster down --backend compose), or pick "
                f"another --port-base (each 100 moves the subnets; now {plan.port_base}).")


def pause_container(c: Container, node: int) -> None:
    """Pause (freeze) node ``node``'s container. runc gives up freezing a container whose tasks do not
    stop within its own short wait ("unable to freeze"), which a starved machine makes likely (a
    suite run at load 45, session 48); it thaws what it froze, so the pause is tried again, for
    ``PAUSE_TIMEOUT_S``. Any other refusal is raised at once."""
    deadline = time.monotonic() + PAUSE_TIMEOUT_S
    while True:
        try:
            c.pause()
            return
        except APIError as exc:
            if "unable to freeze" not in str(exc):
                raise
            if time.monotonic() >= deadline:
                raise ClusterError(f"node {node}'s container did not pause within {PAUSE_TIMEOUT_S:g}s: runc could "
                                   f"not freeze it, the last time: {exc.explanation or exc}") from exc
            log.info(f"node {node}: runc could not freeze its container; trying again")
        time.sleep(PAUSE_RETRY_S)  # the retry's interval: runc's own wait is what failed, nothing to wait on
