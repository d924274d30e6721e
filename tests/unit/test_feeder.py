"""An app feeder's input the user shapes (docs/APPS.md, "The feeder"), without a cluster: a generator
or a records file per input topic, its format, every record with its id header and the id as the
send's value, what is recorded (``keys``, ``records``, the ``payloads`` table), the defaults kept,
and bad input refused naming the function and its sample or ``file:line``."""

from __future__ import annotations

import base64
import json
import random
import threading
from pathlib import Path
from typing import Any

import orjson
import pytest

from harness.base.errors import ConfigError
from harness.history import store
from harness.history.model import FEEDER_ID_HEADER
from harness.history.recorder import Recorder
from harness.kafka.placement import partition_of_bytes
from harness.phases import app_run
from harness.run import scenario
from harness.workloads import txn_producer
from harness.workloads.client import OnOffset, WireRecord
from harness.workloads.common import StopFlag, WorkloadConfig
from harness.workloads.feed import Feed, FeedError, preflight, read_records
from harness.workloads.registry import AppSettings, TxnProducerSettings, kind
from tests.unit.test_app_kind import APP, _app_file, _refused

GENERATORS = '''
def same(rnd, seq):
    return {"key": "k" + str(seq % 3), "value": "hello", "headers": {"src": "gen"}, "timestamp": 1000 + seq}

def boom(rnd, seq):
    raise ValueError("no more words")

def wrong(rnd, seq):
    return ["hello"]

def badheader(rnd, seq):
    return {"value": "x", "headers": {"eos-chaos-id": "mine"}}

NOT_A_FUNCTION = 3
'''


class Sent:
    """An instant ``Client`` that sends records with headers: what each send was, offsets from 0."""

    def __init__(self) -> None:
        self.records: list[tuple[str, int, WireRecord]] = []
        self.pending: list[tuple[bytes, OnOffset]] = []
        self.offsets: dict[tuple[str, int], int] = {}

    def init(self, timeout_s: float) -> None:
        pass

    def begin(self) -> None:
        pass

    def send(self, topic: str, partition: int, value: bytes, key: bytes | None, on_offset: OnOffset) -> None:
        raise AssertionError("the feeder sends with headers (send_record)")

    def send_record(self, topic: str, partition: int, record: WireRecord, on_offset: OnOffset) -> None:
        self.records.append((topic, partition, record))
        ident = dict(record[2])[FEEDER_ID_HEADER]
        at = self.offsets.get((topic, partition), 0)
        self.offsets[(topic, partition)] = at + 1
        self.pending.append((ident if isinstance(ident, bytes) else str(ident).encode(), on_offset))
        self.last = at

    def flush(self, timeout_s: float) -> None:
        for k, (ident, on_offset) in enumerate(self.pending):
            on_offset(ident, k)  # offsets need not be real here: the ids must be the keys they come back by
        self.pending.clear()

    def send_offsets(self, offsets: dict[tuple[str, int], int], group_metadata: object, timeout_s: float) -> None:
        pass

    def commit(self, timeout_s: float) -> None:
        pass

    def abort(self, timeout_s: float) -> None:
        pass

    def close(self) -> None:
        pass


def feed_run(tmp_path: Path, feeder: dict[str, Any], txns: int, inputs: tuple[str, ...] = ("app-in",),
             aggregate: bool = False) -> tuple[list[dict[str, Any]], Sent]:
    """The feeder of an app with ``feeder`` settings (topics as the run names them: ``NAME.r``) on a
    ``Sent`` client until it ran ``txns`` transactions; its history lines and the client."""
    settings = {"command": ["x"], "cwd": str(tmp_path), "inputs": [f"{t}.r" for t in inputs], "outputs": ["app-out.r"],
                "ready": {"log": "x"}, "feeder": {"rate": 0, **feeder},
                "contract": {"kind": "aggregate", "aggregates": {"app-out.r": "sum"}} if aggregate
                else {"kind": "map", "function": "fns:f"}}
    (_, name, fs, _), _reader = kind("app").companions(settings)  # type: ignore[misc]
    cfg = WorkloadConfig(run_dir=str(tmp_path), name=name, bootstrap="-", topics=list(settings["inputs"]), partitions=3,
                         settings=fs, seed=7, topic_names={t: f"{t}.r" for t in inputs})
    s = TxnProducerSettings.model_validate(fs)
    stop = StopFlag(30, signals=False)
    client = Sent()
    with Recorder(tmp_path, cfg.name) as rec:
        done = threading.Semaphore(0)
        real = rec.complete

        def complete(*a: Any, **kw: Any) -> None:
            real(*a, **kw)
            if a[2] == "txn":
                done.release()
                if done._value >= txns:  # noqa: SLF001 - a test's count of completions
                    stop.set()

        rec.complete = complete  # type: ignore[method-assign]
        txn_producer.run_fed(cfg, s, rec, stop, lambda c, i: client)  # type: ignore[arg-type,return-value]
    lines = [orjson.loads(x) for x in (tmp_path / "history" / f"{name}.jsonl").read_bytes().splitlines()]
    return lines, client


