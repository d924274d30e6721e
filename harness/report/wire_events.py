"""The wire proxy's event log (``wire-events.jsonl``, clusters/wire/kwire, docs/WIRE-FAULTS.md) as a
report reads it: each event placed on the report's clock, said in words, and what a bug report
needs of it (the API versions of the requests, the producer ids and epochs of a transactional.id,
the events of a window).

The proxy logs only the requests a fault's rule matched, with their request header (``api``,
``version``, ``correlation_id``, ``client_id``) and, for the transactional APIs, fields decoded from
the body (``details``: ``transactional_id``, ``producer_id``, ``producer_epoch``, ``committed``,
...); then what became of each (``deliver``, ``response``, ``respond``, ``drop-response``, ...),
and its rules' comings and goings. Times are ``unix_us``: microseconds since the epoch."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from harness.rundir.runfolder import WIRE_EVENTS

#: The APIs whose versions a transaction bug report needs: KIP-890 changed each of them.
TXN_APIS = ("InitProducerId", "AddPartitionsToTxn", "Produce", "EndTxn")
#: Where the event log is, in a run folder or a cluster's.
WIRE_PLACES = (WIRE_EVENTS, f"wire/{WIRE_EVENTS}")
#: The proxy's events about its rules, not about a request.
_RULE_EVENTS = ("rule-added", "rule-removed", "reset")
#: At most this many events of a window are kept.
MAX_EVENTS = 20_000


@dataclass
class WireEvent:
    """One line of the wire proxy's event log, on the report's clock."""

    t_s: float | None
    raw: dict[str, Any]
    line: str

    @property
    def details(self) -> dict[str, Any]:
        d = self.raw.get("details")
        return d if isinstance(d, dict) else {}

    @property
    def txn_id(self) -> str | None:
        t = self.details.get("transactional_id")
        return t if isinstance(t, str) else None

    @property
    def source(self) -> str:
        """Who says so, for the timeline: the link the request came on."""
        link = self.raw.get("link")
        return f"wire {link}" if link else "wire proxy"

    def says(self) -> str:
        """``match EndTxn v1: hold 500 ms until client-gone; conn 3, correlation 6; transactional.id
        tx-1, producer id 0, epoch 0, commit``."""
        ev, what = self.raw, str(self.raw.get("event"))
        if what in _RULE_EVENTS:
            rest = {k: v for k, v in ev.items() if k not in ("event", "time", "unix_us")}
            return f"{what} {orjson.dumps(rest).decode()}"
        head = f"{what} {ev.get('api', '?')} v{ev.get('version', '?')}"
        acts = []
        if what == "match":
            acts.append(str(ev.get("action", "")))
            if ev.get("action") == "hold":
                acts.append(f"{ev.get('hold_ms')} ms until {ev.get('until')}")
            if ev.get("error"):
                acts.append(f"answered {ev['error']}")
            if ev.get("forwarded"):
                acts.append(f"forwarded ({ev.get('decode_error')})")
        if "held_ms" in ev:
            acts.append(f"held {ev['held_ms']} ms")
        if what == "response":
            acts.append(f"{ev.get('error', '?')}, {'to the client' if ev.get('to_client') else 'the client had gone'}")
        if ev.get("behind_dropped"):
            acts.append("behind a dropped response")
        if ev.get("client_gone") and what != "response":
            acts.append("client gone")
        d = self.details
        facts = [f"transactional.id {d['transactional_id']}" if "transactional_id" in d else "",
                 f"producer id {d['producer_id']}" if "producer_id" in d else "",
                 f"epoch {d['producer_epoch']}" if "producer_epoch" in d else "",
                 ("commit" if d["committed"] else "abort") if "committed" in d else "",
                 f"group {d['group_id']}" if d.get("group_id") else "",
                 f"acks {d['acks']}" if "acks" in d else ""]
        where = f"conn {ev.get('conn')}, correlation {ev.get('correlation_id')}"
        return "; ".join(p for p in (head + (": " + ", ".join(a for a in acts if a) if any(acts) else ""), where,
                                     ", ".join(f for f in facts if f)) if p)



@dataclass
class ApiSeen:
    """The versions of one API in the requests the wire proxy logged."""

    api: str
    #: version -> requests seen at it
    versions: dict[int, int]
    clients: list[str]



def wire_file(run_dir: Path, cluster_dir: Path | None) -> Path | None:
    """The run's wire event log (its own slice of a shared cluster's, when the run copied one), else
    the cluster's; None: none."""
    for folder in [f for f in (run_dir, cluster_dir) if f is not None]:
        for place in WIRE_PLACES:
            if (folder / place).is_file():
                return folder / place
    return None


