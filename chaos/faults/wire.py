"""Request-aware faults through the wire proxy (clusters/wire/kwire, docs/WIRE-FAULTS.md): hold a
chosen Kafka request, drop its response, or answer it with an error.

They act on the client link of the node a target resolves to (``coordinator`` of a
``transactional.id`` by default, ``leader`` of a partition for Produce, a node id, or ``all``), for
``duration`` seconds; the heal removes the rule and delivers whatever it still holds. With ``peer``
they act on the link *between brokers* from the target's node to the peer's (``listener``: internal
or controller), and ``link`` names such a link outright. The two ends may be one node: a
coordinator's markers to the partitions it leads itself go over its link to itself
(``n2-to-n2-internal``), which the wire proxy carries too (clusters/kafka/topology.py).

A fault may also filter on the request's body: ``transactional_id``, ``min_producer_epoch`` and (EndTxn)
``result``, each only with the APIs whose requests carry it (``clusters.wire.wire_api.FILTER_APIS``).

```yaml
- {at: 5, kind: hold-requests, api: EndTxn, until: client-gone, hold_ms: 2000, duration: 20}
- {at: 1, kind: hold-requests, api: EndTxn, transactional_id: eos-txn-producer-0, min_producer_epoch: 32766, result: abort}
- {at: 5, kind: error-responses, api: [EndTxn, AddOffsetsToTxn], error: CONCURRENT_TRANSACTIONS, count: 3}
- {at: 5, kind: drop-api-responses, api: Produce, target: leader, of: eos-a/0, count: 1}
# the coordinator's commit markers to the leader of eos-a/0, held until the heal
- {at: 5, kind: hold-requests, api: WriteTxnMarkers, result: commit, peer: leader, peer_of: eos-a/0, hold_ms: 60000}
- {at: 5, kind: drop-api-responses, api: Fetch, link: n2-to-n1-internal, count: 3}
```
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, model_validator

from chaos.faults.app_id import with_app_id
from chaos.faults.base import NODE_IDS, FaultBase, FaultContext, Heal, Target
from clusters.kafka.topology import Listener, Topology
from clusters.wire.wire_api import APIS, ERRORS, FILTER_APIS, SYNTHESIZABLE, Rule
from harness.base.errors import ConfigError


def _api_list(value: object) -> object:
    """``api: EndTxn`` or ``api: [EndTxn, AddOffsetsToTxn]``; each a client API the proxy knows."""
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not names:
        raise ValueError(f"{value!r} is not an API name or a list of them; allowed: {', '.join(APIS)}")
    bad = [n for n in names if n not in APIS]
    if bad:
        raise ValueError(f"unknown API {bad[0]!r}; allowed: {', '.join(APIS)}")
    return names


#: One API name or a list of them.
Apis = Annotated[list[str], BeforeValidator(_api_list)]
#: 24 h: no scenario runs longer (chaos.faults.base.MAX_SECONDS).
MAX_HOLD_MS = 24 * 3600 * 1000
#: The links a fault may name: the 3-node topology's wire links with faults between brokers on (every
#: broker pair both ways, each node to itself, on INTERNAL and CONTROLLER; the client links).
WIRE_LINKS = tuple(lk.name for lk in Topology(node_ids=NODE_IDS, wire_between_brokers=True).wire_links)
#: Backends whose wire proxy carries only the clients' links (an external cluster's brokers reach each
#: other directly; compose's through Toxiproxy on per-source networks, clusters/backends/compose/plan.py,
#: with no wire hop behind it).
CLIENT_LINKS_ONLY_BACKENDS = ("compose", "external")


class _WireFault(FaultBase):
    category = "wire"
    #: the request(s) to act on: EndTxn (default: the commit or abort), AddPartitionsToTxn, Produce,
    #: TxnOffsetCommit, AddOffsetsToTxn, InitProducerId, ...
    api: Apis = Field(default_factory=lambda: ["EndTxn"])
    #: whose client link: a node id, all, random, or a role resolved at fault time (default: the
    #: transaction coordinator of the run's first transactional.id)
    target: Target = "coordinator"
    #: what the role is of (see chaos/faults/process.py)
    of: str | None = None
    #: act on at most this many requests over the fault's window (0: every one)
    count: int = Field(0, ge=0, le=1_000_000)
    #: only requests of this transactional.id; ending in ``*``, of every id that starts with what
    #: precedes it; ``{id}`` is the run's app id (``"{id}*"``: a Kafka Streams app's ids)
    transactional_id: str | None = Field(None, min_length=1)
    #: only requests whose producer epoch is at least this
    min_producer_epoch: int | None = Field(None, ge=0, le=32767)
    #: EndTxn, WriteTxnMarkers: only commits, only aborts, or either
    result: Literal["commit", "abort", "any"] = "any"
    #: a link between brokers instead: from the target's node to this one's (a node id or a role)
    peer: Target | None = None
    #: what the peer's role is of (a topic/partition for leader, a transactional.id for coordinator)
    peer_of: str | None = None
    #: the listener of the link between brokers: internal (replication, markers, verification) or controller
    listener: Literal["internal", "controller"] = "internal"
    #: or the link by name: ``n1-to-n2-internal``, ``n2-to-n2-internal`` (a node to itself), ``client-to-n3``
    link: str | None = None

    @model_validator(mode="after")
    def _one_way_to_name_the_link(self) -> _WireFault:
        if self.link is not None:
            if self.link not in WIRE_LINKS:
                raise ValueError(f"link: no link {self.link!r} in the {len(NODE_IDS)}-node cluster; links: "
                                 f"{', '.join(WIRE_LINKS)}")
            both = sorted({"target", "of", "peer", "peer_of", "listener"} & self.model_fields_set)
            if both:
                raise ValueError(f"link: {self.link} names both ends; leave out {', '.join(both)}")
        if self.peer == "all" or (self.peer is not None and self.target == "all"):
            raise ValueError("peer: a link between brokers has one node at each end; `all` names no single node")
        if self.peer_of is not None and self.peer is None:
            raise ValueError("peer_of: says what the peer's role is of; set peer too")
        return self

    @property
    def needs_wire_between_brokers(self) -> bool:
        """It acts on a link between brokers (or a broker's to itself), not a client's."""
        return self.peer is not None or (self.link is not None and not self.link.startswith("client-"))

    def check_backend(self, backend: str) -> None:
        if self.needs_wire_between_brokers and backend in CLIENT_LINKS_ONLY_BACKENDS:
            how = ("an external cluster's brokers reach each other directly" if backend == "external" else
                   "its brokers reach each other through Toxiproxy alone, on per-source networks")
            raise ConfigError(f"{self.kind} on a link between brokers: the {backend} backend's wire proxy carries only "
                              f"the clients' links ({how}); run it with --backend local")

    @model_validator(mode="after")
    def _filters_fit_the_apis(self) -> _WireFault:
        for name, value in self.filters().items():
            bad = [a for a in self.api if a not in FILTER_APIS[name]]
            if bad:
                raise ValueError(f"{name}: {value!r} filters requests of {', '.join(FILTER_APIS[name])}; {bad[0]} "
                                 "requests do not carry it")
        return self

    def filters(self) -> dict[str, Any]:
        """The filters set (``FILTER_APIS``'s names), as the rule and the fault's start event carry them."""
        set_ = {"transactional_id": self.transactional_id, "min_producer_epoch": self.min_producer_epoch,
                "result": None if self.result == "any" else self.result}
        return {k: v for k, v in set_.items() if v is not None}

    def _rule(self, links: list[str]) -> Rule:
        raise NotImplementedError

    def _links(self, ctx: FaultContext) -> tuple[list[str], list[int]]:
        """The wire links the fault acts on, and the nodes at their ends (for the report)."""
        topo = ctx.cluster.topology
        if self.link is not None:
            lk = topo.named(self.link)
            return [lk.name], sorted({n for n in (lk.src, lk.dst) if n in topo.node_ids})
        if self.peer is not None:
            src, dst = ctx.resolve(self.target, self.of), ctx.resolve(self.peer, self.peer_of)
            return [topo.link(src, dst, Listener(self.listener.upper()), wire=True).name], sorted({src, dst})
        nodes = list(topo.node_ids) if self.target == "all" else [ctx.resolve(self.target, self.of)]
        return [topo.link("client", n).name for n in nodes], nodes

    def apply(self, ctx: FaultContext) -> Heal:
        links, nodes = self._links(ctx)
        fault = self
        if self.transactional_id is not None:  # "{id}*": every transactional.id of the run's app
            fault = self.model_copy(update={"transactional_id": with_app_id(self.transactional_id, ctx.defaults,
                                                                            self.kind)})
        rule = fault._rule(links)
        ends = {"peer": self.peer, "peer_of": self.peer_of} if self.peer is not None else {}
        ctx.start(self.kind, links=links, nodes=nodes, target=self.target, of=self.of, api=self.api, **ends,
                  **fault.filters())
        rule_id = ctx.cluster.wire.add_rule(rule)

        def heal() -> None:
            ctx.cluster.wire.remove_rule(rule_id)  # delivers what it still holds
            ctx.end(self.kind, links=links)

        return heal


class HoldRequests(_WireFault):
    """Hold the requests for ``hold_ms`` (``until: timeout``), or until the client has closed its
    connection and ``hold_ms`` more (``until: client-gone``), then deliver them to the broker. Requests
    behind a held one on the same connection wait too (head-of-line); other connections flow. A
    request still held when the fault ends is delivered then."""

    kind: Literal["hold-requests"] = "hold-requests"
    hold_ms: int = Field(5000, ge=0, le=MAX_HOLD_MS)
    until: Literal["timeout", "client-gone"] = "timeout"

    def _rule(self, links: list[str]) -> Rule:
        return Rule(apis=tuple(self.api), action="hold", links=tuple(links), hold_ms=self.hold_ms, until=self.until,
                    count=self.count, **self.filters())


class DropApiResponses(_WireFault):
    """Forward the requests, drop their responses. Responses on a connection come in order, so no
    later response on that connection reaches the client either: it times out and reconnects.
    (``drop-responses`` is Toxiproxy's: every response on the link.)"""

    kind: Literal["drop-api-responses"] = "drop-api-responses"

    def _rule(self, links: list[str]) -> Rule:
        return Rule(apis=tuple(self.api), action="drop-response", links=tuple(links), count=self.count,
                    **self.filters())


class ErrorResponses(_WireFault):
    """Do not forward the requests; answer each with ``error`` (after the responses to the requests
    before it on its connection)."""

    kind: Literal["error-responses"] = "error-responses"
    #: the error the proxy answers with (Kafka's name for it; NOT_COORDINATOR makes the client find
    #: the coordinator again and retry)
    error: Literal[ERRORS] = "NOT_COORDINATOR"  # type: ignore[valid-type]

    @model_validator(mode="after")
    def _synthesizable(self) -> ErrorResponses:
        bad = [a for a in self.api if a not in SYNTHESIZABLE]
        if bad:
            raise ValueError(f"the wire proxy cannot answer {bad[0]} with an error; error-responses takes "
                             f"{', '.join(SYNTHESIZABLE)}")
        return self

    def _rule(self, links: list[str]) -> Rule:
        return Rule(apis=tuple(self.api), action="error", links=tuple(links), error=self.error, count=self.count,
                    **self.filters())