def _invokes(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [op for op in lines if op["f"] == "txn" and op["type"] == "invoke"]


def test_a_generators_repeated_values_are_sent_with_unique_ids_and_recorded(tmp_path: Path) -> None:
    (tmp_path / "gens.py").write_text(GENERATORS)
    lines, client = feed_run(tmp_path, {"generator": "gens:same", "values_per_txn": 5, "abort_share": 0.3}, 6)
    invokes = _invokes(lines)
    ids = [send[3] for op in invokes for send in op["value"]]
    assert len(ids) == len(set(ids)) == 30 and ids[0] == "app-feeder.0-0-0"
    assert {r[0] for op in invokes for r in op["records"]} == {"hello"}  # the payload repeats
    assert [r[1] for op in invokes for r in op["records"]] == [1000 + k for k in range(30)]  # seq counts on
    assert invokes[0]["keys"] == ["k0", "k1", "k2", "k0", "k1"] and invokes[0]["records"][0][2] == [["src", "gen"]]
    for topic, part, (key, value, headers, ts) in client.records:  # on the wire: the payload, the id as a header
        assert topic == "app-in.r" and value == b"hello" and part == partition_of_bytes(key or b"", 3)
        assert headers[0] == ("src", b"gen") and headers[-1][0] == FEEDER_ID_HEADER and 1000 <= ts < 1030
    t = store.read_tables(tmp_path)  # the loader refuses a value written twice: the ids are unique
    assert len(t.payloads) == 30 and set(t.payloads["payload"]) == {"hello"}
    assert t.payloads["timestamp"].tolist() == [1000 + k for k in range(30)]
    acked = t.writes.dropna(subset=["offset"])
    assert len(acked) == int((t.txns["outcome"] == "ok").sum()) * 5  # acknowledged by their ids


def test_without_a_generator_the_feeder_writes_what_it_always_did(tmp_path: Path) -> None:
    lines, client = feed_run(tmp_path, {"values_per_txn": 4, "keys": 3}, 3)
    first = _invokes(lines)[0]
    assert [s[3] for s in first["value"]] == [f"app-feeder.0-0-{k}" for k in range(4)]
    assert set(first["keys"]) <= {"k0", "k1", "k2"} and [r[0] for r in first["records"]] == [s[3] for s in first["value"]]
    assert all(r[2][-1] == (FEEDER_ID_HEADER, r[1]) for _, _, r in client.records)  # the id is the value
    lines, _ = feed_run(tmp_path / "agg", {"values_per_txn": 4}, 2, aggregate=True)
    assert [s[3] for s in _invokes(lines)[0]["value"]] == ["1", "2", "3", "4"]  # integers for an aggregate


def test_a_records_file_is_replayed_in_order_and_then_the_feeder_idles(tmp_path: Path) -> None:
    lines_file = tmp_path / "orders.jsonl"
    rows = [{"key": {"id": k}, "value": {"amount": k % 2}, "timestamp": 5 + k} for k in range(7)]
    lines_file.write_text("".join(json.dumps(r) + "\n" for r in rows) + "\n")
    lines, client = feed_run(tmp_path, {"records": str(lines_file), "format": "json", "values_per_txn": 3,
                                        "abort_share": 0}, 3)
    recs = [r for op in _invokes(lines) for r in op["records"]]
    assert [r[0] for r in recs] == ['{"amount":0}', '{"amount":1}'] * 3 + ['{"amount":0}']
    assert [r[1] for r in recs] == list(range(5, 12)) and len(_invokes(lines)) == 3  # 3 + 3 + 1, then nothing
    assert client.records[0][2][:2] == (b'{"id":0}', b'{"amount":0}')


def test_bytes_are_sent_as_they_are_and_recorded_as_base64(tmp_path: Path) -> None:
    f = tmp_path / "raw.jsonl"
    f.write_text(json.dumps({"key": None, "value": base64.b64encode(b"\xff\x00").decode()}) + "\n")
    lines, client = feed_run(tmp_path, {"records": str(f), "format": "bytes", "values_per_txn": 1, "abort_share": 0}, 1)
    assert _invokes(lines)[0]["records"][0][0] == base64.b64encode(b"\xff\x00").decode()
    assert client.records[0][2][:2] == (None, b"\xff\x00")


def test_each_input_topic_has_its_own_source_and_each_transaction_one_topic(tmp_path: Path) -> None:
    (tmp_path / "gens.py").write_text(GENERATORS)
    table = tmp_path / "table.jsonl"
    table.write_text("".join(json.dumps({"key": f"k{k}", "value": f"region-{k}"}) + "\n" for k in range(3)))
    lines, _ = feed_run(tmp_path, {"generator": "gens:same", "values_per_txn": 3, "abort_share": 0,
                                   "inputs": {"app-table.r": {"records": str(table), "rate": 0}}}, 8,
                        inputs=("app-in", "app-table"))
    by_topic = [{s[1] for s in op["value"]} for op in _invokes(lines)]
    assert all(len(t) == 1 for t in by_topic) and {"app-in.r"} in by_topic and {"app-table.r"} in by_topic
    table_values = [r[0] for op in _invokes(lines) if op["value"][0][1] == "app-table.r" for r in op["records"]]
    assert table_values == ["region-0", "region-1", "region-2"]


@pytest.mark.parametrize("generator, says", [
    ("gens:boom", "feeder generator gens:boom (input app-in, seq 0): raised ValueError: no more words"),
    ("gens:wrong", "feeder generator gens:wrong (input app-in, seq 0): gave ['hello']; a record is"),
    ("gens:badheader", "header 'eos-chaos-id' is the feeder's own"),
    ("gens:NOT_A_FUNCTION", "feeder generator gens:NOT_A_FUNCTION: a int, not a function"),
    ("gens:missing", "module 'gens' has no 'missing'"),
    ("nosuchmodule:f", "cannot import module 'nosuchmodule'"),
])
def test_a_bad_generator_is_refused_before_anything_starts_naming_it_and_its_sample(tmp_path: Path, generator: str,
                                                                                   says: str) -> None:
    (tmp_path / "gens.py").write_text(GENERATORS)
    sc = scenario.load(str(_app_file(tmp_path, APP.replace("contract: {kind: map}",
                                                           f"feeder: {{generator: '{generator}'}}\n      contract: {{kind: map}}"))))
    with pytest.raises(ConfigError, match="app setting feeder: ") as e:
        app_run.preflight(sc)
    assert says in str(e.value)


@pytest.mark.parametrize("text, fmt, says", [
    ('{"value": "a"}\nnot json\n', "text", ":2: not JSON"),
    ('{"value": 3}\n', "text", ":1: value 3; value: a str or None (format text)"),
    ('{"value": "a", "extra": 1}\n', "text", ":1: gave {'value': 'a', 'extra': 1}; a record is"),
    ('{"value": "a", "timestamp": -1}\n', "json", ":1: timestamp -1"),
    ('{"value": "not base64!"}\n', "bytes", ":1: value 'not base64!' is not base64"),
    ('{"value": "a", "headers": {"h": 1}}\n', "text", ":1: headers {'h': 1}"),
])
def test_a_bad_records_line_is_refused_naming_file_and_line(tmp_path: Path, text: str, fmt: str, says: str) -> None:
    f = tmp_path / "in.jsonl"
    f.write_text(text)
    with pytest.raises(FeedError) as e:
        read_records(str(f), fmt)
    assert str(e.value).startswith(str(f)) and says in str(e.value)


def test_a_records_file_relative_to_the_scenario_file_is_found_or_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "words.jsonl").write_text('{"value": "a b"}\n')
    text = APP.replace("contract: {kind: map}", "feeder: {records: data/words.jsonl}\n      contract: {kind: map}")
    sc = scenario.load(str(_app_file(tmp_path, text)))
    s = AppSettings.model_validate(sc.workloads[0].settings)
    assert s.feeder.records == str(tmp_path.resolve() / "data" / "words.jsonl")
    app_run.preflight(sc)
    (tmp_path / "data" / "words.jsonl").unlink()
    with pytest.raises(ConfigError, match=r"feeder records .*data/words.jsonl: no such file"):
        app_run.preflight(sc)


