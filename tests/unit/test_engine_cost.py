"""The Spark engine's cost per value, held to the default engine's (issue 31): a change that makes
the Spark engine's checks cost twice as much, against the default engine's, as when this was
recorded fails `make test`; so does a check that the measurement cannot time.

Both engines judge the same synthetic histories (``bench checker``'s) of two sizes, in one fresh
process (``harness/bench/engine_ratio.py``: why CPU time, why the marginal cost between two sizes,
why the quick compiler only and an allocator that keeps its memory). Every check of both registries
runs, so a new check is in the figure by being registered; one that skips on these histories costs
nothing there, and must be named in ``NOT_TIMED`` with why. ~29 s at a load of 2.5 on the reference
machine (2 cores), 39-50 s at 4-5; ~36 s of CPU, most of it a fresh JVM's first check and Spark's
fixed cost per check (docs/BENCHMARKS.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

#: Measured 2026-11-26 on the reference machine (2 cores, 24 GB, load average 2.3-3.8 from other
#: sessions), after g0 and g1c took their per-value facts from the summary (docs/BENCHMARKS.md): the
#: Spark engine's tasks and driver 10.9-12.6 us of CPU per value between 30k and 300k values (its
#: JVM compiling with C1 only), the default engine 0.35-0.40 us; seven measurements gave 27.4, 30.3,
#: 31.8, 32.0, 32.4, 33.5, 34.0. Before that change: 38.8 (36.6-40.2, 13.8-15.7 us per value).
RECORDED_RATIO = 32.0
#: The limit: 1.5 times the recorded ratio, so that a change that doubles the Spark engine's cost
#: per value (the issue's bar) is caught with room to spare, and noise is not: measurements of the
#: same code spread by -14% to +6% around the recorded one. Planted (``--spark-runs``: the Spark
#: engine's whole check run several times where it is timed once): twice, 62.7 (on the code before:
#: 74.3 and 78.9; three times, 116.4 and 118.4); all caught. A change that adds less than half is
#: not caught here (``bench checker`` at 10M values is where that shows).
LIMIT = round(1.5 * RECORDED_RATIO, 1)
#: Checks that skip on the synthetic histories (nothing there for them), so the figure does not
#: time them; each with why. A check skipped and not here fails the test: give the synthetic history
#: what it needs (harness/bench/producer_history.py ``synthetic``) or add it here with the reason.
NOT_TIMED = {
    "copy-exactly-once": "no copier in the history",
    "spark-exactly-once": "no Spark job in the history",
    "zombie-commit": "no transactional.id initialised by a second instance (nothing fenced)",
    "lso-stall": "no LSO measurement (the runner records it after a run; a verdict from the meta alone)",
    "app-map": "no app under test; the Spark engine leaves app contracts to the default engine (DEFAULT_ENGINE_ONLY)",
    "app-aggregate": "no app under test; the Spark engine leaves app contracts to the default engine (DEFAULT_ENGINE_ONLY)",
    "app-model": "no app under test; the Spark engine leaves app contracts to the default engine (DEFAULT_ENGINE_ONLY)",
    "app-windowed": "no app under test; the Spark engine leaves app contracts to the default engine (DEFAULT_ENGINE_ONLY)",
    "app-join": "no app under test; the Spark engine leaves app contracts to the default engine (DEFAULT_ENGINE_ONLY)",
    "app-pipeline": "no app under test; the Spark engine leaves app contracts to the default engine (DEFAULT_ENGINE_ONLY)",
}
#: ``g0`` and ``g1c`` (issue 31's cycle checks) are timed: they do not skip on these histories.
#: ``g0`` runs whole there (a quarter of the Spark engine's wall time at 300k values); ``g1c`` runs
#: its first query only (whether any transaction's ``M`` reaches a poll: the synthetic polls have no
#: times, and there is no copier), so a slowdown of its later queries is not seen here.
#: How long the measurement may take (~30-50 s at a load of 2.5-5, a few minutes on a busier machine).
DEADLINE_S = 600


def measured() -> dict[str, Any]:
    """``python -m harness.bench.engine_ratio``'s result, in a fresh process (its own Spark JVM)."""
    try:
        done = subprocess.run([sys.executable, "-m", "harness.bench.engine_ratio"], capture_output=True, text=True,
                              timeout=DEADLINE_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"python -m harness.bench.engine_ratio took more than {DEADLINE_S}s; "
                             f"its last output: {(e.stderr or b'')[-2000:]!r}") from None
    assert done.returncode == 0, f"python -m harness.bench.engine_ratio failed:\n{done.stderr[-3000:]}"
    # its result is the last line: the JVM shares the process's stdout and may warn on it first
    lines = done.stdout.strip().splitlines()
    assert lines, f"python -m harness.bench.engine_ratio printed nothing; its stderr:\n{done.stderr[-3000:]}"
    return dict(json.loads(lines[-1]))


