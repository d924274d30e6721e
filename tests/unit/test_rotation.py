"""``retry-rotation-after-failover`` (chaos/faults/rotation.py) against a fake coordinator on socket
pairs that honours the producer id and epoch an InitProducerId carries (KIP-360) and fails over when
the fake cluster kills its node: the sequence on an affected coordinator (the retry fenced) and on a
fixed one (the retry answered with the rotation's producer id), a coordinator that never comes back,
answers that stop the sequence before the kill, the retry's error reaching ``errors_seen`` under the
fault's name, and the scenario's input refused when it is read."""

from __future__ import annotations

import json
import re
import socket
import threading
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from chaos import faults
from chaos.faults import epoch, rotation
from chaos.nemesis import Nemesis
from harness.base.errors import WaitTimeout
from harness.history.model import Op
from harness.history.recorder import Recorder
from harness.history.store import flatten
from harness.run.scenario import Expect
from harness.run.verdict_file import as_expected
from tests.unit.test_cli import _restore_logging, cli  # noqa: F401 - the logging fixture applies to every test
from tests.unit.test_epoch import DEFAULTS, TXN, FakeCoordinator, node_of
from tests.unit.test_faults import FakeCluster, FakeControl
from tests.unit.test_scenario import _load_error
from tests.unit.test_scenario_bad_input import _refused

KIND = "retry-rotation-after-failover"
#: where the fake coordinator's epoch starts: the pump to 32765 is 65 bumps
START_EPOCH = 32700
PRODUCER_ID = 1000


class RotatingCoordinator(FakeCoordinator):
    """``FakeCoordinator`` that answers an InitProducerId carrying a producer id and epoch as Kafka's
    TransactionCoordinator does for an Empty transaction: that epoch bumped (at 32766 the producer id
    rotated, the old one and the epoch kept as the previous), the last request asked again answered
    as a retry, anything else PRODUCER_FENCED. ``fail_over(node)`` (the fake cluster's kill) moves the
    coordinator to ``takes_over``, which answers ``loading`` requests COORDINATOR_LOAD_IN_PROGRESS
    first, while ``stale`` lookups still name the killed node. It loads the transaction from the log:
    without the last epoch, unless ``fixed`` (apache/kafka PR #22096). ``takes_over`` None: no node
    ever does, and every lookup names the killed node."""

    def __init__(self, fixed: bool, takes_over: int | None = 2, loading: int = 2, stale: int = 2,
                 trail: list[tuple[Any, ...]] | None = None) -> None:
        super().__init__(epoch=START_EPOCH, producer_id=PRODUCER_ID, coordinator=1)
        self.fixed, self.takes_over, self.loading_at_failover, self.stale_at_failover = fixed, takes_over, loading, stale
        self.prev_producer_id, self.last_epoch = -1, -1
        self.loading = self.stale = 0
        self.down: set[int] = set()
        self.killed: int | None = None
        #: every KIP-360 request answered: ("ask", node, producer id, epoch, error code)
        self.trail = trail if trail is not None else []

    def locate(self) -> int:
        with self._lock:
            if self.killed is not None and (self.stale > 0 or self.takes_over is None):
                self.stale -= 1
                return self.killed
            return self.coordinator

    def connect(self, address: str, timeout: float) -> socket.socket:
        if node_of(address) in self.down:
            raise ConnectionRefusedError(111, f"Connection refused ({address})")
        return super().connect(address, timeout)

    def fail_over(self, node: int) -> None:
        with self._lock:
            self.down.add(node)
            self.killed, self.stale, self.loading = node, self.stale_at_failover, self.loading_at_failover
            self.coordinator = self.takes_over if self.takes_over is not None else node
            if not self.fixed:
                self.last_epoch = -1  # loaded from __transaction_state, which never held it

    def start_again(self, node: int) -> None:
        with self._lock:
            self.down.discard(node)

    def _answer(self, node: int, request: Any, version: int) -> bytes:
        from kafka.protocol.producer.transaction import InitProducerIdResponse

        if request.API_KEY != 22 or request.producer_id == -1:
            return super()._answer(node, request, version)  # the pump's, and DescribeTransactions
        with self._lock:
            code, pid, e = self._kip360(node, request.producer_id, request.producer_epoch)
            self.trail.append(("ask", node, request.producer_id, request.producer_epoch, code))
        response = InitProducerIdResponse[version](throttle_time_ms=0, error_code=code, producer_id=pid, producer_epoch=e)
        response.with_header(correlation_id=request.header.correlation_id)
        return bytes(response.encode(header=True, framed=True))

    def _kip360(self, node: int, pid: int, e: int) -> tuple[int, int, int]:
        if node != self.coordinator:
            return epoch.NOT_COORDINATOR, -1, -1
        if self.loading > 0:
            self.loading -= 1
            return epoch.COORDINATOR_LOAD_IN_PROGRESS, -1, -1
        if (pid, e) == (self.producer_id, self.epoch):
            self.last_epoch = self.epoch
            if self.epoch >= rotation.EXHAUSTED:
                self.prev_producer_id, self.producer_id, self.epoch = pid, pid + 1, 0
            else:
                self.epoch += 1
            return 0, self.producer_id, self.epoch
        if e >= 0 and e == self.last_epoch and pid in (self.producer_id, self.prev_producer_id):
            return 0, self.producer_id, self.epoch  # a retry of the last bump or rotation
        return 90, -1, -1  # PRODUCER_FENCED


