"""An app feeder's input (docs/APPS.md, "The feeder"): per input topic, what it writes and how fast.
A topic's records come from a generator of the user's (``module:function(rnd, seq)``), a JSON-lines
file replayed in order, or by default the harness's own (keys ``k0`` .., values unique in the run,
integers for an aggregate contract). Each record gets an id unique in the run, sent as the header
``FEEDER_ID_HEADER`` and recorded as the send's value, so payloads may repeat.

Bad input (a generator that cannot be imported, raises, or returns the wrong shape; a records file
missing or with a bad line) is ``FeedError`` naming the function and the sample, or ``file:line``:
the runner's preflight (``python -m harness.workloads.feed FEED.json``) meets it before anything
starts, the feeder process as it happens (exit 2).
"""

from __future__ import annotations

import importlib
import json
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.history.app_values import recorded, wire
from harness.history.model import BYTES, FEEDER_ID_HEADER, JSON, TEXT
from harness.kafka.placement import partition_of_bytes
from harness.workloads.app_function import FORMAT_FIELD
from harness.workloads.common import Retired
from harness.workloads.registry import Feed, FeedSource

#: the fields a generated record (or a records file's line) may have
FIELDS = ("key", "value", "headers", "timestamp")
#: an incarnation's integer values are ``incarnation * INTEGER_STRIDE + 1 ...``: distinct in the run
#: (incarnations are), and small enough for an app to sum many of them in a long
INTEGER_STRIDE = 10_000_000
#: the preflight's sample: the sequence number a generator is first called with
SAMPLE_SEQ = 0


class FeedError(Exception):
    """The feeder's input cannot be made: what, where (the function and the sample, ``file:line``)."""


@dataclass(frozen=True)
class Item:
    """One record as the user shaped it: key and value of the topic's format, its own headers, its
    timestamp (ms; None: the feeder's wall clock when it sends)."""

    key: Any
    value: Any
    headers: dict[str, str] | None = None
    timestamp: int | None = None


@dataclass(frozen=True)
class Outgoing:
    """One record ready to send: where, its id, its bytes, and what the history records of it."""

    topic: str
    partition: int
    id: str
    key: bytes | None
    value: bytes | None
    #: key and value as recorded (``app_values.recorded``)
    key_text: str | None
    value_text: str | None
    headers: dict[str, str] | None
    timestamp: int

    def wire_headers(self) -> list[tuple[str, str | bytes | None]]:
        """The record's headers on the wire: its own, then the id."""
        return [*((k, v.encode()) for k, v in (self.headers or {}).items()), (FEEDER_ID_HEADER, self.id.encode())]

    def record(self) -> list[Any]:
        """The ``txn`` op's ``records`` entry: [payload, timestamp, headers]."""
        return [self.value_text, self.timestamp, None if self.headers is None else [[k, v] for k, v in self.headers.items()]]


def _shape(fmt: str, what: str) -> str:
    return {TEXT: f"{what}: a str or None", JSON: f"{what}: any JSON value", BYTES: f"{what}: bytes or None"}[fmt]


