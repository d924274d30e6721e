"""``bench checker``'s histories: the chunked generator (for histories too large to build in memory)
writes the history the in-memory one saves, as far as the checker can tell."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from harness.bench import checker as bench_checker
from harness.checker import check
from harness.history import store


def test_the_chunked_history_is_the_in_memory_one_to_the_checker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench_checker, "CHUNK_VALUES", 600)  # ten chunks
    bench_checker.generate_chunked(6000, tmp_path / "chunked")
    bench_checker.generate(6000, tmp_path / "whole")
    chunked, whole = check(store.load(tmp_path / "chunked")), check(store.load(tmp_path / "whole"))
    assert chunked.valid is True and whole.valid is True
    assert chunked.stats == whole.stats
    for table in ("writes", "reads", "txns", store.VALUES_TABLE):
        a, b = (pq.ParquetFile(store.table_file(tmp_path / d, table)) for d in ("chunked", "whole"))
        assert a.schema_arrow.remove_metadata() == b.schema_arrow.remove_metadata(), table
        assert a.metadata.num_rows == b.metadata.num_rows, table
