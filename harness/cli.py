"""The ``eos-chaos`` command line. Exit codes: 0 ok, 1 the thing tested failed, 2 usage/environment."""

from __future__ import annotations

import enum
import logging
import json
import re
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, NoReturn, TypeVar

import typer
from rich.console import Console

from clusters import artifacts, backends, pins, state
from clusters.backends import Backend
from clusters.reclaim import Owner
from harness import logs
from harness.errors import ConfigError, HarnessError
from harness.runs import new_run_dir

if TYPE_CHECKING:
    from clusters.base import Cluster

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Chaos-testing harness for Kafka exactly-once semantics.")
cluster_app = typer.Typer(no_args_is_help=True, help="Bring a cluster up, down, or ask how it is.")
app.add_typer(cluster_app, name="cluster")
bench_app = typer.Typer(no_args_is_help=True, help="Benchmarks: repeated runs, medians, the machine.")
app.add_typer(bench_app, name="bench")
engine_app = typer.Typer(no_args_is_help=True, help="The Docker engine of the compose backend.")
app.add_typer(engine_app, name="engine")

log = logging.getLogger(__name__)
out = Console(soft_wrap=True)
err = Console(stderr=True)
T = TypeVar("T")


def _fail(exc: HarnessError) -> NoReturn:
    err.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
    raise typer.Exit(exc.exit_code)


def _guard(fn: Callable[[], T]) -> T:
    """Run a command body: harness errors become their exit code, Ctrl-C exits 130 after cleanup."""
    try:
        return fn()
    except HarnessError as exc:
        _fail(exc)
    except KeyboardInterrupt:
        err.print("[yellow]interrupted; faults healed, and what this command started was taken down (unless --keep)[/]")
        raise typer.Exit(130) from None


def _artifacts(kafka_version: str) -> artifacts.Artifacts:
    artifacts.parse_kafka_version(kafka_version)
    have = artifacts.ready(kafka_version)
    if have is not None:
        return have
    log.info(f"Kafka {kafka_version} or Toxiproxy not cached yet; fetching (once)")
    return artifacts.ensure(kafka_version)


KafkaVersion = typer.Option(pins.KAFKA_VERSION, "--kafka-version", help="Apache Kafka release (Maven Central).")
PortBase = typer.Option(None, "--port-base", min=1024, max=65000,
                        help="First of node 1's 4 listener ports [default: 19092 local, 29092 compose].")
BrokerConfig = typer.Option([], "--broker-config", metavar="KEY=VALUE",
                            help="A broker setting on top of the harness defaults (repeatable), e.g. num.io.threads=4.")
BackendOpt = typer.Option(Backend.local, "--backend", help="Where the cluster runs: local processes or Docker Compose.")


BROKER_KEY = re.compile(r"^[a-z][a-z0-9_.-]*$")


def parse_broker_config(items: list[str]) -> dict[str, str]:
    """``--broker-config KEY=VALUE`` items as a dict; a clear error for anything else."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not BROKER_KEY.match(key.strip()):
            raise ConfigError(f"--broker-config {item!r}: expected KEY=VALUE with a Kafka broker property name "
                              "(lower case, dots), e.g. --broker-config num.io.threads=4")
        out[key.strip()] = value.strip()
    return out


@app.command()
def setup(kafka_version: str = KafkaVersion) -> None:
    """Fetch Kafka and Spark's Kafka connector (Maven Central) and build Toxiproxy (Go module proxy) into the cache."""

    def body() -> None:
        t0 = time.monotonic()
        arts = artifacts.ensure(kafka_version)
        spark = artifacts.ensure_spark()
        out.print(f"ready in {time.monotonic() - t0:.1f}s: kafka {arts.kafka_version} ({arts.kafka_libs}), "
                  f"toxiproxy ({arts.toxiproxy_bin}), spark-sql-kafka ({len(spark)} jars), java {arts.java}",
                  highlight=False)

    _guard(body)


