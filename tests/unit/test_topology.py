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


def test_every_listening_address_is_unique_and_on_loopback():
    binds = [addr for addr, _ in Topology().all_binds()]
    assert len(binds) == len(set(binds)) == 3 * 4 + 15 + 1 + 3 + 1  # + the wire proxy's hops and API
    assert all(addr.startswith("127.") for addr in binds)


def test_bootstraps():
    topo = Topology(port_base=20000)
    assert topo.bootstrap == "127.10.0.1:20000,127.10.0.2:20000,127.10.0.3:20000"
    assert topo.direct_bootstrap == "127.10.1.1:20003,127.10.2.2:20003,127.10.3.3:20003"
    assert topo.toxiproxy_url == "http://127.10.0.254:18474"


def test_unknown_link_is_an_error_listing_the_links():
    with pytest.raises(KeyError, match="n1-to-n2-internal"):
        Topology().link(1, 1, Listener.INTERNAL)
