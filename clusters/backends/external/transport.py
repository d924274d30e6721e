"""A command on a node of an external cluster, through what its inventory says reaches it: the
machine the harness runs on (``local``), ``ssh``, ``docker exec`` or ``kubectl exec`` (Jepsen's
control layer). Every call has a deadline; a failure names the node, the command, its exit code and
its last output. ``DryRun`` prints what would run instead of running it.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TextIO

from clusters.backends.external.inventory import NodeControl, ResolvedNode
from harness.base.errors import ClusterError, EnvironmentProblem

#: A node command's deadline unless its caller gives one: a signal, a status read, a systemctl call
#: take well under a second; ssh's own connect timeout (SSH_CONNECT_TIMEOUT_S) is inside it.
COMMAND_TIMEOUT_S = 30.0
#: ssh gives up connecting after this long: an unreachable node is said in seconds, not minutes.
SSH_CONNECT_TIMEOUT_S = 5
#: After a deadline the process group is killed; its pipes must close within this long, else a
#: process it started outside its group (a broker started without redirecting its output) holds them.
PIPES_CLOSE_S = 5.0
#: How much of a failed command's output its error quotes (its last lines).
TAIL_CHARS = 600


@dataclass(frozen=True)
class Ran:
    """What a command did: its exit code, output and how long it took."""

    rc: int
    out: str
    err: str
    argv: tuple[str, ...]
    seconds: float


class NodeCommandError(ClusterError):
    """A command on a node failed, did not finish in time, or could not be sent."""

    def __init__(self, where: str, script: str, message: str, rc: int | None = None, output: str = "") -> None:
        self.where, self.script, self.rc, self.output = where, script, rc, output
        tail = output.strip()[-TAIL_CHARS:]
        super().__init__(f"{where}: `{_short(script)}` {message}" + (f": {tail}" if tail else ""))


def _short(script: str, width: int = 160) -> str:
    one = " ".join(script.split())
    return one if len(one) <= width else one[:width - 3] + "..."


class Transport(Protocol):
    """How a node's commands run."""

    @property
    def where(self) -> str:
        """The node in messages: ``node 2 (ssh kafka@10.0.0.12)``."""
        ...

    def argv(self, script: str) -> list[str]:
        """Exactly what would run for ``script`` (a POSIX sh script): what ``--dry-run`` prints."""
        ...

    def run(self, script: str, timeout: float = COMMAND_TIMEOUT_S, check: bool = True) -> Ran:
        """``script`` run to its end within ``timeout`` seconds; NodeCommandError when it cannot be
        sent or runs past the deadline, and, with ``check``, when it exits non-zero."""
        ...


@dataclass
class CommandTransport:
    """A transport that runs an argv on this machine: every kind is one, with its own ``prefix``
    (``ssh ... --``, ``docker exec C``, ``kubectl exec``) and the script as the last argument(s)."""

    where: str
    prefix: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    remote_shell: bool = False  # ssh: the remote side joins the arguments into one shell command line
    sudo: bool = False

    def argv(self, script: str) -> list[str]:
        shell = ["sudo", "-n", "sh", "-c", script] if self.sudo else ["sh", "-c", script]
        if self.remote_shell:
            return [*self.prefix, shlex.join(shell)]
        return [*self.prefix, *shell]

    def run(self, script: str, timeout: float = COMMAND_TIMEOUT_S, check: bool = True) -> Ran:
        argv = self.argv(script)
        t0 = time.monotonic()
        try:
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True, errors="replace", start_new_session=True,
                                 env={**os.environ, **self.env} if self.env else None)
        except FileNotFoundError:
            raise EnvironmentProblem(f"{self.where}: cannot run `{argv[0]}`: it is not installed on this machine "
                                     "(the inventory's control for this node needs it)") from None
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            out, err = _kill_group(p)
            raise NodeCommandError(self.where, script, f"did not finish within {timeout:g}s (killed)",
                                   output=out + err) from None
        ran = Ran(p.returncode, out, err, tuple(argv), time.monotonic() - t0)
        if check and ran.rc != 0:
            raise NodeCommandError(self.where, script, f"exited {ran.rc}", ran.rc, output=err.strip() or out)
        return ran


