import subprocess
import sys
from pathlib import Path

import pytest

from clusters.backends import artifacts
from clusters.builds import golang, maven, pins
from clusters.kafka import kafka_release
from clusters.toxiproxy import toxiproxy_build
from clusters.wire import kwire_build
from harness.base.errors import ConfigError
from harness.base.paths import REPO_ROOT


@pytest.mark.parametrize("bad", ["4.x", "latest", "4.4", ""])
def test_malformed_kafka_version_is_a_config_error(bad):
    with pytest.raises(ConfigError, match="MAJOR.MINOR.PATCH"):
        kafka_release.parse_kafka_version(bad)


def test_too_old_kafka_version_names_the_minimum():
    with pytest.raises(ConfigError, match="3.9.0"):
        kafka_release.parse_kafka_version("3.6.1")


def test_pinned_version_is_accepted():
    assert kafka_release.parse_kafka_version(pins.KAFKA_VERSION) >= pins.MIN_KAFKA_VERSION


def test_kafka_pom_adds_a_log4j2_backend_and_slf4j2_and_excludes_tools_api():
    pom = kafka_release._kafka_pom("4.4.0")
    assert "<artifactId>kafka_2.13</artifactId><version>4.4.0</version>" in pom
    assert "log4j-slf4j2-impl" in pom and "log4j-core" in pom
    assert f"<artifactId>slf4j-api</artifactId><version>{pins.SLF4J_VERSION}" in pom
    assert "<artifactId>kafka-tools-api</artifactId>" in pom


def test_cache_marker_depends_on_pins(tmp_path, monkeypatch):
    monkeypatch.setenv("EOS_CHAOS_CACHE", str(tmp_path))
    assert kafka_release.kafka_ready("4.4.0") is None
    d = kafka_release.kafka_dir("4.4.0")
    d.mkdir(parents=True)
    (d / ".complete").write_text("stale\n")
    assert kafka_release.kafka_ready("4.4.0") is None  # pins changed since: fetch again
    (d / ".complete").write_text(maven.fingerprint(kafka_release._kafka_pom("4.4.0")))
    assert kafka_release.kafka_ready("4.4.0") == d / "libs"


def test_the_cluster_s_go_programs_build_in_one_go_build_and_only_those_missing(tmp_path, monkeypatch):
    """Toxiproxy's server and the wire proxy come out of one `go build` (the runtime compiles once),
    through a module of the build's own; the CLI, which only the compose image carries, is not
    among them; a program in the cache is not built again."""
    monkeypatch.setenv("EOS_CHAOS_CACHE", str(tmp_path))
    monkeypatch.setattr(golang, "require_tool", lambda *a: "go")
    builds = []

    def go(cmd, what, env, cwd=None):
        builds.append((cmd, (cwd / "go.mod").read_text()))
        out = Path(cmd[cmd.index("-o") + 1])
        for name in ("server", "kwire"):
            (out / name).write_text("#!/bin/sh\n")
            (out / name).chmod(0o755)

    monkeypatch.setattr(golang, "run_go", go)
    tox, kwire = artifacts.build_servers()
    [(cmd, mod)] = builds
    assert cmd[-2:] == [f"{pins.TOXIPROXY_MODULE}/cmd/server", "eos-chaos/kwire"] and "cmd/cli" not in " ".join(cmd)
    assert f"require {pins.TOXIPROXY_MODULE} {pins.TOXIPROXY_VERSION}" in mod
    assert f"replace eos-chaos/kwire => {kwire_build.KWIRE_SOURCE}" in mod and f"go {pins.TOXIPROXY_GO}" in mod
    assert tox == toxiproxy_build.toxiproxy_bin() and tox.is_file()
    assert kwire == kwire_build.kwire_bin() and kwire.is_file()
    assert artifacts.build_servers() == (tox, kwire) and len(builds) == 1, "built again though cached"


@pytest.mark.parametrize("package, name", [("github.com/Shopify/toxiproxy/v2/cmd/server", "server"),
                                           ("eos-chaos/kwire", "kwire"), ("example.com/tool/v3", "tool")])
def test_a_binary_is_named_as_go_build_names_it(package, name):
    assert golang._binary_name(package) == name


def test_the_set_up_ahead_of_the_install_needs_the_standard_library_only():
    """`make run` runs ``python -m clusters.backends.artifacts`` beside pip's install of the dependencies."""
    probe = "import sys; sys.path.insert(0, sys.argv[1]); import clusters.backends.artifacts; print('ok')"
    done = subprocess.run([sys.executable, "-S", "-c", probe, str(REPO_ROOT)], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "ok", done.stderr
