"""Hand-written histories of topology apps (issue 39's contracts, docs/APPS.md): a word count
(``aggregate`` with ``by``), a model's final table, a windowed count and a stream-table join. Each
builder's variants break one thing, the finding kinds each must show are beside it; the builder
without a variant is the clean twin."""

from __future__ import annotations

import base64
import json
from typing import Any

from harness.history.builder import AppRecs, History, Output
from harness.history.model import FAIL, READ_UNCOMMITTED, tp_key

#: the feeder's lines (value -> the line it carries) and which were committed
LINES = {"w1": "the cat", "w2": "the dog", "w3": "the end", "w4": "a cat"}


def _words(value: str) -> list[Output]:
    return [("wc", w, 1) for w in LINES[value].split()]


def _feed_lines(h: History) -> None:
    """w1 (lines-0 @0) and w2 (lines-1 @0) committed, w3 (lines-0) aborted, w4 (lines-0 @4) committed."""
    h.init("app-feeder.0", "feeder-tx")
    h.txn("app-feeder.0", [("lines", 0, "w1", 0), ("lines", 1, "w2", 0)], keys=[None, None],
          records=[(LINES["w1"], 1000, None), (LINES["w2"], 1001, None)])
    h.txn("app-feeder.0", [("lines", 0, "w3", None)], outcome=FAIL, keys=[None], records=[(LINES["w3"], 1002, None)])
    h.txn("app-feeder.0", [("lines", 0, "w4", 4)], keys=[None], records=[(LINES["w4"], 1003, None)])
    h.scan({tp_key("lines", 0): [(0, "w1"), (4, "w4")], tp_key("lines", 1): [(0, "w2")]})
    h.scan({tp_key("lines", 0): [(0, "w1"), (2, "w3"), (4, "w4")], tp_key("lines", 1): [(0, "w2")]}, READ_UNCOMMITTED)


def _outputs(h: History, *parts: list[tuple[str, str | None]]) -> History:
    """``h`` with the final scans of ``wc``: partition n's updates ``(key, value)`` in ``parts[n]``, a
    transaction marker after each."""
    recs: AppRecs = {tp_key("wc", p): [(2 * i, v, k) for i, (k, v) in enumerate(updates)] for p, updates in enumerate(parts)}
    h.app_scan("wc", recs)
    h.app_scan("wc", recs, READ_UNCOMMITTED)
    h.lso({tp_key("lines", 0): 0.1, tp_key("lines", 1): 0.1})
    return h


#: ``word_count``'s variants and the ``app-aggregate`` kinds each must show
WORD_COUNT_VARIANTS = {"final": {"final"}, "overshoot": {"overshoot", "final"}, "back": {"back"}, "split": {"split"},
                       "not-a-number": {"not-a-number"}, "undeclared": {"undeclared-topic"}}


def word_count(variant: str = "") -> History:
    """A word count (``aggregate``, ``by: words``) of the lines ``_feed_lines`` writes into ``wc``:
    the 2, cat 2, dog 1, a 1 (w3's "the end" aborted). Its updates: the and cat in wc-0, dog and a in
    wc-1. Variants (``WORD_COUNT_VARIANTS``) break them; ``no-expect`` leaves w4 without an ``expect``
    row and ``function-error`` records the function's error instead (both: unknown)."""
    h = History()
    _feed_lines(h)
    h.app_contract("wc", "aggregate", ["lines"], ["wc"], aggregates={"wc": "count"}, by="harness.apps.functions:words")
    if variant == "function-error":
        h.event("runner", "expect", {"app": "wc", "inputs": [], "error": "contract function harness.apps.functions:words: "
                                     "returned a record for topic 'elsewhere'"}, type_="ok")
    else:
        h.expect("wc", [(v, _words(v)) for v in LINES if not (variant == "no-expect" and v == "w4")])
    p0: list[tuple[str, str | None]] = [("the", "1"), ("cat", "1"), ("the", "2"), ("cat", "2")]
    p1: list[tuple[str, str | None]] = [("dog", "1"), ("a", "1")]
    if variant == "final":
        p0 = p0[:3]  # the last "cat" update never committed
    if variant == "overshoot":
        p0.append(("the", "3"))  # the aborted "the end" counted
    if variant == "back":
        p0 = [("the", "1"), ("cat", "1"), ("the", "2"), ("the", "1"), ("the", "2"), ("cat", "2")]
    if variant == "split":
        p1.append(("dog", "1"))  # dog counted in wc-0 too
        p0.append(("dog", "1"))
    if variant == "not-a-number":
        p1.append(("a", "one"))
    if variant == "undeclared":
        h.app_stray("wc", {"wc-debug": 3})
    return _outputs(h, p0, p1)


