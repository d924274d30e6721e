"""Faults on the cluster's finalized features: an operator changing ``transaction.version`` while
transactions run (``kafka-features.sh upgrade`` / ``downgrade``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from chaos.faults.base import FaultBase, FaultContext, Heal
from clusters.builds import pins
from clusters.kafka.feature_levels import check_transaction_version
from harness.kafka import features

TV = features.TRANSACTION_VERSION


class SetTransactionVersion(FaultBase):
    """Set ``transaction.version`` to ``level`` (an upgrade, or a safe downgrade when lower) and,
    after ``duration``, put back the level found before. Both levels, read back from the cluster,
    are in the fault's events."""

    kind: Literal["set-transaction-version"] = "set-transaction-version"
    category = "feature"
    #: the level to set: 0 classic, 1 flexible transaction records, 2 KIP-890 part 2 (epoch bump per
    #: transaction). Checked against the release before the run and against what the running
    #: brokers support when the fault applies.
    level: int = Field(ge=pins.TRANSACTION_VERSION_RANGE[0], le=pins.TRANSACTION_VERSION_RANGE[1])

    def check_release(self, kafka_version: str) -> None:
        check_transaction_version(kafka_version, self.level, flag=f"fault {self.kind} at {self.at:g}s: level")

    def apply(self, ctx: FaultContext) -> Heal:
        bootstrap = ctx.cluster.direct_bootstrap
        before = features.finalized(bootstrap)[TV]
        after = features.update(bootstrap, TV, self.level)[TV]
        ctx.start(self.kind, level=self.level, before=before, after=after)

        def heal() -> None:
            restored = features.update(bootstrap, TV, before)[TV]
            ctx.end(self.kind, level=self.level, before=before, restored=restored)

        return heal
