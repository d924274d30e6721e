"""The distribution's OpenSSH server on 127.0.0.1, started by a test with a host key and a client
key of its own (a temporary folder): the ``ssh`` transport of an external cluster is tested against
a real server, never a mock. Missing ``sshd``: installed from Debian's packages where we are root on
Debian (as the compose backend installs its engine: ``make test`` installs what it needs), else the
test is skipped, saying how to install it."""

from __future__ import annotations

import fcntl
import getpass
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

SSHD = Path("/usr/sbin/sshd")
#: sshd answers its first connection well within this long (key loading, no DNS: UseDNS is off).
SSHD_READY_S = 15.0


@dataclass(frozen=True)
class SshServer:
    port: int
    user: str
    key: Path  # the client key the server accepts
    other_key: Path  # a key it refuses
    known_hosts: Path  # the harness's known_hosts file for it (filled on first connect)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "eos-chaos-test", "-f", str(path)],
                   check=True, capture_output=True, timeout=30)


def _installed() -> bool:
    return SSHD.exists() and shutil.which("ssh-keygen") is not None and shutil.which("ssh") is not None


def _install_where_we_can() -> None:
    """Debian's OpenSSH server and client, where we are root on Debian; one installer at a time (the
    unit tests run on several xdist workers, and dpkg takes one)."""
    from clusters.backends.compose import engine

    if _installed() or not engine.debian_root():
        return
    with open("/tmp/eos-chaos-apt.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _installed():
            engine.apt_install(["openssh-server", "openssh-client"], "the ssh transport's tests")


@contextmanager
def local_sshd(folder: Path) -> Iterator[SshServer]:
    """An sshd on 127.0.0.1 that lets the current user in with ``SshServer.key`` only; stopped at the end."""
    _install_where_we_can()
    if not _installed():
        pytest.skip(f"{SSHD} is not installed (Debian: apt-get install openssh-server); the ssh transport is "
                    "tested against a real server only")
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("host", "client", "other"):
        _keygen(folder / name)
    (folder / "authorized_keys").write_text((folder / "client.pub").read_text())
    port = _free_port()
    config = folder / "sshd_config"
    config.write_text("\n".join([
        f"Port {port}", "ListenAddress 127.0.0.1", f"HostKey {folder / 'host'}", f"PidFile {folder / 'sshd.pid'}",
        f"AuthorizedKeysFile {folder / 'authorized_keys'}", "PasswordAuthentication no",
        "KbdInteractiveAuthentication no", "PubkeyAuthentication yes", "PermitRootLogin prohibit-password",
        "StrictModes no", "UsePAM no", "UseDNS no", "LogLevel ERROR",
        # the lighter key exchange: the default (sntrup761) costs ~2 s a connection on a loaded 2-core machine
        "KexAlgorithms curve25519-sha256,curve25519-sha256@libssh.org"]) + "\n")
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # its privilege separation folder, as its service makes
    log = (folder / "sshd.log").open("w")
    proc = subprocess.Popen([str(SSHD), "-D", "-e", "-f", str(config)], stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL)
    server = SshServer(port, getpass.getuser(), folder / "client", folder / "other", folder / "known_hosts")
    try:
        _wait_ready(server, proc, folder)
        yield server
    finally:
        proc.kill()
        proc.wait(timeout=10)
        log.close()


def _wait_ready(server: SshServer, proc: subprocess.Popen[bytes], folder: Path) -> None:
    deadline = time.monotonic() + SSHD_READY_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"sshd exited {proc.returncode}: {(folder / 'sshd.log').read_text()}")
        try:
            with socket.create_connection(("127.0.0.1", server.port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"sshd did not listen on 127.0.0.1:{server.port} within {SSHD_READY_S:g}s")
