"""``bump-producer-epoch``: raise a ``transactional.id``'s producer epoch to a chosen value by sending
its transaction coordinator InitProducerId in a loop, so that a run can reach the epoch boundary
(32767, ``Short.MaxValue``) in minutes instead of 32,000 transactions (docs/KAFKA-BUGS.md: the
broker bugs KAFKA-20090 and KAFKA-19367 need a transaction at epoch 32766).

Each InitProducerId with producer id and epoch -1 ("no expectation") on an Empty or Complete
transaction is one ``prepareIncrementProducerEpoch`` at the coordinator: one append to
``__transaction_state``, epoch + 1. At 32766 the coordinator draws a new producer id at epoch 0
instead, so ``to`` is at most 32765, and a start above ``to`` climbs through that rotation.

The requests go on a socket of the fault's own to the coordinator's DIRECT listener, which no fault
touches, encoded and decoded with kafka-python's protocol classes (no client object: no metadata,
no retries of its own that would hide what the coordinator answered).

```yaml
- {at: 1, kind: bump-producer-epoch, of: eos-txn-producer-0, to: 32760, pause: true, timeout_s: 480}
```

``timeout_s`` is the pump's budget, not a wall: past it the pump goes on while its rate over the last
seconds projects the end within ``STRETCH`` budgets (harness/base/progress_deadline.py), and the run is
extended by as much as the pump overran (``FaultContext.extend_run``), so what the scenario schedules
after the pump keeps its time on a slow machine.
"""

from __future__ import annotations

import logging
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, field_validator

from chaos.faults.app_id import with_app_id
from chaos.faults.base import MAX_SECONDS, FaultBase, FaultContext, Heal, no_heal
from harness.base.errors import FaultError, WaitTimeout
from harness.base.progress_deadline import ProgressDeadline

log = logging.getLogger(__name__)

#: The highest ``to``: an InitProducerId at 32766 (``Short.MaxValue - 1``, "exhausted") rotates to a
#: new producer id at epoch 0 instead of bumping, so 32765 -> 32766 is the last bump there is.
MAX_TO = 32765
#: InitProducerId v4 (flexible, producer id and epoch in the request: KIP-360) is on every release
#: the harness runs (3.9.0 and later answer v0-v5).
INIT_VERSION = 4
#: DescribeTransactions (KIP-664, 3.0+) has one version.
DESCRIBE_VERSION = 0
CLIENT_ID = "eos-chaos-epoch-pump"
#: The transaction timeout each InitProducerId sets (Kafka's default; under any broker's
#: ``transaction.max.timeout.ms``). The workload's own InitProducerId sets its own again.
TXN_TIMEOUT_MS = 60_000
#: One request's round trip: a replicated append to ``__transaction_state`` takes milliseconds; a
#: broker that does not answer in this long is treated as gone (reconnect, look the coordinator up).
REQUEST_TIMEOUT_S = 10.0
#: Between retries of a retriable answer or a broken connection: doubling from the first to the last.
BACKOFF_S = (0.01, 1.0)
#: A response bigger than this is not an InitProducerId or DescribeTransactions answer.
MAX_RESPONSE_BYTES = 1 << 20
#: InitProducerId requests sent ahead of their answers on one connection: the broker still handles
#: them one by one, but never waits for the pump's process to be scheduled between two (on a loaded
#: 2-core machine that wait was much of a bump's cost). Never more than the bumps still needed, and
#: one at a time on a new connection until an answer says the epoch, so a lost connection with
#: requests in flight cannot carry the epoch past ``to``.
PIPELINE = 8
#: Log progress every this many bumps (a pump to 32760 takes minutes).
LOG_EVERY = 5000

# Kafka's error codes the pump acts on (org.apache.kafka.common.protocol.Errors)
NONE, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR = 0, 14, 15, 16
CONCURRENT_TRANSACTIONS = 51
#: Asked again on the same connection: the first request fenced an open transaction, whose abort
#: is still being written (``PREPARE_ABORT``).
RETRY_HERE = frozenset({CONCURRENT_TRANSACTIONS})
#: The coordinator moved or is loading its partition: look it up again, on a new connection.
RELOCATE = frozenset({COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR})

