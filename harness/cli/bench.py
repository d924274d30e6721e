"""``eos-chaos bench ...``: repeated measurements and their medians, with the machine they ran on."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from clusters import artifacts, backends, pins
from clusters.backends import Backend
from harness.cli.console import out
from harness.cli.guard import guarded
from harness.cli.options import (
    BackendOpt,
    BenchRuns,
    Engine,
    EngineOpt,
    JsonOut,
    KafkaVersion,
    PortBase,
    finite_option,
    kafka_artifacts,
)
from harness.errors import HarnessError
from harness.runfolder import new_run_dir, write_json

if TYPE_CHECKING:
    from clusters.base import Cluster
    from harness.bench import Series

log = logging.getLogger(__name__)
app = typer.Typer(no_args_is_help=True, help="Benchmarks: repeated runs, medians, the machine.")


def _print_series(header: str, series: Iterable[Series]) -> None:
    """The machine line, then one line per measured series (median, spread)."""
    out.print(header, highlight=False)
    for one in series:
        out.print(one.line(), highlight=False)


@app.command("cluster")
@guarded
def bench_cluster(
    runs: int = typer.Option(3, "--runs", min=1, max=50),
    load: float = finite_option(30.0, "--load", 0, help="Seconds of smoke load before the second RSS sample (0: none)."),
    backend: Backend = BackendOpt,
    kafka_version: str = KafkaVersion,
    port_base: int | None = PortBase,
) -> None:
    """Time from `cluster up` to healthy and the brokers' resident memory (median of --runs)."""
    from harness.bench import bench_cluster_up, machine

    arts = kafka_artifacts(kafka_version)
    _print_series(f"machine: {machine()}; Kafka {kafka_version}; {backend.value} backend",
                  bench_cluster_up(backend, arts, runs, load, port_base))


@app.command("setup")
@guarded
def bench_setup_cmd(
    runs: int = typer.Option(3, "--runs", min=1, max=20),
    cold: bool = typer.Option(False, "--cold", help="Each run in a fresh, empty cache (downloads everything)."),
) -> None:
    """Time `eos-chaos setup` with a warm or an empty cache (median of --runs)."""
    from harness.bench import bench_setup, machine

    _print_series(f"machine: {machine()}", [bench_setup(runs, cold)])


@app.command("images")
@guarded
def bench_images_cmd(runs: int = typer.Option(3, "--runs", min=1, max=10), kafka_version: str = KafkaVersion) -> None:
    """Time building the local images from an empty image cache, and starting the engine (median of --runs)."""
    from harness.bench import bench_engine_start, bench_images, machine

    arts = artifacts.ensure(kafka_version)
    _print_series(f"machine: {machine()}", [bench_images(arts, runs), bench_engine_start(runs)])


