"""The links of an external cluster, by the names every backend uses (``client-to-n1``,
``n1-to-n2-internal``, clusters/kafka/topology.py): the clients' links go to the Toxiproxy the
harness runs in front of the cluster; a link between brokers is faulted on its SOURCE node with
iptables and tc (``netfaults``), through the node's transport, each change written to the heal
journal before it is made. Network faults and heal-all use it as they use Toxiproxy
(``LinkControl``); nothing in chaos/ knows the difference.

How each toxic maps onto a node (the source node A of link A -> B, its packets to B's listener):
``partition``/``flap`` drop A's packets to B and B's answers; ``reset-peer`` answers both with TCP
resets; ``blackhole`` drops what A sends; ``latency`` delays what A sends by the latency of both of
the toxic's streams (the same round trip as Toxiproxy's delay each way); ``bandwidth`` caps what A
sends at the toxic's rate (Toxiproxy's KB/s as kbit/s). ``slicer`` and ``drop-responses`` have no
node form (``netfaults.NO_NODE_FORM``): refused.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from clusters.backends.external import chaos_mesh, netfaults
from clusters.backends.external.heal_journal import HealJournal, UndoStep
from clusters.backends.external.inventory import ResolvedNode, split_host_port
from clusters.backends.external.lifecycle import Broker
from clusters.backends.external.transport import Ran, Transport
from clusters.toxiproxy.toxiproxy_api import LinkControl, ProxySpec, Toxiproxy
from harness.base.errors import FaultError, HarnessError

#: A link between brokers, by its topology name.
BROKER_LINK = re.compile(r"n(?P<src>\d+)-to-n(?P<dst>\d+)-(?P<listener>internal|controller)")
CLIENT_LINK = re.compile(r"client-to-n\d+")
#: The heal journal's kinds of change on a node's network.
NET_CHAIN, TC_ROOT, NET_MESH = "net-chain", "tc-root", "network-chaos"
NET_WHATS = (NET_CHAIN, TC_ROOT)  # what sweep_net finds on a node (a NetworkChaos is not on one)
#: chaos/toxics.py names its toxics ``eos-<kind>-<stream>[-<tag>]``.
_TOXIC_NAME = re.compile(r"eos-(?P<kind>[a-z-]+?)-(?P<stream>upstream|downstream)(?:-|$)")
#: A toxic's kind from its Toxiproxy type, when its name does not say (``timeout``: by stream).
_KIND_OF_TYPE = {"latency": "latency", "bandwidth": "bandwidth", "reset_peer": "reset-peer", "slicer": "slicer"}


def toxic_kind(toxic_type: str, stream: str, name: str) -> str:
    """The fault kind (chaos/toxics.py) a toxic is part of."""
    m = _TOXIC_NAME.match(name)
    if m:
        return m["kind"]
    if toxic_type == "timeout":
        return "blackhole" if stream == "upstream" else "drop-responses"
    return _KIND_OF_TYPE.get(toxic_type, toxic_type)


def peer_of(src: ResolvedNode, dst: ResolvedNode, listener: str) -> netfaults.Peer | None:
    """Where ``src`` reaches ``dst``'s ``listener`` (internal, controller): ``src``'s ``net.peers``,
    else ``dst``'s own listener; None when the inventory says neither."""
    given = src.net.peers.get(dst.id)
    address = (getattr(given, listener) if given else None) or getattr(dst.listeners, listener)
    if address is None:
        return None
    host, port = split_host_port(address)
    return netfaults.Peer(host, port)


@dataclass
class _Change:
    """One journaled change on a node's network, and the script that takes it back."""

    node: int
    id: int
    clear: str
    on_control: bool = False  # a Chaos Mesh resource: deleted by the control host's kubectl
    name: str = ""  # a Chaos Mesh resource's name


@dataclass
class _NodeTc:
    """Our tc root on one node: its journal change, and each faulted link's class and toxics."""

    root: _Change
    dev: str
    bands: dict[str, int] = field(default_factory=dict)
    toxics: dict[str, dict[str, tuple[str, dict[str, Any]]]] = field(default_factory=dict)


