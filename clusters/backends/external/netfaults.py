"""The sh scripts that fault a link between two brokers of an external cluster on the link's SOURCE
node (the one that opens its connections): ``iptables`` chains for cuts, resets and blackholes, a
``tc`` ``htb`` root with a class per link (``netem`` in it for a delay) for latency and bandwidth; and the scripts that take them
away again, one change (``clear_script``, ``root_clear_script``) or everything of ours on a node
(``sweep_script``), each idempotent. Pure text: ``links.ExternalLinks`` runs them through the node's
transport, journaled first.

Everything the harness adds is recognisable without its journal: every chain is named ``EOSC-*``
(with a ``-m comment`` naming its link), our root qdisc has the handle ``eec1:``. A sweep removes
exactly those, so it can run after a SIGKILL of the runner, whatever the journal says.

With ``net.netns: container`` a script runs on the control host inside the container's network
namespace (``nsenter -t <pid> -n``): the container needs neither NET_ADMIN nor iptables. A stopped
container's namespace is gone, with any rule in it: clearing it is then nothing to do.
"""

from __future__ import annotations

import ipaddress
import re
import shlex
from dataclasses import dataclass
from typing import Literal

from clusters.backends.external.inventory import ResolvedNode

#: Every iptables chain the harness creates starts so; a sweep deletes every one.
CHAIN_PREFIX = "EOSC-"
#: The handle of our root qdisc (a sweep deletes a root qdisc with this handle, and no other).
ROOT_HANDLE = "eec1:"
#: Root qdiscs a kernel installs by itself: ours may replace them, and deleting ours brings the default back.
DEFAULT_QDISCS = ("noqueue", "fq_codel", "pfifo_fast", "mq", "noop")
#: Our root is ``htb`` with no default class, so ordinary traffic goes out unshaped (its direct queue);
#: a faulted link's packets go to class ``eec1:<band>``. (``htb`` rather than ``prio``: it caps a rate
#: by itself, and it is in kernels that leave ``prio`` and ``netem`` out, such as the VM this was built on.)
ROOT_KIND = "htb"
FIRST_LINK_BAND, LAST_BAND = 4, 4095
#: The rate of a class that only delays: far above any link.
UNCAPPED = "100gbit"
#: htb's quantum for our classes (its default, rate / 10, is past its bound for an uncapped class);
#: it only shares spare rate between classes, which ours do not.
QUANTUM = 60000
#: iptables chain names are at most 28 characters; ``EOSC-<tag>-<n>``.
TAG = re.compile(r"[A-Za-z0-9]{1,12}")
#: Exit code of a script that refuses a node's state it must not touch (a root qdisc someone else set).
REFUSED_RC = 3

#: Toxic kinds (chaos/toxics.py) with no form on a node, and why: they are refused on links between brokers.
NO_NODE_FORM: dict[str, str] = {
    "slicer": "slicer cuts the byte stream into small delayed chunks inside a proxy; tc and iptables on a node "
              "have no such form",
    "drop-responses": "drop-responses drops the broker's answers while its requests arrive, inside a proxy; on a "
                      "node, dropping what comes back would drop the TCP acknowledgements too and stall the "
                      "requests as well",
}
#: Which fault kinds a node carries on a link between brokers, and how.
NODE_FORMS: dict[str, str] = {
    "partition": "an iptables chain: DROP both directions", "flap": "an iptables chain, added and deleted",
    "reset-peer": "an iptables chain: REJECT with tcp-reset both directions",
    "blackhole": "an iptables chain: DROP what the source sends",
    "latency": "tc: netem in an htb class on the source's device, for the packets it sends to the peer",
    "bandwidth": "tc: an htb class's rate on the source's device, for the packets it sends to the peer",
}


@dataclass(frozen=True)
class Peer:
    """Where a link's source reaches its destination: an address (or a name resolved on the node) and a port."""

    host: str
    port: int


def chain_name(tag: str, n: int) -> str:
    """``EOSC-<tag>-<n>``: the n-th chain of the run tagged ``tag``."""
    if not TAG.fullmatch(tag):
        raise ValueError(f"{tag!r}: a chain tag is 1 to 12 letters and digits")
    return f"{CHAIN_PREFIX}{tag}-{n}"


def _ip(peer: Peer) -> str:
    """Shell lines that set ``$ip`` to the peer's IPv4 address (a name resolved on the node)."""
    try:
        return f"ip={ipaddress.IPv4Address(peer.host)}"
    except ValueError:
        h = shlex.quote(peer.host)
        return (f"ip=$(getent ahostsv4 {h} | awk 'NR==1{{print $1}}'); "
                f"[ -n \"$ip\" ] || {{ echo 'cannot resolve '{h}' on this node' >&2; exit 1; }}")


def _need(tool: str) -> str:
    return f"command -v {tool} >/dev/null || {{ echo '{tool} is not installed on this node' >&2; exit 1; }}"


Rule = tuple[Literal["OUTPUT", "INPUT"], Literal["DROP", "REJECT"]]


