"""The feeder's shaped input against real Kafka (docs/APPS.md, "The feeder"): the shipped Python copier
fed lines of a small vocabulary by ``harness.apps.generators:lines`` (the same lines again and again),
one instance killed -9 while it copies. Every record carries its id header, the history's values are
the ids (unique), the payloads repeat, and the run is valid: the feeder's own checks judge by ids
(the readers took the header's id as the value), the identity contract by the payloads."""

from __future__ import annotations

import random

import pytest

from clusters.backends.backends import Backend
from clusters.backends.protocol import Cluster
from harness.apps.functions import java_words
from harness.apps.generators import VOCABULARY
from harness.history import store
from harness.pytest_plugin.app_fixture import app_scenario
from harness.run import runner
from harness.run.scenario import Scenario
from harness.rundir.runfolder import new_run_dir

pytestmark = pytest.mark.chaos

#: The feeder's own checks: each must have judged the history (not skipped) and found nothing.
FEEDER_CHECKS = ("lost-write", "aborted-read", "duplicate", "phantom-read")


def test_a_copier_fed_repeating_lines_is_valid_judged_by_ids_and_payloads(cluster: Cluster) -> None:
    if cluster.backend != "local":
        pytest.skip("an app is a local process on either backend: once is enough")
    command = ["{python}", "-m", "harness.apps.py_copier", "--bootstrap", "{bootstrap}", "--input", "{topic:app-in}",
               "--output", "{topic:app-out}", "--group", "{id}", "--txn-id", "{id}-{instance}"]
    fields = app_scenario("feeder-lines", command, ["app-in"], ["app-out"], {"kind": "map"}, {"log": "copying from"},
                          instances=2, duration=15, faults=[{"at": 6, "kind": "kill-workload", "workload": "app", "duration": 3}],
                          feeder={"generator": "harness.apps.generators:lines", "values_per_txn": 10, "abort_share": 0.2,
                                  "rate": 200})
    # the 500 lines the test needs (~40 committed transactions of 10, a fifth aborted besides): about 3 s
    # of feed when idle; a run of the suite beside another eos-chaos run (load 20 to 36) fed 470 in 15 s.
    # The run waits for them (at most its duration more), as a scenario's min_ok_txns makes it
    fields["expect"]["min_ok_txns"] = 50
    result = runner.run(Scenario.model_validate(fields), Backend(cluster.backend), random.randrange(2**31),
                        new_run_dir("pytest-feeder-lines"), cluster=cluster)
    v = result.verdict.to_json()
    assert result.valid, v
    for name in (*FEEDER_CHECKS, "app-map"):
        c = v["checks"][name]
        assert c["count"] == 0 and not c.get("skipped"), (name, c)
    t = store.load(result.run_dir)
    payloads = t.payloads["payload"].astype(object)
    words = [w for line in payloads for w in java_words(line)]
    assert len(t.payloads) > 500 and payloads.duplicated().any() and len(set(words)) <= len(VOCABULARY)  # both repeat
    ids = store.with_values(t, t.writes)["value"]
    assert len(ids) == len(t.payloads) and not ids.duplicated().any()  # the ids do not
    assert t.app_outputs["value"].astype(object).isin(set(payloads)).all()  # the app copied the lines
