"""``eos-chaos bench app``: what the harness gives and costs an app under test (docs/APPS.md), on one
healthy cluster.

- **The feeder**: the app's feeder alone (a txn-producer in the feeder's shape: 16 keys, 10 values
  per transaction, a fifth aborted, no rate limit) over a steady-state window: committed input values
  per second, the most a scenario's ``feeder.rate`` can ask for.
- **The shaped feeder** (issue 39: input the user shapes): the same feeder calling a generator of
  the user's for each record (``--generator``; the word count's ``lines`` by default), run in turn
  with the plain one (plain, shaped, plain, ...) so drift of the machine spreads over both: its
  committed values per second, and what the generator costs it against the plain feeder.
- **The harness's overhead**: ``records`` keyed records written to an input topic first, then the
  shipped Python copier (harness/apps/py_copier.py) copies them all, once started directly (the app
  alone) and once as the runner runs it (the app's wrapper, and the reader of its output polling
  beside it): seconds from the start until its consumer group has committed every input. The two
  are interleaved (alone, harnessed, alone, ...) on the same input, each with its own group and
  output, so drift of the machine spreads over both.
"""

from __future__ import annotations

import logging
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import Producer, TopicPartition

from clusters.backends import procs
from clusters.backends.protocol import Cluster
from clusters.kafka.health import QUIET
from harness.base.errors import ConfigError, HarnessError
from harness.base.wait import wait_until
from harness.bench.producer import Shape, _fresh_topic, _spawned, _tagged_env, run_workload
from harness.history.model import APP_READER
from harness.phases.app_drain import DrainProbe
from harness.run.supervisor import Supervisor
from harness.workloads.clients import DEFAULT_LIBRARY
from harness.workloads.common import WorkloadConfig
from harness.workloads.feed import FeedError, preflight
from harness.workloads.registry import AppFeeder, Feed, FeedSource

log = logging.getLogger(__name__)

PARTITIONS = 3
#: Copying the input from start to end: the app's start, its group's join, the copy; generous.
COPY_TIMEOUT_S = 600.0
#: Records per transaction when the input is written beforehand.
PREFILL_BATCH = 1000


def feeder_shape(warmup_s: float, seconds: float) -> tuple[Shape, dict[str, Any]]:
    """The feeder's shape as ``bench producer`` measures a txn-producer, and its feeder settings."""
    f = AppFeeder.model_validate({})
    shape = Shape(f.values_per_txn, 0, warmup_s, seconds, abort_share=f.abort_share, partitions=PARTITIONS)
    return shape, {"keys": f.keys, "rate": 0}


def shaped_feed(generator: str) -> Feed:
    """The feeder's ``feed`` with ``generator`` (``module:function``, imported from here) on its input;
    ``ConfigError`` naming it when it cannot be imported or gives no record for a sample."""
    feed = Feed(inputs={"in": FeedSource(generator=generator)}, path=str(Path.cwd()))
    try:
        preflight(feed, {}, 0)
    except FeedError as exc:
        raise ConfigError(f"--generator {generator}: {exc}") from None
    return feed


def _on(feed: Feed) -> Callable[[list[str]], dict[str, Any]]:
    """``feed`` on the first of a run's fresh topics (``run_workload``'s ``of_topics``)."""
    return lambda topics: {"feed": Feed(inputs={topics[0]: feed.inputs["in"]}, path=feed.path).model_dump()}


def prefill(cluster: Cluster, records: int) -> str:
    """A fresh input topic holding ``records`` keyed records, committed."""
    topic = _fresh_topic(cluster, "app-in", PARTITIONS)
    p = Producer({"bootstrap.servers": cluster.direct_bootstrap, "transactional.id": f"{topic}-prefill", "linger.ms": 20,
                  "logger": QUIET})
    p.init_transactions(60)
    for start in range(0, records, PREFILL_BATCH):
        p.begin_transaction()
        for i in range(start, min(records, start + PREFILL_BATCH)):
            p.produce(topic, key=f"k{i % 16}".encode(), value=str(i).encode())
        p.commit_transaction(120)
    p.flush(60)  # nothing left in flight when the producer goes (one run of the bench died in librdkafka's teardown)
    return topic


def _command(cluster: Cluster, topic: str, out: str, group: str) -> list[str]:
    return [sys.executable, "-m", "harness.apps.py_copier", "--bootstrap", cluster.bootstrap, "--input", topic,
            "--output", out, "--group", group, "--txn-id", f"{group}-0"]


def _await_copied(cluster: Cluster, group: str, topic: str, alive: Any, what: str) -> None:
    inputs = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    with DrainProbe(cluster.direct_bootstrap) as probe:
        def done() -> bool:
            lag = probe.group_lag(group, inputs)
            return lag is not None and not any(lag.values())

        wait_until(done, timeout=COPY_TIMEOUT_S, what=f"{what} to copy every input record (group {group})",
                   state=lambda: f"lag {probe.group_lag(group, inputs)}", fatal=alive, interval=0.2, max_interval=0.5)


