"""``eos-chaos bench wire``: what the wire proxy adds to an untouched request, and to replication.

Many small round trips (Kafka ApiVersions v0, one at a time on one TCP connection, so each time is
one request's latency) through node 1's client link: client -> Toxiproxy -> wire proxy -> broker,
then the same with Toxiproxy's upstream pointed straight at the broker (the chain without the wire
proxy), then back. The order alternates between runs, so a drift of the machine does not always
favour one side. p50 and p99 of each side, and the p50 difference: the proxy's cost.

Replication (``replication``): records produced one at a time with ``acks=all`` to a topic of
replication factor 3, each awaited before the next, so each time is a produce plus the followers'
Fetch that brings the high watermark past it, over the links between brokers. With the wire proxy
on those links (every INTERNAL link's Toxiproxy upstream is its wire hop) and without (pointed
straight at the node), the order alternating as above.
"""

from __future__ import annotations

import socket
import statistics
import struct
import time
from collections.abc import Callable
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
    return timed_round_trips(addr, count, _request, "ApiVersions")[0]


def timed_round_trips(addr: str, count: int, request: Callable[[int], bytes],
                      what: str) -> tuple[list[float], bytes]:
    """``count`` round trips of ``request(correlation id)`` on one connection to ``addr``, one at a
    time, each in microseconds (after 50 that warm up the connection and the proxies), and the last answer."""
    host, port = addr.rsplit(":", 1)
    answer = b""
    with socket.create_connection((host, int(port)), timeout=TIMEOUT_S) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        times = []
        for corr in range(count + 50):
            t0 = time.perf_counter_ns()
            sock.sendall(request(corr))
            answer = _read_exact(sock, struct.unpack(">i", _read_exact(sock, 4))[0])
            took = (time.perf_counter_ns() - t0) / 1000
            if struct.unpack(">i", answer[:4])[0] != corr:
                raise HarnessError(f"{what} answer for correlation id {corr} carried another id")
            if corr >= 50:
                times.append(took)
    return times, answer


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)


def _toxiproxy_of(cluster: Cluster) -> Toxiproxy:
    """The cluster's Toxiproxy, whose proxies' upstreams the benches swap; an external cluster's links
    are not all proxies."""
    tox = cluster.toxiproxy
    if not isinstance(tox, Toxiproxy):
        raise ConfigError("the wire proxy's bench swaps a Toxiproxy proxy's upstream: it runs on the built-in backends")
    return tox


def bench(cluster: Cluster, count: int, run: int) -> dict[str, Any]:
    """One run: ``count`` round trips with and without the wire proxy in the chain."""
    addr = cluster.bootstrap.split(",")[0]
    specs = {s.name: s for s in cluster.proxy_specs()}
    through_wire = specs[LINK].upstream
    direct = cluster.wire.stats().links[LINK]["upstream"]
    tox = _toxiproxy_of(cluster)
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


#: Records produced before the timed ones on each side: Toxiproxy closed the links' connections when
#: their upstream changed, so the followers' fetch sessions start again first.
WARMUP_RECORDS = 30
#: A record not acknowledged within this is a broken cluster, not a slow one.
RECORD_TIMEOUT_S = 30.0


def _internal_links(cluster: Cluster) -> dict[str, tuple[str, str]]:
    """Every INTERNAL link between two brokers: (its wire hop, the node's socket)."""
    wire_links = cluster.wire.stats().links
    out = {s.name: (s.upstream, wire_links[s.name]["upstream"]) for s in cluster.proxy_specs()
           if s.name.endswith("-internal") and s.name in wire_links}
    if not out:
        raise ConfigError(f"the {cluster.backend} backend's wire proxy carries no link between brokers: the "
                          "replication bench needs the local backend")
    return out


def produce_times(cluster: Cluster, topic: str, count: int) -> list[float]:
    """``count`` records produced one at a time with acks=all, each awaited: milliseconds each."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 0, "enable.idempotence": True})
    failed: list[str] = []

    def done(err: Any, _msg: Any) -> None:
        if err is not None:
            failed.append(str(err))

    times = []
    for i in range(count + WARMUP_RECORDS):
        t0 = time.perf_counter_ns()
        p.produce(topic, f"r{i}".encode(), partition=0, on_delivery=done)
        if p.flush(RECORD_TIMEOUT_S) or failed:
            raise HarnessError(f"record {i} to {topic} not acknowledged within {RECORD_TIMEOUT_S:g}s: {failed}")
        if i >= WARMUP_RECORDS:
            times.append((time.perf_counter_ns() - t0) / 1e6)
    return times


def replication(cluster: Cluster, count: int, run: int) -> dict[str, Any]:
    """One run: ``count`` acks=all records with and without the wire proxy on the links between brokers."""
    from clusters.kafka.health import admin_client
    from harness.kafka.admin import create_topic

    links = _internal_links(cluster)
    topic = f"bench-replication-{run}"
    create_topic(admin_client(cluster.direct_bootstrap), topic, 1)
    tox = _toxiproxy_of(cluster)
    sides: dict[str, list[float]] = {}
    order = ["with", "without"] if run % 2 == 0 else ["without", "with"]
    try:
        for side in order:
            for name, (hop, node) in links.items():
                tox.set_upstream(name, hop if side == "with" else node)
            sides[side] = produce_times(cluster, topic, count)
    finally:
        for name, (hop, _) in links.items():
            tox.set_upstream(name, hop)
    out: dict[str, Any] = {"records": count, "order": order}
    for side, times in sides.items():
        out[f"repl_{side}_p50_ms"] = round(statistics.median(times), 3)
        out[f"repl_{side}_mean_ms"] = round(statistics.fmean(times), 3)
    out["repl_added_p50_ms"] = round(out["repl_with_p50_ms"] - out["repl_without_p50_ms"], 3)
    return out
