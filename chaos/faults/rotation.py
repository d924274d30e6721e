"""``retry-rotation-after-failover``: KAFKA-20357's sequence, played by a client of the fault's own
(docs/KAFKA-BUGS.md). A producer that bumps its own epoch (KIP-360: an InitProducerId that carries
its producer id and epoch) at the exhausted epoch 32766 makes the coordinator rotate to a new
producer id at epoch 0, which it appends to ``__transaction_state``. When the coordinator fails
over before the client has the answer, the client sends the same request to the new coordinator.
That one loaded the transaction from the log, which held no ``lastProducerEpoch`` before
apache/kafka PR #22096 (in no release: 4.0.0 to 4.4.0 are affected), so it takes the retry for a
zombie and answers PRODUCER_FENCED. With the fix it answers NONE with the new producer id.

The steps, on connections of the fault's own to the coordinator's DIRECT listener (as the epoch
pump's, chaos/faults/epoch.py), with the workload processes of ``of`` frozen all along (a resumed
producer's own InitProducerId would move the epoch the retry names):

1. pump ``of``'s epoch to 32765 (``Pump``);
2. InitProducerId(P, 32765), answered 32766; then InitProducerId(P, 32766), the rotation, answered
   with the new producer id P2 at epoch 0;
3. kill -9 the node that answered the rotation;
4. the same InitProducerId(P, 32766), to whichever node the coordinator lookup names (the leader of
   the id's ``__transaction_state`` partition, chaos/targets.py), asked again while the answer is
   that the coordinator moved or is loading, or the lookup or the connection fails, for up to
   ``failover_timeout_s``. Its answer is the fault's finding;
5. the killed node started again, and the cluster waited on until it is healthy.

```yaml
- {at: 1, kind: retry-rotation-after-failover, of: eos-txn-producer-0, pause: true, timeout_s: 180, failover_timeout_s: 120}
```

An error in the retry's answer is counted in the history's ``errors_seen`` as
``retry-rotation-after-failover/<NAME>`` (``harness.history.model.FAULT_ERRORS``). A plain
PRODUCER_FENCED would prove nothing: the clients may meet one of their own whatever the broker did
with the retry (the frozen producer resumes fenced by the pump; the kill disturbs the others). So a
scenario proves the race was met with
``expect.errors: ["retry-rotation-after-failover/PRODUCER_FENCED"]``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from chaos.faults import epoch
from chaos.faults.base import FaultContext, Heal, no_heal
from chaos.faults.epoch import (
    INIT_VERSION,
    MAX_TO,
    NONE,
    RELOCATE,
    REQUEST_TIMEOUT_S,
    RETRY_HERE,
    Connect,
    Conversation,
    OnTransactionalId,
    ProtocolProblem,
    Pump,
    error_name,
    init_producer_id_request,
    pumped_json,
)
from harness.base.errors import FaultError
from harness.base.progress_deadline import ProgressDeadline
from harness.base.wait import wait_until
from harness.history.model import FAULT_ERRORS

#: The epoch whose InitProducerId rotates the producer id (``Short.MaxValue - 1``, "exhausted").
EXHAUSTED = MAX_TO + 1
#: The bump to 32766 and the rotation: one replicated append to ``__transaction_state`` each, on a
#: coordinator nothing faults. Generous for a loaded 2-core machine, and still short of a run.
STEP_TIMEOUT_S = 60.0
#: From the kill to the retry's answer. KRaft fences a broker that stopped heartbeating after
#: ``broker.session.timeout.ms`` (9 s), then elects new leaders for its partitions; the new leader of
#: the ``__transaction_state`` partition loads it (seconds). Allows for a loaded 2-core machine, where
#: a node restart took 30+ s (chaos/nemesis.py).
FAILOVER_TIMEOUT_S = 180.0
#: Between attempts while the coordinator is away: from the first to the last, growing 1.5 times.
RETRY_INTERVAL_S = (0.1, 1.0)
#: The broker setting that places ``__transaction_state`` on more than one broker: with one replica,
#: killing its node leaves no other node to take the partition over.
REPLICATION_FACTOR = "transaction.state.log.replication.factor"


@dataclass(frozen=True)
class Answer:
    """One InitProducerId's answer, and the node that gave it."""

    node: int
    code: int
    producer_id: int
    producer_epoch: int

    @property
    def error(self) -> str:
        """Kafka's name for the answer's error code (``NONE`` when it is 0)."""
        return "NONE" if self.code == NONE else error_name(self.code)

    def to_json(self) -> dict[str, object]:
        return {"node": self.node, "error": self.error, "producer_id": self.producer_id,
                "producer_epoch": self.producer_epoch}


