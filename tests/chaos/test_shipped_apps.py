"""The shipped apps under faults against real Kafka (docs/APPS.md, "The shipped apps"): each real
exactly-once application's negative control must be caught by its contract's check; their valid
runs are the README's example (py-copier) and the library's scenarios (make library runs every
`app-*` scenario with the verdict it expects)."""

from __future__ import annotations

import pytest

from clusters.base import Cluster
from tests.chaos.test_scenarios import anomalies, run_full_local_only

pytestmark = pytest.mark.chaos

ONCE = "an app is a local process on either backend, and its faults are on its processes: once is enough"


def test_the_python_services_negative_control_without_transactions_is_caught(cluster: Cluster) -> None:
    result = run_full_local_only(cluster, "app-py-copier-unsafe", ONCE)
    v = result.verdict
    assert v["valid"] is False and v["as_expected"] is True, v["checks"]["app-map"]
    assert set(anomalies(v)) == {"app-map"}, anomalies(v)  # the feeder's own input stays exactly-once
    kinds = {e["kind"] for e in v["checks"]["app-map"]["examples"]}
    assert "duplicate" in kinds and "aborted-input" in kinds, v["checks"]["app-map"]["examples"]
