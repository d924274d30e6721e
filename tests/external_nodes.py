"""Real stand-ins for an external cluster's nodes in tests, no Kafka needed: ``sleep`` processes as
brokers (driven by the inventory's ``process`` preset), their state read from ``/proc``, and an
inventory that names them."""

from __future__ import annotations

import os
import random
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from clusters.backends.external import inventory, lifecycle, transport


def proc_state(pid: int) -> str:
    """The kernel's state letter for ``pid`` (R, S, T, Z, ...; "" when it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return ""
    return stat.rsplit(")", 1)[1].split()[0]


def unique_sleep() -> str:
    """A ``sleep`` argument no other process on the machine has: its command line is the broker's pattern."""
    return f"{random.randint(100_000, 999_999)}.{os.getpid()}"


def pids_of(pattern: str) -> list[int]:
    r = subprocess.run(["pgrep", "-f", "--", pattern], capture_output=True, text=True, check=False)
    return [int(p) for p in r.stdout.split()]


@contextmanager
def sleepers(n: int) -> Iterator[list[str]]:
    """``n`` unique sleep arguments; every process running one is killed at the end."""
    args = [unique_sleep() for _ in range(n)]
    try:
        yield args
    finally:
        for a in args:
            for pid in pids_of(f"sleep {a}"):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


def local_inventory(tmp_path: Path, sleeps: list[str], control: str = "{local: {}}", extra: str = "",
                    ports: list[int] | None = None) -> Path:
    """An inventory of local nodes 1..n whose brokers are ``sleep <arg>`` processes."""
    lines = ["name: sleepers", "disposable: true", "nodes:"]
    for i, arg in enumerate(sleeps, 1):
        port = ports[i - 1] if ports else i
        lines += [f"  - id: {i}", "    host: 127.0.0.1", f"    listeners: {{client: \"127.0.0.1:{port}\"}}",
                  f"    control: {control}",
                  f"    broker: {{process: {{match: \"sleep {arg}\", start: \"exec sleep {arg}\"}}}}"]
    f = tmp_path / "inventory.yaml"
    f.write_text("\n".join(lines) + "\n" + extra)
    return f


def broker(node: inventory.ResolvedNode, known_hosts: Path) -> lifecycle.Broker:
    return lifecycle.Broker(node, transport.for_node(node, known_hosts), transport.control_for(node))
