import pytest

from clusters.kafka.topology import Listener, Topology


def test_every_directed_link_has_its_own_proxy():
    topo = Topology()
    names = [link.name for link in topo.links]
    # 3 client links + 6 ordered broker pairs on INTERNAL + 6 on CONTROLLER
    assert len(names) == 15 == len(set(names))
    assert "client-to-n2" in names
    assert "n1-to-n2-internal" in names and "n2-to-n1-internal" in names
    assert "n3-to-n1-controller" in names
    assert not any(n.startswith("n1-to-n1") for n in names)


def test_proxy_addresses_differ_per_source_and_point_at_the_real_socket():
    """The default: the wire proxy carries the clients' links only, and the links between brokers
    lead from Toxiproxy straight to the node's socket (the layout before faults between brokers)."""
    topo = Topology()
    p12 = topo.proxy(topo.link(1, 2, Listener.INTERNAL))
    p32 = topo.proxy(topo.link(3, 2, "internal"))
    assert p12.listen == "127.10.1.2:19093" and p32.listen == "127.10.3.2:19093"
    assert p12.upstream == p32.upstream == topo.bind(2, Listener.INTERNAL) == "127.10.2.2:19093"
    client = topo.proxy(topo.link("client", 3))
    wire = topo.wire(topo.link("client", 3))
    # client -> Toxiproxy -> wire proxy -> node 3's CLIENT socket
    assert client.listen == "127.10.0.3:19092" and client.upstream == wire.listen == "127.10.250.3:19092"
    assert wire.upstream == topo.bind(3, Listener.CLIENT) == "127.10.3.3:19092"
    assert [w.link.name for w in topo.wire_hops()] == ["client-to-n1", "client-to-n2", "client-to-n3"]
    assert topo.wire_url == "http://127.10.0.253:18475"
    with pytest.raises(ValueError, match="only the clients' links"):
        topo.wire(topo.link(1, 2))


def test_the_default_routes_no_link_between_brokers_through_the_wire_proxy_and_the_opt_in_routes_every_one():
    off, on = Topology(), Topology(wire_between_brokers=True)
    brokers = [lk for lk in off.links if lk.src != 0]
    assert len(brokers) == 12 and off.links == on.links  # Toxiproxy's links are the same either way
    # off: each Toxiproxy proxy between brokers leads to the node's socket; no wire hop, no self hop
    assert all(off.proxy(lk).upstream == off.bind(lk.dst, lk.listener) for lk in brokers)
    assert [lk.name for lk in off.wire_links] == ["client-to-n1", "client-to-n2", "client-to-n3"]
    assert all(off.resolved(n, n) == off.ip(n, n) == off.bind(n, Listener.INTERNAL).split(":")[0] for n in off.node_ids)
    assert not any(addr.startswith("127.10.24") for addr, _ in off.all_binds())
    # on: each leads to its wire hop, which leads to the node's socket; and each node's links to itself
    assert all(on.proxy(lk).upstream == on.wire(lk).listen != on.bind(lk.dst, lk.listener) for lk in brokers)
    assert all(on.wire(lk).upstream == on.bind(lk.dst, lk.listener) for lk in brokers)
    assert set(on.wire_links) == set(off.links) | set(on.self_links) and len(on.self_links) == 6
    assert all(on.resolved(n, n) == f"127.10.{240 + n}.{n}" for n in on.node_ids)
    with pytest.raises(KeyError, match="without --wire-between-brokers"):
        off.named("n1-to-n2-internal")
    with pytest.raises(KeyError, match="without --wire-between-brokers"):
        off.link(2, 2, "internal", wire=True)