def _chain_script(link: str, peer: Peer, chain: str, rules: tuple[Rule, ...]) -> str:
    """A new chain ``chain`` jumped to first from OUTPUT and INPUT, holding ``rules`` for ``link``'s
    packets: OUTPUT ones to the peer's port, INPUT ones from it (its answers)."""
    c, note = shlex.quote(chain), f"-m comment --comment {shlex.quote(link)}"
    lines = ["set -e", _need("iptables"), _ip(peer), f"iptables -w -N {c}"]
    for hook, verdict in rules:
        match = f"-d \"$ip\" --dport {peer.port}" if hook == "OUTPUT" else f"-s \"$ip\" --sport {peer.port}"
        jump = "REJECT --reject-with tcp-reset" if verdict == "REJECT" else "DROP"
        if verdict == "REJECT" and hook == "INPUT":  # the resets (ours from OUTPUT too) come in as from the peer
            match += " ! --tcp-flags RST RST"
        lines.append(f"iptables -w -A {c} -p tcp {match} {note} -j {jump}")
    lines += [f"iptables -w -I OUTPUT 1 -j {c}", f"iptables -w -I INPUT 1 -j {c}"]
    return "\n".join(lines) + "\n"


def cut_script(link: str, peer: Peer, chain: str) -> str:
    """Cut ``link`` (``partition``, ``flap``): its packets dropped both ways on its source node."""
    return _chain_script(link, peer, chain, (("OUTPUT", "DROP"), ("INPUT", "DROP")))


def reset_script(link: str, peer: Peer, chain: str) -> str:
    """``reset-peer`` on ``link``: every packet either way answered with a TCP reset."""
    return _chain_script(link, peer, chain, (("OUTPUT", "REJECT"), ("INPUT", "REJECT")))


def blackhole_script(link: str, peer: Peer, chain: str) -> str:
    """``blackhole`` on ``link``: what the source sends is dropped, its connections held open."""
    return _chain_script(link, peer, chain, (("OUTPUT", "DROP"),))


def clear_script(chain: str) -> str:
    """``chain`` and its jumps gone; nothing to do when it is not there (idempotent)."""
    c = shlex.quote(chain)
    return (f"{_need('iptables')}\n"
            f"for hook in OUTPUT INPUT; do while iptables -w -D $hook -j {c} 2>/dev/null; do :; done; done\n"
            f"iptables -w -F {c} 2>/dev/null; iptables -w -X {c} 2>/dev/null; true\n")


def _root_kind(dev: str) -> str:
    return f"cur=$(tc qdisc show dev {shlex.quote(dev)} root | head -n 1); kind=$(echo \"$cur\" | awk '{{print $2}}')"


def root_script(dev: str) -> str:
    """Our ``htb`` root (``eec1:``) on ``dev``, ordinary traffic unshaped (htb's direct queue: no
    default class); kept if it is there already; refused (exit 3, naming it) over a root qdisc that is
    not a kernel default."""
    d = shlex.quote(dev)
    return (f"set -e\n{_need('tc')}\n{_root_kind(dev)}\n"
            f"case \"$cur\" in\n  \"qdisc {ROOT_KIND} {ROOT_HANDLE} \"*) ;;  # ours already\n"
            f"  *) case \"$kind\" in\n    {'|'.join(DEFAULT_QDISCS)}|'') tc qdisc replace dev {d} root handle {ROOT_HANDLE} "
            f"{ROOT_KIND} ;;\n"
            f"    *) echo \"the root qdisc of {dev} is not a kernel default ($cur): refusing to replace it\" >&2; "
            f"exit {REFUSED_RC} ;;\n  esac ;;\nesac\n")


def netem_args(latency_ms: float = 0, jitter_ms: float = 0) -> str:
    """``netem``'s arguments for a delay with jitter ("" for none: the class gets a plain fifo)."""
    if latency_ms <= 0 and jitter_ms <= 0:
        return ""
    return f"delay {round(latency_ms)}ms" + (f" {round(jitter_ms)}ms" if jitter_ms > 0 else "")


def leaf_handle(band: int) -> str:
    """The handle of the qdisc under link class ``band`` (``e004:`` for 4)."""
    return f"{0xe000 + band:x}:"


