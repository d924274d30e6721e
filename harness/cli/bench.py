"""``eos-chaos bench ...``: repeated measurements and their medians, with the machine they ran on."""

from __future__ import annotations

import enum
import json
import logging
import statistics
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from clusters.backends import artifacts, backends
from clusters.backends.backends import Backend
from clusters.builds import pins
from clusters.spark import spark_jars
from harness.apps.generators import LINES
from harness.base.errors import ConfigError
from harness.base.flags import comma_list
from harness.bench.throughput import DEFAULT_SCENARIOS, PER_PROCESS
from harness.bench.window import DEFAULT_LIBRARIES, DEFAULT_PRODUCERS, PRODUCER_PERFORMANCE
from harness.cli.console import out, print_json
from harness.cli.guard import guarded
from harness.cli.options import (
    BackendOpt,
    BenchRuns,
    Engine,
    EngineOpt,
    JsonOut,
    KafkaVersion,
    PortBase,
    Sink,
    SinkOpt,
    SparkMode,
    SparkModeOpt,
    duration_option,
    finite_option,
    kafka_artifacts,
)
from harness.rundir.runfolder import new_run_dir, write_json
from harness.workloads.clients import DEFAULT_LIBRARY
from harness.workloads.registry import MAX_PRODUCERS, MAX_VALUES_PER_TXN

if TYPE_CHECKING:
    from rich.table import Table

    from clusters.backends.protocol import Cluster
    from harness.bench.infra import Series

log = logging.getLogger(__name__)
app = typer.Typer(no_args_is_help=True, help="Benchmarks: repeated runs, medians, the machine.")

class AppHistory(str, enum.Enum):
    """``bench checker --app``'s histories (``harness.bench.app_history.APP_KINDS``)."""

    map = "map"
    map_function = "map-function"
    aggregate = "aggregate"
    aggregate_by = "aggregate-by"
    model = "model"
    windowed = "windowed"
    stream_table_join = "join"  # not `join`: that is str.join


#: ``bench checker --app --values`` at most: the app history is built whole in memory, as
#: ``harness.bench.checker.IN_MEMORY_VALUES`` histories are (not imported here: numpy and pandas).
MAX_APP_VALUES = 20_000_000
AppOpt = typer.Option(
    None, "--app", help="The history of an app under test instead, fed --values input values (1000 keys, 3 "
    "partitions, a fifth of the transactions aborted) and judged by its contract check: map (identity), map-function (a "
    "module:function contract, two outputs per input) or aggregate (running count and sum per key). "
    f"Default engine only; at most {MAX_APP_VALUES // 1_000_000}M values (built in memory).")
#: ``bench checker --values`` at most: the largest history measured (docs/history/BENCHMARKS.md: 211 s to
#: write, 7.5 GB of Parquet in the temporary folder); 10^12 would fill the disk for hours.
MAX_CHECKER_VALUES = 100_000_000


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
    from harness.bench.infra import bench_cluster_up, machine

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
    from harness.bench.infra import bench_setup, machine

    _print_series(f"machine: {machine()}", [bench_setup(runs, cold)])


@app.command("app-build")
@guarded
def bench_app_build_cmd(
    runs: int = typer.Option(3, "--runs", min=1, max=10),
    apps: str = typer.Option("streams-count-sum,kafka-copier,flink-job", "--apps",
                             help="Shipped apps, comma-separated (eos-chaos apps lists them); the four Streams apps share one build."),
) -> None:
    """Time each shipped app's first build from an empty cache: Maven's fetch and javac (median of --runs)."""
    from harness.apps import SHIPPED
    from harness.bench.infra import bench_app_build, machine

    names = comma_list("--apps", apps)
    unknown = [n for n in names if n not in SHIPPED]
    if unknown:
        raise ConfigError(f"--apps {','.join(unknown)}: no such shipped app; allowed: {', '.join(SHIPPED)}")
    _print_series(f"machine: {machine()}", bench_app_build(names, runs))


