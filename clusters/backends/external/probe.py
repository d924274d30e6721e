"""Before any fault on an external cluster: every node is reachable through its control, its broker
is up and answers on the inventory's listener, and the brokers the cluster advertises there are the
inventory's, at the inventory's addresses. Any problem is exit 2 naming the node and its inventory
line, and nothing has been changed on any node.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from clusters.backends.external import chaos_mesh
from clusters.backends.external.inventory import Inventory, ResolvedNode, split_host_port
from clusters.backends.external.lifecycle import Broker
from clusters.backends.external.transport import NodeCommandError, Ran, Transport
from clusters.backends.protocol import NodeState
from harness.base.errors import ClusterError, EnvironmentProblem, HarnessError

#: A node answers ``true`` within this long or is unreachable (ssh's own connect timeout is 5 s).
REACH_TIMEOUT_S = 10.0
#: A broker's listener accepts a TCP connection, and answers Metadata, within this long.
LISTENER_TIMEOUT_S = 5.0
#: Nodes are probed side by side, at most this many at once.
PROBE_THREADS = 8


@dataclass(frozen=True)
class SeenBrokers:
    """What one broker's Metadata answer on a listener says: broker id -> ``host:port``."""

    brokers: dict[int, str]
    cluster_id: str | None = None


def reach_problem(node: ResolvedNode, t: Transport) -> str | None:
    """Why commands cannot reach ``node`` (None: ``true`` ran there)."""
    try:
        ran = t.run("true", timeout=REACH_TIMEOUT_S, check=False)
    except NodeCommandError as exc:
        return f"did not answer within {REACH_TIMEOUT_S:g}s ({exc.rc if exc.rc is not None else 'killed'})"
    except EnvironmentProblem as exc:
        return str(exc).removeprefix(f"{node.where}: ")
    return None if ran.rc == 0 else why_unreachable(node, ran)


def why_unreachable(node: ResolvedNode, ran: Ran) -> str:
    """A failed ``true`` on ``node`` in words: a refused key, an unknown host, a missing container or pod."""
    err = ran.err.strip() or ran.out.strip()
    last = err.splitlines()[-1] if err else f"exit {ran.rc}, no output"
    c = node.control
    if c.ssh is not None and ran.rc == 255:
        if "Permission denied" in err:
            return f"the key {c.ssh.key} was refused by {c.ssh.user}@{c.ssh.host} ({last})"
        if "Host key verification failed" in err or "REMOTE HOST IDENTIFICATION HAS CHANGED" in err:
            return f"{c.ssh.host}'s host key is not the one its known_hosts file holds ({last})"
        return f"unreachable over ssh ({last})"
    if c.docker is not None and "No such container" in err:
        return f"container {c.docker.container} does not exist ({last})"
    if c.docker is not None and "Cannot connect to the Docker daemon" in err:
        return f"the docker engine does not answer ({last})"
    if c.kubectl is not None and ("NotFound" in err or "not found" in err):
        return f"pod {c.kubectl.namespace}/{c.kubectl.pod} was not found ({last})"
    return f"`true` failed there with exit {ran.rc} ({last})"


def listener_problem(address: str, timeout: float = LISTENER_TIMEOUT_S) -> str | None:
    """Why nothing accepts a TCP connection at ``address`` (None: something does)."""
    host, port = split_host_port(address)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except ConnectionRefusedError:
        return f"nothing listens on its listener {address} (connection refused)"
    except TimeoutError:
        return f"its listener {address} did not accept a connection within {timeout:g}s"
    except OSError as exc:
        return f"its listener {address} cannot be reached: {exc.strerror or exc}"


def read_advertised(address: str, timeout: float = LISTENER_TIMEOUT_S) -> SeenBrokers:
    """The brokers a Metadata answer on ``address`` names (ClusterError if none comes in time)."""
    from clusters.kafka.health import admin_client  # confluent_kafka: loaded only when a cluster is probed

    try:
        md = admin_client(address).list_topics(timeout=timeout)
    except Exception as exc:  # confluent_kafka.KafkaException, or its timeout
        raise ClusterError(f"{address} accepts connections but gave no Kafka Metadata answer within {timeout:g}s "
                           f"({exc})") from None
    return SeenBrokers({b.id: f"{b.host}:{b.port}" for b in md.brokers.values()}, md.cluster_id)


