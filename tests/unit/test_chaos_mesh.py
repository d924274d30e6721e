"""Chaos Mesh on an external cluster's pods, no Kubernetes: the inventory's shape (good and bad, each
refusal at its file:line), the PodChaos and NetworkChaos manifests (equal to the ones the docs show),
and the harness's own logic driven through a fake ``kubectl`` on PATH that records its argv, its
stdin and what the heal journal held when it ran: a change journaled before it is applied, heal and
``cluster heal`` deleting what was journaled, the CRD preflight, refusals at load.

This proves the harness's side only. Nothing here says a real Chaos Mesh accepts these manifests or
kills a pod: docs/howto/external-cluster.md marks it untested."""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from pathlib import Path

import pytest

from chaos import schedule
from chaos.fault_refusals import external_refusals
from clusters.backends.external import chaos_mesh, inventory, node_heal, probe
from clusters.backends.external.heal_journal import HealJournal, NodeChanges, folder_for
from clusters.backends.external.lifecycle import node_commands
from clusters.backends.external.links import ExternalLinks
from harness.base.errors import ConfigError
from harness.run import scenario
from tests import docs_examples as de

ROOT = Path(__file__).resolve().parents[2]
PODS = """\
name: pods
disposable: true
defaults:
  broker: {chaos_mesh: pod}
  net: {chaos_mesh: true}
nodes:
  - id: 1
    host: kafka-0.kafka
    listeners: {client: "kafka-0.kafka:9092", internal: "kafka-0.kafka:9093"}
    control: {kubectl: {namespace: kafka, pod: kafka-0, container: kafka, context: staging}}
  - id: 2
    host: kafka-1.kafka
    listeners: {client: "kafka-1.kafka:9092", internal: "kafka-1.kafka:9093"}
    control: {kubectl: {namespace: kafka, pod: kafka-1, container: kafka, context: staging}}
"""
FAKE = """\
#!{python}
import json, os, sys
d = os.environ["FAKE_KUBECTL_DIR"]
argv = sys.argv[1:]
journal = os.environ.get("FAKE_KUBECTL_JOURNAL", "")
with open(os.path.join(d, "calls.jsonl"), "a") as f:
    f.write(json.dumps({{"argv": argv, "stdin": sys.stdin.read() if "apply" in argv else "",
                        "journal": open(journal).read() if journal and os.path.exists(journal) else ""}}) + "\\n")
if "crd" in argv:
    sys.exit(int(os.environ.get("FAKE_CRD_RC", "0")))
if "pod" in argv and "get" in argv:
    print(os.environ.get("FAKE_POD", "/True"), end="")
if "get" in argv and argv[-2:] == ["-o", "name"]:  # the label sweep's listing: what a run left
    if os.environ.get("FAKE_LEFT"):  # kubectl says "No resources found" on stderr, none on stdout
        print(os.environ["FAKE_LEFT"])
"""