#: Opens a connection to ``host:port`` within ``timeout`` seconds (a test gives a fake coordinator).
Connect = Callable[[str, float], socket.socket]


def connect(address: str, timeout: float) -> socket.socket:
    host, _, port = address.rpartition(":")
    return socket.create_connection((host, int(port)), timeout=timeout)


def error_name(code: int) -> str:
    """Kafka's name for an error code (``CONCURRENT_TRANSACTIONS``; ``error code N`` if unknown)."""
    from kafka.errors import for_code

    if code == -1:
        return "UNKNOWN_SERVER_ERROR"
    name = str(for_code(code).message)
    return f"error code {code}" if name == "UNKNOWN" else name


class ProtocolProblem(Exception):
    """An answer that is not the response to the request just sent (size, correlation id, body)."""


class Conversation:
    """Requests and their responses on one socket to one broker, in order: ``call`` one at a time,
    or ``send`` several ahead and ``receive`` their answers (a broker reads a connection's next
    request only after answering the one before, so requests sent ahead are handled one by one)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.reader = sock.makefile("rb")  # read(n) returns n bytes, or fewer only at the end of the stream
        self.correlation_id = 0
        #: the correlation ids sent and not yet answered, oldest first
        self.waiting: deque[int] = deque()

    def _read(self, n: int) -> bytes:
        data = self.reader.read(n)
        if len(data) < n:
            raise ConnectionError(f"the broker closed the connection ({len(data)} of {n} bytes read)")
        return bytes(data)

    def send(self, request: Any, version: int, timeout: float) -> None:
        """Send ``request`` (a kafka-python message) at ``version``; ``OSError`` if the socket fails."""
        self.correlation_id += 1
        request.with_header(correlation_id=self.correlation_id, client_id=CLIENT_ID)
        self.sock.settimeout(timeout)
        self.sock.sendall(request.encode(version=version, header=True, framed=True))
        self.waiting.append(self.correlation_id)

    def receive(self, response_class: Any, version: int, timeout: float) -> Any:
        """The decoded answer to the oldest request sent. ``OSError`` if the socket fails,
        ``ProtocolProblem`` if the answer is not that response."""
        expected = self.waiting.popleft()
        self.sock.settimeout(timeout)
        size = struct.unpack(">i", self._read(4))[0]
        if not 0 < size <= MAX_RESPONSE_BYTES:
            raise ProtocolProblem(f"response of {size} bytes to {response_class.__name__} v{version}")
        body = self._read(size)
        try:
            response = response_class.decode(body, version=version, header=True)
        except Exception as exc:  # noqa: BLE001 - kafka-python raises whatever its decoder meets
            raise ProtocolProblem(f"undecodable {response_class.__name__} v{version}: {exc}") from exc
        if response.header.correlation_id != expected:
            raise ProtocolProblem(f"response with correlation id {response.header.correlation_id}, "
                                  f"expected {expected}")
        return response

    def call(self, request: Any, response_class: Any, version: int, timeout: float) -> Any:
        """Send ``request`` at ``version``; its decoded response (``send``, then ``receive``)."""
        self.send(request, version, timeout)
        return self.receive(response_class, version, timeout)

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


def bumps_to(epoch: int, to: int) -> int:
    """The InitProducerId answers from ``epoch`` to ``to``: straight up, or up to 32766, the rotation
    to a new producer id at 0, and up again."""
    return to - epoch if epoch <= to else (MAX_TO + 1 - epoch) + 1 + to


def init_producer_id_request(transactional_id: str, producer_id: int = -1, producer_epoch: int = -1) -> Any:
    """InitProducerId for ``transactional_id``. With no expected producer id or epoch (-1, -1), the
    pump's: on an Empty or Complete transaction the coordinator bumps its epoch by one. With the
    producer's own (KIP-360, a client bumping its epoch after an error): the coordinator bumps that
    epoch, takes a request that names the epoch it bumped last for a retry, and fences any other."""
    from kafka.protocol.producer.transaction import InitProducerIdRequest

    return InitProducerIdRequest[INIT_VERSION](transactional_id=transactional_id, transaction_timeout_ms=TXN_TIMEOUT_MS,
                                               producer_id=producer_id, producer_epoch=producer_epoch)


@dataclass
class Pumped:
    """Where a pump ended."""

    producer_id: int
    producer_epoch: int
    #: InitProducerId requests sent (retries included)
    requests: int
    #: of which answered with a new epoch
    bumps: int
    seconds: float


class Pump:
    """InitProducerId for one ``transactional.id`` in a loop, each answered by its coordinator."""

    def __init__(self, transactional_id: str, locate: Callable[[], int], address: Callable[[int], str],
                 stop: threading.Event, deadline: ProgressDeadline, open_socket: Connect = connect,
                 extend_run: Callable[[float], None] = lambda s: None) -> None:
        self.transactional_id = transactional_id
        self.locate, self.address, self.open_socket = locate, address, open_socket
        self.stop, self.deadline = stop, deadline
        #: told the seconds the pump is past its budget, as it goes (the run waits as much longer)
        self.extend_run = extend_run
        self.node: int | None = None  # the coordinator the conversation is with
        self._conv: Conversation | None = None
        #: every node a connection was tried to, in order (a NOT_COORDINATOR moves it)
        self.nodes: list[int] = []

    def _timeout(self) -> float:
        return max(0.1, min(REQUEST_TIMEOUT_S, self.deadline.bound_s - self.deadline.elapsed()))

    def _conversation(self) -> Conversation:
        if self._conv is None:
            try:
                self.node = self.locate()
            except Exception as exc:  # noqa: BLE001 - metadata during a broker restart fails many ways: retried
                raise LookupError(f"the coordinator of {self.transactional_id}: {type(exc).__name__}: {exc}") from exc
            self.nodes.append(self.node)
            self._conv = Conversation(self.open_socket(self.address(self.node), self._timeout()))
        return self._conv

    def drop(self) -> None:
        """Close the connection; the next request looks the coordinator up again."""
        if self._conv is not None:
            self._conv.close()
            self._conv = None

    def describe(self) -> dict[str, object]:
        """The coordinator's view of the transactional.id (``state``, ``producer_id``,
        ``producer_epoch``), or ``error`` saying why not: one attempt, for the fault's events."""
        from kafka.protocol.admin import DescribeTransactionsRequest, DescribeTransactionsResponse

        try:
            response = self._conversation().call(DescribeTransactionsRequest[DESCRIBE_VERSION](
                transactional_ids=[self.transactional_id]), DescribeTransactionsResponse, DESCRIBE_VERSION,
                self._timeout())
        except (OSError, LookupError, ProtocolProblem) as exc:
            self.drop()
            return {"error": f"{type(exc).__name__}: {exc}"}
        states = response.transaction_states
        if len(states) != 1:
            return {"error": f"DescribeTransactions answered {len(states)} states for one transactional.id"}
        s = states[0]
        if s.error_code != NONE:
            return {"error": error_name(s.error_code)}
        return {"state": s.transaction_state, "producer_id": s.producer_id, "producer_epoch": s.producer_epoch}

    def run(self, to: int) -> Pumped:
        """Bump until an answer carries epoch ``to``. ``WaitTimeout`` when the deadline gives up (past
        its budget with no projected end within its bound: progress, rate and projection said) or when
        ``stop`` is set first (the run ended: the pump did not do what the scenario says),
        ``FaultError`` on an answer that is neither a new epoch nor retriable."""
        from kafka.protocol.producer.transaction import InitProducerIdResponse

        started = time.monotonic()
        self.deadline.start()
        requests = bumps = 0
        producer_id, epoch = -1, -1
        backoff = BACKOFF_S[0]
        last_problem = ""

        def where() -> str:
            return (f"producer id {producer_id} epoch {epoch} after {requests} InitProducerId requests "
                    f"({bumps} bumps) in {time.monotonic() - started:.1f}s"
                    + (f"; last problem: {last_problem}" if last_problem else ""))

        try:
            while True:
                if self.stop.is_set():
                    raise WaitTimeout(f"the run ended before epoch {to} was reached: {where()}")
                if self.deadline.expired():
                    raise WaitTimeout(f"epoch {to} not reached: {where()}; bumps {self.deadline.state()}")
                try:
                    conv = self._conversation()
                    known = epoch >= 0 and conv.correlation_id > len(conv.waiting)  # an answer on this connection
                    room = min(PIPELINE, bumps_to(epoch, to)) if known else 1
                    while len(conv.waiting) < room:
                        requests += 1
                        conv.send(init_producer_id_request(self.transactional_id), INIT_VERSION, self._timeout())
                    response = conv.receive(InitProducerIdResponse, INIT_VERSION, self._timeout())
                    code = response.error_code
                except (OSError, LookupError, ProtocolProblem) as exc:
                    # a broken connection, a coordinator being restarted, no metadata yet: again
                    last_problem = f"{type(exc).__name__}: {exc}"
                    code = None
                if code == NONE:
                    producer_id, epoch = response.producer_id, response.producer_epoch
                    bumps += 1
                    backoff = BACKOFF_S[0]
                    self.deadline.update(bumps, bumps_to(epoch, to))
                    if (over := self.deadline.overrun_s()) > 0:
                        self.extend_run(over)
                    if epoch == to:
                        return Pumped(producer_id, epoch, requests, bumps, time.monotonic() - started)
                    if bumps % LOG_EVERY == 0:
                        log.info(f"bump-producer-epoch {self.transactional_id}: {where()}; {self.deadline.state()}")
                    continue
                if code is not None and code not in RETRY_HERE | RELOCATE:
                    raise FaultError(f"InitProducerId for {self.transactional_id} on node {self.node} answered "
                                     f"{error_name(code)}: {where()}")
                if code is not None:
                    last_problem = f"node {self.node} answered {error_name(code)}"
                if code is None or code in RELOCATE:
                    self.drop()
                self.stop.wait(backoff)
                backoff = min(backoff * 2, BACKOFF_S[1])
        finally:
            self.drop()


