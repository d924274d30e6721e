"""``bump-producer-epoch`` (chaos/faults/epoch.py) against a fake transaction coordinator on socket
pairs: the bytes of its InitProducerId, the decoding of the answer, what it retries (CONCURRENT_TRANSACTIONS
on the same connection; NOT_COORDINATOR and a broken connection by looking the coordinator up
again), the producer-id rotation at 32766, its deadline and the run's stop, and the fault through the
nemesis: the workload processes of the transactional.id frozen while it pumps, and its events."""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from chaos import faults
from chaos.faults import epoch
from chaos.nemesis import Nemesis
from chaos.targets import TargetDefaults
from clusters.kafka.topology import Listener
from harness.base.errors import FaultError, WaitTimeout
from harness.base.progress_deadline import ProgressDeadline
from harness.base.wait import wait_until
from harness.history.recorder import Recorder
from tests.unit import test_faults
from tests.unit.test_faults import FakeCluster, FakeControl

TXN = "eos-txn-producer-0"
#: the nemesis events a test recorded (a fixture)
events = test_faults.events


def node_of(address: str) -> int:
    """``127.<net>.<n>.<n>:port`` (the topology's DIRECT address of node n) -> n."""
    return int(address.split(".")[2])


class FakeCoordinator:
    """Brokers on socket pairs: ``coordinator`` answers InitProducerId (bumping the epoch, rotating
    the producer id at 32766 as Kafka does) and DescribeTransactions for one transactional.id; the
    other nodes answer NOT_COORDINATOR. ``script[node]`` lists error codes a node answers first;
    ``hang_up_after`` closes each connection after that many requests."""

    def __init__(self, epoch: int = -1, producer_id: int = 1000, coordinator: int = 1,
                 script: dict[int, list[int]] | None = None, hang_up_after: int = 0) -> None:
        self.epoch, self.producer_id, self.coordinator = epoch, producer_id, coordinator
        self.script = script or {}
        self.hang_up_after = hang_up_after
        self.frames: list[bytes] = []  # every request frame received, size prefix included
        self.opened: list[int] = []  # the node of every connection opened
        self.open = 0  # connections open now (the client has not closed them)
        self._lock = threading.Lock()

    def connect(self, address: str, timeout: float) -> socket.socket:
        ours, theirs = socket.socketpair()
        self.opened.append(node_of(address))
        with self._lock:
            self.open += 1
        threading.Thread(target=self._serve, args=(theirs, node_of(address)), daemon=True).start()
        return ours

    def _serve(self, sock: socket.socket, node: int) -> None:
        from kafka.protocol.admin import DescribeTransactionsRequest
        from kafka.protocol.producer.transaction import InitProducerIdRequest

        served = 0
        with sock, sock.makefile("rb") as reader:
            while True:
                head = reader.read(4)
                if len(head) < 4:
                    with self._lock:
                        self.open -= 1  # the client closed it
                    return
                size = struct.unpack(">i", head)[0]
                frame = reader.read(size)
                with self._lock:
                    self.frames.append(struct.pack(">i", size) + frame)
                api, version = struct.unpack(">hh", frame[:4])
                request = {22: InitProducerIdRequest, 65: DescribeTransactionsRequest}[api].decode(
                    frame, version=version, header=True)
                sock.sendall(self._answer(node, request, version))
                served += 1
                if self.hang_up_after and served >= self.hang_up_after:
                    return

    def _answer(self, node: int, request: Any, version: int) -> bytes:
        from kafka.protocol.admin import DescribeTransactionsResponse
        from kafka.protocol.producer.transaction import InitProducerIdResponse

        with self._lock:
            if request.API_KEY == 65:
                known = self.epoch >= 0
                state = DescribeTransactionsResponse.TransactionState(
                    error_code=0 if known else 105, transactional_id=TXN, transaction_state="Empty",
                    transaction_timeout_ms=60000, transaction_start_time_ms=-1, producer_id=self.producer_id,
                    producer_epoch=self.epoch, topics=[])
                response = DescribeTransactionsResponse[version](throttle_time_ms=0, transaction_states=[state])
            else:
                scripted = self.script.get(node, [])
                code = scripted.pop(0) if scripted else (0 if node == self.coordinator else epoch.NOT_COORDINATOR)
                if code == 0:
                    if self.epoch >= epoch.MAX_TO + 1:  # exhausted: a new producer id (Kafka's rotation)
                        self.producer_id, self.epoch = self.producer_id + 1, 0
                    else:
                        self.epoch += 1
                response = InitProducerIdResponse[version](
                    throttle_time_ms=0, error_code=code, producer_id=self.producer_id if code == 0 else -1,
                    producer_epoch=self.epoch if code == 0 else -1)
        response.with_header(correlation_id=request.header.correlation_id)
        return bytes(response.encode(header=True, framed=True))


