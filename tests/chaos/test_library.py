"""The whole scenario library, each with the verdict it expects (valid, or invalid for negative
controls) and every fault applied; incident replays must show the errors of their incident. About
35 minutes per backend, so behind the `library` marker:
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


@pytest.mark.parametrize("name", scenario.names())
def test_scenario_gives_the_verdict_it_expects(cluster: Cluster, name: str) -> None:
    sc = scenario.load(name)
    seed = random.randrange(2**31)
    if sc.broker_config:
        # Broker settings a running cluster cannot take (transactional.id.expiration.ms), and one
        # cluster at a time: the session cluster makes way for one with the scenario's settings,
        # then comes back for the tests after this one.
        cluster.stop()
        try:
            result = runner.run(sc, Backend(cluster.backend), seed, new_run_dir(f"pytest-lib-{name}"), print, attach=False)
        finally:
            cluster.start()
    else:
        result = runner.run(sc, Backend(cluster.backend), seed, new_run_dir(f"pytest-lib-{name}"), print, cluster=cluster)
    v = result.verdict
    summary = {k: v[k] for k in ("valid", "as_expected")} | {"seed": seed, "stats": v["stats"],
                                                              "anomalies": {k: c["count"] for k, c in v["checks"].items() if c["count"]}}
    assert v["stats"]["nemesis_errors"] == [] and v["stats"]["healed"] is True, json.dumps(summary, default=str)
    assert v["as_expected"] is True, json.dumps(summary, default=str)
