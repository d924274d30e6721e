"""The Spark engine's cost per value against the default engine's, both judging the same synthetic
histories in one process (``bench checker``'s, ``harness.bench.checker.synthetic``): the guard of
``tests/unit/test_engine_cost.py`` (issue 31), and ``python -m harness.bench.engine_ratio [SMALL BIG]``.

Cost is CPU time, so that a busy machine slows both engines without moving their ratio much (wall
time on 2 shared cores moved by 2-3x between runs of the same check): the default engine's is this
process's; the Spark engine's is its tasks' (from Spark's event log) and this process's (the driver's
Python side: what it collects). The Spark JVM's other threads are left out: its compilers (the
optimizing one compiles on for several checks after a cold start) moved its total by up to 25%
between rounds, where the tasks' moved by 5%. It is the marginal cost between two sizes, per
value: what a check costs beyond its fixed part (the session, planning some 40 queries, compiling
them), which would otherwise swamp a history small enough for a unit test.

Every check of both registries runs (``checker.check``, ``spark_engine.check_run``), so a check
added to both is in the figure; the checks that skip on the synthetic history do not cost anything
there, and are listed (``skipped``) so a guard can tell a check it does not time.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: The two sizes (values) whose difference is timed: between 30k and 150k values the Spark tasks'
#: cost per value moved by 30% from round to round, between 30k and 300k by 10%.
SIZES = (30_000, 300_000)
#: Rounds of both engines at both sizes; the figure is the median round's.
ROUNDS = 3


def cpu_s() -> float:
    """CPU seconds so far of this process and every live process below it, with what their ended
    children used (Spark's JVM and anything it started)."""
    import psutil

    me = psutil.Process()
    total = 0.0
    for p in [me, *me.children(recursive=True)]:
        try:
            t = p.cpu_times()
        except psutil.Error:  # it ended meanwhile: its parent counts it once reaped
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


def event_log_conf(folder: Path) -> dict[str, str]:
    """Spark settings that write the application's event log, one plain file, into ``folder``."""
    return {"spark.eventLog.enabled": "true", "spark.eventLog.dir": folder.as_uri(), "spark.eventLog.compress": "false",
            "spark.eventLog.rolling.enabled": "false"}


def task_cpu_s(events: Path, spans: dict[Any, tuple[float, float]]) -> dict[Any, float]:
    """CPU seconds of the Spark tasks of the jobs submitted in each span (seconds since the epoch),
    from the event log in ``events``."""
    import json

    jobs: list[tuple[float, list[int]]] = []
    stage_cpu: dict[int, float] = {}
    for log_file in events.iterdir():
        for line in log_file.read_text().splitlines():
            e = json.loads(line)
            if e["Event"] == "SparkListenerJobStart":
                jobs.append((e["Submission Time"] / 1000, e["Stage IDs"]))
            elif e["Event"] == "SparkListenerStageCompleted":
                info = e["Stage Info"]
                acc = {a["Name"]: a.get("Value") for a in info.get("Accumulables", [])}
                stage_cpu[info["Stage ID"]] = int(acc.get("internal.metrics.executorCpuTime") or 0) / 1e9
    return {key: sum(stage_cpu.get(st, 0.0) for t, stages in jobs if t0 <= t <= t1 for st in stages)
            for key, (t0, t1) in spans.items()}


def _cost(run: Callable[[], Any], cpu: Callable[[], float]) -> tuple[float, float, Any]:
    """(CPU seconds by ``cpu``, wall seconds, result) of ``run()``."""
    c0, t0 = cpu(), time.monotonic()
    result = run()
    return cpu() - c0, time.monotonic() - t0, result


def measure(sizes: tuple[int, int] = SIZES, rounds: int = ROUNDS, tmp: Path | None = None) -> dict[str, Any]:
    """Both engines on the synthetic histories of ``sizes`` values, ``rounds`` times after one round
    not counted (the JVM compiling what it runs often); per round the marginal CPU cost per value of
    each engine and their ratio (Spark's over the default's). The figures are the median round's."""
    from harness.bench.checker import generate, timed_check
    from harness.checker.spark_engine import check_run
    from harness.history import store
    from harness.sparkjob.session import CHECKER_CONF, CHECKER_MEMORY, session

    with tempfile.TemporaryDirectory(prefix="eos-chaos-engine-ratio-", dir=tmp) as folder:
        dirs = {n: Path(folder) / str(n) for n in sizes}
        for n, d in dirs.items():
            generate(n, d)
        events = Path(folder) / "spark-events"
        events.mkdir()
        spark = session("eos-chaos-engine-ratio", tmp_dir=Path(folder) / "spark-tmp", memory=CHECKER_MEMORY,
                        conf={**CHECKER_CONF, **event_log_conf(events)})
        spans: dict[tuple[int, int], tuple[float, float]] = {}
        jvm: dict[tuple[int, int], float] = {}  # every process's CPU, the JVM's whole: shown, not judged
        try:
            def default(n: int, _round: int) -> tuple[float, float, Any]:
                tables = store.load(dirs[n])  # loading is not timed (as in bench checker)
                # this process only, to the nanosecond (psutil counts in clock ticks of 10 ms)
                return _cost(lambda: timed_check(tables), time.process_time)

            def spark_engine(n: int, round_: int) -> tuple[float, float, Any]:
                seconds: dict[str, float] = {}
                t0, jvm0 = time.time(), cpu_s()
                cpu, wall, verdict = _cost(lambda: check_run(dirs[n], spark, seconds), time.process_time)
                spans[(round_, n)] = (t0, time.time())
                jvm[(round_, n)] = cpu_s() - jvm0
                return cpu, wall, (verdict, seconds)

            samples: list[dict[str, Any]] = []
            for i in range(rounds + 1):
                sample: dict[str, Any] = {}
                for engine, run in (("default", default), ("spark", spark_engine)):
                    for n in sizes:
                        cpu, wall, (verdict, seconds) = run(n, i)
                        if verdict.valid is not True:
                            raise AssertionError(f"{engine} engine: the synthetic history of {n} values must be valid: "
                                                 f"{verdict.to_json()['checks']}")
                        sample[f"{engine}_{n}"] = {"cpu_s": round(cpu, 3), "wall_s": round(wall, 3), "by_check_s": seconds,
                                                   "skipped": sorted(k for k, c in verdict.checks.items() if c.skipped)}
                if i:  # round 0 warms up
                    samples.append(sample)
        finally:
            spark.stop()
        task_cpu = task_cpu_s(events, spans)
    small, big = sizes
    for i, s in enumerate(samples):
        for n in sizes:
            # the Spark engine's: the driver's Python (measured above) and the tasks
            s[f"spark_{n}"]["python_cpu_s"] = s[f"spark_{n}"]["cpu_s"]
            s[f"spark_{n}"]["task_cpu_s"] = round(task_cpu[(i + 1, n)], 3)
            s[f"spark_{n}"]["cpu_s"] = round(s[f"spark_{n}"]["cpu_s"] + task_cpu[(i + 1, n)], 3)
            s[f"spark_{n}"]["all_processes_cpu_s"] = round(jvm[(i + 1, n)], 3)
        for engine in ("default", "spark"):
            s[f"{engine}_us_per_value"] = round(1e6 * (s[f"{engine}_{big}"]["cpu_s"] - s[f"{engine}_{small}"]["cpu_s"]) / (big - small), 3)
        s["ratio"] = round(s["spark_us_per_value"] / max(s["default_us_per_value"], 1e-3), 2)
    median = statistics.median_low(s["ratio"] for s in samples)
    chosen = next(s for s in samples if s["ratio"] == median)
    return {"sizes": list(sizes), "rounds": rounds, "ratio": median, "ratios": [s["ratio"] for s in samples],
            "default_us_per_value": chosen["default_us_per_value"], "spark_us_per_value": chosen["spark_us_per_value"],
            "skipped": {"default": chosen[f"default_{big}"]["skipped"], "spark": chosen[f"spark_{big}"]["skipped"]},
            "samples": samples}


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(measure(tuple(int(x) for x in sys.argv[1:3]) if len(sys.argv) > 2 else SIZES)))  # type: ignore[arg-type]
