"""A cluster the harness did not start, for the external backend's tests: a local cluster brought up
by ``eos-chaos cluster up --backend local`` in a state folder and at a port base of its own (not the
session cluster's), described by an inventory as a user would describe theirs. Its listeners are the
brokers' DIRECT sockets (they advertise themselves, so the wire proxy must rewrite them); its nodes
are reached through ``local`` or ``ssh`` to 127.0.0.1; each broker is the ``process`` preset: found by
its ``server.properties`` path, started again by a ``start.sh`` the helper writes, which re-launches
that node's own java command line, detached, with its process tags (so ``cluster down`` of that
cluster still finds it)."""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from clusters.backends.external.proxy_plan import EXTERNAL_PORT_BASE
from clusters.kafka.topology import Listener, Topology
from tests.chaos.cli_helpers import run
from tests.sshd import SshServer

#: Away from the session cluster (19092) and the killed-runner tests' (19192).
UNDER_PORT_BASE = 19592
#: The proxies in front of it: the external backend's own default.
PROXY_PORT_BASE = EXTERNAL_PORT_BASE
#: ``cluster up`` of a local cluster: ~30 s on 2 cores, more under load.
UP_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class UnderCluster:
    """The cluster under test as its owner knows it (not the harness under test)."""

    env: dict[str, str]  # its own state folder
    run_dir: Path
    node_ids: tuple[int, ...]
    direct: dict[int, str]  # node id -> its DIRECT listener (what the inventory names)

    @property
    def direct_bootstrap(self) -> str:
        return ",".join(self.direct.values())

    def node_dir(self, n: int) -> Path:
        return self.run_dir / "nodes" / f"n{n}"


@contextmanager
def under_cluster(folder: Path) -> Iterator[UnderCluster]:
    """A local cluster of its own, up for the block, taken down after."""
    env = dict(os.environ, EOS_CHAOS_STATE=str(folder / "under-state"))
    env.pop("EOS_CHAOS_PORT_BASE", None)
    up = run(["cluster", "up", "--backend", "local", "--port-base", str(UNDER_PORT_BASE)], env, timeout=UP_TIMEOUT_S)
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        rec = json.loads((folder / "under-state" / "local.json").read_text())
        topo = Topology.at(UNDER_PORT_BASE)
        yield UnderCluster(env, Path(rec["run_dir"]), topo.node_ids,
                           {n: topo.bind(n, Listener.DIRECT) for n in topo.node_ids})
    finally:
        run(["cluster", "down", "--backend", "local"], env, timeout=120)


def _node_process(c: UnderCluster, n: int) -> psutil.Process:
    props = str(c.node_dir(n) / "server.properties")
    for p in psutil.process_iter(["cmdline"]):
        if props in (p.info["cmdline"] or []):
            return p
    raise AssertionError(f"node {n} of {c.run_dir} is not running")


def write_start_script(c: UnderCluster, n: int) -> Path:
    """``nodes/n<N>/start.sh``: the node's own java command line with its process tags, logging where it did."""
    p = _node_process(c, n)
    tags = {k: v for k, v in p.environ().items() if k.startswith("EOS_CHAOS_")}
    script = c.node_dir(n) / "start.sh"
    script.write_text("#!/bin/sh\n" + f"cd {shlex.quote(str(c.node_dir(n)))} || exit 1\n"
                      + "".join(f"export {k}={shlex.quote(v)}\n" for k, v in sorted(tags.items()))
                      + f"exec {shlex.join(p.cmdline())} >> stdout.log 2>&1\n")
    script.chmod(0o755)
    return script


def kafka_home(c: UnderCluster, n: int) -> Path:
    """Where the node's Kafka is: the folder of the ``libs/*`` on its class path."""
    cmd = _node_process(c, n).cmdline()
    return Path(cmd[cmd.index("-cp") + 1]).parent.parent


def local_inventory(c: UnderCluster, path: Path, name: str, sshd: SshServer | None = None,
                    disposable: bool = True) -> Path:
    """The inventory of ``c``: nodes reached through ``local``, or through ``sshd`` when given."""
    if sshd is not None:
        control = (f"{{ssh: {{host: 127.0.0.1, port: {sshd.port}, user: {sshd.user}, key: \"{sshd.key}\", "
                   f"known_hosts: null}}}}")
    else:
        control = "{local: {}}"
    lines = [f"name: {name}", f"disposable: {'true' if disposable else 'false'}", "nodes:"]
    for n in c.node_ids:
        d = c.node_dir(n)
        lines += [f"  - id: {n}", "    host: 127.0.0.1", f"    listeners: {{client: \"{c.direct[n]}\"}}",
                  f"    control: {control}",
                  f"    broker: {{process: {{match: \"{d / 'server.properties'}\", start: \"{write_start_script(c, n)}\"}}}}",
                  f"    metadata_log_dir: \"{d / 'data'}\"", f"    kafka_home: \"{kafka_home(c, n)}\""]
    path.write_text("\n".join(lines) + "\n")
    return path


def runner_env(folder: Path) -> dict[str, str]:
    """The harness under test's environment: a state folder of its own (its journal, its record)."""
    env = dict(os.environ, EOS_CHAOS_STATE=str(folder / "runner-state"))
    env.pop("EOS_CHAOS_PORT_BASE", None)
    return env


def verdict_of(run_dir: Path) -> dict[str, Any]:
    """A finished run's ``verdict.json``."""
    return dict(json.loads((run_dir / "verdict.json").read_text()))


def assert_kip890_torn_through_the_proxy(run_seed: Callable[[int], tuple[dict[str, Any], Path]]) -> None:
    """``kip890-late-commit-tight`` through an external cluster's rewriting proxy: each of the
    KIP-890 tests' torn seeds, until one is invalid (confluent-kafka has no EndTxn v5: its late
    commit tears a transaction, docs/KIP890.md), each run proving a late EndTxn was accepted after
    its client had left (the faults hit). ``run_seed(seed)`` runs one, giving its verdict and folder."""
    from tests.chaos.test_kip890 import TORN_SEEDS

    seen = []
    for seed in TORN_SEEDS:
        v, out = run_seed(seed)
        events = [json.loads(x) for x in (out / "wire-events.jsonl").read_text().splitlines()]
        late = [e for e in events if e["event"] == "response" and e["api"] == "EndTxn" and e["client_gone"]
                and e["error"] == "NONE"]
        assert late, f"seed {seed}: no late EndTxn was accepted: the faults missed"
        seen.append(v["valid"])
        if v["valid"] is False:
            return
    raise AssertionError(f"confluent-kafka: every one of {len(TORN_SEEDS)} runs valid ({seen}) through the external backend")