def pump(fake: FakeCoordinator, locate: list[int] | None = None, deadline_s: float = 5.0,
         stop: threading.Event | None = None, bound_s: float | None = None,
         extend_run: Callable[[float], None] = lambda s: None) -> epoch.Pump:
    """A pump to ``fake``; ``locate`` lists the nodes the coordinator lookups answer, in turn (the
    last one for ever after)."""
    answers = list(locate or [fake.coordinator])
    return epoch.Pump(TXN, lambda: answers.pop(0) if len(answers) > 1 else answers[0],
                      lambda n: f"127.10.{n}.{n}:19095", stop or threading.Event(),
                      ProgressDeadline("the pump", deadline_s, bound_s), open_socket=fake.connect,
                      extend_run=extend_run)


# ---------------------------------------------------------------- the wire format
def test_the_request_is_init_producer_id_v4_with_no_expected_producer_id_or_epoch() -> None:
    fake = FakeCoordinator(epoch=4)
    assert pump(fake).run(to=5).requests == 1
    client_id, txn = b"eos-chaos-epoch-pump".hex(), TXN.encode().hex()
    header = "0016" + "0004" + "00000001" + "0014" + client_id + "00"  # api 22 v4, correlation 1, no tags
    body = "13" + txn + "0000ea60" + "ff" * 8 + "ffff" + "00"  # compact id, 60 s, producer id -1, epoch -1
    assert fake.frames[0].hex() == f"{(len(header) + len(body)) // 2:08x}" + header + body


def test_a_response_is_decoded_and_must_answer_the_request_just_sent() -> None:
    from kafka.protocol.producer.transaction import InitProducerIdResponse

    ours, theirs = socket.socketpair()
    with ours, theirs:
        conv = epoch.Conversation(ours)
        # size 22 | correlation 1 | no tags | throttle 0 | error 0 | producer id 1000 | epoch 32760 | no tags
        theirs.sendall(bytes.fromhex("00000016" "00000001" "00" "00000000" "0000" "00000000000003e8" "7ff8" "00"))
        got = conv.call(epoch.init_producer_id_request(TXN), InitProducerIdResponse, epoch.INIT_VERSION, 1.0)
        assert (got.error_code, got.producer_id, got.producer_epoch) == (0, 1000, 32760)
        theirs.sendall(bytes.fromhex("00000016" "00000009" "00" "00000000" "0033" "ffffffffffffffff" "ffff" "00"))
        with pytest.raises(epoch.ProtocolProblem, match="correlation id 9, expected 2"):
            conv.call(epoch.init_producer_id_request(TXN), InitProducerIdResponse, epoch.INIT_VERSION, 1.0)


def test_error_names_are_kafka_s() -> None:
    assert [epoch.error_name(c) for c in (51, 16, -1, 90, 31999)] == [
        "CONCURRENT_TRANSACTIONS", "NOT_COORDINATOR", "UNKNOWN_SERVER_ERROR", "PRODUCER_FENCED", "error code 31999"]


# ---------------------------------------------------------------- the loop
def test_it_bumps_until_the_epoch_is_to_on_one_connection() -> None:
    fake = FakeCoordinator(epoch=10)
    done = pump(fake).run(to=20)
    assert (done.producer_id, done.producer_epoch, done.requests, done.bumps) == (1000, 20, 10, 10)
    assert fake.opened == [1]