@app.command("images")
@guarded
def bench_images_cmd(runs: int = typer.Option(3, "--runs", min=1, max=10), kafka_version: str = KafkaVersion) -> None:
    """Time building the local images from an empty image cache, and starting the engine (median of --runs)."""
    from harness.bench.infra import bench_engine_start, bench_images, machine

    arts = artifacts.ensure(kafka_version)
    _print_series(f"machine: {machine()}", [bench_images(arts, runs), bench_engine_start(runs)])


@app.command("checker")
@guarded
def bench_checker_cmd(
    values: int = typer.Option(2_000_000, "--values", min=1000, max=MAX_CHECKER_VALUES,
                               help="Values in the synthetic history, at most 100M (written to a temporary folder, "
                                    "removed after each run and on Ctrl-C: 100M values are 7.5 GB of Parquet)."),
    runs: int = typer.Option(3, "--runs", min=1, max=10),
    engine: Engine = EngineOpt,
    master: str | None = typer.Option(
        None, "--master", help="Spark engine only: local (local[2], the default), standalone (a cluster of "
        "one master and two workers on loopback, started for the benchmark) or spark://HOST:PORT."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
    app: AppHistory | None = AppOpt,
    copier: bool = typer.Option(
        False, "--copier", help="With a copier that copied every committed value (one copier transaction per "
        "producer transaction), as a run of an exactly-once copier leaves it: what the copier costs the checks "
        f"(copy-exactly-once, g1c). Default engine only; at most {MAX_APP_VALUES // 1_000_000}M values (built in memory)."),
) -> None:
    """Load and check a valid synthetic history of N values (median of --runs, each in its own process)."""
    from contextlib import ExitStack

    from harness.bench.checker import bench, median_of
    from harness.bench.infra import machine

    if app is not None and copier:
        raise ConfigError(f"--app {app.value} and --copier: one history at a time")
    if app is not None:
        _bench_app_checker(values, runs, engine, master, app, as_json)
        return
    if copier:
        _bench_copier_checker(values, runs, engine, master, as_json)
        return
    if master is not None and engine is not Engine.spark:
        raise ConfigError(f"--master {master}: only the Spark engine runs on a Spark master (add --engine spark)")
    if master not in (None, "local", "standalone") and not master.startswith("spark://"):
        raise ConfigError(f"--master {master}: expected local, standalone or spark://HOST:PORT")
    if engine is Engine.spark:  # before a history is built: its measuring step would die on the import
        from harness.sparkjob.session import require_pyspark

        require_pyspark("bench checker --engine spark")
    samples = []
    with ExitStack() as stack:
        url = None if master in (None, "local") else master
        if master == "standalone":
            from clusters.spark.standalone import SparkStandalone

            spark = stack.enter_context(SparkStandalone(new_run_dir("bench-checker-spark"), "bench-checker"))
            url = spark.master_url
        for i in range(runs):
            # in this process, so that the history's temporary folder is this process's to remove
            # on Ctrl-C or SIGTERM (a child killed by a signal would leave it, GBs in $TMPDIR)
            samples.append(bench(values, engine.value, url))
            log.info(f"run {i + 1}/{runs}: {samples[-1]}")
    result = {**median_of(samples), "machine": machine()}
    if as_json:
        print_json(result)
        return
    out.print(f"machine: {result['machine']}", highlight=False)
    read = "Spark session start" if engine is Engine.spark else "read"
    out.print(f"{engine.value} engine, {result['values']} values, median of {runs}: {read} {result['read_s']}s, "
              f"check {result['check_s']}s "
              f"({result['values_per_s']:.0f} values/s, {result['check_over_read']}x read), "
              f"peak RSS {result['peak_rss_mb']} MiB", highlight=False)
    if "spark" in result:
        out.print(f"on {result['master']}: Spark jobs {result['spark']['jobs']}, stages {result['spark']['stages']}, "
                  f"shuffles {result['spark']['shuffles']} ({result['spark']['shuffle_mb']} MiB written); "
                  f"peak RSS by process (first run): {result['samples'][0]['peak_rss_mb_by_process']}", highlight=False)


def _bench_copier_checker(values: int, runs: int, engine: Engine, master: str | None, as_json: bool) -> None:
    """``bench checker --copier``: the copier's history generated once, loaded and checked --runs times."""
    from harness.bench.checker import COPIER, bench_app, median_of
    from harness.bench.infra import machine

    if engine is not Engine.default or master is not None:
        raise ConfigError("--copier: the default engine only (drop --engine spark and --master)")
    if values > MAX_APP_VALUES:
        raise ConfigError(f"--values {values} with --copier: at most {MAX_APP_VALUES} (the history is built in memory)")
    samples = bench_app(values, COPIER, runs)
    cost = {name: statistics.median(s["by_check_s"][name] for s in samples) for name in ("copy-exactly-once", "g0", "g1c")}
    result = {**median_of(samples), "copier": True, "by_check_s": cost, "machine": machine()}
    if as_json:
        print_json(result)
        return
    out.print(f"machine: {result['machine']}", highlight=False)
    out.print(f"copier history, {result['values']} values written, median of {runs}: read {result['read_s']}s, "
              f"check {result['check_s']}s ({result['values_per_s']:.0f} values/s), of which "
              + ", ".join(f"{k} {v}s" for k, v in cost.items()) + f", peak RSS {result['peak_rss_mb']} MiB", highlight=False)


def _bench_app_checker(values: int, runs: int, engine: Engine, master: str | None, app: AppHistory,
                       as_json: bool) -> None:
    """``bench checker --app``: the app history generated once, loaded and checked --runs times."""
    from harness.bench.checker import bench_app, median_of
    from harness.bench.infra import machine

    if engine is not Engine.default or master is not None:
        raise ConfigError(f"--app {app.value}: the app contract checks run on the default engine only "
                          "(drop --engine spark and --master)")
    if values > MAX_APP_VALUES:
        raise ConfigError(f"--values {values} with --app: at most {MAX_APP_VALUES} (the app history is built in memory)")
    samples = bench_app(values, app.value, runs)
    for i, s in enumerate(samples):
        log.info(f"run {i + 1}/{runs}: {s}")
    result = {**median_of(samples), "app": app.value, "machine": machine()}
    if as_json:
        print_json(result)
        return

    def each(key: str) -> str:
        return ", ".join(f"{s[key]}" for s in samples)

    out.print(f"machine: {result['machine']}", highlight=False)
    out.print(f"app {app.value}, {result['values']} input values ({result['app_outputs']} output records read, "
              f"{result['app_expected']} expected), median of {runs}: read {result['read_s']}s ({each('read_s')}), "
              f"check {result['check_s']}s ({each('check_s')}; {result['values_per_s']:.0f} values/s), of which "
              f"{result['app_check']} {result['app_check_s']}s ({each('app_check_s')}), "
              f"peak RSS {result['peak_rss_mb']} MiB ({each('peak_rss_mb')})", highlight=False)


def _bench_on_one_cluster(name: str, runs: int, backend: Backend, port_base: int | None,
                          one_run: Callable[[Cluster, Path], dict[str, Any]],
                          summary: Callable[[list[dict[str, Any]]], dict[str, Any]], as_json: bool,
                          wire_between_brokers: bool = False) -> dict[str, Any] | None:
    """``runs`` samples of ``one_run`` on one healthy cluster with their medians (``summary``);
    saved and printed as ``_on_one_cluster`` does."""

    def measure(arts: artifacts.Artifacts, cluster: Cluster, run_dir: Path) -> dict[str, Any]:
        samples = []
        for i in range(runs):
            samples.append(one_run(cluster, run_dir / f"run{i + 1}"))
            log.info(f"run {i + 1}/{runs}: {json.dumps(samples[-1], default=str)[:300]}")
        return {**summary(samples), "runs": samples}

    return _on_one_cluster(name, backend, port_base, measure, as_json, wire_between_brokers)


def _on_one_cluster(name: str, backend: Backend, port_base: int | None,
                    measure: Callable[[artifacts.Artifacts, Cluster, Path], dict[str, Any]], as_json: bool,
                    wire_between_brokers: bool = False) -> dict[str, Any] | None:
    """``measure`` on one healthy cluster of its own (``wire_between_brokers``: its links between
    brokers through the wire proxy too), saved as ``<run folder>/<name>.json`` with the machine and
    versions; printed as JSON with ``as_json`` (then None)."""
    from harness.bench.infra import machine

    arts = artifacts.ensure(pins.KAFKA_VERSION)
    run_dir = new_run_dir(name)
    with backends.new_cluster(backend, arts, run_dir, port_base, wire_between_brokers=wire_between_brokers) as cluster:
        result = measure(arts, cluster, run_dir)
    result = {**result, "backend": backend.value, "kafka_version": pins.KAFKA_VERSION,
              "kafka_tools_version": pins.KAFKA_TOOLS_VERSION, "machine": machine(), "run_dir": str(run_dir)}
    write_json(run_dir / f"{name}.json", result)
    if as_json:
        print_json(result)
        return None
    out.print(f"machine: {result['machine']}; Kafka {pins.KAFKA_VERSION}, {backend.value} backend; {run_dir}", highlight=False)
    return result


def _spread_table(title: str, series: dict[str, Any], key: str, unit: str, extra: Callable[[dict[str, Any]], str],
                  extra_header: str) -> Table:
    """One row per producer: median, min-max, spread (noisy above 20%), ratio, runs, and ``extra``."""
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for col in ("producer", f"median {unit}", "min - max", "spread", "ratio", extra_header, "runs"):
        table.add_column(col, justify="left" if col == "producer" else "right")
    for name, s in series.items():
        sp = s[key]
        spread = f"{sp['spread_pct']}%" + (" noisy" if sp["noisy"] else "")
        ratio = "" if s["ratio"] is None else f"{s['ratio']:.3f}"
        table.add_row(name, f"{sp['median']:,}", f"{sp['min']:,} - {sp['max']:,}", spread, ratio, extra(s),
                      ", ".join(f"{v:,}" for v in sp["values"]))
    return table


@app.command("producer")
@guarded
def bench_producer_cmd(
    producers: str = typer.Option(",".join(DEFAULT_PRODUCERS), "--producers",
                                  help="Comma-separated: a client library (our txn-producer on it: confluent-kafka, "
                                       "java@VERSION, franz-go@VERSION, sarama@VERSION), producer-performance (Kafka's "
                                       "tool) or a Go client's own loop without the bridge (franz-go-perf or franz-go-perf@VERSION, "
                                       "sarama-perf or sarama-perf@VERSION)."),
    records_per_txn: int = typer.Option(500, "--records-per-txn", min=1, max=MAX_VALUES_PER_TXN,
                                         help="Records in every transaction (every producer)."),
    record_bytes: int = typer.Option(100, "--record-size", min=16, max=100_000, help="Bytes per record value."),
    warmup: float = finite_option(5.0, "--warmup", 0, 600, help="Seconds from the first transaction not counted."),
    seconds: float = finite_option(20.0, "--seconds", 5, 3600, help="The steady-state window measured after the warm-up."),
    runs: int = BenchRuns, backend: Backend = BackendOpt, port_base: int | None = PortBase, as_json: bool = JsonOut,
) -> None:
    """Transactional producers side by side: records/s in a steady-state window, runs interleaved (median, spread, ratio to
    ProducerPerformance; a bridged client's cost per record against its own loop)."""
    from harness.bench.producer import Shape, bench_producers, libraries_to_prepare, parse_producers
    from harness.workloads.clients import prepare

    names = parse_producers(producers)
    prepare(libraries_to_prepare(names), flag="--producers")  # the bridges built before any cluster starts
    shape = Shape(records_per_txn, record_bytes, warmup, seconds)
    result = _on_one_cluster("bench-producer", backend, port_base,
                             lambda arts, c, d: bench_producers(arts, c, d, names, shape, runs), as_json)
    if result is None:
        return

    def per_txn(s: dict[str, Any]) -> str:
        sizes = [r["records_per_txn"] for r in s["runs"] if r["records_per_txn"]]
        shown = f"{statistics.median(sizes):,.0f}" if sizes else "?"
        timed = [r["transaction_duration_ms"] for r in s["runs"] if "transaction_duration_ms" in r]
        return shown + (f" ({', '.join(str(t) for t in timed)} ms)" if timed else "")

    title = (f"records/s, {records_per_txn} records of {record_bytes} B per transaction, {warmup:g}s warm-up, "
             f"{seconds:g}s window, median of {runs}" + (f"; ratio to {PRODUCER_PERFORMANCE}" if PRODUCER_PERFORMANCE in names else ""))
    out.print(_spread_table(title, result["producers"], "records_per_s", "records/s", per_txn, "records/txn"))
    pp = result.get("producer_performance")
    if pp is not None:
        measured = ", ".join(f"{r['records_per_s_measured']:,}" for r in result["producers"][PRODUCER_PERFORMANCE]["runs"])
        line = pp["txn_cost"]
        how = (f"moved to {records_per_txn} records per transaction along its time per transaction, "
               f"{line['fixed_ms']} ms + {line['per_record_ms']} ms x records" if line else "not moved (all at one size: no cost line)")
        out.print(f"{PRODUCER_PERFORMANCE} sizes transactions by time ({pp['calibration']['txn_ms']} ms, calibrated): its runs "
                  f"were {how}; measured at their own sizes: {measured} records/s", highlight=False)
    for name, cost in result.get("bridge_cost", {}).items():
        out.print(f"{name} through our workload and its bridge: {cost['ratio']:.3f} of {cost['native']}'s records/s "
                  f"(its own loop), {cost['us_per_record']:+} us per record", highlight=False)


@app.command("txn-rate")
@guarded
def bench_txn_rate_cmd(
    libraries: str = typer.Option(",".join(DEFAULT_LIBRARIES), "--libraries",
                                  help="Comma-separated client libraries: confluent-kafka, java@VERSION."),
    warmup: float = finite_option(5.0, "--warmup", 0, 600, help="Seconds from the first transaction not counted."),
    seconds: float = finite_option(20.0, "--seconds", 5, 3600, help="The steady-state window measured after the warm-up."),
    runs: int = BenchRuns, backend: Backend = BackendOpt, port_base: int | None = PortBase, as_json: bool = JsonOut,
) -> None:
    """Committed transactions/s of one txn-producer per library in txn-baseline's shape (6 values, 10% aborted), runs
    interleaved; and the Java bridge's start-up for each java@VERSION asked."""
    from harness.bench.clients import jvm_startup
    from harness.bench.infra import Series
    from harness.bench.producer import bench_txn_rate, parse_producers
    from harness.workloads.clients import parse, prepare

    names = parse_producers(libraries, flag="--libraries", allow_tool=False)
    prepare(names)
    startup = {v: jvm_startup(v, runs) for v in sorted({lib.version for lib in map(parse, names) if lib.entry.jvm and lib.version})}
    result = _on_one_cluster("bench-txn-rate", backend, port_base,
                             lambda arts, c, d: {**bench_txn_rate(c, d, names, warmup, seconds, runs),
                                                         "jvm_startup_s": startup}, as_json)
    if result is None:
        return

    def aborted(s: dict[str, Any]) -> str:
        return f"{statistics.median(r['aborted_per_s'] for r in s['runs']):.2f}"

    out.print(_spread_table(f"committed transactions/s (txn-baseline's producer), {warmup:g}s warm-up, {seconds:g}s window, "
                            f"median of {runs}; ratio to {DEFAULT_LIBRARY}", result["libraries"], "txns_per_s", "txns/s",
                            aborted, "aborted/s"))
    for version, took in startup.items():
        out.print(Series(f"java bridge start-up (kafka-clients {version}), process start to first answer", "s", took).line(),
                  highlight=False)


@app.command("txn-throughput")
@guarded
def bench_txn_throughput_cmd(
    scenarios: str | None = typer.Option(
        None, "--scenarios", help="Comma-separated library scenarios or YAML files, each with a txn-producer "
        f"\\[default: {','.join(DEFAULT_SCENARIOS)}; with --from: every scenario found]."),
    producers: str | None = typer.Option(
        None, "--producers", help="Comma-separated producers per txn-producer process to compare (the setting "
        f"producers, 1 to {MAX_PRODUCERS}; 1: as the library scenarios run) \\[default: "
        f"{','.join(map(str, PER_PROCESS))}; with --from: every setting found]."),
    seed: int | None = typer.Option(None, "--seed", help="Round i's seed is this + i: every setting meets the same "
                                    "fault schedule in a round \\[default: 1]."),
    duration: float | None = duration_option("Override each scenario's duration (s)."),
    runs: int | None = typer.Option(None, "--runs", min=1, max=10, help="Rounds \\[default: 3]."),
    from_dir: str | None = typer.Option(None, "--from", metavar="FOLDER", help="The figures of the finished runs in this folder and "
                                         "below instead (a bench's, a soak's); starts nothing."),
    backend: Backend = BackendOpt, port_base: int | None = PortBase, as_json: bool = JsonOut,
) -> None:
    """Transactions under faults: per run, those committed inside the fault windows and those open on each fault's
    target when it began, at each --producers setting, rounds interleaved on one cluster (medians)."""
    from harness.bench.infra import machine
    from harness.bench.throughput import bench, folder_figures, run_folders, summary

    wanted = _producers_list(producers) if producers is not None else None
    names = comma_list("--scenarios", scenarios) if scenarios is not None else None
    if from_dir is not None:
        given = [flag for flag, v in (("--seed", seed), ("--duration", duration), ("--runs", runs)) if v is not None]
        if given:
            raise ConfigError(f"--from reads runs already made: {', '.join(given)} would make runs (drop them)")
        samples = [folder_figures(d) for d in run_folders(Path(from_dir))]
        samples = [s for s in samples if (names is None or s["scenario"] in names) and (wanted is None or s["producers"] in wanted)]
        if not samples:
            raise ConfigError(f"--from {from_dir}: no finished run of {names or 'any scenario'} at producers "
                              f"{wanted or 'any'}")
        result: dict[str, Any] | None = {"from": str(from_dir), "machine": machine(), "samples": samples,
                                         "scenarios": summary(samples)}
        if as_json:
            print_json(result)
            return
        out.print(f"runs read from {from_dir} on {result['machine'] if result else ''}", highlight=False)
    else:
        names = names or list(DEFAULT_SCENARIOS)
        wanted = wanted or list(PER_PROCESS)
        rounds, first = runs or 3, 1 if seed is None else seed
        _check_throughput_cases(names, wanted, duration)
        result = _on_one_cluster("bench-txn-throughput", backend, port_base,
                                 lambda arts, c, d: _throughput(bench(c, backend, d, names, wanted, rounds, first, duration),
                                                                rounds, first), as_json)
    if result is None:
        return
    for name, rows in result["scenarios"].items():
        out.print(_throughput_table(name, rows))


def _producers_list(text: str) -> list[int]:
    """``--producers``' numbers, each 1 to ``MAX_PRODUCERS``, none twice (``ConfigError`` otherwise)."""
    items = comma_list("--producers", text)
    if not all(x.isdigit() and 1 <= int(x) <= MAX_PRODUCERS for x in items) or len(set(map(int, items))) < len(items):
        raise ConfigError(f"--producers {text}: comma-separated numbers of producers per process, each 1 to "
                          f"{MAX_PRODUCERS}, none twice (e.g. 1,16)")
    return [int(x) for x in items]


def _check_throughput_cases(names: list[str], producers: list[int], duration: float | None) -> None:
    """Every scenario at every setting (and ``duration``) is one that can run: refused before a cluster starts."""
    from harness.run import scenario

    for name in names:
        sc = scenario.load(name)
        if duration is not None:
            sc.with_duration(duration)
        for n in producers:
            sc.with_producers(n)


def _throughput(samples: list[dict[str, Any]], rounds: int, seed: int) -> dict[str, Any]:
    from harness.bench.throughput import summary

    return {"rounds": rounds, "seed": seed, "samples": samples, "scenarios": summary(samples)}


def _throughput_table(name: str, rows: dict[str, Any]) -> Table:
    """One row per producers setting: the medians, each run's figure, the ratio to the fewest producers."""
    from rich.table import Table

    table = Table(title=f"{name}: transactions under faults, median of runs", title_justify="left")
    for col in ("producers", "committed in fault windows", "per fault-second", "open at a fault's start (mean)",
                "ratio (committed; open)", "runs (committed; open)", "verdicts"):
        table.add_column(col, justify="left" if col in ("producers", "verdicts") else "right")
    for n, r in rows.items():
        ratio = r["ratio"]
        table.add_row(n, _num(r["committed_in_faults"]), _num(r["committed_in_faults_per_s"]), _num(r["open_at_fault_start"]),
                      f"x{_num(ratio['committed_in_faults'])}; x{_num(ratio['open_at_fault_start'])}",
                      f"{', '.join(map(_num, r['each']['committed_in_faults']))}; "
                      f"{', '.join(map(_num, r['each']['open_at_fault_start_mean']))}",
                      ", ".join(str(v) for v in r["each"]["valid"]))
    return table


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:,.1f}".removesuffix(".0")