def checked(out: Any, fmt: str, where: str) -> Item:
    """``out`` (a generator's return, a records line decoded) as an ``Item``; ``FeedError`` naming
    ``where`` and what a record is when it is not one."""
    want = ('{"key", "value", "headers": {str: str} or None, "timestamp": int ms or None} with '
            f"{_shape(fmt, 'key')}, {_shape(fmt, 'value')} (format {fmt})")
    if not isinstance(out, dict) or "value" not in out or set(out) - set(FIELDS):
        raise FeedError(f"{where}: gave {_brief(out)}; a record is {want}")
    headers, ts = out.get("headers"), out.get("timestamp")
    for k in ("key", "value"):
        v = out.get(k)
        ok = (v is None or (isinstance(v, str) if fmt == TEXT else isinstance(v, bytes) if fmt == BYTES else _is_json(v)))
        if not ok:
            raise FeedError(f"{where}: {k} {_brief(v)}; {_shape(fmt, k)} (format {fmt})")
    if headers is not None and not (isinstance(headers, dict) and all(isinstance(k, str) and isinstance(v, str)
                                                                       for k, v in headers.items())):
        raise FeedError(f"{where}: headers {_brief(headers)}; headers are a dict of str to str, or None")
    if headers and FEEDER_ID_HEADER in headers:
        raise FeedError(f"{where}: header {FEEDER_ID_HEADER!r} is the feeder's own (each record's id)")
    if ts is not None and (not isinstance(ts, int) or isinstance(ts, bool) or ts < 0):
        raise FeedError(f"{where}: timestamp {_brief(ts)}; a timestamp is an int of ms since the epoch, or None")
    return Item(out.get("key"), out["value"], headers, ts)


def _is_json(v: Any) -> bool:
    try:
        json.dumps(v)
    except (TypeError, ValueError):
        return False
    return True


def _brief(v: Any) -> str:
    text = repr(v)
    return f"{text[:77]}..." if len(text) > 80 else text


def load_generator(spec: str, path: str | None) -> Callable[[random.Random, int], Any]:
    """The generator ``module:function`` (``path`` first on the import path); ``FeedError`` when it
    cannot be imported or is not a function."""
    if path and path not in sys.path:
        sys.path.insert(0, path)
    module, _, name = spec.partition(":")
    try:
        fn = getattr(importlib.import_module(module), name)
    except ImportError as exc:
        raise FeedError(f"feeder generator {spec}: cannot import module {module!r} ({exc}); the app's cwd is on "
                        "the import path") from None
    except AttributeError:
        raise FeedError(f"feeder generator {spec}: module {module!r} has no {name!r}") from None
    except Exception as exc:  # noqa: BLE001 - the user's module failed as it loaded: said, never a traceback
        raise FeedError(f"feeder generator {spec}: importing {module!r} raised {type(exc).__name__}: {exc}") from None
    if not callable(fn):
        raise FeedError(f"feeder generator {spec}: a {type(fn).__name__}, not a function")
    return fn  # type: ignore[no-any-return]


def generated(fn: Callable[[random.Random, int], Any], spec: str, fmt: str, rnd: random.Random, seq: int,
              topic: str) -> Item:
    """``fn(rnd, seq)`` checked (``checked``); ``FeedError`` naming the function and the sample."""
    where = f"feeder generator {spec} (input {topic}, seq {seq})"
    try:
        out = fn(rnd, seq)
    except Exception as exc:  # noqa: BLE001 - the user's function: its failure is reported, never a traceback
        raise FeedError(f"{where}: raised {type(exc).__name__}: {exc}") from None
    return checked(out, fmt, where)


