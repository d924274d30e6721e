"""The checker's two engines agree: on every hand-written history (clean, each anomaly, the Spark
job's), and on random histories of a correct Kafka, the Spark engine's verdict has the default
engine's ``valid``, every check's count and ``skipped``, as many examples, and the same ``stats``.

One Spark session (``local[2]``) for the module. The histories are tiny, so it runs without code
generation and with one shuffle partition: compiling each query would cost more than running it."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.checker import check
from harness.history import store
from tests.unit.cycle_histories import CASES as CYCLE_CASES
from tests.unit.histories import MALFORMED_COPIES, History, clean, many_topics, simulate
from tests.unit.test_checker import ANOMALIES, nothing_for, stalled, without_final_reads
from tests.unit.test_figures import lagging
from tests.unit.test_progress_under_faults import under_faults
from tests.unit.test_spark_check import spark_history
from tests.unit.test_spark_sink import executor_history

SPARK_VARIANTS = ["", "duplicate-output", "missing-output", "orphan-output", "outside-range", "marker-gap",
                  "batch-incarnations"]


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from harness.sparkjob.session import session

    tiny = {"spark.sql.codegen.wholeStage": "false", "spark.sql.shuffle.partitions": "1",
            "spark.default.parallelism": "1", "spark.sql.adaptive.enabled": "false"}
    s = session("eos-chaos-engine-test", tmp_dir=tmp_path_factory.mktemp("spark-tmp"), conf=tiny)
    yield s
    s.stop()


def both(h: History, tmp: Path, spark: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    from harness.checker.spark_engine import check_run

    tables = h.tables()
    default = check(tables).to_json()
    store.save(tables, tmp)
    return default, check_run(tmp, spark=spark).to_json()


def assert_same(default: dict[str, Any], by_spark: dict[str, Any]) -> None:
    assert (by_spark["valid"], by_spark["unknown_because"]) == (default["valid"], default["unknown_because"])
    for name, c in default["checks"].items():
        s = by_spark["checks"][name]
        assert "error" not in s, f"{name} crashed on Spark: {s.get('traceback')}"
        assert (s["count"], s.get("skipped")) == (c["count"], c.get("skipped")), (name, s, c)
        assert len(s["examples"]) == len(c["examples"]), (name, s["examples"], c["examples"])
        # positions are {topic, partition, offset} objects in both, under the same keys
        assert sorted(map(_position_keys, s["examples"])) == sorted(map(_position_keys, c["examples"])), name
    assert list(by_spark["checks"]) == list(default["checks"])
    assert by_spark["stats"] == default["stats"]


def _position_keys(example: dict[str, Any]) -> list[str]:
    """The keys of an example whose value is a position object, or a non-empty list of them."""
    def is_position(v: Any) -> bool:
        return isinstance(v, dict) and set(v) == {"topic", "partition", "offset"}

    return sorted(k for k, v in example.items()
                  if is_position(v) or (isinstance(v, list) and v and all(is_position(x) for x in v)))


#: checks whose examples both engines pick the same way (history order decides, no ties)
SAME_EXAMPLES = ("lost-write", "int-nonmonotonic-send", "wrong-offset", "precommitted-read", "aborted-read", "phantom-read",
                 "torn-transaction", "nonmonotonic-poll", "poll-skip", "zombie-commit", "duplicate", "inconsistent-offsets")


def each_check_alone() -> list[tuple[str, History]]:
    """A clean history and one where each check fires alone: the equivalence `make test` holds."""
    return [("clean", clean())] + [(a, clean(a)) for a in ANOMALIES] + [("zombie-commit-clean", clean("zombie-commit-clean"))]


def the_other_histories() -> list[tuple[str, History]]:
    """The Spark job's, big topic ids, lagging and stalled readers, nothing to judge: `make library`."""
    cases = [(f"spark:{v or 'clean'}", spark_history(v)) for v in SPARK_VARIANTS]
    cases += [("spark-builtin", spark_history(sink="builtin")), ("spark-builtin-replayed", spark_history("replayed", sink="builtin"))]
    cases += [(f"spark-executor:{v or 'clean'}", executor_history(v)) for v in ("", "overlap", "uncovered-input", "batch-incarnations")]
    cases += [("lost-write-seen", clean("lost-write-seen"))]
    # values in the copier's output that are not copies: clean, and with malformed copies beside them
    cases += [(v, clean(v)) for v in ("copy-foreign", "copy-malformed")]
    # each cycle variant of g0 and g1c, and their clean twins (tests/unit/cycle_histories.py)
    cases += [(f"cycles:{name}", h) for name, (h, _, _) in CYCLE_CASES.items()]
    # topic ids past 7 bits (positions packed with the topic on top), with a duplicate in topic 299
    cases += [("300-topics:duplicate", many_topics(300, duplicate_in_last=True))]
    # a reader that falls behind: unseen and realtime_lag other than zero
    cases += [("lagging", lagging())]
    cases += [(f"stalled-at-{at}", stalled(at)) for at in (0, 6)]
    # nothing to judge, or nothing for some checks: the same reasons (``skipped``, ``unknown_because``)
    cases += [("no-final-reads", without_final_reads(clean())), ("no-final-reads:aborted-read", without_final_reads(clean("aborted-read"))),
              ("empty", History())] + [(f"nothing:{v}", nothing_for(v)) for v in ("no-polls", "no-fail", "no-copier")]
    # workloads idle while the faults ran, or working through them (``progress_under_faults``)
    cases += under_faults()
    return cases


