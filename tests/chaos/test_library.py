"""The whole scenario library, each with the verdict it expects (valid, or invalid for negative
controls) and every fault applied; incident replays must show the errors of their incident. About
20 minutes per backend, so behind the `library` marker:
`make library` (or `pytest -m library`); `make test` leaves it out."""

from __future__ import annotations

import json
import random

import pytest

from clusters.backends import Backend
from clusters.base import Cluster
from harness import runner, scenario
from harness.runs import new_run_dir

pytestmark = [pytest.mark.chaos, pytest.mark.library]

#: Where a scenario with broker settings starts its own cluster (away from the session cluster's
#: ports, and for compose its subnets, which move with the port base).
OWN_PORT_BASE = {"local": 19392, "compose": 29392}


@pytest.mark.parametrize("name", scenario.names())
def test_scenario_gives_the_verdict_it_expects(cluster: Cluster, name: str) -> None:
    sc = scenario.load(name)
    seed = random.randrange(2**31)
    if sc.broker_config:
        # broker settings a running cluster cannot take (e.g. transactional.id.expiration.ms): a
        # cluster of its own, beside the idle session cluster, with the scenario's settings
        result = runner.run(sc, Backend(cluster.backend), seed, new_run_dir(f"pytest-lib-{name}"), print,
                            port_base=OWN_PORT_BASE[cluster.backend], attach=False)
    else:
        result = runner.run(sc, Backend(cluster.backend), seed, new_run_dir(f"pytest-lib-{name}"), print, cluster=cluster)
    v = result.verdict
    summary = {k: v[k] for k in ("valid", "as_expected")} | {"seed": seed, "stats": v["stats"],
                                                              "anomalies": {k: c["count"] for k, c in v["checks"].items() if c["count"]}}
    assert v["stats"]["nemesis_errors"] == [] and v["stats"]["healed"] is True, json.dumps(summary, default=str)
    assert v["as_expected"] is True, json.dumps(summary, default=str)
