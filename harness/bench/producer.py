"""``eos-chaos bench producer`` and ``bench txn-rate``: transactional producers side by side on one
healthy cluster, each measured over a steady-state window after an uncounted warm-up, the runs
interleaved (A B C A B C ...) so that drift of the machine spreads over all of them.

A producer is either a client library (``confluent-kafka``, ``java@VERSION``, ``franz-go@VERSION``,
``sarama@VERSION``: our txn-producer workload on that library, with everything that makes it a test
workload -- a history line per transaction flushed as written, every record's acknowledged offset),
``producer-performance`` (Kafka's own tool, transactional), or a Go client's own loop
(``franz-go-perf@VERSION``, ``sarama-perf@VERSION``: ``harness.bench.goperf``). Every one writes the
same records per transaction (ours and the Go loops fixed by ``values_per_txn`` / their flag;
ProducerPerformance sizes transactions by time only, so its duration is calibrated to hold that many
at its own pace), the same record size, to a fresh topic of the same partitions, acks=all with
idempotence. A bridged client beside its own loop gives the bridge's cost per record. The arithmetic
is ``harness.bench.window``.
"""

from __future__ import annotations

import logging
import math
import os
import random
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from clusters.backends import procs
from clusters.backends.artifacts import Artifacts
from clusters.backends.protocol import Cluster
from clusters.kafka.health import QUIET, admin_client
from clusters.kafka.kafka_release import fetch_kafka_tools
from harness.base.errors import ConfigError, HarnessError
from harness.base.wait import wait_until
from harness.bench import goperf
from harness.bench.window import (
    DEFAULT_LIBRARIES,
    PRODUCER_PERFORMANCE,
    TimedTxn,
    bridge_cost,
    commits_in_window,
    covered_s,
    fit_txn_cost,
    parse_periodic,
    periodic_window,
    spread_of,
    txn_log_status,
    workload_window,
)
from harness.history import store
from harness.history.model import INVOKE, OK, TXN, sends_of
from harness.history.recorder import ENV_T0, HISTORY_DIR
from harness.kafka.admin import create_topic
from harness.run.supervisor import Supervisor
from harness.workloads.clients import DEFAULT_LIBRARY, go_build, parse
from harness.workloads.clients.gobridge import GO_CLIENTS
from harness.workloads.common import WorkloadConfig
from harness.workloads.registry import TxnProducerSettings, check_library

log = logging.getLogger(__name__)

PARTITIONS = 6
#: ProducerPerformance prints a line this often (ms): 1 s gives the steady-state window a fine edge.
PP_INTERVAL_MS = 1000
#: Its ``--num-records``: more than any window needs; it is stopped once its lines cover the window.
PP_RECORDS = 10**11
#: Calibration runs at most (each a warm-up and a short window) before the measured ones.
PP_CALIBRATION_STEPS = 6
PP_CALIBRATION_S = 5.0
#: Reading the coordinator's log of one transactional.id: a few thousand entries.
READ_TIMEOUT_S = 60.0
#: A producer's process start, its init_transactions (a JVM for Java) and its first transaction.
START_TIMEOUT_S = 120.0
#: Our producer runs on this long past the window's end before it is stopped, so that its history
#: reaches past that end: a transaction completed just before the end is recorded (with its
#: 5000-record line written) a millisecond or two before the producer sees the stop, and would
#: otherwise be its last. Nothing after the end is counted.
RUN_ON_S = 1.0
#: The txn-baseline scenario's producer (harness/scenarios/txn-baseline.yaml, the scenario defaults'
#: two topics of 3 partitions), for ``bench txn-rate``.
BASELINE_VALUES_PER_TXN = 6
BASELINE_ABORT_SHARE = 0.1
BASELINE_TOPICS, BASELINE_PARTITIONS = 2, 3
#: Both sides' producer settings, beyond what each workload or tool sets itself: acks=all and
#: idempotence are what transactions imply; linger.ms 5 is librdkafka's and the Java client's default.
PP_PROPS = ("acks=all", "enable.idempotence=true", "linger.ms=5")


@dataclass(frozen=True)
class Shape:
    """What every producer of one benchmark writes, and how it is measured."""

    records_per_txn: int
    record_bytes: int
    warmup_s: float
    seconds: float
    abort_share: float = 0.0
    partitions: int = PARTITIONS  # per topic
    topics: int = 1

    def to_json(self) -> dict[str, Any]:
        return {"records_per_txn": self.records_per_txn, "record_bytes": self.record_bytes, "warmup_s": self.warmup_s,
                "seconds": self.seconds, "abort_share": self.abort_share, "topics": self.topics,
                "partitions": self.partitions,
                "acks": "all", "idempotence": True, "transactional": True}


