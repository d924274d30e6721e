"""Hand-written histories of the cycle checks (``g0``, ``g1c``; docs/CYCLES.md): each of Jepsen's
variants that Kafka can show, and the clean twins, among them the cycles Elle would report that
a correct Kafka makes every day (transactions are intervals, their records land one by one)."""

from __future__ import annotations

from harness.history.builder import History, Recs
from harness.history.model import INFO, READ_UNCOMMITTED, copy_value

Sends = list[tuple[str, int, str, int | None]]


def _scans(h: History, recs: Recs) -> History:
    h.scan({k: sorted(v) for k, v in recs.items()})
    h.scan({k: sorted(v) for k, v in recs.items()}, READ_UNCOMMITTED)
    return h


def g0_realtime(clean: bool = False) -> History:
    """p1's A completed ok before p2's B was invoked; B's b lands before A's a (the twin: after)."""
    h = History()
    h.txn("p1", [("t", 0, "a", 1)])
    b_at = 2 if clean else 0
    h.txn("p2", [("t", 0, "b", b_at)])
    return _scans(h, {"t-0": [(1, "a"), (b_at, "b")]})


def g0_process(clean: bool = False) -> History:
    """p1's A completed ok; p1's next transaction B (its outcome unknown, yet committed) lands
    before it (the twin: after). B has no acknowledged offset: nonmonotonic-send cannot see it."""
    h = History()
    h.txn("p1", [("t", 0, "a", 1)])
    b_at = 2 if clean else 0
    h.txn("p1", [("t", 0, "b", None)], outcome=INFO)
    return _scans(h, {"t-0": [(1, "a"), (b_at, "b")]})


def interleaved() -> History:
    """Two open transactions write two partitions in opposite orders: ww both ways, Elle's G0, which
    Kafka allows (its writes are not isolated)."""
    h = History()
    a: Sends = [("t", 0, "a0", 0), ("t", 1, "a1", 1)]
    b: Sends = [("t", 0, "b0", 1), ("t", 1, "b1", 0)]
    h.begin("p1", a)
    h.begin("p2", b)
    h.end("p1", a)
    h.end("p2", b)
    return _scans(h, {"t-0": [(0, "a0"), (1, "b0")], "t-1": [(0, "b1"), (1, "a1")]})


def long_writer() -> History:
    """p3's X is open throughout: its x0 lands before p1's A, its x1 after p2's B, which was invoked
    after A completed. Elle's G0-realtime (A -rt-> B -ww-> X -ww-> A), a correct Kafka's history."""
    h = History()
    x: Sends = [("t", 0, "x0", 0), ("t", 1, "x1", 1)]
    h.begin("p3", x)
    h.txn("p1", [("t", 0, "a", 1)])
    h.txn("p2", [("t", 1, "b", 0)])
    h.end("p3", x)
    return _scans(h, {"t-0": [(0, "x0"), (1, "a")], "t-1": [(0, "b"), (1, "x1")]})


def copier_realtime(variant: str = "") -> History:
    """p1's H writes h1 and h2; a copier copies h1; p2's K, invoked after the copy, lands before h2.
    The copy while H is open (read_uncommitted) is G1c-realtime: H -wr-> copy -rt-> K -ww-> H.
    ``clean``: the copy after H committed. ``future``: the copy before H was even invoked
    (H -wr-> copy -rt-> H)."""
    h = History()
    hs: Sends = [("t", 0, "h1", 0), ("t", 1, "h2", 1)]
    copy: Sends = [("o", 0, copy_value("t", 0, 0, "h1", "copier.0-0"), 0)]
    if variant == "future":
        h.txn("copier", copy)
    h.begin("p1", hs)
    if variant == "":
        h.txn("copier", copy)
    h.txn("p2", [("t", 1, "k", 0)])
    h.end("p1", hs)
    if variant == "clean":
        h.txn("copier", copy)
    return _scans(h, {"t-0": [(0, "h1")], "t-1": [(0, "k"), (1, "h2")], "o-0": [(0, copy[0][2])]})


def copier_loop(variant: str = "") -> History:
    """A copier ``b`` that copies topic y into y itself, behind a copier ``a`` that copies x into y:
    b reads a's first output while a's transaction is still open (read_uncommitted).
    ``""``: b's copy lands before a's second output: plain G1c (A -wr-> B -ww-> A).
    ``process``: b writes that copy to y-1, and b's next transaction lands before a's second output:
    G1c-process (A -wr-> B1 -process-> B2 -ww-> A). ``clean``: b reads after a committed."""
    h = History()
    h.txn("p0", [("x", 0, "v0", 0), ("x", 0, "v1", 1)])
    out1, out2 = copy_value("x", 0, 0, "v0", "a.0-0"), copy_value("x", 0, 1, "v1", "a.0-0")
    a: Sends = [("y", 0, out1, 0), ("y", 0, out2, 2)]
    by_b = copy_value("y", 0, 0, out1, "b.0-0")
    y: Recs = {"y-0": [(0, out1)]}
    if variant == "clean":
        h.txn("a", [("y", 0, out1, 0), ("y", 0, out2, 1)])
        h.txn("b", [("y", 0, by_b, 2)])
        y["y-0"] += [(1, out2), (2, by_b)]
        return _scans(h, {"x-0": [(0, "v0"), (1, "v1")], **y})
    h.begin("a", a)
    if variant == "process":
        h.txn("b", [("y", 1, by_b, 0)])
        again = copy_value("y", 1, 0, by_b, "b.0-1")
        h.txn("b", [("y", 0, again, 1)])
        y["y-0"].append((1, again))
        y["y-1"] = [(0, by_b)]
    else:
        h.txn("b", [("y", 0, by_b, 1)])
        y["y-0"].append((1, by_b))
    h.end("a", a)
    y["y-0"].append((2, out2))
    return _scans(h, {"x-0": [(0, "v0"), (1, "v1")], **y})


#: name -> (history, the check that must fire alone (None: none), the anomaly its example names)
CASES = {
    "g0-realtime": (g0_realtime(), "g0", "G0-realtime"),
    "g0-realtime-clean": (g0_realtime(clean=True), None, None),
    "g0-process": (g0_process(), "g0", "G0-process"),
    "g0-process-clean": (g0_process(clean=True), None, None),
    "interleaved": (interleaved(), None, None),
    "long-writer": (long_writer(), None, None),
    "g1c-realtime": (copier_realtime(), "g1c", "G1c-realtime"),
    "g1c-realtime-future": (copier_realtime("future"), "g1c", "G1c-realtime"),
    "g1c-realtime-clean": (copier_realtime("clean"), None, None),
    "g1c": (copier_loop(), "g1c", "G1c"),
    "g1c-process": (copier_loop("process"), "g1c", "G1c-process"),
    "g1c-loop-clean": (copier_loop("clean"), None, None),
}
