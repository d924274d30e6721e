from pathlib import Path

from clusters.kafka import render
from clusters.kafka.topology import Topology


def props(node: int = 2, **overrides: str) -> dict[str, str]:
    return render.server_properties(Topology(), node, Path("/data"), overrides)


def test_kraft_combined_with_static_voters_through_names():
    p = props()
    assert p["process.roles"] == "broker,controller"
    assert p["node.id"] == "2"
    assert p["controller.quorum.voters"] == "1@kafka-1:19094,2@kafka-2:19094,3@kafka-3:19094"
    assert p["controller.listener.names"] == "CONTROLLER"
    assert p["inter.broker.listener.name"] == "INTERNAL"


def test_durability_settings_from_design():
    p = props()
    assert p["default.replication.factor"] == "3"
    assert p["min.insync.replicas"] == "2"
    assert p["unclean.leader.election.enable"] == "false"
    assert p["transaction.state.log.replication.factor"] == "3"
    assert p["transaction.state.log.min.isr"] == "2"
    assert p["offsets.topic.replication.factor"] == "3"
    assert p["group.initial.rebalance.delay.ms"] == "0"


def test_listeners_bind_the_real_socket_and_advertise_per_listener_routes():
    p = props(node=2)
    assert p["listeners"] == (
        "CLIENT://127.10.2.2:19092,INTERNAL://127.10.2.2:19093,CONTROLLER://127.10.2.2:19094,DIRECT://127.10.2.2:19095"
    )
    # clients reach node 2 through their proxy; peers by name (per-source hosts file); DIRECT is the real socket
    assert p["advertised.listeners"] == (
        "CLIENT://127.10.0.2:19092,INTERNAL://kafka-2:19093,CONTROLLER://kafka-2:19094,DIRECT://127.10.2.2:19095"
    )


def test_overrides_win():
    assert props(**{"min.insync.replicas": "1"})["min.insync.replicas"] == "1"


def test_hosts_file_routes_peers_through_this_nodes_proxies_and_itself_directly():
    lines = render.hosts_file(Topology(), 3).splitlines()
    assert "127.10.3.1 kafka-1" in lines
    assert "127.10.3.2 kafka-2" in lines
    assert "127.10.3.3 kafka-3" in lines  # itself: its own real socket
    assert lines[0] == "127.0.0.1 localhost"


def test_hosts_file_with_wire_between_brokers_routes_itself_through_the_wire_proxy():
    lines = render.hosts_file(Topology(wire_between_brokers=True), 3).splitlines()
    assert "127.10.3.1 kafka-1" in lines and "127.10.3.2 kafka-2" in lines
    assert "127.10.243.3 kafka-3" in lines  # itself: the wire proxy's self hop n3-to-n3-*, not its real socket


def test_properties_file_format_round_trips():
    text = render.format_properties({"a.b": "1", "c": "x,y"})
    assert text == "a.b=1\nc=x,y\n"


def test_log4j2_writes_to_the_given_file():
    text = render.log4j2_properties(Path("/run/nodes/n1/server.log"))
    assert "appender.file.fileName = /run/nodes/n1/server.log" in text