def retry_outcome(rotation: Answer, retry: Answer) -> str:
    """What the retried rotation's answer says: ``fenced`` (taken for a zombie, KAFKA-20357),
    ``recognized`` (a retry: the rotation's producer id and epoch again, as with PR #22096), or
    ``other`` (the events say which answer)."""
    if retry.error == "PRODUCER_FENCED":
        return "fenced"
    if retry.code == NONE and (retry.producer_id, retry.producer_epoch) == (rotation.producer_id, rotation.producer_epoch):
        return "recognized"
    return "other"


class Asker:
    """InitProducerId requests for one ``transactional.id`` carrying the producer's own id and epoch
    (KIP-360), each sent to the node the coordinator lookup names at the time, on a new connection to that
    node's DIRECT listener. This is what a producer's retries do, without a client library whose own
    retries would hide what the coordinator answered."""

    def __init__(self, transactional_id: str, locate: Callable[[], int], address: Callable[[int], str],
                 stop: threading.Event, open_socket: Connect) -> None:
        self.transactional_id = transactional_id
        self.locate, self.address, self.open_socket, self.stop = locate, address, open_socket, stop
        #: every node a request was sent to (or a connection tried), in order
        self.nodes: list[int] = []

    def once(self, producer_id: int, producer_epoch: int, timeout: float) -> Answer:
        """One request and its answer. ``LookupError`` when no coordinator could be looked up,
        ``OSError`` when the connection fails, ``ProtocolProblem`` when the answer is not one."""
        from kafka.protocol.producer.transaction import InitProducerIdResponse

        try:
            node = self.locate()
        except Exception as exc:  # noqa: BLE001 - metadata during a failover fails many ways: asked again
            raise LookupError(f"the coordinator of {self.transactional_id}: {type(exc).__name__}: {exc}") from exc
        self.nodes.append(node)
        conv = Conversation(self.open_socket(self.address(node), timeout))
        try:
            r = conv.call(init_producer_id_request(self.transactional_id, producer_id, producer_epoch),
                          InitProducerIdResponse, INIT_VERSION, timeout)
        finally:
            conv.close()
        return Answer(node, r.error_code, r.producer_id, r.producer_epoch)

    def ask(self, producer_id: int, producer_epoch: int, timeout_s: float, what: str) -> Answer:
        """The first answer that is neither "ask the coordinator again" (``NOT_COORDINATOR``,
        ``COORDINATOR_NOT_AVAILABLE``, ``COORDINATOR_LOAD_IN_PROGRESS``, ``CONCURRENT_TRANSACTIONS``)
        nor a failed lookup or connection. ``WaitTimeout`` naming ``what`` and the last state seen
        when none comes within ``timeout_s``, or at once when the run ends first."""
        deadline = time.monotonic() + timeout_s
        last, first = "nothing asked yet", len(self.nodes)

        def attempt() -> Answer | None:
            nonlocal last
            try:
                answer = self.once(producer_id, producer_epoch,
                                   max(0.1, min(REQUEST_TIMEOUT_S, deadline - time.monotonic())))
            except (OSError, LookupError, ProtocolProblem) as exc:
                at = f"node {self.nodes[-1]}: " if self.nodes and not isinstance(exc, LookupError) else ""
                last = f"{at}{type(exc).__name__}: {exc}"
                return None
            if answer.code in RELOCATE | RETRY_HERE:
                last = f"node {answer.node} answered {answer.error}"
                return None
            return answer

        def state() -> str:
            tried = self.nodes[first:]
            return f"{last} ({len(tried)} attempts, to node {', '.join(map(str, dict.fromkeys(tried))) or 'none'})"

        return wait_until(attempt, timeout=timeout_s, what=what, state=state, interval=RETRY_INTERVAL_S[0],
                          max_interval=RETRY_INTERVAL_S[1], fatal=lambda: "the run ended" if self.stop.is_set() else None)


