"""Faults on links between brokers that an external cluster's nodes cannot carry are refused before
the run, each naming the fault, the node, why and the inventory line; their twins that can run are
not refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chaos import faults
from chaos.broker_links import broker_link_refusals
from clusters.backends.external import inventory

INVENTORY = """\
name: refusals
disposable: true
defaults:
  control: {docker: {container: "kafka-{id}"}}
  broker: {docker: container}
  net: {allowed: true, netns: container}
nodes:
  - {id: 1, host: k1, listeners: {client: "k1:9092", internal: "k1:9093", controller: "k1:9094"}}
  - id: 2
    host: k2
    listeners: {client: "k2:9092", internal: "k2:9093", controller: "k2:9094"}
    net: {allowed: false, why_not: "production VM, no root"}
  - {id: 3, host: k3, listeners: {client: "k3:9092", internal: "k3:9093"}}
"""


@pytest.fixture
def inv(tmp_path: Path) -> inventory.Inventory:
    f = tmp_path / "inv.yaml"
    f.write_text(INVENTORY)
    return inventory.load(f)


def _refusals(inv: inventory.Inventory, *fs: dict[str, Any]) -> list[str]:
    return broker_link_refusals([faults.parse({"at": 12, "duration": 5, **f}) for f in fs], inv)


def test_a_node_without_net_refuses_its_links_naming_fault_node_why_and_line(inv: inventory.Inventory) -> None:
    got = _refusals(inv, {"kind": "kill", "target": 2},
                    {"kind": "partition", "target": 2, "partition": "majority-minority", "listeners": "internal"})
    assert got == [f"faults[1] (partition at 12s, listeners internal): node 2 cannot fault its links to other brokers: "
                   f"its inventory entry says net.allowed false (production VM, no root) ({inv.path}:9)"]


def test_the_same_faults_on_links_the_nodes_can_carry_are_not_refused(inv: inventory.Inventory) -> None:
    assert _refusals(inv, {"kind": "partition", "target": 2, "listeners": "client"},
                     {"kind": "partition", "target": 1, "partition": "directed", "peer": 2, "listeners": "internal"},
                     {"kind": "latency", "target": 1, "partition": "directed", "peer": 3, "listeners": "internal",
                      "params": {"latency_ms": 100}},
                     {"kind": "reset-peer", "target": 3, "partition": "directed", "peer": 1, "listeners": "all"}) == []


def test_a_role_target_needs_every_node_it_may_resolve_to(inv: inventory.Inventory) -> None:
    got = _refusals(inv, {"kind": "partition", "target": "leader", "of": "t/0", "partition": "directed",
                          "peer": 1, "listeners": "internal"})
    assert len(got) == 1 and got[0].startswith("faults[0] (partition at 12s, listeners internal): node 2 cannot")


def test_a_toxic_with_no_node_form_is_refused_on_links_between_brokers_only(inv: inventory.Inventory) -> None:
    got = _refusals(inv, {"kind": "slicer", "target": 1, "partition": "directed", "peer": 3, "listeners": "internal"},
                    {"kind": "drop-responses", "target": 1, "listeners": "client"})
    assert got == [f"faults[0] (slicer at 12s, listeners internal): node 1 cannot carry it on a link between brokers: "
                   f"slicer cuts the byte stream into small delayed chunks inside a proxy; tc and iptables on a node "
                   f"have no such form (it runs on the clients' links: listeners client) ({inv.path}:8)"]


def test_a_link_to_a_listener_the_inventory_does_not_name_is_refused(inv: inventory.Inventory) -> None:
    got = _refusals(inv, {"kind": "partition", "target": 1, "partition": "directed", "peer": 3, "listeners": "controller"})
    assert got == [f"faults[0] (partition at 12s, listeners controller): node 1 cannot fault n1-to-n3-controller: "
                   f"node 3 has no listeners.controller and node 1's net.peers names none ({inv.path}:8)"]
