"""The external backend's check before any fault, against a real cluster's Metadata (the session
cluster, read only: its brokers' status commands just say up): an inventory that matches what the
brokers advertise passes; a listener the cluster advertises elsewhere, and a broker the inventory
leaves out, are exit 2 naming the node and its line. Nothing on any node changes."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusters.backends.external import inventory, lifecycle, probe, transport
from clusters.backends.protocol import Cluster
from harness.base.errors import EnvironmentProblem

pytestmark = pytest.mark.chaos


def _inventory(tmp_path: Path, listeners: dict[int, str]) -> inventory.Inventory:
    lines = ["name: session-cluster", "disposable: false", "defaults:", "  control: {local: {}}",
             "  broker: {commands: {status: \"echo up\"}}", "nodes:"]
    lines += [f"  - {{id: {n}, host: 127.0.0.1, listeners: {{client: \"{a}\"}}}}" for n, a in listeners.items()]
    f = tmp_path / "inventory.yaml"
    f.write_text("\n".join(lines) + "\n")
    return inventory.load(f)


def _brokers(inv: inventory.Inventory) -> dict[int, lifecycle.Broker]:
    return {n.id: lifecycle.Broker(n, transport.local(n.where), transport.control_for(n)) for n in inv.resolved()}


def test_the_probe_reads_what_a_real_cluster_advertises(tmp_path: Path, cluster: Cluster) -> None:
    direct = {n: cluster.direct_address(n) for n in cluster.topology.node_ids}
    inv = _inventory(tmp_path, direct)
    seen = probe.preflight(inv, _brokers(inv))
    assert seen.brokers == direct and seen.cluster_id

    last = max(direct)
    proxied = {**direct, last: cluster.bootstrap.split(",")[-1]}  # its CLIENT listener advertises the proxy
    inv = _inventory(tmp_path, proxied)
    with pytest.raises(EnvironmentProblem) as exc:
        probe.preflight(inv, _brokers(inv))
    said = f"node {last}: the inventory says {proxied[last]}, the cluster advertises {direct[last]} on that listener"
    assert said in str(exc.value), str(exc.value)

    fewer = {n: a for n, a in direct.items() if n != last}
    inv = _inventory(tmp_path, fewer)
    with pytest.raises(EnvironmentProblem, match=f"node {last} is in the cluster's Metadata \\({direct[last]}\\) but "
                                                 "not in the inventory"):
        probe.preflight(inv, _brokers(inv))
