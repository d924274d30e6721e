"""Node commands of an external cluster on real parts, no Kafka: ``sleep`` processes stand for
brokers, driven through the local transport and through ssh to a real OpenSSH server on 127.0.0.1;
kill -9, SIGSTOP and SIGCONT are verified through ``/proc`` and the processes' exit status."""

from __future__ import annotations

import io
import subprocess
import time
from pathlib import Path

import pytest

from clusters.backends.external import inventory, lifecycle, transport
from clusters.backends.external.transport import NodeCommandError
from clusters.backends.protocol import NodeState
from harness.base.errors import ClusterError, EnvironmentProblem
from tests.external_nodes import broker, local_inventory, pids_of, proc_state, sleepers
from tests.sshd import SshServer, local_sshd

PRESETS = """\
name: presets
nodes:
  - {id: 1, host: a, listeners: {client: "a:9092"}, control: {ssh: {host: a, user: k, key: /k}}, broker: {service: kafka}}
  - {id: 2, host: b, listeners: {client: "b:9092"}, control: {docker: {container: kafka-2}}, broker: {docker: container}}
  - {id: 3, host: c, listeners: {client: "c:9092"}, control: {local: {}}, broker: {process: {match: "kafka.Kafka"}}}
  - id: 4
    host: d
    listeners: {client: "d:9092"}
    control: {kubectl: {namespace: kafka, pod: kafka-4}}
    broker: {commands: {status: "echo up", kill: {run: "kubectl delete pod -n kafka kafka-4", "on": control}}}
"""


def test_each_preset_says_where_each_action_runs(tmp_path: Path) -> None:
    (tmp_path / "i.yaml").write_text(PRESETS)
    inv = inventory.load(tmp_path / "i.yaml")
    cmds = {n.id: lifecycle.node_commands(n) for n in inv.resolved()}
    assert cmds[1]["kill"].run == "systemctl kill -s KILL kafka" and cmds[1]["kill"].on == "node"
    assert {c.on for c in cmds[2].values()} == {"control"}  # a container's broker is PID 1: driven from the host
    assert cmds[2]["kill"].run == "docker kill -s KILL kafka-2" and cmds[2]["pause"].run == "docker pause kafka-2"
    assert set(cmds[3]) == set(lifecycle.ACTIONS) - {"start"}  # no start command given: it cannot start
    assert set(cmds[4]) == {"status", "kill"} and cmds[4]["kill"].on == "control"
    b = lifecycle.Broker(inv.node(3), transport.local(), transport.local())
    with pytest.raises(ClusterError, match=r"node 3 \(local\) cannot start its broker: .* no `commands.start`"):
        b.run("start")


@pytest.mark.parametrize("out, want", [
    ("Sl\n", NodeState.UP), ("Ssl", NodeState.UP), ("R+", NodeState.UP), ("D", NodeState.UP),
    ("Tl", NodeState.PAUSED), ("t", NodeState.PAUSED), ("Z", NodeState.DOWN), ("down", NodeState.DOWN), ("", NodeState.DOWN),
    ("running", NodeState.UP), ("paused", NodeState.PAUSED), ("exited", NodeState.DOWN), ("Sl\nTl\n", NodeState.PAUSED),
])
def test_ps_states_parse_to_node_states(out: str, want: NodeState) -> None:
    assert lifecycle.parse_state(out) is want


def test_a_status_it_cannot_read_is_an_error_not_a_guess() -> None:
    with pytest.raises(ClusterError, match="node 9: its status command printed 'maybe'"):
        lifecycle.parse_state("maybe\n", "node 9")


def test_a_failed_command_names_node_command_exit_code_and_last_output() -> None:
    t = transport.local("node 7 (local)")
    with pytest.raises(NodeCommandError) as exc:
        t.run("echo first; echo boom >&2; exit 3")
    assert str(exc.value) == "node 7 (local): `echo first; echo boom >&2; exit 3` exited 3: boom"
    assert exc.value.rc == 3 and t.run("exit 4", check=False).rc == 4


def test_a_command_past_its_deadline_is_killed_with_what_it_started(tmp_path: Path) -> None:
    with sleepers(1) as (arg,):
        t0 = time.monotonic()
        with pytest.raises(NodeCommandError, match=r"`sleep \S+ & sleep \S+; echo never` did not finish within 0.5s"):
            transport.local("node 1").run(f"sleep {arg} & sleep {arg}; echo never", timeout=0.5)
        assert time.monotonic() - t0 < 3
        assert not [p for p in pids_of(f"sleep {arg}") if proc_state(p) not in ("", "Z")]  # the group is gone


def test_a_missing_client_binary_is_an_environment_problem() -> None:
    t = transport.CommandTransport("node 5 (kubectl x/y)", ("no-such-kubectl-binary",))
    with pytest.raises(EnvironmentProblem, match="node 5 .*: cannot run `no-such-kubectl-binary`: it is not installed"):
        t.run("true")


