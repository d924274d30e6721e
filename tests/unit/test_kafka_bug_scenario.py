"""The kafka-bug-* scenarios (docs/KAFKA-BUGS.md): each library file is the scenario the page
explains, its faults are the ones the mechanism needs (kafka-bug-20090's pump and filtered hold,
kafka-bug-20357's rotation retried across a failover), and the supervisor finds the process a
pump freezes by its transactional.id."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from chaos.faults.epoch import BumpProducerEpoch
from chaos.faults.rotation import REPLICATION_FACTOR, RetryRotationAfterFailover
from chaos.faults.wire import HoldRequests
from clusters.backends.protocol import NODE_START_TIMEOUT_S
from harness.base.progress_deadline import STRETCH
from harness.run import scenario
from harness.run.runner import MAX_EXTENSION_S
from harness.run.supervisor import Supervisor
from harness.workloads.txn_producer import transactional_id

ROOT = Path(__file__).resolve().parents[2]


def test_it_pumps_the_first_producer_and_holds_only_its_abort_at_the_boundary() -> None:
    sc = scenario.load("kafka-bug-20090")
    pump, hold = sc.faults
    pumped = transactional_id("txn-producer-0")
    assert isinstance(pump, BumpProducerEpoch) and (pump.of, pump.to, pump.pause) == (pumped, 32760, True)
    assert isinstance(hold, HoldRequests)
    assert hold.filters() == {"transactional_id": pumped, "min_producer_epoch": 32766, "result": "abort"}
    assert hold.count == 1 and hold.api == ["EndTxn"]
    # the abort is held past the producer's transaction timeout and the coordinator's next scan
    timeout_ms = sc.workloads[0].settings["transaction_timeout_ms"]
    scan_ms = int(sc.broker_config["transaction.abort.timed.out.transaction.cleanup.interval.ms"])
    assert hold.hold_ms > timeout_ms + 2 * scan_ms
    # the pump's budget, then its transactions, are inside the run; the hold covers all of it, and the
    # run extended by the longest the pump may go on past its budget (docs/KAFKA-BUGS.md)
    assert pump.at + pump.timeout_s < sc.duration
    longest_run = sc.duration + min((STRETCH - 1) * pump.timeout_s, MAX_EXTENSION_S)
    assert hold.at + hold.duration >= longest_run
    assert sc.expect.valid is True and sc.expect.min_fenced == 1  # the fixed broker's verdict (library: 4.4.0)


def test_the_supervisor_names_the_process_of_a_transactional_id(tmp_path: Path) -> None:
    sup = Supervisor(tmp_path, {})
    sup.kinds = {"txn-producer-0": "txn-producer", "txn-producer-1": "txn-producer", "reader-0": "reader"}
    assert sup.using_transactional_id(transactional_id("txn-producer-1")) == ["txn-producer-1"]
    assert sup.using_transactional_id("eos-reader-0") == []


# ---------------------------------------------------------------- kafka-bug-20785
#: Kafka Streams' transaction.timeout.ms on exactly_once (StreamsConfig's producer default for EOS)
#: and the Java producer's request.timeout.ms: a held commit must land between the two
STREAMS_TXN_TIMEOUT_MS, REQUEST_TIMEOUT_MS = 10_000, 30_000


@pytest.mark.parametrize("name", ["kafka-bug-20090", "kafka-bug-20785", "kafka-bug-19367", "kafka-bug-20357"])
def test_the_page_s_copy_of_each_bug_scenario_is_the_library_file(name: str) -> None:
    page = (ROOT / "docs" / "KAFKA-BUGS.md").read_text()
    blocks = [b for b in re.findall(r"^```yaml\n(.*?)^```", page, re.M | re.S) if b.startswith(f"name: {name}\n")]
    assert len(blocks) == 1, name
    assert yaml.safe_load(blocks[0]) == yaml.safe_load((ROOT / "harness" / "scenarios" / f"{name}.yaml").read_text())


def test_20785_holds_the_producer_s_commit_then_the_streams_app_s_past_their_timeouts() -> None:
    sc = scenario.load("kafka-bug-20785")
    producer, _, app = sc.workloads
    assert producer.library == "java@4.4.0" and producer.settings["abort_share"] == 0.0
    assert app.kind == "app" and app.settings["command"][-1] == "exactly_once_v2"
    held_producer, held_app = sc.faults
    assert isinstance(held_producer, HoldRequests) and isinstance(held_app, HoldRequests)
    assert held_producer.filters() == {"transactional_id": transactional_id("txn-producer-0"), "result": "commit"}
    assert held_app.filters() == {"transactional_id": "{id}*", "result": "commit"}  # every id of the app
    scan_ms = int(sc.broker_config["transaction.abort.timed.out.transaction.cleanup.interval.ms"])
    for hold, timeout_ms in ((held_producer, producer.settings["transaction_timeout_ms"]),
                             (held_app, STREAMS_TXN_TIMEOUT_MS)):
        assert hold.api == ["EndTxn"] and hold.count == 1 and hold.until == "timeout" and hold.target == "all"
        # past the coordinator's timeout abort, before the client gives the request up
        assert timeout_ms + 2 * scan_ms < hold.hold_ms < REQUEST_TIMEOUT_MS
        assert hold.at + hold.hold_ms / 1000 < hold.at + hold.duration <= sc.duration
    # the producer's hold has ended (its commit delivered) before the app's begins: each hold meets its own
    assert held_producer.at + held_producer.hold_ms / 1000 < held_app.at
    assert sc.expect.valid is True and sc.expect.errors == ["INVALID_TXN_STATE|PRODUCER_FENCED"]


# ---------------------------------------------------------------- kafka-bug-20357
def test_20357_retries_the_rotation_of_the_first_producer_across_a_failover_and_needs_its_fence() -> None:
    sc = scenario.load("kafka-bug-20357")
    (fault,) = sc.faults
    assert isinstance(fault, RetryRotationAfterFailover)
    assert (fault.of, fault.pause) == (transactional_id("txn-producer-0"), True)
    producers = [w for w in sc.workloads if w.kind == "txn-producer"]
    assert [(w.count, w.library) for w in producers] == [(2, "java@4.4.0")]  # producer 1 commits throughout
    # the failover needs __transaction_state on more than one broker: the cluster's own factor
    assert REPLICATION_FACTOR not in sc.broker_config and fault.broker_config_problem(sc.broker_config) is None
    # the pump within its budget, then the failover and the killed node's start at their longest, end inside the run
    assert fault.at + fault.timeout_s + fault.failover_timeout_s + NODE_START_TIMEOUT_S < sc.duration
    # a spurious fence: valid, with the fault's own retry fenced (not the pumped producer's fence)
    assert sc.expect.valid is True and sc.expect.errors == ["retry-rotation-after-failover/PRODUCER_FENCED"]
