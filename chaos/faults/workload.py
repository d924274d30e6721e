"""Faults on workload processes (through ``chaos.control.WorkloadControl``): kill or freeze a
workload kind's processes, and the Spark driver faults armed at a point of a micro-batch."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal

from pydantic import Field

from chaos import targets
from chaos.control import DriverAction, Incarnation, WorkloadControl
from chaos.faults.base import FaultBase, FaultContext, Heal, no_heal


class _WorkloadFault(FaultBase):
    category = "workload"
    #: which workload kind's processes (every process of it)
    workload: str
    #: only its process ``<workload>-<instance>`` (one app instance frozen while the others run on)
    instance: int | None = Field(None, ge=0)

    def workloads(self, control: WorkloadControl) -> list[str]:
        """Every process of ``workload``, or its ``instance`` (none when there is no such instance)."""
        names = control.of_kind(self.workload)
        return names if self.instance is None else [n for n in names if n == f"{self.workload}-{self.instance}"]

    def _hit(self, ctx: FaultContext, act: Callable[[str], None], **facts: object) -> list[str]:
        """``act`` on every process of ``workload`` (or its ``instance``), each recorded as started
        (with ``facts``); their names. ``LookupError`` when the instance is not one of them."""
        names = self.workloads(ctx.control)
        if self.instance is not None and not names:
            raise LookupError(f"{self.kind} instance {self.instance}: no process {self.workload}-{self.instance} "
                              f"(there are {sorted(ctx.control.of_kind(self.workload))})")
        for name in names:
            ctx.start(self.kind, workload=name, **facts)
            act(name)
        return names


class KillWorkload(_WorkloadFault):
    """SIGKILL the processes; restarted after ``duration``, unless the run ended first (then they
    stay gone, as a crashed client that never comes back: its open transaction is left to the
    coordinator's timeout) or the supervisor restarts them itself."""

    kind: Literal["kill-workload"] = "kill-workload"
    #: an app's kill: first wait (``IN_TRANSACTION_WAIT_S`` at most) until one of its transactions is
    #: open at its coordinator, then kill at once; the start record says how long it waited and
    #: which were open (``in_transaction``), the stop record which of them the kill left open
    in_transaction: bool = False

    def apply(self, ctx: FaultContext) -> Heal:
        facts = await_open_transaction(ctx, self.workloads(ctx.control)) if self.in_transaction else {}
        names = self._hit(ctx, ctx.control.kill, **facts)  # a frozen instance is killed as it is
        killed = time.monotonic()

        # The left-open listing stays here, not in the ordinary end record (``ctx.end``, made once
        # the workload is back): it must come after every kill of this fault and before any restart,
        # whose first transaction fences what the killed instance left open; and it needs the
        # kill's instant. It is an app's only (``left_open``): the harness's own workloads record
        # every transaction in the history, from which the runner's ``FaultHit`` (harness/history/
        # hits.py) already says what a kill landed in; an app's transactions are not in the history,
        # so its coordinators' listing is the only evidence (tests/unit/test_faults.py).
        def heal() -> None:
            over = ctx.stop.is_set()
            left = left_open(ctx, killed)  # before the restart, whose first transaction would fence them
            for name in names:
                if not over and not ctx.control.restarts_itself(name):
                    ctx.control.restart(name)
                ctx.end(self.kind, workload=name, **left)

        return heal


#: At least this long open, and since before the kill: an app's live instances end their
#: transactions far sooner (a Kafka Streams app on exactly_once_v2 commits every 100 ms; under load, a
#: second has been seen), and nothing ends a killed producer's before its successor fences it or its
#: timeout (Streams': 10 s) aborts it.
OPEN_FOR_MS = 1000
#: what the broker's clock (a transaction's start) and ours may disagree by, taken off the time since
#: the kill
CLOCK_SLACK_MS = 200


#: How long an ``in_transaction`` kill waits for one of the app's transactions to be open: a Kafka
#: Streams app on exactly_once_v2 has one open most of the time while it processes (it commits every
#: 100 ms), none while a rebalance holds its tasks (one took 17 s on this loaded machine, after a
#: restart); past it, the kill lands all the same, and its record says none was open
IN_TRANSACTION_WAIT_S = 20.0
#: The time a listing shows none of the app's transactional.ids that an earlier one showed is not
#: counted against IN_TRANSACTION_WAIT_S: their coordinators are away (a broker fault of the same
#: schedule killed one, and the others are loading its partitions), which says nothing of the app.
#: Seen in `make test`: the word count's second kill began waiting at 12 s, its coordinator was
#: killed at 17 s, and no id was listed again before the 20 s ran out. Never longer than this in all
IN_TRANSACTION_BOUND_S = 90.0
#: Between two listings while waiting: each asks every broker, tens of milliseconds
IN_TRANSACTION_POLL_S = 0.05
#: Once a listing shows every id open, the instances to be killed are frozen and the listing asked
#: again, after this long: what they sent before the stop (an EndTxn already on the wire) reaches
#: its coordinator and is applied, so a listing that still shows every id open shows theirs as it
#: will be at the kill. Without the freeze, an instance committing every 100 ms ended its transaction
#: between the listing and the kill on a loaded machine (both word-count kills of a `make test` run).
IN_TRANSACTION_SETTLE_S = 0.3


def await_open_transaction(ctx: FaultContext, names: list[str]) -> dict[str, object]:
    """Wait, ``IN_TRANSACTION_WAIT_S`` at most (or until the run stops), until every transactional.id
    of the app's (``TargetDefaults.transactional_id``, ``{id}*``) that its coordinators know has a
    transaction open, and still has with the processes ``names`` frozen (SIGSTOP): then the instance
    about to be killed has one, whichever it is (a Kafka Streams instance's ids hold its process id,
    which the harness does not know), and cannot end it before the kill. They are left frozen for the
    kill then; after a listing that does not confirm, resumed and the wait goes on.

    The start record's ``in_transaction``: the ids open then and every id known (``open`` short of
    ``known`` when the wait ran out: the kill lands all the same, nothing frozen), how long it waited,
    how many times it froze the instances (``freezes``), and how much of the wait no id was listed
    after some had been (``coordinators_away_s``: not counted against the wait, up to
    ``IN_TRANSACTION_BOUND_S`` in all). Nothing for a workload whose ids are not an app's."""
    prefix = ctx.defaults.transactional_id
    if not prefix or not prefix.endswith("*"):
        return {}
    t0 = last = time.monotonic()
    seen = False  # a listing showed some of the app's ids
    away = 0.0  # seconds in which listings showed none of them after one had (IN_TRANSACTION_BOUND_S)
    frozen, freezes = False, 0
    try:
        while True:
            try:
                states = targets.transaction_states(ctx.cluster.direct_bootstrap, prefix[:-1])
            except Exception as exc:  # noqa: BLE001 - a record of the fault, never a reason for it to fail
                return {"in_transaction": {"open": [], "error": f"{type(exc).__name__}: {exc}",
                                           "waited_s": round(time.monotonic() - t0, 3), "freezes": freezes}}
            now = time.monotonic()
            if not states and seen:
                away += now - last
            seen, last = seen or bool(states), now
            found = sorted(t for t, state in states.items() if state == targets.ONGOING)
            every_open = bool(found) and len(found) == len(states)
            if every_open and names and not frozen:  # confirm it with them frozen
                _freeze(ctx, names, True)
                frozen, freezes = True, freezes + 1
                ctx.stop.wait(IN_TRANSACTION_SETTLE_S)
                continue
            waited = round(now - t0, 3)
            budget = min(IN_TRANSACTION_WAIT_S + away, IN_TRANSACTION_BOUND_S)
            if every_open or waited >= budget or ctx.stop.is_set():
                if frozen and not every_open:
                    _freeze(ctx, names, False)
                    frozen = False
                return {"in_transaction": {"open": found, "known": sorted(states),
                                           "waited_s": waited, "freezes": freezes,
                                           **({"coordinators_away_s": round(away, 3)} if away else {})}}
            if frozen:
                _freeze(ctx, names, False)
                frozen = False
            time.sleep(IN_TRANSACTION_POLL_S)
    except BaseException:
        if frozen:  # never left frozen by a wait that did not end in the kill
            _freeze(ctx, names, False)
        raise


def _freeze(ctx: FaultContext, names: list[str], stop: bool) -> None:
    for name in names:
        (ctx.control.pause if stop else ctx.control.resume)(name)


def left_open(ctx: FaultContext, killed: float) -> dict[str, object]:
    """The kill's stop record's extra fields, for an app (whose transactional.ids start with its id:
    ``TargetDefaults.transactional_id`` is ``{id}*``): ``open_transactions``, those of its ids whose
    transaction began before the kill (``time.monotonic()`` at ``killed``) and is still open, at least
    ``OPEN_FOR_MS`` old; a kill that landed inside a transaction left one. A listing that fails is
    ``open_transactions_error`` instead."""
    prefix = ctx.defaults.transactional_id
    if not prefix or not prefix.endswith("*"):
        return {}
    open_for = max(OPEN_FOR_MS, int((time.monotonic() - killed) * 1000) - CLOCK_SLACK_MS)
    try:
        return {"open_transactions": targets.open_transactions(ctx.cluster.direct_bootstrap, prefix[:-1], open_for)}
    except Exception as exc:  # noqa: BLE001 - a record of the fault, never a reason for it to fail
        return {"open_transactions_error": f"{type(exc).__name__}: {exc}"}


class PauseWorkload(_WorkloadFault):
    """SIGSTOP the processes; resumed after ``duration``."""

    kind: Literal["pause-workload"] = "pause-workload"

    def apply(self, ctx: FaultContext) -> Heal:
        names = self._hit(ctx, ctx.control.pause)

        def heal() -> None:
            for name in names:
                ctx.control.resume(name)
                ctx.end(self.kind, workload=name)

        return heal


class _DriverFault(FaultBase):
    """Faults on the Spark job's driver at a chosen point of a micro-batch (harness/sparkjob/job.py)."""

    category = "workload"
    needs_workload = "spark-job"
    #: where in a micro-batch: inside its open transaction, after the transaction committed but
    #: before Spark's commit log, or whichever comes first
    window: Literal["in-txn", "after-commit", "any"] = "any"

    def _armed(self, ctx: FaultContext, name: str, action: DriverAction) -> bool:
        """Arm ``name``, record the start, wait until it fired (False: the run ended first)."""
        pid = ctx.control.arm_driver(name, self.window, action)
        ctx.start(self.kind, workload=name, window=self.window, pid=pid)
        return ctx.control.await_driver_fault(name, action, ctx.stop)


class KillDriver(_DriverFault):
    """SIGKILL the driver at ``window``; the supervisor restarts it from its checkpoint."""

    kind: Literal["kill-driver"] = "kill-driver"
    holds = False

    def apply(self, ctx: FaultContext) -> Heal:
        for name in ctx.control.of_kind("spark-job"):
            self._armed(ctx, name, "kill")
            ctx.end(self.kind, workload=name)
        return no_heal


class ZombieDriver(_DriverFault):
    """Freeze the driver at ``window`` and start a new incarnation; after ``duration`` resume the
    old one, which Kafka must fence (it exits)."""

    kind: Literal["zombie-driver"] = "zombie-driver"

    def apply(self, ctx: FaultContext) -> Heal:
        zombies: list[tuple[str, Incarnation]] = []
        for name in ctx.control.of_kind("spark-job"):
            if self._armed(ctx, name, "freeze"):
                zombies.append((name, ctx.control.new_incarnation(name)))
            else:
                ctx.end(self.kind, workload=name)

        def heal() -> None:
            for name, old in zombies:
                ctx.control.end_zombie(name, old)
                ctx.end(self.kind, workload=name)

        return heal
