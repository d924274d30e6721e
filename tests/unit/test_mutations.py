"""Mutation testing of the checker (``harness.campaigns.selftest``): random histories of a correct Kafka with
one anomaly injected at a random place; exactly the matching check fires, with the count the
injection implies, and the untouched twins stay valid. The Spark engine's run of the same examples
is in ``test_spark_engine.py``; ``eos-chaos selftest`` runs them on a user's machine."""

from __future__ import annotations

import pytest

from harness import checker
from harness.campaigns import selftest
from harness.checker.checks import Found
from tests.unit.test_cli import cli

#: examples per anomaly kind (the issue's floor); a kind takes ~10 s on the CI machine
EXAMPLES = 200


def _judged(kind: str) -> selftest.KindResult:
    return selftest.run_default(EXAMPLES, kinds=[kind])[0]


def test_exactly_the_matching_check_fires_on_every_mutated_history() -> None:
    """Each example on its own; the kinds shared by two processes (the machine's two cores)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    kinds = [*selftest.INJECTIONS, selftest.CLEAN]
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("forkserver")) as pool:
        results = list(pool.map(_judged, kinds))
    assert [r.kind for r in results] == kinds and all(r.examples == EXAMPLES for r in results)
    wrong = {r.kind: r.wrong[:3] for r in results if r.wrong}
    assert not wrong, f"judged wrong (seed, wanted, got): {wrong}"


def test_every_injection_is_a_different_place_in_a_different_history() -> None:
    """The examples are not one history over and over: seeds give different worlds and places."""
    for kind in selftest.INJECTIONS:
        rendered = {repr(selftest.render(selftest.mutated(kind, s)[0]).ops) for s in range(20)}
        assert len(rendered) == 20, kind


def test_selftest_passes_and_lists_every_kind() -> None:
    r = cli("selftest", "--examples", "3")
    assert r.exit_code == 0, r.output
    assert all(k in r.output for k in selftest.INJECTIONS) and "OK: 30 histories, default engine" in r.output


def test_selftest_catches_a_checker_that_misses_an_anomaly(monkeypatch: pytest.MonkeyPatch) -> None:
    """The negative control: a duplicate check that never fires is reported, with the seeds."""
    monkeypatch.setitem(checker.CHECKS, "duplicate", lambda t: Found(0))
    r = cli("selftest", "--examples", "3", "--kind", "duplicate")
    assert r.exit_code == 1, r.output
    assert "FAIL" in r.output and "0: {'duplicate': 1} / {}" in r.output, r.output


def test_selftest_refuses_an_unknown_kind() -> None:
    r = cli("selftest", "--kind", "teleport")
    assert r.exit_code == 2 and "--kind teleport: no such anomaly kind" in r.output, r.output