def toxic_script(link: str, peer: Peer, dev: str, band: int, latency_ms: float = 0, jitter_ms: float = 0,
                 rate_kbps: float = 0) -> str:
    """``latency``/``bandwidth`` on ``link``: our root on ``dev`` (``root_script``), an htb class
    ``eec1:<band>`` capped at ``rate_kbps`` (0: uncapped) holding ``netem`` for the delay (a fifo
    without one), and a ``u32`` filter sending the packets to the peer's address and port into it.
    Replacing an existing band's settings is the same script."""
    if not FIRST_LINK_BAND <= band <= LAST_BAND:
        raise ValueError(f"band {band}: links use bands {FIRST_LINK_BAND} to {LAST_BAND}")
    d, cls = shlex.quote(dev), f"{ROOT_HANDLE}{band}"
    rate = f"{round(rate_kbps)}kbit" if rate_kbps > 0 else UNCAPPED
    netem = netem_args(latency_ms, jitter_ms)
    leaf = (f"err=$(tc qdisc replace dev {d} parent {cls} handle {leaf_handle(band)} netem {netem} 2>&1) || "
            f"{{ echo \"netem (sch_netem) is not in the kernel of this node: no latency between brokers here ($err)\" >&2; "
            f"exit {REFUSED_RC}; }}" if netem else f"tc qdisc replace dev {d} parent {cls} handle {leaf_handle(band)} pfifo")
    return (root_script(dev) + f"{_ip(peer)}\n"
            f"tc class replace dev {d} parent {ROOT_HANDLE} classid {cls} htb rate {rate} ceil {rate} quantum {QUANTUM}\n"
            f"{leaf}\n"
            f"tc filter del dev {d} parent {ROOT_HANDLE} prio {band} 2>/dev/null || true\n"
            f"tc filter add dev {d} parent {ROOT_HANDLE} protocol ip prio {band} u32 match ip dst \"$ip\"/32 "
            f"match ip dport {peer.port} 0xffff flowid {cls}  # {link}\n")


def band_clear_script(dev: str, band: int) -> str:
    """Link class ``band`` and its filter gone; nothing to do without our root (idempotent)."""
    d = shlex.quote(dev)
    return (f"tc qdisc show dev {d} root | grep -q '^qdisc {ROOT_KIND} {ROOT_HANDLE} ' || exit 0\n"
            f"tc filter del dev {d} parent {ROOT_HANDLE} prio {band} 2>/dev/null || true\n"
            f"tc class del dev {d} classid {ROOT_HANDLE}{band} 2>/dev/null || true\n")


def root_clear_script(dev: str) -> str:
    """Our root qdisc on ``dev`` deleted (the kernel's default comes back); any other root left alone."""
    d = shlex.quote(dev)
    return (f"{_need('tc')}\n"
            f"if tc qdisc show dev {d} root | grep -q '^qdisc {ROOT_KIND} {ROOT_HANDLE} '; then tc qdisc del dev {d} root; fi\n")


def sweep_script(remove: bool = True) -> str:
    """Every ``EOSC-*`` chain (its jumps from any chain, its rules) and every root qdisc with our
    handle, on every device, removed; one line printed for each (``remove`` False: listed only, for
    ``unhealed``). Idempotent, and it trusts no journal: it reads ``iptables -S`` and ``tc qdisc show``."""
    pre, h = CHAIN_PREFIX, ROOT_HANDLE
    rm_chain = ("  iptables -w -S | awk -v c=\"$c\" '$1==\"-A\" && $(NF-1)==\"-j\" && $NF==c {print $2}' | "
                "while read -r hook; do while iptables -w -D \"$hook\" -j \"$c\" 2>/dev/null; do :; done; done\n"
                "  iptables -w -F \"$c\"; iptables -w -X \"$c\"\n") if remove else ""
    verb = "removed" if remove else "left:"
    return (
        "if command -v iptables >/dev/null; then\n"
        f"  for c in $(iptables -w -S | awk '$1==\"-N\" && index($2, \"{pre}\")==1 {{print $2}}'); do\n"
        f"  links=$(iptables -w -S \"$c\" | sed -n 's/.*--comment \\([^ ]*\\) .*/\\1/p' | sort -u | tr '\\n' ' ')\n"
        f"{rm_chain}"
        f"  echo \"{verb} iptables chain $c ($links)\"\n"
        "  done\nfi\n"
        "if command -v tc >/dev/null; then\n"
        f"  for dev in $(tc qdisc show | awk '$2==\"{ROOT_KIND}\" && $3==\"{h}\" && $6==\"root\" {{print $5}}'); do\n"
        + ("  tc qdisc del dev \"$dev\" root\n" if remove else "")
        + f"  echo \"{verb} tc root qdisc {h} on $dev\"\n"
        "  done\nfi\n")


def in_container(container: str, script: str, gone_ok: bool) -> str:
    """``script`` run on the control host inside ``container``'s network namespace (``nsenter``); a
    container that is not running has no namespace: fine when ``gone_ok`` (clearing), else an error."""
    c = shlex.quote(container)
    gone = ("echo \"container \"" + c + "\" is not running: its network namespace, with any rule in it, is gone\"; exit 0"
            if gone_ok else "echo \"container \"" + c + "\" is not running\" >&2; exit 1")
    return (f"pid=$(docker inspect -f '{{{{.State.Pid}}}}' {c} 2>/dev/null || echo 0)\n"
            f"if [ \"${{pid:-0}}\" -le 0 ]; then {gone}; fi\n"
            f"exec nsenter -t \"$pid\" -n sh -c {shlex.quote(script)}\n")


def placed(node: ResolvedNode, script: str, gone_ok: bool = False) -> tuple[Literal["node", "control"], str]:
    """Where ``script`` runs for ``node`` and as what: on the node itself, or (``netns: container``)
    on the control host through ``nsenter``."""
    if node.net.netns == "container" and node.control.docker is not None:
        return "control", in_container(node.control.docker.container, script, gone_ok)
    return "node", script
