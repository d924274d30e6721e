"""What a run on an external cluster refuses before anything starts, through the real CLI and an
inventory file on disk, no Kafka: faults on a cluster that does not say it is disposable (naming the
file:line), faults its nodes cannot carry (naming the node, why and its line), faults between brokers
(until the tc/iptables layer is in), a bad --inventory path. A dry run prints every command each
planned fault would run on each node, and starts nothing. Each refusal has a clean twin."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from chaos import schedule
from chaos.fault_refusals import external_refusals
from clusters.backends import backends
from harness.cli import app
from harness.run import scenario
from tests.external_nodes import local_inventory


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "state"
    monkeypatch.setenv("EOS_CHAOS_STATE", str(d))
    yield d
    backends.use_external(None)


def _eos(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def _scenario(tmp_path: Path, faults: str) -> Path:
    f = tmp_path / "sc.yaml"
    f.write_text("name: ext-check\ndescription: x\nduration: 30\nworkloads:\n  - {kind: txn-producer, count: 1}\n"
                 f"faults:\n{faults}")
    return f


def _refusals(tmp_path: Path, inv: Path, faults: str, allow: bool = False) -> list[str]:
    sc = scenario.load(str(_scenario(tmp_path, faults)))
    return external_refusals(schedule.plan(sc, 1), inv, allow)


def test_faults_on_a_cluster_not_said_disposable_are_refused_naming_the_line(tmp_path: Path) -> None:
    inv = local_inventory(tmp_path, ["1", "2", "3"])
    inv.write_text(inv.read_text().replace("disposable: true", "disposable: false"))
    r = _eos("run", "leader-kill", "--inventory", str(inv), "--dry-run", "--seed", "1")
    assert r.exit_code == 2, r.output
    assert f"{inv}:2" in r.output and "--allow-non-disposable" in r.output, r.output
    ok = _eos("run", "leader-kill", "--inventory", str(inv), "--dry-run", "--seed", "1", "--allow-non-disposable")
    assert ok.exit_code == 0, ok.output
    # without the key at all: line 1, the file's start
    inv.write_text(inv.read_text().replace("disposable: false\n", ""))
    assert f"{inv}:1" in _eos("run", "leader-kill", "--inventory", str(inv), "--dry-run", "--seed", "1").output


def test_a_node_fault_the_inventory_cannot_carry_names_node_why_and_line(tmp_path: Path) -> None:
    inv = local_inventory(tmp_path, ["1", "2", "3"])
    text = inv.read_text().splitlines()
    at = [i for i, line in enumerate(text) if "exec sleep 2" in line][0]
    text[at] = "    broker: {commands: {status: \"echo up\", pause: \"true\", resume: \"true\"}}"
    inv.write_text("\n".join(text) + "\n")
    said = _refusals(tmp_path, inv, "  - {kind: kill, at: 5, duration: 5, target: 2}\n")
    assert len(said) == 1 and "node 2 cannot kill, start" in said[0] and f"{inv}:9)" in said[0], said
    assert _refusals(tmp_path, inv, "  - {kind: kill, at: 5, duration: 5, target: 1}\n") == []  # node 1 can
    assert _refusals(tmp_path, inv, "  - {kind: pause, at: 5, duration: 5, target: 2}\n") == []  # node 2 can pause
    random_kill = _refusals(tmp_path, inv, "  - {kind: kill, at: 5, duration: 5}\n")
    assert any("node 2 cannot kill" in s for s in random_kill), random_kill


def test_a_controller_target_needs_every_metadata_log_dir(tmp_path: Path) -> None:
    inv = local_inventory(tmp_path, ["1", "2", "3"])
    said = _refusals(tmp_path, inv, "  - {kind: kill, at: 5, duration: 5, target: controller}\n")
    assert len(said) == 1 and "node 1 gives no metadata_log_dir" in said[0] and f"{inv}:4" in said[0], said
    inv.write_text(inv.read_text().replace("nodes:", "defaults: {metadata_log_dir: \"/tmp/m{id}\"}\nnodes:"))
    assert _refusals(tmp_path, inv, "  - {kind: kill, at: 5, duration: 5, target: controller}\n") == []


def test_a_fault_between_brokers_is_refused_with_its_reason(tmp_path: Path) -> None:
    inv = local_inventory(tmp_path, ["1", "2", "3"])
    said = _refusals(tmp_path, inv, "  - {kind: partition, at: 5, duration: 5, partition: isolate-node}\n")
    # a role target may start its links from any node, and no node here allows tc/iptables
    assert len(said) == 3, said
    assert all(f"node {n} cannot fault its links to other brokers: its inventory entry says net.allowed false"
               in line for n, line in zip((1, 2, 3), said, strict=True)), said
    # the clients' links alone are the proxies' own
    assert _refusals(tmp_path, inv, "  - {kind: partition, at: 5, duration: 5, partition: isolate-node, "
                                    "listeners: client}\n") == []
    assert _refusals(tmp_path, inv, "  - {kind: latency, at: 5, duration: 5, partition: clients-from-node}\n") == []


NET_INVENTORY = """\
name: netted
disposable: true
defaults:
  broker: {commands: {status: "echo up", kill: "pkill -9 -f kafka", start: "systemctl start kafka"}}
  control: {local: {}}