def test_concurrent_transactions_is_asked_again_on_the_same_connection() -> None:
    fake = FakeCoordinator(epoch=0, script={1: [51, 51]})  # the first request fenced an open transaction
    p = pump(fake)
    done = p.run(to=2)
    assert (done.producer_epoch, done.requests, done.bumps) == (2, 4, 2)
    assert fake.opened == [1] and p.nodes == [1]


@pytest.mark.parametrize("code", [epoch.NOT_COORDINATOR, epoch.COORDINATOR_LOAD_IN_PROGRESS, epoch.COORDINATOR_NOT_AVAILABLE])
def test_not_coordinator_looks_the_coordinator_up_again(code: int) -> None:
    fake = FakeCoordinator(epoch=0, coordinator=2, script={1: [code]})
    p = pump(fake, locate=[1, 2])  # the first lookup is stale (the coordinator moved to node 2)
    done = p.run(to=3)
    assert done.producer_epoch == 3 and p.nodes == [1, 2] and fake.opened == [1, 2]
    assert done.requests == 4  # one answered by the old node, three bumps by the new one


def test_a_broken_connection_is_opened_again() -> None:
    fake = FakeCoordinator(epoch=0, hang_up_after=2)
    done = pump(fake).run(to=5)
    # answers lost with the connection are bumps the pump did not see (bumps counts answers); the
    # requests it had sent ahead never carry the epoch past ``to``
    assert done.producer_epoch == 5 and fake.epoch == 5 and 0 < done.bumps <= 5 and len(fake.opened) >= 3


def test_requests_go_ahead_of_their_answers_but_never_past_to(monkeypatch: pytest.MonkeyPatch) -> None:
    ahead: list[int] = []
    send = epoch.Conversation.send

    def counted(self: epoch.Conversation, *args: Any) -> None:
        send(self, *args)
        ahead.append(len(self.waiting))

    monkeypatch.setattr(epoch.Conversation, "send", counted)
    fake = FakeCoordinator(epoch=0)
    done = pump(fake).run(to=100)
    assert done.producer_epoch == fake.epoch == 100 and done.requests == done.bumps == 100
    assert ahead[0] == 1 and max(ahead) == epoch.PIPELINE  # one until the epoch is known, then a window


def test_an_epoch_above_to_climbs_through_the_producer_id_rotation() -> None:
    fake = FakeCoordinator(epoch=32764)
    done = pump(fake).run(to=1)
    assert (done.producer_id, done.producer_epoch, done.requests) == (1001, 1, 4)  # 32765, 32766, 0, 1


def test_any_other_answer_fails_the_fault_naming_it() -> None:
    fake = FakeCoordinator(epoch=3, script={1: [90]})
    with pytest.raises(FaultError, match=f"InitProducerId for {TXN} on node 1 answered PRODUCER_FENCED"):
        pump(fake).run(to=9)


def test_the_deadline_is_kept_while_the_coordinator_keeps_saying_try_again() -> None:
    fake = FakeCoordinator(epoch=3, script={1: [51] * 1000})
    started = time.monotonic()
    with pytest.raises(WaitTimeout, match=r"epoch 9 not reached: producer id -1 epoch -1 after \d+ "
                                          r"InitProducerId requests \(0 bumps\).*CONCURRENT_TRANSACTIONS.*; bumps "
                                          r"0 done in 0.\ds; rate not measured yet"):
        pump(fake, deadline_s=0.3).run(to=9)
    assert time.monotonic() - started < 2.0


def test_past_its_budget_a_pump_that_projects_its_end_goes_on_and_extends_the_run() -> None:
    # a budget far too small for 3,000 bumps on socket pairs, a bound that is not: the pump answers
    # (it would have failed at a fixed deadline), and the run was told how far past its budget it went
    told: list[float] = []
    done = pump(FakeCoordinator(epoch=0), deadline_s=0.05, bound_s=60, extend_run=told.append).run(to=3000)
    assert done.producer_epoch == 3000 and done.seconds > 0.05
    assert told and told == sorted(told) and 0 < told[-1] <= done.seconds - 0.05