def test_dry_run_prints_every_command_and_runs_none(tmp_path: Path) -> None:
    out = io.StringIO()
    d = transport.DryRun(transport.local("node 1 (local)"), out)
    r = d.run(f"touch {tmp_path / 'ran'}")
    assert r.rc == 0 and not (tmp_path / "ran").exists()
    assert out.getvalue() == f"[dry-run] node 1 (local): sh -c 'touch {tmp_path / 'ran'}'\n"
    dock = transport.DryRun(transport.CommandTransport("n2", ("docker", "exec", "k2"), env={"DOCKER_HOST": "tcp://h"}), out)
    dock.run("kill -STOP 1")
    assert out.getvalue().splitlines()[-1] == "[dry-run] n2: DOCKER_HOST=tcp://h docker exec k2 sh -c 'kill -STOP 1'"


def _settles(pid: int, states: str, timeout: float = 5.0) -> bool:
    """Whether ``pid`` is in one of ``states`` within ``timeout``: a signal is delivered when the
    process is next scheduled, after ``kill`` returns."""
    deadline = time.monotonic() + timeout
    while (state := proc_state(pid)) == "" or state not in states:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _drive(b: lifecycle.Broker, pid: int, proc: subprocess.Popen[bytes] | None = None) -> None:
    """SIGSTOP, SIGCONT and kill -9 through ``b``, each seen in /proc (and in the exit status)."""
    assert b.state() is NodeState.UP and _settles(pid, "RS")
    b.run("pause")
    assert _settles(pid, "T") and b.state() is NodeState.PAUSED
    b.run("resume")
    b.run("resume")  # twice: harmless (a heal may replay it)
    assert _settles(pid, "RS") and b.state() is NodeState.UP
    b.run("kill")
    if proc is not None:
        assert proc.wait(timeout=5) == -9  # killed by SIGKILL, nothing else
    b.wait_state(NodeState.DOWN, timeout=5)


def test_the_local_transport_kills_pauses_and_resumes_a_real_process(tmp_path: Path) -> None:
    with sleepers(1) as (arg,):
        proc = subprocess.Popen(["sleep", arg])
        node = inventory.load(local_inventory(tmp_path, [arg])).node(1)
        _drive(broker(node, tmp_path / "known_hosts"), proc.pid, proc)


def test_the_process_preset_starts_a_detached_broker(tmp_path: Path) -> None:
    with sleepers(1) as (arg,):
        b = broker(inventory.load(local_inventory(tmp_path, [arg])).node(1), tmp_path / "kh")
        assert b.state() is NodeState.DOWN
        with pytest.raises(NodeCommandError, match="no process matches the inventory's pattern"):
            b.run("pause")
        t0 = time.monotonic()
        b.run("start")
        assert time.monotonic() - t0 < 5  # it returns while the broker runs
        b.wait_state(NodeState.UP, timeout=5)
        (pid,) = pids_of(f"sleep {arg}")
        _drive(b, pid)
        b.run("start")
        b.wait_state(NodeState.UP, timeout=5)
        b.run("stop")
        assert b.state() is NodeState.DOWN


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> SshServer:
    with local_sshd(tmp_path_factory.mktemp("sshd")) as server:
        yield server  # type: ignore[misc]


def _ssh_control(server: SshServer, key: Path | None = None, port: int | None = None) -> str:
    return (f"{{ssh: {{host: 127.0.0.1, user: {server.user}, key: {key or server.key}, port: {port or server.port}, "
            f"known_hosts: {server.known_hosts}}}}}")


def test_the_ssh_transport_kills_pauses_and_resumes_through_a_real_sshd(tmp_path: Path, sshd: SshServer) -> None:
    sshd.known_hosts.unlink(missing_ok=True)
    sshd.known_hosts.write_text(f"[127.0.0.1]:{sshd.port} {(sshd.key.parent / 'host.pub').read_text()}")
    with sleepers(1) as (arg,):
        proc = subprocess.Popen(["sleep", arg])
        node = inventory.load(local_inventory(tmp_path, [arg], control=_ssh_control(sshd))).node(1)
        b = broker(node, tmp_path / "unused")
        assert b.on_node.run("echo $0 $SSH_CONNECTION").out.split()[1] == "127.0.0.1"  # it did go through sshd
        _drive(b, proc.pid, proc)


def test_a_refused_key_and_an_unreachable_node_are_named(tmp_path: Path, sshd: SshServer) -> None:
    from clusters.backends.external.probe import reach_problem

    with sleepers(2) as args:
        inv = inventory.load(local_inventory(tmp_path, args, control=_ssh_control(sshd, key=sshd.other_key)))
        n = inv.node(1)
        why = reach_problem(n, transport.for_node(n, tmp_path / "kh"))
        assert why is not None and why.startswith(f"the key {sshd.other_key} was refused by {sshd.user}@127.0.0.1"), why
        closed = sshd.port + 1 if sshd.port < 65535 else sshd.port - 1
        inv = inventory.load(local_inventory(tmp_path, args, control=_ssh_control(sshd, port=closed)))
        why = reach_problem(inv.node(2), transport.for_node(inv.node(2), tmp_path / "kh"))
        assert why is not None and why.startswith("unreachable over ssh (") and "refused" in why, why
