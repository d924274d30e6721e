"""``eos-chaos hunt``: scenarios that know nothing of any bug, drawn from a seed, run as a matrix over
clients (docs/HUNT.md). Each seed draws the workloads' shapes (transaction sizes, gaps between
writes, abort shares, timeouts, a copier or not, a shipped app or not: harness.campaigns.hunt_apps)
and a schedule of faults from a catalogue of request-aware faults (hold, drop the response of, or
answer with an error the transactional APIs, Produce, FindCoordinator, InitProducerId; and between
brokers WriteTxnMarkers, the AddPartitionsToTxn verification, Fetch: harness.campaigns.hunt_brokers), process
pauses and kills, coordinator and leader kills and restarts, and latency around the clients' request
timeout. The drawn scenario is a YAML file in the hunt's folder: it replays with ``eos-chaos run
FILE``, and ``minimize`` cuts it down like any other.

The summary is a pure function of the matrix's record and the run folders: per column (client,
Kafka version, transaction version), the seeds that found something, the checks, when the first
anomaly happened, each finding's repro kit, and every seed's faults with those that landed inside
an open transaction (harness.campaigns.hunt_landings), totalled over the seeds that found nothing."""

from __future__ import annotations

import json
import logging
import math
import random
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness.base.errors import ConfigError
from harness.campaigns import hunt_apps, hunt_brokers, hunt_landings
from harness.campaigns.matrix import Matrix, level_name
from harness.workloads.txn_ids import transactional_id

log = logging.getLogger(__name__)