def listener_mismatches(nodes: tuple[ResolvedNode, ...], seen: SeenBrokers, on: ResolvedNode) -> list[tuple[int, str]]:
    """How the brokers advertised on ``on``'s listener differ from the inventory, each with the node
    id it is about: the proxies front exactly the inventory's listeners, so a broker elsewhere or
    missing would escape them."""
    out: list[tuple[int, str]] = []
    want = {n.id: n.listeners.client for n in nodes}
    for n in nodes:
        got = seen.brokers.get(n.id)
        if got is None:
            out.append((n.id, f"node {n.id}: not in the Metadata that {on.listeners.client} answers (brokers there: "
                       f"{', '.join(map(str, sorted(seen.brokers))) or 'none'}); is it a broker of this cluster?"))
        elif got != want[n.id]:
            out.append((n.id, f"node {n.id}: the inventory says {want[n.id]}, the cluster advertises {got} on that listener"))
    for extra in sorted(set(seen.brokers) - set(want)):
        out.append((on.id, f"node {extra} is in the cluster's Metadata ({seen.brokers[extra]}) but not in the "
                           f"inventory: add it, or the proxies would not front it"))
    return out


def node_problems(node: ResolvedNode, broker: Broker, reach: Callable[[], str | None]) -> list[str]:
    """What keeps ``node`` from being faulted, checked in order (each step needs the one before)."""
    why = reach()
    if why:
        return [why]
    try:
        state = broker.state()
    except ClusterError as exc:
        return [f"its status command failed: {str(exc).removeprefix(node.where + ': ')}"]
    if state is not NodeState.UP:
        return [f"its broker is {state.value} before the run (a run starts on a whole cluster; "
                "`eos-chaos cluster heal --inventory FILE` starts or resumes it)"]
    why = listener_problem(node.listeners.client)
    return [why] if why else []


def chaos_mesh_problem(b: Broker) -> str | None:
    """Why the node's Chaos Mesh faults cannot run (None: it uses none, or both CRDs are installed):
    ``kubectl get crd`` from the control host, reading only."""
    k = b.node.control.kubectl
    if k is None or not chaos_mesh.uses_chaos_mesh(b.node):
        return None
    try:
        ran = b.on_control.run(chaos_mesh.crd_script(k), check=False)
    except HarnessError as exc:
        return f"cannot ask for Chaos Mesh's CRDs: {exc}"
    if ran.rc == 0:
        return None
    return (f"its inventory says chaos_mesh, and `{chaos_mesh.crd_script(k)}` exited {ran.rc}: Chaos Mesh's CRDs "
            f"({', '.join(chaos_mesh.CRDS)}) are not installed, or not readable at that context: "
            f"{(ran.err or ran.out).strip()[-300:]}")


def preflight(inv: Inventory, brokers: dict[int, Broker], advertised: Callable[[str], SeenBrokers] = read_advertised) -> SeenBrokers:
    """What the cluster advertises, once every node is reachable, up, answering on its listener and
    advertising what the inventory says; EnvironmentProblem (exit 2) listing each node's problem
    with its inventory line otherwise. Reads only: nothing on any node changes."""
    nodes = inv.resolved()
    with ThreadPoolExecutor(max_workers=min(PROBE_THREADS, len(nodes))) as pool:
        found = list(pool.map(lambda n: node_problems(n, brokers[n.id], lambda: reach_problem(n, brokers[n.id].on_node)),
                              nodes))
    problems = [f"{n.where}: {p} ({inv.line_of_node(n.id)})" for n, ps in zip(nodes, found) for p in ps]
    problems += [f"{n.where}: {p} ({inv.line_of_node(n.id)})" for n in nodes if (p := chaos_mesh_problem(brokers[n.id]))]
    seen = SeenBrokers({})
    if not problems:
        for n in nodes:
            try:
                seen = advertised(n.listeners.client)
            except ClusterError as exc:
                problems.append(f"{n.where}: {exc} ({inv.line_of_node(n.id)})")
                continue
            problems += [f"{p} ({inv.line_of_node(i)})" for i, p in listener_mismatches(nodes, seen, n)]
    problems = list(dict.fromkeys(problems))  # every listener answers the same Metadata: one line each
    if problems:
        raise EnvironmentProblem(f"the cluster of inventory {inv.path or inv.name} cannot be faulted:\n  "
                                 + "\n  ".join(problems))
    return seen
