"""Where the harness's proxies listen in front of an external cluster: on 127.0.0.1 of the machine it
runs on, one Toxiproxy port and one wire proxy port per broker (the cluster's addresses are not ours
to pick, so links differ by port). A client goes Toxiproxy ``client-to-n<id>`` -> kwire link
``client-to-n<id>`` (which rewrites every broker address in the answers to the Toxiproxy port of that
broker) -> the broker's client listener, so every later connection stays behind the proxies.
"""

from __future__ import annotations

from dataclasses import dataclass

from clusters.backends.sidecars import WireHop
from clusters.toxiproxy.toxiproxy_api import ProxySpec

#: The external backend's first port (``EOS_CHAOS_PORT_BASE`` / ``--port-base`` move it): clear of
#: the local (19092) and compose (29092) backends', so a cluster of each can run beside it, and
#: below the kernel's ephemeral ports (Linux: 32768 up): at 39092 a busy machine's outgoing
#: connection held the proxy's port now and then, and the run could not start ("already in use",
#: no listener to name; `make test`'s run 56).
EXTERNAL_PORT_BASE = 31092
#: The Toxiproxy API sits this far below the port base, as on the local backend (18474 at 19092).
API_BELOW_BASE = 618
HOST = "127.0.0.1"


@dataclass(frozen=True)
class ExternalPlan:
    """Addresses of the proxies for ``brokers`` ((node id, its client listener), inventory order)."""

    brokers: tuple[tuple[int, str], ...]
    port_base: int = EXTERNAL_PORT_BASE

    def client_listen(self, k: int) -> str:
        """Toxiproxy's listener for the ``k``-th broker (by position: node ids of any size fit)."""
        return f"{HOST}:{self.port_base + 2 * k}"

    def wire_listen(self, k: int) -> str:
        """The wire proxy's hop for the ``k``-th broker, behind Toxiproxy."""
        return f"{HOST}:{self.port_base + 2 * k + 1}"

    @property
    def api_port(self) -> int:
        return self.port_base - API_BELOW_BASE

    @property
    def toxiproxy_url(self) -> str:
        return f"http://{HOST}:{self.api_port}"

    @property
    def wire_api(self) -> str:
        return f"{HOST}:{self.api_port + 1}"

    @property
    def wire_url(self) -> str:
        return f"http://{self.wire_api}"

    @property
    def bootstrap(self) -> str:
        """What workloads get: every broker's Toxiproxy listener."""
        return ",".join(self.client_listen(k) for k in range(len(self.brokers)))

    @property
    def direct_bootstrap(self) -> str:
        """The inventory's own listeners: the harness's admin and final reads, never faulted."""
        return ",".join(addr for _, addr in self.brokers)

    def advertised(self) -> dict[int, str]:
        """node id -> the address clients must see for it (the wire proxy's ``-advertise``)."""
        return {node: self.client_listen(k) for k, (node, _) in enumerate(self.brokers)}

    def proxy_specs(self) -> list[ProxySpec]:
        return [ProxySpec(f"client-to-n{node}", self.client_listen(k), self.wire_listen(k))
                for k, (node, _) in enumerate(self.brokers)]

    def wire_hops(self) -> list[WireHop]:
        return [WireHop(f"client-to-n{node}", self.wire_listen(k), addr) for k, (node, addr) in enumerate(self.brokers)]

    def all_binds(self) -> list[tuple[str, str]]:
        """Every (host:port, what) the proxies will listen on, for the busy-port check."""
        out = [(self.client_listen(k), f"proxy client-to-n{n}") for k, (n, _) in enumerate(self.brokers)]
        out += [(self.wire_listen(k), f"wire proxy client-to-n{n}") for k, (n, _) in enumerate(self.brokers)]
        return out + [(f"{HOST}:{self.api_port}", "Toxiproxy API"), (self.wire_api, "wire proxy API")]
