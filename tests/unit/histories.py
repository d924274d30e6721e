"""Hand-written histories for the checker's unit tests: a small builder and a simulator of a
correct Kafka (for the property tests)."""

from __future__ import annotations

import random

from harness.history.builder import History, Recs
from harness.history.model import (
    FAIL,
    INFO,
    OK,
    READ_UNCOMMITTED,
    copy_value,
    tp_key,
)

#: ``clean("copy-foreign")``: values p2 writes into the copier's output topic ``o``: none is a copy
#: (none starts with ``copy/``), so ``copy-exactly-once`` does not judge them
FOREIGN_VALUES = ["x1", "copy", "copy-t/0/2/a/b1", "Copy/t/0/2/a/b1", " copy/t/0/2/a/b1", "copier/t/0/2/a/b1"]
#: ``clean("copy-malformed")``: copies the copier writes to ``o`` that name no input, each one
#: ``copy-exactly-once`` finding (beside ``FOREIGN_VALUES``: ``copy-foreign`` is its clean twin)
MALFORMED_COPIES = [
    "copy/t/zero/2/copier-1.0-0/b1",  # the partition is not a number
    "copy/t/0/two/copier-1.0-0/b1",  # nor the offset
    "copy/t/0/2",  # too few parts
    "copy/t/0/2/copier-1.0-0",  # no value part
    "copy/",
    "copy/t/0/-2/copier-1.0-0/b1",  # a sign
    "copy/t/0/2.0/copier-1.0-0/b1",
    "copy/t/ 0/2/copier-1.0-0/b1",  # Spark's cast would trim the space
    "copy/t/0/2\n/copier-1.0-0/b1",  # Java's $ matches before a final newline
    "copy/t/\u0661/2/copier-1.0-0/b1",  # ARABIC-INDIC DIGIT ONE: a digit, yet no cast takes it
    "copy/t/0/9223372036854775808/copier-1.0-0/b1",  # past int64
]


