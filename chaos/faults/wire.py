"""Request-aware faults on the clients' links, through the wire proxy (clusters/wire/kwire,
docs/WIRE-FAULTS.md): hold a chosen Kafka request, drop its response, or answer it with an error.

They act on the client link of the node a target resolves to (``coordinator`` of a
``transactional.id`` by default, ``leader`` of a partition for Produce, a node id, or ``all``), for
``duration`` seconds; the heal removes the rule and delivers whatever it still holds.

A fault may also filter on the request's body: ``transactional_id``, ``min_producer_epoch`` and (EndTxn)
``result``, each only with the APIs whose requests carry it (``clusters.wire.wire_api.FILTER_APIS``).

```yaml
- {at: 5, kind: hold-requests, api: EndTxn, until: client-gone, hold_ms: 2000, duration: 20}
- {at: 1, kind: hold-requests, api: EndTxn, transactional_id: eos-txn-producer-0, min_producer_epoch: 32766, result: abort}
- {at: 5, kind: error-responses, api: [EndTxn, AddOffsetsToTxn], error: CONCURRENT_TRANSACTIONS, count: 3}
- {at: 5, kind: drop-api-responses, api: Produce, target: leader, of: eos-a/0, count: 1}
```
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, model_validator

from chaos.faults.app_id import with_app_id
from chaos.faults.base import FaultBase, FaultContext, Heal, Target
from clusters.wire.wire_api import APIS, ERRORS, FILTER_APIS, SYNTHESIZABLE, Rule


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
    #: EndTxn: only commits, only aborts, or either
    result: Literal["commit", "abort", "any"] = "any"

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

    def apply(self, ctx: FaultContext) -> Heal:
        topo = ctx.cluster.topology
        nodes = list(topo.node_ids) if self.target == "all" else [ctx.resolve(self.target, self.of)]
        links = [topo.link("client", n).name for n in nodes]
        fault = self
        if self.transactional_id is not None:  # "{id}*": every transactional.id of the run's app
            fault = self.model_copy(update={"transactional_id": with_app_id(self.transactional_id, ctx.defaults,
                                                                            self.kind)})
        rule = fault._rule(links)
        ctx.start(self.kind, links=links, nodes=nodes, target=self.target, of=self.of, api=self.api, **fault.filters())
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
