"""The inventory of a cluster the harness did not start: its brokers (id, host, listeners), how a
command reaches each node (local, ssh, docker exec, kubectl exec: Jepsen's control layer), how its
broker is killed, paused and started, which network faults the node may carry, and whether the
cluster may be faulted at all. ``load`` reads the YAML file strictly; every problem is exit 2 with
``file:line`` (docs/reference/inventory.md).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from clusters.backends.external.inventory_words import problem_line
from harness.base.errors import ConfigError
from harness.base.yaml_strict import line_of, read_yaml

#: What a broker's node can be asked to do (``status`` reads whether it is up, down or paused).
Action = Literal["kill", "stop", "pause", "resume", "start", "status"]
ACTIONS: tuple[Action, ...] = get_args(Action)
#: The inventory's name names its journal folder and its state record: a file name part.
NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,39}")


def _invalid(where: tuple[str | int, ...], message: str) -> PydanticCustomError:
    """A problem found across fields, located at ``where`` (pydantic would place it at the model)."""
    return PydanticCustomError("inventory", "{message}", {"message": message, "where": where})


def _host_port(value: str) -> str:
    if "://" in value:
        scheme = value.split("://", 1)[0]
        raise ValueError(f"{value!r}: a listener is host:port; the {scheme} scheme is not read here: the harness "
                         "fronts PLAINTEXT listeners only (the wire proxy cannot read inside TLS or SASL)")
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{value!r} is not host:port (a host name or address, a port 1 to 65535)")
    return value


#: ``host:port`` of a broker's listener, as the broker advertises it.
HostPort = Annotated[str, AfterValidator(_host_port)]
Port = Annotated[int, Field(ge=1, le=65535)]
Text = Annotated[str, Field(min_length=1)]


def split_host_port(value: str) -> tuple[str, int]:
    """``("10.0.0.1", 9092)`` from ``"10.0.0.1:9092"`` (an IPv6 address in brackets loses them)."""
    host, _, port = value.rpartition(":")
    return host.strip("[]"), int(port)


class InventoryModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LocalControl(InventoryModel):
    """``local: {}``: the node is the machine the harness runs on."""


class SshControl(InventoryModel):
    host: Text
    user: Text
    key: Path  # read relative to the inventory file, ~ expanded
    port: Port = 22
    known_hosts: Path | None = None  # None: accept-new into the harness's own known_hosts file
    sudo: bool = False  # prefix commands with `sudo -n` (signals to another user's JVM, iptables, tc)

    @field_validator("key", "known_hosts")
    @classmethod
    def _beside_the_file(cls, value: Path | None, info: ValidationInfo) -> Path | None:
        base = (info.context or {}).get("base")
        if value is None:
            return value
        value = value.expanduser()
        return value if value.is_absolute() or base is None else Path(base) / value


class DockerControl(InventoryModel):
    container: Text
    docker_host: str | None = None  # DOCKER_HOST for the control host's docker CLI (None: its default)


class KubectlControl(InventoryModel):
    namespace: Text
    pod: Text
    container: str | None = None
    context: str | None = None


class NodeControl(InventoryModel):
    """How a command reaches the node: exactly one of the four."""

    local: LocalControl | None = None
    ssh: SshControl | None = None
    docker: DockerControl | None = None
    kubectl: KubectlControl | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> NodeControl:
        given = [k for k in ("local", "ssh", "docker", "kubectl") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of local, ssh, docker, kubectl (given: {', '.join(given) or 'none'})")
        return self

    @property
    def kind(self) -> Literal["local", "ssh", "docker", "kubectl"]:
        return "local" if self.local else "ssh" if self.ssh else "docker" if self.docker else "kubectl"


class NodeCommand(InventoryModel):
    """A POSIX sh script, run on the node (through its control) or on the control host (the machine
    the harness runs on). A plain string is a script run on the node."""

    run: Text
    on: Literal["node", "control"] = "node"

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, value: Any) -> Any:
        return {"run": value} if isinstance(value, str) else value


class ProcessMatch(InventoryModel):
    match: Text  # a `pgrep -f` pattern that finds the broker's process, and only it
    start: str | None = None  # a command that starts it detached; without it, no fault that needs start


#: A broker is up and answers within this long of a start unless its inventory says otherwise
#: (``broker.start_timeout_s``): a JVM's start and its log recovery after a kill -9 on a small cluster.
START_TIMEOUT_S = 120.0
#: A broker's presets, at most one a node.
PRESETS = ("service", "process", "docker", "chaos_mesh")


class BrokerControl(InventoryModel):
    """How the broker is stopped, killed, paused and started: one preset, or commands, or a preset
    with some of its actions replaced by commands."""

    service: str | None = None  # a systemd unit
    process: ProcessMatch | None = None
    docker: Literal["container"] | None = None  # the node's container, driven from the control host
    # the node's pod (its kubectl control's namespace and pod, not said twice), killed by a Chaos Mesh
    # PodChaos applied from the control host; no pause (Chaos Mesh has no SIGSTOP action; chaos_mesh.py)
    chaos_mesh: Literal["pod"] | None = None
    commands: dict[Action, NodeCommand] = {}
    #: how long the broker may take to be up (its status) and answer on its listener after a start,
    #: or after Kubernetes makes its killed pod again: a staging broker's log recovery, a pod's
    #: scheduling and image pull can take longer than a small test cluster's default
    start_timeout_s: float = Field(START_TIMEOUT_S, gt=0, le=3600, allow_inf_nan=False)

    @model_validator(mode="after")
    def _one_preset(self) -> BrokerControl:
        given = [k for k in PRESETS if getattr(self, k) is not None]
        if len(given) > 1:
            raise ValueError(f"give one of {', '.join(PRESETS)} (given: {', '.join(given)})")
        if not given and "status" not in self.commands:
            raise _invalid(("commands",), f"without a preset ({', '.join(PRESETS)}) the commands must say at "
                                          "least `status` (how the harness tells up, down and paused apart)")
        return self

    @property
    def preset(self) -> str | None:
        return next((k for k in PRESETS if getattr(self, k) is not None), None)


class PeerListeners(InventoryModel):
    """How this node reaches another broker's listeners, where that is not the broker's own
    ``listeners`` (a proxy, a NAT, a name that resolves differently on this node)."""

    internal: HostPort | None = None
    controller: HostPort | None = None


class NetAccess(InventoryModel):
    """Whether tc and iptables may run on the node, to cut or slow links between brokers; or whether
    its links are cut by Chaos Mesh NetworkChaos resources instead (a kubectl node: ``chaos_mesh``)."""

    allowed: bool = False
    chaos_mesh: bool = False  # partitions only, as NetworkChaos from the control host; allowed stays false
    why_not: str | None = None  # said when a fault needs it ("production VM, no root")
    device: Text = "eth0"  # tc's device
    netns: Literal["node", "container"] = "node"  # container: nsenter into it from the control host
    peers: dict[int, PeerListeners] = {}  # node id -> where this node reaches its listeners


class Listeners(InventoryModel):
    client: HostPort  # what the harness fronts; must be what the broker advertises on it
    internal: HostPort | None = None  # inter-broker (link faults)
    controller: HostPort | None = None


class NodeDefaults(InventoryModel):
    """What every node has unless it says otherwise (a node's field replaces the default whole);
    ``{host}`` and ``{id}`` in a default's strings stand for the node's."""

    control: NodeControl | None = None
    broker: BrokerControl | None = None
    net: NetAccess | None = None
    kafka_home: str | None = None
    metadata_log_dir: str | None = None


class InventoryNode(NodeDefaults):
    id: Annotated[int, Field(ge=0)]  # the broker's node.id
    host: Text
    listeners: Listeners
    roles: tuple[Literal["broker", "controller"], ...] = ("broker", "controller")


@dataclass(frozen=True)
class ResolvedNode:
    """One node with the inventory's defaults merged in: what every other module reads."""

    id: int
    host: str
    listeners: Listeners
    roles: tuple[str, ...]
    control: NodeControl
    broker: BrokerControl
    net: NetAccess
    kafka_home: str | None
    metadata_log_dir: str | None
    line: int = 0  # where the inventory file describes it (0: not read from a file)

    @property
    def where(self) -> str:
        """``node 2 (ssh kafka@10.0.0.12)``: how messages name the node."""
        c = self.control
        how = ("local" if c.local else f"ssh {c.ssh.user}@{c.ssh.host}" if c.ssh
               else f"docker {c.docker.container}" if c.docker
               else f"kubectl {c.kubectl.namespace}/{c.kubectl.pod}" if c.kubectl else "?")
        return f"node {self.id} ({how})"


class Inventory(InventoryModel):
    name: str
    disposable: bool = False  # faults are refused on a cluster that does not say so
    security_protocol: Literal["PLAINTEXT"] = "PLAINTEXT"
    defaults: NodeDefaults = NodeDefaults()
    nodes: list[InventoryNode] = Field(min_length=1)
    _path: Path | None = PrivateAttr(default=None)
    _lines: dict[int, int] = PrivateAttr(default_factory=dict)
    _key_lines: dict[str, int] = PrivateAttr(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _a_file_name(cls, value: str) -> str:
        if not NAME.fullmatch(value):
            raise ValueError(f"{value!r}: 1 to 40 of a-z, 0-9 and -, starting with a letter or digit "
                             "(it names the cluster's heal journal)")
        return value

    @field_validator("security_protocol", mode="before")
    @classmethod
    def _plaintext(cls, value: Any) -> Any:
        if value != "PLAINTEXT":
            raise ValueError(f"{value!r}: only PLAINTEXT; the wire proxy rewrites broker addresses in the responses, "
                             "which it cannot read inside TLS or SASL")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Inventory:
        seen: dict[int, int] = {}
        listeners: dict[str, int] = {}
        for i, n in enumerate(self.nodes):
            if n.id in seen:
                raise _invalid(("nodes", i, "id"), f"node id {n.id} is given twice (first at nodes[{seen[n.id]}])")
            seen[n.id] = i
            if n.listeners.client in listeners:
                raise _invalid(("nodes", i, "listeners", "client"), f"{n.listeners.client} is also nodes"
                                                                    f"[{listeners[n.listeners.client]}]'s listener")
            listeners[n.listeners.client] = i
        ids = {n.id for n in self.nodes}
        for i, n in enumerate(self.nodes):
            unknown = sorted(set((n.net or self.defaults.net or NetAccess()).peers) - ids)
            if unknown:
                raise _invalid(("nodes", i, "net", "peers"), f"node {n.id}: peers {unknown} are not nodes of this "
                                                             f"inventory ({', '.join(map(str, sorted(ids)))})")
            _resolve(self.defaults, n, i)  # raises where a merged node lacks what it needs
        return self

    def resolved(self) -> tuple[ResolvedNode, ...]:
        """Every node with the defaults merged in, in the file's order."""
        return tuple(_resolve(self.defaults, n, i, self._lines.get(i, 0)) for i, n in enumerate(self.nodes))

    def node(self, node_id: int) -> ResolvedNode:
        """The node of that id (KeyError if none)."""
        for n in self.resolved():
            if n.id == node_id:
                return n
        raise KeyError(node_id)

    @property
    def path(self) -> Path | None:
        """The file it was read from (None: built in code)."""
        return self._path

    def line_of_node(self, node_id: int) -> str:
        """``inventory.yaml:14``: where the node is described, for messages."""
        n = self.node(node_id)
        return f"{self._path}:{n.line}" if self._path else f"node {node_id}"


def line_of_key(inv: Inventory, key: str) -> int:
    """The line of a top-level key of the file ``inv`` was read from (1: not in the file, or built in code)."""
    return inv._key_lines.get(key, 1)


def _for_node(value: Any, node: InventoryNode) -> Any:
    """``value`` (a default's dumped data) with ``{host}`` and ``{id}`` replaced by the node's."""
    if isinstance(value, str):
        return value.replace("{host}", node.host).replace("{id}", str(node.id))
    if isinstance(value, dict):
        return {k: _for_node(v, node) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_for_node(v, node) for v in value]
    return value


def _merged(default: InventoryModel | None, node: InventoryNode, where: str) -> Any:
    own = getattr(node, where)
    if own is not None or default is None:
        return own
    return type(default).model_validate(_for_node(default.model_dump(mode="json", exclude_none=True), node))


def _resolve(defaults: NodeDefaults, n: InventoryNode, i: int, line: int = 0) -> ResolvedNode:
    control: NodeControl | None = _merged(defaults.control, n, "control")
    broker: BrokerControl | None = _merged(defaults.broker, n, "broker")
    net: NetAccess = _merged(defaults.net, n, "net") or NetAccess()
    for what, value in (("control", control), ("broker", broker)):
        if value is None:
            raise _invalid(("nodes", i, what), f"missing: node {n.id} needs `{what}`, on the node or in defaults.{what}")
    assert control is not None and broker is not None
    if broker.docker and not control.docker:
        raise _invalid(("nodes", i, "broker", "docker"), f"node {n.id}: the docker preset drives the node's container "
                                                         f"from the control host; its control is {control.kind}, not docker")
    _chaos_mesh_fits(n, i, control, broker, net)
    if net.netns == "container" and not control.docker:
        raise _invalid(("nodes", i, "net", "netns"), f"node {n.id}: netns container needs a docker control "
                                                     f"(its control is {control.kind})")
    return ResolvedNode(id=n.id, host=n.host, listeners=n.listeners, roles=n.roles, control=control, broker=broker,
                        net=net, kafka_home=n.kafka_home or _for_node(defaults.kafka_home, n),
                        metadata_log_dir=n.metadata_log_dir or _for_node(defaults.metadata_log_dir, n), line=line)


def _chaos_mesh_fits(n: InventoryNode, i: int, control: NodeControl, broker: BrokerControl, net: NetAccess) -> None:
    """Chaos Mesh acts on a pod, named by the node's kubectl control: nothing else names one."""
    if broker.chaos_mesh and not control.kubectl:
        raise _invalid(("nodes", i, "broker", "chaos_mesh"), f"node {n.id}: the chaos_mesh preset kills the node's pod "
                                                             f"(its kubectl control); its control is {control.kind}, not kubectl")
    if net.chaos_mesh and not control.kubectl:
        raise _invalid(("nodes", i, "net", "chaos_mesh"), f"node {n.id}: net.chaos_mesh cuts links of the node's pod "
                                                          f"(its kubectl control); its control is {control.kind}, not kubectl")
    if net.chaos_mesh and net.allowed:
        raise _invalid(("nodes", i, "net", "allowed"), f"node {n.id}: give net.allowed (tc and iptables on the node) or "
                                                       "net.chaos_mesh (NetworkChaos), not both: a link is cut one way")


def load(path: Path) -> Inventory:
    """The inventory in ``path``; ConfigError (exit 2) naming ``file:line``, the field and what is
    allowed for every problem."""
    root, data = read_yaml(path, "inventory")
    if not isinstance(data, dict):
        raise ConfigError(f"{path}:1: an inventory is a mapping (name, disposable, defaults, nodes), "
                          f"not {type(data).__name__ if data is not None else 'an empty file'}")
    try:
        inv = Inventory.model_validate(data, context={"base": path.resolve().parent})
    except ValidationError as exc:
        problems = [problem_line(path, root, data, e, Inventory) for e in exc.errors()]
        raise ConfigError("invalid inventory:\n  " + "\n  ".join(problems)) from None
    inv._path = path
    inv._lines = {i: line_of(root, ("nodes", i)) for i in range(len(inv.nodes))}
    inv._key_lines = {k: line_of(root, (k,)) for k in ("name", "disposable")}
    return inv


def digest(inv: Inventory) -> str:
    """sha256 of the inventory's canonical JSON: a record made from it is tied to what it said."""
    return hashlib.sha256(json.dumps(inv.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()