#: What a drawn scenario's name starts with; its file is ``scenarios/hunt-<seed>.yaml``.
PREFIX = "hunt-"
SCENARIOS = "scenarios"
HUNT_JSON = "hunt.json"
HUNT_MD = "HUNT.md"
#: A finding's repro kit, in its run folder (``eos-chaos repro``'s default place)
REPRO = "repro"
#: The quiet start and end of a drawn run (the workloads commit before the first fault and after the last).
START_S = (2.0, 5.0)
QUIET_END_S = 10.0
#: Each drawn fault's length and the gap after it, seconds: about one fault every 3.4 s, so a 100 s
#: run holds some 25 (throughput under faults is what finds bugs: docs/BENCHMARKS.md)
FAULT_S = (1.0, 4.0)
GAP_S = (0.3, 1.5)
#: The clients' request timeouts the draw picks from (ms): librdkafka's socket.timeout.ms and
#: Java's request.timeout.ms, both given. Short enough that a client gives up on a held request
#: within a fault (the first draw also had 5 and 10 s: those seeds found nothing, docs/history/HUNT.md).
REQUEST_TIMEOUTS_MS = (1000, 1500, 2000, 3000)
COMMIT_TIMEOUTS_S = (1, 2, 5)
#: The gaps between two writes of a transaction (ms), each as likely. A transaction open with only
#: some of its writes sent is where a late or reordered request lands in the middle of something;
#: with no gap a transaction is open for a few milliseconds. Every finding of the second draw had
#: 100 ms gaps and none of its 0 or 10 ms seeds found anything (docs/history/HUNT.md), so the third draw
#: gave the longer gaps half the seeds. The fourth has no 0 ms: a late request tears a transaction
#: only when it lands between the transaction's first write and its last, and at 0 ms those are a few
#: ms apart. In the second and third draws' 0 ms seeds, three late commits landed in a later open
#: transaction and tore nothing (docs/history/HUNT.md, "Where the late requests landed").
SEND_GAPS_MS = (10, 30, 100, 200, 300)
#: A ``hold-requests`` fault ``until: timeout`` holds a request for this share of the client's
#: request timeout: most of them past it, so the request reaches the broker after the client gave
#: up on it (an indeterminate request, the hazard every finding so far came from); one in five
#: within it, a slow answer the client waits for (``latency`` makes those too).
HOLD_SHARES = (0.5, 1.1, 1.5, 2.0, 2.5)
#: ``until: client-gone``: the held request is delivered this long (ms) after the client closed its
#: connection. The client's next transaction began 90 to 2200 ms after it gave up (median 660 ms)
#: and was open for 10 ms to 4.9 s (median 310 ms; the second to fourth draws, docs/history/HUNT.md): the
#: delays span both.
GONE_DELAYS_MS = (100, 300, 500, 800, 1200, 2000)
#: A hold's fault lasts this long (s) past the moment its drawn hold delivers what it holds: a fault
#: that ends first delivers it early (the proxy lets what it holds go when a rule is removed), and
#: one hold in eight of the fourth draw was cut short so.
HOLD_MARGIN_S = 0.5
#: The requests the wire faults act on, with their weights: a copier's APIs only with a copier. The
#: request that decides a transaction's outcome weighs most (EndTxn: 4 until the fifth draw, which
#: made it 6: a seed's late EndTxn were a median of 3 in the fourth).
PRODUCER_APIS = {"EndTxn": 6, "AddPartitionsToTxn": 3, "Produce": 2, "FindCoordinator": 1, "InitProducerId": 1}
COPIER_APIS = {"TxnOffsetCommit": 1, "AddOffsetsToTxn": 1}
#: The errors a fault may answer a request with: only ones that say the request did nothing (the
#: proxy did not forward it), so that a correct client retries. An error that claims the request
#: was done (DUPLICATE_SEQUENCE_NUMBER on a Produce that never reached the broker) would make a
#: correct client lose a write: a false alarm of the harness's own making.
RETRIABLE_ERRORS = {
    "Produce": ("NOT_LEADER_OR_FOLLOWER", "NOT_ENOUGH_REPLICAS"),
    **{api: ("NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE", "CONCURRENT_TRANSACTIONS")
       for api in ("EndTxn", "AddPartitionsToTxn", "AddOffsetsToTxn", "TxnOffsetCommit", "InitProducerId")},
}
#: The kinds of fault and their weights. Holds weigh most since the fourth draw (9; 12 since the
#: fifth): every finding came from a held request delivered late, and the third draw delivered a
#: median of 2 late EndTxn a seed.
#: The sixth draw added broker kills and restarts beside the coordinator's kill: a partition's leader
#: killed, and a clean restart of the coordinator or a leader (the coordinator's state loaded again,
#: a leadership moved while transactions write to it).
#:
#: The seventh draw adds faults on the links between brokers (``hunt_brokers``: WriteTxnMarkers, the
#: AddPartitionsToTxn verification, a follower's Fetch) as one more row, ``BROKER_KINDS``, where the
#: backend can carry them and the hunt does not say ``--no-broker-faults``; without that row the draw
#: is the sixth's, seed for seed.
KINDS = {"hold-requests": 12, "drop-api-responses": 2, "error-responses": 2, "latency": 1, "pause-workload": 1,
         "kill-workload": 1, "kill-coordinator": 1, "kill-leader": 1, "restart-broker": 1}
BROKER_KINDS = {**KINDS, hunt_brokers.KIND: hunt_brokers.WEIGHT}
#: A killed broker stays down this long at least (its restart takes some); a restart's fault is
#: given this long at least, the restart's own time, before the next fault.
KILL_DOWN_S = 3.0
RESTART_S = 5.0
#: A drawn scenario's topics' partitions (the scenario format's default).
PARTITIONS = 3
#: The first producer's transactional.id: "the coordinator" of a seed that runs an app is the app's
#: (its ``{id}*``), so a fault on the producers' names theirs.
PRODUCER_TXN_ID = transactional_id("txn-producer-0")


def seeds(master: int, n: int) -> list[int]:
    """The hunt's ``n`` seeds, drawn from ``master``: the same master seed draws the same scenarios."""
    rnd = random.Random(f"hunt/{master}")
    return [rnd.randrange(2**31) for _ in range(n)]