@app.command("app")
@guarded
def bench_app_cmd(
    records: int = typer.Option(50_000, "--records", min=1000, max=10_000_000, help="Input records the app copies per run."),
    warmup: float = finite_option(5.0, "--warmup", 0, 600, help="Seconds of the feeder's first transactions not counted."),
    seconds: float = finite_option(20.0, "--seconds", 5, 3600, help="The feeder's steady-state window."),
    runs: int = BenchRuns, backend: Backend = BackendOpt, port_base: int | None = PortBase, as_json: bool = JsonOut,
    generator: str = typer.Option(LINES, "--generator", help="The shaped feeder's generator (module:function, "
                                  "imported from here), measured beside the plain feeder."),
) -> None:
    """An app under test: the feeder's committed input values/s, plain and shaped by --generator, and the harness's
    overhead on an app's throughput (the shipped Python copier copying --records alone and as the runner runs it;
    median of --runs, interleaved)."""
    from harness.bench.app_bench import bench_app, shaped_feed
    from harness.bench.infra import Series

    shaped = shaped_feed(generator)  # before any cluster: a generator that cannot be used is refused at once
    result = _on_one_cluster("bench-app", backend, port_base,
                             lambda arts, c, d: bench_app(c, d, records, runs, warmup, seconds, shaped), as_json)
    if result is None:
        return
    f, c = result["feeder"], result["copy"]
    out.print(Series("feeder: committed input values/s (16 keys, 10 per transaction, a fifth aborted, no rate limit)",
                     "values/s", f["values_per_s"]).line(), highlight=False)
    out.print(Series(f"shaped feeder ({generator}), the same otherwise", "values/s", f["shaped"]["values_per_s"]).line(),
              highlight=False)
    extra = f["shaped"]["extra_pct"]  # negative: the shaped feeder was the faster (a noisy machine)
    out.print(f"the shaped feeder's cost: {abs(extra)}% {'fewer' if extra >= 0 else 'more'} committed values/s than the "
              "plain feeder (medians)", highlight=False)
    out.print(Series(f"py-copier alone: {records:,} records copied", "s", c["alone_s"]).line(), highlight=False)
    out.print(Series(f"py-copier under the harness (wrapper, output reader): {records:,} records copied", "s",
                     c["harnessed_s"]).line(), highlight=False)
    out.print(f"harness overhead on the app's copy time: {c['overhead_pct']}% (medians: {c['alone_records_per_s']:,} "
              f"records/s alone, {c['harnessed_records_per_s']:,} under the harness)", highlight=False)


