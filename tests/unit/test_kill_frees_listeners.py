"""A killed server's listening sockets are free when ``procs.kill_hard`` returns, so the server
can be started again at once on the same addresses (the heal's restart of a frozen wire proxy).

SIGKILL makes a multi-threaded process's main thread a zombie at once, while another of its
threads may still be closing the process's sockets: with 21 links and a hundred connections the
wire proxy's listeners stayed bound for milliseconds after ``ps`` showed it a zombie (more on a
loaded machine), and a restart in that window failed with "address already in use". Real wire
proxy, real sockets, no cluster.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from clusters.backends import procs
from clusters.wire import kwire_build
from clusters.wire.wire_api import WireProxy
from harness.base.wait import wait_until

#: As many links as a cluster with faults between brokers gives its wire proxy (clusters/kafka/topology.py).
LINKS = 21
#: Connections open through it when it is killed (brokers, clients): each is two sockets to close.
CONNECTIONS = 300
#: Kills in a row.
ROUNDS = 6
NET = "127.31"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((f"{NET}.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def upstream() -> Iterator[tuple[str, list[socket.socket]]]:
    """A TCP server that accepts and keeps every connection (the brokers behind the proxy)."""
    srv = socket.create_server((f"{NET}.9.9", 0), backlog=1000)
    accepted: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                accepted.append(srv.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    host, port = srv.getsockname()[:2]
    yield f"{host}:{port}", accepted
    srv.close()
    for c in accepted:
        c.close()


def _bindable(addr: str) -> bool:
    """A listener can bind ``addr`` now, as the wire proxy's (Go sets SO_REUSEADDR)."""
    host, port = addr.rsplit(":", 1)
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, int(port)))
            s.listen(1)
            return True
        except OSError:
            return False


def _start(tmp_path: Path, listens: list[str], upstream: str, api: str) -> subprocess.Popen[bytes]:
    cmd = [str(kwire_build.build_kwire()), "-api", api, "-events", str(tmp_path / "events.jsonl")]
    cmd += [a for i, ln in enumerate(listens) for a in ("-link", f"l{i}={ln}={upstream}")]
    p = procs.spawn(cmd, tmp_path / "wire.log", cwd=tmp_path)
    wait_until(WireProxy(f"http://{api}").ping, timeout=20, what=f"the wire proxy's API at {api}",
               fatal=lambda: None if p.poll() is None else f"it exited: {procs.tail(tmp_path / 'wire.log')}")
    return p


def test_a_killed_wire_proxy_with_many_links_leaves_its_addresses_free(
        tmp_path: Path, upstream: tuple[str, list[socket.socket]]) -> None:
    up, accepted = upstream
    port = _free_port()
    listens = [f"{NET}.1.{i + 1}:{port}" for i in range(LINKS)]
    api = f"{NET}.0.253:{_free_port()}"
    for round_ in range(ROUNDS):
        p = _start(tmp_path, listens, up, api)
        before = len(accepted)
        clients = [socket.create_connection((f"{NET}.1.{i % LINKS + 1}", port), timeout=5) for i in range(CONNECTIONS)]
        wait_until(lambda before=before: len(accepted) - before >= CONNECTIONS, timeout=20,  # type: ignore[misc]
                   what=f"{CONNECTIONS} connections through the wire proxy to reach the upstream",
                   state=lambda before=before: f"{len(accepted) - before} reached it")  # type: ignore[misc]
        os.kill(p.pid, signal.SIGSTOP)  # frozen, as the heal test freezes it
        if round_ == 0:
            procs.kill_hard(p.pid, "wire proxy")  # what the heal's restart does
        else:
            # what kill_hard waits for, asked as often as it can be: the window is milliseconds,
            # and kill_hard's first look may fall before it (then it sees a clean exit)
            os.kill(p.pid, signal.SIGKILL)
            pid = p.pid
            wait_until(lambda pid=pid: not procs.alive(pid), timeout=10, interval=0, max_interval=0,  # type: ignore[misc]
                       what="the killed wire proxy to be reported gone")
        busy = [a for a in listens + [api] if not _bindable(a)]
        for c in clients:
            c.close()
        p.wait(10)
        assert busy == [], f"round {round_}: still bound once reported gone: {busy}"
