"""A local cluster's files: each node's folder in the run folder, the configs rendered into it, the
java command line its JVMs run, and its storage formatted with the cluster id.

Layout of a node's folder (``nodes/n<id>/`` of the run folder)::

    server.properties, hosts, log4j2.properties   rendered before the node starts
    format.log                                     the storage tool's output
    server.log, stdout.log                         the broker's
    data/                                          its log dirs; removed at stop
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

from clusters.backends import procs
from clusters.backends.artifacts import Artifacts
from clusters.kafka import feature_levels, render
from clusters.kafka.topology import Topology
from harness.base.errors import ClusterError, WaitTimeout
from harness.rundir.runfolder import RunFolder

#: StorageTool is one short JVM per node.
FORMAT_TIMEOUT_S = 120.0


class NodeLayout:
    """Where each node's configs, logs and data live in the run folder, and how they are made."""

    def __init__(self, artifacts: Artifacts, run_dir: Path, topology: Topology, overrides: Mapping[str, str]) -> None:
        self.artifacts = artifacts
        self.run_dir = run_dir
        self.topology = topology
        self.overrides = overrides

    def node_dir(self, node: int) -> Path:
        return RunFolder(self.run_dir).nodes / f"n{node}"

    def data_dir(self, node: int) -> Path:
        return self.node_dir(node) / "data"

    def server_log(self, node: int) -> Path:
        return self.node_dir(node) / "server.log"

    def server_properties(self, node: int) -> Path:
        return self.node_dir(node) / "server.properties"

    def render(self, n: int) -> None:
        """Node ``n``'s folder with its server.properties, hosts file and log4j2 configuration."""
        d = self.node_dir(n)
        d.mkdir(parents=True, exist_ok=True)
        props = render.server_properties(self.topology, n, self.data_dir(n), self.overrides)
        (d / "server.properties").write_text(render.format_properties(props))
        (d / "hosts").write_text(render.hosts_file(self.topology, n))
        (d / "log4j2.properties").write_text(render.log4j2_properties(self.server_log(n)))

    def java(self, *args: str, heap: str | None = None) -> list[str]:
        """A JVM on Kafka's jars running ``args``: the brokers' JVM options, or a small ``heap`` for a tool."""
        libs = str(self.artifacts.kafka_libs / "*")
        opts = list(render.JVM_OPTS) if heap is None else [f"-Xmx{heap}", "-XX:TieredStopAtLevel=1"]
        return [str(self.artifacts.java), *opts, "-cp", libs, *args]

    def broker_command(self, n: int) -> list[str]:
        """The command line of node ``n``'s broker (its server.properties names it among our processes)."""
        d = self.node_dir(n)
        return self.java(
            f"-Djdk.net.hosts.file={d / 'hosts'}",
            f"-Dlog4j2.configurationFile={d / 'log4j2.properties'}",
            f"-Dkafka.logs.dir={d}",
            "kafka.Kafka", str(self.server_properties(n)),
        )

    def format_storage(self, cluster_id: str, transaction_version: int | None,
                       env: Callable[[], dict[str, str]]) -> None:
        """Format every node's log dir with the cluster id (three short JVMs in parallel)."""
        running: dict[int, subprocess.Popen[bytes]] = {}
        for n in self.topology.node_ids:
            d = self.node_dir(n)
            cmd = self.java(
                f"-Dlog4j2.configurationFile={d / 'log4j2.properties'}",
                "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(d / "server.properties"),
                *feature_levels.format_args(transaction_version), heap="256m",
            )
            running[n] = procs.spawn(cmd, d / "format.log", cwd=d, env=env())
        for n, p in running.items():
            try:
                rc = p.wait(timeout=FORMAT_TIMEOUT_S)
            except subprocess.TimeoutExpired as exc:
                raise WaitTimeout(f"formatting node {n}'s storage did not finish in {FORMAT_TIMEOUT_S:.0f}s") from exc
            if rc != 0:
                raise ClusterError(
                    f"formatting node {n}'s storage failed (exit {rc}); last lines of "
                    f"{self.node_dir(n) / 'format.log'}:\n{procs.tail(self.node_dir(n) / 'format.log')}"
                )

    def drop_data(self) -> None:
        """Every node's data removed; configs and logs stay for the person reading the run."""
        for n in self.topology.node_ids:
            shutil.rmtree(self.data_dir(n), ignore_errors=True)