#: ``model_count``'s variants and the ``app-model`` kinds each must show
MODEL_VARIANTS = {"final": {"final"}, "missing": {"missing"}, "extra": {"extra"}, "back": {"back"}, "split": {"split"},
                  "undeclared": {"undeclared-topic"}}
#: the word count as a model's table: what ``_feed_lines``' committed lines give
WORD_TABLE: list[Output] = [("wc", "the", "2"), ("wc", "cat", "2"), ("wc", "dog", "1"), ("wc", "a", "1")]


def model_count(variant: str = "", monotone: bool = True) -> History:
    """The word count of ``_feed_lines`` judged by a model (``kind: model``): the runner recorded the
    table ``WORD_TABLE`` from 3 committed inputs. Variants (``MODEL_VARIANTS``) break the output;
    ``no-table`` records no table, ``function-error`` the model's error (both: unknown)."""
    h = History()
    _feed_lines(h)
    h.app_contract("wc", "model", ["lines"], ["wc"], function="tests.models:count_words", monotone=monotone)
    if variant == "function-error":
        h.event("runner", "expect", {"app": "wc", "inputs": [], "error": "contract function tests.models:count_words: "
                                     "raised KeyError: 'value' for 3 committed inputs of lines"}, type_="ok")
    elif variant != "no-table":
        h.expect_table("wc", [*WORD_TABLE, ("wc", "gone", None)], 3)  # a null: no value expected
    p0: list[tuple[str, str | None]] = [("the", "1"), ("cat", "1"), ("the", "2"), ("cat", "2"), ("gone", "1"), ("gone", None)]
    p1: list[tuple[str, str | None]] = [("dog", "1"), ("a", "1")]
    if variant == "final":
        p0 = p0[:3]  # cat's last update never committed: cat is 1
        p0.append(("cat", "3"))
    if variant == "missing":
        p1 = [("a", "1")]
    if variant == "extra":
        p1.append(("end", "1"))  # the aborted line's word
    if variant == "back":
        p0 = [("the", "1"), ("the", "2"), ("the", "1"), ("the", "2"), ("cat", "1"), ("cat", "2")]
    if variant == "split":
        p1.append(("the", "2"))
    if variant == "undeclared":
        h.app_stray("wc", {"wc-debug": 3})
    return _outputs(h, p0, p1)


#: ``windowed_count``'s variants and the ``app-windowed`` kinds each must show
WINDOWED_VARIANTS = {"final": {"final"}, "overshoot": {"overshoot", "final"}, "late-counted": {"late-counted"},
                     "back": {"back"}, "split": {"split"}, "not-a-number": {"not-a-number"},
                     "undeclared": {"undeclared-topic"}}


#: a ``window_key`` function of the user's: the windowed count's keys written as JSON text
JSON_WINDOW_KEY = "tests.unit.topology_histories:json_window_key"


def json_window_key(key: str) -> list[Any]:
    """A ``window_key`` function: ``{"key": ..., "start": ...}`` (JSON text) -> ``[key, start]``."""
    d = json.loads(key)
    return [d["key"], d["start"]]


def windowed_key(key: str, start: int, how: str) -> str:
    """An output key of window ``start`` as the reader records it: ``key@start``, (``time-windowed``)
    the base64 of Kafka Streams' TimeWindowedSerializer bytes, or (``JSON_WINDOW_KEY``) JSON text."""
    if how == "text":
        return f"{key}@{start}"
    if how == JSON_WINDOW_KEY:
        return json.dumps({"key": key, "start": start})
    return base64.b64encode(key.encode() + start.to_bytes(8, "big", signed=True)).decode()