def _kill_group(p: subprocess.Popen[str]) -> tuple[str, str]:
    """Kill a command past its deadline, and everything it started in its group; what it wrote."""
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        return p.communicate(timeout=PIPES_CLOSE_S)
    except subprocess.TimeoutExpired:
        p.kill()
        return "", ("(its output is still held open by a process it started outside its process group: a "
                    "command that starts a broker must redirect its output)")


def local(where: str = "the control host", env: dict[str, str] | None = None) -> CommandTransport:
    """Commands on the machine the harness runs on: ``sh -c SCRIPT``."""
    return CommandTransport(where, env=env or {})


def ssh(where: str, host: str, user: str, key: Path, port: int = 22, known_hosts: Path | None = None,
        strict: bool = False, sudo: bool = False) -> CommandTransport:
    """Commands over ssh, never asking for a password or a host key confirmation."""
    prefix = ("ssh", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={SSH_CONNECT_TIMEOUT_S}",
              "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=2", "-o", "IdentitiesOnly=yes",
              "-o", f"StrictHostKeyChecking={'yes' if strict else 'accept-new'}",
              *(("-o", f"UserKnownHostsFile={known_hosts}") if known_hosts else ()),
              "-o", "LogLevel=ERROR", "-i", str(key), "-p", str(port), "-l", user, host, "--")
    return CommandTransport(where, prefix, remote_shell=True, sudo=sudo)


def for_node(node: ResolvedNode, known_hosts: Path) -> CommandTransport:
    """The transport that reaches ``node``; ``known_hosts``: the harness's own file for ssh host keys
    when the inventory names none (new hosts are accepted once, then held to their key)."""
    return _for_control(node.control, node.where, known_hosts)


def _for_control(c: NodeControl, where: str, known_hosts: Path) -> CommandTransport:
    if c.ssh is not None:
        s = c.ssh
        return ssh(where, s.host, s.user, s.key, s.port, s.known_hosts or known_hosts, strict=s.known_hosts is not None,
                   sudo=s.sudo)
    if c.docker is not None:
        env = {"DOCKER_HOST": c.docker.docker_host} if c.docker.docker_host else {}
        return CommandTransport(where, ("docker", "exec", c.docker.container), env=env)
    if c.kubectl is not None:
        k = c.kubectl
        prefix = ("kubectl", *(("--context", k.context) if k.context else ()), "-n", k.namespace, "exec", k.pod,
                  *(("-c", k.container) if k.container else ()), "--")
        return CommandTransport(where, prefix)
    return local(where)


def control_for(node: ResolvedNode) -> CommandTransport:
    """The control host's transport for ``node``'s ``on: control`` commands (its DOCKER_HOST, if any)."""
    docker = node.control.docker
    return local(f"{node.where} via the control host",
                 {"DOCKER_HOST": docker.docker_host} if docker and docker.docker_host else None)


@dataclass
class DryRun:
    """A transport that prints what it would run, and runs nothing: ``--dry-run``. Every call
    answers rc 0 with ``answer`` as its output (a status read says the node is up)."""

    inner: CommandTransport
    stream: TextIO = field(default_factory=lambda: sys.stdout)
    answer: Callable[[str], str] = lambda script: ""
    seen: list[tuple[str, ...]] = field(default_factory=list)

    @property
    def where(self) -> str:
        return self.inner.where

    def argv(self, script: str) -> list[str]:
        return self.inner.argv(script)

    def run(self, script: str, timeout: float = COMMAND_TIMEOUT_S, check: bool = True) -> Ran:
        argv = tuple(self.argv(script))
        self.seen.append(argv)
        env = "".join(f"{k}={shlex.quote(v)} " for k, v in self.inner.env.items())
        print(f"[dry-run] {self.where}: {env}{shlex.join(argv)}", file=self.stream)
        return Ran(0, self.answer(script), "", argv, 0.0)
