"""Faults on the per-link proxies: cuts (``partition``, ``flap``) and Toxiproxy toxics."""

from __future__ import annotations

import time
import uuid
from typing import Literal

from pydantic import Field, model_validator

from chaos import partitions, toxics
from chaos.faults.base import FaultBase, FaultContext, Heal, Target, no_heal

PartitionKind = Literal["isolate-node", "majority-minority", "directed", "clients-from-node", "bridge"]
Listeners = Literal["internal", "controller", "client", "all"]


class _LinkFault(FaultBase):
    category = "network"
    #: the node(s) whose links: an id, random, all, or a role resolved at fault time
    target: Target = "random"
    #: what the role is of (see chaos/faults/process.py)
    of: str | None = None
    #: which links of the node (see chaos/partitions.py)
    partition: PartitionKind = "isolate-node"
    #: partition kind "directed": the other end (a node id or a role)
    peer: Target | None = None
    #: which listeners' links
    listeners: Listeners = "all"

    @model_validator(mode="after")
    def _directed_has_peer(self) -> _LinkFault:
        if self.partition == "directed" and self.peer is None:
            raise ValueError("a directed partition needs `peer` (the other end)")
        return self

    def _links(self, ctx: FaultContext) -> tuple[list[str], list[int]]:
        """The links the fault acts on, and the nodes its target resolved to (for the report)."""
        topo = ctx.cluster.topology
        nodes = list(topo.node_ids) if self.target == "all" else [ctx.resolve(self.target, self.of)]
        peer = ctx.resolve(self.peer, self.of) if self.peer is not None else None
        names: list[str] = []
        for n in nodes:
            names += [lk.name for lk in partitions.links(topo, self.partition, n, self.listeners, peer)
                      if lk.name not in names]
        return names, nodes

    def _started(self, ctx: FaultContext) -> list[str]:
        links, nodes = self._links(ctx)
        ctx.start(self.kind, links=links, target=self.target, of=self.of, nodes=nodes)
        return links


def _set_enabled(ctx: FaultContext, links: list[str], enabled: bool) -> None:
    for link in links:
        ctx.cluster.toxiproxy.set_enabled(link, enabled)


class Partition(_LinkFault):
    """The links cut (their proxies disabled) for ``duration``."""

    kind: Literal["partition"] = "partition"

    def apply(self, ctx: FaultContext) -> Heal:
        links = self._started(ctx)
        _set_enabled(ctx, links, False)

        def heal() -> None:
            _set_enabled(ctx, links, True)
            ctx.end(self.kind, links=links)

        return heal


class Flap(_LinkFault):
    """The links cut for ``period`` seconds, then healed as long, over and over for ``duration``."""

    kind: Literal["flap"] = "flap"
    holds = False
    period: float = Field(1.0, gt=0, le=3600, allow_inf_nan=False)

    def apply(self, ctx: FaultContext) -> Heal:
        links = self._started(ctx)
        until = time.monotonic() + self.duration
        while time.monotonic() < until and not ctx.stop.is_set():
            _set_enabled(ctx, links, False)
            ctx.stop.wait(self.period)
            _set_enabled(ctx, links, True)
            ctx.stop.wait(self.period)
        ctx.end(self.kind, links=links)
        return no_heal


class _ToxicFault(_LinkFault):
    #: toxic parameters (chaos/toxics.py), e.g. {latency_ms: 200, jitter_ms: 50}
    params: dict[str, float] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _known_params(self) -> _ToxicFault:
        toxics.specs(self.kind, self.params)  # raises naming the allowed parameters
        return self

    def apply(self, ctx: FaultContext) -> Heal:
        links = self._started(ctx)
        tox = ctx.cluster.toxiproxy
        tag = uuid.uuid4().hex[:8]  # this fault's toxics, apart from any other fault's on the same link
        added: list[tuple[str, toxics.ToxicSpec]] = []
        try:
            for link in links:
                for spec in toxics.specs(self.kind, self.params, tag):
                    tox.add_toxic(link, spec.type, spec.attributes, stream=spec.stream, name=spec.name)
                    added.append((link, spec))
        except Exception:
            # half applied: take back what was added, so the failure leaves no toxic behind
            for link, spec in added:
                tox.remove_toxic(link, spec.name)
            ctx.end(self.kind, links=links)
            raise

        def heal() -> None:
            for link, spec in added:
                tox.remove_toxic(link, spec.name)
            ctx.end(self.kind, links=links)

        return heal


class Latency(_ToxicFault):
    kind: Literal["latency"] = "latency"


class Bandwidth(_ToxicFault):
    kind: Literal["bandwidth"] = "bandwidth"


class ResetPeer(_ToxicFault):
    kind: Literal["reset-peer"] = "reset-peer"


class Blackhole(_ToxicFault):
    kind: Literal["blackhole"] = "blackhole"


class Slicer(_ToxicFault):
    kind: Literal["slicer"] = "slicer"


class DropResponses(_ToxicFault):
    kind: Literal["drop-responses"] = "drop-responses"


