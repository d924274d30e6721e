"""Where a hunt run's faults landed: how many ran, and which landed inside an open transaction, from
the run journal's fault records (``FaultRun.hit``, harness/history/hits.py; an app kill's
``in_transaction``). A seed that found nothing is evidence of a search only by what its faults hit:
docs/HUNT.md counts these for every seed."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.base.errors import ConfigError
from harness.rundir.journal import FaultRun, Journal
from harness.rundir.runfolder import RunFolder


@dataclass(frozen=True)
class Landings:
    """A run's faults: how many ran, how many have a hit record, how many hit nothing, and those that
    landed inside an open transaction, by what they were (``label``)."""

    faults: int = 0
    recorded: int = 0
    hit_nothing: int = 0
    in_transaction: dict[str, int] = field(default_factory=dict)
    #: of ``faults``, those on links between brokers (``between_brokers``)
    between_brokers: int = 0
    #: faults of the scenario that failed and did not run (the journal's ``nemesis_errors``): the
    #: seed did not try what it drew, and its table says so rather than count it as searched
    failed: int = 0

    @property
    def landed(self) -> int:
        return sum(self.in_transaction.values())

    @property
    def landed_between_brokers(self) -> int:
        return sum(n for name, n in self.in_transaction.items() if name.endswith(BETWEEN_BROKERS))


#: What a fault's label ends with when it acted on links between brokers: an AddPartitionsToTxn held
#: there is a leader's verification, not a client's request, and is counted apart.
BETWEEN_BROKERS = " between brokers"


def between_brokers(f: FaultRun) -> bool:
    """A wire fault whose links are all between brokers (or a broker's to itself), as its start
    event names them; a client link's name starts ``client-`` (clusters/kafka/topology.py)."""
    links = f.detail.get("links")
    return (bool(f.detail.get("api")) and isinstance(links, list) and bool(links)
            and not any(str(lk).startswith("client-") for lk in links))


def label(f: FaultRun) -> str:
    """A fault as the summary names it: its kind, and the API (a wire fault's, followed by ``between
    brokers`` on those links) or the target's role (``kill coordinator``, ``hold-requests EndTxn``,
    ``hold-requests WriteTxnMarkers between brokers``, ``kill-workload app``)."""
    d = f.detail
    api = d.get("api")
    if api:
        return (f"{f.kind} {', '.join(map(str, api)) if isinstance(api, list) else api}"
                + (BETWEEN_BROKERS if between_brokers(f) else ""))
    what = d.get("workload") or d.get("target")
    return f"{f.kind} {_process_kind(str(what))}" if what else f.kind


def _process_kind(name: str) -> str:
    # a workload fault's record names the process (txn-producer-0): the summary counts its kind
    head, _, tail = name.rpartition("-")
    return head if head and tail.isdigit() else name


def inside_transaction(f: FaultRun) -> bool | None:
    """The fault landed inside an open transaction (None: no record of what it hit).

    - An app kill that waited for one (``in_transaction``) and found its ids open: inside; its wait
      ran out with none open: outside.
    - A fault on the wire: its rule caught a request while a transaction of what it aimed at was
      open (a held EndTxn with no transaction open holds a retry, not a decision).
    - Any other: a transaction of what it aimed at was open at its start (a kill, a pause, a restart
      or latency that began in the middle of one)."""
    waited = f.detail.get("in_transaction")
    if isinstance(waited, dict) and waited.get("open"):
        return True
    h = f.hit
    if h is None:  # an app kill's listing said none was open (its wait ran out), unless it failed
        return False if isinstance(waited, dict) and "error" not in waited else None
    if h.requests is not None:
        return sum(h.requests.values()) > 0 and h.txns_open > 0
    at_start = h.txns_open if h.txns_open_at_start is None else h.txns_open_at_start
    return at_start > 0


def landings(run_dir: Path) -> Landings:
    """The run's ``Landings`` from its journal; empty for a folder without one (or one cut short)."""
    try:
        j = Journal.load(RunFolder(run_dir))
    except (ConfigError, OSError, ValueError):
        return Landings()
    if j is None:
        return Landings()
    inside: dict[str, int] = {}
    for f in j.faults:
        if inside_transaction(f):
            inside[label(f)] = inside.get(label(f), 0) + 1
    recorded = [f for f in j.faults if f.hit is not None]
    return Landings(len(j.faults), len(recorded), sum(1 for f in recorded if f.hit is not None and not f.hit.hit),
                    dict(sorted(inside.items())), sum(map(between_brokers, j.faults)), len(j.nemesis_errors))


def to_json(x: Landings) -> dict[str, Any]:
    """``hunt.json``'s record of a run's landings."""
    return {"faults": x.faults, "recorded": x.recorded, "hit_nothing": x.hit_nothing, "landed": x.landed,
            "in_transaction": x.in_transaction, "between_brokers": x.between_brokers,
            "landed_between_brokers": x.landed_between_brokers, "failed": x.failed}