def draw(seed: int, duration: float, apps: tuple[str, ...] | None = None, broker_faults: bool = True) -> dict[str, Any]:
    """The scenario seed ``seed`` draws (as its YAML file holds it), ``duration`` seconds long, with
    one of ``apps`` beside its producers (``hunt_apps.pool``: None, a seed may draw any or none), and
    with faults between brokers among its faults when ``broker_faults`` (else the sixth draw's)."""
    rnd = random.Random(f"hunt-scenario/{seed}")
    timeout_ms = rnd.choice(REQUEST_TIMEOUTS_MS)
    client = {"socket.timeout.ms": timeout_ms, "request.timeout.ms": timeout_ms}
    # two records a transaction at least: a torn transaction shows only then
    shape = {"values_per_txn": rnd.randint(2, 8), "abort_share": rnd.choice([0.0, 0.0, 0.1, 0.3]),
             "send_gap_ms": rnd.choice(SEND_GAPS_MS), "commit_timeout_s": rnd.choice(COMMIT_TIMEOUTS_S)}
    copier = rnd.random() < 0.5
    workloads: list[dict[str, Any]] = [
        {"kind": "txn-producer", "count": rnd.choice([1, 1, 2]), "settings": {**shape, "topics": ["hunt-in"]},
         "client": dict(client)}]
    topics = ["hunt-in", "hunt-out"] if copier else ["hunt-in"]
    if copier:
        workloads.append({"kind": "copier", "settings": {"input": "hunt-in", "output": "hunt-out",
                                                          "abort_share": rnd.choice([0.0, 0.1])}, "client": dict(client)})
    app = hunt_apps.choose(seed, apps)
    if app is not None:  # random streams of its own: which app a seed runs leaves the shapes it draws as they are
        entry, app_topics = hunt_apps.workload(app, random.Random(f"hunt-app-entry/{seed}"))
        workloads.append(entry)
        topics += app_topics
    workloads.append({"kind": "reader", "count": 1})
    pool = _Pool(timeout_ms, {**PRODUCER_APIS, **(COPIER_APIS if copier or app else {})},
                 ["txn-producer", *(["copier"] if copier else []), *(["app"] if app else [])], topics, app is not None,
                 BROKER_KINDS if broker_faults else KINDS, duration - QUIET_END_S)
    faults = _schedule(rnd, duration, pool)
    between = sum(map(hunt_brokers.between_brokers, faults))
    described = (f"Drawn by eos-chaos hunt from seed {seed}: {len(faults)} faults over {duration:g} s"
                 + (f" ({between} between brokers)" if broker_faults else "") + "; "
                 f"{shape['values_per_txn']} values a transaction, {shape['send_gap_ms']} ms between writes, "
                 f"{shape['abort_share']:.0%} aborted, {shape['commit_timeout_s']} s commit timeout, "
                 f"{timeout_ms} ms request timeout" + (", and a copier" if copier else "")
                 + (f", and the shipped app {app}" if app else ""))
    return {"name": f"{PREFIX}{seed}", "description": described, "duration": duration,
            "topics": topics, "workloads": workloads, "faults": faults, "expect": {"valid": None}}


@dataclass(frozen=True)
class _Pool:
    """What a seed's faults are drawn over: its clients' request timeout, the APIs by weight, the
    workloads a workload fault may aim at, the topics whose leaders a broker fault may aim at, and
    whether an app runs (then "the coordinator" is drawn: the producers' or the app's)."""

    timeout_ms: int
    apis: dict[str, int]
    workloads: list[str]
    topics: list[str]
    app: bool
    #: the kinds by weight (``KINDS``, or ``BROKER_KINDS`` with faults between brokers)
    kinds: dict[str, int]
    #: the schedule's last moment (the run's quiet end begins)
    end_s: float