@cluster_app.command("up")
def cluster_up(backend: Backend = BackendOpt, kafka_version: str = KafkaVersion, port_base: int | None = PortBase,
               broker_config: list[str] = BrokerConfig) -> None:
    """Start a 3-node cluster that stays up until `eos-chaos cluster down`."""

    def body() -> None:
        overrides = parse_broker_config(broker_config)
        arts = _artifacts(kafka_version)
        run_dir = new_run_dir("cluster")
        cluster = backends.new_cluster(backend, arts, run_dir, port_base, overrides, detached=True)
        t0 = time.monotonic()
        log.info(f"starting {backend.value} cluster, Kafka {kafka_version}, run folder {run_dir}")
        cluster.start()
        s = cluster.status()
        out.print(f"{backend.value} cluster up and healthy in {time.monotonic() - t0:.1f}s", highlight=False)
        out.print(f"  bootstrap (through proxies): {s.bootstrap}\n  direct bootstrap: {s.direct_bootstrap}\n"
                  f"  toxiproxy: {s.toxiproxy}\n  logs: {run_dir}/nodes/", highlight=False)

    _guard(body)


@cluster_app.command("down")
def cluster_down(backend: Backend = BackendOpt) -> None:
    """Stop the cluster and everything of ours left running (no error when nothing is up)."""

    def body() -> None:
        rec = state.load(backend.value)
        if rec is None:
            left = backends.reclaim(backend)
            out.print(f"no {backend.value} cluster was up{'; reclaimed what runs that are over left:' if left else ''}")
            for line in left.lines():
                out.print(f"  {line}", highlight=False)
            return
        owner = Owner(rec.owner_pid)
        gone = backends.down(rec)
        out.print(f"{backend.value} cluster down; logs kept in {rec.run_dir}", highlight=False)
        if gone:
            out.print(f"{'reclaimed (its owner, pid ' + str(owner.pid) + ', was dead)' if owner.dead else 'took down'}:",
                      highlight=False)
        for line in gone.lines():
            out.print(f"  {line}", highlight=False)

    _guard(body)


