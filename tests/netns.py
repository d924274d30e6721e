"""Throwaway network namespaces for tests of iptables and tc rules: never the host's own namespace
(other runs share its loopback). Each namespace has only its loopback, up; the tests put a TCP echo
listener on one of its 127.x addresses and connect to it from inside the namespace."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from clusters.backends.external.transport import CommandTransport

_COUNT = itertools.count()

ECHO = """
import socket, sys, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(64); print("ready", flush=True)
def serve(c):
    with c:
        while (b := c.recv(65536)):
            c.sendall(b[:1])
while True:
    threading.Thread(target=serve, args=(s.accept()[0],), daemon=True).start()
"""

CLIENT = """
import socket, sys, time
ip, port, timeout, size = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
t0 = time.monotonic()
try:
    c = socket.create_connection((ip, port), timeout=timeout)
    c.sendall(b"x" * size); c.shutdown(socket.SHUT_WR)
    got = c.recv(1)
    while c.recv(65536):
        pass
    print("ok" if got else "closed", round(time.monotonic() - t0, 3))
except socket.timeout:
    print("timeout", round(time.monotonic() - t0, 3))
except ConnectionRefusedError:
    print("refused", round(time.monotonic() - t0, 3))
except ConnectionResetError:
    print("reset", round(time.monotonic() - t0, 3))
"""


def usable() -> str | None:
    """Why network namespaces cannot be made here (None: they can)."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    missing = [t for t in ("ip", "iptables", "tc") if shutil.which(t) is None]
    return f"not installed: {', '.join(missing)}" if missing else None


@contextmanager
def netns() -> Iterator[str]:
    """A new network namespace ``eosc-test-<pid>-<n>`` with its loopback up; deleted at the end."""
    why = usable()
    if why:
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)
    name = f"eosc-test-{os.getpid()}-{next(_COUNT)}"
    subprocess.run(["ip", "netns", "add", name], check=True, capture_output=True)
    try:
        subprocess.run(["ip", "netns", "exec", name, "ip", "link", "set", "lo", "up"], check=True, capture_output=True)
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False, capture_output=True)


def sh(ns: str, script: str) -> subprocess.CompletedProcess[str]:
    """``script`` run inside ``ns``."""
    return subprocess.run(["ip", "netns", "exec", ns, "sh", "-c", script], capture_output=True, text=True, timeout=60,
                          check=False)


def transport_in(ns: str, where: str = "node 1 (netns)") -> CommandTransport:
    """A node transport whose commands run inside ``ns``."""
    return CommandTransport(where, ("ip", "netns", "exec", ns))


@contextmanager
def echo_listener(ns: str, ip: str, port: int) -> Iterator[None]:
    """A TCP listener on ``ip:port`` inside ``ns`` answering each connection's data with one byte."""
    p = subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-c", ECHO, ip, str(port)],
                         stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        yield
    finally:
        p.kill()
        p.wait()


def connect(ns: str, ip: str, port: int, timeout: float = 1.0, size: int = 1) -> tuple[str, float]:
    """What a connection from inside ``ns`` to ``ip:port`` sending ``size`` bytes met: ok, timeout,
    refused, reset; and the seconds it took."""
    r = subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-c", CLIENT, ip, str(port), str(timeout), str(size)],
                       capture_output=True, text=True, timeout=timeout * 4 + 60, check=False)
    word, seconds = (r.stdout.split() + ["error:" + r.stderr.strip()[-200:], "0"])[:2]
    return word, float(seconds)


def wait_gone(ns: str, timeout: float = 5.0) -> None:
    """Until ``ns`` is no longer listed."""
    end = time.monotonic() + timeout
    while ns in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False).stdout:
        if time.monotonic() > end:
            raise AssertionError(f"network namespace {ns} still there")
        time.sleep(0.1)
