"""The address plan of the Compose cluster and the compose file rendered from it.

Containers each have their own network namespace, so per-source routing works by network instead
of by loopback address: one bridge network ``src<A>`` per broker A holds broker A and Toxiproxy
(at a fixed address). In broker A's ``/etc/hosts`` (``extra_hosts``) every peer name ``kafka-<B>``
points at Toxiproxy's address on ``src<A>``, where the proxy for link A -> B listens, and
``kafka-<A>`` points at itself. Toxiproxy reaches the real brokers (``broker-<N>``) over the
``core`` network. Node N listens on its own ports (``PORT_BASE + 10*(N-1) + offset``) so a
proxy address names its destination by port and its source by network.

Host side: clients reach the CLIENT proxies and the DIRECT listeners on 127.0.0.1 only.

The clients' links go through the wire proxy (clusters/wire/kwire, docs/WIRE-FAULTS.md) behind
Toxiproxy, as on the local backend: Toxiproxy's client proxy -> service ``wire`` on ``core`` (same
port as the node's CLIENT listener) -> ``broker-<N>``. It runs from the Toxiproxy image (which carries
its binary) with its own entrypoint; its API is published on the host next to Toxiproxy's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from clusters.kafka import render
from clusters.kafka.topology import CLIENT_SOURCE, Link, Listener, Topology

PORT_BASE = 29092
TOXIPROXY_API_PORT = 28474
#: A cluster at another port base gets its own API port and subnets too (``ComposePlan.at``), so
#: runs at different port bases never share a host port or a bridge subnet.
API_PORT_BELOW_BASE = PORT_BASE - TOXIPROXY_API_PORT
#: Private bridge subnets the harness creates and removes: ``<prefix>.<A>.0/24`` for network src<A>.
SUBNET_PREFIX = "10.213"
TOXIPROXY_HOST_OCTET = 254
#: The wire proxy's service, and where it writes its event log (``wire/`` of the run folder).
WIRE_SERVICE = "wire"
WIRE_EVENTS_IN_CONTAINER = "/wire/wire-events.jsonl"
LABEL = "eos-chaos"
#: Which cluster a container/network/volume belongs to, and which process will take it down
#: ("0" = detached, `eos-chaos cluster up`): how a later start tells a crashed run's leftovers
#: from a run that is still going.
LABEL_CLUSTER = "eos-chaos.cluster"
LABEL_OWNER = "eos-chaos.owner"
#: The state folder whose record claims it (clusters/backends/procs.py ``ENV_STATE``; empty: started by hand or
#: by an eos-chaos that did not say): another state folder's resources are another eos-chaos's.
LABEL_STATE = "eos-chaos.state"
LABELS = {LABEL: "true", LABEL_CLUSTER: "${EOS_CLUSTER_ID:-manual}", LABEL_OWNER: "${EOS_CHAOS_OWNER:-0}",
          LABEL_STATE: "${EOS_CHAOS_STATE:-}"}


@dataclass(frozen=True)
class ComposePlan:
    topology: Topology = Topology()
    port_base: int = PORT_BASE
    api_port: int = TOXIPROXY_API_PORT
    subnet_prefix: str = SUBNET_PREFIX
    #: Broker settings on top of ``render.BROKER_DEFAULTS`` (what a scenario's cluster settings set).
    overrides: tuple[tuple[str, str], ...] = ()

    @classmethod
    def at(cls, port_base: int = PORT_BASE, overrides: tuple[tuple[str, str], ...] = ()) -> ComposePlan:
        """The plan for ``port_base``: API port and subnets move with it (the defaults at 29092)."""
        second_octet = 213 + (port_base - PORT_BASE) // 100 % 40
        return cls(Topology(), port_base, port_base - API_PORT_BELOW_BASE, f"10.{second_octet}", overrides)

    def subnets(self) -> list[str]:
        return [self.subnet(n) for n in self.topology.node_ids]

    def port(self, node: int, listener: Listener) -> int:
        return self.port_base + 10 * (node - 1) + listener.offset

    def subnet(self, src: int) -> str:
        return f"{self.subnet_prefix}.{src}.0/24"

    def toxiproxy_ip(self, src: int) -> str:
        return f"{self.subnet_prefix}.{src}.{TOXIPROXY_HOST_OCTET}"

    @staticmethod
    def service(node: int) -> str:
        return f"broker-{node}"

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{self.port(n, Listener.CLIENT)}" for n in self.topology.node_ids)

    @property
    def direct_bootstrap(self) -> str:
        return ",".join(self.direct_address(n) for n in self.topology.node_ids)

    def direct_address(self, node: int) -> str:
        """Node ``node``'s DIRECT listener, published on the host's loopback."""
        return f"127.0.0.1:{self.port(node, Listener.DIRECT)}"

    @property
    def toxiproxy_url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    def proxy(self, link: Link) -> tuple[str, str]:
        """(listen, upstream) of ``link`` inside the Toxiproxy container; a client link's upstream is
        the wire proxy."""
        port = self.port(link.dst, link.listener)
        if link.src == CLIENT_SOURCE:
            return f"0.0.0.0:{port}", f"{WIRE_SERVICE}:{port}"
        return f"{self.toxiproxy_ip(link.src)}:{port}", f"{self.service(link.dst)}:{port}"

    def wire_args(self) -> list[str]:
        """The wire proxy's command line: every client link from Toxiproxy to its broker."""
        args = [f"-api=0.0.0.0:{self.wire_api_port}", f"-events={WIRE_EVENTS_IN_CONTAINER}"]
        for link in self.topology.links:
            if link.src == CLIENT_SOURCE:
                port = self.port(link.dst, Listener.CLIENT)
                args.append(f"-link={link.name}=0.0.0.0:{port}={self.service(link.dst)}:{port}")
        return args

    @property
    def wire_api_port(self) -> int:
        return self.api_port + 1

    @property
    def wire_url(self) -> str:
        return f"http://127.0.0.1:{self.wire_api_port}"

    def host_binds(self) -> list[tuple[str, str]]:
        """What the cluster publishes on the host, for the busy-port check."""
        out = [(f"127.0.0.1:{self.port(n, Listener.CLIENT)}", f"client proxy to node {n}") for n in self.topology.node_ids]
        out += [(f"127.0.0.1:{self.port(n, Listener.DIRECT)}", f"node {n} DIRECT listener") for n in self.topology.node_ids]
        out.append((f"127.0.0.1:{self.api_port}", "Toxiproxy API"))
        out.append((f"127.0.0.1:{self.wire_api_port}", "wire proxy API"))
        return out

    def broker_env(self, node: int) -> dict[str, str]:
        """Broker settings as the official apache/kafka image takes them (KAFKA_FOO_BAR = foo.bar)."""
        p = self.port
        props = dict(render.BROKER_DEFAULTS)
        props.update(
            {
                "node.id": str(node),
                "controller.quorum.voters": ",".join(
                    f"{n}@kafka-{n}:{p(n, Listener.CONTROLLER)}" for n in self.topology.node_ids
                ),
                "listeners": ",".join(f"{lst.value}://0.0.0.0:{p(node, lst)}" for lst in Listener),
                "advertised.listeners": ",".join(
                    [
                        f"CLIENT://127.0.0.1:{p(node, Listener.CLIENT)}",
                        f"INTERNAL://kafka-{node}:{p(node, Listener.INTERNAL)}",
                        f"CONTROLLER://kafka-{node}:{p(node, Listener.CONTROLLER)}",
                        f"DIRECT://127.0.0.1:{p(node, Listener.DIRECT)}",
                    ]
                ),
                "log.dirs": "/var/lib/kafka/data",
            }
        )
        props.update(dict(self.overrides))  # last, as in the local backend
        env = {_env_name(k): v for k, v in props.items()}
        env["CLUSTER_ID"] = "${EOS_CLUSTER_ID:?set EOS_CLUSTER_ID to a Kafka cluster id}"
        # feature levels to format the storage at (``name=level ...``; empty: the release's defaults).
        # Read by the local stand-in image's run script; the official image does not take it.
        env["EOS_FORMAT_FEATURES"] = "${EOS_FORMAT_FEATURES:-}"
        env["KAFKA_HEAP_OPTS"] = f"-Xms{render.HEAP} -Xmx{render.HEAP}"
        env["KAFKA_JVM_PERFORMANCE_OPTS"] = " ".join(o for o in render.JVM_OPTS if not o.startswith(("-Xms", "-Xmx")))
        return env

    def compose(self) -> dict[str, Any]:
        """The compose file as data (rendered to YAML by ``compose_yaml``)."""
        nodes = self.topology.node_ids
        labels = LABELS
        services: dict[str, Any] = {}
        for n in nodes:
            hosts = [f"kafka-{m}:{self.toxiproxy_ip(n)}" for m in nodes if m != n] + [f"kafka-{n}:127.0.0.1"]
            direct = self.port(n, Listener.DIRECT)
            services[self.service(n)] = {
                "image": "${EOS_KAFKA_IMAGE:?set by eos-chaos: the kafka image}",
                "hostname": self.service(n),
                "labels": labels,
                "environment": self.broker_env(n),
                "extra_hosts": hosts,
                "networks": {"core": {}, f"src{n}": {}},
                "ports": [f"127.0.0.1:{direct}:{direct}"],
                "healthcheck": {
                    "test": ["CMD", "bash", "-c", f"</dev/tcp/127.0.0.1/{direct}"],
                    "interval": "2s", "timeout": "2s", "retries": 60, "start_period": "60s",
                },
                "stop_grace_period": "30s",
            }
        client_ports = [f"127.0.0.1:{self.port(n, Listener.CLIENT)}:{self.port(n, Listener.CLIENT)}" for n in nodes]
        services["toxiproxy"] = {
            "image": "${EOS_TOXIPROXY_IMAGE:?set by eos-chaos: the locally built toxiproxy image}",
            "command": ["-host=0.0.0.0", f"-port={self.api_port}", "-config=/config/toxiproxy.json"],
            "labels": labels,
            "volumes": ["./toxiproxy.json:/config/toxiproxy.json:ro"],
            "networks": {"core": {}, **{f"src{n}": {"ipv4_address": self.toxiproxy_ip(n)} for n in nodes}},
            "ports": [f"127.0.0.1:{self.api_port}:{self.api_port}", *client_ports],
            "healthcheck": {
                "test": ["CMD", "/toxiproxy-cli", f"-host=http://127.0.0.1:{self.api_port}", "list"],
                "interval": "2s", "timeout": "2s", "retries": 30,
            },
        }
        services[WIRE_SERVICE] = {
            "image": "${EOS_TOXIPROXY_IMAGE:?set by eos-chaos: the locally built toxiproxy image}",
            "entrypoint": ["/kwire"],
            "command": self.wire_args(),
            "labels": labels,
            # the event log lands in the run folder (this file's folder), like the local backend's
            "volumes": ["./wire:/wire"],
            "networks": {"core": {}},
            "ports": [f"127.0.0.1:{self.wire_api_port}:{self.wire_api_port}"],
            "healthcheck": {
                "test": ["CMD", "/kwire", f"-ping=http://127.0.0.1:{self.wire_api_port}"],
                "interval": "2s", "timeout": "2s", "retries": 30,
            },
        }
        networks: dict[str, Any] = {"core": {"labels": labels}}
        for n in nodes:
            networks[f"src{n}"] = {"labels": labels, "ipam": {"config": [{"subnet": self.subnet(n)}]}}
        return {"name": "${EOS_PROJECT:-eos-chaos}", "services": services, "networks": networks}

    def toxiproxy_config(self) -> list[dict[str, Any]]:
        """Every proxy, in Toxiproxy's ``-config`` format (the harness also populates them via the API)."""
        out = []
        for link in self.topology.links:
            listen, upstream = self.proxy(link)
            out.append({"name": link.name, "listen": listen, "upstream": upstream, "enabled": True})
        return out