@app.command("checker")
@guarded
def bench_checker_cmd(
    values: int = typer.Option(2_000_000, "--values", min=1000, help="Values in the synthetic history."),
    runs: int = typer.Option(3, "--runs", min=1, max=10),
    engine: Engine = EngineOpt,
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Load and check a valid synthetic history of N values (median of --runs, each in its own process)."""
    import subprocess
    import sys

    from harness.bench import machine
    from harness.bench_checker import median_of

    samples = []
    for i in range(runs):
        proc = subprocess.run([sys.executable, "-m", "harness.bench_checker", str(values), engine.value], capture_output=True, check=False,
                              text=True, stdin=subprocess.DEVNULL)
        if proc.returncode != 0:
            raise HarnessError(f"checker benchmark run {i + 1} failed:\n{proc.stderr[-2000:]}")
        samples.append(json.loads(proc.stdout))
        log.info(f"run {i + 1}/{runs}: {samples[-1]}")
    result = {**median_of(samples), "machine": machine()}
    if as_json:
        print(json.dumps(result, indent=2))
        return
    out.print(f"machine: {result['machine']}", highlight=False)
    read = "Spark session start" if engine is Engine.spark else "read"
    out.print(f"{engine.value} engine, {result['values']} values, median of {runs}: {read} {result['read_s']}s, "
              f"check {result['check_s']}s "
              f"({result['values_per_s']:.0f} values/s, {result['check_over_read']}x read), "
              f"peak RSS {result['peak_rss_mb']} MiB", highlight=False)


def _bench_on_one_cluster(name: str, runs: int, backend: Backend, port_base: int | None,
                          one_run: Callable[[Cluster, Path], dict[str, Any]],
                          summary: Callable[[list[dict[str, Any]]], dict[str, Any]], as_json: bool) -> dict[str, Any] | None:
    """``runs`` samples of ``one_run`` on one healthy cluster, saved as ``<run folder>/<name>.json``
    with their medians (``summary``) and the machine; printed as JSON with ``as_json`` (then None)."""
    from harness.bench import machine

    arts = artifacts.ensure(pins.KAFKA_VERSION)
    run_dir = new_run_dir(name)
    samples = []
    with backends.new_cluster(backend, arts, run_dir, port_base) as cluster:
        for i in range(runs):
            samples.append(one_run(cluster, run_dir / f"run{i + 1}"))
            log.info(f"run {i + 1}/{runs}: {json.dumps(samples[-1], default=str)[:300]}")
    result = {**summary(samples), "backend": backend.value, "runs": samples, "machine": machine()}
    write_json(run_dir / f"{name}.json", result)
    if as_json:
        print(json.dumps(result, indent=2))
        return None
    out.print(f"machine: {result['machine']}", highlight=False)
    return result


@app.command("producer")
@guarded
def bench_producer_cmd(
    seconds: float = finite_option(30.0, "--seconds", 5, help="How long our txn-producer runs."),
    record_bytes: int = typer.Option(100, "--record-size", min=16, max=100_000),
    txn_ms: int = typer.Option(100, "--txn-ms", min=10, max=60_000, help="Transaction length (both producers)."),
    runs: int = BenchRuns, backend: Backend = BackendOpt, port_base: int | None = PortBase, as_json: bool = JsonOut,
) -> None:
    """Our txn-producer vs Kafka's ProducerPerformance on one healthy cluster (median of --runs)."""
    import statistics

    from harness.bench_producer import bench

    def summary(samples: list[dict[str, Any]]) -> dict[str, Any]:
        return {"ours_records_per_s": statistics.median(s["ours"]["records_per_s"] for s in samples),
                "kafka_records_per_s": statistics.median(s["kafka_producer_performance"]["records_per_s"] for s in samples),
                "ratio": statistics.median(s["ratio"] for s in samples), "record_bytes": record_bytes, "txn_ms": txn_ms}

    arts = artifacts.ensure(pins.KAFKA_VERSION)
    result = _bench_on_one_cluster("bench-producer", runs, backend, port_base,
                                   lambda c, d: bench(arts, c, d, seconds, record_bytes, txn_ms), summary, as_json)
    if result is not None:
        out.print(f"median of {runs}: ours {result['ours_records_per_s']} records/s, ProducerPerformance "
                  f"{result['kafka_records_per_s']} records/s, ratio {result['ratio']}", highlight=False)


@app.command("spark")
@guarded
def bench_spark_cmd(
    seconds: float = finite_option(90.0, "--seconds", 45, help="How long each run's job runs."),
    rate: int = typer.Option(1000, "--rate", min=10, max=100_000, help="Input records per second."),
    runs: int = BenchRuns, backend: Backend = BackendOpt, port_base: int | None = PortBase, as_json: bool = JsonOut,
) -> None:
    """The Spark EOS job at a steady input rate: micro-batch time, and restart-to-first-batch after a driver kill."""
    from harness.bench import Series
    from harness.bench_spark import bench, median_of

    artifacts.ensure_spark()
    result = _bench_on_one_cluster("bench-spark", runs, backend, port_base,
                                   lambda c, d: bench(c, d, seconds, rate),
                                   lambda samples: {**median_of(samples), "rate": rate, "seconds": seconds}, as_json)
    if result is None:
        return
    for name, key, unit in (("micro-batch time (Spark trigger), p50", "trigger_ms_p50", "ms"),
                            ("micro-batch time (Spark trigger), p95", "trigger_ms_p95", "ms"),
                            ("restart to first batch after a driver kill", "restart_to_first_batch_s", "s")):
        out.print(Series(name, unit, [s[key] for s in result["runs"] if s[key] is not None]).line(), highlight=False)


@app.command("wire")
@guarded
def bench_wire_cmd(
    count: int = typer.Option(2000, "--round-trips", min=100, max=1_000_000, help="Round trips per side and run."),
    runs: int = BenchRuns, backend: Backend = BackendOpt, port_base: int | None = PortBase, as_json: bool = JsonOut,
) -> None:
    """The wire proxy's added latency: ApiVersions round trips through a client link with and without it (median of --runs)."""
    import statistics

    from harness.bench import Series
    from harness.bench_wire import bench

    keys = ("with_p50_us", "without_p50_us", "added_p50_us", "with_p99_us", "without_p99_us", "added_p99_us")
    counter = iter(range(runs))
    result = _bench_on_one_cluster("bench-wire", runs, backend, port_base, lambda c, d: bench(c, count, next(counter)),
                                   lambda samples: {k: statistics.median(s[k] for s in samples) for k in keys}, as_json)
    if result is None:
        return
    for key in keys:
        out.print(Series(f"ApiVersions round trip, {key.replace('_us', '').replace('_', ' ')}", "us",
                         [s[key] for s in result["runs"]]).line(), highlight=False)
