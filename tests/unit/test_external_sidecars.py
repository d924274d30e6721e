"""The proxies the external backend runs in front of a cluster, as real processes without Kafka: the
real Toxiproxy and wire proxy binaries, started by ``Sidecars`` from an ``ExternalPlan`` (one port of
each per broker on 127.0.0.1, node ids of any size), tagged as the cluster's, and stopped with
nothing left. The wire proxy is given the address map that turns its rewriting on."""

from __future__ import annotations

import os
import socket
import uuid
from pathlib import Path

from clusters.backends import procs
from clusters.backends.artifacts import build_servers
from clusters.backends.external.proxy_plan import ExternalPlan
from clusters.backends.sidecars import Sidecars

#: Clear of every cluster's ports (19092, 19192, 19592, 29092, 31092 and the APIs below them).
PORT_BASE = 45092


def test_the_proxies_listen_per_broker_carry_the_address_map_and_stop_cleanly(tmp_path: Path) -> None:
    tox_bin, kwire_bin = build_servers()
    plan = ExternalPlan(((1, "127.0.0.1:1"), (70, "127.0.0.1:2")), PORT_BASE)
    cid = f"test-sidecars-{uuid.uuid4().hex[:8]}"
    side = Sidecars(tmp_path, lambda: procs.tags(cid, os.getpid()), lambda: cid)
    procs.check_free(plan.all_binds())
    try:
        wire = side.start_wire(kwire_bin, plan.wire_api, plan.wire_hops(), plan.advertised())
        tox = side.start_toxiproxy(tox_bin, "127.0.0.1", plan.api_port, plan.proxy_specs())
        proxies = tox.proxies()
        assert {n: (p["listen"], p["upstream"]) for n, p in proxies.items()} == {
            "client-to-n1": (f"127.0.0.1:{PORT_BASE}", f"127.0.0.1:{PORT_BASE + 1}"),
            "client-to-n70": (f"127.0.0.1:{PORT_BASE + 2}", f"127.0.0.1:{PORT_BASE + 3}")}
        assert wire.stats().advertise == {1: f"127.0.0.1:{PORT_BASE}", 70: f"127.0.0.1:{PORT_BASE + 2}"}
        assert plan.bootstrap == f"127.0.0.1:{PORT_BASE},127.0.0.1:{PORT_BASE + 2}"
        with socket.create_connection(("127.0.0.1", PORT_BASE), timeout=5):
            pass  # Toxiproxy accepts on the broker's port
        assert side.is_ours(side.tox_pid) and side.is_ours(side.wire_pid)
        assert {t.pid for t in procs.tagged_processes() if t.cluster_id == cid} == {side.tox_pid, side.wire_pid}
    finally:
        side.stop()
    assert [t for t in procs.tagged_processes() if t.cluster_id == cid] == []
    assert not side.is_ours(side.tox_pid) and not side.is_ours(side.wire_pid)
    procs.check_free(plan.all_binds())  # every port free again
