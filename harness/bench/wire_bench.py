"""``eos-chaos bench wire``: what the wire proxy adds to an untouched request.

Many small round trips (Kafka ApiVersions v0, one at a time on one TCP connection, so each time is
one request's latency) through node 1's client link: client -> Toxiproxy -> wire proxy -> broker,
then the same with Toxiproxy's upstream pointed straight at the broker (the chain without the wire
proxy), then back. The order alternates between runs, so a drift of the machine does not always
favour one side. p50 and p99 of each side, and the p50 difference: the proxy's cost.
"""

from __future__ import annotations

import socket
import statistics
import struct
import time
from typing import Any

from clusters.backends.protocol import Cluster
from clusters.toxiproxy.toxiproxy_api import Toxiproxy
from harness.base.errors import ConfigError, HarnessError

LINK = "client-to-n1"
#: ApiVersions v0: header v1 (api key 18, version 0, correlation id, client id), empty body.
CLIENT_ID = b"eos-bench"
TIMEOUT_S = 5.0


def _request(corr: int) -> bytes:
    body = struct.pack(">hhih", 18, 0, corr, len(CLIENT_ID)) + CLIENT_ID
    return struct.pack(">i", len(body)) + body


def _read_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise HarnessError(f"the broker closed the connection after {len(buf)} of {n} bytes")
        buf += chunk
    return bytes(buf)


def round_trips(addr: str, count: int) -> list[float]:
    """``count`` ApiVersions round trips on one connection to ``addr``, each in microseconds."""
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=TIMEOUT_S) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        times = []
        for corr in range(count + 50):
            t0 = time.perf_counter_ns()
            sock.sendall(_request(corr))
            size = struct.unpack(">i", _read_exact(sock, 4))[0]
            answer = _read_exact(sock, size)
            took = (time.perf_counter_ns() - t0) / 1000
            if struct.unpack(">i", answer[:4])[0] != corr:
                raise HarnessError(f"ApiVersions answer for correlation id {corr} carried another id")
            if corr >= 50:  # the first 50 warm up the connection and both proxies
                times.append(took)
        return times


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)


def bench(cluster: Cluster, count: int, run: int) -> dict[str, Any]:
    """One run: ``count`` round trips with and without the wire proxy in the chain."""
    addr = cluster.bootstrap.split(",")[0]
    specs = {s.name: s for s in cluster.proxy_specs()}
    through_wire = specs[LINK].upstream
    direct = cluster.wire.stats().links[LINK]["upstream"]
    tox = cluster.toxiproxy
    if not isinstance(tox, Toxiproxy):  # an external cluster's links are not all proxies
        raise ConfigError("the wire proxy's bench swaps a Toxiproxy proxy's upstream: it runs on the built-in backends")
    sides: dict[str, list[float]] = {}
    order = ["with", "without"] if run % 2 == 0 else ["without", "with"]
    try:
        for side in order:
            tox.set_upstream(LINK, through_wire if side == "with" else direct)
            sides[side] = round_trips(addr, count)
    finally:
        tox.set_upstream(LINK, through_wire)
    return sides_summary(count, order, sides)


def sides_summary(count: int, order: list[str], sides: dict[str, list[float]]) -> dict[str, Any]:
    """p50, p99 and mean of each side's round trips, and what "with" adds to "without"."""
    out: dict[str, Any] = {"round_trips": count, "order": order}
    for side, times in sides.items():
        out[f"{side}_p50_us"] = _pct(times, 0.5)
        out[f"{side}_p99_us"] = _pct(times, 0.99)
        out[f"{side}_mean_us"] = round(statistics.fmean(times), 1)
    out["added_p50_us"] = round(out["with_p50_us"] - out["without_p50_us"], 1)
    out["added_p99_us"] = round(out["with_p99_us"] - out["without_p99_us"], 1)
    return out