@app.command("spark")
@guarded
def bench_spark_cmd(
    seconds: float = finite_option(90.0, "--seconds", 45, help="How long each run's job runs."),
    rate: int = typer.Option(1000, "--rate", min=10, max=100_000, help="Input records per second."),
    values_per_txn: int = typer.Option(50, "--values-per-txn", min=1, max=MAX_VALUES_PER_TXN,
                                       help="The input producer's transaction size: larger feeds the sink faster."),
    sink: Sink = SinkOpt, spark: SparkMode = SparkModeOpt,
    runs: int = BenchRuns, backend: Backend = BackendOpt, port_base: int | None = PortBase, as_json: bool = JsonOut,
) -> None:
    """The Spark EOS job at a steady input rate: records/s through the sink, micro-batch time, and the
    time to the next batch after a driver kill (and an executor kill on a standalone cluster)."""
    from harness.bench.infra import Series
    from harness.bench.spark_job import STANDALONE_MIN_S, bench, median_of

    if spark is SparkMode.standalone and seconds < STANDALONE_MIN_S:
        raise ConfigError(f"--seconds {seconds:g} with --spark standalone: at least {STANDALONE_MIN_S:g} (its first "
                          "batch comes ~40 s after the job starts, docs/SPARK.md)")
    spark_jars.ensure_spark()
    result = _bench_on_one_cluster("bench-spark", runs, backend, port_base,
                                   lambda c, d: bench(c, d, seconds, rate, sink.value, spark.value, values_per_txn),
                                   lambda samples: {**median_of(samples), "rate": rate, "values_per_txn": values_per_txn,
                                                    "seconds": seconds, "sink": sink.value,
                                                    "spark": spark.value}, as_json)
    if result is None:
        return
    for name, key, unit in ((f"records/s through the {sink.value} sink at steady state", "records_per_s", "rec/s"),
                            ("input committed by its producer over the same window", "input_per_s", "rec/s"),
                            ("micro-batch time (Spark trigger), p50", "trigger_ms_p50", "ms"),
                            ("micro-batch time (Spark trigger), p95", "trigger_ms_p95", "ms"),
                            ("restart to first batch after a driver kill", "restart_to_first_batch_s", "s"),
                            ("next committed batch after an executor kill", "executor_kill_to_batch_s", "s")):
        out.print(Series(name, unit, [s[key] for s in result["runs"] if s.get(key) is not None]).line(), highlight=False)


