"""The transactional.ids of a txn-producer's producers, from its process name: the registry's
default target of a coordinator fault, the txn-producer itself and the supervisor all name them so."""

from __future__ import annotations

from harness.history.model import PRODUCER_SEP
from harness.kafka.placement import colocated


def transactional_id(name: str, k: int = 0) -> str:
    """The ``transactional.id`` of producer ``k`` of the txn-producer instance ``name`` (stable across
    its processes): ``eos-<name>`` for the first, ``eos-<name>~<k>`` (``-<j>`` added where needed)
    for the others, on the first one's coordinator (``placement.colocated``)."""
    base = f"eos-{name}"
    return base if k == 0 else colocated(base, f"{base}{PRODUCER_SEP}{k}")
