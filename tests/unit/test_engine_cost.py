"""The Spark engine's cost per value, held to the default engine's (issue 31): a change that makes
the Spark engine's checks cost twice as much, against the default engine's, as when this was
recorded fails `make test`; so does a check that the measurement cannot time.

Both engines judge the same synthetic histories (``bench checker``'s) of two sizes, in one fresh
process (``harness/bench/engine_ratio.py``: why CPU time, why the marginal cost between two sizes).
Every check of both registries runs, so a new check is in the figure by being registered; one
that skips on these histories costs nothing there, and must be named in ``NOT_TIMED`` with why.
About 60 s on the reference machine (2 cores), most of it Spark's fixed cost per check."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

#: Measured 2026-11-26 on the reference machine (2 cores, 24 GB, load average 1.5-3), after issue
#: 31's work on the Spark engine: its tasks and driver ~6.1 us of CPU per value between 30k and
#: 300k values, the default engine 0.7-0.9 us; three measurements gave 7.2, 8.5 and 7.1 (their
#: rounds 6.7-9.7). The engine before that work: 11.4 and 12.5 (docs/BENCHMARKS.md).
RECORDED_RATIO = 7.2
#: The limit: twice the recorded ratio, the issue's bar ("a change that doubles the Spark engine's
#: time per value against the default engine's"). Measurements of the same code spread by 20%
#: (mostly the default engine's 0.6-0.9 us, from one process to the next), so noise stays under
#: it, and an engine whose checks each ran three times measured 26x: caught. A change that adds
#: 50% is not caught here (bench checker at 10M values is where that shows).
LIMIT = 2 * RECORDED_RATIO
#: Checks that skip on the synthetic histories (nothing there for them), so the figure does not
#: time them; each with why. A check skipped and not here fails the test: give the synthetic history
#: what it needs (harness/bench/checker.py ``synthetic``) or add it here with the reason.
NOT_TIMED = {
    "copy-exactly-once": "no copier in the history",
    "spark-exactly-once": "no Spark job in the history",
    "zombie-commit": "no transactional.id initialised by a second instance (nothing fenced)",
    "lso-stall": "no LSO measurement (the runner records it after a run; a verdict from the meta alone)",
    "app-map": "no app under test; the Spark engine leaves app contracts to the default engine (DEFAULT_ENGINE_ONLY)",
    "app-aggregate": "no app under test; the Spark engine leaves app contracts to the default engine (DEFAULT_ENGINE_ONLY)",
}
#: How long the measurement may take (it takes ~60 s quiet, a few minutes on a loaded machine).
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
    return dict(json.loads(done.stdout))


def problems(r: dict[str, Any]) -> list[str]:
    """What is wrong with a measurement ``r``: checks it could not time, a ratio past ``LIMIT``."""
    found = []
    for engine, skipped in r["skipped"].items():
        untimed = sorted(set(skipped) - set(NOT_TIMED))
        if untimed:
            found.append(f"{engine} engine: {untimed} skipped on the synthetic history, so their cost is not measured: "
                         "give harness/bench/checker.py's synthetic history what they need, or name them in NOT_TIMED "
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


def test_the_spark_engine_costs_per_value_at_most_twice_its_recorded_ratio_to_the_default_engine() -> None:
    assert not problems(measured())


def _result(ratio: float, skipped: list[str]) -> dict[str, Any]:
    """A measurement's result as ``engine_ratio.measure`` gives it, reduced to what ``problems`` reads."""
    sample = {"ratio": ratio, **{f"{e}_{n}": {"by_check_s": {"summary": 1.0}} for e in ("default", "spark") for n in (1, 2)}}
    return {"sizes": [1, 2], "ratio": ratio, "ratios": [ratio], "default_us_per_value": 1.0, "spark_us_per_value": ratio,
            "skipped": {"default": skipped, "spark": skipped}, "samples": [sample]}


def test_the_guard_fires_past_twice_the_recorded_ratio_and_on_a_check_it_cannot_time() -> None:
    assert problems(_result(LIMIT, sorted(NOT_TIMED))) == []
    assert problems(_result(RECORDED_RATIO, [])) == []
    [doubled] = problems(_result(LIMIT * 1.01, sorted(NOT_TIMED)))
    assert "limit" in doubled and "summary" in doubled
    untimed = problems(_result(RECORDED_RATIO, ["g1c-cycle"]))
    assert [p.split(":")[0] for p in untimed] == ["default engine", "spark engine"]
    assert all("['g1c-cycle']" in p and "NOT_TIMED" in p for p in untimed)
