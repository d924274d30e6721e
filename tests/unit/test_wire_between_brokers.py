"""Wire faults on the links between brokers: a fault names the link (``link: n1-to-n2-internal``) or
its two ends by role (``target`` -> ``peer``), the rule goes to that link (a node's own link when
both ends are one node: the coordinator's markers to the partitions it leads), and what the
topology cannot carry out is refused when the scenario loads (exit 2). The links between brokers go
through the wire proxy only on a cluster that opted in (``Topology.wire_between_brokers``): a run
starts its own so, and refuses a cluster that is up without it (exit 2, naming the flag)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from chaos import faults
from clusters.backends import state
from clusters.backends.backends import Backend
from clusters.kafka.topology import Topology
from clusters.wire.wire_api import Rule
from harness.base.errors import ConfigError
from harness.run import runner, scenario
from tests.unit.test_cli import _restore_logging, cli  # noqa: F401 - the logging fixture applies to every test
from tests.unit.test_faults import events, nemesis, run_one  # noqa: F401 - events is a fixture
from tests.unit.test_scenario import _load_error

HEAD = "name: s\ndescription: x\nworkloads:\n  - kind: txn-producer\nduration: 30\nfaults:\n"
MARKERS_HELD = "  - {at: 5, kind: hold-requests, api: WriteTxnMarkers, link: n1-to-n2-internal}\n"


def routed(tmp_path: Path) -> tuple[Any, Any]:
    """The fake nemesis and cluster, the cluster's links between brokers through the wire proxy."""
    nem, cluster = nemesis(tmp_path)
    cluster.topology = Topology(wire_between_brokers=True)
    return nem, cluster


def test_the_coordinator_s_link_to_a_leader_gets_the_rule(tmp_path: Path, events: Any) -> None:  # noqa: F811
    nem, cluster = routed(tmp_path)
    nem.resolve = lambda target, of=None: {"coordinator": 2, "leader": 3}[str(target)]  # type: ignore[method-assign]
    run_one(nem, kind="hold-requests", api="WriteTxnMarkers", result="commit", peer="leader", peer_of="eos-a/1",
            hold_ms=60000)
    assert cluster.calls[0] == ("rule", Rule(apis=("WriteTxnMarkers",), action="hold", links=("n2-to-n3-internal",),
                                             hold_ms=60000, result="commit"))
    assert events()[0] == {"type": "info", "kind": "hold-requests", "phase": "start", "links": ["n2-to-n3-internal"],
                           "nodes": [2, 3], "target": "coordinator", "of": None, "api": ["WriteTxnMarkers"],
                           "peer": "leader", "peer_of": "eos-a/1", "result": "commit"}


def test_a_coordinator_that_leads_the_partition_itself_gets_the_rule_on_its_own_link(tmp_path: Path) -> None:
    nem, cluster = routed(tmp_path)
    nem.resolve = lambda target, of=None: 2  # type: ignore[method-assign]  # coordinator and leader: node 2
    run_one(nem, kind="drop-api-responses", api="WriteTxnMarkers", peer="leader")
    assert cluster.calls[0][1].links == ("n2-to-n2-internal",)


@pytest.mark.parametrize("fields, links", [
    ({"link": "n3-to-n1-controller", "api": "BrokerHeartbeat"}, ("n3-to-n1-controller",)),
    ({"target": 1, "peer": 2, "api": "Fetch"}, ("n1-to-n2-internal",)),
    ({"target": 1, "peer": 2, "listener": "controller", "api": "Fetch"}, ("n1-to-n2-controller",)),
])
def test_a_link_by_name_or_by_its_ends(tmp_path: Path, fields: dict[str, Any], links: tuple[str, ...]) -> None:
    nem, cluster = routed(tmp_path)
    run_one(nem, kind="hold-requests", **fields)
    assert cluster.calls[0][1].links == links