def test_the_remaining_bumps_count_through_the_rotation() -> None:
    assert epoch.bumps_to(10, 15) == 5 and epoch.bumps_to(15, 15) == 0
    assert epoch.bumps_to(32765, 2) == 1 + 1 + 2  # 32766, then 0 (a new producer id), 1, 2


def test_the_run_s_stop_ends_the_pump_at_once() -> None:
    fake = FakeCoordinator(epoch=3, script={1: [51] * 100_000})
    stop = threading.Event()
    threading.Timer(0.1, stop.set).start()
    started = time.monotonic()
    with pytest.raises(WaitTimeout, match="the run ended before epoch 9 was reached"):
        pump(fake, stop=stop, deadline_s=60).run(to=9)
    assert time.monotonic() - started < 1.5


def test_describe_says_the_coordinator_s_view_or_why_not() -> None:
    assert pump(FakeCoordinator(epoch=7)).describe() == {"state": "Empty", "producer_id": 1000, "producer_epoch": 7}
    assert pump(FakeCoordinator()).describe() == {"error": "TRANSACTIONAL_ID_NOT_FOUND"}


# ---------------------------------------------------------------- the fault's fields
@pytest.mark.parametrize("fields, said", [
    ({"to": 32766}, "to: 32766 is not an epoch the pump can stop at; allowed 0..32765"),
    ({"to": -1}, "to: -1 is not an epoch the pump can stop at"),
    ({}, "to: missing (required)"),
    ({"to": 5, "of": "app-*"}, "of: 'app-*' is not a transactional.id"),
    ({"to": 5, "timeout_s": 0}, "timeout_s: Input should be greater than 0"),
    ({"to": 5, "api": "EndTxn"}, "api: unknown key"),
])
def test_its_fields_are_checked_when_the_scenario_is_read(fields: dict[str, Any], said: str) -> None:
    with pytest.raises(ValidationError) as info:
        faults.parse({"at": 1, "kind": "bump-producer-epoch", **fields})
    assert "; ".join(faults.problems(info.value)).startswith(said), faults.problems(info.value)


# ---------------------------------------------------------------- through the nemesis
#: the run's defaults: its first txn-producer's transactional.id
DEFAULTS = TargetDefaults(transactional_id=TXN)


def nemesis(tmp_path: Path, fake: FakeCoordinator, monkeypatch: pytest.MonkeyPatch,
            defaults: TargetDefaults = DEFAULTS) -> tuple[Nemesis, FakeControl]:
    monkeypatch.setattr(epoch, "connect", fake.connect)
    control = FakeControl({"txn-producer": ["txn-producer-0", "txn-producer-1"]})
    nem = Nemesis(FakeCluster(), control, Recorder(tmp_path, "nemesis"), defaults=defaults)  # type: ignore[arg-type]
    nem.resolve = lambda target, of=None: {("coordinator", TXN): fake.coordinator}[(str(target), of)]  # type: ignore[method-assign]
    return nem, control


