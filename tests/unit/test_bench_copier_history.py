"""``bench checker --copier``'s history (harness/bench/copier_history.py): valid as built, every copy
read by g1c as a copier's read (so the benchmark times that path), and a copy planted before its
input's transaction began is found."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from harness.bench.copier_history import COPIER, copier_synthetic
from harness.checker import check
from harness.checker.cycle_checks import _copier_reads, version_order
from harness.history import store

N = 6000


def test_the_copier_history_is_valid_and_each_copy_is_a_read_of_its_input(tmp_path: Path) -> None:
    store.save(copier_synthetic(N), tmp_path)
    t = store.load(tmp_path)
    v = check(t)
    assert v.valid is True, v.to_json()["checks"]
    assert v.checks["copy-exactly-once"].skipped is None and v.checks["g1c"].skipped is None
    committed = v.stats["committed_values"] // 2  # half of them are the copies
    reads = _copier_reads(t, version_order(t))
    assert reads is not None and len(reads.writer) == committed


def test_a_copy_made_before_its_input_was_written_is_a_g1c() -> None:
    t = copier_synthetic(N)
    copier = np.flatnonzero((t.txns["process"] == COPIER).to_numpy())[0]
    t.txns.loc[copier, ["invoke_time", "complete_time", "commit_at"]] = [0, 40, 30]  # before every producer
    v = check(t)
    assert {n: c.count for n, c in v.checks.items() if c.count} == {"g1c": 1}, v.to_json()["checks"]
    assert v.checks["g1c"].examples[0]["anomaly"] == "G1c-realtime"
