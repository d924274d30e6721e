"""Several transactional producers in one txn-producer process (setting ``producers``): each its own
process names and transactional.id, on the first one's coordinator; process names never reused,
also across a restart; a thread that breaks stops the others; libraries that cannot are refused
before anything starts; the faults' hit records count the producers beside the one they name."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from harness.base.errors import ConfigError
from harness.history import store
from harness.history.builder import History
from harness.history.hits import Span, fault_hits
from harness.history.model import INFO, OK, among_producers_of
from harness.history.recorder import INCARNATIONS, Recorder
from harness.kafka.placement import KAFKA_DEFAULT_TXN_STATE_PARTITIONS, coordinator_partition
from harness.run import scenario
from harness.rundir.runinfo import rerun_command
from harness.workloads import txn_producer
from harness.workloads.client import ClientError, ErrorFacts, OnOffset
from harness.workloads.common import StopFlag, WorkloadConfig
from harness.workloads.registry import MAX_PRODUCERS, TxnProducerSettings
from tests.unit.test_cli import _restore_logging, cli  # noqa: F401 - the logging fixture applies to every test
from tests.unit.test_scenario_bad_input import _refused

FENCE = ErrorFacts("_FENCED", "fenced", fatal=True, fenced=True)
MS = 1_000_000


class Fake:
    """An instant ``Client``: offsets per partition from 0; ``fence_after``: its n-th commit is fenced;
    ``breaks``: its first begin raises a bug (not a ``ClientError``)."""

    offsets: dict[tuple[str, int], int] = {}
    lock = threading.Lock()

    def __init__(self, txn_id: str, fence_after: int = 0, breaks: bool = False) -> None:
        self.txn_id, self.fence_after, self.breaks = txn_id, fence_after, breaks
        self.commits = 0
        self.pending: list[tuple[str, int, bytes, OnOffset]] = []

    def init(self, timeout_s: float) -> None:
        pass

    def begin(self) -> None:
        if self.breaks:
            raise RuntimeError("a bug in one producer's thread")

    def send(self, topic: str, partition: int, value: bytes, key: bytes | None, on_offset: OnOffset) -> None:
        self.pending.append((topic, partition, value, on_offset))

    def flush(self, timeout_s: float) -> None:
        with self.lock:
            for topic, partition, value, on_offset in self.pending:
                at = self.offsets.get((topic, partition), 0)
                self.offsets[(topic, partition)] = at + 1
                on_offset(value, at)
        self.pending.clear()

    def send_offsets(self, offsets: dict[tuple[str, int], int], group_metadata: object, timeout_s: float) -> None:
        pass

    def commit(self, timeout_s: float) -> None:
        time.sleep(0.001)  # a round trip: the other producers' threads run meanwhile, as with a real client
        self.commits += 1
        if self.commits == self.fence_after:
            raise ClientError(FENCE)

    def abort(self, timeout_s: float) -> None:
        pass

    def close(self) -> None:
        pass


def run_producers(tmp_path: Path, producers: int, txns: int, fence_id: str | None = None,
                  broken_id: str | None = None) -> tuple[list[dict[str, Any]], StopFlag]:
    """A txn-producer process of ``producers`` on ``Fake`` clients until it wrote ``txns`` transactions
    in all; its history lines. ``fence_id``'s first client is fenced at its second commit."""
    Fake.offsets = {}
    cfg = WorkloadConfig(run_dir=str(tmp_path), name="txn-producer-0", bootstrap="-", topics=["a", "b"], partitions=3,
                         settings={"producers": producers})
    s = TxnProducerSettings.model_validate(cfg.settings)
    stop = StopFlag(30, signals=False)
    opened: list[str] = []

    with Recorder(tmp_path, cfg.name) as rec:
        done = threading.Semaphore(0)
        real_complete = rec.complete

        def complete(*a: Any, **kw: Any) -> None:
            real_complete(*a, **kw)
            if a[2] == "txn":
                done.release()

        rec.complete = complete  # type: ignore[method-assign]

        def open_client(c: WorkloadConfig, txn_id: str) -> Fake:
            first = txn_id not in opened
            opened.append(txn_id)
            return Fake(txn_id, fence_after=2 if first and txn_id == fence_id else 0, breaks=txn_id == broken_id)

        def stopper() -> None:
            for _ in range(txns):
                if not done.acquire(timeout=10):
                    break
            stop.set()

        threading.Thread(target=stopper, daemon=True).start()
        txn_producer.run_transactional(cfg, s, rec, stop, open_client)  # type: ignore[arg-type]
    lines = [orjson.loads(x) for x in (tmp_path / "history" / "txn-producer-0.jsonl").read_bytes().splitlines()]
    return lines, stop