@pytest.fixture
def kubectl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake ``kubectl`` first on PATH; the folder its ``calls.jsonl`` is written to."""
    d = tmp_path / "fake"
    d.mkdir()
    exe = d / "kubectl"
    exe.write_text(FAKE.format(python=sys.executable))
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{d}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_KUBECTL_DIR", str(d))
    monkeypatch.setenv("EOS_CHAOS_STATE", str(tmp_path / "state"))
    return d


def _calls(d: Path) -> list[dict[str, object]]:
    f = d / "calls.jsonl"
    return [json.loads(x) for x in f.read_text().splitlines()] if f.exists() else []


def _load(tmp_path: Path, text: str = PODS) -> inventory.Inventory:
    f = tmp_path / "pods.yaml"
    f.write_text(text)
    return inventory.load(f)


def _refused(tmp_path: Path, text: str) -> str:
    with pytest.raises(ConfigError) as exc:
        _load(tmp_path, text)
    return str(exc.value).replace(str(tmp_path / "pods.yaml"), "FILE")


# ---- the inventory ----
def test_pods_through_chaos_mesh_load_and_take_kill_stop_start_status_but_no_pause(tmp_path: Path) -> None:
    n = _load(tmp_path).node(1)
    assert n.broker.preset == "chaos_mesh" and n.net.chaos_mesh and not n.net.allowed
    commands = node_commands(n, "t1")
    assert sorted(commands) == ["kill", "start", "status", "stop"]  # Chaos Mesh has no SIGSTOP: no pause
    assert all(c.on == "control" for c in commands.values())


@pytest.mark.parametrize("old, new, want", [
    ("    control: {kubectl: {namespace: kafka, pod: kafka-1, container: kafka, context: staging}}\n",
     "    control: {ssh: {host: h, user: u, key: k}}\n",
     "FILE:11: nodes[1].broker.chaos_mesh: node 2: the chaos_mesh preset kills the node's pod (its kubectl control); "
     "its control is ssh, not kubectl"),
    ("  broker: {chaos_mesh: pod}\n", "  broker: {commands: {status: \"echo up\"}}\n",
     "FILE:11: nodes[1].net.chaos_mesh: node 2: net.chaos_mesh cuts links of the node's pod"),  # a default: at the node
    ("  net: {chaos_mesh: true}\n", "  net: {chaos_mesh: true, allowed: true}\n",
     "FILE:7: nodes[0].net.allowed: node 1: give net.allowed (tc and iptables on the node) or net.chaos_mesh"),
    ("  broker: {chaos_mesh: pod}\n", "  broker: {chaos_mesh: pods}\n",
     "FILE:4: defaults.broker.chaos_mesh: 'pods'; allowed: pod; did you mean 'pod'?"),
    ("  net: {chaos_mesh: true}\n", "  net: {chaos_mash: true}\n",
     "FILE:5: defaults.net.chaos_mash: unknown key (allowed: allowed, chaos_mesh, why_not"),
    ("  broker: {chaos_mesh: pod}\n", "  broker: {chaos_mesh: pod, service: kafka}\n",
     "FILE:4: defaults.broker: give one of service, process, docker, chaos_mesh (given: service, chaos_mesh)"),
])
def test_a_chaos_mesh_shape_that_cannot_work_is_refused_at_its_line(tmp_path: Path, old: str, new: str,
                                                                     want: str) -> None:
    text = PODS.replace(old, new)
    if "commands" in new:  # node 2 on ssh, its broker by commands: only net.chaos_mesh is wrong
        text = text.replace("    control: {kubectl: {namespace: kafka, pod: kafka-1, container: kafka, context: staging}}\n",
                            "    control: {ssh: {host: h, user: u, key: k}}\n")
    assert old in PODS
    assert want in _refused(tmp_path, text)


# ---- the manifests, as the docs show them ----
def _doc_manifests() -> list[str]:
    return [b.code for b in de.blocks(ROOT / "docs" / "howto" / "external-cluster.md") if b.marker == "manifest"]


def test_the_docs_show_exactly_the_manifests_the_harness_applies(tmp_path: Path) -> None:
    inv = _load(tmp_path)
    k1, k2 = inv.node(1).control.kubectl, inv.node(2).control.kubectl
    assert k1 is not None and k2 is not None
    kill = chaos_mesh.pod_kill_manifest(chaos_mesh.kill_name("3f2a1c0b9d", inv.node(1)), k1)
    cut = chaos_mesh.partition_manifest(chaos_mesh.cut_name("3f2a1c0b9d", "n1-to-n2-internal"), k1, k2)
    assert _doc_manifests() == [kill, cut]
    assert "name: eosc-3f2a1c0b9d-kill-n1\n" in kill and "action: pod-kill\n" in kill
    assert "direction: to\n" in cut and "        - kafka-1\n" in cut


def test_a_name_is_a_kubernetes_name_whatever_the_link() -> None:
    name = chaos_mesh.resource_name("A_b", "cut-" + "n1-to-n2-controller" * 5)
    assert re.fullmatch(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?", name), name


# ---- the harness's logic, through a fake kubectl ----
def test_a_kill_is_journaled_before_its_podchaos_is_applied_and_heal_deletes_it(tmp_path: Path, kubectl: Path,
                                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    inv = _load(tmp_path)
    journal = HealJournal(folder_for(inv))
    monkeypatch.setenv("FAKE_KUBECTL_JOURNAL", str(journal.path))
    brokers = node_heal.brokers_of(inv, tmp_path / "kh", tag="t1")
    journal.lock()
    try:
        NodeChanges(journal, brokers).change(1, "kill", {"fault": "kill"})
    finally:
        journal.unlock()
    delete, apply = _calls(kubectl)
    assert delete["argv"] == ["--context", "staging", "delete", "podchaos", "eosc-t1-kill-n1", "-n", "kafka",
                              "--ignore-not-found"]
    assert apply["argv"] == ["--context", "staging", "apply", "-f", "-"]
    assert apply["stdin"] == chaos_mesh.pod_kill_manifest("eosc-t1-kill-n1", inv.node(1).control.kubectl)  # type: ignore[arg-type]
    before = [json.loads(x) for x in str(apply["journal"]).splitlines()]
    assert [(x["op"], x["what"], x["detail"]["name"]) for x in before] == [("apply", "kill", "eosc-t1-kill-n1")]
    # a runner killed here: `cluster heal` deletes the PodChaos, then waits for the pod (Ready: up)
    (kubectl / "calls.jsonl").unlink()
    r = node_heal.heal(inv)
    assert not r.left, r.left
    calls = [c["argv"] for c in _calls(kubectl)]
    assert calls[0] == ["--context", "staging", "delete", "podchaos", "eosc-t1-kill-n1", "-n", "kafka",
                        "--ignore-not-found"], calls
    assert journal.open_changes() == []


def test_cluster_heal_deletes_by_label_what_no_journal_line_names_and_its_twin_deletes_nothing(
        tmp_path: Path, kubectl: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A runner killed while its journal line was torn (or a resource applied by hand with our label):
    the journal names nothing, so only the label sweep finds it, asking the API server once per
    context and namespace. Its twin, nothing of ours left: the sweep lists and deletes nothing."""
    inv = _load(tmp_path)
    left = "networkchaos.chaos-mesh.org/eosc-old-cut-n1-to-n2-internal"
    monkeypatch.setenv("FAKE_LEFT", left)
    r = node_heal.heal(inv)
    assert not r.left, r.left
    calls = [c["argv"] for c in _calls(kubectl)]
    gets = [c for c in calls if c[2:3] == ["get"] and "-l" in c]
    assert gets == [["--context", "staging", "get", "podchaos,networkchaos", "-n", "kafka", "-l",
                     "app.kubernetes.io/managed-by=eos-chaos", "-o", "name"]], calls  # two nodes, one namespace
    assert ["--context", "staging", "delete", left, "-n", "kafka", "--ignore-not-found"] in calls, calls
    assert any(line.endswith(f"removed {left}") for line in r.did), r.did

    (kubectl / "calls.jsonl").unlink()
    monkeypatch.setenv("FAKE_LEFT", "")
    r = node_heal.heal(inv)
    calls = [c["argv"] for c in _calls(kubectl)]
    assert not r.left and not any(c[2:3] == ["delete"] and "chaos-mesh.org/" in " ".join(c) for c in calls), calls
    assert not any("removed" in line for line in r.did), r.did