def clean(variant: str = "") -> History:
    """Two producers on topic ``t`` (partitions 0, 1); txn A and B committed, C aborted, D unknown
    but committed; a reader; final scans; a copier that copies ``t`` to ``o``. Each ``variant``
    adds exactly one anomaly (its name is the check that must fire); ``copy-malformed`` adds one
    for ``copy-exactly-once`` too, and ``copy-foreign`` and ``zombie-commit-clean`` are clean twins."""
    h = History()
    h.init("p1", "tx-1")
    h.init("p2", "tx-2")
    # Log of each partition of t: A@0 (marker 1), B@2 (3), C@4 aborted (5), D@6 (7).
    b_at, d_at = 2, 6
    if variant == "nonmonotonic-send":
        b_at, d_at = 6, 2  # p2's later transaction D landed below its earlier B
    a_ack = 2 if variant == "inconsistent-offsets" else 0  # Kafka told p1 "a1 at 2", but 2 holds b1
    h.txn("p1", [("t", 0, "a1", a_ack), ("t", 1, "a2", 0)])
    # wrong-offset: Kafka told p2 "b2 at 3" (a marker's offset), but b2 is at 2
    h.txn("p2", [("t", 0, "b1", b_at), ("t", 1, "b2", 3 if variant == "wrong-offset" else b_at)])
    h.txn("p1", [("t", 0, "c1", None), ("t", 1, "c2", None)], outcome=FAIL)
    if variant == "nonmonotonic-send":
        h.txn("p2", [("t", 0, "d1", d_at), ("t", 1, "d2", d_at)])
    else:
        h.txn("p2", [("t", 0, "d1", None), ("t", 1, "d2", None)], outcome=INFO)
    if variant == "int-nonmonotonic-send":
        # p1's last transaction: e1 then e2 to t-0, yet e1 landed after e2
        h.txn("p1", [("t", 0, "e1", 10), ("t", 0, "e2", 9)])
    if variant == "g0":
        # p3's F completed ok before p4's G was invoked, yet G's g2 is before F's f2 in t-1
        h.txn("p3", [("t", 1, "f2", 9)])
        h.txn("p4", [("t", 1, "g2", 8)])
    early = copy_value("t", 0, 8, "h1", "copier-2.0-0")
    if variant == "g1c":
        # a copier that reads uncommitted copies h1 while p1's H is open; p2's K, invoked after that
        # copy, lands before H's h2 in t-1: H -wr-> the copy -realtime-> K -ww-> H
        hs: list[tuple[str, int, str, int | None]] = [("t", 0, "h1", 8), ("t", 1, "h2", 10)]
        h.begin("p1", hs)
        h.init("copier-2", "copier-tx-2")
        h.txn("copier-2", [("o", 0, early, 0)], txn_id="copier-tx-2")
        h.txn("p2", [("t", 1, "k2", 9)])
        h.end("p1", hs)

    log: dict[int, list[tuple[int, str]]] = {
        p: sorted([(0, f"a{p + 1}"), (b_at, f"b{p + 1}"), (d_at, f"d{p + 1}")]) for p in (0, 1)}
    if variant == "int-nonmonotonic-send":
        log[0] += [(9, "e2"), (10, "e1")]
    if variant == "precommitted-read":
        log[0] += [(10, "e1")]
    if variant == "g0":
        log[1] += [(8, "g2"), (9, "f2")]
    if variant == "g1c":
        log[0] += [(8, "h1")]
        log[1] += [(9, "k2"), (10, "h2")]
    committed = {p: list(recs) for p, recs in log.items()}
    uncommitted = {p: sorted(recs + [(4, f"c{p + 1}")]) for p, recs in log.items()}
    if variant == "duplicate":
        for view in (committed, uncommitted):
            view[0].append((8, "a1"))  # a1 written twice (a retried send without idempotence)
    if variant == "lost-write":
        for view in (committed, uncommitted):
            view[0] = [r for r in view[0] if r[1] != "b1"]
            view[1] = [r for r in view[1] if r[1] != "b2"]
    if variant == "torn-transaction":
        committed[1] = [r for r in committed[1] if r[1] != "d2"]

    polls = {p: [committed[p][:2], committed[p][2:]] for p in (0, 1)}
    if variant == "aborted-read":
        polls[0] = [committed[0][:2], [(4, "c1")] + committed[0][2:]]
    if variant == "nonmonotonic-poll":
        polls[0] = [committed[0][:2], committed[0][1:]]  # offset 2 again
    if variant == "poll-skip":
        polls[0] = [committed[0][:1], committed[0][2:]]  # never got b1 at 2
    if variant == "phantom-read":
        polls[0] = [committed[0][:2], committed[0][2:] + [(9, "g1")]]  # g1: nobody ever wrote it
    if variant == "precommitted-read":
        polls[0][1] = [r for r in polls[0][1] if r[1] != "e1"]
    for k in range(2):
        h.poll("r1", {tp_key("t", p): polls[p][k] for p in (0, 1) if polls[p][k]})
    if variant == "precommitted-read":
        # r1 gets e1 after p1 wrote it, before p1 calls its commit
        es: list[tuple[str, int, str, int | None]] = [("t", 0, "e1", 10)]
        h.begin("p1", es)
        h.poll("r1", {tp_key("t", 0): [(10, "e1")]})
        h.end("p1", es)
    if variant == "lost-write-seen":
        # D's producer never learnt its fate (info), the reader saw D committed, and then D is gone
        for view in (committed, uncommitted):
            for p in (0, 1):
                view[p] = [r for r in view[p] if not r[1].startswith("d")]

    if variant.startswith("zombie-commit"):
        # p3 takes over p1's transactional.id; p1 then commits anyway (zombie) or, in the clean
        # twin, p1's last commit was before p3 finished init_transactions.
        if variant == "zombie-commit-clean":
            h.txn("p1", [("t", 0, "z1", 8)], txn_id="tx-1")
            h.init("p3", "tx-1")
        else:
            h.init("p3", "tx-1")
            h.txn("p1", [("t", 0, "z1", 8)], txn_id="tx-1")
        for view in (committed, uncommitted):
            view[0].append((8, "z1"))

    # The copier copies every committed input of t to o and commits group offsets past them.
    out_recs: dict[int, list[tuple[int, str]]] = {0: [(0, early)] if variant == "g1c" else [], 1: []}
    for p in (0, 1):
        for off, v in committed[p]:
            if (variant == "copy-exactly-once" and v == "b1") or (variant == "g1c" and v == "h1"):
                continue  # skipped, yet the group offset below moves past it; or copied already
            out_recs[p].append((len(out_recs[p]) * 2, copy_value("t", p, off, v, "copier-1.0-0")))
    if variant == "copy-malformed":
        out_recs[0] += [(len(out_recs[0]) * 2 + k, v) for k, v in enumerate(MALFORMED_COPIES)]
    h.init("copier-1", "copier-tx")
    for p in (0, 1):
        h.txn("copier-1", [("o", p, v, off) for off, v in out_recs[p] if v != early], txn_id="copier-tx")
    if variant in ("copy-foreign", "copy-malformed"):
        # another workload writes into the copier's output topic, after the copier
        foreign = [(len(out_recs[0]) * 2 + k, v) for k, v in enumerate(FOREIGN_VALUES)]
        h.txn("p2", [("o", 0, v, off) for off, v in foreign])
        out_recs[0] += foreign

    h.scan({**{tp_key("t", p): committed[p] for p in (0, 1)}, **{tp_key("o", p): out_recs[p] for p in (0, 1)}})
    h.scan({**{tp_key("t", p): uncommitted[p] for p in (0, 1)}, **{tp_key("o", p): out_recs[p] for p in (0, 1)}},
           READ_UNCOMMITTED)
    h.group_offsets({tp_key("t", p): max(o for o, _ in committed[p]) + 2 for p in (0, 1)})
    # the LSO of t-1 never caught up in the lso-stall variant (a hanging transaction)
    h.lso({tp_key("t", 0): 0.2, tp_key("t", 1): None if variant == "lso-stall" else 0.4})
    return h