class OnTransactionalId(FaultBase):
    """What the faults that talk to one ``transactional.id``'s coordinator themselves share
    (``bump-producer-epoch``, ``retry-rotation-after-failover``): the id (``of``), the workload
    processes of it frozen meanwhile (``pause``), and the epoch pump's budget (``timeout_s``)."""

    category = "producer"
    holds = False
    #: the transactional.id (default: the run's, as for the ``coordinator`` target: the first
    #: txn-producer's)
    of: str | None = None
    #: freeze (SIGSTOP) the workload processes that use ``of`` while the fault talks to its
    #: coordinator, resume them after: one fence when they resume instead of a fence on every bump
    pause: bool = True
    #: the pump's budget: past it, it goes on while its recent rate projects the end within
    #: ``STRETCH`` budgets, and the run waits as much longer
    timeout_s: float = Field(600.0, gt=0, le=MAX_SECONDS, allow_inf_nan=False)

    @field_validator("of")
    @classmethod
    def _one_id(cls, of: str | None) -> str | None:
        if of is not None and (not of or of.endswith("*")):
            raise ValueError(f"{of!r} is not a transactional.id; name one (a prefix ending in * is not)")
        return of

    def _transactional_id(self, ctx: FaultContext) -> str:
        txn_id = self.of or ctx.defaults.transactional_id
        if self.of is not None:
            # an app's ids are its run's id and what the app adds (a Flink sink's "{id}-0-0-0")
            txn_id = with_app_id(self.of, ctx.defaults, self.kind)
        if txn_id is None:
            raise LookupError(f"{self.kind} without `of`: the run has no default transactional.id")
        if txn_id.endswith("*"):
            raise LookupError(f"{self.kind} without `of`: the run's default is the prefix {txn_id!r} (an app's "
                              "transactional.ids); name one")
        return txn_id

    def _to_freeze(self, ctx: FaultContext, txn_id: str) -> list[str]:
        """The workload processes ``pause`` freezes (none without it); ``LookupError`` when it is
        asked for and no process of the run uses ``txn_id``."""
        frozen = ctx.control.using_transactional_id(txn_id) if self.pause else []
        if self.pause and not frozen:
            raise LookupError(f"{self.kind} pause: no workload process of this run uses transactional.id {txn_id!r} "
                              "(pause: false pumps it anyway)")
        return frozen

    def _pump(self, ctx: FaultContext, txn_id: str, target: int) -> tuple[Pump, ProgressDeadline]:
        """A pump of ``txn_id`` to epoch ``target`` at its coordinator, on ``timeout_s``."""
        deadline = ProgressDeadline(f"{self.kind} of {txn_id} to {target}", self.timeout_s)
        return Pump(txn_id, lambda: ctx.resolve("coordinator", txn_id), ctx.cluster.direct_address, ctx.stop,
                    deadline, open_socket=connect, extend_run=ctx.extend_run), deadline


