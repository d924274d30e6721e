"""The wire proxy's control API (clusters/wire/kwire/, docs/WIRE-FAULTS.md): rules that hold a chosen
Kafka request, drop its response or answer it with an error, on a chosen link (a client's, or one
between brokers); and the broker address map (``Advertised``) that a proxy in front of a cluster the
harness did not start rewrites by.

One instance per server, a timeout on every call, never through an ``HTTP_PROXY`` from the
environment (the API is on loopback), like ``clusters.toxiproxy.toxiproxy_api``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import requests

from harness.base.errors import FaultError

#: Every API call returns within this; the proxy answers in microseconds when healthy.
CALL_TIMEOUT_S = 5.0

#: The client APIs a rule may name (the proxy also takes numbers; these are the ones scenarios use).
CLIENT_APIS = ("Produce", "Fetch", "ListOffsets", "Metadata", "OffsetCommit", "OffsetFetch", "FindCoordinator",
               "JoinGroup", "Heartbeat", "LeaveGroup", "SyncGroup", "ApiVersions", "InitProducerId",
               "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn", "TxnOffsetCommit")
#: The APIs brokers send each other (INTERNAL: a coordinator's markers, a leader's verification
#: AddPartitionsToTxn v4+, a follower's Fetch) and the controller quorum's (CONTROLLER links).
BROKER_APIS = ("WriteTxnMarkers", "Vote", "BeginQuorumEpoch", "EndQuorumEpoch", "AlterPartition", "FetchSnapshot",
               "BrokerRegistration", "BrokerHeartbeat")
APIS = CLIENT_APIS + BROKER_APIS
#: APIs whose error responses the proxy can synthesize (an error code, or the request's topics and
#: partitions echoed with it); the proxy refuses the others too.
SYNTHESIZABLE = ("Produce", "InitProducerId", "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn", "TxnOffsetCommit")
#: Error names a rule may answer with (Kafka's ``Errors``; the proxy has the same table).
ERRORS = ("UNKNOWN_SERVER_ERROR", "NOT_LEADER_OR_FOLLOWER", "REQUEST_TIMED_OUT", "NETWORK_EXCEPTION",
          "COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR", "NOT_ENOUGH_REPLICAS",
          "NOT_ENOUGH_REPLICAS_AFTER_APPEND", "INVALID_PRODUCER_EPOCH", "INVALID_TXN_STATE",
          "INVALID_PRODUCER_ID_MAPPING", "CONCURRENT_TRANSACTIONS", "TRANSACTION_COORDINATOR_FENCED",
          "OUT_OF_ORDER_SEQUENCE_NUMBER", "DUPLICATE_SEQUENCE_NUMBER", "UNKNOWN_PRODUCER_ID", "PRODUCER_FENCED",
          "KAFKA_STORAGE_ERROR", "TRANSACTION_ABORTABLE", "LEADER_NOT_AVAILABLE", "UNKNOWN_TOPIC_OR_PARTITION")

#: The filters a rule may have on a request's body, each with the APIs whose requests carry what it
#: reads (the proxy's ``filterAPIs``). The brokers' batched requests (WriteTxnMarkers, AddPartitionsToTxn
#: v4+) pass a filter when one of their entries does.
FILTER_APIS: dict[str, tuple[str, ...]] = {
    "transactional_id": ("EndTxn", "AddOffsetsToTxn", "AddPartitionsToTxn", "TxnOffsetCommit", "InitProducerId",
                         "Produce"),
    "min_producer_epoch": ("EndTxn", "AddOffsetsToTxn", "AddPartitionsToTxn", "TxnOffsetCommit", "WriteTxnMarkers"),
    "result": ("EndTxn", "WriteTxnMarkers"),
}


@dataclass(frozen=True)
class Rule:
    """What the proxy does with requests of ``apis`` on ``links`` (all links when empty)."""

    apis: tuple[str, ...]
    action: str  # hold | drop-response | error
    links: tuple[str, ...] = ()
    hold_ms: int = 0
    until: str = "timeout"  # hold: timeout | client-gone
    error: str = ""
    count: int = 0  # at most this many requests (0: no limit)
    # filters on the request's body (FILTER_APIS); a request whose body does not decode matches none
    transactional_id: str = ""  # only this transactional.id's requests ("": any)
    min_producer_epoch: int | None = None  # only requests at this producer epoch or above
    result: str = "any"  # EndTxn: commit | abort | any

    def to_json(self) -> dict[str, Any]:
        """The rule as the proxy takes it; the filters only when set, so that an unfiltered rule is
        also taken by a proxy from before filters (a cluster started earlier runs the binary it
        started with, and the proxy refuses unknown fields)."""
        filters = {"transactional_id": self.transactional_id or None, "min_producer_epoch": self.min_producer_epoch,
                   "result": None if self.result == "any" else self.result}
        return {"apis": list(self.apis), "action": self.action, "links": list(self.links), "hold_ms": self.hold_ms,
                "until": self.until, "error": self.error, "count": self.count,
                **{k: v for k, v in filters.items() if v is not None}}


@dataclass(frozen=True)
class Advertised:
    """Broker address rewriting (docs/WIRE-FAULTS.md, Address rewriting): node id -> the ``host:port``
    clients must see for that broker (the proxies' listener of its client link). Every Metadata,
    FindCoordinator, DescribeCluster answer and every Produce/Fetch NodeEndpoints field is rewritten to
    name these, so a client bootstrapped at the proxies never connects to a broker around them.

    Off (no map) on the built-in backends, whose brokers advertise the proxies themselves; the
    ``external`` backend, in front of a cluster that advertises its own addresses, turns it on."""

    nodes: tuple[tuple[int, str], ...]

    def __post_init__(self) -> None:
        seen: set[int] = set()
        for node, addr in self.nodes:
            host, _, port = addr.rpartition(":")
            if node < 0 or node in seen or not host or not port.isdigit() or not 0 < int(port) < 65536:
                raise ValueError(f"advertised address {node}={addr!r}: expected a node id (0 or more, once each) "
                                 "and HOST:PORT with a port 1-65535")
            seen.add(node)

    @classmethod
    def of(cls, nodes: dict[int, str]) -> Advertised:
        return cls(tuple(sorted(nodes.items())))

    def args(self) -> list[str]:
        """The proxy's command-line flags for this map (``-advertise NODE=HOST:PORT`` each)."""
        return [arg for node, addr in self.nodes for arg in ("-advertise", f"{node}={addr}")]


@dataclass(frozen=True)
class RewriteCounts:
    """One link's rewriting: responses rewritten, ones naming a node outside the map, ones that did
    not decode (their client connection was closed instead of being answered)."""

    rewritten: int = 0
    unmapped: int = 0
    failed: int = 0


@dataclass
class WireStats:
    links: dict[str, dict[str, Any]] = field(default_factory=dict)
    rules: list[dict[str, Any]] = field(default_factory=list)
    held: int = 0
    #: the address map (node id -> host:port); empty when the proxy does not rewrite
    advertise: dict[int, str] = field(default_factory=dict)
    rewrite: dict[str, RewriteCounts] = field(default_factory=dict)


class WireProxy:
    """One wire proxy's API."""

    def __init__(self, url: str, timeout: float = CALL_TIMEOUT_S) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self._http = requests.Session()
        self._http.trust_env = False

    def _call(self, method: str, path: str, body: Any = None, ok: Iterable[int] = (200, 201)) -> Any:
        try:
            resp = self._http.request(method, self.url + path, json=body, timeout=self.timeout)
        except requests.RequestException as exc:
            raise FaultError(f"wire proxy {method} {path} at {self.url} failed: {exc}") from exc
        if resp.status_code not in ok:
            try:
                why = resp.json()["error"]
            except (ValueError, KeyError, TypeError):
                why = resp.text.strip()[:300]
            raise FaultError(f"wire proxy {method} {path} answered {resp.status_code}: {why}")
        return resp.json() if resp.content else None

    def ping(self) -> bool:
        try:
            return self._http.get(self.url + "/version", timeout=self.timeout).status_code == 200
        except requests.RequestException:
            return False

    def add_rule(self, rule: Rule) -> int:
        """Install ``rule``; returns its id (for ``remove_rule``)."""
        try:
            return int(self._call("POST", "/rules", rule.to_json())["id"])
        except FaultError as exc:
            if "unknown field" not in str(exc):
                raise
            raise FaultError(f"{exc} (this cluster's wire proxy is older than the rule: a cluster keeps the proxy "
                             "binary it started with; `eos-chaos cluster down` and up again starts the current one)"
                             ) from exc

    def remove_rule(self, rule_id: int) -> None:
        """Remove a rule and deliver what it holds; a rule already gone (a reset) is fine."""
        self._call("DELETE", f"/rules/{rule_id}", ok=(200, 404))

    def reset(self) -> dict[str, int]:
        """Remove every rule and deliver everything held: ``{"rules": n, "released": m}``."""
        return dict(self._call("POST", "/reset"))

    def stats(self) -> WireStats:
        d = self._call("GET", "/stats")
        # a proxy from before address rewriting has neither field
        rewrite = {link: RewriteCounts(**c) for link, c in (d.get("rewrite") or {}).items()}
        return WireStats(links=d["links"], rules=d["rules"] or [], held=int(d["held"]),
                         advertise={int(k): v for k, v in (d.get("advertise") or {}).items()}, rewrite=rewrite)

    def rewrite_problems(self) -> list[str]:
        """Why a client may have met a broker outside the proxies: responses naming a node the map does
        not have, or that did not decode. Empty when the proxy rewrote cleanly (or does not rewrite)."""
        problems = []
        for link, c in sorted(self.stats().rewrite.items()):
            if c.unmapped:
                problems.append(f"wire proxy {link}: {c.unmapped} response(s) named a broker outside the address map "
                                "(given an unresolvable host: a broker joined the cluster after the proxy started?)")
            if c.failed:
                problems.append(f"wire proxy {link}: {c.failed} response(s) could not be rewritten "
                                "(their client connections were closed)")
        return problems

    def unhealed(self) -> list[str]:
        """Rules still installed and requests still held. Empty = healed."""
        s = self.stats()
        problems = [f"wire rule {r['id']}: {r['spec']['action']} {','.join(r['spec']['apis'])} on "
                    f"{','.join(r['spec']['links'] or ['every link'])}" for r in s.rules]
        if s.held:
            problems.append(f"wire proxy: {s.held} request(s) held")
        return problems

    def close(self) -> None:
        self._http.close()