def _schedule(rnd: random.Random, duration: float, pool: _Pool) -> list[dict[str, Any]]:
    """One fault at a time, from a quiet start to the quiet end."""
    faults = []
    t = rnd.uniform(*START_S)
    while True:
        f = _fault(rnd, round(t, 1), round(rnd.uniform(*FAULT_S), 1), pool)
        if f["at"] + f["duration"] > duration - QUIET_END_S:
            break
        faults.append(f)
        t = f["at"] + f["duration"] + rnd.uniform(*GAP_S)  # one fault at a time
    return faults


def _fault(rnd: random.Random, at: float, length: float, pool: _Pool) -> dict[str, Any]:
    f = _drawn_fault(rnd, at, length, pool)
    return {"at": f.pop("at"), "kind": f.pop("kind"), **f}  # as a scenario file is written: when, what, then how


def _drawn_fault(rnd: random.Random, at: float, length: float, pool: _Pool) -> dict[str, Any]:
    kind = _weighted(rnd, pool.kinds)
    base: dict[str, Any] = {"at": at, "duration": length}
    timeout_ms = pool.timeout_ms
    if kind in ("hold-requests", "drop-api-responses", "error-responses"):
        return _wire_fault(rnd, kind, base, pool)
    if kind == hunt_brokers.KIND:
        return _broker_fault(rnd, base, pool)
    if kind == "latency":  # around the clients' request timeout: some requests outlive it, some not
        return {**base, "kind": "latency", "target": "coordinator", **_coordinator_of(rnd, pool), "listeners": "client",
                "params": {"latency_ms": int(timeout_ms * rnd.uniform(0.5, 1.5)), "jitter_ms": int(timeout_ms * 0.1)}}
    if kind == "kill-coordinator":  # down 3 s at least (a restart takes some)
        return {**base, "kind": "kill", "target": "coordinator", **_coordinator_of(rnd, pool),
                "duration": max(length, KILL_DOWN_S)}
    if kind == "kill-leader":  # a partition's leader of any topic of the run: its writers and readers move
        return {**base, "kind": "kill", "target": "leader", "of": _partition(rnd, pool),
                "duration": max(length, KILL_DOWN_S)}
    if kind == "restart-broker":  # a clean restart: the coordinator's load, or a leader's move, back to back
        aim = ({"target": "coordinator", **_coordinator_of(rnd, pool)} if rnd.random() < 0.5
               else {"target": "leader", "of": _partition(rnd, pool)})
        return {**base, "kind": "restart", **aim, "duration": max(length, RESTART_S)}
    workload = rnd.choice(pool.workloads)
    if kind == "kill-workload" and workload == "app":
        # half of an app's kills wait (20 s at most) until its transactions are open: a kill inside one
        return {**base, "kind": kind, "workload": workload, "in_transaction": rnd.random() < 0.5}
    return {**base, "kind": kind, "workload": workload}


def _wire_fault(rnd: random.Random, kind: str, base: dict[str, Any], pool: _Pool) -> dict[str, Any]:
    timeout_ms = pool.timeout_ms
    apis = {a: w for a, w in pool.apis.items() if kind != "error-responses" or a in RETRIABLE_ERRORS}
    api = _weighted(rnd, apis)
    # the coordinator of a transactional.id (a producer's or the app's; AddOffsetsToTxn the scenario's
    # default: the app's when it runs, which sends it, the producers never do); TxnOffsetCommit goes
    # to the group's coordinator; a Produce or FindCoordinator on any broker
    aim = ({"target": "all"} if api in ("Produce", "FindCoordinator") else
           {"target": "group-coordinator"} if api == "TxnOffsetCommit" else
           {"target": "coordinator", **({} if api in COPIER_APIS else _coordinator_of(rnd, pool))})
    f = {**base, "kind": kind, "api": api, "count": rnd.choice([1, 1, 2, 3, 0]), **aim}
    if kind == "hold-requests":
        _hold(rnd, f, timeout_ms, rnd.choice(["timeout", "client-gone"]))
    elif kind == "error-responses":
        f["error"] = rnd.choice(RETRIABLE_ERRORS[api])
    return f


