"""Benchmarks behind ``eos-chaos bench``: repeated measurements, medians, and the machine they ran on."""

from __future__ import annotations

import logging
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from clusters.backends import artifacts, backends
from clusters.backends.backends import Backend
from clusters.backends.protocol import Cluster
from harness.base.errors import EnvironmentProblem
from harness.rundir.runfolder import new_run_dir

log = logging.getLogger(__name__)



def machine() -> str:
    mem = psutil.virtual_memory().total / 2**30
    return f"{platform.node()}: {os.cpu_count()} cores, {mem:.0f} GiB, {platform.platform()}, Python {platform.python_version()}"


@dataclass
class Series:
    name: str
    unit: str
    values: list[float] = field(default_factory=list)

    def line(self) -> str:
        if not self.values:
            return f"{self.name}: no samples"
        vals = ", ".join(f"{v:.1f}" for v in self.values)
        spread = max(self.values) - min(self.values)
        med = statistics.median(self.values)
        noisy = " (noisy: spread > 20% of median)" if med and spread > 0.2 * med else ""
        return f"{self.name}: median {med:.1f} {self.unit} over {len(self.values)} runs [{vals}]{noisy}"


def cluster_rss_mb(cluster: Cluster) -> float:
    """The brokers' JVMs together (for compose: the containers' main processes, seen from the host)."""
    total = 0
    for node in cluster.status().nodes:
        if node.pid:
            total += psutil.Process(node.pid).memory_info().rss
    return total / 2**20


def bench_cluster_up(backend: Backend, arts: artifacts.Artifacts, runs: int, load_s: float, port_base: int | None) -> list[Series]:
    """Time from start to healthy, and resident memory of the three brokers (idle, and after load)."""
    up = Series("cluster up -> healthy", "s")
    rss_idle = Series("broker RSS, 3 together, just healthy", "MiB")
    rss_load = Series(f"broker RSS, 3 together, after {load_s:.0f}s smoke load", "MiB")
    for i in range(runs):
        cluster = backends.new_cluster(backend, arts, new_run_dir("bench"), port_base)
        t0 = time.monotonic()
        with cluster:
            up.values.append(time.monotonic() - t0)
            rss_idle.values.append(cluster_rss_mb(cluster))
            if load_s > 0:
                from harness.campaigns.smoke import run_smoke

                res = run_smoke(cluster, duration=load_s)
                log.info(f"run {i + 1}: smoke {'PASS' if res.passed else 'FAIL'}: {res.summary()}")
                rss_load.values.append(cluster_rss_mb(cluster))
        log.info(f"run {i + 1}/{runs}: up {up.values[-1]:.1f}s, rss {rss_idle.values[-1]:.0f} MiB")
    return [up, rss_idle] + ([rss_load] if load_s > 0 else [])


def bench_setup(runs: int, cold: bool) -> Series:
    """``eos-chaos setup`` in a subprocess; cold = a fresh, empty cache folder each run."""
    series = Series(f"eos-chaos setup ({'empty cache' if cold else 'warm cache'})", "s")
    exe = str(Path(sys.executable).parent / "eos-chaos")
    for i in range(runs):
        with tempfile.TemporaryDirectory(prefix="eos-chaos-bench-") as tmp:
            env = dict(os.environ)
            if cold:
                env["EOS_CHAOS_CACHE"] = tmp
            t0 = time.monotonic()
            proc = subprocess.run([exe, "setup"], env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
            took = time.monotonic() - t0
            if proc.returncode != 0:
                raise RuntimeError(f"setup failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
            series.values.append(took)
            log.info(f"run {i + 1}/{runs}: {took:.1f}s")
    return series


def bench_app_build(names: list[str], runs: int) -> list[Series]:
    """Each shipped app's first build from a wholly empty eos-chaos cache (a fresh temp folder as
    ``EOS_CHAOS_CACHE``: Maven's repository too, so every jar is fetched again), in a process of its
    own, as the first run that starts it pays it; the apps interleaved in each round, so a slow
    moment of the machine or the network falls on all of them."""
    series = {name: Series(f"{name}: first build, empty cache", "s") for name in names}
    for i in range(runs):
        for name in names:
            with tempfile.TemporaryDirectory(prefix="eos-chaos-bench-") as tmp:
                env = dict(os.environ, EOS_CHAOS_CACHE=tmp)
                code = f"from harness.apps import SHIPPED; SHIPPED[{name!r}].prepare()"
                t0 = time.monotonic()
                proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                      stdin=subprocess.DEVNULL, timeout=1800)
                took = time.monotonic() - t0
            if proc.returncode != 0:
                raise EnvironmentProblem(f"{name}'s build failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
            series[name].values.append(took)
            log.info(f"run {i + 1}/{runs}: {name} {took:.1f}s")
    return list(series.values())


def _no_compose_cluster_running() -> None:
    import docker

    from clusters.backends.compose.plan import LABEL

    client = docker.from_env(timeout=60)
    try:
        running = client.containers.list(all=True, filters={"label": LABEL})
    finally:
        client.close()
    if running:
        raise EnvironmentProblem(f"a compose cluster is running ({running[0].name}); this benchmark removes images "
                                 "and restarts the engine. Take it down first: eos-chaos cluster down --backend compose")


def bench_images(arts: artifacts.Artifacts, runs: int) -> Series:
    """Build the local images (Debian base, Kafka, Toxiproxy) with none of them present."""
    import docker

    from clusters.backends.compose.engine import ensure_engine
    from clusters.backends.compose.images import ensure_images

    ensure_engine()
    _no_compose_cluster_running()
    series = Series("local images from an empty image cache (debootstrap base + kafka + toxiproxy)", "s")
    client = docker.from_env(timeout=300)
    try:
        for i in range(runs):
            for img in client.images.list(name="eos-chaos/*"):
                for tag in img.tags:
                    client.images.remove(tag, noprune=False)
            client.images.prune(filters={"dangling": True})
            t0 = time.monotonic()
            ensure_images(arts, prefer_local=True)
            series.values.append(time.monotonic() - t0)
            log.info(f"run {i + 1}/{runs}: {series.values[-1]:.1f}s")
    finally:
        client.close()
    return series


def bench_engine_start(runs: int) -> Series:
    """Stop the dockerd we started and start it again; only an engine eos-chaos owns is touched."""
    from clusters.backends.compose.engine import docker_answers, ensure_engine, stop_engine

    series = Series("engine start (Debian dockerd, started by eos-chaos)", "s")
    _no_compose_cluster_running()
    for i in range(runs):
        if not stop_engine() and docker_answers():
            log.info("the engine that answers was not started by eos-chaos: engine start time not measured")
            return series
        t0 = time.monotonic()
        ensure_engine()
        series.values.append(time.monotonic() - t0)
        log.info(f"run {i + 1}/{runs}: {series.values[-1]:.1f}s")
    return series
