"""SIGTERM to a pytest session with the plugin (a CI job cancelled, ``kill``) ends it as Ctrl-C does:
the session's fixtures are torn down, so its cluster is stopped, not left up for the next start to
reclaim (seen: a ``make test`` stopped by SIGTERM left three brokers, Toxiproxy and the wire proxy
running). A session fixture stands for the cluster here; its twin, a session started with SIGTERM
ignored (``nohup``-like), keeps ignoring it: the plugin replaces only Python's default."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from harness.base.wait import wait_until

SESSION = """
import pathlib, signal, time

import pytest

HERE = pathlib.Path(__file__).parent


@pytest.fixture(scope="session")
def cluster():
    yield
    (HERE / "torn-down").write_text("yes")


def test_long(cluster):
    (HERE / "started").write_text("yes")
    for _ in range(600):
        time.sleep(0.1)
"""


def _ignore_sigterm() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def _session(tmp_path: Path, sigterm_ignored: bool) -> subprocess.Popen[bytes]:
    (tmp_path / "test_session.py").write_text(SESSION)
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_session.py"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            preexec_fn=_ignore_sigterm if sigterm_ignored else None)
    wait_until(lambda: (tmp_path / "started").exists() or proc.poll() is not None, timeout=120,
               what="the inner session's test to start", state=lambda: f"exit {proc.poll()}")
    assert proc.poll() is None, proc.communicate()[0].decode()[-2000:]
    return proc


def test_sigterm_tears_the_session_down_as_ctrl_c_does(tmp_path: Path) -> None:
    proc = _session(tmp_path, sigterm_ignored=False)
    proc.send_signal(signal.SIGTERM)
    out = proc.communicate(timeout=120)[0].decode()
    assert (tmp_path / "torn-down").exists(), out[-2000:]
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out[-2000:]


def test_a_session_started_with_sigterm_ignored_keeps_ignoring_it(tmp_path: Path) -> None:
    proc = _session(tmp_path, sigterm_ignored=True)
    proc.send_signal(signal.SIGTERM)
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(timeout=3)  # still running: the plugin left the ignored SIGTERM alone
    proc.kill()
    proc.communicate(timeout=60)
    assert not (tmp_path / "torn-down").exists()