def _hold(rnd: random.Random, f: dict[str, Any], timeout_ms: int, until: str) -> None:
    """A hold's ``until``, ``hold_ms`` and duration: held for a share of the clients' request
    timeout (some outlive it, some not); or, once the client has given up and closed its
    connection, delivered a moment later, while it is into what it does next."""
    f["until"] = until
    f["hold_ms"] = int(timeout_ms * rnd.choice(HOLD_SHARES)) if until == "timeout" else rnd.choice(GONE_DELAYS_MS)
    delivered_s = (f["hold_ms"] if until == "timeout" else timeout_ms + f["hold_ms"]) / 1000
    # long enough for the client to give up on what it holds within the fault, and for the hold
    # to deliver it when drawn
    f["duration"] = max(f["duration"], round(timeout_ms / 1000 + 1, 1), round(delivered_s + HOLD_MARGIN_S, 1))


def _broker_fault(rnd: random.Random, base: dict[str, Any], pool: _Pool) -> dict[str, Any]:
    """A fault between brokers (``hunt_brokers.fault``) aimed at the producers' transactions (their
    coordinator, a partition of their topic) or, in a seed with an app, the app's, each as likely.
    A hold holds ``until: timeout`` only (a broker closes no connection within a fault: it waits 30 s
    for an answer), for a share of the clients' request timeout: what the brokers hold up, the
    clients wait on (a commit's markers, a Produce's verification, a Produce's acks=all)."""
    of = _coordinator_of(rnd, pool)
    apps = pool.app and not of  # the default coordinator is the app's where an app runs
    theirs = [t for t in pool.topics if not t.startswith(PREFIX)] if apps else ["hunt-in"]
    partition = f"{rnd.choice(theirs)}/{rnd.randrange(PARTITIONS)}"
    f = hunt_brokers.fault(rnd, base, pool.end_s - base["at"], of, partition, "{id}*" if apps else PRODUCER_TXN_ID)
    if f["kind"] == "hold-requests":
        _hold(rnd, f, pool.timeout_ms, "timeout")
    elif f["kind"] == "error-responses":
        f["error"] = rnd.choice(RETRIABLE_ERRORS[f["api"]])
    return f


def _coordinator_of(rnd: random.Random, pool: _Pool) -> dict[str, str]:
    """Whose transaction coordinator a fault aims at: without an app, the scenario's default (the
    first producer's transactional.id); with one, the producers' or the app's (the default then:
    ``{id}*``), each as likely."""
    if not pool.app:
        return {}
    return {"of": PRODUCER_TXN_ID} if rnd.random() < 0.5 else {}


def _partition(rnd: random.Random, pool: _Pool) -> str:
    return f"{rnd.choice(pool.topics)}/{rnd.randrange(PARTITIONS)}"


def _weighted(rnd: random.Random, weights: dict[str, int]) -> str:
    return rnd.choices(list(weights), weights=list(weights.values()))[0]


def write_scenarios(folder: Path, hunt_seeds: list[int], duration: float,
                    apps: tuple[str, ...] | None = None, broker_faults: bool = True) -> list[Path]:
    """Each seed's scenario (``draw``'s, with ``apps`` and ``broker_faults``) as
    ``folder/scenarios/hunt-<seed>.yaml``; their paths, in seed order. A
    file already there is kept as it is: it is what the folder's runs ran, and a later version of the
    draw may draw the same seed differently (a resumed hunt must not run one seed two ways)."""
    d = folder / SCENARIOS
    d.mkdir(parents=True, exist_ok=True)
    paths = []
    for s in hunt_seeds:
        p = d / f"{PREFIX}{s}.yaml"
        drawn = yaml.safe_dump(draw(s, duration, apps, broker_faults), sort_keys=False, width=120)
        if not p.exists():
            p.write_text(drawn)
        elif p.read_text() != drawn:
            log.warning(f"{p} is kept as it is: this version of eos-chaos draws seed {s} differently "
                        "(the folder's runs ran the file)")
        paths.append(p)
    return paths


# ---- the summary ----

