"""A Docker engine to talk to: the one that answers, or Debian's dockerd started by us."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import time
from pathlib import Path

from clusters.backends import procs
from harness.base.errors import EnvironmentProblem
from harness.base.paths import cache_dir
from harness.base.wait import wait_until

log = logging.getLogger(__name__)

#: dockerd on this kind of machine answers within a second; allow for a cold disk.
ENGINE_START_TIMEOUT_S = 60.0
#: apt-get install of docker.io (and debootstrap) from Debian's mirror.
APT_TIMEOUT_S = 900


def docker_answers(timeout: float = 10.0) -> bool:
    if not shutil.which("docker"):
        return False
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=timeout).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def debian_root() -> bool:
    return os.geteuid() == 0 and Path("/etc/debian_version").exists() and shutil.which("apt-get") is not None


def apt_install(packages: list[str], why: str) -> None:
    """Install Debian packages (root on Debian only); ``EnvironmentProblem`` elsewhere."""
    if not debian_root():
        raise EnvironmentProblem(f"{why} needs the Debian packages {packages}; install them (this is not a Debian machine where we are root)")
    log.info(f"installing Debian packages {packages} ({why})")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages]):
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=APT_TIMEOUT_S, env=env, stdin=subprocess.DEVNULL)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-10:])
            raise EnvironmentProblem(f"`{' '.join(cmd)}` failed (exit {proc.returncode}):\n{tail}")


def engine_home() -> Path:
    return cache_dir() / "docker"


def ensure_engine() -> str:
    """Return how we got an engine: ``existing`` or ``started dockerd in N s``."""
    if docker_answers():
        return "existing"
    if os.environ.get("DOCKER_HOST"):
        # The user chose an engine; starting a local one would silently test something else.
        raise EnvironmentProblem(
            f"DOCKER_HOST={os.environ['DOCKER_HOST']} is set but no Docker engine answers there (`docker info` failed). "
            "Start that engine, or unset DOCKER_HOST to let eos-chaos start Debian's dockerd on this machine."
        )
    if not debian_root():
        raise EnvironmentProblem(
            "no Docker engine answers (`docker info` failed) and this is not a Debian machine where we are root, "
            "so eos-chaos cannot start one. Start Docker (or point DOCKER_HOST at one) and retry."
        )
    if not shutil.which("dockerd"):
        apt_install(["docker.io"], "the compose backend's engine")
    home = engine_home()
    home.mkdir(parents=True, exist_ok=True)
    log_file = home / "dockerd.log"
    cmd = ["dockerd", "--data-root", str(home / "data"), "--pidfile", str(home / "dockerd.pid")]
    log.info(f"no Docker engine answers: starting Debian's dockerd in the background (data {home / 'data'}, log {log_file})")
    t0 = time.monotonic()
    p = procs.spawn(cmd, log_file, cwd=home)

    def exited() -> str | None:
        rc = p.poll()
        return None if rc is None else f"dockerd exited with code {rc}; last lines of {log_file}:\n{procs.tail(log_file)}"

    wait_until(lambda: docker_answers(5), timeout=ENGINE_START_TIMEOUT_S, what="the Docker engine to answer `docker info`", fatal=exited)
    took = time.monotonic() - t0
    log.info(f"dockerd (pid {p.pid}) answers after {took:.1f}s; it keeps running for later runs")
    return f"started dockerd in {took:.1f}s"


def stop_engine() -> bool:
    """Stop the dockerd that ``ensure_engine`` started (found by its pid file); an engine we did
    not start is never touched. Its containers go with it. Returns whether one was stopped."""
    pidfile = engine_home() / "dockerd.pid"
    try:
        pid = int(pidfile.read_text().strip())
    except (FileNotFoundError, ValueError):
        return False
    if not procs.alive(pid) or "dockerd" not in " ".join(procs.cmdline(pid)):
        pidfile.unlink(missing_ok=True)
        return False
    log.info(f"stopping the dockerd eos-chaos started (pid {pid})")
    procs.terminate(pid, "dockerd", timeout=60)
    return True
