"""What the hunt's seventh draw adds, without a cluster: request-aware faults on the links between
brokers (WriteTxnMarkers, the AddPartitionsToTxn verification, a follower's Fetch) at about one fault
in six, the same for a seed every time; every such scenario loads and needs the routing; the dry run
lists them; the clusters the hunt starts route those links when a drawn scenario needs it, a cluster
that is up without it makes way; a backend that cannot carry them draws none and says so; and
without them the draw is the sixth's, seed for seed. Their landings and late requests are counted apart."""

from __future__ import annotations

import collections
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from chaos.faults.wire import WIRE_LINKS
from harness.campaigns import hunt, hunt_brokers, hunt_landings, matrix
from harness.cli import app
from harness.run import runner, scenario
from harness.rundir.journal import FaultHit, FaultRun
from tests.unit.test_cli import WIDE, _restore_logging  # noqa: F401 - the fixture puts the loggers back
from tests.unit.test_matrix import FakeCluster, Fakes, _levels_supported, install_fakes  # noqa: F401 - autouse fixture

SEEDS = hunt.seeds(20261129, 200)
#: sha256 over the first 30 seeds' draws of master seed 20261129 (100 s; --apps drawn, then none), as
#: the sixth draw drew them (main before the seventh): --no-broker-faults must draw them so.
SIXTH_DRAW: dict[tuple[str, ...] | None, str] = {None: "e888c568f331c2bffb08bdf0d5b67efa03003a555cf9a96b4da85436f994d3c0",
              (): "b45b59cfd9cddfe50545fbd3c2e82a4df182e08d84e7bb35a8e95f99e41ab964"}


def cli(*args: str) -> Result:
    return CliRunner(env=WIDE).invoke(app, ["hunt", *args])


def _between(d: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in d["faults"] if hunt_brokers.between_brokers(f)]


@pytest.mark.parametrize("apps", [None, ()], ids=["apps-drawn", "apps-none"])
def test_without_broker_faults_the_draw_is_the_sixth_seed_for_seed(apps: tuple[str, ...] | None) -> None:
    h = hashlib.sha256()
    for s in SEEDS[:30]:
        h.update(json.dumps(hunt.draw(s, 100, apps, broker_faults=False), sort_keys=True).encode())
    assert h.hexdigest() == SIXTH_DRAW[apps]