nodes:
""" + "".join(f"""\
  - id: {n}
    host: 127.0.0.{n}
    listeners: {{client: "127.0.0.{n}:9092", internal: "kafka-{n}.internal:9093"}}
    net: {{allowed: true, device: lo}}
""" for n in (1, 2, 3))


def test_a_dry_run_prints_the_iptables_and_tc_scripts_of_faults_between_brokers_and_their_undo(
        tmp_path: Path, state: Path) -> None:
    """Each planned fault on links between brokers prints the scripts the run would send each source
    node, made by the run's own code (chains numbered as the run numbers them), and at its heal the
    scripts that take them back; a peer named by host name is resolved on the node. Its twin, a fault
    on the clients' links only, prints no node command."""
    inv = tmp_path / "netted.yaml"
    inv.write_text(NET_INVENTORY)
    sc = _scenario(tmp_path, "  - {kind: partition, at: 5, duration: 5, target: 1, partition: isolate-node, "
                             "listeners: internal}\n"
                             "  - {kind: latency, at: 12, duration: 4, target: 2, partition: isolate-node, "
                             "listeners: internal, params: {latency_ms: 300}}\n")
    r = _eos("run", str(sc), "--inventory", str(inv), "--dry-run", "--seed", "1")
    assert r.exit_code == 0, r.output
    out = r.output
    # node 1 cut from 2 and 3: a chain of its own on node 1 for each link, dropping both ways
    for n, chain in ((2, "EOSC-dryrun-1"), (3, "EOSC-dryrun-2")):
        assert f"partition node 1 cut n1-to-n{n}-internal: sh -c" in out, out
        assert f"iptables -w -N {chain}" in out and f"getent ahostsv4 kafka-{n}.internal" in out, out
        assert f"partition node 1 heal n1-to-n{n}-internal: sh -c" in out and f"iptables -w -X {chain}" in out, out
    # and the links into node 1, on their source nodes
    assert "partition node 2 cut n2-to-n1-internal" in out and "partition node 3 cut n3-to-n1-internal" in out, out
    # the latency: node 2's tc root, a class per link with netem 300 ms, all taken back at the heal
    assert "latency node 2 latency on n2-to-n1-internal: sh -c" in out and "netem delay 300ms" in out, out
    assert "tc qdisc replace dev lo root handle eec1: htb" in out, out
    assert "latency node 2 undo latency on n2-to-n1-internal: sh -c" in out and "tc qdisc del dev lo root" in out, out
    times = [float(line.split()[0].rstrip("s")) for line in out.splitlines() if line.strip()[:1].isdigit() and " node " in line]
    assert times == sorted(times), out  # in time order, heals at start + duration
    assert not state.exists(), "a dry run made a journal or a state record"

    client = _scenario(tmp_path, "  - {kind: partition, at: 5, duration: 5, target: 1, partition: isolate-node, "
                                 "listeners: client}\n")
    r = _eos("run", str(client), "--inventory", str(inv), "--dry-run", "--seed", "1")
    assert r.exit_code == 0 and "iptables" not in r.output and " cut n" not in r.output, r.output


