"""Checking the checker (``eos-chaos selftest``): random histories of a correct Kafka, each with one
anomaly injected at a random place; exactly the matching check must fire, with the count the
injection implies, and every other check must stay silent. The untouched history must be valid.

``World`` is a run in the abstract (transactions, the log of every partition, each reader's polls,
the final scans), so that an injection edits facts and the history is rendered from them afterwards,
with every view (acknowledgements, polls, both scans) still agreeing where the anomaly does not
touch it. The same worlds serve the property test (``tests/unit/test_mutations.py``) and the command.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from harness.checker.verdict import Verdict
from harness.history.builder import History
from harness.history.model import FAIL, INFO, MAX_PARTITION, OK, READ_UNCOMMITTED, tp_key


@dataclass
class WorldSend:
    partition: int
    value: str
    offset: int  # where it is in the log (acknowledged only when the transaction is ok)


@dataclass
class WorldTxn:
    producer: int
    outcome: str
    committed: bool
    sends: list[WorldSend]


@dataclass
class Init:
    """``init_transactions`` by a producer instance (``instance`` 0 is the producer's own)."""

    producer: int
    instance: int


#: one poll: partition -> [(offset, value)]
Poll = dict[int, list[tuple[int, str]]]


@dataclass
class World:
    """One topic ``t``; producers ``p<k>`` (transactional.id ``tx-<k>``); readers ``r<k>``."""

    partitions: int
    producers: int
    events: list[Init | WorldTxn] = field(default_factory=list)
    #: per partition: (offset, value, committed); control markers are (offset, "", False)
    logs: list[list[tuple[int, str, bool]]] = field(default_factory=list)
    polls: dict[int, list[Poll]] = field(default_factory=dict)
    committed_scan: dict[int, list[tuple[int, str]]] = field(default_factory=dict)
    uncommitted_scan: dict[int, list[tuple[int, str]]] = field(default_factory=dict)

    def txns(self) -> list[WorldTxn]:
        return [e for e in self.events if isinstance(e, WorldTxn)]


def world(rnd: random.Random, txns: int = 12, producers: int = 3, partitions: int = 3, readers: int = 2) -> World:
    """A correct Kafka's run: transactions land in the log in invoke order, each end writes a control
    marker, aborted values are only in read_uncommitted, unknown (info) ones either way; readers poll
    every committed record in order. It holds at least one transaction of each outcome, one that
    committed without its producer knowing (info) with two or more sends, and ends with an ok one."""
    w = World(partitions, producers, logs=[[] for _ in range(partitions)])
    w.events = [Init(p, 0) for p in range(producers)]
    forced = [OK, FAIL, INFO]
    rnd.shuffle(forced)
    for i in range(max(txns, 4)):
        outcome = forced[i] if i < 3 else OK if i == max(txns, 4) - 1 else rnd.choice([OK, OK, OK, FAIL, INFO])
        committed = outcome == OK or (outcome == INFO and (i < 3 or rnd.random() < 0.5))
        least = 2 if outcome == INFO and i < 3 else 1
        parts = sorted(rnd.sample(range(partitions), rnd.randint(min(least, partitions), partitions)))
        sends = []
        for k, p in enumerate(parts):
            off = len(w.logs[p])
            w.logs[p] += [(off, f"v{i}-{k}", committed), (off + 1, "", False)]
            sends.append(WorldSend(p, f"v{i}-{k}", off))
        w.events.append(WorldTxn(rnd.randrange(producers), outcome, committed, sends))
    visible = {p: [(o, v) for o, v, c in w.logs[p] if c] for p in range(partitions)}
    for r in range(readers):
        polls: list[Poll] = []
        for p in range(partitions):
            recs, at = visible[p], 0
            while at < len(recs):
                n = rnd.randint(1, 4)
                polls.append({p: recs[at:at + n]})
                at += n
        w.polls[r] = polls
    w.committed_scan = visible
    w.uncommitted_scan = {p: [(o, v) for o, v, _ in w.logs[p] if v] for p in range(partitions)}
    return w


def render(w: World, h: History | None = None, prefix: str = "", topic: str = "t", first_partition: int = 0) -> History:
    """``w`` as a history (appended to ``h``). When many worlds share one history, ``prefix`` keeps
    their processes and values apart, and each has its own partitions of ``topic``, from
    ``first_partition`` on (few topics: an engine's cost grows with them)."""
    h = h or History()
    for e in w.events:
        if isinstance(e, Init):
            h.init(f"{prefix}p{e.producer}" + (f"~{e.instance}" if e.instance else ""), f"{prefix}tx-{e.producer}")
        else:
            h.txn(f"{prefix}p{e.producer}", [(topic, first_partition + s.partition, f"{prefix}{s.value}",
                                              s.offset if e.outcome == OK else None)
                                             for s in e.sends], outcome=e.outcome, txn_id=f"{prefix}tx-{e.producer}")
    for r, polls in w.polls.items():
        for poll in polls:
            h.poll(f"{prefix}r{r}", {tp_key(topic, first_partition + p): [(o, f"{prefix}{v}") for o, v in recs]
                                     for p, recs in poll.items()})

    def scan(view: dict[int, list[tuple[int, str]]]) -> dict[str, list[tuple[int, str]]]:
        return {tp_key(topic, first_partition + p): [(o, f"{prefix}{v}") for o, v in sorted(recs)]
                for p, recs in view.items()}

    h.scan(scan(w.committed_scan))
    h.scan(scan(w.uncommitted_scan), READ_UNCOMMITTED)
    return h


# The injections: each edits ``w`` and returns the count its check must report.

def _drop(view: dict[int, list[tuple[int, str]]], values: set[str]) -> None:
    for p in view:
        view[p] = [r for r in view[p] if r[1] not in values]


def _end(w: World, p: int) -> int:
    """An offset past everything partition ``p`` holds."""
    return len(w.logs[p]) + 2


def duplicate(w: World, rnd: random.Random) -> int:
    """A committed value a second time, past the end of its partition (a retried send without idempotence)."""
    p = rnd.choice([p for p, recs in w.committed_scan.items() if recs])
    _, v = rnd.choice(w.committed_scan[p])
    for view in (w.committed_scan, w.uncommitted_scan):
        view[p] = view[p] + [(_end(w, p), v)]
    return 1


def lost_write(w: World, rnd: random.Random) -> int:
    """An acknowledged (ok) transaction's values gone from the final scans (readers saw them before)."""
    t = rnd.choice([t for t in w.txns() if t.outcome == OK])
    gone = {s.value for s in t.sends}
    _drop(w.committed_scan, gone)
    _drop(w.uncommitted_scan, gone)
    return len(gone)


def wrong_offset(w: World, rnd: random.Random) -> int:
    """A committed value found one offset after where its delivery report put it (on the slot of its
    transaction's control marker, so every reader's order stays as it was)."""
    t = rnd.choice([t for t in w.txns() if t.outcome == OK])
    s = rnd.choice(t.sends)

    def move(recs: list[tuple[int, str]]) -> list[tuple[int, str]]:
        return [(o + 1 if v == s.value else o, v) for o, v in recs]

    for view in (w.committed_scan, w.uncommitted_scan):
        view[s.partition] = move(view[s.partition])
    for polls in w.polls.values():
        for poll in polls:
            if s.partition in poll:
                poll[s.partition] = move(poll[s.partition])
    return 1


def aborted_read(w: World, rnd: random.Random) -> int:
    """A value of an aborted transaction in a read_committed reader's poll, in offset order."""
    t = rnd.choice([t for t in w.txns() if t.outcome == FAIL])
    s = rnd.choice(t.sends)
    polls = w.polls[rnd.choice(sorted(w.polls))]
    mine = [poll for poll in polls if s.partition in poll]
    if not mine:  # nothing committed in that partition: the reader's only record there
        polls.append({s.partition: [(s.offset, s.value)]})
        return 1
    after = [poll for poll in mine if poll[s.partition][-1][0] > s.offset]
    poll = after[0] if after else mine[-1]
    poll[s.partition] = sorted(poll[s.partition] + [(s.offset, s.value)])
    return 1


def nonmonotonic_poll(w: World, rnd: random.Random) -> int:
    """A reader's poll goes back to a record it already got."""
    r = rnd.choice(sorted(w.polls))
    first = rnd.choice([poll for poll in w.polls[r]])
    p = rnd.choice(sorted(first))
    w.polls[r].append({p: [rnd.choice(first[p])]})
    return 1


def zombie_commit(w: World, rnd: random.Random) -> int:
    """A producer's last (ok) commit starts after a newer instance of its transactional.id finished
    ``init_transactions``."""
    last = w.events[-1]
    assert isinstance(last, WorldTxn) and last.outcome == OK
    w.events.insert(len(w.events) - 1, Init(last.producer, 1))
    return 1


def phantom_read(w: World, rnd: random.Random) -> int:
    """A read_committed reader gets a value no process wrote."""
    r = rnd.choice(sorted(w.polls))
    p = rnd.randrange(w.partitions)
    w.polls[r].append({p: [(_end(w, p), f"ghost-{rnd.randrange(10**6)}")]})
    return 1


def poll_skip(w: World, rnd: random.Random) -> int:
    """A reader never gets a committed record between two it got in a row."""
    r = rnd.choice(sorted(w.polls))
    got: dict[int, list[tuple[int, str]]] = {}
    for poll in w.polls[r]:
        for p, recs in poll.items():
            got.setdefault(p, []).extend(recs)
    p = rnd.choice([p for p, recs in got.items() if len(recs) >= 2])
    skipped = rnd.choice(got[p][:-1])
    for poll in w.polls[r]:
        if p in poll:
            poll[p] = [x for x in poll[p] if x != skipped]
    return 1


def torn_transaction(w: World, rnd: random.Random) -> int:
    """One value of a transaction that committed (its producer did not learn it: info) is missing
    from the final read_committed scan, and no reader saw it; its other values are there."""
    t = rnd.choice([t for t in w.txns() if t.outcome == INFO and t.committed and len(t.sends) >= 2])
    gone = {rnd.choice(t.sends).value}
    _drop(w.committed_scan, gone)
    for polls in w.polls.values():
        for poll in polls:
            for p in poll:
                poll[p] = [x for x in poll[p] if x[1] not in gone]
    return 1


#: anomaly kind (the name of the check that must fire) -> its injection
INJECTIONS: dict[str, Callable[[World, random.Random], int]] = {
    "duplicate": duplicate, "lost-write": lost_write, "wrong-offset": wrong_offset, "aborted-read": aborted_read,
    "nonmonotonic-poll": nonmonotonic_poll, "zombie-commit": zombie_commit, "phantom-read": phantom_read,
    "poll-skip": poll_skip, "torn-transaction": torn_transaction,
}


def mutated(kind: str, seed: int) -> tuple[World, int]:
    """The world of ``seed`` with one anomaly of ``kind``, and the count its check must report."""
    rnd = random.Random(f"{kind}/{seed}")
    w = world(rnd, txns=rnd.randint(6, 14), producers=rnd.randint(2, 3), partitions=rnd.randint(2, 3))
    return w, INJECTIONS[kind](w, rnd)


def clean_world(seed: int) -> World:
    """``mutated``'s world of ``seed`` for the clean twin, untouched."""
    rnd = random.Random(f"clean/{seed}")
    return world(rnd, txns=rnd.randint(6, 14), producers=rnd.randint(2, 3), partitions=rnd.randint(2, 3))


#: the clean twins' row in the results
CLEAN = "(none: clean)"


@dataclass
class KindResult:
    """How the checker did on the examples of one anomaly kind (``CLEAN``: untouched worlds)."""

    kind: str
    examples: int
    #: (seed, the counts wanted, the counts the checker gave) of each example it got wrong
    wrong: list[tuple[int | None, dict[str, int], dict[str, int]]] = field(default_factory=list)


def _fired(verdict: Verdict) -> dict[str, int]:
    """Check name -> count of every check that fired (a crashed check counts as -1)."""
    return {n: (-1 if c.count is None else c.count) for n, c in verdict.checks.items() if c.count != 0}


def run_default(examples: int, seed: int = 0, kinds: list[str] | None = None,
                step: Callable[[str], None] | None = None) -> list[KindResult]:
    """Each example checked on its own by the default engine: exactly its kind's check fires, with
    the count its injection implies; each clean twin is valid with every check silent. ``kinds``:
    the kinds to inject (None: all; ``CLEAN`` among them: the clean twins, always last by default)."""
    from harness.checker import check

    results = []
    for kind in ([*INJECTIONS, CLEAN] if kinds is None else kinds):
        res = KindResult(kind, examples)
        for s in range(seed, seed + examples):
            if kind == CLEAN:
                want: dict[str, int] = {}
                verdict = check(render(clean_world(s)).tables())
            else:
                w, n = mutated(kind, s)
                want, verdict = {kind: n}, check(render(w).tables())
            got = _fired(verdict)
            if got != want or verdict.valid is not (not want):
                res.wrong.append((s, want, got))
        results.append(res)
        if step:
            step(kind)
    return results


def combined(examples: int, seed: int = 0, kinds: list[str] | None = None) -> tuple[History, dict[str, int]]:
    """Every example (and clean twin) in one history, each under its own prefix (topic, processes,
    values), and the count each check must total: for engines that check a history at a time."""
    h = History()
    want: dict[str, int] = {}
    per = (MAX_PARTITION + 1) // 4  # the partitions of one topic, as many worlds as fit (3 partitions at most each)
    for kind in [*(kinds or INJECTIONS), CLEAN]:
        for k, s in enumerate(range(seed, seed + examples)):
            w, n = mutated(kind, s) if kind != CLEAN else (clean_world(s), 0)
            name = "clean" if kind == CLEAN else kind
            render(w, h, prefix=f"{name}.{s}.", topic=f"{name}.{k // per}", first_partition=4 * (k % per))
            if kind != CLEAN:
                want[kind] = want.get(kind, 0) + n
    return h, want


def judge_combined(verdict: Verdict, want: dict[str, int], examples: int) -> list[KindResult]:
    """``combined``'s history judged: each kind's check totals its examples' counts, no other fires."""
    got = _fired(verdict)
    results = []
    for kind in want:
        res = KindResult(kind, examples)
        if got.get(kind, 0) != want[kind]:
            res.wrong.append((None, {kind: want[kind]}, {kind: got.get(kind, 0)}))
        results.append(res)
    others = {n: c for n, c in got.items() if n not in want}
    results.append(KindResult(CLEAN, examples, [(None, {}, others)] if others else []))
    return results
