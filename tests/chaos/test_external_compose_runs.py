"""The external backend on the compose backend's containers, driven as a user's cluster of
containers (tests/chaos/external_compose.py: every node reached by ``docker exec``, each broker its
container's PID 1) and fronted by the harness's own proxies, which rewrite the brokers' addresses:
``baseline``, ``leader-kill`` and ``kip890-late-commit-tight`` give the built-in backends' verdicts
(issue 40), as test_external_local.py's give them on a local cluster through ``local`` and ``ssh``.

``make library``: three scenario runs and up to three KIP-890 seeds on the session's compose
cluster. `make test` keeps the compose-as-external link faults (test_external_netfaults.py) and the
local cluster's baseline through the proxies."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clusters.backends.compose.compose_cluster import ComposeCluster
from clusters.backends.protocol import Cluster
from tests.chaos.cli_helpers import run
from tests.chaos.external_compose import compose_inventory
from tests.chaos.external_helpers import assert_kip890_torn_through_the_proxy, runner_env, verdict_of

pytestmark = [pytest.mark.chaos, pytest.mark.library]


@pytest.fixture
def inventory_file(cluster: Cluster, tmp_path: Path) -> Path:
    if not isinstance(cluster, ComposeCluster):
        pytest.skip("compose-as-external: the compose backend's containers")
    return compose_inventory(cluster, tmp_path / "inventory.yaml")


def _external_run(inv: Path, tmp_path: Path, name: str, seed: int, library: str | None = None) -> tuple[dict[str, Any], Path]:
    out = tmp_path / f"{name}-{seed}"
    args = ["run", name, "--inventory", str(inv), "--seed", str(seed), "--out", str(out)]
    run(args + (["--library", library] if library else []), runner_env(tmp_path), timeout=600)
    v = verdict_of(out)
    assert v["run"]["healed"] is True and v["run"]["nemesis_errors"] == [], v["run"]
    return v, out


@pytest.mark.parametrize("name", ["baseline", "leader-kill"])
def test_a_built_in_scenario_gives_its_verdict_on_containers_driven_through_docker_exec(
        inventory_file: Path, tmp_path: Path, name: str) -> None:
    v, _ = _external_run(inventory_file, tmp_path, name, 1)
    assert v["valid"] is True, v


def test_kip890_late_commits_tear_transactions_on_containers_through_the_rewriting_proxy(
        inventory_file: Path, tmp_path: Path) -> None:
    assert_kip890_torn_through_the_proxy(
        lambda seed: _external_run(inventory_file, tmp_path, "kip890-late-commit-tight", seed, "confluent-kafka"))