def parse_producers(spec: str, *, flag: str = "--producers", allow_tool: bool = True) -> list[str]:
    """``a,b,c`` as producer names (libraries normalised: ``java`` -> ``java@4.4.0``, ``franz-go-perf``
    -> ``franz-go-perf@1.22.3``); ConfigError naming the flag, the item and what is allowed, for an
    unknown, duplicated or empty one. ``allow_tool``: the tools (``producer-performance``, the Go
    clients' perf modes) are producers too."""
    items = [x.strip() for x in spec.split(",")]
    libraries = f"{', '.join(DEFAULT_LIBRARIES)}, {', '.join(GO_CLIENTS)} (NAME@VERSION for another release)"
    allowed = f"{libraries}, {PRODUCER_PERFORMANCE}, {goperf.SPELLED}" if allow_tool else libraries
    if not spec.strip() or any(not x for x in items):
        raise ConfigError(f"{flag} {spec!r}: give a comma-separated list without empty items; allowed: {allowed}")
    found: list[str] = []
    for item in items:
        try:
            name = _producer_name(item, allow_tool)
        except ValueError as exc:
            raise ConfigError(f"{flag}: {exc}") from None
        if name in found:
            raise ConfigError(f"{flag} {spec!r}: {name} is named twice")
        found.append(name)
    return found


def _producer_name(item: str, allow_tool: bool) -> str:
    """One producer's name, normalised; ValueError saying what is wrong with it."""
    if allow_tool:
        if item == PRODUCER_PERFORMANCE:
            return item
        perf = goperf.parse_perf(item)
        if perf is not None:
            return perf
    elif goperf.is_perf(item) or item == PRODUCER_PERFORMANCE:
        raise ValueError(f"{item!r} is a tool, not a client library: only client libraries are allowed here")
    try:
        lib = parse(item)
        check_library("txn-producer", str(lib), {})
    except ValueError as exc:
        tools = f"; or {PRODUCER_PERFORMANCE} (Kafka's own tool), {goperf.SPELLED} (a Go client's own loop)"
        raise ValueError(f"{exc}{tools if allow_tool else ''}") from None
    return str(lib)


def libraries_to_prepare(producers: list[str]) -> list[str]:
    """The client libraries ``producers`` run on, to be made ready before a cluster starts: every
    library named, and a perf mode's (its bridge's binary is the perf mode); each once."""
    return list(dict.fromkeys(str(goperf.library_of(p)) if goperf.is_perf(p) else p
                              for p in producers if p != PRODUCER_PERFORMANCE))


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in name)


def _tagged_env(cluster: Cluster, t0_ns: int) -> dict[str, str]:
    """Our process tags (a crashed benchmark's producers are reclaimed like a run's) and the clock."""
    return {**os.environ, **procs.tags(cluster.cluster_id, os.getpid()), ENV_T0: str(t0_ns)}


def _fresh_topic(cluster: Cluster, prefix: str, partitions: int) -> str:
    topic = f"bench-{prefix}-{random.randbytes(3).hex()}"
    create_topic(admin_client(cluster.direct_bootstrap), topic, partitions)
    return topic


def _first_txn_ns(history: Path) -> int | None:
    """When the first transaction of a workload's history began (ns of the history's clock)."""
    try:
        with open(history, "rb") as fh:
            for line in fh:
                if b'"f":"txn"' in line and line.endswith(b"\n"):
                    op = orjson.loads(line)
                    if op.get("type") == INVOKE and op.get("f") == TXN:
                        return int(op["time"])
    except FileNotFoundError:
        return None
    return None


def history_txns(run_dir: Path) -> list[TimedTxn]:
    """The transactions of a workload's history (paired invoke and completion per process)."""
    ops, _ = store.read_ops(run_dir)
    open_: dict[str, Any] = {}
    txns: list[TimedTxn] = []
    for op in ops:
        if op.f != TXN:
            continue
        if op.type == INVOKE:
            open_[op.process] = op
            continue
        inv = open_.pop(op.process, None)
        if inv is None:
            continue
        sends = sends_of(inv, op)
        missing = sum(1 for s in sends if s.offset is None) if op.type == OK else 0
        txns.append(TimedTxn(inv.time, op.time, op.type, len(sends), missing))
    return txns