@cluster_app.command("status")
def cluster_status(
    backend: Backend = BackendOpt,
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Show the cluster's addresses and node states (exit 1 when no cluster is up)."""

    def body() -> None:
        rec = state.load(backend.value)
        if rec is None:
            if as_json:
                out.print_json(json.dumps({"backend": backend.value, "up": False, "nodes": []}))
            else:
                out.print(f"no {backend.value} cluster is up")
            raise typer.Exit(1)
        status = backends.status(rec)
        s = status.to_json()
        s["up"] = any(n["state"] != "down" for n in s["nodes"])
        if as_json:
            print(json.dumps(s, indent=2))
            return
        out.print(f"{s['backend']} cluster, Kafka {s['kafka_version']}, run folder {s['run_dir']}", highlight=False)
        out.print(f"  owner     {Owner(rec.owner_pid)}", highlight=False)
        out.print(f"  bootstrap {s['bootstrap']}\n  direct    {s['direct_bootstrap']}\n  toxiproxy {s['toxiproxy']}", highlight=False)
        out.print(f"  active controller {s['active_controller']}", highlight=False)
        for n in s["nodes"]:
            out.print(f"  node {n['id']}: {n['state']}" + (f" (pid {n['pid']})" if n["pid"] else ""), highlight=False)
        if status.would_reclaim:
            out.print(f"  a start or `eos-chaos cluster down --backend {s['backend']}` would reclaim:", highlight=False)
        for line in status.would_reclaim.lines():
            out.print(f"    {line}", highlight=False)

    _guard(body)


@app.command()
def smoke(
    duration: float = typer.Option(30.0, "--duration", min=10, max=3600, help="Seconds of transactional writes."),
    backend: Backend = BackendOpt,
    kafka_version: str = KafkaVersion,
    port_base: int | None = PortBase,
) -> None:
    """A cluster + a transactional producer while a broker is killed -9; PASS when every
    committed value is read back exactly once."""

    def body() -> None:
        from harness.smoke import run_smoke

        arts = _artifacts(kafka_version)
        run_dir = new_run_dir("smoke")
        log.info(f"run folder {run_dir}")
        with backends.new_cluster(backend, arts, run_dir, port_base) as cluster:
            log.info("cluster healthy; producing")
            result = run_smoke(cluster, duration)
        verdict = "[bold green]PASS[/]" if result.passed else "[bold red]FAIL[/]"
        out.print(f"{verdict} {result.summary()}", highlight=False)
        for label, items in (("missing", result.missing), ("duplicated", result.duplicated),
                             ("aborted but read", result.aborted_read), ("never written", result.unknown_values)):
            if items:
                out.print(f"  {label}: {items[:10]}", highlight=False)
        if result.nemesis_error:
            out.print(f"  nemesis failed: {result.nemesis_error}", highlight=False)
        out.print(f"logs: {run_dir}/nodes/*/server.log, {run_dir}/toxiproxy.log ({backend.value} backend)", highlight=False)
        (run_dir / "smoke.txt").write_text(("PASS " if result.passed else "FAIL ") + result.summary() + "\n")
        if not result.passed:
            raise typer.Exit(1)

    _guard(body)


@app.command()
def images(
    kafka_version: str = KafkaVersion,
    local: bool = typer.Option(False, "--local", help="Build the local stand-ins even if official images could be pulled."),
    pull: bool = typer.Option(False, "--pull", help="Try pulling the official images even if a pull failed within a day."),
) -> None:
    """Make the compose backend's images ready: official if present or pullable, else built locally
    (Docker engine started first if none answers)."""

    def body() -> None:
        from clusters.compose.cli import find_compose
        from clusters.compose.engine import ensure_engine
        from clusters.compose.images import ensure_images

        t0 = time.monotonic()
        engine = ensure_engine()
        compose = find_compose()
        arts = artifacts.ensure(kafka_version)
        imgs = ensure_images(arts, prefer_local=local, pull=pull)
        out.print(f"engine: {engine}; compose: {' '.join(compose)}", highlight=False)
        out.print(f"{imgs.source} images ready in {time.monotonic() - t0:.1f}s:\n  EOS_KAFKA_IMAGE={imgs.kafka}\n"
                  f"  EOS_TOXIPROXY_IMAGE={imgs.toxiproxy}", highlight=False)

    _guard(body)


@bench_app.command("cluster")
def bench_cluster(
    runs: int = typer.Option(3, "--runs", min=1, max=50),
    load: float = typer.Option(30.0, "--load", min=0, help="Seconds of smoke load before the second RSS sample (0: none)."),
    backend: Backend = BackendOpt,
    kafka_version: str = KafkaVersion,
    port_base: int | None = PortBase,
) -> None:
    """Time from `cluster up` to healthy and the brokers' resident memory (median of --runs)."""

    def body() -> None:
        from harness.bench import bench_cluster_up, machine

        arts = _artifacts(kafka_version)
        series = bench_cluster_up(backend, arts, runs, load, port_base)
        out.print(f"machine: {machine()}; Kafka {kafka_version}; {backend.value} backend", highlight=False)
        for s in series:
            out.print(s.line(), highlight=False)

    _guard(body)


@bench_app.command("setup")
def bench_setup_cmd(
    runs: int = typer.Option(3, "--runs", min=1, max=20),
    cold: bool = typer.Option(False, "--cold", help="Each run in a fresh, empty cache (downloads everything)."),
) -> None:
    """Time `eos-chaos setup` with a warm or an empty cache (median of --runs)."""

    def body() -> None:
        from harness.bench import bench_setup, machine

        series = bench_setup(runs, cold)
        out.print(f"machine: {machine()}", highlight=False)
        out.print(series.line(), highlight=False)

    _guard(body)


@engine_app.command("up")
def engine_up() -> None:
    """Make sure a Docker engine answers: the one DOCKER_HOST or the default socket names, or
    Debian's dockerd started by us (installed first if needed; root on Debian only)."""

    def body() -> None:
        from clusters.compose.engine import ensure_engine

        out.print(f"engine: {ensure_engine()}", highlight=False)

    _guard(body)


@engine_app.command("down")
def engine_down() -> None:
    """Stop the dockerd eos-chaos started (an engine it did not start is left alone)."""

    def body() -> None:
        from clusters.compose.engine import stop_engine

        out.print("stopped the dockerd eos-chaos started" if stop_engine() else "no dockerd of ours was running")

    _guard(body)


@bench_app.command("images")
def bench_images_cmd(runs: int = typer.Option(3, "--runs", min=1, max=10), kafka_version: str = KafkaVersion) -> None:
    """Time building the local images from an empty image cache, and starting the engine (median of --runs)."""

    def body() -> None:
        from harness.bench import bench_engine_start, bench_images, machine

        arts = artifacts.ensure(kafka_version)
        series = [bench_images(arts, runs), bench_engine_start(runs)]
        out.print(f"machine: {machine()}", highlight=False)
        for s in series:
            out.print(s.line(), highlight=False)

    _guard(body)


@app.command()
def scenarios(as_json: bool = typer.Option(False, "--json", help="Machine-readable output.")) -> None:
    """List the built-in scenarios: name and what each does."""
    from harness import scenario

    items = [(n, scenario.load(n).description) for n in scenario.names()]
    if as_json:
        print(json.dumps([{"name": n, "description": d} for n, d in items], indent=2))
        return
    for n, d in items:
        out.print(f"[bold]{n}[/]  {d}", highlight=False)


@app.command("run")
def run_cmd(
    name: str = typer.Argument(..., help="A built-in scenario (eos-chaos scenarios) or a YAML file."),
    backend: Backend = BackendOpt,
    seed: int = typer.Option(None, "--seed", help="Seed for workload choices (and, later, fault schedules) [default: random]."),
    duration: float = typer.Option(None, "--duration", min=5, help="Override the scenario's duration (s)."),
    out_dir: str = typer.Option(None, "--out", help="Run folder [default: results/<run id>]."),
    kafka_version: str = typer.Option(None, "--kafka-version",
                                      help=f"Apache Kafka release [default: the cluster that is up, else {pins.KAFKA_VERSION}]."),
    port_base: int | None = PortBase,
    keep: bool = typer.Option(False, "--keep", help="Leave the cluster this run starts up afterwards (eos-chaos cluster down stops it)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the planned fault schedule; start nothing."),
    as_json: bool = typer.Option(False, "--json", help="With --dry-run: the schedule as JSON."),
) -> None:
    """Run a scenario: cluster, workloads, faults, heal, final reads, verdict. Exit 0 valid, 1 not.

    Uses the backend's cluster that is up (healing it first), else starts one and takes it down
    after (unless --keep). Ctrl-C ends the run early: faults are healed, what ran is checked, exit 130."""

    def body() -> None:
        import random

        from harness import runner, scenario

        from harness import schedule

        if kafka_version is not None:
            artifacts.parse_kafka_version(kafka_version)
        sc = scenario.load(name)
        if duration is not None:
            sc = sc.model_copy(update={"duration": duration})
        s = seed if seed is not None else random.randrange(2**31)
        if dry_run:
            planned = schedule.as_json(schedule.plan(sc, s))
            if as_json:
                print(json.dumps({"scenario": sc.name, "seed": s, "duration": sc.duration, "schedule": planned}, indent=2))
            else:
                out.print(f"{sc.name}, seed {s}, {sc.duration:.0f}s:", highlight=False)
                for f in planned:
                    extra = f" ({f['workload']})" if f.get("workload") else ""
                    out.print(f"  {f['at']:7.1f}s  {f['kind']}{extra} for {f['duration']:.1f}s", highlight=False)
            return
        run_dir = Path(out_dir) if out_dir else new_run_dir(sc.name)
        log.info(f"scenario {sc.name}, seed {s}, {backend.value} backend, run folder {run_dir}")
        from harness.progress import Progress

        def show(d: Path, secs: float, faults: Callable[[], list[str]]) -> Progress:
            return Progress(d, secs, faults, console=err).start()

        result = runner.run(sc, backend, s, run_dir, kafka_version, port_base=port_base, keep=keep, show=show,
                            source=name)
        _print_verdict(result.verdict, run_dir)
        if result.interrupted:
            err.print("[yellow]interrupted: the run ended early; faults healed, what ran was checked[/]")
            raise typer.Exit(130)
        if not result.valid:
            raise typer.Exit(1)

    _guard(body)


class Engine(str, enum.Enum):
    default = "default"
    spark = "spark"


EngineOpt = typer.Option(Engine.default, "--engine", help="default: numpy/pandas in memory; spark: Spark DataFrame "
                         "jobs over the Parquet history (local[2], or $EOS_CHAOS_SPARK_MASTER) for histories larger than memory.")


@app.command("check")
def check_cmd(run_dir: str = typer.Argument(..., help="A run folder (with history/)."), engine: Engine = EngineOpt) -> None:
    """Re-run the checker on a run folder's history alone; rewrites its verdict.json."""

    def body() -> None:

        from harness import runner
        from harness.checker import write_verdict

        d = Path(run_dir)
        if not d.is_dir():
            raise ConfigError(f"run folder {d} does not exist")
        verdict = runner.rerun_check(d, engine.value)
        write_verdict(verdict, d)
        _print_verdict(verdict, d)
        if verdict["valid"] is not True:
            raise typer.Exit(1)

    _guard(body)


@app.command("soak")
def soak_cmd(
    scenarios_opt: str = typer.Option(None, "--scenarios", metavar="A,B,...",
                                      help="Scenarios to repeat, in turn [default: every one that expects a valid run]."),
    hours: float = typer.Option(None, "--hours", min=0.001, help="Start runs until this many hours have passed."),
    runs: int = typer.Option(None, "--runs", min=1, help="This many runs [default: one of each scenario]."),
    seed: int = typer.Option(None, "--seed", help="Master seed; each run's seed is drawn from it [default: random]."),
    fail_fast: bool = typer.Option(False, "--fail-fast", help="Stop at the first run that is not as its scenario expects."),
    backend: Backend = BackendOpt,
    duration: float = typer.Option(None, "--duration", min=5, help="Override every scenario's duration (s)."),
    kafka_version: str = typer.Option(None, "--kafka-version", help=f"Apache Kafka release [default: {pins.KAFKA_VERSION}]."),
    out_dir: str = typer.Option(None, "--out", help="Soak folder [default: results/<id>-soak]."),
) -> None:
    """Repeat scenarios with fresh seeds on one cluster; keep every run; write soak.html + soak.json.

    Exit 0: every run as expected; 1: some were not; 130: interrupted (the summary is still written)."""

    def body() -> None:
        import random

        from harness import soak

        if hours is not None and runs is not None:
            raise ConfigError("--hours and --runs: give one of them (a soak stops at a time or a number of runs)")
        if kafka_version is not None:
            artifacts.parse_kafka_version(kafka_version)
        names = [n.strip() for n in scenarios_opt.split(",") if n.strip()] if scenarios_opt else None
        if scenarios_opt is not None and not names:
            raise ConfigError("--scenarios is empty; give scenario names separated by commas (eos-chaos scenarios lists them)")
        scs = soak.resolve(names, duration)
        sources = names or [sc.name for sc in scs]
        master = seed if seed is not None else random.randrange(2**31)
        folder = Path(out_dir) if out_dir else new_run_dir("soak")
        folder.mkdir(parents=True, exist_ok=True)
        wanted = runs if runs is not None or hours is not None else len(scs)
        log.info(f"soak of {', '.join(sources)} on {backend.value}, seed {master}, "
             + (f"{hours} h" if hours else f"{wanted} runs") + f"; folder {folder}")
        result = soak.soak(scs, sources, backend, master, folder, runs=wanted, hours=hours, fail_fast=fail_fast,
                           kafka_version=kafka_version)
        t = result.totals()
        out.print(f"{t['runs']} runs, {t['as_expected']} as expected, {t['not_as_expected']} not; stopped: "
                  f"{result.stopped_because}; {folder / soak.SOAK_HTML}", highlight=False)
        for cmd in result.replays():
            out.print(f"  replay: {cmd}", highlight=False)
        if result.stopped_because == "interrupted":
            raise typer.Exit(130)
        if t["not_as_expected"] or result.healed_at_end is False:
            raise typer.Exit(1)

    _guard(body)


@app.command("report")
def report_cmd(run_dir: str = typer.Argument(..., help="A finished run folder (with verdict.json)."),
               out_file: str = typer.Option(None, "--out", help="Write here [default: RUN_DIR/report.html].")) -> None:
    """(Re)make a run's self-contained report.html from its folder alone."""

    def body() -> None:
        from harness.report import write_report

        started = time.perf_counter()
        path = write_report(Path(run_dir), Path(out_file) if out_file else None)
        out.print(f"{path} ({path.stat().st_size / 1e3:,.0f} kB, {time.perf_counter() - started:.1f}s)", highlight=False)

    _guard(body)


@app.command("compare")
def compare_cmd(run_a: str = typer.Argument(..., help="A finished run folder."),
                run_b: str = typer.Argument(..., help="Another finished run folder."),
                show_all: bool = typer.Option(False, "--all", help="Also the rows that are the same."),
                as_json: bool = typer.Option(False, "--json", help="Machine-readable output.")) -> None:
    """What differs between two runs: verdict, checks, throughput, latency, outcomes, versions."""

    def body() -> None:
        from rich.table import Table

        from harness.report.compare import as_json as to_json, compare

        a, b = Path(run_a), Path(run_b)
        rows = compare(a, b)
        if as_json:
            print(json.dumps(to_json(a, b, rows), indent=2, default=str))
            return
        shown = [r for r in rows if show_all or r.differs]
        if not shown:
            out.print(f"no difference in {len(rows)} compared rows", highlight=False)
            return
        table = Table("", "", "A", "B", "change", box=None, highlight=False)
        for col in table.columns:
            col.overflow = "fold"
        out.print(f"A: {a}\nB: {b}", highlight=False)
        for r in shown:
            mark = "[bold red]" if r.section in ("verdict", "checks") and r.differs else ""
            table.add_row(r.section, f"{mark}{r.key}", str(r.a), str(r.b), r.change)
        out.print(table)
        n = sum(r.differs for r in rows)
        out.print(f"{n} of {len(rows)} rows differ (figures are single runs: small changes in throughput and latency are noise)",
                  highlight=False)

    _guard(body)


def _print_verdict(verdict: dict, run_dir: object) -> None:  # type: ignore[type-arg]
    v = verdict["valid"]
    label = "[bold green]VALID[/]" if v is True else ("[bold yellow]UNKNOWN[/]" if v == "unknown" else "[bold red]INVALID[/]")
    s = verdict["stats"]
    out.print(f"{label} txn ok={s['txn']['ok']} fail={s['txn']['fail']} info={s['txn']['info']}, "
              f"committed values {s['committed_values']}, fenced {s['fenced']}", highlight=False)
    for name, c in verdict["checks"].items():
        if c["count"]:
            out.print(f"  {name}: {c['count']}  e.g. {json.dumps(c['examples'][:2], default=str)[:300]}", highlight=False)
        elif c["count"] is None:
            out.print(f"  {name}: check crashed: {c.get('error')}", highlight=False)
    for problem in s.get("nemesis_errors") or []:
        out.print(f"  [yellow]fault not applied:[/] {problem}", highlight=False)
    if s.get("healed") is False:
        out.print(f"  [red]not healed:[/] {s.get('heal_problems')}", highlight=False)
    if verdict["history"].get("truncated"):
        out.print(f"  note: {verdict['history']['note']}: {verdict['history']['truncated']}", highlight=False)
    if "as_expected" in verdict:
        out.print(f"  as the scenario expects: {verdict['as_expected']}", highlight=False)
    out.print(f"run folder: {run_dir}", highlight=False)


@bench_app.command("checker")
def bench_checker_cmd(
    values: int = typer.Option(2_000_000, "--values", min=1000, help="Values in the synthetic history."),
    runs: int = typer.Option(3, "--runs", min=1, max=10),
    engine: Engine = EngineOpt,
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Load and check a valid synthetic history of N values (median of --runs, each in its own process)."""

    def body() -> None:
        import subprocess
        import sys

        from harness.bench import machine
        from harness.bench_checker import median_of

        samples = []
        for i in range(runs):
            proc = subprocess.run([sys.executable, "-m", "harness.bench_checker", str(values), engine.value], capture_output=True,
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

    _guard(body)


BenchRuns = typer.Option(3, "--runs", min=1, max=10)
JsonOut = typer.Option(False, "--json", help="Machine-readable output.")


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
    (run_dir / f"{name}.json").write_text(json.dumps(result, indent=2))
    if as_json:
        print(json.dumps(result, indent=2))
        return None
    out.print(f"machine: {result['machine']}", highlight=False)
    return result


@bench_app.command("producer")
def bench_producer_cmd(
    seconds: float = typer.Option(30.0, "--seconds", min=5, help="How long our txn-producer runs."),
    record_bytes: int = typer.Option(100, "--record-size", min=16, max=100_000),
    txn_ms: int = typer.Option(100, "--txn-ms", min=10, max=60_000, help="Transaction length (both producers)."),
    runs: int = BenchRuns, backend: Backend = BackendOpt, port_base: int | None = PortBase, as_json: bool = JsonOut,
) -> None:
    """Our txn-producer vs Kafka's ProducerPerformance on one healthy cluster (median of --runs)."""

    def body() -> None:
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

    _guard(body)


@bench_app.command("spark")
def bench_spark_cmd(
    seconds: float = typer.Option(90.0, "--seconds", min=45, help="How long each run's job runs."),
    rate: int = typer.Option(1000, "--rate", min=10, max=100_000, help="Input records per second."),
    runs: int = BenchRuns, backend: Backend = BackendOpt, port_base: int | None = PortBase, as_json: bool = JsonOut,
) -> None:
    """The Spark EOS job at a steady input rate: micro-batch time, and restart-to-first-batch after a driver kill."""

    def body() -> None:
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

    _guard(body)


def _sigterm(signum: int, frame: object) -> None:
    # SIGTERM (CI cancelling, `kill`) takes the same cleanup path as Ctrl-C.
    raise KeyboardInterrupt


def main() -> None:
    signal.signal(signal.SIGTERM, _sigterm)
    logs.to_console()
    app()


if __name__ == "__main__":
    main()