def simulate(rnd: random.Random, producers: int, txns: int, partitions: int, readers: int) -> History:
    """A random history of a correct Kafka: transactions from several producers land in the log in
    invoke order; aborted ones are only in read_uncommitted; unknown ones either way; every
    transaction end writes a control marker; readers poll in order without skipping."""
    h = History()
    for p in range(producers):
        h.init(f"p{p}", f"tx-{p}")
    logs: list[list[tuple[int, str, bool]]] = [[] for _ in range(partitions)]  # (offset, value, committed)
    for i in range(txns):
        proc = f"p{rnd.randrange(producers)}"
        outcome = rnd.choice([OK, OK, OK, FAIL, INFO])
        committed = outcome == OK or (outcome == INFO and rnd.random() < 0.5)
        parts = rnd.sample(range(partitions), rnd.randint(1, partitions))
        sends = []
        for k, p in enumerate(parts):
            off = len(logs[p])
            logs[p].append((off, f"v{i}-{k}", committed))
            logs[p].append((off + 1, "", False))  # the control marker takes an offset, readers never see it
            sends.append(("t", p, f"v{i}-{k}", off if outcome == OK else None))
        h.txn(proc, sends, outcome=outcome)
    visible = {p: [(o, v) for o, v, c in logs[p] if c] for p in range(partitions)}
    for r in range(readers):
        for p in range(partitions):
            recs, pos = visible[p], 0
            while pos < len(recs):
                n = rnd.randint(1, 4)
                h.poll(f"r{r}", {tp_key("t", p): recs[pos:pos + n]})
                pos += n
    h.scan({tp_key("t", p): visible[p] for p in range(partitions)})
    h.scan({tp_key("t", p): [(o, v) for o, v, _ in logs[p] if v] for p in range(partitions)}, READ_UNCOMMITTED)
    return h


def many_topics(n: int, duplicate_in_last: bool = False) -> History:
    """One committed value in each of ``n`` topics (``m0`` .. ``m<n-1>``, partition 0 at offset 0),
    polled and in the final scans. With ``duplicate_in_last``, the last topic's value is there twice
    (offsets 0 and 2): one duplicate, whose positions name that topic."""
    h = History()
    h.init("p1", "tx-1")
    recs: Recs = {}
    for i in range(n):
        h.txn("p1", [(f"m{i}", 0, f"v{i}", 0)], txn_id="tx-1")
        recs[tp_key(f"m{i}", 0)] = [(0, f"v{i}")]
    if duplicate_in_last:
        recs[tp_key(f"m{n - 1}", 0)] = [(0, f"v{n - 1}"), (2, f"v{n - 1}")]
    h.poll("r1", recs)
    h.scan(recs)
    h.scan(recs, READ_UNCOMMITTED)
    return h


#: ``app_map``'s variants, each one kind of ``app-map`` finding (the kind it must show)
APP_MAP_VARIANTS = {"missing": "missing", "duplicate": "duplicate", "aborted-input": "aborted-input",
                    "unexplained": "unexplained", "polled-aborted": "aborted-input", "order": "order",
                    "undeclared": "undeclared-topic"}


