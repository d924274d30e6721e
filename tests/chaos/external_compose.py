"""The compose backend's containers described as an external cluster, as a user would describe a
cluster of containers they run: nodes reached by ``docker exec``, each broker driven from the
control host (it is its container's PID 1: ``broker: {docker: container}``), tc/iptables allowed
inside each container's network namespace (``nsenter`` from the host), and ``net.peers`` saying how
broker A reaches broker B (compose routes A's inter-broker connections through Toxiproxy's address
on A's own network, ``plan.toxiproxy_ip(A)``, at B's port)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from clusters.backends.compose.compose_cluster import ComposeCluster
from clusters.kafka.topology import Listener


def container_pid(c: ComposeCluster, node: int) -> int:
    """The host pid of node ``node``'s container's init (its broker): what ``nsenter -t`` takes."""
    pid = c.node_pid(node)
    assert pid, f"node {node}'s container is not running"
    return pid


def in_netns(c: ComposeCluster, node: int, script: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """``script`` run by the host's sh inside node ``node``'s container's network namespace."""
    return subprocess.run(["nsenter", "-t", str(container_pid(c, node)), "-n", "sh", "-c", script], capture_output=True,
                          text=True, timeout=timeout, check=False)


def device_to(c: ComposeCluster, node: int, ip: str) -> str:
    """The device node ``node``'s container reaches ``ip`` through (its ``src<node>`` network's)."""
    out = in_netns(c, node, f"ip -o route get {ip}").stdout.split()
    return out[out.index("dev") + 1]


def compose_inventory(c: ComposeCluster, path: Path, name: str = "compose-as-external") -> Path:
    """The inventory of ``c``'s brokers, written to ``path``."""
    plan = c.plan
    lines = [f"name: {name}", "disposable: true", "defaults:", "  broker: {docker: container}",
             "  metadata_log_dir: /var/lib/kafka/data", "  kafka_home: /opt/kafka", "nodes:"]
    for a in c.topology.node_ids:
        proxy_ip = plan.toxiproxy_ip(a)
        peers = ", ".join(f"{b}: {{internal: \"{proxy_ip}:{plan.port(b, Listener.INTERNAL)}\", "
                          f"controller: \"{proxy_ip}:{plan.port(b, Listener.CONTROLLER)}\"}}"
                          for b in c.topology.node_ids if b != a)
        lines += [f"  - id: {a}", f"    host: {plan.service(a)}",
                  f"    listeners: {{client: \"{plan.direct_address(a)}\", "
                  f"internal: \"kafka-{a}:{plan.port(a, Listener.INTERNAL)}\", "
                  f"controller: \"kafka-{a}:{plan.port(a, Listener.CONTROLLER)}\"}}",
                  f"    control: {{docker: {{container: {c.container(a).name}}}}}",
                  f"    net: {{allowed: true, netns: container, device: {device_to(c, a, proxy_ip)}, peers: {{{peers}}}}}"]
    path.write_text("\n".join(lines) + "\n")
    return path
