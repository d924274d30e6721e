"""Toxiproxy at its pinned release, built from the Go module proxy into the cache (the server, and the
CLI the container image's healthcheck runs)."""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

from clusters.builds import pins
from clusters.builds.cache import require_tool
from clusters.builds.golang import go_env, run_go
from harness.base.paths import cache_dir

log = logging.getLogger(__name__)


def toxiproxy_bin() -> Path:
    return cache_dir() / "toxiproxy" / pins.TOXIPROXY_VERSION / "toxiproxy-server"


def toxiproxy_cli() -> Path:
    """The CLI, which the Toxiproxy container image carries for its healthcheck."""
    return toxiproxy_bin().with_name("toxiproxy-cli")


def build_toxiproxy() -> Path:
    """Build the pinned Toxiproxy server from the Go module proxy into the cache; return the binary."""
    target, cli = toxiproxy_bin(), toxiproxy_cli()
    if all(p.is_file() and os.access(p, os.X_OK) for p in (target, cli)):
        log.info(f"toxiproxy {pins.TOXIPROXY_VERSION}: cached at {target}")
        return target
    go = require_tool("go", "build Toxiproxy from the Go module proxy", "apt-get install golang-go (1.22+)")
    log.info(f"toxiproxy {pins.TOXIPROXY_VERSION}: building {pins.TOXIPROXY_MODULE}/cmd/server and cmd/cli with Go")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        cmd = [go, "install", *(f"{pins.TOXIPROXY_MODULE}/cmd/{c}@{pins.TOXIPROXY_VERSION}" for c in ("server", "cli"))]
        run_go(cmd, f"Toxiproxy {pins.TOXIPROXY_VERSION}", dict(go_env(), GOBIN=tmp))
        (Path(tmp) / "cli").rename(cli)
        (Path(tmp) / "server").rename(target)
    log.info(f"toxiproxy {pins.TOXIPROXY_VERSION}: built {target}")
    return target