def app_map(variant: str = "", function: bool = False) -> History:
    """An app with a ``map`` contract (per-key order) reading ``in`` (partitions 0, 1) and writing
    ``out``, fed by ``app-feeder.0`` with keys k0 (partition 0) and k1 (1): T1, T2 committed, T3
    aborted, T4 unknown but seen committed, T5 unknown and never seen (aborted). The app copies
    each committed input (``identity``), or, with ``function``, writes two outputs for it
    (``<value>:a``, ``<value>:b``) and none for i4 (the ``expect`` ops say so). An output reader
    polls, the final scans read ``in`` and ``out``. Each variant of ``APP_MAP_VARIANTS`` adds one
    finding of its kind."""
    h = History()
    h.init("app-feeder.0", "feeder-tx")
    h.txn("app-feeder.0", [("in", 0, "i1", 0), ("in", 1, "i2", 0)], keys=["k0", "k1"])
    h.txn("app-feeder.0", [("in", 0, "i3", 2), ("in", 1, "i4", 2)], keys=["k0", "k1"])
    h.txn("app-feeder.0", [("in", 0, "i5", None), ("in", 1, "i6", None)], outcome=FAIL, keys=["k0", "k1"])
    h.txn("app-feeder.0", [("in", 0, "i7", None)], outcome=INFO, keys=["k0"])
    h.txn("app-feeder.0", [("in", 1, "i8", None)], outcome=INFO, keys=["k1"])
    committed_in = {0: [(0, "i1"), (2, "i3"), (6, "i7")], 1: [(0, "i2"), (2, "i4")]}
    h.scan({tp_key("in", p): recs for p, recs in committed_in.items()})
    h.scan({tp_key("in", 0): [(0, "i1"), (2, "i3"), (4, "i5"), (6, "i7")],
            tp_key("in", 1): [(0, "i2"), (2, "i4"), (4, "i6"), (6, "i8")]}, READ_UNCOMMITTED)

    def yields(value: str) -> list[str]:
        return ([] if value == "i4" else [f"{value}:a", f"{value}:b"]) if function else [value]

    contract = {"function": "tests.apps:twice", "order": "per-key"} if function else {"order": "per-key"}
    h.app_contract("app", "map", ["in"], ["out"], **contract)
    if function:
        h.expect("app", [(v, [("out", "k0" if int(v[1:]) % 2 else "k1", y) for y in yields(v)])
                         for v in ("i1", "i2", "i3", "i4", "i5", "i6", "i7", "i8")])
    # one output after another in each partition, a transaction marker after each input's outputs
    out: dict[int, list[tuple[int, str | None, str | None]]] = {0: [], 1: []}
    for p, recs in committed_in.items():
        for _, v in recs:
            for y in yields(v):
                out[p].append((len(out[p]) * 2, y, f"k{p}"))
    if variant == "missing":
        out[0] = [r for r in out[0] if r[1] not in yields("i3")[:1]]
    if variant == "duplicate":
        out[0].append((20, yields("i3")[0], "k0"))
    if variant == "aborted-input":
        out[1].append((20, yields("i6")[0], "k1"))
    if variant == "unexplained":
        out[1].append((20, "x9", "k1"))
    if variant == "order":  # i3's outputs after i7's
        i3 = [r[1] for r in out[0] if r[1] in yields("i3")]
        i7 = [r[1] for r in out[0] if r[1] in yields("i7")]
        values = [r[1] for r in out[0] if r[1] not in i3 + i7] + i7 + i3
        out[0] = [(k * 2, v, "k0") for k, v in enumerate(values)]
    uncommitted = {p: [*recs, (30, recs[-1][1] if recs else None, f"k{p}")] for p, recs in out.items()}
    if variant == "missing":  # the app wrote it, in a transaction that aborted
        uncommitted[0].append((31, yields("i3")[0], "k0"))
    polled = {tp_key("out", 0): out[0][:1]}
    if variant == "polled-aborted":  # a read_committed poll saw i8's output, gone from the final scan
        polled[tp_key("out", 1)] = [(20, yields("i8")[0], "k1")]
    if variant == "undeclared":  # one record written to a topic that is neither an output nor the app's own
        h.app_stray("app", {"audit-log": 1})
    h.app_poll("app-reader.0", "app", polled)
    h.app_scan("app", {tp_key("out", p): recs for p, recs in out.items()})
    h.app_scan("app", {tp_key("out", p): recs for p, recs in uncommitted.items()}, READ_UNCOMMITTED)
    h.lso({tp_key("in", 0): 0.1, tp_key("in", 1): 0.1})
    return h