@pytest.mark.parametrize("fault, said", [
    ("{at: 5, kind: hold-requests, api: WriteTxnMarkers, link: n1-to-n4-internal}",
     "FILE:7: faults[0] (hold-requests at 5s): link: no link 'n1-to-n4-internal' in the 3-node cluster; links: "
     "client-to-n1, "),
    ("{at: 5, kind: hold-requests, api: Fetch, link: n1-to-n2-direct}", "no link 'n1-to-n2-direct'"),
    ("{at: 5, kind: hold-requests, api: Fetch, link: n1-to-n2-internal, peer: 2}",
     "link: n1-to-n2-internal names both ends; leave out peer"),
    ("{at: 5, kind: hold-requests, api: Fetch, peer: all}", "`all` names no single node"),
    ("{at: 5, kind: hold-requests, api: Fetch, peer_of: eos-a/0}", "peer_of: says what the peer's role is of"),
    ("{at: 5, kind: hold-requests, api: WriteTxnMarkers, peer: leader, peer_of: eos-z/0}",
     "faults[0] (hold-requests at 5s) peer_of: 'eos-z/0': 'eos-z' is not one of the scenario's topics"),
    ("{at: 5, kind: hold-requests, api: WriteTxnMarkers, transactional_id: t, peer: 2}",
     "WriteTxnMarkers requests do not carry it"),
    ("{at: 5, kind: error-responses, api: WriteTxnMarkers, peer: 2}", "cannot answer WriteTxnMarkers with an error"),
])
def test_what_the_topology_cannot_carry_out_is_refused_at_load(tmp_path: Path, fault: str, said: str) -> None:
    msg = _load_error(tmp_path, f"duration: 30\nfaults:\n  - {fault}\n")
    assert said in msg, msg


def test_a_coordinator_of_and_a_leader_peer_of_are_each_checked_as_their_own(tmp_path: Path) -> None:
    f = tmp_path / "sc.yaml"
    f.write_text(HEAD + "  - {at: 5, kind: hold-requests, api: WriteTxnMarkers, of: eos-txn-producer-0, peer: leader, "
                        "peer_of: eos-a/0}\n")
    r = cli("run", str(f), "--dry-run")
    assert r.exit_code == 0, r.output


def test_on_compose_a_fault_between_brokers_is_refused_before_anything_starts(tmp_path: Path) -> None:
    f = tmp_path / "sc.yaml"
    f.write_text(HEAD + "  - {at: 5, kind: hold-requests, api: WriteTxnMarkers, link: n1-to-n2-internal}\n")
    r = cli("run", str(f), "--dry-run", "--backend", "compose")
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    assert "faults[0] (hold-requests at 5s)" in r.output and "carries only the clients' links" in r.output, r.output
    assert cli("run", str(f), "--dry-run", "--backend", "local").exit_code == 0
    f.write_text(HEAD + "  - {at: 5, kind: hold-requests, api: EndTxn, link: client-to-n2}\n")
    assert cli("run", str(f), "--dry-run", "--backend", "compose").exit_code == 0


def test_on_a_cluster_that_did_not_opt_in_the_fault_fails_naming_the_flag_and_adds_no_rule(tmp_path: Path) -> None:
    nem, cluster = nemesis(tmp_path)  # Topology(): the default, clients' links only
    nem._guarded(scenario_fault("{at: 0, duration: 0.01, kind: hold-requests, api: Fetch, link: n1-to-n2-internal}"))
    assert any("without --wire-between-brokers" in e for e in nem.errors), nem.errors
    assert not [c for c in cluster.calls if c[0] == "rule"], cluster.calls


def scenario_fault(text: str) -> Any:
    return faults.parse(yaml.safe_load(text))


def _scenario(tmp_path: Path, fault: str = MARKERS_HELD) -> scenario.Scenario:
    f = tmp_path / "sc.yaml"
    f.write_text(HEAD + fault)
    return scenario.load(str(f))


def _record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wire_between_brokers: bool) -> None:
    """A local cluster `cluster up` left running (its record; no process is looked at: it is detached)."""
    monkeypatch.setenv("EOS_CHAOS_STATE", str(tmp_path / "state"))
    state.save(state.ClusterRecord(backend="local", cluster_id="c", run_dir=str(tmp_path / "up"), kafka_version="4.4.0",
                                   net=10, port_base=19092, api_port=18474, owner_pid=None,
                                   wire_between_brokers=wire_between_brokers))


def test_a_scenario_needs_the_routing_only_with_a_fault_between_brokers(tmp_path: Path) -> None:
    assert runner.needs_wire_between_brokers(_scenario(tmp_path))
    assert runner.needs_wire_between_brokers(_scenario(tmp_path, "  - {at: 5, kind: hold-requests, peer: leader}\n"))
    assert not runner.needs_wire_between_brokers(_scenario(tmp_path, "  - {at: 5, kind: hold-requests, api: EndTxn}\n"))
    assert not runner.needs_wire_between_brokers(
        _scenario(tmp_path, "  - {at: 5, kind: hold-requests, api: EndTxn, link: client-to-n2}\n"))
    assert not runner.needs_wire_between_brokers(_scenario(tmp_path, "  - {at: 5, kind: partition, target: 1, peer: 2}\n"))


