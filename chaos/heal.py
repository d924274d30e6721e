"""Heal-all: what runs at the end of every run whatever happened (faults ended early, the runner
interrupted, a fault that failed half-way): every link clean (Toxiproxy and the wire proxy: no
rule, nothing held), every node up, the cluster healthy.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from clusters.backends.protocol import Cluster, NodeState
from harness.base.errors import WaitTimeout
from harness.base.wait import wait_until
from harness.kafka import features

log = logging.getLogger(__name__)


def heal_network(cluster: Cluster) -> list[str]:
    """What is still wrong with the links (empty = healed) after bringing every link back to a
    clean proxy, escalating while the last step did not heal: ``/reset``, then delete and recreate
    every proxy, then restart the Toxiproxy server. Each API call has a timeout
    (clusters/toxiproxy/toxiproxy_api.py), so a hung server costs seconds, not the run."""
    return _escalate("", [
        ("reset", cluster.toxiproxy.reset),
        ("recreate proxies", lambda: cluster.toxiproxy.recreate(cluster.proxy_specs())),
        ("restart toxiproxy", cluster.restart_toxiproxy),
    ], lambda: cluster.toxiproxy.unhealed(), what="toxiproxy", left_says="still faulted links")


#: A reset releases every held request at once; delivering them takes milliseconds.
WIRE_RELEASE_TIMEOUT_S = 10.0


def heal_wire(cluster: Cluster) -> list[str]:
    """What is still wrong with the wire proxy (empty = healed) after removing every rule and
    delivering every held request (``/reset``), escalating to a restart of the proxy when that did
    not do it. Held requests are delivered by the proxy's connections after the reset answers, so
    healed means: no rule, and nothing held, within ``WIRE_RELEASE_TIMEOUT_S``."""
    return _escalate("wire proxy ", [("reset", cluster.wire.reset), ("restart", cluster.restart_wire)],
                     lambda: _wire_left(cluster), what="wire proxy", left_says="still")


def _escalate(label: str, steps: list[tuple[str, Callable[[], object]]], left: Callable[[], list[str]], what: str,
              left_says: str) -> list[str]:
    """Run ``steps`` in order until ``left()`` finds nothing wrong after one: [] when healed, else
    what each step left (a step that failed is answered by the next). ``label`` prefixes the
    escalation's log line."""
    problems: list[str] = []
    for i, (name, step) in enumerate(steps):
        if i:
            log.info(f"heal: escalating to {label}'{name}' ({problems[-1]})")
        try:
            step()
            still = left()
        except Exception as exc:  # noqa: BLE001 - the next step is the answer
            problems.append(f"{what} {name}: {exc}")
            continue
        if not still:
            return []
        problems.append(f"after {what} {name}, {left_says}: {still}")
    return problems


def _wire_left(cluster: Cluster) -> list[str]:
    """What the wire proxy still holds or has as rules once ``WIRE_RELEASE_TIMEOUT_S`` passed
    (held requests are delivered just after a reset answers); [] as soon as it is clean."""
    left: list[str] = []

    def clean() -> bool:
        left[:] = cluster.wire.unhealed()
        return not left

    try:
        wait_until(clean, timeout=WIRE_RELEASE_TIMEOUT_S, what="the wire proxy to have no rule and nothing held",
                   state=lambda: f"still: {left}")
    except WaitTimeout:
        return left
    return []


def heal_all(cluster: Cluster) -> list[str]:
    """What could not be healed (empty = healed) after healing the network (escalating, see
    ``heal_network``), resuming and restarting every node and waiting until the cluster is healthy."""
    problems = heal_network(cluster) + heal_wire(cluster)
    for n in cluster.topology.node_ids:
        try:
            state = cluster.node_state(n)
            if state is NodeState.PAUSED:
                cluster.resume(n)
            elif state is NodeState.DOWN:
                log.info(f"heal: restarting node {n}")
                cluster.restart(n)
        except Exception as exc:  # noqa: BLE001
            problems.append(f"node {n}: {exc}")
    try:
        cluster.wait_healthy()
    except Exception as exc:  # noqa: BLE001
        problems.append(f"health: {exc}")
        return problems  # a feature update needs a healthy controller
    return problems + heal_features(cluster)


def heal_features(cluster: Cluster) -> list[str]:
    """Put every feature level the cluster was formatted at back (``Cluster.feature_levels``: a
    ``set-transaction-version`` a killed run never healed); what could not be, as problems."""
    try:
        have = features.finalized(cluster.direct_bootstrap)
        for name, level in cluster.feature_levels().items():
            if have.get(name) != level:
                log.info(f"heal: {name} {have.get(name)} -> {level} (the level the cluster was formatted at)")
                features.update(cluster.direct_bootstrap, name, level)
    except Exception as exc:  # noqa: BLE001 - reported as a heal problem
        return [f"features: {exc}"]
    return []
