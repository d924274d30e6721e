"""kafka-python as the workloads' client on a real cluster: the transactional baseline comes out
valid, and its read_uncommitted reader is caught reading aborted records (the negative control,
so a valid run on this client means something). Local backend only: what is tested is the client,
the same against either backend's brokers; both runs are shortened to keep `make test` short."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.chaos

LIBRARY = "kafka-python"


def on_kafka_python(abort_share: float, reader_client: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Two transactional producers and a reader, all on kafka-python."""
    return [{"kind": "txn-producer", "count": 2, "library": LIBRARY,
             "settings": {"values_per_txn": 6, "abort_share": abort_share}},
            {"kind": "reader", "count": 1, "library": LIBRARY, "client": reader_client or {}}]


@pytest.fixture(autouse=True)
def local_only(kafka_cluster: Any) -> None:
    if kafka_cluster.backend != "local":
        pytest.skip("the client is what is tested, the same against either backend: run once (local)")


# in `make library` since the app scenarios came into `make test`: 24 s, or 99 s when a producer's
# coordinator is the node killed (it waits out its flush deadline); kafka-python's reader and
# producer stay in `make test` through the negative control below
@pytest.mark.library
def test_txn_baseline_is_valid_on_kafka_python(run_scenario: Any) -> None:
    # one leader kill, early: the producers wait out the failover (~11 s here: the dead broker's
    # session timeout, then the election) and have some seconds left to commit after it. A producer
    # whose transaction coordinator was the node killed stalls until its 30 s flush deadline
    # (docs/CLIENTS-PYTHON.md), so the minimum is what the other one commits.
    v = run_scenario("txn-baseline", duration=20, workloads=on_kafka_python(0.1),
                     faults=[{"at": 5, "kind": "kill-leader", "duration": 4}], expect={"valid": True, "min_ok_txns": 10})
    assert v.valid and v["as_expected"] is True, v.summary()
    assert v["stats"]["reads"]["polled"] > 0 and v["stats"]["faults"] == 1, v["stats"]


def test_negative_control_aborted_read_is_caught_on_kafka_python(run_scenario: Any) -> None:
    v = run_scenario("negative-aborted-read", duration=12, workloads=on_kafka_python(0.33, {"isolation_level": "read_uncommitted"}))
    assert v["valid"] is False and v["checks"]["aborted-read"]["count"] > 0, v.summary()
