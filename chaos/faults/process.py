"""Faults on broker processes: kill -9, stop (SIGTERM), pause (SIGSTOP), restart, rolling restart."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from chaos.faults.base import FaultBase, FaultContext, Heal, Target, no_heal


class _NodeFault(FaultBase):
    category = "process"
    broker_process = True
    #: the node: an id, random, or a role resolved at fault time
    target: Target = "random"
    #: what the role is of: leader -> "topic/partition" (default: first topic, partition 0);
    #: coordinator -> a transactional.id (default: the first txn-producer's); group-coordinator -> a group
    of: str | None = None

    def _on_node(self, ctx: FaultContext, act: Callable[[int], None], undo: Callable[[int], None] | None) -> Heal:
        """Resolve the target, record the start, ``act`` on the node; the heal runs ``undo``."""
        node = ctx.resolve(self.target, self.of)
        event = "kill" if self.kind == "kill-leader" else self.kind  # kill-leader is recorded as kill
        ctx.start(event, node=node, target=self.target, of=self.of)
        act(node)

        def heal() -> None:
            if undo is not None:
                undo(node)
            ctx.end(event, node=node)

        return heal


class Kill(_NodeFault):
    """SIGKILL the node; restarted after ``duration``."""

    kind: Literal["kill"] = "kill"
    node_state = "down"

    def apply(self, ctx: FaultContext) -> Heal:
        return self._on_node(ctx, ctx.cluster.kill, ctx.cluster.restart)


class KillLeader(Kill):
    """``kill`` with ``target: leader`` (of ``of``, default the first topic's partition 0)."""

    kind: Literal["kill-leader"] = "kill-leader"  # type: ignore[assignment]
    target: Literal["leader"] = "leader"


class Stop(_NodeFault):
    """SIGTERM the node (a clean shutdown); restarted after ``duration``."""

    kind: Literal["stop"] = "stop"
    node_state = "down"

    def apply(self, ctx: FaultContext) -> Heal:
        return self._on_node(ctx, ctx.cluster.stop_node, ctx.cluster.restart)


class Pause(_NodeFault):
    """SIGSTOP the node; resumed after ``duration``."""

    kind: Literal["pause"] = "pause"
    node_state = "paused"

    def apply(self, ctx: FaultContext) -> Heal:
        return self._on_node(ctx, ctx.cluster.pause, ctx.cluster.resume)


class Restart(_NodeFault):
    """Restart the node once (its ``duration`` is not used)."""

    kind: Literal["restart"] = "restart"
    node_state = "down"
    holds = False

    def apply(self, ctx: FaultContext) -> Heal:
        return self._on_node(ctx, ctx.cluster.restart, None)


class RollingRestart(FaultBase):
    """Restart every node in turn, each once the cluster is healthy again."""

    kind: Literal["rolling-restart"] = "rolling-restart"
    category = "process"
    broker_process = True
    node_state = "down"
    holds = False

    def apply(self, ctx: FaultContext) -> Heal:
        for n in ctx.cluster.topology.node_ids:
            ctx.start(self.kind, node=n)
            ctx.cluster.restart(n)
            ctx.cluster.wait_healthy()
            ctx.end(self.kind, node=n)
        return no_heal