def problems(r: dict[str, Any]) -> list[str]:
    """What is wrong with a measurement ``r``: checks it could not time, a ratio past ``LIMIT``."""
    found = []
    for engine, skipped in r["skipped"].items():
        untimed = sorted(set(skipped) - set(NOT_TIMED))
        if untimed:
            found.append(f"{engine} engine: {untimed} skipped on the synthetic history, so their cost is not measured: "
                         "give harness/bench/producer_history.py's synthetic history what they need, or name them in NOT_TIMED "
                         "with the reason")
    if r["ratio"] > LIMIT:
        small, big = r["sizes"]
        median = next(s for s in r["samples"] if s["ratio"] == r["ratio"])
        by_check = {e: median[f"{e}_{big}"]["by_check_s"] for e in ("default", "spark")}
        found.append(f"the Spark engine costs {r['spark_us_per_value']} us of CPU per value (its tasks and driver, between "
                     f"{small} and {big} values), {r['ratio']}x the default engine's {r['default_us_per_value']} us (rounds: "
                     f"{r['ratios']}); recorded {RECORDED_RATIO}x, the limit is {LIMIT}x. Seconds per check at {big} values: "
                     f"{json.dumps(by_check)}. Where the time goes: eos-chaos bench checker --engine spark --json (Spark's "
                     "jobs, stages and shuffles per check)")
    return found


def test_the_spark_engine_costs_per_value_under_one_and_a_half_times_its_recorded_ratio_to_the_default_engine() -> None:
    assert not problems(measured())


def _result(ratio: float, skipped: list[str]) -> dict[str, Any]:
    """A measurement's result as ``engine_ratio.measure`` gives it, reduced to what ``problems`` reads."""
    sample = {"ratio": ratio, **{f"{e}_{n}": {"by_check_s": {"summary": 1.0}} for e in ("default", "spark") for n in (1, 2)}}
    return {"sizes": [1, 2], "ratio": ratio, "ratios": [ratio], "default_us_per_value": 1.0, "spark_us_per_value": ratio,
            "skipped": {"default": skipped, "spark": skipped}, "samples": [sample]}


def test_the_guard_fires_past_its_limit_and_on_a_check_it_cannot_time() -> None:
    assert problems(_result(LIMIT, sorted(NOT_TIMED))) == []
    assert problems(_result(RECORDED_RATIO, [])) == []
    [past] = problems(_result(LIMIT * 1.01, sorted(NOT_TIMED)))
    assert "limit" in past and "summary" in past
    # the bar, with the spread of the recorded measurements (5%) below it
    assert problems(_result(2 * 0.95 * RECORDED_RATIO, sorted(NOT_TIMED)))
    untimed = problems(_result(RECORDED_RATIO, ["g1c-cycle"]))
    assert [p.split(":")[0] for p in untimed] == ["default engine", "spark engine"]
    assert all("['g1c-cycle']" in p and "NOT_TIMED" in p for p in untimed)


def test_the_measurement_refuses_sizes_it_cannot_difference(capsys: pytest.CaptureFixture[str]) -> None:
    from harness.bench.engine_ratio import main

    with pytest.raises(SystemExit) as e:
        main(["300000", "30000"])
    assert e.value.code == 2
    assert "SIZE: two sizes" in capsys.readouterr().err
