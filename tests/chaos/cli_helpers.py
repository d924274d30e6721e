"""Running the real CLI in a subprocess, with a PATH of our choosing, and waiting on its output."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from clusters.backends import procs

CLI = str(Path(sys.executable).parent / "eos-chaos")


def started_here(env: dict[str, str]) -> list[procs.Tagged]:
    """Processes of ours still running that a test started with ``env`` (its own state folder, the
    ``iso_env`` fixture's): every process a run starts says its state folder (``procs.ENV_STATE``),
    so the session's cluster and another eos-chaos run up beside the suite are not counted."""
    folder = procs.same_folder(Path(env["EOS_CHAOS_STATE"]))
    return [t for t in procs.tagged_processes() if t.state == folder]


def run(args: list[str], env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, *args], env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def start(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    """The CLI running in the background, as a user's terminal would start it: Ctrl-C (SIGINT) on.
    A test session started in the background of a non-interactive shell (``cmd &``) inherits SIGINT
    ignored, and so would the CLI (Python keeps an ignored SIGINT ignored), which no user sees."""
    return subprocess.Popen([CLI, *args], env=env, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL, preexec_fn=sigint_on)


def sigint_on() -> None:
    """In a child before exec: SIGINT at its default, as at a terminal (see ``start``)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def path_with(tmp_path: Path, **tools: str | None) -> str:
    """A PATH holding only the named tools (value = real path, or a script body)."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    for name, target in tools.items():
        dest = bindir / name
        if target and target.startswith("#!"):
            dest.write_text(target)
            dest.chmod(0o755)
        elif target:
            dest.symlink_to(target)
    return str(bindir)


def wait_for_line(proc: subprocess.Popen[str], needle: str, timeout: float) -> list[str]:
    """Read the child's stderr until ``needle`` shows up (or it exits)."""
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    assert proc.stderr is not None
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line and proc.poll() is not None:
            break
        seen.append(line)
        if needle in line:
            return seen
    raise AssertionError(f"never saw {needle!r} from {proc.args}; got:\n{''.join(seen)}")
