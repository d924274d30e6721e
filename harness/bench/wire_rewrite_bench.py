"""``eos-chaos bench wire --rewrite``: what broker address rewriting (docs/WIRE-FAULTS.md, Address
rewriting) adds to a response that carries addresses.

Two wire proxies of the current source, started here, each with one link straight to node 1's client
socket: one rewrites (``-advertise`` for every node, to addresses unlike the brokers' own, so every
broker entry is replaced), one does not. Metadata v12 round trips (no topics: the answer is the
brokers, every byte of it walked) one at a time on one connection through each, the order alternating
between runs. p50 and p99 of each side, and the p50 difference: the rewrite's cost per response.
The Go benchmark (``go test -bench Rewrite`` in clusters/wire/kwire) gives the walk alone for
Produce and Fetch.
"""

from __future__ import annotations

import socket
import struct
import time
from pathlib import Path
from typing import Any

from clusters.backends import procs
from clusters.backends.protocol import Cluster
from clusters.wire import kwire_build
from clusters.wire.wire_api import Advertised, WireProxy
from harness.base.errors import HarnessError
from harness.bench.wire_bench import LINK, sides_summary, timed_round_trips

#: Metadata v12, request header v2 (client id, empty tags); body: no topics (compact array of 0),
#: no auto-creation, no authorized operations, empty tags.
CLIENT_ID = b"eos-bench"
START_TIMEOUT_S = 10.0


def _request(corr: int) -> bytes:
    body = struct.pack(">hhih", 3, 12, corr, len(CLIENT_ID)) + CLIENT_ID + b"\x00" + b"\x01\x00\x00\x00"
    return struct.pack(">i", len(body)) + body


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start_proxy(run_dir: Path, name: str, upstream: str, advertise: Advertised | None) -> tuple[Any, str]:
    """A wire proxy with one link to ``upstream``; returns (process, the link's listen address)."""
    listen, api = f"127.0.0.1:{_free_port()}", f"127.0.0.1:{_free_port()}"
    cmd = [str(kwire_build.build_kwire()), "-api", api, "-events", str(run_dir / f"{name}-events.log"),
           "-link", f"{LINK}={listen}={upstream}", *(advertise.args() if advertise else [])]
    proc = procs.spawn(cmd, run_dir / f"{name}.log", run_dir)
    wire = WireProxy(f"http://{api}")
    deadline = time.monotonic() + START_TIMEOUT_S
    while not wire.ping():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise HarnessError(f"the bench's wire proxy {name} did not start; see {run_dir / f'{name}.log'}")
        time.sleep(0.05)
    return proc, listen


def bench_rewrite(cluster: Cluster, run_dir: Path, count: int, run: int) -> dict[str, Any]:
    """One run: ``count`` Metadata round trips through a rewriting and a plain proxy."""
    run_dir.mkdir(parents=True, exist_ok=True)
    upstream = cluster.wire.stats().links[LINK]["upstream"]
    advertise = Advertised.of({n: f"127.0.0.1:{40000 + n}" for n in cluster.topology.node_ids})
    started = [_start_proxy(run_dir, "rewrite", upstream, advertise), _start_proxy(run_dir, "plain", upstream, None)]
    addrs = {"with": started[0][1], "without": started[1][1]}
    sides: dict[str, list[float]] = {}
    order = ["with", "without"] if run % 2 == 0 else ["without", "with"]
    try:
        for side in order:
            sides[side], answer = timed_round_trips(addrs[side], count, _request, "Metadata")
            if side == "with" and b"127.0.0.1" not in answer:
                raise HarnessError("the rewriting proxy's Metadata answer does not name its addresses")
    finally:
        for proc, _ in started:
            proc.kill()
            proc.wait()
    return {**sides_summary(count, order, sides), "api": "Metadata v12"}