@dataclass
class ExternalLinks:
    """``LinkControl`` for an external cluster: ``client`` (Toxiproxy, None: no client links) for
    ``client-to-n*``, the nodes (``brokers``) for links between brokers, ``journal`` (held by the
    caller) written before every node change; ``tag`` names the run's chains (``EOSC-<tag>-<n>``)."""

    brokers: dict[int, Broker]
    journal: HealJournal
    client: Toxiproxy | None
    tag: str
    _lock: threading.RLock = field(default_factory=threading.RLock)
    _n: int = 0
    _chains: dict[tuple[str, str], _Change] = field(default_factory=dict)  # (link, cut | toxic name)
    _covered: set[tuple[str, str]] = field(default_factory=set)  # toxics another's rule carries
    _tcs: dict[int, _NodeTc] = field(default_factory=dict)

    def __post_init__(self) -> None:
        netfaults.chain_name(self.tag, 0)  # a bad tag fails here, not at the first fault

    # -- the clients' links: Toxiproxy ------------------------------------------------------------
    def _toxiproxy(self, link: str) -> Toxiproxy:
        if self.client is None:
            raise FaultError(f"{link}: this cluster has no Toxiproxy in front of its clients")
        return self.client

    def ping(self) -> bool:
        return self.client.ping() if self.client else True

    def proxies(self) -> dict[str, dict[str, Any]]:
        return self.client.proxies() if self.client else {}

    def populate(self, specs: Iterable[ProxySpec]) -> None:
        if self.client:
            self.client.populate(specs)

    def close(self) -> None:
        if self.client:
            self.client.close()

    # -- a link by name ---------------------------------------------------------------------------
    def _broker_link(self, link: str) -> tuple[Broker, netfaults.Peer]:
        m = BROKER_LINK.fullmatch(link)
        if not m:
            raise FaultError(f"{link!r} is not a link of this cluster (client-to-n<id>, n<a>-to-n<b>-internal|controller)")
        src, dst = self.brokers.get(int(m["src"])), self.brokers.get(int(m["dst"]))
        if src is None or dst is None:
            raise FaultError(f"{link}: node {m['src'] if src is None else m['dst']} is not in the inventory")
        if not src.node.net.allowed:
            raise FaultError(f"{link}: {src.node.where} may not run tc/iptables: its inventory says net.allowed false"
                             + (f" ({src.node.net.why_not})" if src.node.net.why_not else ""))
        peer = peer_of(src.node, dst.node, m["listener"])
        if peer is None:
            raise FaultError(f"{link}: node {dst.node.id} has no listeners.{m['listener']} and node {src.node.id}'s "
                             f"net.peers names none: the harness does not know where the link goes")
        return src, peer

    def _by_chaos_mesh(self, link: str) -> bool:
        m = BROKER_LINK.fullmatch(link)
        src = self.brokers.get(int(m["src"])) if m else None
        return src is not None and src.node.net.chaos_mesh

    def _mesh_cut(self, link: str) -> None:
        """``link`` cut by a NetworkChaos partition from its source pod to its target pod, journaled
        first; a pod pair has one cut (Chaos Mesh's partition holds every port of the pair)."""
        m = BROKER_LINK.fullmatch(link)
        assert m is not None  # _by_chaos_mesh matched it
        src, dst = self.brokers[int(m["src"])], self.brokers.get(int(m["dst"]))
        if (link, "cut") in self._chains:
            return
        if dst is None or dst.node.control.kubectl is None:
            raise FaultError(f"{link}: a NetworkChaos selects the target's pod, and node {m['dst']} "
                             + ("is not in the inventory" if dst is None else f"has no kubectl control ({dst.node.where})"))
        k, name = src.node.control.kubectl, chaos_mesh.cut_name(self.tag, link)
        assert k is not None  # the inventory refuses net.chaos_mesh without kubectl
        clear = chaos_mesh.delete_script(k, "NetworkChaos", name, k.namespace)
        detail = {"link": link, "fault": "partition", "chaos_mesh": "NetworkChaos", "name": name}
        c = _Change(src.node.id, self.journal.apply(src.node.id, NET_MESH, (UndoStep(run=clear, on="control"),), detail),
                    clear, on_control=True, name=name)
        ran = src.on_control.run(chaos_mesh.apply_script(k, chaos_mesh.partition_manifest(name, k, dst.node.control.kubectl)),
                                 check=False)
        self.journal.mark(c.id, "done", rc=ran.rc)
        if ran.rc != 0:
            self._undo(c)
            raise FaultError(f"{src.node.where}: applying NetworkChaos {name} for {link} failed (exit {ran.rc}): "
                             f"{(ran.err or ran.out).strip()[-400:]}")
        self._chains[(link, "cut")] = c

    def _run(self, b: Broker, script: str, gone_ok: bool = False) -> Ran:
        on, wrapped = netfaults.placed(b.node, script, gone_ok)
        return (b.on_control if on == "control" else b.on_node).run(wrapped, check=False)

    def _apply(self, b: Broker, what: str, script: str, clear: str, detail: dict[str, Any]) -> _Change:
        """``script`` run on ``b``'s node, written to the journal first with ``clear`` as its undo;
        a failure takes back whatever it did and is a FaultError naming the node."""
        on, undo = netfaults.placed(b.node, clear, gone_ok=True)
        c = _Change(b.node.id, self.journal.apply(b.node.id, what, (UndoStep(run=undo, on=on),), detail), clear)
        ran = self._run(b, script)
        self.journal.mark(c.id, "done", rc=ran.rc)
        if ran.rc != 0:
            self._undo(c)
            raise FaultError(f"{b.node.where}: {detail} failed (exit {ran.rc}): {(ran.err or ran.out).strip()[-400:]}")
        return c

    def _undo(self, c: _Change) -> None:
        b = self.brokers[c.node]
        ran = b.on_control.run(c.clear, check=False) if c.on_control else self._run(b, c.clear, gone_ok=True)
        if ran.rc != 0:
            self.journal.mark(c.id, "undo-failed", rc=ran.rc, err=(ran.err or ran.out)[-600:])
            raise FaultError(f"{self.brokers[c.node].node.where}: undoing change {c.id} failed (exit {ran.rc}): "
                             f"{(ran.err or ran.out).strip()[-400:]}")
        self.journal.mark(c.id, "undone", rc=0)

    def _chain(self, link: str, key: str, fault: str, build: Any) -> None:
        if (link, key) in self._chains:
            return
        b, peer = self._broker_link(link)
        self._n += 1
        chain = netfaults.chain_name(self.tag, self._n)
        self._chains[(link, key)] = self._apply(b, NET_CHAIN, build(link, peer, chain), netfaults.clear_script(chain),
                                                {"link": link, "fault": fault, "chain": chain})

    # -- LinkControl --------------------------------------------------------------------------------
    def set_enabled(self, name: str, enabled: bool) -> None:
        """Cut (``enabled`` False) or restore a link; a cut link cut again, or a whole one restored, is no change."""
        if CLIENT_LINK.fullmatch(name):
            self._toxiproxy(name).set_enabled(name, enabled)
            return
        with self._lock:
            if not enabled and self._by_chaos_mesh(name):
                self._mesh_cut(name)
            elif not enabled:
                self._chain(name, "cut", "partition", netfaults.cut_script)
            elif (c := self._chains.pop((name, "cut"), None)) is not None:
                self._undo(c)

    def add_toxic(self, proxy: str, kind: str, attributes: dict[str, Any], *, stream: str = "downstream",
                  toxicity: float = 1.0, name: str | None = None) -> str:
        """A toxic on a link: Toxiproxy's on a client link, its node form on a link between brokers."""
        toxic = name or f"{kind}_{stream}"
        if CLIENT_LINK.fullmatch(proxy):
            return self._toxiproxy(proxy).add_toxic(proxy, kind, attributes, stream=stream, toxicity=toxicity, name=name)
        fault = toxic_kind(kind, stream, toxic)
        if self._by_chaos_mesh(proxy):
            raise FaultError(f"{proxy}: its source node's links go through Chaos Mesh (net.chaos_mesh), which the "
                             f"harness drives for partitions only; {fault} is not built for it")
        if fault in netfaults.NO_NODE_FORM:
            raise FaultError(f"{proxy}: {netfaults.NO_NODE_FORM[fault]}")
        if toxicity != 1.0:
            raise FaultError(f"{proxy}: a toxicity below 1 has no node form (a rule holds every packet of the link)")
        with self._lock:
            if fault in ("latency", "bandwidth"):
                self._tc_add(proxy, toxic, fault, attributes)
            elif stream == "downstream":  # the upstream rule acts on the connection both ways
                self._covered.add((proxy, toxic))
            elif fault == "reset-peer":
                self._chain(proxy, toxic, fault, netfaults.reset_script)
            elif fault == "blackhole":
                self._chain(proxy, toxic, fault, netfaults.blackhole_script)
            else:
                raise FaultError(f"{proxy}: no node form for the toxic {kind} ({fault})")
        return toxic

    def remove_toxic(self, proxy: str, toxic: str) -> None:
        if CLIENT_LINK.fullmatch(proxy):
            self._toxiproxy(proxy).remove_toxic(proxy, toxic)
            return
        with self._lock:
            if (c := self._chains.pop((proxy, toxic), None)) is not None:
                self._undo(c)
            elif (proxy, toxic) in self._covered:
                self._covered.discard((proxy, toxic))
            elif (src := next((n for n, t in self._tcs.items() if toxic in t.toxics.get(proxy, {})), None)) is not None:
                del self._tcs[src].toxics[proxy][toxic]
                self._tc_settle(src, proxy)
            else:
                raise FaultError(f"{proxy}: no toxic {toxic!r} on this link")

    def reset(self) -> None:
        """Every client link whole (Toxiproxy's ``/reset``) and every node change of this run undone."""
        if self.client:
            self.client.reset()
        failed: list[str] = []
        with self._lock:
            changes = list(self._chains.values()) + [t.root for t in self._tcs.values()]
            self._chains.clear()
            self._covered.clear()
            self._tcs.clear()
            for c in changes:
                try:
                    self._undo(c)
                except HarnessError as exc:
                    failed.append(str(exc))
        if failed:
            raise FaultError("; ".join(failed))

    def recreate(self, specs: Iterable[ProxySpec]) -> None:
        """Toxiproxy's proxies made anew, and every node swept of every chain and qdisc of ours, whatever
        this object or the journal recorded (heal-all's second step)."""
        if self.client:
            self.client.recreate(specs)
        with self._lock:
            left = self._undo_mesh()  # a NetworkChaos is on no node's iptables: deleted by its name
            self._chains.clear()
            self._covered.clear()
            self._tcs.clear()
            left += sweep_net(self.brokers)[1] + sweep_mesh(self.brokers)[1]
            if not left:
                for a in self.journal.open_changes():
                    if a.what in NET_WHATS:
                        self.journal.mark(a.id, "undone", rc=0)
        if left:
            raise FaultError("; ".join(left))

    def unhealed(self) -> list[str]:
        """What is still faulted: Toxiproxy's disabled proxies and toxics, and every chain and qdisc of
        ours that a node's ``iptables -S``/``tc qdisc show`` lists (empty: healed)."""
        found = self.client.unhealed() if self.client else []
        found += [f"{self.brokers[c.node].node.where}: left: NetworkChaos of change {c.id}"
                  for c in self._chains.values() if c.on_control]
        did, left = sweep_net(self.brokers, remove=False)
        mesh_did, mesh_left = sweep_mesh(self.brokers, remove=False)
        # this run's own NetworkChaos are listed above, from what it holds: not twice
        ours = {c.name for c in self._chains.values() if c.on_control}
        mesh = [line for line in mesh_did if ": left: " in line and not any(line.endswith(f"/{n}") for n in ours)]
        return found + [line for line in did if ": left: " in line] + left + mesh + mesh_left

    def _undo_mesh(self) -> list[str]:
        """Every NetworkChaos of this run deleted; what could not be."""
        failed = []
        for key, c in list(self._chains.items()):
            if c.on_control:
                try:
                    self._undo(c)
                    del self._chains[key]
                except HarnessError as exc:
                    failed.append(str(exc))
        return failed

    # -- tc -----------------------------------------------------------------------------------------
    def _tc_add(self, link: str, toxic: str, fault: str, attributes: dict[str, Any]) -> None:
        b, _ = self._broker_link(link)
        t = self._tcs.get(b.node.id)
        if t is None:
            dev = b.node.net.device
            root = self._apply(b, TC_ROOT, netfaults.root_script(dev), netfaults.root_clear_script(dev),
                               {"device": dev, "link": link, "fault": fault})
            t = self._tcs[b.node.id] = _NodeTc(root, dev)
        t.toxics.setdefault(link, {})[toxic] = (fault, dict(attributes))
        try:
            self._tc_settle(b.node.id, link)
        except HarnessError:
            t.toxics[link].pop(toxic, None)
            self._tc_settle(b.node.id, link)
            raise

    def _tc_settle(self, node: int, link: str) -> None:
        """Link ``link``'s class on ``node`` as its toxics say now (gone with none; our root gone with no class)."""
        t = self._tcs[node]
        b, peer = self._broker_link(link)
        toxics = t.toxics.get(link) or {}
        if toxics:
            band = t.bands.setdefault(link, min(set(range(netfaults.FIRST_LINK_BAND, netfaults.LAST_BAND + 1))
                                                - set(t.bands.values())))
            lat = sum(float(a.get("latency", 0)) for f, a in toxics.values() if f == "latency")
            jit = sum(float(a.get("jitter", 0)) for f, a in toxics.values() if f == "latency")
            rates = [float(a.get("rate", 0)) * 8 for f, a in toxics.values() if f == "bandwidth"]  # KB/s -> kbit/s
            ran = self._run(b, netfaults.toxic_script(link, peer, t.dev, band, lat, jit, min(rates, default=0)))
            if ran.rc != 0:
                raise FaultError(f"{b.node.where}: tc on {t.dev} for {link} failed (exit {ran.rc}): "
                                 f"{(ran.err or ran.out).strip()[-400:]}")
            return
        t.toxics.pop(link, None)
        if link in t.bands:
            self._run(b, netfaults.band_clear_script(t.dev, t.bands.pop(link)))
        if not t.bands:
            del self._tcs[node]
            self._undo(t.root)