@dataclass(frozen=True)
class HuntRun:
    """One run of the hunt as the summary sees it."""

    seed: int
    outcome: str  # valid, invalid, unknown
    checks: dict[str, int]
    #: seconds after the schedule's start at which the earliest anomaly the report marks was complete
    first_anomaly_s: float | None
    replay: str | None
    #: per API, the requests the wire proxy delivered after the client had given up on them
    #: (``late_requests``)
    late: dict[str, int]
    #: its faults, and those that landed inside an open transaction (``hunt_landings.to_json``)
    landings: dict[str, Any]
    #: a finding's repro kit (``REPORT.md``, ``repro_kits``), relative to the hunt's folder
    kit: str | None = None


def first_anomaly_s(run_dir: Path) -> float | None:
    """When the earliest of the examples the report marks (its first 12) was complete, in seconds
    after the schedule's start; None for a run without one (or whose folder cannot be read)."""
    from harness.report.data import load

    try:
        marked = load(run_dir).marked
    except (ConfigError, OSError, ValueError, KeyError):  # a run folder cut short: the table says "-"
        return None
    return round(min(m.end_s for m in marked), 1) if marked else None


def late_requests(run_dir: Path) -> dict[str, int]:
    """Per API, how many held requests the wire proxy delivered to the broker after their client had
    given up on them: its connection was closed by then, or the request was held past the client's
    request timeout (the run's ``scenario.json``); between brokers (``<API> between brokers``) only
    the first, as the sending broker waits longer than any drawn hold. Every finding of the hunt so far came from one of
    these (docs/HUNT.md); ``{}`` for a run without a wire log (or whose folder cannot be read)."""
    from harness.report.wire_events import read_wire
    from harness.rundir.runfolder import SCENARIO

    try:
        scenario = json.loads((run_dir / SCENARIO).read_text())
        timeouts = [float(w["client"]["request.timeout.ms"]) for w in scenario.get("workloads", [])
                    if isinstance(w.get("client"), dict) and "request.timeout.ms" in w["client"]]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    timeout_ms = min(timeouts, default=math.inf)
    late: dict[str, int] = {}
    for e in read_wire(run_dir, None, None)[0]:
        ev = e.raw
        if ev.get("event") != "deliver":
            continue
        held = ev.get("held_ms")
        # a broker sends between brokers and waits 30 s for an answer (hunt_brokers.BROKER_WAIT_S),
        # longer than any drawn hold: its request is late only if it left (closed the connection)
        broker = not str(ev.get("link", "client-")).startswith("client-")
        if ev.get("client_gone") or (not broker and isinstance(held, (int, float)) and held >= timeout_ms):
            api = str(ev.get("api", "?")) + (hunt_landings.BETWEEN_BROKERS if broker else "")
            late[api] = late.get(api, 0) + 1
    return dict(sorted(late.items()))


def summary(m: Matrix, out: Path, first_of: Callable[[Path], float | None] = first_anomaly_s,
            late_of: Callable[[Path], dict[str, int]] = late_requests,
            landed_of: Callable[[Path], hunt_landings.Landings] = hunt_landings.landings) -> dict[str, Any]:
    """Per column (client, Kafka version, transaction version): every seed's outcome, the detection
    rate (invalid among the runs judged), how many were unknown, which checks fired in how many
    seeds, the median time to the first anomaly (``first_of`` a finding's run folder), the late
    requests of every run (``late_of`` its folder) with their median a seed, and every run's faults
    with those that landed inside an open transaction (``landed_of``), totalled over the seeds that
    found nothing: the evidence that they searched."""
    columns: dict[tuple[str, str, str], list[HuntRun]] = {}
    for r in sorted(m.runs.values(), key=lambda r: (r.client, r.kafka_version, level_name(r.transaction_version))):
        seed = int(Path(r.scenario).stem.removeprefix(PREFIX))
        t = first_of(out / r.run_dir) if r.outcome == "invalid" else None
        columns.setdefault((r.client, r.kafka_version, level_name(r.transaction_version)), []).append(
            HuntRun(seed, r.outcome, dict(r.anomalies), t, r.command if r.outcome != "valid" else None,
                    late_of(out / r.run_dir), hunt_landings.to_json(landed_of(out / r.run_dir)),
                    _kit(out, r.run_dir) if r.outcome == "invalid" else None))
    return {"columns": [_column(key, runs) for key, runs in columns.items()]}