def windowed_count(variant: str = "", how: str = "text") -> History:
    """A count per key in tumbling windows of 10 ms with 5 ms of grace (``kind: windowed``) of
    ``clicks``. Partition 0, key k0, in offset order (timestamp, stream time): c1 (1, 1) in [0, 10);
    c2 (12, 12) in [10, 20); c3 (8, 12) in [0, 10), within grace; c4 (25, 25) in [20, 30); c5 (9, 25)
    late (window [0, 10) closed at 20): dropped; c6 (3) aborted. Partition 1, key k1: d1 (5) in
    [0, 10). So k0: [0, 10) 2, [10, 20) 1, [20, 30) 1; k1: [0, 10) 1. ``restarted`` shows two starts
    of the instance (a task may have started over: c5 may count); ``bad-key`` an output key that is
    no window; ``no-timestamps`` a feeder that recorded none (both: unknown). With ``JSON_WINDOW_KEY``
    the runner's decodings of the keys are on record (``expect`` ops with ``window_keys``);
    ``undecoded-key`` leaves one out, ``window-key-error`` records the function's error (both: unknown)."""
    h = History()
    h.init("app-feeder.0", "feeder-tx")
    ts = {"c1": 1, "c2": 12, "c3": 8, "c4": 25, "c5": 9, "c6": 3, "d1": 5}

    def records(*values: str) -> list[tuple[str | None, int, list[tuple[str, str]] | None]] | None:
        return None if variant == "no-timestamps" else [("1", ts[v], None) for v in values]

    h.txn("app-feeder.0", [("clicks", 0, "c1", 0), ("clicks", 1, "d1", 0)], keys=["k0", "k1"], records=records("c1", "d1"))
    h.txn("app-feeder.0", [("clicks", 0, "c2", 2), ("clicks", 0, "c3", 3)], keys=["k0", "k0"], records=records("c2", "c3"))
    h.txn("app-feeder.0", [("clicks", 0, "c6", None)], outcome=FAIL, keys=["k0"], records=records("c6"))
    h.txn("app-feeder.0", [("clicks", 0, "c4", 7), ("clicks", 0, "c5", 8)], keys=["k0", "k0"], records=records("c4", "c5"))
    h.scan({tp_key("clicks", 0): [(0, "c1"), (2, "c2"), (3, "c3"), (7, "c4"), (8, "c5")], tp_key("clicks", 1): [(0, "d1")]})
    h.scan({tp_key("clicks", 0): [(0, "c1"), (2, "c2"), (3, "c3"), (5, "c6"), (7, "c4"), (8, "c5")],
            tp_key("clicks", 1): [(0, "d1")]}, READ_UNCOMMITTED)
    h.app_contract("win", "windowed", ["clicks"], ["wcount"], aggregates={"wcount": "count"},
                   window={"size_ms": 10, "grace_ms": 5}, window_key=how)
    for k in range(2 if variant in ("restarted", "late-counted-restarted") else 1):
        h.event(f"win-0.{k}", "app-start", {"pid": 100 + k})
    p0 = [("k0", 0, "1"), ("k0", 10, "1"), ("k0", 0, "2"), ("k0", 20, "1")]
    p1 = [("k1", 0, "1")]
    if variant == "final":
        p0 = [u for u in p0 if u != ("k0", 0, "2")]
    if variant == "overshoot":
        p0.append(("k0", 10, "2"))  # c2 counted twice
    if variant in ("late-counted", "late-counted-restarted"):
        p0.append(("k0", 0, "3"))  # the late c5 counted
    if variant == "back":
        p0 = [("k0", 0, "1"), ("k0", 0, "2"), ("k0", 0, "1"), ("k0", 0, "2"), ("k0", 10, "1"), ("k0", 20, "1")]
    if variant == "split":
        p0.append(("k1", 0, "1"))
    if variant == "not-a-number":
        p1.append(("k1", 0, "one"))
    if variant == "undeclared":
        h.app_stray("win", {"win-debug": 1})
    recs: AppRecs = {tp_key("wcount", p): [(2 * i, v, windowed_key(k, s, how)) for i, (k, s, v) in enumerate(part)]
                     for p, part in enumerate((p0, p1))}
    if variant == "bad-key":
        recs[tp_key("wcount", 1)].append((10, "1", "k1-at-0"))
    h.app_scan("win", recs)
    if how == JSON_WINDOW_KEY and variant == "window-key-error":
        h.event("runner", "expect", {"app": "win", "inputs": [], "error": f"contract function {JSON_WINDOW_KEY}: raised "
                                     "KeyError: 'start' for key '{\"key\": \"k0\"}'"}, type_="ok")
    elif how == JSON_WINDOW_KEY:
        keys = dict.fromkeys(str(k) for part in recs.values() for _, _, k in part)
        rows = [[k, *json_window_key(k)] for k in keys][:-1 if variant == "undecoded-key" else None]
        h.event("runner", "expect", {"app": "win", "window_keys": rows}, type_="ok")
    h.app_scan("win", recs, READ_UNCOMMITTED)
    h.lso({tp_key("clicks", 0): 0.1, tp_key("clicks", 1): 0.1})
    return h


