"""Faults on the links between brokers of an external cluster, on real parts: the compose backend's
containers driven as an external cluster (tests/chaos/external_compose.py), each rule made by
``ExternalLinks`` inside the source broker's container network namespace (``nsenter`` from the
host), never on the host's own.

- A cut of n1 -> n2 internal is an iptables chain in broker 1's namespace: a TCP connect from there
  to broker 2's internal listener fails, broker 1 drops out of the ISR of a partition broker 2 leads
  while writes go on; its heal removes the chain and broker 1 rejoins.
- tc on a broker link, and a runner SIGKILLed with a cut and a tc root in place: ``eos-chaos cluster
  heal --inventory FILE`` replays the journal and sweeps a chain no journal knows, leaving every
  container's namespace without a rule of ours and with its default qdisc.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka.admin import NewTopic

from chaos import toxics
from clusters.backends.compose.compose_cluster import ComposeCluster
from clusters.backends.external import inventory, node_heal
from clusters.backends.external.heal_journal import HealJournal, folder_for
from clusters.backends.external.links import ExternalLinks, sweep_net
from clusters.backends.protocol import Cluster
from clusters.kafka.health import admin_client
from clusters.kafka.topology import Listener
from harness.base.errors import FaultError
from harness.base.wait import wait_until
from harness.kafka.admin import partition_isr
from tests.chaos.cli_helpers import run
from tests.chaos.external_compose import compose_inventory, in_netns
from tests.chaos.kafka_helpers import replicated, writes

pytestmark = pytest.mark.chaos

#: replica.lag.time.max.ms is 10 s (clusters/kafka/render.py); the leader checks every 5 s.
ISR_CHANGE_TIMEOUT_S = 45.0


@dataclass
class External:
    c: ComposeCluster
    inv: inventory.Inventory
    file: Path
    state: Path
    links: ExternalLinks


@pytest.fixture
def ext(cluster: Cluster, tmp_path: Path) -> Iterator[External]:
    if not isinstance(cluster, ComposeCluster):
        pytest.skip("compose-as-external: the compose backend's containers")
    f = compose_inventory(cluster, tmp_path / "inventory.yaml")
    inv, state = inventory.load(f), tmp_path / "state"
    journal = HealJournal(folder_for(inv, state))
    journal.lock()
    brokers = node_heal.brokers_of(inv, state / "known_hosts")
    try:
        yield External(cluster, inv, f, state, ExternalLinks(brokers, journal, None, "ct"))
    finally:
        journal.unlock()
        sweep_net(brokers)  # whatever a failed test left: the session cluster goes on


def _rules(c: ComposeCluster, node: int) -> list[str]:
    return [x for x in in_netns(c, node, "iptables -S").stdout.splitlines() if "EOSC-" in x]


def _root(c: ComposeCluster, node: int) -> str:
    """The root qdiscs of every device in broker ``node``'s namespace, one line each."""
    return in_netns(c, node, "tc qdisc show | grep ' root '").stdout.strip()


def _connects(c: ComposeCluster, src: int, dst: int) -> bool:
    """A TCP connect from broker ``src``'s namespace to broker ``dst``'s internal listener, as ``src`` reaches it."""
    ip, port = c.plan.toxiproxy_ip(src), c.plan.port(dst, Listener.INTERNAL)
    return in_netns(c, src, f"timeout 3 bash -c '</dev/tcp/{ip}/{port}'").returncode == 0


