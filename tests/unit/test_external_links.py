"""ExternalLinks on real parts, no Kafka: node 1's commands run inside a throwaway network namespace
(never the host's own), with real iptables and tc; the clients' links go to a real Toxiproxy server.
Every change on a node is in the heal journal before its command runs; heal takes it away; a fault
the node cannot carry is refused and leaves nothing; after a "killed" run, ``cluster heal``'s path
(journal replay, then a sweep that trusts no journal) leaves the node as it was."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chaos import toxics
from clusters.backends.external import inventory, node_heal
from clusters.backends.external.heal_journal import HealJournal, folder_for
from clusters.backends.external.lifecycle import Broker
from clusters.backends.external.links import ExternalLinks
from clusters.backends.external.transport import COMMAND_TIMEOUT_S, CommandTransport, Ran
from clusters.toxiproxy.toxiproxy_api import ProxySpec, Toxiproxy
from clusters.toxiproxy.toxiproxy_build import toxiproxy_bin
from harness.base.errors import FaultError
from tests.netns import connect, echo_listener, netns, sh, transport_in

PEER = ("127.0.0.2", 19093)
INVENTORY = """\
name: links-test
disposable: true
defaults:
  broker: {commands: {status: "echo up"}}
  control: {local: {}}
nodes:
  - id: 1
    host: 127.0.0.1
    listeners: {client: "127.0.0.1:1", internal: "127.0.0.1:19093"}
    net: {allowed: true, device: lo, peers: {2: {internal: "127.0.0.2:19093", controller: "127.0.0.2:19094"}}}
  - id: 2
    host: 127.0.0.2
    listeners: {client: "127.0.0.2:1", internal: "127.0.0.2:19093"}
    net: {allowed: false, why_not: "production VM, no root"}