@pytest.mark.parametrize("feeder, says", [
    ("{generator: 'a:b', records: x.jsonl}", "generator and records: one of them"),
    ("{generator: 'not a function'}", "allowed: module:function"),
    ("{inputs: {elsewhere: {rate: 3}}}", "feeder.inputs: ['elsewhere'] not in inputs"),
    ("{format: csv}", "'csv'; allowed: text, json, bytes"),
    ("{format: bytes}", "bytes cannot be judged by an identity copy"),
    ("{format: json, value_serde: long}", "only the text format's default values are"),
])
def test_wrong_feeder_settings_are_refused_at_load(tmp_path: Path, feeder: str, says: str) -> None:
    assert says in _refused(tmp_path, APP.replace("contract: {kind: map}", f"feeder: {feeder}\n      contract: {{kind: map}}"))


def test_the_shipped_generators_preflight_and_lines_repeat_words() -> None:
    feed = Feed.model_validate({"inputs": {"in": {"generator": "harness.apps.generators:lines"},
                                           "orders": {"generator": "harness.apps.generators:purchases", "format": "json"}}})
    preflight(feed, {}, 1)
    from harness.apps.generators import lines, purchases

    rnd = random.Random(3)
    words = [w for k in range(50) for w in lines(rnd, k)["value"].split()]
    assert 50 <= len(words) <= 400 and len(set(words)) < len(words)
    assert set(purchases(rnd, 4)["value"]) == {"id", "category", "amount"}