def test_each_producer_has_its_own_transactional_id_and_process_names_and_the_history_loads(tmp_path: Path) -> None:
    ids = [txn_producer.transactional_id("txn-producer-0", k) for k in range(4)]
    lines, _ = run_producers(tmp_path, 4, 200, fence_id=ids[2])
    inits = [op for op in lines if op["f"] == "init" and op["type"] == "invoke"]
    by_process = {op["process"]: op["value"] for op in inits}
    assert sorted(set(by_process.values())) == sorted(ids), by_process
    assert len(by_process) == 5  # four producers, and the fenced one's next incarnation
    assert sum(1 for v in by_process.values() if v == ids[2]) == 2
    for op in lines:  # every op of a process is of its producer's transactional.id
        if op.get("txn_id") is not None:
            assert op["txn_id"] == by_process[op["process"]], op
    t = store.read_tables(tmp_path)  # refuses a completion of no invoke, a value written twice
    committed = t.txns[(t.txns["outcome"] == OK) & (t.txns["f"] == "txn")]
    assert committed["txn_id"].nunique() == 4 and len(committed) >= 150
    assert (tmp_path / "history" / f"txn-producer-0{INCARNATIONS}").read_text().strip() == "5".zfill(12)


def test_one_producer_runs_as_a_process_of_one_always_did(tmp_path: Path) -> None:
    lines, _ = run_producers(tmp_path, 1, 5)
    assert {op["process"] for op in lines} == {"txn-producer-0.0"}
    assert {op.get("txn_id") for op in lines if op["f"] == "txn"} == {"eos-txn-producer-0"}
    assert [op["value"] for op in lines if op["f"] == "init"] == ["eos-txn-producer-0"] * 2
    cfg = WorkloadConfig(run_dir="-", name="txn-producer-0", bootstrap="-", topics=["a"], partitions=1, seed=3)
    assert txn_producer.producer_random(cfg, 0).random() == __import__("random").Random("3/txn-producer-0").random()


def test_a_producer_thread_that_breaks_stops_the_others_and_its_error_is_raised(tmp_path: Path) -> None:
    broken = txn_producer.transactional_id("txn-producer-0", 1)
    with pytest.raises(RuntimeError, match="a bug in one producer"):
        run_producers(tmp_path, 3, 10_000, broken_id=broken)


def test_a_restart_names_its_processes_after_every_one_handed_out_not_after_the_last_line(tmp_path: Path) -> None:
    with Recorder(tmp_path, "w") as rec:
        a, b, c = (rec.new_process("w") for _ in range(3))
        assert (a, b, c) == ("w.0", "w.1", "w.2")
        rec.invoke(c, "txn", [])
        rec.invoke(a, "txn", [])  # the last line is w.0's, killed mid-way
    with Recorder(tmp_path, "w") as rec:
        assert rec.first_incarnation == 3 and rec.new_process("w") == "w.3"
    (tmp_path / "history" / f"w{INCARNATIONS}").unlink()  # a file of one producer per process: its last line
    with Recorder(tmp_path, "w") as rec:
        assert rec.first_incarnation == 1


def test_the_other_producers_ids_share_the_first_one_s_coordinator_and_no_other_workload_s() -> None:
    base = txn_producer.transactional_id("txn-producer-0")
    others = [txn_producer.transactional_id("txn-producer-0", k) for k in range(1, MAX_PRODUCERS)]
    assert base == "eos-txn-producer-0" and len(set(others)) == len(others) and others[0].startswith(base + "~1")
    for parts in (10, KAFKA_DEFAULT_TXN_STATE_PARTITIONS):
        assert {coordinator_partition(i, parts) for i in others} == {coordinator_partition(base, parts)}
    assert all(among_producers_of(i, base) for i in [base, *others])
    assert not among_producers_of("eos-txn-producer-01", base) and not among_producers_of(base, others[0])


def _coordinator_history(beside: bool) -> History:
    """A transaction of the named id before the fault, and (``beside``) one of a producer beside it
    open across the fault's start, else one of another workload's."""
    h = History()
    h.at(10 * MS).txn("txn-producer-0.0", [("t", 0, "a", 0)], txn_id="eos-txn-producer-0")
    other = txn_producer.transactional_id("txn-producer-0", 3) if beside else "eos-txn-producer-1"
    h.at(90 * MS).txn("txn-producer-0.3" if beside else "txn-producer-1.0", [("t", 1, "b", 0)], txn_id=other,
                      took=20 * MS)
    return h