def read_records(path: str, fmt: str) -> list[Item]:
    """Every record of a JSON-lines file (blank lines skipped; bytes as base64 text); ``FeedError``
    naming ``file:line`` for a missing file or a line that is not a record."""
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise FeedError(f"feeder records {p}: no such file (a relative path is the scenario file's folder's)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise FeedError(f"feeder records {p}: cannot be read ({exc})") from None
    items = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            out = json.loads(line)
        except json.JSONDecodeError as exc:
            raise FeedError(f"{p}:{n}: not JSON ({exc.msg})") from None
        if fmt == BYTES and isinstance(out, dict):
            out = _from_base64(out, f"{p}:{n}")
        items.append(checked(out, fmt, f"{p}:{n}"))
    if not items:
        raise FeedError(f"feeder records {p}: no records (one JSON object per line)")
    return items


def _from_base64(line: dict[str, Any], where: str) -> dict[str, Any]:
    import base64
    import binascii

    out = dict(line)
    for k in ("key", "value"):
        v = out.get(k)
        if v is None:
            continue
        try:
            out[k] = base64.b64decode(v, validate=True) if isinstance(v, str) else v
        except binascii.Error:
            raise FeedError(f"{where}: {k} {_brief(v)} is not base64 (format bytes: a file holds bytes as base64)") from None
    return out


@dataclass
class Source:
    """One input topic's records: its own random draws and sequence (over the feeder's life: its
    producers' incarnations go on counting), from a generator, a file, or the harness's defaults."""

    topic: str
    name: str
    spec: FeedSource
    rnd: random.Random
    make: Callable[[random.Random, int], Any] | None = None
    items: list[Item] | None = None
    seq: int = 0

    def exhausted(self) -> bool:
        return self.items is not None and self.seq >= len(self.items)

    def next(self) -> Item | None:
        """The next user-shaped record (None: the defaults make this one)."""
        seq = self.seq
        self.seq += 1
        if self.items is not None:
            return self.items[seq]
        if self.make is not None:
            assert self.spec.generator is not None
            return generated(self.make, self.spec.generator, self.spec.format, self.rnd, seq, self.name)
        return None


@dataclass
class _Pool:
    """Topics that share one rate (those without a rate of their own share the feeder's)."""

    sources: list[Source]
    rate: float
    written: int = 0


@dataclass
class Feeding:
    """Defaults for the records no user shaped: ``keys`` keys, integer values (``value_serde``) or not."""

    keys: int
    integers: bool
    long_values: bool
    #: the run's topic -> its partitions (a topic of its own may have other partitions than the scenario's)
    partitions: Callable[[str], int]
    number: int = 0
    incarnation: str = ""
    pools: list[_Pool] = field(default_factory=list)


class Feeder:
    """The app feeder's input: per transaction, records of one input topic, at its pool's rate."""

    def __init__(self, feed: Feed, topics: dict[str, str], seed: int, rnd: random.Random, defaults: Feeding,
                 rate: float) -> None:
        """``topics``: run name -> scenario name; ``rnd``: the feeder's own draws (topics, keys, aborts)."""
        self.rnd, self.d, self.t0 = rnd, defaults, time.monotonic()
        shared = _Pool([], rate)
        for run_name, spec in feed.inputs.items():
            name = topics.get(run_name, run_name)
            src = Source(run_name, name, spec, random.Random(f"{seed}/feeder/{name}"))
            if spec.generator is not None:
                src.make = load_generator(spec.generator, feed.path)
            elif spec.records is not None:
                src.items = read_records(spec.records, spec.format)
            if spec.rate is None:
                shared.sources.append(src)
            else:
                self.d.pools.append(_Pool([src], spec.rate))
        if shared.sources:
            self.d.pools.insert(0, shared)

    def due_in(self) -> float | None:
        """Seconds until the next transaction may start (None: every source is used up)."""
        now = time.monotonic()
        dues = [self.t0 + p.written / p.rate - now if p.rate else 0.0
                for p in self.d.pools if any(not s.exhausted() for s in p.sources)]
        return max(0.0, min(dues)) if dues else None

    def batch(self, process: str, txn: int, n: int, incarnation: int) -> list[Outgoing]:
        """Up to ``n`` records of one input topic for transaction ``txn`` of ``process`` (call when
        ``due_in`` is 0): of the pool most behind its rate, a topic of it drawn at random."""
        now = time.monotonic()
        live = [p for p in self.d.pools if any(not s.exhausted() for s in p.sources)]
        # the most overdue; of pools as fast as they go (rate 0), the one written least
        pool = min(live, key=lambda p: (self.t0 + p.written / p.rate - now if p.rate else 0.0, p.written))
        src = self.rnd.choice([s for s in pool.sources if not s.exhausted()])
        if self.d.incarnation != process:  # an incarnation's integers are its own (distinct in the run)
            self.d.incarnation, self.d.number = process, incarnation * INTEGER_STRIDE
        out = []
        for k in range(n):
            if src.exhausted():
                break
            out.append(self._one(src, f"{process}-{txn}-{k}", int(time.time() * 1000)))
        pool.written += len(out)
        return out

    def _one(self, src: Source, default_id: str, now_ms: int) -> Outgoing:
        item = src.next()
        fmt = src.spec.format
        own = item is None
        if item is None:  # the harness's own: the value is its id
            if self.d.integers:
                if self.d.number % INTEGER_STRIDE + 1 >= INTEGER_STRIDE:
                    raise Retired("integer values of this incarnation used up")  # the next has its own
                self.d.number += 1
                default_id = str(self.d.number)
            key: Any = f"k{self.rnd.randrange(self.d.keys)}"
            value: Any = default_id
            if fmt == BYTES:
                key, value = key.encode(), value.encode()
            item = Item(key, value)
        key_bytes, value_bytes = wire(fmt, item.key), wire(fmt, item.value)
        if own and self.d.long_values:  # the defaults' integers as 8 bytes (value_serde long: format text)
            value_bytes = int(item.value).to_bytes(8, "big", signed=True)
        partitions = self.d.partitions(src.topic)
        part = partition_of_bytes(key_bytes, partitions) if key_bytes is not None else self.rnd.randrange(partitions)
        return Outgoing(src.topic, part, default_id, key_bytes, value_bytes, recorded(fmt, item.key),
                        recorded(fmt, item.value), item.headers, item.timestamp if item.timestamp is not None else now_ms)


def preflight(feed: Feed, topics: dict[str, str], seed: int, samples: int = 1) -> list[dict[str, Any]]:
    """Each input's generator imported and called on its samples (seq 0 to ``samples`` - 1), each
    records file read whole: ``FeedError`` for the first that fails. The samples (a records file's
    first lines) as a contract function is given an input record (``sample_input``), every input's."""
    out: list[dict[str, Any]] = []
    for run_name, spec in feed.inputs.items():
        name = topics.get(run_name, run_name)
        if spec.generator is not None:
            fn = load_generator(spec.generator, feed.path)
            rnd = random.Random(f"{seed}/feeder/{name}")
            items = [generated(fn, spec.generator, spec.format, rnd, SAMPLE_SEQ + k, name) for k in range(samples)]
        elif spec.records is not None:
            items = read_records(spec.records, spec.format)[:samples]
        else:
            continue
        out += [sample_input(run_name, k, item, spec.format) for k, item in enumerate(items)]
    return out


def sample_input(topic: str, k: int, item: Item, fmt: str) -> dict[str, Any]:
    """``item`` as the runner hands an input record to a contract function's child (key and value as
    the history writes them down, with their format when not text: ``app_function.FORMAT_FIELD``),
    at offset ``k`` of partition 0 of ``topic``."""
    return {"topic": topic, "partition": 0, "offset": k, "key": recorded(fmt, item.key),
            "value": recorded(fmt, item.value), "timestamp": item.timestamp if item.timestamp is not None else 0,
            "headers": dict(item.headers or {}), **({FORMAT_FIELD: fmt} if fmt != TEXT else {})}


def main() -> None:
    """``python -m harness.workloads.feed FEED.json [SAMPLES]``: the preflight of a ``Feed`` (its
    JSON), and its samples as JSON lines on stdout (``SAMPLES`` per input, default 1); exit 2 and
    one line on stderr naming what failed."""
    if len(sys.argv) not in (2, 3):
        raise SystemExit("usage: python -m harness.workloads.feed FEED.json [SAMPLES]")
    feed = Feed.model_validate_json(Path(sys.argv[1]).read_text())
    try:
        made = preflight(feed, {}, 0, int(sys.argv[2]) if len(sys.argv) == 3 else 1)
    except FeedError as exc:
        print(exc, file=sys.stderr)
        raise SystemExit(2) from None
    for record in made:
        print(json.dumps(record, ensure_ascii=False))


if __name__ == "__main__":
    main()
