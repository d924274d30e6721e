"""Toxiproxy at its pinned release, built from the Go module proxy into the cache (the server, and the
CLI the container image's healthcheck runs)."""

from __future__ import annotations

from pathlib import Path

from clusters.builds import pins
from clusters.builds.golang import GoProgram, build_go_programs
from harness.base.paths import cache_dir


def toxiproxy_bin() -> Path:
    return cache_dir() / "toxiproxy" / pins.TOXIPROXY_VERSION / "toxiproxy-server"


def toxiproxy_cli() -> Path:
    """The CLI, which the Toxiproxy container image carries for its healthcheck."""
    return toxiproxy_bin().with_name("toxiproxy-cli")


def toxiproxy_program(cmd: str = "server") -> GoProgram:
    """Toxiproxy's server (``cmd/server``) or its CLI (``cmd/cli``, for the compose image only)."""
    return GoProgram(f"toxiproxy {pins.TOXIPROXY_VERSION} {cmd}", f"{pins.TOXIPROXY_MODULE}/cmd/{cmd}",
                     pins.TOXIPROXY_MODULE, pins.TOXIPROXY_VERSION, pins.TOXIPROXY_GO,
                     toxiproxy_bin() if cmd == "server" else toxiproxy_cli())


def build_toxiproxy() -> Path:
    """Build the pinned Toxiproxy server from the Go module proxy into the cache; return the binary."""
    return build_go_programs([toxiproxy_program()])[0]


def build_toxiproxy_cli() -> Path:
    """Build the pinned Toxiproxy CLI (the compose image's healthcheck) into the cache; return the binary."""
    return build_go_programs([toxiproxy_program("cli")])[0]
