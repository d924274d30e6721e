from pathlib import Path

import yaml

from clusters.backends.compose.plan import LABELS, ComposePlan, _env_name, compose_yaml, toxiproxy_json
from clusters.kafka.topology import Listener

HERE = Path(__file__).resolve().parents[2] / "clusters" / "backends" / "compose"


def test_committed_compose_file_is_the_rendered_plan():
    assert (HERE / "docker-compose.yml").read_text() == compose_yaml(), "re-render clusters/backends/compose/docker-compose.yml"
    assert (HERE / "toxiproxy.json").read_text() == toxiproxy_json()


def test_env_names_follow_the_apache_kafka_image_convention():
    assert _env_name("node.id") == "KAFKA_NODE_ID"
    assert _env_name("transaction.state.log.min.isr") == "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR"
    assert _env_name("a_b.c-d") == "KAFKA_A__B_C___D"


def test_each_broker_resolves_peers_to_toxiproxy_on_its_own_network():
    plan = ComposePlan()
    data = plan.compose()
    b2 = data["services"]["broker-2"]
    assert sorted(b2["extra_hosts"]) == ["kafka-1:10.213.2.254", "kafka-2:127.0.0.1", "kafka-3:10.213.2.254"]
    assert set(b2["networks"]) == {"core", "src2"}
    tox = data["services"]["toxiproxy"]
    assert tox["networks"]["src2"] == {"ipv4_address": "10.213.2.254"}


def test_proxies_listen_per_source_network_and_name_the_destination_by_port():
    plan = ComposePlan()
    cfg = {p["name"]: p for p in plan.toxiproxy_config()}
    assert len(cfg) == 15
    assert cfg["n1-to-n2-internal"]["listen"] == f"10.213.1.254:{plan.port(2, Listener.INTERNAL)}"
    assert cfg["n3-to-n2-internal"]["listen"] == f"10.213.3.254:{plan.port(2, Listener.INTERNAL)}"
    assert cfg["n3-to-n2-internal"]["upstream"] == f"broker-2:{plan.port(2, Listener.INTERNAL)}"
    assert cfg["client-to-n3"]["listen"] == f"0.0.0.0:{plan.port(3, Listener.CLIENT)}"


def test_everything_is_published_on_loopback_only_and_labelled():
    data = yaml.safe_load(compose_yaml())
    for name, svc in data["services"].items():
        assert all(p.startswith("127.0.0.1:") for p in svc.get("ports", [])), name
        assert svc["labels"] == LABELS
    assert all(net["labels"] == LABELS for net in data["networks"].values())
    # cluster id and owner pid come from the environment, so a later start can tell leftovers apart
    assert LABELS["eos-chaos.cluster"].startswith("${EOS_CLUSTER_ID") and LABELS["eos-chaos.owner"].startswith("${EOS_CHAOS_OWNER")
    assert LABELS["eos-chaos.state"] == "${EOS_CHAOS_STATE:-}"


def test_broker_overrides_come_last_and_reach_every_broker():
    plan = ComposePlan(overrides=(("num.network.threads", "1"), ("log.dirs", "/elsewhere")))
    for n in (1, 2, 3):
        env = plan.broker_env(n)
        assert env["KAFKA_NUM_NETWORK_THREADS"] == "1" and env["KAFKA_LOG_DIRS"] == "/elsewhere"


def test_advertised_listeners_route_clients_through_proxies_and_peers_by_name():
    env = ComposePlan().broker_env(3)
    assert env["KAFKA_ADVERTISED_LISTENERS"] == (
        "CLIENT://127.0.0.1:29112,INTERNAL://kafka-3:29113,CONTROLLER://kafka-3:29114,DIRECT://127.0.0.1:29115"
    )
    assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"] == "1@kafka-1:29094,2@kafka-2:29104,3@kafka-3:29114"


def test_client_links_go_through_the_wire_proxy_behind_toxiproxy() -> None:
    plan = ComposePlan()
    cfg = {p["name"]: p for p in plan.toxiproxy_config()}
    port = plan.port(2, Listener.CLIENT)
    assert cfg["client-to-n2"]["upstream"] == f"wire:{port}"  # Toxiproxy -> wire proxy -> broker
    wire = plan.compose()["services"]["wire"]
    assert f"-link=client-to-n2=0.0.0.0:{port}=broker-2:{port}" in wire["command"]
    assert wire["entrypoint"] == ["/kwire"] and wire["networks"] == {"core": {}}
    assert wire["ports"] == [f"127.0.0.1:{plan.api_port + 1}:{plan.api_port + 1}"] and plan.wire_url.endswith(str(plan.api_port + 1))
    assert ("127.0.0.1:28475", "wire proxy API") in plan.host_binds()
