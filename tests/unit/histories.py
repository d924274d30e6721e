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


def clean(variant: str = "") -> History:
    """Two producers on topic ``t`` (partitions 0, 1); txn A and B committed, C aborted, D unknown
    but committed; a reader; final scans; a copier that copies ``t`` to ``o``. Each ``variant``
    adds exactly one anomaly (its name is the check that must fire)."""
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

    log: dict[int, list[tuple[int, str]]] = {
        p: sorted([(0, f"a{p + 1}"), (b_at, f"b{p + 1}"), (d_at, f"d{p + 1}")]) for p in (0, 1)}
    if variant == "int-nonmonotonic-send":
        log[0] += [(9, "e2"), (10, "e1")]
    if variant == "precommitted-read":
        log[0] += [(10, "e1")]
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
        # r1 gets e1 before p1 even starts the transaction that writes it
        h.poll("r1", {tp_key("t", 0): [(10, "e1")]})
        h.txn("p1", [("t", 0, "e1", 10)])
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
    out_recs: dict[int, list[tuple[int, str]]] = {0: [], 1: []}
    for p in (0, 1):
        for off, v in committed[p]:
            if variant == "copy-exactly-once" and v == "b1":
                continue  # skipped, yet the group offset below moves past it
            out_recs[p].append((len(out_recs[p]) * 2, copy_value("t", p, off, v, "copier-1.0-0")))
    h.init("copier-1", "copier-tx")
    for p in (0, 1):
        h.txn("copier-1", [("o", p, v, off) for off, v in out_recs[p]], txn_id="copier-tx")

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