def test_a_cluster_that_is_up_without_the_opt_in_is_refused_naming_the_flag(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    sc = _scenario(tmp_path)
    _record(tmp_path, monkeypatch, wire_between_brokers=False)
    with pytest.raises(ConfigError) as err:
        runner.cluster_that_is_up(Backend.local, sc)
    said = str(err.value)
    assert "faults[0] (hold-requests at 5s) acts on a link between brokers" in said, said
    assert "eos-chaos cluster up --wire-between-brokers" in said and "cluster down --backend local" in said, said
    # the same cluster serves a scenario without such a fault; one started with the opt-in serves this one
    assert runner.cluster_that_is_up(Backend.local, _scenario(tmp_path, "  - {at: 5, kind: kill, target: 1}\n"))
    _record(tmp_path, monkeypatch, wire_between_brokers=True)
    up = runner.cluster_that_is_up(Backend.local, sc)
    assert up is not None and up.topology.wire_between_brokers
    assert "n1-to-n2-internal" in [w.link.name for w in up.topology.wire_hops()]


def test_eos_chaos_run_on_such_a_cluster_exits_2_before_any_workload_starts(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    _record(tmp_path, monkeypatch, wire_between_brokers=False)
    monkeypatch.setenv("EOS_CHAOS_RESULTS", str(tmp_path / "results"))
    started: list[Any] = []
    monkeypatch.setattr(runner, "_run_on", lambda *a, **kw: started.append(a))
    monkeypatch.setattr("clusters.backends.backends.new_cluster", lambda *a, **kw: started.append(a))
    f = tmp_path / "sc.yaml"
    f.write_text(HEAD + MARKERS_HELD)
    r = cli("run", str(f), "--backend", "local")
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    assert "--wire-between-brokers" in r.output and "faults[0]" in r.output, r.output
    assert started == []


def test_a_run_starting_its_own_cluster_turns_the_routing_on_for_such_a_fault_only(tmp_path: Path,
                                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[dict[str, Any]] = []

    class Stop(Exception):
        pass

    def new_cluster(*a: Any, **kw: Any) -> Any:
        asked.append(kw)
        raise Stop

    monkeypatch.setattr("clusters.backends.backends.new_cluster", new_cluster)
    monkeypatch.setattr("clusters.backends.artifacts.ready", lambda kv: object())
    for fault, routed_ in ((MARKERS_HELD, True), ("  - {at: 5, kind: hold-requests, api: EndTxn}\n", False)):
        with pytest.raises(Stop):
            runner.run(_scenario(tmp_path, fault), Backend.local, 1, tmp_path / f"run-{routed_}", kafka_version="4.4.0",
                       attach=False, report=False)
        assert asked[-1]["wire_between_brokers"] is routed_


def test_a_cluster_given_without_the_opt_in_is_refused_and_a_shared_one_makes_way(tmp_path: Path,
                                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    sc = _scenario(tmp_path)
    _, given = nemesis(tmp_path)  # Topology(): no routing
    with pytest.raises(ConfigError, match="started without --wire-between-brokers"):
        runner.run(sc, Backend.local, 1, tmp_path / "run", cluster=given)
    calls: list[Any] = []
    given.stop = lambda: calls.append("stop")  # type: ignore[attr-defined]
    given.start = lambda: calls.append("start")  # type: ignore[attr-defined]
    monkeypatch.setattr(runner, "run", lambda *a, **kw: calls.append(("run", kw.get("attach"), kw.get("cluster"))))
    runner.run_on_shared(sc, Backend.local, 1, tmp_path / "run2", given)
    assert calls == ["stop", ("run", False, None), "start"]  # a cluster of its own, the shared one back after
    calls.clear()
    given.topology = Topology(wire_between_brokers=True)
    runner.run_on_shared(sc, Backend.local, 1, tmp_path / "run3", given)
    assert calls == [("run", None, given)]


def test_cluster_up_refuses_the_opt_in_on_compose_before_anything_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[Any] = []
    monkeypatch.setattr("clusters.backends.backends.new_cluster", lambda *a, **kw: started.append(a))
    monkeypatch.setattr("harness.cli.cluster.kafka_artifacts", lambda *a, **kw: started.append(a))
    r = cli("cluster", "up", "--backend", "compose", "--wire-between-brokers")
    assert r.exit_code == 2 and "--wire-between-brokers --backend compose" in r.output, r.output
    assert started == []


@pytest.mark.parametrize("routed_", [False, True])
def test_cluster_status_says_whether_the_links_between_brokers_go_through_the_wire_proxy(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, routed_: bool) -> None:
    _record(tmp_path, monkeypatch, wire_between_brokers=routed_)
    r = cli("cluster", "status", "--json")
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout)
    assert s["wire_between_brokers"] is routed_ and s["extra"]["wire_between_brokers"] is routed_, s
    said = cli("cluster", "status").output
    assert ("wire proxy: every link, between brokers too" in said) is routed_, said
    assert ("between brokers: cluster up --wire-between-brokers" in said) is not routed_, said
