"""The txn-producer's part of a run beyond its processes: the transactional.id each process is known
by, which a fault on a transaction's coordinator names (``Supervisor.using_transactional_id``)."""

from __future__ import annotations

from harness.phases.kind_run import KindRun
from harness.workloads.txn_ids import transactional_id


class TxnProducerRun(KindRun):
    @classmethod
    def transactional_id(cls, name: str) -> str | None:
        return transactional_id(name)