def _column(key: tuple[str, str, str], runs: list[HuntRun]) -> dict[str, Any]:
    client, kv, tv = key
    judged = [r for r in runs if r.outcome != "unknown"]
    found = [r for r in runs if r.outcome == "invalid"]
    checks: dict[str, int] = {}
    for r in found:
        for name in r.checks:
            checks[name] = checks.get(name, 0) + 1
    times = [r.first_anomaly_s for r in found if r.first_anomaly_s is not None]
    return {"client": client, "kafka_version": kv, "transaction_version": tv, "seeds": len(runs),
            "judged": len(judged), "found": len(found), "unknown": len(runs) - len(judged),
            "detection_rate": round(len(found) / len(judged), 3) if judged else None,
            "checks": dict(sorted(checks.items(), key=lambda kv_: (-kv_[1], kv_[0]))),
            "median_first_anomaly_s": round(statistics.median(times), 1) if times else None,
            "median_late_requests": statistics.median(sum(r.late.values()) for r in runs) if runs else None,
            **_nothing_found([r for r in runs if r.outcome == "valid"]),
            "runs": [r.__dict__ for r in sorted(runs, key=lambda r: r.seed)]}


def _kit(out: Path, run_dir: str) -> str | None:
    from harness.report.repro_md import REPORT_MD

    kit = Path(run_dir) / REPRO / REPORT_MD
    return str(kit) if (out / kit).is_file() else None


def repro_kits(m: Matrix, out: Path) -> list[Path]:
    """Each finding's repro kit (``eos-chaos repro``'s: the transactions with the wire proxy's events,
    versions, configuration, log excerpts, the replay command and a smaller scenario's draft) in
    ``<run folder>/repro``, from its folder alone; one already there is kept. The kits written. A
    run whose kit cannot be made is logged and skipped: the hunt's summary says it has none."""
    from harness.report import repro, repro_md
    from harness.report.loaded import read_verdict

    written = []
    for r in m.runs.values():
        d = out / r.run_dir
        if r.outcome != "invalid" or (d / REPRO / repro_md.REPORT_MD).is_file():
            continue
        try:
            repro_md.write(repro.gather(d, read_verdict(d)), d / REPRO)
        except (ConfigError, OSError, ValueError, KeyError) as exc:
            log.warning(f"{d}: no repro kit ({type(exc).__name__}: {exc})")
            continue
        written.append(d / REPRO)
    return written


def _nothing_found(empty: list[HuntRun]) -> dict[str, Any]:
    """The seeds that found nothing (valid), with the faults they ran and those that landed inside an
    open transaction: in all, by what the fault was, and how many seeds landed none (a seed whose
    faults hit no transaction searched nothing)."""
    by: dict[str, int] = {}
    for r in empty:
        for name, n in r.landings.get("in_transaction", {}).items():
            by[name] = by.get(name, 0) + n
    return {"nothing_found": {
        "seeds": len(empty), "faults": sum(r.landings.get("faults", 0) for r in empty),
        "in_transaction": sum(r.landings.get("landed", 0) for r in empty),
        "between_brokers": sum(r.landings.get("between_brokers", 0) for r in empty),
        "between_brokers_in_transaction": sum(r.landings.get("landed_between_brokers", 0) for r in empty),
        "failed": sum(r.landings.get("failed", 0) for r in empty),
        "median_in_transaction": statistics.median(r.landings.get("landed", 0) for r in empty) if empty else None,
        "seeds_without_landing": sum(1 for r in empty if not r.landings.get("landed")),
        "by_fault": dict(sorted(by.items(), key=lambda kv: (-kv[1], kv[0])))}}