def test_with_wire_between_brokers_the_links_between_brokers_lead_through_the_wire_proxy():
    topo = Topology(wire_between_brokers=True)
    p12 = topo.proxy(topo.link(1, 2, Listener.INTERNAL))
    p32 = topo.proxy(topo.link(3, 2, "internal"))
    assert p12.listen == "127.10.1.2:19093" and p32.listen == "127.10.3.2:19093"
    # broker 1 -> Toxiproxy n1-to-n2-internal -> wire proxy n1-to-n2-internal -> node 2's INTERNAL socket
    w12, w32 = topo.wire(p12.link), topo.wire(p32.link)
    assert p12.upstream == w12.listen == "127.10.241.2:19093" and p32.upstream == w32.listen == "127.10.243.2:19093"
    assert w12.upstream == w32.upstream == topo.bind(2, Listener.INTERNAL) == topo.direct(p12.link) == "127.10.2.2:19093"
    c31 = topo.proxy(topo.link(3, 1, "controller"))
    assert c31.upstream == topo.wire(c31.link).listen == "127.10.243.1:19094"
    assert topo.wire(c31.link).upstream == "127.10.1.1:19094"
    client = topo.proxy(topo.link("client", 3))
    assert client.upstream == topo.wire(topo.link("client", 3)).listen == "127.10.250.3:19092"
    names = [w.link.name for w in topo.wire_hops()]
    assert names[:3] == ["client-to-n1", "client-to-n2", "client-to-n3"] and len(names) == len(set(names)) == 15 + 6
    assert {"n1-to-n2-internal", "n3-to-n1-controller", "n2-to-n2-internal", "n2-to-n2-controller"} <= set(names)


def test_a_nodes_link_to_itself_goes_through_the_wire_proxy_only():
    """The coordinator's markers to partitions it leads itself: its hosts file sends its own name to
    the wire proxy's self hop (INTERNAL and CONTROLLER on one address), which leads to its real socket."""
    topo = Topology(wire_between_brokers=True)
    self2 = topo.named("n2-to-n2-internal")
    assert self2 == topo.link(2, 2, "internal", wire=True)
    hop = topo.wire(self2)
    assert hop.listen == "127.10.242.2:19093" and hop.upstream == topo.bind(2, Listener.INTERNAL)
    assert topo.resolved(2, 2) == "127.10.242.2" == hop.listen.split(":")[0]
    assert topo.wire(topo.named("n2-to-n2-controller")).listen == "127.10.242.2:19094"
    assert topo.resolved(2, 3) == "127.10.2.3"  # a peer: its Toxiproxy proxy
    assert self2 not in topo.links  # Toxiproxy has no proxy for it
    with pytest.raises(ValueError, match="no Toxiproxy hop"):
        topo.proxy(self2)
    with pytest.raises(KeyError, match="n2-to-n2-internal"):
        topo.link(2, 2, "internal")


def test_a_link_by_name_is_one_of_the_wire_links_or_a_key_error_listing_them():
    topo = Topology(wire_between_brokers=True)
    assert topo.named("client-to-n3").dst == 3 and topo.named("n3-to-n1-controller").listener is Listener.CONTROLLER
    for bad in ("n1-to-n4-internal", "n1-to-n2-direct", "client-to-n1-internal", "n1-n2"):
        with pytest.raises(KeyError, match="n1-to-n2-internal"):
            topo.named(bad)


def test_node_ids_beyond_the_wire_proxys_address_plan_are_refused():
    with pytest.raises(ValueError, match="up to 9"):
        Topology(node_ids=(1, 2, 10), wire_between_brokers=True)


def test_every_listening_address_is_unique_and_on_loopback():
    binds = [addr for addr, _ in Topology().all_binds()]
    assert len(binds) == len(set(binds)) == 3 * 4 + 15 + 1 + 3 + 1  # + the wire proxy's hops and API
    assert all(addr.startswith("127.") for addr in binds)
    binds = [addr for addr, _ in Topology(wire_between_brokers=True).all_binds()]
    # nodes' sockets + Toxiproxy's proxies and API + the wire proxy's hops (15 links, 6 self links) and API
    assert len(binds) == len(set(binds)) == 3 * 4 + 15 + 1 + 15 + 6 + 1
    assert all(addr.startswith("127.") for addr in binds)


def test_bootstraps():
    topo = Topology(port_base=20000)
    assert topo.bootstrap == "127.10.0.1:20000,127.10.0.2:20000,127.10.0.3:20000"
    assert topo.direct_bootstrap == "127.10.1.1:20003,127.10.2.2:20003,127.10.3.3:20003"
    assert topo.toxiproxy_url == "http://127.10.0.254:18474"


def test_unknown_link_is_an_error_listing_the_links():
    with pytest.raises(KeyError, match="n1-to-n2-internal"):
        Topology().link(1, 1, Listener.INTERNAL)
