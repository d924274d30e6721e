"""The address plan of a local cluster: who listens where, and which proxy carries which link.

Every directed link has its own Toxiproxy proxy, so a fault can cut or slow exactly one direction
of one pair. Kafka advertises one address per listener to everybody, so the route must differ by
*source*. We give every (source, destination) pair its own loopback address::

    127.<net>.<src>.<dst>    src 0 = the clients, 1..3 = broker src; dst = node id

``127.<net>.<n>.<n>`` (source n talking to itself) is node n's real socket. Everything else is a
proxy listening on behalf of source ``src`` in front of node ``dst``. Brokers resolve the peer
names ``kafka-<dst>`` through their own hosts file (``-Djdk.net.hosts.file``) to
``127.<net>.<self>.<dst>``; clients get IP addresses advertised on the CLIENT listener
(``127.<net>.0.<dst>``), which are the client proxies. DIRECT is advertised as the real socket and
never faulted. All of 127.0.0.0/8 routes to the loopback interface on Linux, so no set-up is needed.

The clients' links go through the wire proxy too (clusters/wire/kwire/, docs/WIRE-FAULTS.md), chained
behind Toxiproxy: client -> Toxiproxy ``127.<net>.0.<dst>`` -> wire proxy ``127.<net>.250.<dst>``
-> node ``dst``'s CLIENT socket. Advertised addresses do not change; the wire proxy only adds a hop.

With ``wire_between_brokers`` (opt-in per cluster: ``cluster up --wire-between-brokers``, or a run whose
scenario has a request-aware fault between brokers) the links between brokers do as well: broker
``src`` -> Toxiproxy ``127.<net>.<src>.<dst>`` -> wire proxy ``127.<net>.<240+src>.<dst>`` -> node
``dst``'s INTERNAL or CONTROLLER socket. A broker's connections to itself (a coordinator's
WriteTxnMarkers to the partitions it leads, its broker half's requests to its own active controller)
then go through the wire proxy too, with no Toxiproxy hop: node n's hosts file gives its own name
``kafka-<n>`` the wire proxy's self hop ``127.<net>.<240+n>.<n>``, whose upstream is node n's real
socket. These self links (``n1-to-n1-internal``) are wire links only (``wire_links``), not
Toxiproxy's (``links``): a network fault never cuts a node off from itself. Without it (the
default) every address and hop is as if the option did not exist.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

CLIENT_SOURCE = 0
#: The second octet of every address we use; away from 127.0.0.1 so a user's own services do not collide.
DEFAULT_NET = 10
#: Ports of node listeners (same on every node, since each node has its own address).
DEFAULT_PORT_BASE = 19092
#: A port base for every cluster this process (and its children) starts without one asked
#: (``backends.default_port_base``): a second cluster beside one that is up.
PORT_BASE_ENV = "EOS_CHAOS_PORT_BASE"
#: The port bases allowed (and ``--eos-port-base``'s): the Toxiproxy API sits ~600 below the base,
#: and each xdist worker adds 100 (16 workers fit below 65535 with the cluster's own ports).
MIN_PORT_BASE, MAX_PORT_BASE = 2000, 60000
TOXIPROXY_API_HOST_OCTET = 254
TOXIPROXY_API_PORT = 18474
#: The third octet of the wire proxy's listeners (``127.<net>.250.<dst>``), and its API's host octet.
WIRE_SOURCE = 250
WIRE_API_HOST_OCTET = 253
#: The third octet of a broker link's wire hop is this plus the source node id
#: (``127.<net>.<240+src>.<dst>``): below ``WIRE_SOURCE``, so node ids up to 9 fit.
WIRE_PEER_BASE = 240
MAX_WIRE_NODE_ID = WIRE_SOURCE - WIRE_PEER_BASE - 1


class Listener(str, enum.Enum):
    CLIENT = "CLIENT"
    INTERNAL = "INTERNAL"
    CONTROLLER = "CONTROLLER"
    DIRECT = "DIRECT"

    @property
    def offset(self) -> int:
        return _PORT_OFFSETS[self]


_PORT_OFFSETS = {Listener.CLIENT: 0, Listener.INTERNAL: 1, Listener.CONTROLLER: 2, Listener.DIRECT: 3}
#: Listeners whose links go through proxies; DIRECT never does.
PROXIED = (Listener.CLIENT, Listener.INTERNAL, Listener.CONTROLLER)


@dataclass(frozen=True)
class Link:
    """One directed link: connections that ``src`` opens to ``dst`` on ``listener``."""

    src: int  # 0 = clients
    dst: int
    listener: Listener

    @property
    def name(self) -> str:
        """The Toxiproxy proxy name, e.g. ``client-to-n1`` or ``n2-to-n3-internal``."""
        if self.src == CLIENT_SOURCE:
            return f"client-to-n{self.dst}"
        return f"n{self.src}-to-n{self.dst}-{self.listener.value.lower()}"


@dataclass(frozen=True)
class Proxy:
    link: Link
    listen: str  # host:port
    upstream: str  # host:port


@dataclass(frozen=True)
class Topology:
    """Addresses and links of an N-node cluster; pure data, unit-tested."""

    node_ids: tuple[int, ...] = (1, 2, 3)
    net: int = DEFAULT_NET
    port_base: int = DEFAULT_PORT_BASE
    api_port: int = TOXIPROXY_API_PORT
    #: the links between brokers (and each node's to itself) through the wire proxy too
    wire_between_brokers: bool = False
    links: tuple[Link, ...] = field(init=False)

    def __post_init__(self) -> None:
        if self.wire_between_brokers and max(self.node_ids) > MAX_WIRE_NODE_ID:
            raise ValueError(f"node ids up to {MAX_WIRE_NODE_ID} fit the wire proxy's addresses; got {self.node_ids}")
        links: list[Link] = [Link(CLIENT_SOURCE, n, Listener.CLIENT) for n in self.node_ids]
        for listener in (Listener.INTERNAL, Listener.CONTROLLER):
            links += [Link(s, d, listener) for s in self.node_ids for d in self.node_ids if s != d]
        object.__setattr__(self, "links", tuple(links))

    @property
    def self_links(self) -> tuple[Link, ...]:
        """Each node's links to itself (INTERNAL and CONTROLLER): wire proxy hops with no Toxiproxy hop."""
        return tuple(Link(n, n, lst) for lst in (Listener.INTERNAL, Listener.CONTROLLER) for n in self.node_ids)

    @property
    def wire_links(self) -> tuple[Link, ...]:
        """Every link the wire proxy carries, so every link a wire fault may name: the clients'; with
        ``wire_between_brokers`` also every other of ``links`` and the self links."""
        if self.wire_between_brokers:
            return self.links + self.self_links
        return tuple(lk for lk in self.links if lk.src == CLIENT_SOURCE)

    @classmethod
    def at(cls, port_base: int = DEFAULT_PORT_BASE, wire_between_brokers: bool = False) -> Topology:
        """The topology for ``port_base``; the Toxiproxy API port moves with it (18474 at 19092), so
        clusters at different port bases share no port."""
        return cls(port_base=port_base, api_port=port_base - (DEFAULT_PORT_BASE - TOXIPROXY_API_PORT),
                   wire_between_brokers=wire_between_brokers)

    def ip(self, src: int, dst: int) -> str:
        return f"127.{self.net}.{src}.{dst}"

    def port(self, listener: Listener) -> int:
        return self.port_base + listener.offset

    @staticmethod
    def host_name(node: int) -> str:
        """The name a broker advertises on INTERNAL and CONTROLLER; resolved per source."""
        return f"kafka-{node}"

    def bind(self, node: int, listener: Listener) -> str:
        """Node ``node``'s real socket for ``listener``."""
        return f"{self.ip(node, node)}:{self.port(listener)}"

    def proxy(self, link: Link) -> Proxy:
        """Toxiproxy's proxy for ``link``; its upstream is the link's wire proxy hop when the wire
        proxy carries the link, else the node's real socket."""
        if link.src == link.dst:
            raise ValueError(f"{link.name}: a node's link to itself has no Toxiproxy hop (its address is the real socket)")
        upstream = self.wire(link).listen if link in self.wire_links else self.bind(link.dst, link.listener)
        return Proxy(link, f"{self.ip(link.src, link.dst)}:{self.port(link.listener)}", upstream)

    def wire(self, link: Link) -> Proxy:
        """The wire proxy's hop of ``link``: from behind Toxiproxy (a self link: from the node) to
        node ``dst``'s real socket. ValueError for a link it does not carry."""
        if link not in self.wire_links:
            raise ValueError(f"{link.name}: only the clients' links go through the wire proxy of a cluster started "
                             "without --wire-between-brokers")
        third = WIRE_SOURCE if link.src == CLIENT_SOURCE else WIRE_PEER_BASE + link.src
        port = self.port(link.listener)
        return Proxy(link, f"{self.ip(third, link.dst)}:{port}", self.bind(link.dst, link.listener))

    def direct(self, link: Link) -> str:
        """Node ``dst``'s real socket for ``link``: Toxiproxy's upstream with the wire proxy left out (``bench``)."""
        return self.bind(link.dst, link.listener)

    def wire_hops(self) -> list[Proxy]:
        """Every wire link's hop (what the wire proxy is started with)."""
        return [self.wire(link) for link in self.wire_links]

    @property
    def wire_api(self) -> str:
        """host:port of the wire proxy's control API (next to Toxiproxy's port)."""
        return f"{self.ip(CLIENT_SOURCE, WIRE_API_HOST_OCTET)}:{self.api_port + 1}"

    @property
    def wire_url(self) -> str:
        return f"http://{self.wire_api}"

    def proxies(self) -> list[Proxy]:
        return [self.proxy(link) for link in self.links]

    def link(self, src: int | str, dst: int, listener: Listener | str = Listener.INTERNAL,
             wire: bool = False) -> Link:
        """The link from ``src`` (a node id, or ``"client"``) to node ``dst``; ``wire``: also a
        node's link to itself (the wire proxy carries those; Toxiproxy does not)."""
        if src in ("client", CLIENT_SOURCE):
            found = Link(CLIENT_SOURCE, dst, Listener.CLIENT)
        else:
            lst = listener if isinstance(listener, Listener) else Listener(listener.upper())
            found = Link(int(src), dst, lst)
        known = self.wire_links if wire else self.links
        if found not in known:
            raise KeyError(self._not_carried(found.name) if wire else
                           f"no link {found.name}; links: {', '.join(lk.name for lk in known)}")
        return found

    def named(self, name: str) -> Link:
        """The wire link called ``name`` (``n1-to-n2-internal``, ``n2-to-n2-internal``, ``client-to-n3``)."""
        for lk in self.wire_links:
            if lk.name == name:
                return lk
        raise KeyError(self._not_carried(name))

    def _not_carried(self, name: str) -> str:
        """Why the wire proxy carries no link ``name``."""
        if not self.wire_between_brokers and name in {lk.name for lk in self.links + self.self_links}:
            return (f"{name}: the wire proxy of this cluster carries only the clients' links (it was started "
                    "without --wire-between-brokers)")
        return f"no link {name!r}; links: {', '.join(lk.name for lk in self.wire_links)}"

    @property
    def api_host(self) -> str:
        return self.ip(CLIENT_SOURCE, TOXIPROXY_API_HOST_OCTET)

    @property
    def toxiproxy_url(self) -> str:
        return f"http://{self.api_host}:{self.api_port}"

    @property
    def bootstrap(self) -> str:
        """Client bootstrap through the client proxies (what workloads use)."""
        return ",".join(f"{self.ip(CLIENT_SOURCE, n)}:{self.port(Listener.CLIENT)}" for n in self.node_ids)

    @property
    def direct_bootstrap(self) -> str:
        """Bootstrap on the never-faulted DIRECT listener (admin, final reads)."""
        return ",".join(self.bind(n, Listener.DIRECT) for n in self.node_ids)

    def resolved(self, src: int, dst: int) -> str:
        """The address ``src``'s hosts file gives ``kafka-<dst>``: peers via their Toxiproxy proxy;
        itself directly, or with ``wire_between_brokers`` via the wire proxy's self hop (the same
        address for INTERNAL and CONTROLLER)."""
        return self.ip(WIRE_PEER_BASE + src, dst) if src == dst and self.wire_between_brokers else self.ip(src, dst)

    def all_binds(self) -> list[tuple[str, str]]:
        """Every (host:port, what) the cluster will listen on, for the busy-port check."""
        out = [(self.bind(n, lst), f"node {n} {lst.value} listener") for n in self.node_ids for lst in Listener]
        out += [(p.listen, f"proxy {p.link.name}") for p in self.proxies()]
        out.append((f"{self.api_host}:{self.api_port}", "Toxiproxy API"))
        out += [(w.listen, f"wire proxy {w.link.name}") for w in self.wire_hops()]
        out.append((self.wire_api, "wire proxy API"))
        return out
