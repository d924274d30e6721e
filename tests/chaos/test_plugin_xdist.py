"""The plugin in a CI that runs tests in parallel: two pytest-xdist workers each get a cluster of
their own (their own port base and cluster record), and ``--eos-keep`` leaves both up, with the
command that takes each down. Both backends behind the ``library`` marker (compose: two compose
projects, their bridge subnets moved by the port base): two clusters at once cost this 2-core
machine a minute and more."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from harness.base.paths import cache_dir
from tests.conftest import selected_backends

pytestmark = pytest.mark.chaos
pytest_plugins = ["pytester"]

#: Apart from the session clusters' (19092 local, 29092 compose) and the CLI tests' clusters.
BASE = {"local": 19592, "compose": 29592}
#: The artifact cache, taken before pytester points HOME at its own folder: the workers must not
#: fetch and build Kafka and Toxiproxy again.
CACHE = str(cache_dir())

WORKER_TEST = '''
import json, os

def test_cluster(kafka_cluster, eos_options):
    worker = os.environ["PYTEST_XDIST_WORKER"]
    out = os.path.join(os.environ["EOS_TEST_OUT"], worker + ".json")
    with open(out, "w") as f:
        json.dump({"port_base": eos_options.port_base, "bootstrap": kafka_cluster.bootstrap,
                   "state": os.environ["EOS_CHAOS_STATE"]}, f)
'''


def _answers(address: str) -> bool:
    host, port = address.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
        return True
    except OSError:
        return False


# 73 s (two clusters, one after the other): in make library with its compose twin, for the suite's
# 30-minute budget; tests/unit/test_plugin.py keeps the options and the port base per worker
@pytest.mark.library
@pytest.mark.parametrize("backend", ["local", "compose"])
def test_two_xdist_workers_get_clusters_of_their_own_and_keep_them(pytester: pytest.Pytester, tmp_path: Path,
                                                                   backend: str) -> None:
    if backend not in selected_backends():
        pytest.skip(f"the {backend} backend is not selected (EOS_CHAOS_BACKENDS)")
    base = BASE[backend]
    pytester.makepyfile(test_workers=WORKER_TEST)
    out, states = tmp_path / "out", tmp_path / "state"
    out.mkdir()
    env = dict(os.environ, EOS_TEST_OUT=str(out), EOS_CHAOS_STATE=str(states), EOS_CHAOS_CACHE=CACHE)
    args = [sys.executable, "-m", "pytest", "-p", "xdist", "-n", "2", "--dist", "each", "-p", "no:cacheprovider",
            "--eos-backend", backend, f"--eos-port-base={base}", "--eos-keep", f"--eos-results={tmp_path / 'runs'}",
            "-o", "addopts=", "test_workers.py"]
    records = {w: states / f"xdist-{w}" / f"{backend}.json" for w in ("gw0", "gw1")}
    try:
        done = subprocess.run(args, cwd=pytester.path, env=env, capture_output=True, text=True, timeout=780)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
        seen = {w: json.loads((out / f"{w}.json").read_text()) for w in records}
        assert seen["gw0"]["port_base"] == base and seen["gw1"]["port_base"] == base + 100
        for w, path in records.items():  # both clusters outlived the session, and it said how to take each down
            rec = json.loads(path.read_text())
            assert rec["port_base"] == seen[w]["port_base"] and rec["owner_pid"] is None  # detached: kept
            assert _answers(seen[w]["bootstrap"].split(",")[0]), f"{w}'s kept cluster does not answer"
            assert f"take it down with: EOS_CHAOS_STATE={path.parent} eos-chaos cluster down --backend {backend}" in done.stdout
    finally:
        for path in records.values():
            if path.exists():
                down = subprocess.run([str(Path(sys.executable).with_name("eos-chaos")), "cluster", "down", "--backend", backend],
                                      env=dict(env, EOS_CHAOS_STATE=str(path.parent)), capture_output=True, text=True,
                                      timeout=300)
                assert down.returncode == 0, down.stdout + down.stderr
    assert not any(path.exists() for path in records.values())