def test_faults_between_brokers_are_about_one_in_six_the_same_every_time_and_of_every_api() -> None:
    faults = between = 0
    seen: collections.Counter[str] = collections.Counter()
    per_seed = []
    for s in SEEDS:
        d = hunt.draw(s, 100)
        assert d == hunt.draw(s, 100), "a seed draws the same scenario every time"
        mine = _between(d)
        faults, between = faults + len(d["faults"]), between + len(mine)
        per_seed.append(len(mine))
        for f in mine:
            seen[f"{f['kind']} {f['api']}"] += 1
            seen.update(k for k in ("result", "transactional_id", "min_producer_epoch") if k in f)
        assert f"({len(mine)} between brokers)" in str(d["description"])
    assert 0.12 <= between / faults <= 0.20, (between, faults)
    assert sorted(per_seed)[len(per_seed) // 2] >= 2, "a 100 s seed holds a few"
    want = {f"hold-requests {a}" for a in hunt_brokers.APIS} | {f"drop-api-responses {a}" for a in hunt_brokers.APIS}
    assert want | {"error-responses AddPartitionsToTxn", "result", "transactional_id", "min_producer_epoch"} <= set(seen)
    assert not _between(hunt.draw(SEEDS[0], 100, broker_faults=False))


def test_each_fault_between_brokers_names_a_link_its_api_travels_and_filters_its_requests_carry() -> None:
    checked = 0
    for s in SEEDS:
        d = hunt.draw(s, 100)
        topics = set(d["topics"])
        timeout_ms = d["workloads"][0]["client"]["request.timeout.ms"]
        for f in _between(d):
            if f["api"] == "Fetch":  # a follower's replication from a leader: two different nodes
                assert f["link"] in WIRE_LINKS and f["link"].endswith("-internal"), f
                follower, leader = f["link"].removesuffix("-internal").split("-to-")
                assert follower != leader, f
            elif f["api"] == "WriteTxnMarkers":
                assert (f["target"], f["peer"]) == ("coordinator", "leader") and f["peer_of"].split("/")[0] in topics, f
                assert f["kind"] != "error-responses", "the proxy cannot answer markers"
            else:
                assert (f["api"], f["target"], f["peer"]) == ("AddPartitionsToTxn", "leader", "coordinator"), f
                assert f["of"].split("/")[0] in topics, f
            if f["kind"] == "error-responses":
                assert f["error"] in hunt.RETRIABLE_ERRORS[f["api"]], f
            if f["kind"] == "drop-api-responses":  # the sender's 30 s wait ends before the quiet end
                assert f["at"] + hunt_brokers.BROKER_WAIT_S <= 100 - hunt.QUIET_END_S and f["count"] == 1, f
            if f["kind"] == "hold-requests":
                assert f["until"] == "timeout" and f["duration"] * 1000 >= f["hold_ms"] + 400, f
                assert f["hold_ms"] in {int(timeout_ms * x) for x in hunt.HOLD_SHARES}, f
            checked += 1
    assert checked > len(SEEDS), "a few a seed"


def test_every_scenario_with_one_loads_and_needs_the_routing_and_the_others_do_not(tmp_path: Path) -> None:
    needs = []
    for s, path in zip(SEEDS[:25], hunt.write_scenarios(tmp_path, SEEDS[:25], 60), strict=True):
        sc = scenario.load(str(path))  # filters against the APIs, link names, peer_of among the topics
        needs.append(runner.needs_wire_between_brokers(sc))
        assert needs[-1] == bool(_between(hunt.draw(s, 60))), s
    assert any(needs) and not all(needs)


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Fakes:
    f = install_fakes(monkeypatch, tmp_path)
    fake = matrix.level_cluster

    def level_cluster(backend: Any, arts: Any, run_dir: Path, level: Any, overrides: dict[str, str],
                      wire_between_brokers: bool = False) -> Any:
        f.events.append(f"routed {wire_between_brokers}")  # what the cluster start was asked
        return fake(backend, arts, run_dir, level, overrides, wire_between_brokers)

    monkeypatch.setattr(matrix, "level_cluster", level_cluster)
    return f


def test_the_dry_run_lists_each_seeds_faults_between_brokers_and_the_routed_cluster(fakes: Fakes) -> None:
    r = cli("--seeds", "4", "--seed", "5", "--duration", "60", "--dry-run")
    assert r.exit_code == 0, r.output
    drawn = [hunt.draw(s, 60) for s in hunt.seeds(5, 4)]
    assert r.output.count("  between brokers: at ") == sum(map(len, map(_between, drawn))) > 0
    assert "WriteTxnMarkers" in r.output or "AddPartitionsToTxn" in r.output or "Fetch" in r.output
    assert "its links between brokers through the wire proxy: started for its runs" in r.output
    off = cli("--seeds", "4", "--seed", "5", "--duration", "60", "--dry-run", "--no-broker-faults")
    assert off.exit_code == 0 and "between brokers" not in off.output, off.output


def test_the_hunt_starts_its_cluster_with_the_routing_only_when_a_seed_needs_it(fakes: Fakes, tmp_path: Path) -> None:
    r = cli("--seeds", "3", "--seed", "5", "--duration", "60", "--out", str(tmp_path / "on"))
    assert r.exit_code == 0, r.output
    assert fakes.events[:2] == ["routed True", "start tv-default"], fakes.events
    fakes.events.clear()
    r = cli("--seeds", "3", "--seed", "5", "--duration", "60", "--out", str(tmp_path / "off"), "--no-broker-faults")
    assert r.exit_code == 0, r.output
    assert fakes.events[:2] == ["routed False", "start tv-default"], fakes.events


def test_a_cluster_that_is_up_without_the_routing_makes_way_and_one_with_it_runs_them(fakes: Fakes, tmp_path: Path) -> None:
    fakes.shared = FakeCluster("tv-default shared", fakes.events)
    r = cli("--seeds", "3", "--seed", "5", "--duration", "60", "--out", str(tmp_path / "a"))
    assert r.exit_code == 0, r.output
    assert fakes.events == ["stop tv-default shared", "routed True", "start tv-default", "stop tv-default",
                            "start tv-default shared"], "a run on it would be refused: it makes way"
    fakes.events.clear()
    fakes.shared = FakeCluster("tv-default shared", fakes.events, wire_between_brokers=True)
    r = cli("--seeds", "3", "--seed", "5", "--duration", "60", "--out", str(tmp_path / "b"))
    assert r.exit_code == 0 and fakes.events == [], (r.output, fakes.events)


def test_a_backend_that_cannot_carry_them_draws_none_says_why_and_refuses_the_flag(fakes: Fakes, tmp_path: Path) -> None:
    r = cli("--seeds", "3", "--seed", "5", "--duration", "60", "--backend", "compose", "--dry-run")
    assert r.exit_code == 0, r.output
    assert "faults between brokers are not drawn: the compose backend's wire proxy carries only the clients' links" in r.output
    assert "  between brokers: at " not in r.output and "through the wire proxy" not in r.output
    bad = cli("--seeds", "1", "--backend", "compose", "--broker-faults", "--out", str(tmp_path / "h"))
    assert bad.exit_code == 2 and "--broker-faults: the compose backend's wire proxy" in bad.output, bad.output
    assert fakes.runs == [] and not (tmp_path / "h").exists()
    assert [hunt_brokers.drawn_on(b) for b in ("local", "compose", "external")] == [True, False, False]


def _wire_fault(api: str, links: list[str], txns_open: int) -> FaultRun:
    return FaultRun(kind="hold-requests", planned=0, start_s=10.0, end_s=12.0,
                    detail={"api": [api], "links": links, "target": "coordinator"},
                    hit=FaultHit(aimed_at="x", txns_open=txns_open, requests={"hold": 1}, hit=True))


def test_faults_between_brokers_land_under_names_of_their_own() -> None:
    """A verification held between brokers is not a client's AddPartitionsToTxn: the summary counts them apart."""
    markers = _wire_fault("WriteTxnMarkers", ["n2-to-n1-internal"], 1)
    verify = _wire_fault("AddPartitionsToTxn", ["n1-to-n1-internal"], 1)
    client = _wire_fault("AddPartitionsToTxn", ["client-to-n1"], 1)
    assert [hunt_landings.label(f) for f in (markers, verify, client)] == [
        "hold-requests WriteTxnMarkers between brokers", "hold-requests AddPartitionsToTxn between brokers",
        "hold-requests AddPartitionsToTxn"]
    assert [hunt_landings.between_brokers(f) for f in (markers, verify, client)] == [True, True, False]
    outside = _wire_fault("Fetch", ["n2-to-n3-internal"], 0)  # its clean twin: no transaction open
    assert hunt_landings.inside_transaction(markers) and not hunt_landings.inside_transaction(outside)
    x = hunt_landings.Landings(4, 4, 0, {"hold-requests WriteTxnMarkers between brokers": 1,
                                         "hold-requests AddPartitionsToTxn": 2}, between_brokers=2)
    assert (x.landed, x.landed_between_brokers) == (3, 1)
    assert hunt_landings.to_json(x)["between_brokers"] == 2
    line = hunt._searched({"seeds": 1, "faults": 4, "in_transaction": 3, "median_in_transaction": 3,
                           "seeds_without_landing": 0, "by_fault": {}, "between_brokers": 2,
                           "between_brokers_in_transaction": 1})[0]
    assert "Of the faults, 2 were between brokers, and 1 of those landed inside an open transaction." in line


def test_a_request_held_between_brokers_is_late_only_when_its_broker_left(tmp_path: Path) -> None:
    """A broker waits 30 s: a marker held 5 s past the clients' 1 s timeout was not given up on (its
    twin on a client's link was); one whose sending broker closed its connection was."""
    (tmp_path / "scenario.json").write_text(json.dumps({"workloads": [
        {"kind": "txn-producer", "client": {"request.timeout.ms": 1000}}]}))
    events = [{"event": "deliver", "api": "WriteTxnMarkers", "link": "n2-to-n1-internal", "held_ms": 5000,
               "client_gone": False, "unix_us": 1},
              {"event": "deliver", "api": "AddPartitionsToTxn", "link": "n1-to-n2-internal", "held_ms": 300,
               "client_gone": True, "unix_us": 1},
              {"event": "deliver", "api": "AddPartitionsToTxn", "link": "client-to-n2", "held_ms": 5000,
               "client_gone": False, "unix_us": 1}]
    (tmp_path / "wire-events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    assert hunt.late_requests(tmp_path) == {"AddPartitionsToTxn": 1, "AddPartitionsToTxn between brokers": 1}


def test_on_the_external_backend_none_are_drawn_and_asking_for_them_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """An external cluster's brokers reach each other directly: its wire proxy fronts the clients only."""
    from clusters.backends.backends import Backend
    from harness.base.errors import ConfigError
    from harness.cli import hunt as hunt_cli

    assert hunt_cli._broker_faults(None, Backend.external) is False
    assert "not drawn: the external backend's wire proxy carries only the clients' links" in capsys.readouterr().out
    with pytest.raises(ConfigError, match="--broker-faults: the external backend's wire proxy") as info:
        hunt_cli._broker_faults(True, Backend.external)
    assert info.value.exit_code == 2
    assert [hunt_cli._broker_faults(a, Backend.local) for a in (None, True, False)] == [True, True, False]
    assert hunt_cli._broker_faults(False, Backend.external) is False


def test_a_dry_run_on_an_earlier_hunts_folder_prints_what_its_files_hold(fakes: Fakes, tmp_path: Path) -> None:
    """A resume keeps the scenario files its folder holds (a sixth-draw hunt's, say): its dry run
    prints those, not what this version draws for the seeds."""
    out = tmp_path / "h"
    r = cli("--seeds", "4", "--seed", "5", "--duration", "60", "--out", str(out), "--no-broker-faults")
    assert r.exit_code == 0, r.output
    dry = cli("--seeds", "4", "--duration", "60", "--out", str(out), "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert "between brokers" not in dry.output and dry.output.count(": Drawn by eos-chaos hunt from seed") == 4
    assert any(_between(hunt.draw(s, 60)) for s in hunt.seeds(5, 4)), "this version draws some for them"
    more = cli("--seeds", "6", "--duration", "60", "--out", str(out), "--dry-run")
    new = [s for s in hunt.seeds(5, 6)[4:] if _between(hunt.draw(s, 60))]
    assert all(f"hunt-{s}.yaml: Drawn by eos-chaos hunt from seed {s}: " in more.output for s in new)
    assert more.output.count("  between brokers: at ") == sum(len(_between(hunt.draw(s, 60))) for s in new)