class RetryRotationAfterFailover(OnTransactionalId):
    """KAFKA-20357's sequence for ``of`` (the module's steps): the pump to 32765, the bump to 32766
    and the rotation in the producer's own name, a kill -9 of the coordinator that rotated, the same
    rotation request to the coordinator that took over, the killed node started again and the
    cluster healthy. Blocks until done (``duration`` is not used); a step that fails is an error of
    the run, and the node is started again all the same."""

    kind: Literal["retry-rotation-after-failover"] = "retry-rotation-after-failover"
    #: it kills a node: never at once with another broker process fault
    broker_process = True
    #: from the kill to the retry's answer: the failover, and the new coordinator's loading
    failover_timeout_s: float = Field(FAILOVER_TIMEOUT_S, gt=0, le=3600, allow_inf_nan=False)

    def broker_config_problem(self, broker_config: Mapping[str, str]) -> tuple[str, str] | None:
        factor = str(broker_config.get(REPLICATION_FACTOR, "")).strip()
        if factor.isdigit() and int(factor) < 2:
            return REPLICATION_FACTOR, (
                f"{factor!r} keeps __transaction_state on one broker, and {self.kind} kills the coordinator: no "
                "other broker could take its transactions over; leave it out (the cluster's 3) or give at least 2")
        return None

    def apply(self, ctx: FaultContext) -> Heal:
        txn_id = self._transactional_id(ctx)
        frozen = self._to_freeze(ctx, txn_id)
        pump, deadline = self._pump(ctx, txn_id, MAX_TO)
        asker = Asker(txn_id, lambda: ctx.resolve("coordinator", txn_id), ctx.cluster.direct_address, ctx.stop,
                      epoch.connect)
        before = pump.describe()
        node = pump.node if pump.node is not None else ctx.resolve("coordinator", txn_id)
        ctx.start(self.kind, node=node, of=txn_id, paused=frozen, before=before)
        for name in frozen:
            ctx.control.pause(name)
        record: dict[str, object] = {}
        started = time.monotonic()
        try:
            self._play(ctx, pump, deadline, asker, record)
        except Exception as exc:
            record["error"] = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            for name in frozen:
                ctx.control.resume(name)
            problem = self._restart(ctx, record)
            after = pump.describe()
            pump.drop()
            ctx.end(self.kind, node=node, of=txn_id, nodes=list(dict.fromkeys(pump.nodes + asker.nodes)),
                    after=after, seconds=round(time.monotonic() - started, 3), **record)
            if problem is not None and "error" not in record:
                raise problem  # the sequence went through, and the node did not come back healthy
        return no_heal

    def _play(self, ctx: FaultContext, pump: Pump, deadline: ProgressDeadline, asker: Asker,
              record: dict[str, object]) -> None:
        """Steps 1 to 4 of the module's, each answer into ``record`` as it comes."""
        done = pump.run(MAX_TO)
        record["pumped"] = pumped_json(done, deadline)
        pid, txn_id = done.producer_id, asker.transactional_id

        def request(e: int) -> str:
            return f"InitProducerId(producer id {pid}, epoch {e}) for {txn_id}"

        bump = asker.ask(pid, MAX_TO, STEP_TIMEOUT_S, f"an answer to {request(MAX_TO)}")
        record["bump"] = bump.to_json()
        if (bump.code, bump.producer_id, bump.producer_epoch) != (NONE, pid, EXHAUSTED):
            raise FaultError(f"{request(MAX_TO)} on node {bump.node} answered {bump.error} with producer id "
                             f"{bump.producer_id} epoch {bump.producer_epoch}; expected NONE with producer id {pid} "
                             f"epoch {EXHAUSTED}")
        rotation = asker.ask(pid, EXHAUSTED, STEP_TIMEOUT_S, f"an answer to {request(EXHAUSTED)}")
        record["rotation"] = rotation.to_json()
        if rotation.code != NONE or rotation.producer_epoch != 0 or rotation.producer_id == pid:
            raise FaultError(f"{request(EXHAUSTED)} on node {rotation.node} answered {rotation.error} with producer "
                             f"id {rotation.producer_id} epoch {rotation.producer_epoch}; expected NONE with a new "
                             "producer id at epoch 0 (the rotation)")
        record["killed"] = rotation.node  # before the kill: a kill that fails half-way is restarted too
        ctx.cluster.kill(rotation.node)
        killed_at = time.monotonic()
        asked = len(asker.nodes)
        retry = asker.ask(pid, EXHAUSTED, self.failover_timeout_s,
                          f"an answer to the same {request(EXHAUSTED)} from its coordinator after node {rotation.node} "
                          f"was killed (the coordinator lookup naming another node, or node {rotation.node} started again)")
        record.update(retry=retry.to_json(), failover_s=round(time.monotonic() - killed_at, 3),
                      retry_attempts=len(asker.nodes) - asked, outcome=retry_outcome(rotation, retry))
        if retry.code != NONE:
            record[FAULT_ERRORS] = [retry.error]

    @staticmethod
    def _restart(ctx: FaultContext, record: dict[str, object]) -> Exception | None:
        """Step 5: the killed node started again and the cluster healthy, the seconds each took into
        ``record``; what failed (also in ``record``), or None."""
        node = record.get("killed")
        if not isinstance(node, int):
            return None
        try:
            started = time.monotonic()
            ctx.cluster.restart(node)
            record["restarted_s"] = round(time.monotonic() - started, 3)
            ctx.cluster.wait_healthy()
            record["healthy_s"] = round(time.monotonic() - started, 3)
        except Exception as exc:  # noqa: BLE001 - recorded, and raised by apply unless an earlier step failed
            record["restart_error"] = f"{type(exc).__name__}: {exc}"
            return exc
        return None
