"""Faults on a standalone Spark cluster's executors and workers (``spark: standalone``; the cluster:
clusters/spark/standalone.py, reached through ``chaos.control.SparkControl``).

An executor fault either hits an executor the nemesis picks (``window: any``, seeded) or is armed
(``window: in-txn``): the first task of the Spark job to get inside its transaction takes it, and
signals its own executor JVM and Python worker (harness/sparkjob/sink.py), so the fault lands while
that task's transaction is open.
"""

from __future__ import annotations

import signal
from typing import Any, Literal

from pydantic import Field

from chaos.control import DriverAction, SparkControl
from chaos.faults.base import FaultBase, FaultContext, Heal, no_heal


class _SparkFault(FaultBase):
    category = "spark"
    needs_workload = "spark-job"
    needs_spark_cluster = True


def _spark(ctx: FaultContext, kind: str) -> SparkControl:
    if ctx.spark is None:
        raise RuntimeError(f"{kind} needs a standalone Spark cluster (scenario spark: standalone); this run has none")
    return ctx.spark


class _ExecutorFault(_SparkFault):
    #: any: an executor the nemesis picks (seeded); in-txn: the executor of the first task to get
    #: inside its Kafka transaction
    window: Literal["any", "in-txn"] = "any"

    def _hit(self, ctx: FaultContext, action: DriverAction) -> list[dict[str, Any]]:
        """Do ``action`` to one executor (with its Python workers); what was hit, as recorded."""
        spark = _spark(ctx, self.kind)
        sig = signal.SIGKILL if action == "kill" else signal.SIGSTOP
        if self.window == "in-txn":
            hit: list[dict[str, Any]] = []
            for name in ctx.control.of_kind("spark-job"):
                ctx.control.arm_executor(name, action)
                fired = ctx.control.await_executor_fault(name, ctx.stop)
                if fired is None:
                    continue  # the run ended first
                pids = [p for p in (fired.get("executor_pid"), fired.get("worker_pid")) if p]
                ctx.start(self.kind, workload=name, window=self.window, pid=fired.get("executor_pid"),
                          batch=fired.get("batch"), partition=fired.get("tp"))
                hit.append({"workload": name, "pids": pids})
            return hit
        executors = spark.executors()
        if not executors:
            raise RuntimeError(f"{self.kind}: no Spark executor is running")
        e = ctx.rnd.choice(executors)
        pids = spark.signal_tree(int(e["pid"]), sig)
        ctx.start(self.kind, workload="spark-job", window=self.window, pid=e["pid"], executor=e["executor_id"],
                  worker=e["worker"])
        return [{"workload": "spark-job", "pids": pids}]


class KillExecutor(_ExecutorFault):
    """SIGKILL an executor JVM (and its Python workers): its tasks are lost and rerun elsewhere; its
    worker launches a new executor."""

    kind: Literal["kill-executor"] = "kill-executor"
    holds = False

    def apply(self, ctx: FaultContext) -> Heal:
        for h in self._hit(ctx, "kill"):
            ctx.end(self.kind, workload=h["workload"])
        return no_heal


class PauseExecutor(_ExecutorFault):
    """SIGSTOP an executor JVM and its Python workers for ``duration`` (a GC pause, a stalled VM):
    its open transaction waits, a speculative or retried attempt may fence it; then SIGCONT."""

    kind: Literal["pause-executor"] = "pause-executor"

    def apply(self, ctx: FaultContext) -> Heal:
        spark = _spark(ctx, self.kind)
        hit = self._hit(ctx, "freeze")

        def heal() -> None:
            for h in hit:
                for pid in h["pids"]:
                    spark.signal_tree(int(pid), signal.SIGCONT)
                ctx.end(self.kind, workload=h["workload"])

        return heal


class KillWorker(_SparkFault):
    """SIGKILL a worker JVM (its executors exit with it); started again after ``duration`` unless
    the run ended first (heal-all starts it then)."""

    kind: Literal["kill-worker"] = "kill-worker"
    #: which worker (1-based), or one picked by the seed
    worker: int | Literal["random"] = Field("random")

    def apply(self, ctx: FaultContext) -> Heal:
        spark = _spark(ctx, self.kind)
        ids = spark.worker_ids()
        i = ctx.rnd.choice(ids) if self.worker == "random" else self.worker
        if i not in ids:
            raise RuntimeError(f"kill-worker: no worker {i}; the cluster has {ids}")
        pid = spark.kill_worker(int(i))
        ctx.start(self.kind, workload="spark-job", worker=i, pid=pid)

        def heal() -> None:
            if not ctx.stop.is_set():
                spark.start_worker(int(i))
            ctx.end(self.kind, workload="spark-job", worker=i)

        return heal