def page(s: dict[str, Any], folder_name: str) -> str:
    """HUNT.md: a table per column of the summary, one row per seed, with its replay."""
    lines = [f"# Hunt {folder_name}", "",
             "Scenarios drawn from seeds (`scenarios/`), run as a matrix (`matrix.html`); docs/HUNT.md says what is drawn.", "",
             "A late request is one the wire proxy delivered after its client had given up on it; every finding so far came from one.",
             "",
             "| client | Kafka | tv | seeds | found | unknown | detection rate | checks (seeds) | median time to the first anomaly "
             "| late requests a seed (median) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for c in s["columns"]:
        rate = "-" if c["detection_rate"] is None else f"{c['detection_rate']:.0%}"
        checks = ", ".join(f"{k} ({n})" for k, n in c["checks"].items()) or "-"
        t = "-" if c["median_first_anomaly_s"] is None else f"{c['median_first_anomaly_s']} s"
        lines.append(f"| {c['client']} | {c['kafka_version']} | {c['transaction_version']} | {c['seeds']} | {c['found']} | "
                     f"{c['unknown']} | {rate} | {checks} | {t} | {_num(c.get('median_late_requests'))} |")
    for c in s["columns"]:
        lines += ["", f"## {c['client']}, Kafka {c['kafka_version']}, transaction version {c['transaction_version']}", "",
                  *_searched(c.get("nothing_found")),
                  "| seed | outcome | checks | first anomaly | late requests | faults (inside a transaction) | replay "
                  "| repro kit |", "|---|---|---|---|---|---|---|---|"]
        for r in c["runs"]:
            checks = ", ".join(f"{k}: {n}" for k, n in r["checks"].items()) or "-"
            t = "-" if r["first_anomaly_s"] is None else f"{r['first_anomaly_s']} s"
            replay = f"`{r['replay']}`" if r["replay"] else "-"
            late = ", ".join(f"{k} {n}" for k, n in (r.get("late") or {}).items()) or "-"
            kit = f"[REPORT.md]({r['kit']}), then `eos-chaos minimize {Path(r['kit']).parent.parent}`" if r.get("kit") else "-"
            lines.append(f"| {r['seed']} | {r['outcome']} | {checks} | {t} | {late} | {_landed(r.get('landings') or {})} "
                         f"| {replay} | {kit} |")
    return "\n".join(lines) + "\n"


def _searched(nothing: dict[str, Any] | None) -> list[str]:
    """The column's sentence on the seeds that found nothing: what their faults landed in."""
    if not nothing or not nothing["seeds"]:
        return []
    by = ", ".join(f"{k} {n}" for k, n in nothing["by_fault"].items()) or "none"
    between = nothing.get("between_brokers", 0)
    brokers = (f" Of the faults, {between} were between brokers, and {nothing.get('between_brokers_in_transaction', 0)} "
               "of those landed inside an open transaction." if between else "")
    failed = nothing.get("failed", 0)
    failures = (f" {failed} fault{'s' if failed != 1 else ''} of their scenarios failed and did not run (the runs' "
                "reports say why): those seeds did not try all they drew." if failed else "")
    return [f"Nothing found in {nothing['seeds']} seeds. Their {nothing['faults']} faults landed "
            f"{nothing['in_transaction']} times inside an open transaction (median {_num(nothing['median_in_transaction'])} "
            f"a seed; {nothing['seeds_without_landing']} seeds landed none): {by}.{brokers}{failures}", ""]


def _landed(x: dict[str, Any]) -> str:
    failed = f"; {x['failed']} failed" if x.get("failed") else ""
    if not x.get("faults"):
        return f"-{failed}"
    inside = ", ".join(f"{k} {n}" for k, n in x.get("in_transaction", {}).items())
    return f"{x['faults']} ({x.get('landed', 0)}{': ' + inside if inside else ''}){failed}"


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:g}"