def test_a_partition_between_pods_is_a_networkchaos_journaled_first_and_reset_deletes_it(
        tmp_path: Path, kubectl: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    inv = _load(tmp_path)
    journal = HealJournal(folder_for(inv))
    monkeypatch.setenv("FAKE_KUBECTL_JOURNAL", str(journal.path))
    links = ExternalLinks(node_heal.brokers_of(inv, tmp_path / "kh", tag="t1"), journal, None, "t1")
    journal.lock()
    try:
        links.set_enabled("n1-to-n2-internal", False)
        links.set_enabled("n1-to-n2-internal", False)  # cut again: no second resource
        assert links.unhealed() == ["node 1 (kubectl kafka/kafka-0): left: NetworkChaos of change 1"]
        links.reset()
        assert links.unhealed() == []
    finally:
        journal.unlock()
    calls = _calls(kubectl)
    assert sum("-l" in c["argv"] for c in calls) == 2  # each unhealed() asked the API server by label too
    apply, delete = [c for c in calls if "-l" not in c["argv"]]  # type: ignore[operator]
    k1, k2 = inv.node(1).control.kubectl, inv.node(2).control.kubectl
    assert k1 is not None and k2 is not None
    assert apply["stdin"] == chaos_mesh.partition_manifest("eosc-t1-cut-n1-to-n2-internal", k1, k2)
    assert [json.loads(x)["what"] for x in str(apply["journal"]).splitlines()] == ["network-chaos"]
    assert delete["argv"] == ["--context", "staging", "delete", "networkchaos", "eosc-t1-cut-n1-to-n2-internal",
                              "-n", "kafka", "--ignore-not-found"]
    assert journal.open_changes() == []


def test_a_cluster_without_chaos_mesh_crds_is_refused_naming_the_node(tmp_path: Path, kubectl: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    inv = _load(tmp_path)
    b = node_heal.brokers_of(inv, tmp_path / "kh")[1]
    assert probe.chaos_mesh_problem(b) is None
    monkeypatch.setenv("FAKE_CRD_RC", "1")
    said = probe.chaos_mesh_problem(b)
    assert said is not None and "exited 1" in said and "podchaos.chaos-mesh.org" in said, said
    assert _calls(kubectl)[-1]["argv"] == ["--context", "staging", "get", "crd", "podchaos.chaos-mesh.org",
                                           "networkchaos.chaos-mesh.org"]


def _refusals(tmp_path: Path, faults: str) -> list[str]:
    sc = tmp_path / "sc.yaml"
    sc.write_text("name: mesh\ndescription: x\nduration: 30\nworkloads:\n  - {kind: txn-producer, count: 1}\n"
                  f"faults:\n{faults}")
    _load(tmp_path)
    return external_refusals(schedule.plan(scenario.load(str(sc)), 1), tmp_path / "pods.yaml", False)


def test_pause_and_latency_through_chaos_mesh_are_refused_at_load_and_kill_and_partition_are_not(tmp_path: Path) -> None:
    assert _refusals(tmp_path, "  - {kind: kill, at: 5, duration: 5, target: 1}\n") == []
    assert _refusals(tmp_path, "  - {kind: partition, at: 5, duration: 5, partition: isolate-node, "
                               "listeners: internal}\n") == []
    pause = _refusals(tmp_path, "  - {kind: pause, at: 5, duration: 5, target: 1}\n")
    assert len(pause) == 1 and "node 1 cannot pause, resume its broker: the chaos_mesh preset has no pause: Chaos " \
        "Mesh has no SIGSTOP action" in pause[0] and "pods.yaml:7)" in pause[0], pause
    latency = _refusals(tmp_path, "  - {kind: latency, at: 5, duration: 5, partition: isolate-node, "
                                  "listeners: internal}\n")
    assert latency and all("partitions only (NetworkChaos delay is not built)" in x for x in latency), latency


def test_a_dry_run_prints_each_manifest_and_kubectl_command_and_runs_nothing(tmp_path: Path, kubectl: Path) -> None:
    from typer.testing import CliRunner

    from harness.cli import app

    _load(tmp_path)
    sc = tmp_path / "sc.yaml"
    sc.write_text("name: mesh\ndescription: x\nduration: 30\nworkloads:\n  - {kind: txn-producer, count: 1}\nfaults:\n"
                  "  - {kind: kill, at: 5, duration: 5, target: 1}\n"
                  "  - {kind: partition, at: 15, duration: 5, partition: isolate-node, target: 1, listeners: internal}\n")
    r = CliRunner().invoke(app, ["run", str(sc), "--inventory", str(tmp_path / "pods.yaml"), "--dry-run", "--seed", "1"])
    assert r.exit_code == 0, r.output
    assert "kill node 1 kill: sh -c 'kubectl --context staging delete podchaos eosc-dryrun-kill-n1" in r.output, r.output
    assert "kubectl --context staging apply -f - <<'\"'\"'EOSC_MANIFEST'\"'\"'\napiVersion: chaos-mesh.org/v1alpha1\n" \
           "kind: PodChaos\n" in r.output, r.output
    assert "partition node 1 cut n1-to-n2-internal: sh -c" in r.output and "kind: NetworkChaos\n" in r.output, r.output
    assert ("partition node 1 heal n1-to-n2-internal: sh -c 'kubectl --context staging delete networkchaos "
            "eosc-dryrun-cut-n1-to-n2-internal -n kafka --ignore-not-found'") in r.output, r.output
    assert _calls(kubectl) == []


def test_a_kills_heal_deletes_the_podchaos_and_waits_for_the_pod_without_stopping_it_again(
        tmp_path: Path, kubectl: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from clusters.backends.external.external_cluster import ExternalCluster

    c = ExternalCluster(_load(tmp_path), tmp_path / "run", tmp_path / "toxiproxy", None)
    monkeypatch.setattr(probe, "listener_problem", lambda address, timeout: None)  # no broker behind the pod here
    c.journal.lock()
    try:
        c.kill(1)
        c.restart(1)  # the kill fault's heal
    finally:
        c.journal.unlock()
    verbs = [a["argv"][2:4] for a in _calls(kubectl)]  # type: ignore[index]
    assert ["delete", "pod"] not in verbs, verbs  # the remade pod is not stopped a second time
    assert verbs.count(["delete", "podchaos"]) == 2 and ["apply", "-f"] in verbs, verbs
    assert c.journal.open_changes() == []
