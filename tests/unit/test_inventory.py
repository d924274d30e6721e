"""The inventory of an external cluster: every transport and broker preset loads; every bad input is
exit 2 naming the file, the line, the field and what is allowed (docs/reference/inventory.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusters.backends.external import inventory
from harness.base.errors import ConfigError

EVERY_KIND = """\
name: every-kind
disposable: true
defaults:
  control: {ssh: {host: "{host}", user: kafka, key: keys/staging}}
  broker: {service: kafka}
  net: {allowed: true, device: ens5}
  kafka_home: /opt/kafka-{id}
nodes:
  - {id: 1, host: 10.0.0.11, listeners: {client: "10.0.0.11:9092", internal: "10.0.0.11:9093"}}
  - id: 2
    host: 127.0.0.1
    listeners: {client: "127.0.0.1:9192"}
    control: {local: {}}
    broker: {process: {match: "kafka.Kafka .*node-2", start: "setsid bin/start 2 &"}, commands: {kill: "pkill -9 x"}}
    net: {allowed: false, why_not: "production VM, no root"}
  - id: 3
    host: kafka-3
    listeners: {client: "kafka-3:9092"}
    control: {docker: {container: eos-kafka-3}}
    broker: {docker: container}
    net: {allowed: true, netns: container}
  - id: 4
    host: kafka-4.kafka
    listeners: {client: "kafka-4.kafka:9092"}
    control: {kubectl: {namespace: kafka, pod: kafka-4, container: broker}}
    broker: {commands: {status: {run: "kubectl get pod", "on": control}, kill: "kill -9 1"}}