def pumped_json(done: Pumped, deadline: ProgressDeadline) -> dict[str, object]:
    """Where a pump ended, for a fault's stop event (``overrun_s``: past its budget, the run extended so)."""
    out: dict[str, object] = {"producer_id": done.producer_id, "producer_epoch": done.producer_epoch,
                              "requests": done.requests, "bumps": done.bumps, "seconds": round(done.seconds, 3)}
    if (over := deadline.overrun_s()) > 0:
        out["overrun_s"] = round(over, 1)
    return out


class BumpProducerEpoch(OnTransactionalId):
    """Send InitProducerId for ``of`` to its transaction coordinator until its producer epoch is
    ``to``, with the workload processes that use ``of`` frozen meanwhile (``pause``). Blocks until
    done (``duration`` is not used); missing ``timeout_s`` is an error of the run."""

    kind: Literal["bump-producer-epoch"] = "bump-producer-epoch"
    #: the epoch to stop at
    to: int

    @field_validator("to")
    @classmethod
    def _below_the_rotation(cls, to: int) -> int:
        if not 0 <= to <= MAX_TO:
            raise ValueError(f"{to} is not an epoch the pump can stop at; allowed 0..{MAX_TO} (InitProducerId at "
                             f"{MAX_TO + 1}, Short.MaxValue - 1, draws a new producer id at epoch 0 instead of bumping)")
        return to

    def apply(self, ctx: FaultContext) -> Heal:
        txn_id = self._transactional_id(ctx)
        frozen = self._to_freeze(ctx, txn_id)
        pump, deadline = self._pump(ctx, txn_id, self.to)
        before = pump.describe()
        node = pump.node if pump.node is not None else ctx.resolve("coordinator", txn_id)
        ctx.start(self.kind, node=node, of=txn_id, to=self.to, paused=frozen, before=before)
        for name in frozen:
            ctx.control.pause(name)
        outcome: dict[str, object] = {}
        try:
            outcome = pumped_json(pump.run(self.to), deadline)
        except Exception as exc:
            outcome = {"error": f"{type(exc).__name__}: {exc}"}
            raise
        finally:
            for name in frozen:
                ctx.control.resume(name)
            pumped_on = list(dict.fromkeys(pump.nodes))  # the coordinators it talked to (NOT_COORDINATOR moves it)
            after = pump.describe()
            pump.drop()
            ctx.end(self.kind, node=node, of=txn_id, nodes=pumped_on, after=after, **outcome)
        return no_heal