class _Report:
    """A delivery report as confluent-kafka 2.16.1 gives it to the callback: value and offset, and no
    headers (``headers()`` is None, whatever the record was sent with)."""

    def __init__(self, value: bytes | None, offset: int) -> None:
        self._value, self._offset = value, offset

    def headers(self) -> None:
        return None

    def value(self) -> bytes | None:
        return self._value

    def offset(self) -> int:
        return self._offset


class _Producer:
    """confluent_kafka.Producer's ``produce`` and ``flush``: each record acknowledged at the flush."""

    def __init__(self) -> None:
        self.queued: list[tuple[bytes | None, Any]] = []

    def produce(self, topic: str, value: bytes | None, key: bytes | None, partition: int, on_delivery: Any,
                headers: Any, timestamp: int) -> None:
        self.queued.append((value, on_delivery))

    def flush(self, timeout_s: float) -> None:
        for offset, (value, on_delivery) in enumerate(self.queued):
            on_delivery(None, _Report(value, offset))
        self.queued.clear()


def test_the_confluent_client_acknowledges_a_fed_record_by_the_id_it_was_sent_with() -> None:
    """A delivery report carries no headers: the id it is acknowledged by is the one it was sent with.
    Read from the report, every shaped feeder's offset went unrecorded (null in the history: a word
    count's run, and ``bench app``'s shaped feeder refused its own history)."""
    from harness.workloads.clients.confluent import ConfluentClient

    client = ConfluentClient("127.0.0.1:1", "t", 10_000)
    client.producer = _Producer()  # type: ignore[assignment]
    got: list[tuple[bytes, int]] = []
    for k, payload in enumerate([b"the same line", b"the same line"]):  # payloads may repeat; ids do not
        client.send_record("in", 0, (None, payload, [("src", b"gen"), (FEEDER_ID_HEADER, f"p-0-{k}".encode())], 1),
                           lambda ident, offset: got.append((ident, offset)))
    client.send_record("in", 0, (None, b"no id", [], 1), lambda ident, offset: got.append((ident, offset)))
    client.flush(1)
    assert got == [(b"p-0-0", 0), (b"p-0-1", 1), (b"no id", 2)]
    client.close()


def test_the_preflight_gives_the_generators_first_records_as_a_function_takes_them(tmp_path: Path) -> None:
    """They are the contract functions' samples when the user shapes the input (user_functions.check_feed):
    a generator's seq 0 up, a records file's first lines, bytes as the history writes them down."""
    from harness.workloads.app_function import as_read

    (tmp_path / "gens.py").write_text(GENERATORS)
    raw = tmp_path / "raw.jsonl"
    raw.write_text("".join(json.dumps({"key": None, "value": base64.b64encode(bytes([k, 255])).decode()}) + "\n"
                           for k in range(5)))
    feed = Feed.model_validate({"inputs": {"a": {"generator": "gens:same"}, "b": {"records": str(raw), "format": "bytes"}},
                                "path": str(tmp_path)})
    made = preflight(feed, {}, 0, 2)
    assert [(r["topic"], r["offset"]) for r in made] == [("a", 0), ("a", 1), ("b", 0), ("b", 1)]
    assert [as_read(r)["value"] for r in made[2:]] == [bytes([0, 255]), bytes([1, 255])]
    assert all(set(as_read(r)) == {"topic", "partition", "offset", "key", "value", "timestamp", "headers"} for r in made)