def test_a_cut_between_brokers_is_a_chain_in_the_source_container_and_its_heal_removes_it(ext: External) -> None:
    c, links = ext.c, ext.links
    topic = f"extnet-{uuid.uuid4().hex[:6]}"
    admin = admin_client(c.direct_bootstrap)
    # three partitions (what `writes` writes to), each led by broker 2
    admin.create_topics([NewTopic(topic, 3, replica_assignment=[[2, 1, 3], [2, 3, 1], [2, 1, 3]])])[topic].result(30)
    replicated(c.direct_bootstrap, topic, partitions=3)
    assert _connects(c, 1, 2) and _rules(c, 1) == []
    with writes(c.direct_bootstrap, topic):
        links.set_enabled("n1-to-n2-internal", False)
        ip, port = c.plan.toxiproxy_ip(1), c.plan.port(2, Listener.INTERNAL)
        assert (f"-A EOSC-ct-1 -d {ip}/32 -p tcp -m tcp --dport {port} -m comment --comment n1-to-n2-internal "
                "-j DROP") in _rules(c, 1)
        assert not _connects(c, 1, 2) and _connects(c, 1, 3) and _connects(c, 3, 2)  # that one link only
        wait_until(lambda: partition_isr(admin, topic, 0) == [2, 3], timeout=ISR_CHANGE_TIMEOUT_S,
                   what="broker 1 out of the ISR of a partition broker 2 leads",
                   state=lambda: f"isr {partition_isr(admin, topic, 0)}")
        links.set_enabled("n1-to-n2-internal", True)
        assert _rules(c, 1) == [] and _connects(c, 1, 2)
        wait_until(lambda: partition_isr(admin, topic, 0) == [1, 2, 3], timeout=ISR_CHANGE_TIMEOUT_S,
                   what="broker 1 back in the ISR", state=lambda: f"isr {partition_isr(admin, topic, 0)}")
    assert [(x.op, getattr(x, "what", None)) for x in links.journal.lines()] == [
        ("apply", "net-chain"), ("done", None), ("undone", None)]
    assert links.unhealed() == []
    admin.delete_topics([topic])


KILLED_RUNNER = """
import sys, time
from pathlib import Path
from chaos import toxics
from clusters.backends.external import inventory, node_heal
from clusters.backends.external.heal_journal import HealJournal, folder_for
from clusters.backends.external.links import ExternalLinks
inv = inventory.load(Path(sys.argv[1])); state = Path(sys.argv[2])
j = HealJournal(folder_for(inv, state)); j.lock()
links = ExternalLinks(node_heal.brokers_of(inv, state / "known_hosts"), j, None, "killed")
links.set_enabled("n3-to-n1-controller", False)
for s in toxics.specs("bandwidth", {"rate_kbps": 50}, "k1"):
    links.add_toxic("n1-to-n2-internal", s.type, s.attributes, stream=s.stream, name=s.name)
print("faulted", flush=True)
time.sleep(600)
"""


def test_tc_between_brokers_and_a_killed_runners_rules_are_removed_by_cluster_heal(ext: External) -> None:
    c, links = ext.c, ext.links
    lat = toxics.specs("latency", {"latency_ms": 100}, "l1")
    try:
        for s in lat:
            links.add_toxic("n2-to-n3-internal", s.type, s.attributes, stream=s.stream, name=s.name)
        assert "qdisc htb eec1: dev" in _root(c, 2)  # the kernel has netem: a delay in a class
        for s in lat:
            links.remove_toxic("n2-to-n3-internal", s.name)
    except FaultError as exc:  # this machine's kernel has no sch_netem: refused, and nothing left
        assert "netem (sch_netem) is not in the kernel of this node" in str(exc)
    assert "eec1:" not in _root(c, 2) and links.unhealed() == []
    links.journal.unlock()  # the killed runner's own journal lock, as a runner of its own would hold it

    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    p = subprocess.Popen([sys.executable, "-c", KILLED_RUNNER, str(ext.file), str(ext.state)], stdout=subprocess.PIPE,
                         text=True, env=env)
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == "faulted"
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
    assert _rules(c, 3) and f"qdisc htb eec1: dev {ext.inv.node(1).net.device} root" in _root(c, 1)
    assert "rate 400Kbit" in in_netns(c, 1, "tc class show dev " + ext.inv.node(1).net.device).stdout
    assert in_netns(c, 2, "iptables -N EOSC-byhand-1 && iptables -I OUTPUT 1 -j EOSC-byhand-1").returncode == 0

    r = run(["cluster", "heal", "--inventory", str(ext.file)], dict(env, EOS_CHAOS_STATE=str(ext.state)), timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "undo net-chain" in r.stdout and "undo tc-root" in r.stdout
    assert "removed iptables chain EOSC-byhand-1 ()" in r.stdout  # the sweep trusts no journal
    for n in c.topology.node_ids:
        assert _rules(c, n) == [] and "eec1:" not in _root(c, n), (n, _rules(c, n), _root(c, n))
    assert not (folder_for(ext.inv, ext.state) / "journal.jsonl").exists()  # kept as healed
