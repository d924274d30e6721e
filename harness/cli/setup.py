"""``eos-chaos setup``, ``images`` and ``engine up|down``: what the backends need before a cluster."""

from __future__ import annotations

import time

import typer

from clusters.backends import artifacts
from clusters.spark import spark_jars
from harness.cli.console import out
from harness.cli.guard import guarded
from harness.cli.options import KafkaVersion

app = typer.Typer()
engine_app = typer.Typer(no_args_is_help=True, help="The Docker engine of the compose backend.")


@app.command()
@guarded
def setup(
    kafka_version: str = KafkaVersion,
    everything: bool = typer.Option(False, "--all", help="Also fetch Spark's Kafka connector and build the client bridges (Java, Go) "
                                    "and the shipped apps (otherwise each is fetched when a run first needs it)."),
) -> None:
    """Fetch Kafka (Maven Central) and build Toxiproxy (Go module proxy) and the wire proxy into the cache:
    what a local cluster needs. With --all, also Spark's Kafka connector, the client bridges (each versioned
    client library's versions the tests use) and the shipped apps (harness/apps), which runs otherwise fetch
    when they first need them."""
    from harness.apps import prepare_all
    from harness.workloads.clients import prepare, setup_specs

    t0 = time.monotonic()
    arts = artifacts.ensure(kafka_version)
    ready = (f"kafka {arts.kafka_version} ({arts.kafka_libs}), toxiproxy ({arts.toxiproxy_bin}), "
             f"wire proxy ({arts.kwire_bin}), java {arts.java}")
    if everything:
        spark = spark_jars.ensure_spark()
        clients = setup_specs()  # every versioned client library's versions for the tests (the Java and Go bridges)
        prepare(clients)
        apps = prepare_all()
        ready += f", spark-sql-kafka ({len(spark)} jars), client bridges ({', '.join(clients)}), apps ({', '.join(apps)})"
    out.print(f"ready in {time.monotonic() - t0:.1f}s: {ready}", highlight=False)


@app.command()
@guarded
def images(
    kafka_version: str = KafkaVersion,
    local: bool = typer.Option(False, "--local", help="Build the local stand-ins even if official images could be pulled."),
    pull: bool = typer.Option(False, "--pull", help="Try pulling the official images even if a pull failed within a day."),
) -> None:
    """Make the compose backend's images ready: official if present or pullable, else built locally
    (Docker engine started first if none answers)."""
    from clusters.backends.compose.cli import find_compose
    from clusters.backends.compose.engine import ensure_engine
    from clusters.backends.compose.images import ensure_images

    t0 = time.monotonic()
    engine = ensure_engine()
    compose = find_compose()
    arts = artifacts.ensure(kafka_version)
    imgs = ensure_images(arts, prefer_local=local, pull=pull)
    out.print(f"engine: {engine}; compose: {' '.join(compose)}", highlight=False)
    out.print(f"{imgs.source} images ready in {time.monotonic() - t0:.1f}s:\n  EOS_KAFKA_IMAGE={imgs.kafka}\n"
              f"  EOS_TOXIPROXY_IMAGE={imgs.toxiproxy}", highlight=False)


@engine_app.command("up")
@guarded
def engine_up() -> None:
    """Make sure a Docker engine answers: the one DOCKER_HOST or the default socket names, or
    Debian's dockerd started by us (installed first if needed; root on Debian only)."""
    from clusters.backends.compose.engine import ensure_engine

    out.print(f"engine: {ensure_engine()}", highlight=False)


@engine_app.command("down")
@guarded
def engine_down() -> None:
    """Stop the dockerd eos-chaos started (an engine it did not start is left alone)."""
    from clusters.backends.compose.engine import stop_engine

    out.print("stopped the dockerd eos-chaos started" if stop_engine() else "no dockerd of ours was running")