class FailingOverCluster(FakeCluster):
    """The fake cluster, its kill and restart also the fake coordinator's failover and return."""

    def __init__(self, fake: RotatingCoordinator) -> None:
        super().__init__()
        self.fake = fake

    def kill(self, node: int) -> None:
        self.calls.append(("kill", node))
        self.fake.fail_over(node)

    def restart(self, node: int) -> None:
        self.calls.append(("restart", node))
        self.fake.start_again(node)


def run_fault(tmp_path: Path, fake: RotatingCoordinator, monkeypatch: pytest.MonkeyPatch,
              **fields: Any) -> tuple[Nemesis, list[tuple[Any, ...]]]:
    """The fault through the nemesis on ``fake``; the nemesis, and one trail of what the cluster, the
    workload control and the coordinator saw, in order."""
    monkeypatch.setattr(epoch, "connect", fake.connect)
    control, cluster = FakeControl({"txn-producer": ["txn-producer-0", "txn-producer-1"]}), FailingOverCluster(fake)
    control.calls = cluster.calls = fake.trail
    nem = Nemesis(cluster, control, Recorder(tmp_path, "nemesis"), defaults=DEFAULTS)  # type: ignore[arg-type]
    nem.resolve = lambda target, of=None: {("coordinator", TXN): fake.locate}[(str(target), of)]()  # type: ignore[method-assign]
    nem._guarded(faults.parse({"at": 0, "kind": KIND, "failover_timeout_s": 5, **fields}))
    return nem, fake.trail


def history(tmp_path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (tmp_path / "history" / "nemesis.jsonl").read_text().splitlines()]


def events(tmp_path: Path) -> list[dict[str, Any]]:
    return [{"type": op["type"], **op["value"]} for op in history(tmp_path)]