"""


class Watching(CommandTransport):
    """A transport that records, for each command, the journal lines on disk when it was sent."""

    def __init__(self, inner: CommandTransport, journal: Path) -> None:
        super().__init__(inner.where, inner.prefix)
        self.journal, self.seen = journal, []  # type: ignore[var-annotated]

    def run(self, script: str, timeout: float = COMMAND_TIMEOUT_S, check: bool = True) -> Ran:
        lines = self.journal.read_text().splitlines() if self.journal.exists() else []
        self.seen.append((script, [json.loads(x) for x in lines]))
        return super().run(script, timeout, check)


@pytest.fixture
def ns() -> Iterator[str]:
    with netns() as name, echo_listener(name, *PEER):
        yield name


@pytest.fixture
def inv(tmp_path: Path) -> inventory.Inventory:
    f = tmp_path / "inventory.yaml"
    f.write_text(INVENTORY)
    return inventory.load(f)


def _brokers(inv: inventory.Inventory, ns: str, journal: Path) -> dict[int, Broker]:
    t = Watching(transport_in(ns), journal)
    return {n.id: Broker(n, t, t) for n in inv.resolved()}  # node 2's would run in the netns too: never the host's


def _links(inv: inventory.Inventory, ns: str, state: Path, client: Toxiproxy | None = None) -> ExternalLinks:
    j = HealJournal(folder_for(inv, state))
    j.lock()
    return ExternalLinks(_brokers(inv, ns, j.path), j, client, "t1")


def _ops(links: ExternalLinks) -> list[tuple[str, Any]]:
    return [(x.op, getattr(x, "what", None)) for x in links.journal.lines()]


def _root(ns: str) -> str:
    return sh(ns, "tc qdisc show dev lo root").stdout.split("\n")[0]


def test_a_cut_between_brokers_is_journaled_before_it_runs_and_its_heal_removes_it(
        ns: str, inv: inventory.Inventory, tmp_path: Path) -> None:
    links = _links(inv, ns, tmp_path / "state")
    links.set_enabled("n1-to-n2-internal", False)
    links.set_enabled("n1-to-n2-internal", False)  # cut again: no second chain
    t = links.brokers[1].on_node
    assert isinstance(t, Watching)
    script, before = t.seen[0]
    assert "iptables -w -N EOSC-t1-1" in script
    assert [(x["op"], x["what"], x["detail"]) for x in before] == [
        ("apply", "net-chain", {"link": "n1-to-n2-internal", "fault": "partition", "chain": "EOSC-t1-1"})]
    assert "iptables -w -X EOSC-t1-1" in before[0]["undo"][0]["run"]
    assert connect(ns, *PEER)[0] == "timeout"
    assert links.unhealed() == ["node 1 (local): left: iptables chain EOSC-t1-1 (n1-to-n2-internal )"]
    links.set_enabled("n1-to-n2-internal", True)
    assert _ops(links) == [("apply", "net-chain"), ("done", None), ("undone", None)]
    assert connect(ns, *PEER)[0] == "ok" and links.unhealed() == []


def test_bandwidth_on_both_streams_is_one_class_and_its_removal_restores_the_root(
        ns: str, inv: inventory.Inventory, tmp_path: Path) -> None:
    links = _links(inv, ns, tmp_path / "state")
    specs = toxics.specs("bandwidth", {"rate_kbps": 100}, "ab12")
    for s in specs:
        links.add_toxic("n1-to-n2-internal", s.type, s.attributes, stream=s.stream, name=s.name)
    assert _root(ns).startswith("qdisc htb eec1: root")
    assert "rate 800Kbit" in sh(ns, "tc class show dev lo").stdout  # Toxiproxy's 100 KB/s
    assert links.unhealed() == ["node 1 (local): left: tc root qdisc eec1: on lo"]
    for s in specs:
        links.remove_toxic("n1-to-n2-internal", s.name)
    assert _root(ns).startswith("qdisc noqueue 0: root")
    assert _ops(links) == [("apply", "tc-root"), ("done", None), ("undone", None)]


def test_a_latency_the_kernel_cannot_carry_leaves_nothing_behind(ns: str, inv: inventory.Inventory, tmp_path: Path) -> None:
    if sh(ns, "tc qdisc add dev lo root netem delay 1ms && tc qdisc del dev lo root").returncode == 0:
        pytest.skip("this kernel has netem: the refusal is not reachable here")  # test_netfaults measures the delay then
    links = _links(inv, ns, tmp_path / "state")
    s = toxics.specs("latency", {"latency_ms": 200}, "cd34")[0]
    with pytest.raises(FaultError, match=r"node 1 \(local\): tc on lo for n1-to-n2-internal failed \(exit 3\): netem"):
        links.add_toxic("n1-to-n2-internal", s.type, s.attributes, stream=s.stream, name=s.name)
    assert _root(ns).startswith("qdisc noqueue 0: root") and links.unhealed() == []
    assert _ops(links) == [("apply", "tc-root"), ("done", None), ("undone", None)]


def test_a_fault_with_no_node_form_or_on_a_node_without_net_is_refused_and_runs_nothing(
        ns: str, inv: inventory.Inventory, tmp_path: Path) -> None:
    links = _links(inv, ns, tmp_path / "state")
    s = toxics.specs("slicer", {}, "x")[0]
    with pytest.raises(FaultError, match="slicer cuts the byte stream"):
        links.add_toxic("n1-to-n2-internal", s.type, s.attributes, stream=s.stream, name=s.name)
    d = toxics.specs("drop-responses", {}, "y")[0]
    with pytest.raises(FaultError, match="drop-responses drops the broker's answers"):
        links.add_toxic("n1-to-n2-internal", d.type, d.attributes, stream=d.stream, name=d.name)
    with pytest.raises(FaultError, match=r"node 2 \(local\) may not run tc/iptables: .*net.allowed false \(production VM"):
        links.set_enabled("n2-to-n1-internal", False)
    with pytest.raises(FaultError, match="no Toxiproxy in front of its clients"):
        links.set_enabled("client-to-n1", False)
    assert _ops(links) == []


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def toxiproxy() -> Iterator[Toxiproxy]:
    if not toxiproxy_bin().is_file():
        pytest.skip(f"{toxiproxy_bin()} is not built (make setup)")
    port = _free_port()
    p = subprocess.Popen([str(toxiproxy_bin()), "-host", "127.0.0.1", "-port", str(port)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t = Toxiproxy(f"http://127.0.0.1:{port}")
    try:
        end = time.monotonic() + 10
        while not t.ping():
            assert time.monotonic() < end and p.poll() is None, "toxiproxy-server did not answer"
            time.sleep(0.05)
        t.populate([ProxySpec("client-to-n1", f"127.0.0.1:{_free_port()}", "127.0.0.1:9")])
        yield t
    finally:
        t.close()
        p.kill()
        p.wait()


def test_client_links_go_to_toxiproxy_and_heal_all_steps_clear_both_kinds(
        ns: str, inv: inventory.Inventory, tmp_path: Path, toxiproxy: Toxiproxy) -> None:
    links = _links(inv, ns, tmp_path / "state", toxiproxy)
    links.set_enabled("client-to-n1", False)
    links.set_enabled("n1-to-n2-controller", False)
    links.add_toxic("client-to-n1", "latency", {"latency": 10}, stream="upstream", name="eos-latency-upstream-z")
    assert links.unhealed() == ["client-to-n1: disabled", "client-to-n1: toxics ['eos-latency-upstream-z']",
                                "node 1 (local): left: iptables chain EOSC-t1-1 (n1-to-n2-controller )"]
    links.reset()
    assert links.unhealed() == [] and list(links.proxies()) == ["client-to-n1"]
    assert sh(ns, "iptables -N EOSC-byhand-1 && iptables -I OUTPUT 1 -j EOSC-byhand-1").returncode == 0
    assert links.unhealed() == ["node 1 (local): left: iptables chain EOSC-byhand-1 ()"]
    links.recreate([ProxySpec("client-to-n1", f"127.0.0.1:{_free_port()}", "127.0.0.1:9")])  # heal-all's next step
    assert links.unhealed() == []


def test_cluster_heal_after_a_killed_run_replays_then_sweeps_what_the_journal_missed(
        ns: str, inv: inventory.Inventory, tmp_path: Path) -> None:
    state = tmp_path / "state"
    links = _links(inv, ns, state)
    links.set_enabled("n1-to-n2-internal", False)
    s = toxics.specs("bandwidth", {"rate_kbps": 50}, "k1")[0]
    links.add_toxic("n1-to-n2-internal", s.type, s.attributes, stream=s.stream, name=s.name)
    links.journal.unlock()  # the runner is SIGKILLed: its lock goes, its journal stays
    assert sh(ns, "iptables -N EOSC-byhand-2 && iptables -I INPUT 1 -j EOSC-byhand-2").returncode == 0
    r = node_heal.heal(inv, state, brokers=_brokers(inv, ns, folder_for(inv, state) / "journal.jsonl"))
    assert r.left == [], r.left
    assert r.did[:2] == ["node 1: undo tc-root (change 3, {'device': 'lo', 'link': 'n1-to-n2-internal', 'fault': "
                         "'bandwidth'})",
                         "node 1: undo net-chain (change 1, {'link': 'n1-to-n2-internal', 'fault': 'partition', "
                         "'chain': 'EOSC-t1-1'})"]
    assert "node 1 (local): removed iptables chain EOSC-byhand-2 ()" in r.did
    assert r.kept is not None and r.kept.name.endswith(".healed.jsonl")
    assert sh(ns, "iptables -S").stdout.count("EOSC") == 0 and _root(ns).startswith("qdisc noqueue 0: root")
    assert connect(ns, *PEER)[0] == "ok"