def test_the_fault_freezes_the_producer_of_the_id_while_it_pumps_and_records_before_and_after(
        tmp_path: Path, events: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeCoordinator(epoch=40, coordinator=3)
    nem, control = nemesis(tmp_path, fake, monkeypatch)
    nem._guarded(faults.parse({"at": 0, "kind": "bump-producer-epoch", "to": 45}))  # of: the run's default
    assert nem.errors == [] and nem.active_faults() == []
    assert control.calls == [("pause", "txn-producer-0"), ("resume", "txn-producer-0")]
    start, stop = events()
    assert start == {"type": "info", "kind": "bump-producer-epoch", "phase": "start", "node": 3, "of": TXN, "to": 45,
                     "paused": ["txn-producer-0"],
                     "before": {"state": "Empty", "producer_id": 1000, "producer_epoch": 40}}
    assert stop.pop("seconds") < 5
    assert stop == {"type": "ok", "kind": "bump-producer-epoch", "phase": "stop", "node": 3, "of": TXN, "nodes": [3],
                    "after": {"state": "Empty", "producer_id": 1000, "producer_epoch": 45},
                    "producer_id": 1000, "producer_epoch": 45, "requests": 5, "bumps": 5}
    assert set(fake.opened) == {3}  # at the address of node 3's DIRECT listener
    wait_until(lambda: fake.open == 0, timeout=2, what="every connection the fault opened to be closed")


def test_a_failed_pump_resumes_the_producer_and_is_an_error_of_the_run(
        tmp_path: Path, events: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    nem, control = nemesis(tmp_path, FakeCoordinator(epoch=1, script={1: [-1]}), monkeypatch)
    nem._guarded(faults.parse({"at": 0, "kind": "bump-producer-epoch", "of": TXN, "to": 5}))
    assert control.calls == [("pause", "txn-producer-0"), ("resume", "txn-producer-0")]
    assert len(nem.errors) == 1 and "answered UNKNOWN_SERVER_ERROR" in nem.errors[0], nem.errors
    assert events()[-1]["error"].startswith("FaultError: InitProducerId")


def test_pause_needs_a_process_of_the_id_and_pause_false_pumps_without(
        tmp_path: Path, events: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    nem, control = nemesis(tmp_path, FakeCoordinator(epoch=1), monkeypatch,
                           defaults=TargetDefaults(transactional_id="app-*"))
    nem.resolve = lambda target, of=None: 1  # type: ignore[method-assign]
    nem._guarded(faults.parse({"at": 0, "kind": "bump-producer-epoch", "of": "someone-else", "to": 5}))
    nem._guarded(faults.parse({"at": 0, "kind": "bump-producer-epoch", "to": 5}))
    assert nem.errors == [
        "bump-producer-epoch at 0.0s: LookupError: bump-producer-epoch pause: no workload process of this run uses "
        "transactional.id 'someone-else' (pause: false pumps it anyway)",
        "bump-producer-epoch at 0.0s: LookupError: bump-producer-epoch without `of`: the run's default is the prefix "
        "'app-*' (an app's transactional.ids); name one"]
    assert control.calls == [] and events() == []
    nem._guarded(faults.parse({"at": 0, "kind": "bump-producer-epoch", "of": "someone-else", "to": 5, "pause": False}))
    assert len(nem.errors) == 2 and events()[-1]["producer_epoch"] == 5 and control.calls == []


def test_a_node_s_direct_address_is_where_the_host_reaches_its_direct_listener() -> None:
    from clusters.backends.compose.plan import ComposePlan
    from clusters.kafka.topology import Topology

    plan, topo = ComposePlan(), Topology()
    assert [plan.direct_address(n) for n in topo.node_ids] == plan.direct_bootstrap.split(",")
    assert plan.direct_address(2).startswith("127.0.0.1:")  # compose publishes it on loopback
    assert FakeCluster().direct_address(2) == topo.bind(2, Listener.DIRECT) == topo.direct_bootstrap.split(",")[1]


def test_an_of_with_the_apps_id_pumps_that_id_of_the_run_and_without_an_app_is_refused(
        tmp_path: Path, events: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    nem, control = nemesis(tmp_path, FakeCoordinator(epoch=1), monkeypatch,
                           defaults=TargetDefaults(transactional_id="eos-chaos-app.ab12*"))
    asked: list[object] = []
    nem.resolve = lambda target, of=None: asked.append(of) or 1  # type: ignore[method-assign]
    nem._guarded(faults.parse({"at": 0, "kind": "bump-producer-epoch", "of": "{id}-0-0-0", "to": 3, "pause": False}))
    assert nem.errors == [] and set(asked) == {"eos-chaos-app.ab12-0-0-0"}  # resolved, looked up again
    assert events()[-1]["of"] == "eos-chaos-app.ab12-0-0-0" and events()[-1]["producer_epoch"] == 3
    nem2, _ = nemesis(tmp_path, FakeCoordinator(epoch=1), monkeypatch)  # a txn-producer's run: no app
    nem2._guarded(faults.parse({"at": 0, "kind": "bump-producer-epoch", "of": "{id}-0-0-0", "to": 3, "pause": False}))
    assert nem2.errors == ["bump-producer-epoch at 0.0s: LookupError: bump-producer-epoch of '{id}-0-0-0': {id} is "
                           "an app's id, and the run has no app"]
