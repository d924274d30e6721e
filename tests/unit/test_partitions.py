"""Which links each network fault touches, on the 3-node topology."""

from __future__ import annotations

import pytest

from chaos.partitions import links
from clusters.kafka.topology import Topology

T = Topology()


def names(kind: str, node: int, listeners: str = "all", peer: int | None = None) -> set[str]:
    return {lk.name for lk in links(T, kind, node, listeners, peer)}


def test_isolate_node_cuts_every_link_in_and_out_clients_included() -> None:
    got = names("isolate-node", 2)
    assert "client-to-n2" in got and "client-to-n1" not in got
    assert {"n1-to-n2-internal", "n2-to-n1-internal", "n3-to-n2-controller", "n2-to-n3-controller"} <= got
    assert not any(n.startswith(("n1-to-n3", "n3-to-n1")) for n in got)
    assert len(got) == 1 + 4 * 2  # client link + 4 directed pairs x 2 listeners


def test_minority_keeps_its_clients_and_loses_its_peers() -> None:
    got = names("majority-minority", 1)
    assert not any(n.startswith("client") for n in got) and len(got) == 8


def test_directed_is_one_direction_of_one_pair_per_listener() -> None:
    assert names("directed", 3, "internal", peer=1) == {"n3-to-n1-internal"}
    assert names("directed", 3, "all", peer=1) == {"n3-to-n1-internal", "n3-to-n1-controller"}
    with pytest.raises(ValueError, match="needs a peer"):
        names("directed", 3)


def test_clients_from_node_and_bridge() -> None:
    assert names("clients-from-node", 3) == {"client-to-n3"}
    assert names("bridge", 2, "internal") == {"n1-to-n3-internal", "n3-to-n1-internal"}


def test_listener_sets_filter_and_bad_input_names_what_is_allowed() -> None:
    assert all(n.endswith("-controller") for n in names("isolate-node", 1, "controller"))
    assert names("isolate-node", 1, "client") == {"client-to-n1"}
    with pytest.raises(ValueError, match="allowed: isolate-node"):
        names("split-brain", 1)
    with pytest.raises(ValueError, match="allowed: internal"):
        names("isolate-node", 1, "raft")