def asked(trail: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The trail without the KIP-360 requests answered "ask again" (a moved or loading coordinator)."""
    again = {epoch.NOT_COORDINATOR, epoch.COORDINATOR_LOAD_IN_PROGRESS}
    return [t for t in trail if not (t[0] == "ask" and t[4] in again)]


# ---------------------------------------------------------------- the sequence
def test_on_an_affected_coordinator_the_retry_after_the_failover_is_fenced(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nem, trail = run_fault(tmp_path, RotatingCoordinator(fixed=False), monkeypatch)
    assert nem.errors == [] and nem.active_faults() == []
    # frozen from before the first request to after the retry; the node that rotated killed, the
    # retry sent (past the stale lookups and the loading) to the one that took over, then the restart
    assert asked(trail) == [("pause", "txn-producer-0"), ("ask", 1, PRODUCER_ID, 32765, 0), ("ask", 1, PRODUCER_ID, 32766, 0),
                            ("kill", 1), ("ask", 2, PRODUCER_ID, 32766, 90), ("resume", "txn-producer-0"), ("restart", 1),
                            ("wait_healthy",)]
    start, stop = events(tmp_path)
    assert start == {"type": "info", "kind": KIND, "phase": "start", "node": 1, "of": TXN, "paused": ["txn-producer-0"],
                     "before": {"state": "Empty", "producer_id": PRODUCER_ID, "producer_epoch": START_EPOCH}}
    assert stop["pumped"]["producer_epoch"] == 32765 and stop["pumped"]["bumps"] == 32765 - START_EPOCH
    assert stop["bump"] == {"node": 1, "error": "NONE", "producer_id": PRODUCER_ID, "producer_epoch": 32766}
    assert stop["rotation"] == {"node": 1, "error": "NONE", "producer_id": PRODUCER_ID + 1, "producer_epoch": 0}
    assert stop["killed"] == 1 and stop["retry"] == {"node": 2, "error": "PRODUCER_FENCED", "producer_id": -1,
                                                     "producer_epoch": -1}
    assert stop["outcome"] == "fenced" and stop["errors_met"] == ["PRODUCER_FENCED"]
    assert stop["retry_attempts"] == 5  # two stale lookups (refused), two answers "loading", the answer
    assert stop["nodes"] == [1, 2] and stop["after"]["producer_id"] == PRODUCER_ID + 1
    assert all(stop[k] >= 0 for k in ("failover_s", "restarted_s", "healthy_s", "seconds")) and "error" not in stop


def test_on_a_fixed_coordinator_the_retry_is_answered_with_the_rotation_s_producer_id(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nem, trail = run_fault(tmp_path, RotatingCoordinator(fixed=True), monkeypatch)
    assert nem.errors == []
    assert ("ask", 2, PRODUCER_ID, 32766, 0) in trail
    stop = events(tmp_path)[-1]
    assert stop["retry"] == {"node": 2, "error": "NONE", "producer_id": PRODUCER_ID + 1, "producer_epoch": 0}
    assert stop["outcome"] == "recognized" and "errors_met" not in stop


def test_the_retry_s_error_is_counted_under_the_fault_s_name_and_proves_the_scenario_s_race(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_fault(tmp_path, RotatingCoordinator(fixed=False), monkeypatch)
    ops = [Op.from_json(op, index=i) for i, op in enumerate(history(tmp_path))]
    # the producer the pump fenced, resumed, meets PRODUCER_FENCED of its own: counted apart
    ops.append(Op.from_json({"time": ops[-1].time + 1, "process": "txn-producer-0.0", "type": "fail", "f": "txn",
                             "error": "PRODUCER_FENCED: There is a newer producer"}, index=len(ops)))
    seen = flatten(ops).meta["errors_seen"]
    assert seen == {f"{KIND}/PRODUCER_FENCED": 1, "PRODUCER_FENCED": 1}
    expect = Expect(errors=[f"{KIND}/PRODUCER_FENCED"])  # kafka-bug-20357's

    def verdict(errors_seen: dict[str, int]) -> dict[str, Any]:
        return {"valid": True, "checks": {}, "stats": {"txn": {"ok": 50}, "fenced": 0, "errors_seen": errors_seen},
                "run": {"healed": True, "nemesis_errors": []}}

    assert as_expected(verdict(seen), expect) is True
    assert as_expected(verdict({"PRODUCER_FENCED": 3}), expect) is False, "the producer's own fence proves nothing"


def test_a_coordinator_that_never_comes_back_fails_the_fault_naming_what_it_waited_for_and_still_heals(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nem, trail = run_fault(tmp_path, RotatingCoordinator(fixed=False, takes_over=None), monkeypatch,
                           failover_timeout_s=0.5)
    assert len(nem.errors) == 1, nem.errors
    said = nem.errors[0]
    assert said.startswith(f"{KIND} at 0.0s: WaitTimeout: timed out after 0s waiting for an answer to the same "
                           f"InitProducerId(producer id {PRODUCER_ID}, epoch 32766) for {TXN} from its coordinator after "
                           "node 1 was killed (the coordinator lookup naming another node, or node 1 started again); last "
                           "state: node 1: ConnectionRefusedError: "), said
    assert re.search(r"Connection refused \(127\.10\.1\.1:19095\) \(\d+ attempts, to node 1\)$", said), said
    assert trail[-3:] == [("resume", "txn-producer-0"), ("restart", 1), ("wait_healthy",)]
    stop = events(tmp_path)[-1]
    assert stop["killed"] == 1 and "retry" not in stop and stop["error"].startswith("WaitTimeout: timed out")
    assert "restarted_s" in stop and "healthy_s" in stop


def test_the_run_s_end_stops_the_wait_for_the_new_coordinator_at_once() -> None:
    fake = RotatingCoordinator(fixed=False, takes_over=None)
    fake.fail_over(1)
    stop = threading.Event()
    stop.set()
    asker = rotation.Asker(TXN, fake.locate, lambda n: f"127.10.{n}.{n}:19095", stop, fake.connect)
    with pytest.raises(WaitTimeout, match=r"^gave up waiting for the retry: the run ended"):
        asker.ask(PRODUCER_ID, 32766, 60, "the retry")


@pytest.mark.parametrize("script, said", [
    # the bump to 32766 answered as a fence: the producer's epoch is not what the pump left
    ([(90, -1, -1)], "InitProducerId(producer id 1000, epoch 32765) for eos-txn-producer-0 on node 1 answered "
                     "PRODUCER_FENCED with producer id -1 epoch -1; expected NONE with producer id 1000 epoch 32766"),
    # the request at 32766 bumped instead of rotating: there is no rotation to retry
    ([None, (0, 1000, 32767)], "InitProducerId(producer id 1000, epoch 32766) for eos-txn-producer-0 on node 1 answered "
                               "NONE with producer id 1000 epoch 32767; expected NONE with a new producer id at epoch 0 "
                               "(the rotation)"),
])
def test_an_answer_that_stops_the_sequence_before_the_kill_kills_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: list[tuple[int, int, int] | None], said: str) -> None:
    fake = RotatingCoordinator(fixed=False)
    answer = fake._kip360

    def scripted(node: int, pid: int, e: int) -> tuple[int, int, int]:
        given = script.pop(0) if script else None
        return given if given is not None else answer(node, pid, e)

    fake._kip360 = scripted  # type: ignore[method-assign]
    nem, trail = run_fault(tmp_path, fake, monkeypatch)
    assert nem.errors == [f"{KIND} at 0.0s: FaultError: {said}"]
    assert not [t for t in trail if t[0] in ("kill", "restart")] and trail[-1] == ("resume", "txn-producer-0")
    assert "killed" not in events(tmp_path)[-1] and events(tmp_path)[-1]["error"].startswith("FaultError: ")


def test_the_outcome_names_the_answer() -> None:
    rotated = rotation.Answer(1, 0, 1001, 0)
    assert rotation.retry_outcome(rotated, rotation.Answer(2, 90, -1, -1)) == "fenced"
    assert rotation.retry_outcome(rotated, rotation.Answer(2, 0, 1001, 0)) == "recognized"
    assert rotation.retry_outcome(rotated, rotation.Answer(2, 0, 1001, 1)) == "other"  # a bump, not a retry
    assert rotation.retry_outcome(rotated, rotation.Answer(2, 47, -1, -1)) == "other"
    assert rotation.Answer(2, 47, -1, -1).to_json() == {"node": 2, "error": "INVALID_PRODUCER_EPOCH", "producer_id": -1,
                                                        "producer_epoch": -1}


# ---------------------------------------------------------------- the scenario's input
@pytest.mark.parametrize("fields, said", [
    ({"to": 5}, "to: unknown key"),
    ({"of": "app-*"}, "of: 'app-*' is not a transactional.id"),
    ({"failover_timeout_s": 0}, "failover_timeout_s: Input should be greater than 0"),
    ({"failover_timeout_s": float("inf")}, "failover_timeout_s: Input should be a finite number"),
    ({"timeout_s": -1}, "timeout_s: Input should be greater than 0"),
])
def test_its_fields_are_checked_when_the_scenario_is_read(fields: dict[str, Any], said: str) -> None:
    with pytest.raises(ValidationError) as info:
        faults.parse({"at": 1, "kind": KIND, **fields})
    assert "; ".join(faults.problems(info.value)).startswith(said), faults.problems(info.value)


@pytest.mark.parametrize("body, said", [
    ('broker_config:\n  transaction.state.log.replication.factor: "1"\nfaults:\n  - {at: 1, kind: retry-rotation-after-failover}\n',
     "FILE:6: broker_config.transaction.state.log.replication.factor: faults[0] (retry-rotation-after-failover at 1s): '1' "
     "keeps __transaction_state on one broker, and retry-rotation-after-failover kills the coordinator: no other broker "
     "could take its transactions over; leave it out (the cluster's 3) or give at least 2"),
    ("faults:\n  - {at: 1, kind: retry-rotation-after-failover, failover_timeout_s: 0}\n",
     "FILE:6: faults[0] (retry-rotation-after-failover at 1s) failover_timeout_s: should be greater than 0"),
    ("faults:\n  - {at: 1, kind: retry-rotation-after-failover, to: 32765}\n",
     "FILE:6: faults[0] (retry-rotation-after-failover at 1s) to: `to` is for bump-producer-epoch only, not "
     "retry-rotation-after-failover"),
])
def test_bad_input_in_the_scenario_file_is_refused_when_it_is_read(tmp_path: Path, body: str, said: str) -> None:
    msg = _load_error(tmp_path, body)
    assert said in msg, msg


def test_a_single_replica_transaction_log_is_refused_at_the_command_line_with_exit_2(tmp_path: Path) -> None:
    f = tmp_path / "sc.yaml"
    f.write_text('name: s\ndescription: x\nbroker_config: {transaction.state.log.replication.factor: "1"}\nworkloads:\n'
                 "  - kind: txn-producer\nfaults:\n  - {at: 1, kind: retry-rotation-after-failover}\n")
    _refused(cli("run", str(f), "--dry-run"), f"{f}:3: broker_config.transaction.state.log.replication.factor: faults[0]")


def test_a_replicated_transaction_log_or_none_given_is_accepted() -> None:
    fault = faults.parse({"at": 1, "kind": KIND})
    assert fault.broker_config_problem({}) is None
    assert fault.broker_config_problem({rotation.REPLICATION_FACTOR: "2"}) is None
    assert fault.broker_config_problem({rotation.REPLICATION_FACTOR: "1"}) is not None
