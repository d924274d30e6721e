"""Chaos Mesh for the nodes of an external cluster that run as Kubernetes pods (``control: kubectl``):
a broker killed by a PodChaos ``pod-kill`` (its StatefulSet makes the pod again), a link between
brokers cut by a NetworkChaos ``partition``. Each resource is applied from the control host with
``kubectl apply -f -`` (the manifest on stdin), named after the run's tag, and journaled before it is
applied so heal, Ctrl-C, SIGTERM and ``cluster heal`` delete it. This module only says what runs;
lifecycle.py and links.py run it.

Untested on a real Kubernetes cluster (docs/howto/external-cluster.md says so): the unit tests drive
a fake ``kubectl`` that records what it was given.
"""

from __future__ import annotations

import re
import shlex

import yaml

from clusters.backends.external.inventory import KubectlControl, ResolvedNode
from harness.base.errors import ClusterError

API_VERSION = "chaos-mesh.org/v1alpha1"
#: What the preflight asks the API server for: the harness applies nothing when either is missing.
CRDS = ("podchaos.chaos-mesh.org", "networkchaos.chaos-mesh.org")
#: Every resource of ours carries it: ``kubectl get podchaos,networkchaos -l`` finds what a run left.
LABEL = {"app.kubernetes.io/managed-by": "eos-chaos"}
#: A Kubernetes object name: at most 63 of a-z, 0-9 and - (a DNS label), as metadata.name allows.
NAME_MAX = 63
_NOT_A_NAME = re.compile(r"[^a-z0-9-]+")
#: The here-document's end: no manifest line is this word (names and pods cannot hold underscores).
_EOF = "EOSC_MANIFEST"


def resource_name(tag: str, what: str) -> str:
    """``eosc-<tag>-<what>``, made a valid object name (the run's tag keeps two runs' apart)."""
    name = _NOT_A_NAME.sub("-", f"eosc-{tag}-{what}".lower()).strip("-")
    return name[:NAME_MAX].rstrip("-")


def kubectl(k: KubectlControl) -> str:
    """``kubectl [--context C]``: the control host's kubectl, at the node's context."""
    return shlex.join(["kubectl", *(("--context", k.context) if k.context else ())])


def _doc(kind: str, name: str, namespace: str, spec: dict[str, object]) -> str:
    body = {"apiVersion": API_VERSION, "kind": kind,
            "metadata": {"name": name, "namespace": namespace, "labels": dict(LABEL)}, "spec": spec}
    return yaml.safe_dump(body, sort_keys=False, default_flow_style=False)


def pod_kill_manifest(name: str, k: KubectlControl) -> str:
    """The PodChaos that kills the node's pod once (``mode: one`` of the one pod it selects)."""
    return _doc("PodChaos", name, k.namespace, {"action": "pod-kill", "mode": "one",
                                                 "selector": {"pods": {k.namespace: [k.pod]}}})


def partition_manifest(name: str, src: KubectlControl, dst: KubectlControl) -> str:
    """The NetworkChaos that drops what ``src``'s pod sends to ``dst``'s (``direction: to``): a TCP
    connection either opens is cut both ways, as the node form of ``partition`` is (links.py)."""
    return _doc("NetworkChaos", name, src.namespace, {
        "action": "partition", "mode": "all", "selector": {"pods": {src.namespace: [src.pod]}},
        "direction": "to", "target": {"mode": "all", "selector": {"pods": {dst.namespace: [dst.pod]}}}})


def apply_script(k: KubectlControl, manifest: str) -> str:
    """``kubectl apply -f -`` with ``manifest`` on its stdin (a here-document: nothing in it is expanded)."""
    return f"{kubectl(k)} apply -f - <<'{_EOF}'\n{manifest.rstrip()}\n{_EOF}"


def delete_script(k: KubectlControl, kind: str, name: str, namespace: str) -> str:
    """The undo of an applied resource: idempotent (already gone is no error)."""
    return f"{kubectl(k)} delete {kind.lower()} {shlex.quote(name)} -n {shlex.quote(namespace)} --ignore-not-found"


def kill_name(tag: str, node: ResolvedNode) -> str:
    return resource_name(tag, f"kill-n{node.id}")


def kill_script(tag: str, node: ResolvedNode) -> str:
    """The kill: an earlier kill's PodChaos of that name (this run's, this node's) deleted, since a
    PodChaos kills once, when it is made, and one applied again unchanged would do nothing; then
    this one applied."""
    k = _kubectl_of(node)
    name = kill_name(tag, node)
    return f"{delete_script(k, 'PodChaos', name, k.namespace)} && {apply_script(k, pod_kill_manifest(name, k))}"


def kill_undo(tag: str, node: ResolvedNode) -> str:
    k = _kubectl_of(node)
    return delete_script(k, "PodChaos", kill_name(tag, node), k.namespace)


def status_script(k: KubectlControl) -> str:
    """``up`` while the pod is Ready and not being deleted, else ``down`` (gone, terminating, starting)."""
    path = "{.metadata.deletionTimestamp}/{.status.conditions[?(@.type==\"Ready\")].status}"
    get = f"{kubectl(k)} get pod {shlex.quote(k.pod)} -n {shlex.quote(k.namespace)} -o jsonpath={shlex.quote(path)}"
    return f"s=$({get} 2>/dev/null); if [ \"$s\" = /True ]; then echo up; else echo down; fi"


def stop_script(k: KubectlControl) -> str:
    """A graceful stop: the pod deleted (SIGTERM, its grace period), its StatefulSet makes it again."""
    return f"{kubectl(k)} delete pod {shlex.quote(k.pod)} -n {shlex.quote(k.namespace)} --wait=true --timeout=90s"


def cut_name(tag: str, link: str) -> str:
    return resource_name(tag, f"cut-{link}")


def sweep_script(k: KubectlControl, remove: bool = True) -> str:
    """Every PodChaos and NetworkChaos of ours (``LABEL``) in the node's namespace deleted, one line
    printed for each (``remove`` False: listed only, ``left: ...``): what a journal line torn by a
    crash, or a change made by hand, leaves behind. It trusts no journal: it asks the API server."""
    selector = ",".join(f"{key}={value}" for key, value in LABEL.items())
    get = (f"{kubectl(k)} get podchaos,networkchaos -n {shlex.quote(k.namespace)} -l {shlex.quote(selector)} "
           "-o name")
    if not remove:
        return f"{get} | sed -n 's/^./left: &/p'"
    return (f"for r in $({get}); do {kubectl(k)} delete \"$r\" -n {shlex.quote(k.namespace)} --ignore-not-found "
            ">/dev/null && echo \"removed $r\"; done")


def crd_script(k: KubectlControl) -> str:
    """Reads only: exits non-zero naming what is missing when Chaos Mesh's CRDs are not installed."""
    return f"{kubectl(k)} get crd {' '.join(CRDS)}"


def uses_chaos_mesh(node: ResolvedNode) -> bool:
    return node.broker.chaos_mesh is not None or node.net.chaos_mesh


def _kubectl_of(node: ResolvedNode) -> KubectlControl:
    k = node.control.kubectl
    if k is None:  # the inventory refuses chaos_mesh without kubectl: a node built in code may not
        raise ClusterError(f"{node.where}: Chaos Mesh needs a kubectl control (its control is {node.control.kind})")
    return k
