"""Wire faults on the links between brokers: a fault names the link (``link: n1-to-n2-internal``) or
its two ends by role (``target`` -> ``peer``), the rule goes to that link (a node's own link when
both ends are one node: the coordinator's markers to the partitions it leads), and what the
topology cannot carry out is refused when the scenario loads (exit 2)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clusters.wire.wire_api import Rule
from tests.unit.test_cli import _restore_logging, cli  # noqa: F401 - the logging fixture applies to every test
from tests.unit.test_faults import events, nemesis, run_one  # noqa: F401 - events is a fixture
from tests.unit.test_scenario import _load_error

HEAD = "name: s\ndescription: x\nworkloads:\n  - kind: txn-producer\nduration: 30\nfaults:\n"


def test_the_coordinator_s_link_to_a_leader_gets_the_rule(tmp_path: Path, events: Any) -> None:  # noqa: F811
    nem, cluster = nemesis(tmp_path)
    nem.resolve = lambda target, of=None: {"coordinator": 2, "leader": 3}[str(target)]  # type: ignore[method-assign]
    run_one(nem, kind="hold-requests", api="WriteTxnMarkers", result="commit", peer="leader", peer_of="eos-a/1",
            hold_ms=60000)
    assert cluster.calls[0] == ("rule", Rule(apis=("WriteTxnMarkers",), action="hold", links=("n2-to-n3-internal",),
                                             hold_ms=60000, result="commit"))
    assert events()[0] == {"type": "info", "kind": "hold-requests", "phase": "start", "links": ["n2-to-n3-internal"],
                           "nodes": [2, 3], "target": "coordinator", "of": None, "api": ["WriteTxnMarkers"],
                           "peer": "leader", "peer_of": "eos-a/1", "result": "commit"}


def test_a_coordinator_that_leads_the_partition_itself_gets_the_rule_on_its_own_link(tmp_path: Path) -> None:
    nem, cluster = nemesis(tmp_path)
    nem.resolve = lambda target, of=None: 2  # type: ignore[method-assign]  # coordinator and leader: node 2
    run_one(nem, kind="drop-api-responses", api="WriteTxnMarkers", peer="leader")
    assert cluster.calls[0][1].links == ("n2-to-n2-internal",)


@pytest.mark.parametrize("fields, links", [
    ({"link": "n3-to-n1-controller", "api": "BrokerHeartbeat"}, ("n3-to-n1-controller",)),
    ({"target": 1, "peer": 2, "api": "Fetch"}, ("n1-to-n2-internal",)),
    ({"target": 1, "peer": 2, "listener": "controller", "api": "Fetch"}, ("n1-to-n2-controller",)),
])
def test_a_link_by_name_or_by_its_ends(tmp_path: Path, fields: dict[str, Any], links: tuple[str, ...]) -> None:
    nem, cluster = nemesis(tmp_path)
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