def workload_config(run_dir: Path, library: str, shape: Shape, bootstrap: str, topics: list[str],
                    extra: dict[str, Any] | None = None) -> WorkloadConfig:
    """Our txn-producer as ``bench producer`` runs it: on ``library``, exactly ``records_per_txn``
    records per transaction (``txn_ms`` 0: no adaptive sizing), values padded to the record size."""
    settings = TxnProducerSettings.model_validate({"values_per_txn": shape.records_per_txn, "txn_ms": 0,
                                                   "abort_share": shape.abort_share, "value_bytes": shape.record_bytes,
                                                   **(extra or {})})
    return WorkloadConfig(run_dir=str(run_dir), name="txn-producer-0", bootstrap=bootstrap, topics=topics,
                          partitions=shape.partitions, max_seconds=START_TIMEOUT_S + shape.warmup_s + shape.seconds + 600,
                          settings=settings.model_dump(exclude_defaults=True), library=library)


def run_workload(cluster: Cluster, run_dir: Path, library: str, shape: Shape,
                 extra: dict[str, Any] | None = None,
                 of_topics: Callable[[list[str]], dict[str, Any]] | None = None) -> dict[str, Any]:
    """Our txn-producer on ``library`` (with the settings ``extra``: an app's feeder's, and those
    ``of_topics`` makes of its fresh topics: an app feeder's ``feed``): started, left to run warm-up
    + window from its first transaction, stopped (it finishes the transaction in hand), measured
    from its history."""
    topics = [_fresh_topic(cluster, _slug(library), shape.partitions) for _ in range(shape.topics)]
    sup = Supervisor(run_dir, _tagged_env(cluster, time.monotonic_ns()))
    t0 = int(sup.env[ENV_T0])
    cfg = workload_config(run_dir, library, shape, cluster.bootstrap, topics,
                          {**(extra or {}), **(of_topics(topics) if of_topics is not None else {})})
    name = cfg.name
    history = run_dir / HISTORY_DIR / f"{name}.jsonl"
    log_file = run_dir / "workloads" / f"{name}.log"

    def died() -> str | None:
        code = sup.procs[name].poll()
        return None if code is None else f"the {library} producer exited with code {code}:\n{procs.tail(log_file)}"

    try:
        sup.start("txn-producer", cfg)
        first = wait_until(lambda: _first_txn_ns(history), timeout=START_TIMEOUT_S, fatal=died,
                           what=f"the {library} producer's first transaction", state=lambda: procs.tail(log_file, 5))
        end = t0 + first + int((shape.warmup_s + shape.seconds + RUN_ON_S) * 1e9)
        # the warm-up and the window themselves: a measured duration, not a wait on anything
        time.sleep(max(0.0, (end - time.monotonic_ns()) / 1e9))
        early = died()
    finally:
        sup.stop_all()
    txns = history_txns(run_dir)
    try:
        m = workload_window(txns, shape.warmup_s, shape.seconds)
    except ValueError as exc:
        raise HarnessError(f"{library}: {exc}" + (f"\n{early}" if early else "")) from None
    missing = sum(t.offsets_missing for t in txns)
    if missing:
        raise HarnessError(f"{library}: {missing} acknowledged records of committed transactions lack their offset "
                           f"in the history ({run_dir}): the workload must record every delivery")
    return {**m.to_json(), "topics": topics, "offsets_missing": missing}