#: ``app_aggregate``'s variants, each the kinds of ``app-aggregate`` finding it must show
APP_AGGREGATE_VARIANTS = {"final": {"final"}, "overshoot": {"overshoot", "final"}, "back": {"back"},
                          "split": {"split"}, "not-a-number": {"not-a-number"}, "aborted-counted": {"overshoot", "final"},
                          "undeclared": {"undeclared-topic"}}


def app_aggregate(variant: str = "") -> History:
    """An app with an ``aggregate`` contract reading ``ain`` (partitions 0, 1) and writing the count,
    sum, min and max of each key to ``cnt``, ``sm``, ``mn``, ``mx``, one update per input in the
    key's partition. Committed input: k0 5, 3, 8; k1 7, 9; aborted: k0 100, k1 1, k2 2. Each
    variant of ``APP_AGGREGATE_VARIANTS`` breaks one topic's updates."""
    h = History()
    h.init("app-feeder.0", "feeder-tx")
    h.txn("app-feeder.0", [("ain", 0, "5", 0), ("ain", 1, "7", 0)], keys=["k0", "k1"])
    h.txn("app-feeder.0", [("ain", 0, "3", 2), ("ain", 1, "9", 2)], keys=["k0", "k1"])
    h.txn("app-feeder.0", [("ain", 0, "100", None), ("ain", 1, "1", None), ("ain", 0, "2", None)], outcome=FAIL,
          keys=["k0", "k1", "k2"])
    h.txn("app-feeder.0", [("ain", 0, "8", 6)], keys=["k0"])
    h.scan({tp_key("ain", 0): [(0, "5"), (2, "3"), (6, "8")], tp_key("ain", 1): [(0, "7"), (2, "9")]})
    h.scan({tp_key("ain", 0): [(0, "5"), (2, "3"), (4, "100"), (5, "2"), (6, "8")],
            tp_key("ain", 1): [(0, "7"), (2, "9"), (4, "1")]}, READ_UNCOMMITTED)
    aggregates = {"cnt": "count", "sm": "sum", "mn": "min", "mx": "max"}
    h.app_contract("agg", "aggregate", ["ain"], list(aggregates), aggregates=aggregates)
    updates = {"cnt": {"k0": [1, 2, 3], "k1": [1, 2]}, "sm": {"k0": [5, 8, 16], "k1": [7, 16]},
               "mn": {"k0": [5, 3, 3], "k1": [7, 7]}, "mx": {"k0": [5, 5, 8], "k1": [7, 9]}}
    if variant == "final":
        updates["cnt"]["k0"] = [1, 2]  # the last input's update never committed
    if variant == "overshoot":
        updates["cnt"]["k0"] = [1, 2, 3, 4]  # an input counted twice after a crash
    if variant == "back":
        updates["sm"]["k0"] = [5, 8, 5, 16]  # a stale update from restored state
    if variant == "aborted-counted":
        updates["mx"]["k0"] = [5, 5, 100]  # the aborted 100 made it into the max
    recs: dict[str, dict[int, list[tuple[int, str | None, str | None]]]] = {}
    for topic, per_key in updates.items():
        recs[topic] = {0: [], 1: []}
        for key, values in per_key.items():
            for v in values:
                part = recs[topic][int(key[1:])]
                part.append((len(part) * 2, str(v), key))
    if variant == "split":
        recs["cnt"][0].append((10, "1", "k1"))  # k1 counted in partition 0 too
    if variant == "not-a-number":
        recs["sm"][1].append((10, "sixteen", "k1"))
    if variant == "undeclared":
        h.app_stray("agg", {"agg-debug": 1})
    h.app_scan("agg", {tp_key(t, p): r for t, parts in recs.items() for p, r in parts.items()})
    h.app_scan("agg", {tp_key(t, p): r for t, parts in recs.items() for p, r in parts.items()}, READ_UNCOMMITTED)
    h.lso({tp_key("ain", 0): 0.1, tp_key("ain", 1): 0.1})
    return h
