"""What kill -9, SIGSTOP, SIGCONT, stop, start and a status read run for one broker of an external
cluster: from its inventory's preset (a systemd service, a process found by pattern, the node's
container driven from the control host) with any action replaced by the inventory's own command.

A container whose broker is PID 1 ignores signals sent from inside it and cannot be ``docker exec``ed
once stopped, so the docker preset runs every action on the control host (``docker kill -s KILL``,
``docker pause``, ``docker start``).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from clusters.backends.external import chaos_mesh
from clusters.backends.external.inventory import ACTIONS, Action, NodeCommand, ResolvedNode
from clusters.backends.external.transport import Ran, Transport
from clusters.backends.protocol import NodeState
from harness.base.errors import ClusterError
from harness.base.wait import wait_until

#: How long each action may take on the node. stop: a broker's controlled shutdown moves its
#: leaderships first (the local backend allows 60 s before SIGKILL; the command's own wait is that).
ACTION_TIMEOUT_S: dict[Action, float] = {"kill": 30.0, "stop": 90.0, "pause": 30.0, "resume": 30.0, "start": 60.0,
                                         "status": 30.0}
#: The process preset's stop: SIGTERM, then this many tenths of a second for the broker to exit, then SIGKILL.
STOP_WAIT_TENTHS = 600
#: Words a status command may print (besides a ``ps -o stat=`` state), and what they mean.
STATE_WORDS = {"up": NodeState.UP, "running": NodeState.UP, "active": NodeState.UP,
               "paused": NodeState.PAUSED, "stopped": NodeState.PAUSED,
               "down": NodeState.DOWN, "exited": NodeState.DOWN, "dead": NodeState.DOWN, "created": NodeState.DOWN,
               "inactive": NodeState.DOWN, "failed": NodeState.DOWN, "removing": NodeState.DOWN,
               "restarting": NodeState.DOWN}

#: ``ps -o stat=``: a state letter (T, t: stopped; X, Z: gone; else running), then modifiers.
PS_STAT = re.compile(r"[DIRSTtWXZ][<NLsl+]*")


def _hidden(text: str) -> str:
    """``text`` as a shell word that prints it (``$(printf '\\153...')``) without being on the command
    line: ``pgrep -f PATTERN`` would otherwise find the shell (and ssh's) that runs it."""
    return "\"$(printf '" + "".join(f"\\{b:03o}" for b in text.encode()) + "')\""


def _process_commands(match: str, start: str | None) -> dict[Action, NodeCommand]:
    pids = f"m={_hidden(match)}; pids=$(pgrep -f -- \"$m\")"
    need = "[ -n \"$pids\" ] || { echo \"no process matches the inventory's pattern\" >&2; exit 1; }"
    wait = (f"i=0; while kill -0 $pids 2>/dev/null && [ $i -lt {STOP_WAIT_TENTHS} ]; do sleep 0.1; i=$((i+1)); done; "
            "kill -KILL $pids 2>/dev/null; true")
    out: dict[Action, NodeCommand] = {
        "kill": NodeCommand(run=f"{pids}; {need}; kill -KILL $pids"),
        "stop": NodeCommand(run=f"{pids}; [ -n \"$pids\" ] || exit 0; kill -CONT $pids; kill -TERM $pids; {wait}"),
        "pause": NodeCommand(run=f"{pids}; {need}; kill -STOP $pids"),
        "resume": NodeCommand(run=f"{pids}; [ -z \"$pids\" ] || kill -CONT $pids"),
        "status": NodeCommand(run=f"{pids}; [ -n \"$pids\" ] || {{ echo down; exit 0; }}; "
                                  "for p in $pids; do ps -o stat= -p $p || echo down; done"),
    }
    if start:  # detached, its output away from ours: the command returns while the broker runs
        out["start"] = NodeCommand(run=f"setsid sh -c {shlex.quote(start)} </dev/null >/dev/null 2>&1 &")
    return out


def _service_commands(unit: str) -> dict[Action, NodeCommand]:
    u = shlex.quote(unit)
    return {
        "kill": NodeCommand(run=f"systemctl kill -s KILL {u}"),
        "stop": NodeCommand(run=f"systemctl kill -s CONT {u}; systemctl stop {u}"),
        "pause": NodeCommand(run=f"systemctl kill -s STOP {u}"),
        "resume": NodeCommand(run=f"systemctl kill -s CONT {u}"),
        "start": NodeCommand(run=f"systemctl start {u}"),
        "status": NodeCommand(run=f"pid=$(systemctl show -p MainPID --value {u}); "
                                  "if [ \"${pid:-0}\" = 0 ]; then echo down; else ps -o stat= -p \"$pid\" || echo down; fi"),
    }


def _docker_commands(container: str) -> dict[Action, NodeCommand]:
    c = shlex.quote(container)
    paused = f"[ \"$(docker inspect -f '{{{{.State.Paused}}}}' {c})\" = true ]"
    return {
        "kill": NodeCommand(run=f"docker kill -s KILL {c}", on="control"),
        "stop": NodeCommand(run=f"! {paused} || docker unpause {c}; docker stop -t 60 {c}", on="control"),
        "pause": NodeCommand(run=f"docker pause {c}", on="control"),
        "resume": NodeCommand(run=f"! {paused} || docker unpause {c}", on="control"),
        "start": NodeCommand(run=f"docker start {c}", on="control"),
        "status": NodeCommand(run=f"docker inspect -f '{{{{.State.Status}}}}' {c}", on="control"),
    }


#: The tag a dry run's Chaos Mesh resources carry (a run's is its pid and start: external_cluster.py).
DRY_RUN_TAG = "dryrun"


def _chaos_mesh_commands(node: ResolvedNode, tag: str) -> dict[Action, NodeCommand]:
    """The pod's StatefulSet makes it again after a kill or a stop: ``start`` has nothing to do but
    let the caller wait for the status to say up. No pause and resume: Chaos Mesh has no SIGSTOP
    action, and ``kill -STOP 1`` through kubectl exec does not stop a broker that is its container's
    PID 1 (the kernel drops SIGSTOP sent to a namespace's init from inside it)."""
    k = node.control.kubectl
    assert k is not None  # the inventory refuses the preset without a kubectl control
    return {
        "kill": NodeCommand(run=chaos_mesh.kill_script(tag, node), on="control"),
        "stop": NodeCommand(run=chaos_mesh.stop_script(k), on="control"),
        "start": NodeCommand(run=": the pod's StatefulSet makes it again", on="control"),
        "status": NodeCommand(run=chaos_mesh.status_script(k), on="control"),
    }


#: Why the chaos_mesh preset takes no pause (a refusal says it; _chaos_mesh_commands says more).
CHAOS_MESH_NO_PAUSE = ("the chaos_mesh preset has no pause: Chaos Mesh has no SIGSTOP action, and `kill -STOP 1` "
                       "through kubectl exec does not stop a broker that is its container's PID 1; give "
                       "`commands.pause` and `commands.resume` if yours is not")


def why_not(node: ResolvedNode) -> dict[str, str]:
    """Why ``node``'s preset cannot take an action the inventory gives no command for, where it says."""
    if node.broker.chaos_mesh:
        return {a: CHAOS_MESH_NO_PAUSE for a in ("pause", "resume") if a not in node.broker.commands}
    return {}


def node_commands(node: ResolvedNode, tag: str = DRY_RUN_TAG) -> dict[Action, NodeCommand]:
    """Every action ``node``'s broker can take, and what it runs where: its preset's, then the
    inventory's own commands over them. An action missing here is one the node cannot take.
    ``tag``: the run's, in the names of the Chaos Mesh resources it applies."""
    b = node.broker
    preset: dict[Action, NodeCommand] = {}
    if b.service:
        preset = _service_commands(b.service)
    elif b.process:
        preset = _process_commands(b.process.match, b.process.start)
    elif b.docker and node.control.docker:
        preset = _docker_commands(node.control.docker.container)
    elif b.chaos_mesh and node.control.kubectl:
        preset = _chaos_mesh_commands(node, tag)
    return {a: c for a in ACTIONS if (c := b.commands.get(a) or preset.get(a)) is not None}


def parse_state(out: str, where: str = "the node") -> NodeState:
    """What a status command printed, as a node state: ``ps -o stat=`` letters (T: stopped, Z or X:
    gone, else running) or a word (up, paused, down, docker's and systemd's states). More than one
    process: paused if any is, up if any runs. Output it cannot read is a ClusterError, not a guess."""
    states = []
    for line in out.split("\n"):
        word = line.strip()
        if not word:
            continue
        if word.lower() in STATE_WORDS:
            states.append(STATE_WORDS[word.lower()])
        elif PS_STAT.fullmatch(word):
            states.append(NodeState.PAUSED if word[0] in "Tt" else NodeState.DOWN if word[0] in "XZ" else NodeState.UP)
        else:
            raise ClusterError(f"{where}: its status command printed {word!r}; a status is a `ps -o stat=` "
                               f"state or one of {', '.join(STATE_WORDS)}")
    if NodeState.PAUSED in states:
        return NodeState.PAUSED
    return NodeState.UP if NodeState.UP in states else NodeState.DOWN


@dataclass
class Broker:
    """One external node's broker, driven by its commands through its transports."""

    node: ResolvedNode
    on_node: Transport
    on_control: Transport
    tag: str = DRY_RUN_TAG  # the run's: it names the Chaos Mesh resources this broker's faults apply

    def command(self, action: Action) -> NodeCommand | None:
        """What ``action`` runs (None: the inventory gives this node no way to do it)."""
        return node_commands(self.node, self.tag).get(action)

    def argv(self, action: Action) -> list[str]:
        """Exactly what ``action`` would run: what ``--dry-run`` prints."""
        cmd = self._need(action)
        return (self.on_control if cmd.on == "control" else self.on_node).argv(cmd.run)

    def run(self, action: Action, check: bool = True) -> Ran:
        """``action`` run on the node (or the control host) within its deadline."""
        cmd = self._need(action)
        t = self.on_control if cmd.on == "control" else self.on_node
        return t.run(cmd.run, timeout=ACTION_TIMEOUT_S[action], check=check)

    def state(self) -> NodeState:
        """Up, down or paused, as the node's status command says."""
        return parse_state(self.run("status").out, self.node.where)

    def wait_state(self, want: NodeState, timeout: float) -> None:
        """Until the status says ``want``; WaitTimeout naming the node and the last state seen."""
        wait_until(lambda: self.state() is want, timeout=timeout, what=f"{self.node.where} to be {want.value}",
                   state=lambda: f"status says {self.state().value}")

    def _need(self, action: Action) -> NodeCommand:
        cmd = self.command(action)
        if cmd is None:
            raise ClusterError(f"{self.node.where} cannot {action} its broker: its inventory entry gives no preset "
                               f"that does and no `commands.{action}`")
        return cmd