@contextmanager
def _spawned(cmd: list[str], log_file: Path, env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    """A process of ours in its own group, SIGTERMed (then killed) on the way out, whatever happened."""
    p = procs.spawn(cmd, log_file, cwd=Path.cwd(), env=env)
    try:
        yield p
    finally:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if p.poll() is not None:
                break
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                break
            try:
                p.wait(timeout=procs.TERM_WAIT_S if sig == signal.SIGTERM else procs.KILL_WAIT_S)
            except subprocess.TimeoutExpired:
                continue


def pp_command(arts: Artifacts, tools: Path, bootstrap: str, topic: str, txn_id: str, shape: Shape, txn_ms: int) -> list[str]:
    """ProducerPerformance's command line: transactional, our record size, no throttle, a line a second."""
    return [str(arts.java), "-Xmx512m", "-Duser.language=en", "-Duser.country=US", "-cp", f"{tools}/*",
            "org.apache.kafka.tools.ProducerPerformance", "--bootstrap-server", bootstrap, "--topic", topic,
            "--num-records", str(PP_RECORDS), "--record-size", str(shape.record_bytes), "--throughput", "-1",
            "--transactional-id", txn_id, "--transaction-duration-ms", str(txn_ms),
            "--reporting-interval", str(PP_INTERVAL_MS), "--command-property", *PP_PROPS]


def read_txn_log(cluster: Cluster, txn_id: str) -> list[tuple[int, int]]:
    """``(status, timestamp ms)`` of every ``__transaction_state`` entry of ``txn_id``, read over
    DIRECT from the partition the coordinator keeps it in, up to that partition's end."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    from chaos.targets import TXN_STATE_TOPIC
    from harness.kafka.placement import coordinator_partition

    admin = admin_client(cluster.direct_bootstrap)
    parts = len(admin.list_topics(topic=TXN_STATE_TOPIC, timeout=10).topics[TXN_STATE_TOPIC].partitions)
    tp = TopicPartition(TXN_STATE_TOPIC, coordinator_partition(txn_id, parts), OFFSET_BEGINNING)
    c = Consumer({"bootstrap.servers": cluster.direct_bootstrap, "group.id": f"eos-chaos-bench-{txn_id}",
                  "enable.auto.commit": False, "logger": QUIET})
    found: list[tuple[int, int]] = []
    try:
        end = c.get_watermark_offsets(tp, timeout=10)[1]
        c.assign([tp])
        pos = [0]

        def read_to_end() -> bool:
            for m in c.consume(1000, 1.0):
                if m.error() is None:
                    pos[0] = max(pos[0], (m.offset() or 0) + 1)
                    st = txn_log_status(m.key(), m.value(), txn_id)
                    if st is not None:
                        found.append((st, m.timestamp()[1]))
            return pos[0] >= end

        wait_until(read_to_end, timeout=READ_TIMEOUT_S, interval=0.0, max_interval=0.0,
                   what=f"{TXN_STATE_TOPIC}-{tp.partition} read to its end ({end})", state=lambda: f"at offset {pos[0]}")
    finally:
        c.close()
    return found


def run_producer_performance(arts: Artifacts, cluster: Cluster, run_dir: Path, shape: Shape, txn_ms: int) -> dict[str, Any]:
    """ProducerPerformance until its periodic lines cover warm-up + window, then stopped; records/s
    from those lines (``bench_window.periodic_window``), its transactions from the coordinator's log."""
    tools = fetch_kafka_tools()

    def command(topic: str, txn_id: str) -> list[str]:
        return pp_command(arts, tools, cluster.bootstrap, topic, txn_id, shape, txn_ms)

    got = run_periodic(cluster, run_dir, PRODUCER_PERFORMANCE, "ProducerPerformance", "pp", command, shape)
    return {**got, "transaction_duration_ms": txn_ms}


def run_go_perf(cluster: Cluster, run_dir: Path, perf: str, shape: Shape) -> dict[str, Any]:
    """A Go client's own loop (``franz-go-perf@VERSION``: its bridge binary's perf mode), measured
    as ProducerPerformance is: its periodic lines, its transactions from the coordinator's log."""
    lib = goperf.library_of(perf)
    assert lib.version is not None  # a perf name always carries its version (parse_producers)
    binary = go_build.ensure(GO_CLIENTS[lib.name], lib.version)
    # its own bound, should the bench not stop it; the bench stops it once its lines cover the window
    bound_s = START_TIMEOUT_S + shape.warmup_s + shape.seconds + RUN_ON_S

    def command(topic: str, txn_id: str) -> list[str]:
        return goperf.perf_command(binary, perf, cluster.bootstrap, topic, shape.partitions, txn_id,
                                   shape.records_per_txn, shape.record_bytes, bound_s, PP_INTERVAL_MS)

    return run_periodic(cluster, run_dir, perf, f"{lib.name}'s perf mode", _slug(perf), command, shape)


def run_periodic(cluster: Cluster, run_dir: Path, name: str, who: str, prefix: str,
                 command: Callable[[str, str], list[str]], shape: Shape) -> dict[str, Any]:
    """A tool that prints ProducerPerformance's periodic lines (``command(topic, transactional.id)``),
    on a fresh topic, until its lines cover warm-up + window, then stopped; records/s from those
    lines (``bench_window.periodic_window``), its transactions from the coordinator's log. ``who``
    names it in the waits' errors, ``name`` (the producer) in the measurement's."""
    topic = _fresh_topic(cluster, prefix, shape.partitions)
    txn_id = f"bench-{prefix}-{topic}"
    run_dir.mkdir(parents=True, exist_ok=True)
    out = run_dir / f"{_slug(name)}.log"
    end = shape.warmup_s + shape.seconds
    with _spawned(command(topic, txn_id), out, _tagged_env(cluster, time.monotonic_ns())) as p:

        def lines_cover() -> bool:
            return covered_s(parse_periodic(out.read_text(errors="replace"))) >= end

        def died() -> str | None:
            code = p.poll()
            return None if code is None else f"{who} exited with code {code}:\n{procs.tail(out)}"

        wait_until(lines_cover, timeout=START_TIMEOUT_S + end, interval=0.5, fatal=died,
                   what=f"{who}'s periodic lines to cover {end:g}s",
                   state=lambda: f"{covered_s(parse_periodic(out.read_text(errors='replace'))):.1f}s covered; "
                                 f"last lines:\n{procs.tail(out, 5)}")
    try:
        m = periodic_window(parse_periodic(out.read_text(errors="replace")), shape.warmup_s, shape.seconds,
                            PP_INTERVAL_MS / 1000, who)
        commits = commits_in_window(read_txn_log(cluster, txn_id), shape.warmup_s, shape.seconds, who)
    except ValueError as exc:
        raise HarnessError(f"{name}: {exc} ({out})") from None
    txns_per_s = commits / shape.seconds
    return {**m.to_json(), "txns": commits, "txns_per_s": round(txns_per_s, 2),
            "records_per_txn": round(m.records_per_s / txns_per_s, 1) if commits else None, "topic": topic}


def calibrate_producer_performance(arts: Artifacts, cluster: Cluster, run_dir: Path, shape: Shape) -> dict[str, Any]:
    """Short, uncounted ProducerPerformance runs at transaction durations of 1, 2, 4, ... ms until
    its transactions hold ``records_per_txn`` records or more: the duration whose size came closest
    is the one the measured runs use, and every step is a point of its ``TxnCost`` line."""
    short = Shape(shape.records_per_txn, shape.record_bytes, shape.warmup_s, PP_CALIBRATION_S, partitions=shape.partitions)
    steps: list[dict[str, Any]] = []
    txn_ms = 1
    for i in range(PP_CALIBRATION_STEPS):
        got = run_producer_performance(arts, cluster, run_dir / f"step{i + 1}", short, txn_ms)
        steps.append({"txn_ms": txn_ms, "records_per_txn": got["records_per_txn"], "records_per_s": got["records_per_s"]})
        log.info(f"ProducerPerformance calibration {i + 1}: {steps[-1]}")
        if (got["records_per_txn"] or 0) >= shape.records_per_txn:
            break
        txn_ms *= 2
    sized = [s for s in steps if s["records_per_txn"]]
    if not sized:
        raise HarnessError(f"{PRODUCER_PERFORMANCE} committed no transaction while calibrating ({run_dir})")
    best = min(sized, key=lambda s: abs(math.log(s["records_per_txn"] / shape.records_per_txn)))
    return {"steps": steps, "txn_ms": best["txn_ms"]}


def bench_producers(arts: Artifacts, cluster: Cluster, run_dir: Path, producers: list[str], shape: Shape,
                    runs: int) -> dict[str, Any]:
    """Each producer ``runs`` times, interleaved; per producer the runs, their spread and its ratio
    to ProducerPerformance's median (when it was among them); per bridged client run beside its own
    loop, the bridge's cost (``bridge_costs``)."""
    samples: dict[str, list[dict[str, Any]]] = {p: [] for p in producers}
    result: dict[str, Any] = {"shape": shape.to_json(), "order": []}
    cal: dict[str, Any] = {}
    if PRODUCER_PERFORMANCE in producers:
        cal = calibrate_producer_performance(arts, cluster, run_dir / "pp-calibration", shape)
    for i in range(runs):
        for p in producers:
            d = run_dir / f"run{i + 1}" / _slug(p)
            if p == PRODUCER_PERFORMANCE:
                got = run_producer_performance(arts, cluster, d, shape, cal["txn_ms"])
            elif goperf.is_perf(p):
                got = run_go_perf(cluster, d, p, shape)
            else:
                got = run_workload(cluster, d, p, shape)
            samples[p].append(got)
            result["order"].append(p)
            log.info(f"run {i + 1}/{runs}, {p}: {got['records_per_s']} records/s, {got['records_per_txn']} records/txn")
    if cal:
        result["producer_performance"] = {**at_wanted_size(samples[PRODUCER_PERFORMANCE], cal["steps"], shape.records_per_txn),
                                          "calibration": cal, "props": list(PP_PROPS), "reporting_interval_ms": PP_INTERVAL_MS}
    perfs = [p for p in producers if goperf.is_perf(p)]
    if perfs:
        # what a perf run's client was opened with, its bootstrap and transactional.id aside
        result["go_perf"] = {p: {"settings": {k: v for k, v in goperf.perf_config(p, "", "").items()
                                              if k not in ("bootstrap.servers", "transactional.id")},
                                 "reporting_interval_ms": PP_INTERVAL_MS} for p in perfs}
    result["producers"] = summarise(samples, "records_per_s", PRODUCER_PERFORMANCE)
    result["bridge_cost"] = bridge_costs(result["producers"])
    return result


def bridge_costs(producers: dict[str, Any]) -> dict[str, Any]:
    """Per bridged client whose own loop ran beside it (``goperf.native_of``: ``franz-go@V`` and
    ``franz-go-perf@V``; ``java@V`` and ``producer-performance``): its median records/s against
    that loop's, as a ratio and as the time per record it adds (µs)."""
    costs: dict[str, Any] = {}
    for name, s in producers.items():
        native = goperf.native_of(name)
        if native is None or native not in producers:
            continue
        cost = bridge_cost(s["records_per_s"]["median"], producers[native]["records_per_s"]["median"])
        if cost is not None:
            costs[name] = {"native": native, **cost.to_json()}
    return costs


def at_wanted_size(runs: list[dict[str, Any]], steps: list[dict[str, Any]], wanted: int) -> dict[str, Any]:
    """Move each ProducerPerformance run to ``wanted`` records per transaction along the
    ``TxnCost`` line fitted to every run and calibration step (in place: ``records_per_s`` becomes
    the moved figure, ``records_per_s_measured`` keeps the measured one). No move without a line
    (fewer than two sizes)."""
    points = [(r["records_per_txn"], r["records_per_s"]) for r in [*steps, *runs] if r["records_per_txn"]]
    cost = fit_txn_cost(points)
    for r in runs:
        r["records_per_s_measured"] = r["records_per_s"]
        if cost is not None and r["records_per_txn"]:
            r["records_per_s"] = round(cost.rate_at(r["records_per_txn"], r["records_per_s"], wanted), 1)
    if cost is None:
        return {"txn_cost": None, "moved_to_records_per_txn": None}
    return {"txn_cost": {"fixed_ms": round(cost.fixed_ms, 2), "per_record_ms": round(cost.per_record_ms, 5)},
            "moved_to_records_per_txn": wanted}


def summarise(samples: dict[str, list[dict[str, Any]]], key: str, reference: str | None) -> dict[str, Any]:
    """Per series: its runs, the spread of ``key`` over them, and its median / the reference's."""
    out: dict[str, Any] = {}
    ref = spread_of([s[key] for s in samples[reference]]).median if reference in samples else None
    for name, runs in samples.items():
        sp = spread_of([s[key] for s in runs])
        out[name] = {"runs": runs, key: sp.to_json(2 if key == "txns_per_s" else 1),
                     "ratio": round(sp.median / ref, 3) if ref else None}
    return out


def bench_txn_rate(cluster: Cluster, run_dir: Path, libraries: list[str], warmup_s: float, seconds: float,
                   runs: int) -> dict[str, Any]:
    """Committed transactions per second of one txn-producer per library, in txn-baseline's shape
    (6 values per transaction, a tenth aborted on purpose), runs interleaved."""
    shape = Shape(BASELINE_VALUES_PER_TXN, 0, warmup_s, seconds, abort_share=BASELINE_ABORT_SHARE,
                  partitions=BASELINE_PARTITIONS, topics=BASELINE_TOPICS)
    samples: dict[str, list[dict[str, Any]]] = {lib: [] for lib in libraries}
    for i in range(runs):
        for lib in libraries:
            got = run_workload(cluster, run_dir / f"run{i + 1}" / _slug(lib), lib, shape)
            samples[lib].append(got)
            log.info(f"run {i + 1}/{runs}, {lib}: {got['txns_per_s']} committed txns/s")
    ref = DEFAULT_LIBRARY if DEFAULT_LIBRARY in libraries else None
    return {"shape": {**shape.to_json(), "record_bytes": None, "scenario": "txn-baseline (one producer)"},
            "libraries": summarise(samples, "txns_per_s", ref)}