@app.command("wire")
@guarded
def bench_wire_cmd(
    count: int = typer.Option(2000, "--round-trips", min=100, max=1_000_000, help="Round trips per side and run."),
    rewrite: bool = typer.Option(False, "--rewrite", help="Measure broker address rewriting instead: Metadata round "
                                 "trips through a rewriting and a plain wire proxy (docs/WIRE-FAULTS.md)."),
    records: int = typer.Option(0, "--replication-records", min=0, max=100_000,
                                help="Also time this many acks=all records per side and run, with and without the wire "
                                     "proxy on the links between brokers (its cluster routes them through the wire proxy; local backend; 0: not)."),
    runs: int = BenchRuns, backend: Backend = BackendOpt, port_base: int | None = PortBase, as_json: bool = JsonOut,
) -> None:
    """The wire proxy's added latency: ApiVersions round trips through a client link with and without it, and
    with --replication-records the time per acks=all record with and without it between brokers (median of --runs)."""
    import statistics

    from harness.bench.infra import Series
    from harness.bench.wire_bench import bench, replication
    from harness.bench.wire_rewrite_bench import bench_rewrite

    if rewrite and backend != Backend.local:
        raise ConfigError(f"--rewrite --backend {backend.value}: the bench starts its own wire proxies beside the "
                          "harness, in front of a broker's client socket: only the local backend's is reachable from here")
    if rewrite and records:
        raise ConfigError("--rewrite with --replication-records: the rewrite bench times Metadata round trips only; "
                          "run the replication bench without --rewrite")
    keys = ("with_p50_us", "without_p50_us", "added_p50_us", "with_p99_us", "without_p99_us", "added_p99_us")
    repl_keys = ("repl_with_p50_ms", "repl_without_p50_ms", "repl_added_p50_ms") if records else ()
    counter = iter(range(runs))

    def one_run(c: Cluster, d: Path) -> dict[str, Any]:
        i = next(counter)
        if rewrite:
            return bench_rewrite(c, d, count, i)
        return {**bench(c, count, i), **(replication(c, records, i) if records else {})}

    result = _bench_on_one_cluster("bench-wire-rewrite" if rewrite else "bench-wire", runs, backend, port_base, one_run,
                                   lambda samples: {k: statistics.median(s[k] for s in samples) for k in keys + repl_keys},
                                   as_json, wire_between_brokers=bool(records))
    if result is None:
        return
    what = "Metadata round trip, with = rewriting" if rewrite else "ApiVersions round trip"
    for key in keys:
        out.print(Series(f"{what}, {key.replace('_us', '').replace('_', ' ')}", "us",
                         [s[key] for s in result["runs"]]).line(), highlight=False)
    for key in repl_keys:
        out.print(Series(f"acks=all record, {key.removeprefix('repl_').replace('_ms', '').replace('_', ' ')}", "ms",
                         [s[key] for s in result["runs"]]).line(), highlight=False)