def sweep_net(brokers: dict[int, Broker], remove: bool = True) -> tuple[list[str], list[str]]:
    """Every node whose inventory allows net swept of every ``EOSC-*`` chain and ``eec1:`` root qdisc
    (``remove`` False: only listed): what each node said (``node 2 (...): removed iptables chain
    EOSC-...``), and the nodes that could not be read or swept."""
    did: list[str] = []
    left: list[str] = []
    for b in brokers.values():
        if not b.node.net.allowed:
            continue
        on, script = netfaults.placed(b.node, netfaults.sweep_script(remove), gone_ok=True)
        _sweep_on(b, b.on_control if on == "control" else b.on_node, script, ("its network rules", "its network sweep"),
                  did, left)
    return did, left


def _sweep_on(b: Broker, t: Transport, script: str, words: tuple[str, str], did: list[str], left: list[str]) -> None:
    """A sweep's ``script`` run through ``t``: each line it printed into ``did`` (``node ...: line``),
    a failure into ``left``, in ``words`` (what cannot be swept, the sweep that exited)."""
    try:
        ran = t.run(script, check=False)
    except HarnessError as exc:
        left.append(f"{b.node.where}: cannot sweep {words[0]}: {exc}")
        return
    if ran.rc != 0:
        left.append(f"{b.node.where}: {words[1]} exited {ran.rc}: {(ran.err or ran.out).strip()[-400:]}")
    did += [f"{b.node.where}: {line}" for line in ran.out.splitlines() if line.strip()]


def sweep_mesh(brokers: dict[int, Broker], remove: bool = True) -> tuple[list[str], list[str]]:
    """Every PodChaos and NetworkChaos of ours in each namespace of the inventory's Chaos Mesh nodes
    deleted (``remove`` False: only listed), once per context and namespace, through the control
    host: what each said, and what could not be read or swept. As ``sweep_net``, it trusts no journal."""
    did: list[str] = []
    left: list[str] = []
    asked: set[tuple[str | None, str]] = set()
    for b in brokers.values():
        k = b.node.control.kubectl
        if k is None or not chaos_mesh.uses_chaos_mesh(b.node) or (k.context, k.namespace) in asked:
            continue
        asked.add((k.context, k.namespace))
        _sweep_on(b, b.on_control, chaos_mesh.sweep_script(k, remove),
                  (f"the Chaos Mesh resources of namespace {k.namespace}", f"its Chaos Mesh sweep of namespace {k.namespace}"),
                  did, left)
    return did, left


def as_link_control(links: ExternalLinks | Toxiproxy) -> LinkControl:
    """Either, typed as what faults and heal use: mypy holds both to ``LinkControl`` here."""
    return links