def assert_engines_agree(cases: list[tuple[str, History]], spark: Any, tmp_path: Path) -> None:
    for name, h in cases:
        default, by_spark = both(h, tmp_path / name.replace(":", "-"), spark)
        try:
            assert_same(default, by_spark)
            if name in SAME_EXAMPLES:
                assert by_spark["checks"][name]["examples"] == default["checks"][name]["examples"], "examples differ"
        except AssertionError as exc:
            raise AssertionError(f"history {name}: {exc}") from exc


# 1.8 min: in `make library` since the app scenarios came into `make test`; the engines' agreement
# stays there through every mutated history and the random correct one (below)
@pytest.mark.library
def test_the_engines_agree_on_each_check_firing_alone(spark: Any, tmp_path: Path) -> None:
    assert_engines_agree(each_check_alone(), spark, tmp_path)


# 2 of the 3.5 min the whole set took in `make test`: the rest of the hand-written histories run in
# `make library` (each check's own firing stays above)
@pytest.mark.library
def test_the_engines_agree_on_every_other_hand_written_history(spark: Any, tmp_path: Path) -> None:
    assert_engines_agree(the_other_histories(), spark, tmp_path)


def test_the_engines_draw_the_same_cycles(spark: Any, tmp_path: Path) -> None:
    """g0 and g1c (the Spark engine's window and queries): the same counts and examples on one
    history holding a copier's G1c-realtime and a G0-realtime; every variant runs in `make library`."""
    from tests.unit.cycle_histories import copier_realtime

    h = copier_realtime()
    h.txn("p3", [("u", 0, "a", 1)])
    h.txn("p4", [("u", 0, "b", 0)])
    h.scan({"u-0": [(0, "b"), (1, "a")]})
    default, by_spark = both(h, tmp_path, spark)
    assert {n: c["count"] for n, c in default["checks"].items() if c["count"]} == {"g0": 1, "g1c": 1}
    assert_same(default, by_spark)
    for name in ("g0", "g1c"):
        assert by_spark["checks"][name]["examples"] == default["checks"][name]["examples"], name


# ~10 s: in `make library` (the suite's budget); the path above is the one every valid history takes
@pytest.mark.library
def test_the_engines_draw_the_same_cycles_without_the_summarys_per_value_table(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same, where a value elsewhere is read at two positions (a duplicate): the summary keeps no
    per-value table then, and M comes from the version order and the polls
    (harness/checker/spark_cycles.py ``_per_value_rows``)."""
    from harness.checker import spark_cycles
    from tests.unit.cycle_histories import copier_realtime

    h = copier_realtime()
    h.txn("p3", [("u", 0, "a", 1)])
    h.txn("p4", [("u", 0, "b", 0)])
    h.txn("p5", [("w", 0, "d", 0)])
    h.scan({"u-0": [(0, "b"), (1, "a")], "w-0": [(0, "d"), (1, "d")]})
    kept = []
    rows = spark_cycles._per_value_rows
    monkeypatch.setattr(spark_cycles, "_per_value_rows", lambda sh: kept.append(sh.per_value is not None) or rows(sh))
    default, by_spark = both(h, tmp_path, spark)
    assert kept == [False]
    assert (default["checks"]["g0"]["count"], default["checks"]["g1c"]["count"], default["checks"]["duplicate"]["count"]) == (1, 1, 1)
    assert_same(default, by_spark)
    for name in ("g0", "g1c"):
        assert by_spark["checks"][name]["examples"] == default["checks"][name]["examples"], name


def test_the_engines_judge_foreign_values_and_malformed_copies_in_a_copiers_output_alike(spark: Any, tmp_path: Path) -> None:
    """Values in the copier's output that are not copies are not judged, and each malformed copy
    (among them the strings where Arrow's and Spark's parsing could differ) is a finding of
    copy-exactly-once alone; the clean twin (no malformed copy) runs in `make library` (~7 s each)."""
    default, by_spark = both(clean("copy-malformed"), tmp_path, spark)
    assert_same(default, by_spark)
    assert by_spark["checks"]["copy-exactly-once"]["examples"] == default["checks"]["copy-exactly-once"]["examples"]
    assert {n: c["count"] for n, c in by_spark["checks"].items() if c["count"]} == {"copy-exactly-once": len(MALFORMED_COPIES)}


def test_the_engines_agree_on_a_random_history_of_a_correct_kafka(spark: Any, tmp_path: Path) -> None:
    h = simulate(random.Random(7), producers=3, txns=60, partitions=3, readers=2)
    default, by_spark = both(h, tmp_path, spark)
    assert default["valid"] is True
    assert_same(default, by_spark)


def test_the_spark_engine_judges_every_mutated_history_as_the_default_engine(spark: Any, tmp_path: Path) -> None:
    """``test_mutations``'s examples (200 per anomaly kind, and their clean twins) in one history:
    each kind's check totals its examples' counts and no other check fires, on both engines."""
    from harness.campaigns import selftest
    from tests.unit.test_mutations import EXAMPLES

    h, want = selftest.combined(EXAMPLES)
    default, by_spark = both(h, tmp_path, spark)
    assert_same(default, by_spark)
    assert {n: c["count"] for n, c in by_spark["checks"].items() if c["count"]} == want
