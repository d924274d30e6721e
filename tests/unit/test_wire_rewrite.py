"""Broker address rewriting on the real wire proxy binary (no Kafka): a broker stand-in answers with
the bytes Kafka's own classes wrote (kwire/testdata/responses), the proxy started with
``Advertised.args()`` hands the client the proxy's addresses, and the Python API reads its map and
counters. The Go tests check every API and version; these check the flags and the API end to end."""

from __future__ import annotations

import socket
import struct
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from clusters.wire import kwire_build
from clusters.wire.wire_api import Advertised, RewriteCounts, WireProxy

#: the map GenResponses.java wrote the wanted responses with
MAP = Advertised.of({1: "127.0.0.1:39092", 2: "127.0.0.1:39094", 3: "127.0.0.1:39096"})


def _fixture(name: str) -> tuple[bytes, bytes]:
    read = lambda suffix: bytes.fromhex((kwire_build.FIXTURES / f"{name}.{suffix}.hex").read_text().strip())  # noqa: E731
    return read("in"), read("want")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _read_frame(sock: socket.socket) -> bytes:
    data = b""
    while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"closed after {len(data)} bytes")
        data += chunk
    return data


def _broker(answers: dict[int, bytes]) -> Iterator[str]:
    """A stand-in broker: each request answered with answers[api key], its correlation id put in."""
    ln = socket.create_server(("127.0.0.1", 0))

    def serve(c: socket.socket) -> None:
        with c:
            while True:
                try:
                    req = _read_frame(c)
                except (ConnectionError, OSError):
                    return
                key, corr = struct.unpack(">h", req[4:6])[0], req[8:12]
                c.sendall(answers[key][:4] + corr + answers[key][8:])

    def accept() -> None:
        while True:
            try:
                c, _ = ln.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(c,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    yield f"127.0.0.1:{ln.getsockname()[1]}"
    ln.close()


@pytest.fixture(scope="module")
def kwire() -> Path:
    return kwire_build.build_kwire()


def _start(kwire: Path, upstream: str, tmp: Path, extra: list[str]) -> tuple[subprocess.Popen[bytes], str, WireProxy]:
    listen, api = f"127.0.0.1:{_free_port()}", f"127.0.0.1:{_free_port()}"
    proc = subprocess.Popen([str(kwire), "-api", api, "-events", str(tmp / "wire.log"),
                             "-link", f"client-to-n1={listen}={upstream}", *extra], stderr=subprocess.PIPE)
    wire = WireProxy(f"http://{api}")
    for _ in range(200):
        if wire.ping():
            return proc, listen, wire
        threading.Event().wait(0.05)
    proc.kill()
    raise AssertionError(f"kwire did not answer: {proc.stderr.read() if proc.stderr else ''!r}")


def _ask(addr: str, key: int, version: int, corr: int) -> bytes:
    host, port = addr.rsplit(":", 1)
    header = struct.pack(">hhih", key, version, corr, 1) + b"t" + b"\x00"  # client id "t", empty tags
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(struct.pack(">i", len(header)) + header)
        return _read_frame(s)


def test_a_rewriting_proxy_hands_out_its_own_addresses_and_reports_a_broker_outside_its_map(
        kwire: Path, tmp_path: Path) -> None:
    meta_in, meta_want = _fixture("metadata-3-v12")
    fetch_in, fetch_want = _fixture("fetch-1-v17")  # names node 9, not in the map
    gen = _broker({3: meta_in, 1: fetch_in})
    proc, listen, wire = _start(kwire, next(gen), tmp_path, MAP.args())
    try:
        assert _ask(listen, 3, 12, 0x01020304) == meta_want
        assert _ask(listen, 1, 17, 0x01020304) == fetch_want
        stats = wire.stats()
        assert stats.advertise == {1: "127.0.0.1:39092", 2: "127.0.0.1:39094", 3: "127.0.0.1:39096"}
        assert stats.rewrite == {"client-to-n1": RewriteCounts(rewritten=2, unmapped=1)}
        problems = wire.rewrite_problems()
        assert len(problems) == 1 and "outside the address map" in problems[0]
        assert '"event":"unmapped-broker"' in (tmp_path / "wire.log").read_text()
    finally:
        proc.kill()
        proc.wait()
        next(gen, None)


def test_without_a_map_the_proxy_passes_the_broker_s_addresses(kwire: Path, tmp_path: Path) -> None:
    meta_in, _ = _fixture("metadata-3-v12")
    gen = _broker({3: meta_in})
    proc, listen, wire = _start(kwire, next(gen), tmp_path, [])
    try:
        assert _ask(listen, 3, 12, 0x01020304) == meta_in
        assert wire.stats().advertise == {} and wire.rewrite_problems() == []
    finally:
        proc.kill()
        proc.wait()
        next(gen, None)


@pytest.mark.parametrize("flag", ["1=nohost", "x=127.0.0.1:1", "1=127.0.0.1:0"])
def test_a_bad_advertise_flag_exits_2_naming_it(kwire: Path, tmp_path: Path, flag: str) -> None:
    proc = subprocess.run([str(kwire), "-api", f"127.0.0.1:{_free_port()}", "-link",
                           f"client-to-n1=127.0.0.1:{_free_port()}=127.0.0.1:1", "-advertise", flag],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2 and f"-advertise {flag!r}".replace("'", '"') in proc.stderr


@pytest.mark.parametrize("nodes", [{1: "127.0.0.1"}, {-1: "h:1"}, {1: "h:0"}, {1: ":9092"}, {1: "h:65536"}])
def test_a_bad_map_is_refused_in_python(nodes: dict[int, str]) -> None:
    with pytest.raises(ValueError, match="advertised address"):
        Advertised.of(nodes)


def test_the_map_becomes_the_proxy_s_flags() -> None:
    assert Advertised.of({2: "127.0.0.1:39094", 1: "127.0.0.1:39092"}).args() == [
        "-advertise", "1=127.0.0.1:39092", "-advertise", "2=127.0.0.1:39094"]