#: ``join``'s variants and the ``app-join`` kinds each must show
JOIN_VARIANTS = {"missing": {"missing"}, "contended": {"missing"}, "duplicate": {"duplicate"}, "aborted-table": {"aborted-table"},
                 "aborted-input": {"aborted-input"}, "unexplained": {"unexplained"}, "undeclared": {"undeclared-topic"}}


def join(variant: str = "") -> History:
    """A stream-table (left) join of ``orders`` with ``regions`` into ``enriched``: ``<order>@<region>``
    (``-`` without one). The table: c1 EU (r1), c1 US (r2, aborted), c2 ASIA (r3, after o2). The
    stream: o1 (c1), o2 (c2), o3 (c1, aborted), o4 (c2). The app wrote o1@EU, o2@- and o4@ASIA: each
    one alternative over the committed table. ``contended``: o2 and o4 without a table value both give
    ``x@-``, found once, and o4@ASIA is not there (one is missing); ``contended-clean``: the same with
    o4@ASIA there (o4 then is joined). ``no-expect`` leaves o4 without alternatives, ``function-error``
    records the function's error instead (both: unknown)."""
    h = History()
    h.init("app-feeder.0", "feeder-tx")
    h.txn("app-feeder.0", [("regions", 0, "r1", 0)], keys=["c1"], records=[("EU", 1, None)])
    h.txn("app-feeder.0", [("regions", 0, "r2", None)], outcome=FAIL, keys=["c1"], records=[("US", 2, None)])
    h.txn("app-feeder.0", [("orders", 0, "o1", 0), ("orders", 0, "o2", 1)], keys=["c1", "c2"],
          records=[("o1", 3, None), ("o2", 4, None)])
    h.txn("app-feeder.0", [("orders", 0, "o3", None)], outcome=FAIL, keys=["c1"], records=[("o3", 5, None)])
    h.txn("app-feeder.0", [("regions", 0, "r3", 4)], keys=["c2"], records=[("ASIA", 6, None)])
    h.txn("app-feeder.0", [("orders", 0, "o4", 5)], keys=["c2"], records=[("o4", 7, None)])
    h.scan({tp_key("regions", 0): [(0, "r1"), (4, "r3")], tp_key("orders", 0): [(0, "o1"), (1, "o2"), (5, "o4")]})
    h.scan({tp_key("regions", 0): [(0, "r1"), (2, "r2"), (4, "r3")],
            tp_key("orders", 0): [(0, "o1"), (1, "o2"), (3, "o3"), (5, "o4")]}, READ_UNCOMMITTED)
    h.app_contract("join", "join", ["orders", "regions"], ["enriched"], function="tests.joins:region",
                   stream="orders", table="regions")
    table = {"c1": [("r1", "EU"), ("r2", "US")], "c2": [("r3", "ASIA")]}
    stream = [("o1", "c1"), ("o2", "c2"), ("o3", "c1"), ("o4", "c2")]
    if variant == "function-error":
        h.event("runner", "expect", {"app": "join", "inputs": [], "error": "contract function tests.joins:region: raised "
                                     "KeyError for input {'topic': 'orders'}"}, type_="ok")
    else:
        shared = variant.startswith("contended")
        h.expect_join("join", [(o, via, [("enriched", key, "x@-" if shared and via is None and o in ("o2", "o4")
                                                              else f"{o}@{region}")])
                               for o, key in stream if not (variant == "no-expect" and o == "o4")
                               for via, region in [(None, "-"), *table[key]]])
    out = [("o1@EU", "c1"), ("o2@-", "c2"), ("o4@ASIA", "c2")]
    extra = {"duplicate": ("o1@EU", "c1"), "aborted-table": ("o1@US", "c1"), "aborted-input": ("o3@EU", "c1"),
             "unexplained": ("zz", "c9")}
    if variant == "missing":
        out = out[:2]
    if variant.startswith("contended"):
        out = [("o1@EU", "c1"), ("x@-", "c2")] + ([("o4@ASIA", "c2")] if variant == "contended-clean" else [])
    if variant in extra:
        out.append(extra[variant])
    if variant == "undeclared":
        h.app_stray("join", {"join-debug": 1})
    recs: AppRecs = {tp_key("enriched", 0): [(2 * i, v, k) for i, (v, k) in enumerate(out)]}
    h.app_scan("join", recs)
    h.app_scan("join", recs, READ_UNCOMMITTED)
    h.lso({tp_key("orders", 0): 0.1, tp_key("regions", 0): 0.1})
    return h