def test_a_dry_run_prints_every_node_command_and_starts_nothing(tmp_path: Path, state: Path) -> None:
    inv = local_inventory(tmp_path, ["1", "2", "3"])
    r = _eos("run", "leader-kill", "--inventory", str(inv), "--dry-run", "--seed", "3")
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    for n in (1, 2, 3):
        assert any(f"kill node {n} kill: sh -c" in line and "kill -KILL" in line for line in lines), r.output
        assert any(f"kill node {n} start: sh -c" in line and "setsid" in line for line in lines), r.output
        assert any(f"check node {n} reach: sh -c true" in line for line in lines), r.output
    assert not state.exists(), "a dry run made a journal or a state record"


def test_a_bad_inventory_path_is_exit_2(tmp_path: Path) -> None:
    r = _eos("run", "baseline", "--inventory", str(tmp_path / "nope.yaml"), "--dry-run")
    assert r.exit_code == 2 and "nope.yaml" in r.output, r.output
    r = _eos("run", "baseline", "--backend", "external", "--dry-run")
    assert r.exit_code == 2 and "--inventory FILE" in r.output, r.output


def test_a_matrix_on_an_external_cluster_runs_its_own_release_only(tmp_path: Path) -> None:
    home = tmp_path / "kafka"
    (home / "libs").mkdir(parents=True)
    (home / "libs" / "kafka_2.13-4.1.1.jar").write_bytes(b"")
    inv = local_inventory(tmp_path, ["1", "2", "3"])
    inv.write_text(inv.read_text().replace("nodes:", f"defaults: {{kafka_home: \"{home}\"}}\nnodes:"))
    r = _eos("matrix", "--scenarios", "baseline", "--inventory", str(inv), "--kafka-versions", "4.0.0", "--dry-run")
    assert r.exit_code == 2 and "runs Kafka 4.1.1" in r.output, r.output
    r = _eos("matrix", "--scenarios", "baseline", "--inventory", str(inv), "--transaction-versions", "1", "--dry-run")
    assert r.exit_code == 2 and "--transaction-versions 1" in r.output, r.output
    r = _eos("matrix", "--scenarios", "baseline", "--inventory", str(inv), "--dry-run", "--seed", "1")
    assert r.exit_code == 0 and "4.1.1" in r.output, r.output


def test_a_wire_fault_between_brokers_is_refused_and_its_client_link_twin_runs(tmp_path: Path) -> None:
    """The wire proxy fronts an external cluster's clients only: a held WriteTxnMarkers between its
    brokers is exit 2 before anything starts; the same hold on a client link passes the dry run."""
    inv = local_inventory(tmp_path, ["1", "2", "3"])
    between = _scenario(tmp_path, "  - {at: 5, kind: hold-requests, api: WriteTxnMarkers, link: n1-to-n2-internal}\n")
    r = _eos("run", str(between), "--inventory", str(inv), "--dry-run", "--seed", "1")
    assert r.exit_code == 2 and "the external backend's wire proxy carries only the clients' links" in r.output, r.output
    client = _scenario(tmp_path, "  - {at: 5, kind: hold-requests, api: EndTxn}\n")
    r = _eos("run", str(client), "--inventory", str(inv), "--dry-run", "--seed", "1")
    assert r.exit_code == 0, r.output