def test_a_coordinator_fault_counts_the_producers_beside_the_id_it_names_and_what_was_open_at_its_start() -> None:
    detail = {"target": "coordinator", "of": "eos-txn-producer-0", "node": 1}
    [got] = fault_hits(_coordinator_history(beside=True).tables(), [Span(100 * MS, 200 * MS, detail)], None)
    assert got.hit and got.txns_open == 1 and got.txns_open_at_start == 1, got
    [twin] = fault_hits(_coordinator_history(beside=False).tables(), [Span(100 * MS, 200 * MS, detail)], None)
    assert not twin.hit and twin.txns_open == 0 and twin.txns_open_at_start == 0, twin


def test_open_at_the_start_counts_only_what_the_fault_began_on() -> None:
    h = History()
    h.at(90 * MS).txn("txn-producer-0.0", [("t", 0, "a", 0)], took=20 * MS)  # open across the start
    h.at(150 * MS).txn("txn-producer-0.0", [("t", 0, "b", None)], outcome=INFO, took=10 * MS)  # begun inside
    [got] = fault_hits(h.tables(), [Span(100 * MS, 200 * MS, {"node": 1})], None)
    assert got.txns_open == 2 and got.txns_open_at_start == 1 and got.to_json()["txns_open_at_start"] == 1


def test_producers_sets_every_txn_producer_entry_and_the_rerun_command_says_it() -> None:
    sc = scenario.load("txn-baseline").with_producers(8)
    assert [w.settings.get("producers") for w in sc.workloads if w.kind == "txn-producer"] == [8]
    assert rerun_command("txn-baseline", "local", 1, 45, None, producers=8).endswith("--producers 8")


@pytest.mark.parametrize("name,n,said", [
    ("txn-baseline", 0, "--producers 0: txn-producer setting producers: 0"),
    ("txn-baseline", MAX_PRODUCERS + 1, f"less than or equal to {MAX_PRODUCERS}"),
    ("zombie-fencing", 4, "--producers 4: scenario zombie-fencing has no txn-producer workload"),
])
def test_producers_out_of_bounds_or_without_a_txn_producer_is_refused_naming_the_flag(name: str, n: int, said: str) -> None:
    with pytest.raises(ConfigError, match=said.replace("(", r"\(")):
        scenario.load(name).with_producers(n)


def test_producers_on_a_bridged_client_is_refused_with_the_file_and_line(tmp_path: Path) -> None:
    f = tmp_path / "sc.yaml"
    f.write_text("name: s\ndescription: x\nworkloads:\n  - kind: reader\n  - kind: txn-producer\n"
                 "    library: java@4.4.0\n    settings: {producers: 4}\n")
    with pytest.raises(ConfigError) as e:
        scenario.load(str(f))
    assert f"{f}:5" in str(e.value) and "producers: 4 runs on confluent-kafka only, not java@4.4.0" in str(e.value), e.value
    with pytest.raises(ConfigError, match="--library java@4.4.0: a txn-producer with producers: 4"):
        scenario.load("txn-baseline").with_producers(4).with_library("java@4.4.0")


def test_run_producers_at_the_command_line(tmp_path: Path) -> None:
    r = cli("run", "txn-baseline", "--dry-run", "--producers", "4")
    assert r.exit_code == 0, r.output
    _refused(cli("run", "txn-baseline", "--dry-run", "--producers", "4", "--library", "java@4.4.0"),
             "--library java@4.4.0", "confluent-kafka only")
    _refused(cli("run", "zombie-fencing", "--dry-run", "--producers", "2"), "has no txn-producer")


def test_the_report_says_how_many_transactions_were_open_when_a_fault_began() -> None:
    from harness.report.data import hit_text
    from harness.rundir.journal import FaultHit

    hit = {"aimed_at": "node 1", "hit": True, "txns_open": 5, "txns_open_at_start": 3, "workloads": ["txn-producer-0"],
           "requests": None}
    assert hit_text(FaultHit.model_validate(hit)) == "5 transactions open, 3 when it began (txn-producer-0)"
    old = {k: v for k, v in hit.items() if k != "txns_open_at_start"}  # a journal made before the field
    assert hit_text(FaultHit.model_validate(old)) == "5 transactions open (txn-producer-0)"
