"""Several producers in one txn-producer process (``producers: 4``) on the session cluster: the run
stays valid through a kill of their coordinator and a kill of the workload process (its restart
names its producers' processes after every one handed out); each producer commits under its own
transactional.id; the brokers place all four on one coordinator, so the coordinator kill hits all
of them. About 40 s on the local backend."""

from __future__ import annotations

import random

import pytest

from clusters.backends.backends import Backend
from clusters.backends.protocol import Cluster
from harness.history import store
from harness.history.model import OK
from harness.run import runner
from harness.run.scenario import Scenario
from harness.rundir.runfolder import new_run_dir
from harness.workloads.txn_producer import transactional_id

pytestmark = pytest.mark.chaos

PRODUCERS = 4


def test_four_producers_in_one_process_stay_valid_and_share_their_coordinator(cluster: Cluster) -> None:
    sc = Scenario.model_validate({
        "name": "producers-4", "description": "four producers in one process; their coordinator killed, then the process",
        "duration": 16, "workloads": [{"kind": "txn-producer", "settings": {"producers": PRODUCERS}}, {"kind": "reader"}],
        "faults": [{"at": 2, "kind": "kill", "target": "coordinator", "of": "eos-txn-producer-0", "duration": 4},
                   {"at": 10, "kind": "kill-workload", "workload": "txn-producer", "duration": 2}],
        "expect": {"valid": True, "min_ok_txns": 20}})
    result = runner.run(sc, Backend(cluster.backend), random.randrange(2**31), new_run_dir("pytest-producers"),
                        cluster=cluster)
    v = result.verdict.to_json()
    assert v["valid"] is True and v["as_expected"] is True, {k: v.get(k) for k in ("unknown_because", "run", "stats", "checks")}
    ids = {transactional_id("txn-producer-0", k) for k in range(PRODUCERS)}
    t = store.load(result.run_dir)
    committed = t.txns[t.txns["outcome"] == OK]
    assert set(committed["txn_id"].astype(str)) == ids, committed["txn_id"].value_counts()
    # the restart after the kill named its processes after every one the first process handed out
    before = set(t.inits["process"][t.inits["invoke_time"] < result.journal.faults[1].start_s * 1e9].astype(str))
    after = set(t.inits["process"][t.inits["invoke_time"] > result.journal.faults[1].start_s * 1e9].astype(str))
    assert len(before) >= PRODUCERS and len(after) >= PRODUCERS and not before & after, (before, after)
    coordinator_kill = result.journal.faults[0]
    assert coordinator_kill.hit is not None and coordinator_kill.hit.txns_open >= PRODUCERS, coordinator_kill.hit

    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=cluster.direct_bootstrap, request_timeout_ms=10_000)
    try:
        listed = admin.list_transactions()
    finally:
        admin.close()
    nodes = {node for node, txns in listed.items() for x in txns if x.transactional_id in ids}
    assert len(nodes) == 1, {node: [x.transactional_id for x in txns] for node, txns in listed.items()}