"""


def _write(tmp_path: Path, text: str) -> Path:
    f = tmp_path / "inventory.yaml"
    f.write_text(text)
    return f


def _refused(tmp_path: Path, text: str) -> str:
    f = _write(tmp_path, text)
    with pytest.raises(ConfigError) as exc:
        inventory.load(f)
    assert exc.value.exit_code == 2
    return str(exc.value).replace(str(f), "FILE")


def test_every_transport_and_preset_loads(tmp_path: Path) -> None:
    inv = inventory.load(_write(tmp_path, EVERY_KIND))
    nodes = {n.id: n for n in inv.resolved()}
    assert [n.control.kind for n in nodes.values()] == ["ssh", "local", "docker", "kubectl"]
    assert [n.broker.preset for n in nodes.values()] == ["service", "process", "docker", None]
    assert nodes[1].where == "node 1 (ssh kafka@10.0.0.11)" and nodes[4].where == "node 4 (kubectl kafka/kafka-4)"
    assert nodes[2].broker.commands["kill"].run == "pkill -9 x" and nodes[2].broker.commands["kill"].on == "node"
    assert nodes[4].broker.commands["status"].on == "control"
    assert inv.disposable and inv.line_of_node(3) == f"{tmp_path / 'inventory.yaml'}:16"


def test_defaults_merge_into_each_node(tmp_path: Path) -> None:
    nodes = {n.id: n for n in inventory.load(_write(tmp_path, EVERY_KIND)).resolved()}
    assert nodes[1].control.ssh is not None and nodes[1].control.ssh.host == "10.0.0.11"  # {host}
    assert nodes[1].kafka_home == "/opt/kafka-1" and nodes[3].kafka_home == "/opt/kafka-3"  # {id}
    assert nodes[1].net.device == "ens5" and nodes[1].net.allowed
    assert not nodes[2].net.allowed and nodes[2].net.why_not == "production VM, no root"  # its own, whole
    assert nodes[3].net.device == "eth0"  # a node's field replaces the default whole


def test_paths_are_read_relative_to_the_inventory(tmp_path: Path) -> None:
    n = inventory.load(_write(tmp_path, EVERY_KIND)).node(1)
    assert n.control.ssh is not None and n.control.ssh.key == tmp_path / "keys/staging"
    home = EVERY_KIND.replace("key: keys/staging", "key: ~/.ssh/x")
    n = inventory.load(_write(tmp_path, home)).node(1)
    assert n.control.ssh is not None and n.control.ssh.key == Path.home() / ".ssh/x"


def test_the_digest_changes_with_the_inventory(tmp_path: Path) -> None:
    a = inventory.digest(inventory.load(_write(tmp_path, EVERY_KIND)))
    b = inventory.digest(inventory.load(_write(tmp_path, EVERY_KIND.replace("9192", "9193"))))
    assert a != b and a == inventory.digest(inventory.load(_write(tmp_path, EVERY_KIND)))


@pytest.mark.parametrize("old, new, want", [
    ("  net: {allowed: true, device: ens5}\n", "  net: {allowed: true, devise: ens5}\n",
     "FILE:6: defaults.net.devise: unknown key (allowed: allowed, chaos_mesh, why_not, device, netns, peers); did you mean 'device'?"),
    ("control: {docker: {container: eos-kafka-3}}", "control: {docker: {container: eos-kafka-3, tty: true}}",
     "FILE:19: nodes[2].control.docker.tty: unknown key (allowed: container, docker_host)"),
    ("name: every-kind\n", "name: every-kind\nport_base: 3\n", "FILE:2: port_base: unknown key (allowed: name,"),
    ("commands: {kill: \"pkill -9 x\"}", "commands: {restart: \"x\"}",
     "FILE:14: nodes[1].broker.commands.restart: 'restart'; allowed: kill, stop, pause, resume, start, status"),
])
def test_an_unknown_key_is_exit_2_with_file_and_line(tmp_path: Path, old: str, new: str, want: str) -> None:
    assert old in EVERY_KIND
    assert want in _refused(tmp_path, EVERY_KIND.replace(old, new))


@pytest.mark.parametrize("old, new, want", [
    ("user: kafka, ", "", "FILE:4: defaults.control.ssh.user: missing (required)"),
    ("  - {id: 1, host: 10.0.0.11, ", "  - {host: 10.0.0.11, ", "FILE:9: nodes[0].id: missing (required)"),
    ("    listeners: {client: \"kafka-3:9092\"}\n", "", "FILE:16: nodes[2].listeners: missing (required)"),
    ("  control: {ssh: {host: \"{host}\", user: kafka, key: keys/staging}}\n", "",
     "FILE:8: nodes[0].control: missing: node 1 needs `control`, on the node or in defaults.control"),
    ("broker: {commands: {status: {run: \"kubectl get pod\", \"on\": control}, kill: \"kill -9 1\"}}",
     "broker: {commands: {kill: \"kill -9 1\"}}", "FILE:26: nodes[3].broker.commands: without a preset"),
    ("name: every-kind\n", "", "FILE:1: name: missing (required)"),
])
def test_a_missing_field_names_file_line_and_field(tmp_path: Path, old: str, new: str, want: str) -> None:
    assert old in EVERY_KIND
    assert want in _refused(tmp_path, EVERY_KIND.replace(old, new))


def test_two_nodes_with_one_id_are_refused_at_the_second(tmp_path: Path) -> None:
    msg = _refused(tmp_path, EVERY_KIND.replace("  - id: 3\n", "  - id: 2\n"))
    assert "FILE:16: nodes[2].id: node id 2 is given twice (first at nodes[1])" in msg, msg
    msg = _refused(tmp_path, EVERY_KIND.replace("client: \"kafka-3:9092\"", "client: \"127.0.0.1:9192\""))
    assert "FILE:18: nodes[2].listeners.client: 127.0.0.1:9192 is also nodes[1]'s listener" in msg, msg


def test_a_tls_listener_is_refused_naming_why(tmp_path: Path) -> None:
    msg = _refused(tmp_path, EVERY_KIND.replace("{client: \"10.0.0.11:9092\"", "{client: \"SSL://10.0.0.11:9092\""))
    assert "FILE:9: nodes[0].listeners.client: 'SSL://10.0.0.11:9092': a listener is host:port" in msg, msg
    assert "cannot read inside TLS" in msg
    msg = _refused(tmp_path, EVERY_KIND.replace("disposable: true\n", "disposable: true\nsecurity_protocol: SSL\n"))
    assert "FILE:3: security_protocol: 'SSL': only PLAINTEXT" in msg, msg


@pytest.mark.parametrize("old, new, want", [
    ("control: {local: {}}", "control: {local: {}, docker: {container: x}}",
     "FILE:13: nodes[1].control: give exactly one of local, ssh, docker, kubectl (given: local, docker)"),
    ("control: {docker: {container: eos-kafka-3}}", "control: {local: {}}",
     "FILE:20: nodes[2].broker.docker: node 3: the docker preset drives the node's container from the control "
     "host; its control is local, not docker"),
    ("broker: {docker: container}", "broker: {docker: container, service: kafka}",
     "FILE:20: nodes[2].broker: give one of service, process, docker, chaos_mesh (given: service, docker)"),
    ("client: \"10.0.0.11:9092\"", "client: \"10.0.0.11\"", "FILE:9: nodes[0].listeners.client: '10.0.0.11' is not host:port"),
    ("name: every-kind", "name: Every Kind", "FILE:1: name: 'Every Kind': 1 to 40 of a-z"),
    ("nodes:\n", "nodes: []\nx:\n", "FILE:8: nodes: List should have at least 1 item"),
])
def test_what_cannot_work_together_is_refused_at_its_line(tmp_path: Path, old: str, new: str, want: str) -> None:
    assert old in EVERY_KIND
    assert want in _refused(tmp_path, EVERY_KIND.replace(old, new))


def test_the_strict_yaml_rules_of_scenarios_hold_for_inventories(tmp_path: Path) -> None:
    assert "FILE:3: duplicate key 'disposable' (first on line 2)" in _refused(
        tmp_path, EVERY_KIND.replace("disposable: true\n", "disposable: true\ndisposable: false\n"))
    assert "FILE:1: an inventory is a mapping" in _refused(tmp_path, "- a\n")
    f = tmp_path / "bad.yaml"
    f.write_bytes(b"name: caf\xe9\n")
    with pytest.raises(ConfigError, match="line 1 is not UTF-8 text .* an inventory file is UTF-8"):
        inventory.load(f)
    with pytest.raises(ConfigError, match="^inventory file .* does not exist"):
        inventory.load(tmp_path / "none.yaml")


def test_a_broker_s_start_timeout_is_its_own_wait_for_up_and_a_bad_one_is_refused_at_its_line(tmp_path: Path) -> None:
    """``broker.start_timeout_s``: how long a start (a heal's, a pod Kubernetes makes again) may take
    before the broker is up: a staging broker's log recovery takes longer than the default. A heal
    waits that long and no longer, naming the node and the state it last saw; its twin, the
    default, is what a small cluster needs; a value that is no time is refused at its line."""
    import time

    from clusters.backends.external import node_heal
    from clusters.backends.external.heal_journal import UndoStep, undo
    from harness.base.errors import WaitTimeout

    text = EVERY_KIND.replace('commands: {kill: "pkill -9 x"}}',
                              'commands: {kill: "pkill -9 x", status: "echo down", start: "true"}, '
                              'start_timeout_s: 0.5}')
    inv = inventory.load(_write(tmp_path, text))
    assert inv.node(2).broker.start_timeout_s == 0.5 and inv.node(1).broker.start_timeout_s == inventory.START_TIMEOUT_S
    broker = node_heal.brokers_of(inv, tmp_path / "known_hosts")[2]
    started = time.monotonic()
    with pytest.raises(WaitTimeout, match=r"node 2 \(local\) to be up.*status says down"):
        undo(UndoStep(action="start"), broker)  # the start ran, and the broker never came up
    assert time.monotonic() - started < 10
    assert "FILE:14: nodes[1].broker.start_timeout_s: " in _refused(
        tmp_path, text.replace("start_timeout_s: 0.5", "start_timeout_s: -1"))
