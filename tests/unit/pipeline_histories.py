"""Hand-written histories of a pipeline of two apps (docs/APPS.md, "Pipelines") for the checker's
unit tests: ``copy`` reads the feeder's ``in`` and writes ``mid``, ``finish`` reads ``mid`` and
writes ``out``."""

from __future__ import annotations

from harness.history.app_values import content_id
from harness.history.builder import History
from harness.history.model import FAIL, READ_UNCOMMITTED, tp_key

#: ``pipeline``'s variants: (the hop checks' findings per app, the end-to-end kind and its blame)
PIPELINE_VARIANTS = {
    "a-duplicate": ({"copy": {"duplicate"}}, "duplicate", ["copy"]),
    "a-aborted": ({"copy": {"aborted-input"}}, "aborted-input", ["copy"]),
    "b-loss": ({"finish": {"missing"}}, "missing", ["finish"]),
    "b-duplicate": ({"finish": {"duplicate"}}, "duplicate", ["finish"]),
    "b-reads-aborted": ({"finish": {"aborted-input"}}, "unexplained", ["finish"]),  # nothing the feeder wrote makes it
}

Rec = tuple[int, str, str]


def pipeline(variant: str = "", finish: str = "map") -> History:
    """The feeder writes i1 (k0, partition 0), i2 (k1, 1), i3 (k0, 0) committed and i4 (k0) in an
    aborted transaction. ``copy`` (map, a function) writes ``<v>:a`` per input to ``mid``; ``finish``
    (``finish="map"``: a function, ``<v>:b`` per input; ``"count"``: an aggregate counting each
    key's records) writes ``out``. Each variant of ``PIPELINE_VARIANTS`` breaks one hop once."""
    h = History()
    h.init("app-feeder.0", "feeder-tx")
    h.txn("app-feeder.0", [("in", 0, "i1", 0), ("in", 1, "i2", 0)], keys=["k0", "k1"])
    h.txn("app-feeder.0", [("in", 0, "i3", 2)], keys=["k0"])
    h.txn("app-feeder.0", [("in", 0, "i4", None)], outcome=FAIL, keys=["k0"])
    h.scan({tp_key("in", 0): [(0, "i1"), (2, "i3")], tp_key("in", 1): [(0, "i2")]})
    h.scan({tp_key("in", 0): [(0, "i1"), (2, "i3"), (4, "i4")], tp_key("in", 1): [(0, "i2")]}, READ_UNCOMMITTED)
    h.app_contract("copy", "map", ["in"], ["mid"], function="tests.apps:a")
    keys = {"i1": "k0", "i2": "k1", "i3": "k0", "i4": "k0"}
    h.expect("copy", [(v, [("mid", k, f"{v}:a")]) for v, k in keys.items()])
    mid: dict[int, list[Rec]] = {0: [(0, "i1:a", "k0"), (2, "i3:a", "k0")], 1: [(0, "i2:a", "k1")]}
    if variant == "a-duplicate":  # a replay after a kill wrote i3's output again
        mid[0].append((4, "i3:a", "k0"))
    if variant == "a-aborted":  # the aborted i4 was read and copied
        mid[0].append((4, "i4:a", "k0"))
    mid_uncommitted = {p: list(r) for p, r in mid.items()}
    if variant == "b-reads-aborted":  # copy's own transaction aborted; finish read it all the same
        mid_uncommitted[0].append((6, "i9:a", "k0"))
    if finish == "map":
        h.app_contract("finish", "map", ["mid"], ["out"], function="tests.apps:b", upstream="copy")
        contents = {(k, f"{v}:a") for v, k in keys.items()} | {("k0", "i9:a")}
        h.expect("finish", [(content_id("mid", k, v), [("out", k, f"{v}:b")]) for k, v in sorted(contents)])
        out = {p: [(o, f"{v}:b", k) for o, v, k in recs] for p, recs in mid.items()}
    else:
        h.app_contract("finish", "aggregate", ["mid"], ["out"], aggregates={"out": "count"}, upstream="copy")
        out = {p: [(o, str(n + 1), k) for n, (o, _, k) in enumerate(recs)] for p, recs in mid.items()}
    if variant == "b-loss":
        out[0] = out[0][:-1]
    if variant == "b-duplicate":
        out[0].append((8, *out[0][-1][1:]) if finish == "map" else (8, str(len(out[0]) + 1), "k0"))
    if variant == "b-reads-aborted":
        out[0].append((10, "i9:a:b", "k0") if finish == "map" else (10, str(len(out[0]) + 1), "k0"))
    h.app_scan("copy", {tp_key("mid", p): r for p, r in mid.items()})
    h.app_scan("copy", {tp_key("mid", p): r for p, r in mid_uncommitted.items()}, READ_UNCOMMITTED)
    h.app_scan("finish", {tp_key("out", p): r for p, r in out.items()})
    h.app_scan("finish", {tp_key("out", p): r for p, r in out.items()}, READ_UNCOMMITTED)
    h.lso({tp_key("in", 0): 0.1, tp_key("in", 1): 0.1})
    return h