def _env_name(prop: str) -> str:
    """``foo.bar_baz-qux`` -> ``KAFKA_FOO_BAR__BAZ___QUX`` (the apache/kafka image's convention)."""
    return "KAFKA_" + prop.replace("_", "__").replace("-", "___").replace(".", "_").upper()


HEADER = """\
# eos-chaos: a 3-node KRaft cluster whose every directed link goes through Toxiproxy.
# Generated from clusters/backends/compose/plan.py (tests keep it in sync); edit that, not this.
#
# By hand, from this folder:
#   EOS_CLUSTER_ID=$(python3 -c 'import base64,uuid;print(base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode())') \\
#   EOS_KAFKA_IMAGE=eos-chaos/kafka:<tag> EOS_TOXIPROXY_IMAGE=eos-chaos/toxiproxy:<tag> \\
#   docker compose -p eos-chaos-manual up -d --wait
# (`eos-chaos images` prints the image tags; with a registry, apache/kafka:<version> works for
# Kafka too.) Clients: bootstrap 127.0.0.1:29092,29102,29112 through the
# proxies, 127.0.0.1:29095,29105,29115 direct; Toxiproxy API http://127.0.0.1:28474, wire proxy
# API http://127.0.0.1:28475 (its event log: ./wire/wire-events.jsonl).
"""


def compose_yaml(plan: ComposePlan | None = None) -> str:
    import yaml

    class _NoAliases(yaml.SafeDumper):
        # Repeat shared values (labels) in full: anchors make the file harder to read by hand.
        def ignore_aliases(self, data: Any) -> bool:
            return True

    data = (plan or ComposePlan()).compose()
    return HEADER + yaml.dump(data, Dumper=_NoAliases, sort_keys=False, width=120)


def toxiproxy_json(plan: ComposePlan | None = None) -> str:
    import json

    return json.dumps((plan or ComposePlan()).toxiproxy_config(), indent=2) + "\n"
