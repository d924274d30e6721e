"""A compose node's pause when runc cannot freeze its container in time (a starved machine): tried
again within a deadline; any other refusal, and the deadline, are errors that say so. The container
is a stand-in that refuses as the Docker engine does (its 500 with runc's message)."""

from __future__ import annotations

import pytest
from docker.errors import APIError

from clusters.backends.compose import compose_cluster
from harness.base.errors import ClusterError

FREEZE = "Cannot pause container 49e4: OCI runtime pause failed: unable to freeze: unknown"


class Container:
    def __init__(self, refusals: list[str]) -> None:
        self.refusals, self.calls = refusals, 0

    def pause(self) -> None:
        self.calls += 1
        if self.refusals:
            raise APIError("500 Server Error", explanation=self.refusals.pop(0))


@pytest.fixture(autouse=True)
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compose_cluster, "PAUSE_RETRY_S", 0.01)


def test_a_container_runc_could_not_freeze_twice_is_paused_the_third_time() -> None:
    c = Container([FREEZE, FREEZE])
    compose_cluster.pause_container(c, 3)  # type: ignore[arg-type]
    assert c.calls == 3


def test_its_twin_frozen_at_once_is_asked_once() -> None:
    c = Container([])
    compose_cluster.pause_container(c, 3)  # type: ignore[arg-type]
    assert c.calls == 1


def test_another_refusal_is_raised_at_once() -> None:
    c = Container(["Container 49e4 is not running"])
    with pytest.raises(APIError, match="not running"):
        compose_cluster.pause_container(c, 3)  # type: ignore[arg-type]
    assert c.calls == 1


def test_a_container_that_never_freezes_is_a_cluster_error_at_the_deadline_naming_node_and_cause(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compose_cluster, "PAUSE_TIMEOUT_S", 0.2)
    c = Container([FREEZE] * 10_000)
    with pytest.raises(ClusterError, match=r"node 3's container did not pause within 0.2s: runc could not freeze it"):
        compose_cluster.pause_container(c, 3)  # type: ignore[arg-type]
    assert c.calls > 1