def copy_alone(cluster: Cluster, run_dir: Path, topic: str) -> float:
    """Seconds the copier, started directly, takes to copy ``topic``."""
    out, group = _fresh_topic(cluster, "app-out", PARTITIONS), f"bench-alone-{run_dir.name}"
    log_file = run_dir / "alone.log"
    run_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    with _spawned(_command(cluster, topic, out, group), log_file, _tagged_env(cluster, time.monotonic_ns())) as p:
        _await_copied(cluster, group, topic, lambda: None if p.poll() is None else f"it exited: {procs.tail(log_file)}",
                      "the copier alone")
        return time.monotonic() - t0


def copy_harnessed(cluster: Cluster, run_dir: Path, topic: str) -> float:
    """Seconds the copier, run as the runner runs an app (wrapper, output reader), takes to copy ``topic``."""
    out = _fresh_topic(cluster, "app-out", PARTITIONS)
    group = f"bench-harnessed-{run_dir.name}"
    settings: dict[str, Any] = {"command": _command(cluster, topic, out, group), "inputs": [topic], "outputs": [out], "id": group,
                "ready": {"log": "copying from"}, "contract": {"kind": "map"}}

    def config(name: str, settings: dict[str, Any]) -> WorkloadConfig:
        return WorkloadConfig(run_dir=str(run_dir), name=name, bootstrap=cluster.bootstrap, topics=[topic, out],
                              partitions=PARTITIONS, max_seconds=COPY_TIMEOUT_S + 60, settings=settings,
                              topic_names={topic: topic, out: out})

    sup = Supervisor(run_dir, _tagged_env(cluster, time.monotonic_ns()))
    t0 = time.monotonic()
    try:
        sup.start("app", config("app-0", settings))
        sup.start(APP_READER, config(APP_READER, {"app": "app", "outputs": [out]}))
        _await_copied(cluster, group, topic, lambda: None if sup.alive("app-0") else f"its wrapper exited: {sup.log_of('app-0')}",
                      "the copier under the harness")
        return time.monotonic() - t0
    finally:
        sup.stop_all()


def bench_feeders(cluster: Cluster, run_dir: Path, runs: int, warmup_s: float, seconds: float,
                  shaped: Feed) -> dict[str, Any]:
    """The plain feeder's and the shaped one's committed values/s, ``runs`` of each in turn."""
    shape, feeder_settings = feeder_shape(warmup_s, seconds)
    plain: list[float] = []
    made: list[float] = []
    for i in range(runs):
        plain.append(run_workload(cluster, run_dir / f"feeder{i + 1}", DEFAULT_LIBRARY, shape, feeder_settings)["records_per_s"])
        made.append(run_workload(cluster, run_dir / f"shaped{i + 1}", DEFAULT_LIBRARY, shape, feeder_settings,
                                 _on(shaped))["records_per_s"])
        log.info(f"feeder run {i + 1}/{runs}: {plain[-1]} committed values/s plain, {made[-1]} shaped")
    p, m = statistics.median(plain), statistics.median(made)
    generator = shaped.inputs["in"].generator
    return {"shape": {**shape.to_json(), **feeder_settings}, "values_per_s": plain, "median_values_per_s": p,
            "shaped": {"generator": generator, "values_per_s": made, "median_values_per_s": m,
                       "extra_pct": round(100 * (p - m) / p, 1) if p > 0 else None}}


def bench_app(cluster: Cluster, run_dir: Path, records: int, runs: int, warmup_s: float, seconds: float,
              shaped: Feed) -> dict[str, Any]:
    """The feeders' figures (``bench_feeders``) and the copier's time alone and under the harness,
    ``runs`` of each, interleaved."""
    feeder = bench_feeders(cluster, run_dir, runs, warmup_s, seconds, shaped)
    alone: list[float] = []
    harnessed: list[float] = []
    for i in range(runs):
        topic = prefill(cluster, records)
        alone.append(round(copy_alone(cluster, run_dir / f"alone{i + 1}", topic), 2))
        harnessed.append(round(copy_harnessed(cluster, run_dir / f"harnessed{i + 1}", topic), 2))
        log.info(f"run {i + 1}/{runs}: {records} records copied in {alone[-1]} s alone, {harnessed[-1]} s under the harness")
    a, h = statistics.median(alone), statistics.median(harnessed)
    if a <= 0:
        raise HarnessError("the copier alone took no time: nothing was measured")
    return {"feeder": feeder,
            "copy": {"records": records, "alone_s": alone, "harnessed_s": harnessed, "median_alone_s": a,
                     "median_harnessed_s": h, "overhead_pct": round(100 * (h - a) / a, 1),
                     "alone_records_per_s": round(records / a), "harnessed_records_per_s": round(records / h)}}