def read_wire(run_dir: Path, cluster_dir: Path | None, zero: float | None) -> tuple[list[WireEvent], str]:
    """The wire proxy's events, each placed on the report's clock (``zero``: t=0 in seconds since the
    epoch), and where they came from in words."""
    path = wire_file(run_dir, cluster_dir)
    if path is None:
        return [], "no wire event log (a run made before the wire proxy, or one whose cluster kept none)"
    events: list[WireEvent] = []
    bad = 0
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return [], f"{path} cannot be read ({exc.strerror or exc})"
    for line in text.splitlines():
        try:
            raw = orjson.loads(line)
        except orjson.JSONDecodeError:
            bad += 1
            continue
        if not isinstance(raw, dict):
            bad += 1
            continue
        us = raw.get("unix_us")
        t_s = us / 1e6 - zero if isinstance(us, (int, float)) and zero is not None else None
        events.append(WireEvent(t_s, raw, line))
    shown = path.relative_to(run_dir) if path.is_relative_to(run_dir) else path
    says = f"{shown}: {len(events)} events" + (f" ({bad} lines that are not JSON objects left out)" if bad else "")
    return events, says


def api_versions(events: list[WireEvent]) -> list[ApiSeen]:
    """Each API's request versions in the events (``match``: one per request), the transactional
    APIs first, each with the client ids that sent it."""
    seen: dict[str, ApiSeen] = {}
    for e in events:
        api, v = e.raw.get("api"), e.raw.get("version")
        if e.raw.get("event") != "match" or not isinstance(api, str) or not isinstance(v, int):
            continue
        a = seen.setdefault(api, ApiSeen(api, {}, []))
        a.versions[v] = a.versions.get(v, 0) + 1
        client = e.raw.get("client_id")
        if isinstance(client, str) and client not in a.clients:
            a.clients.append(client)
    order = {api: i for i, api in enumerate(TXN_APIS)}
    rows = [seen.get(api) or ApiSeen(api, {}, []) for api in TXN_APIS]
    return rows + sorted((a for a in seen.values() if a.api not in order), key=lambda a: a.api)


def producers(events: list[WireEvent], txn_id: str, start_s: float, end_s: float | None) -> list[str]:
    """``producer id 7, epoch 0`` for each producer id and epoch the wire proxy decoded from the
    requests of ``txn_id`` from ``start_s`` to ``end_s`` (None: on), in the order first seen."""
    end = end_s if end_s is not None else math.inf
    found = []
    for e in events:
        d = e.details
        if (e.txn_id == txn_id and e.raw.get("event") == "match" and "producer_id" in d
                and (e.t_s is None or start_s - 0.01 <= e.t_s <= end + 0.01)):
            found.append(f"producer id {d['producer_id']}, epoch {d.get('producer_epoch')}")
    return list(dict.fromkeys(found))


def window_events(events: list[WireEvent], lo: float, hi: float, mine: set[str], others: set[str]) -> list[WireEvent]:
    """The events in ``[lo, hi]`` but those of ``others`` (the history's other producers; an app's own
    transactional.ids are in no history, so they stay); events not placed in time: ``mine``'s."""
    kept = []
    for e in events:
        if e.t_s is None:
            if e.txn_id is not None and e.txn_id in mine:
                kept.append(e)
        elif lo <= e.t_s <= hi and (e.txn_id is None or e.txn_id not in others):
            kept.append(e)
    return kept[:MAX_EVENTS]
