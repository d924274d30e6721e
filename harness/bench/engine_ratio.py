"""The Spark engine's cost per value against the default engine's, both judging the same synthetic
histories in one process (``bench checker``'s, ``harness.bench.producer_history.synthetic``): the guard of
``tests/unit/test_engine_cost.py`` (issue 31), and ``python -m harness.bench.engine_ratio [SMALL BIG]
[--rounds N] [--spark-runs N] [--jvm c1|checker]``.

Cost is CPU time, so that a busy machine slows both engines without moving their ratio much (wall
time on 2 shared cores moved by 2-3x between runs of the same check): the default engine's is this
process's; the Spark engine's is its tasks' (from Spark's event log) and this process's (the driver's
Python side: what it collects). The Spark JVM's other threads are left out: its compilers (the
optimizing one compiles on for several checks after a cold start) moved its total by up to 25%
between rounds, where the tasks' moved by 5%. It is the marginal cost between two sizes, per
value: what a check costs beyond its fixed part (the session, planning ~70 Spark jobs, compiling
them), which would otherwise swamp a history small enough for a unit test. The default engine's
page faults are kept out (``keep_freed_memory``): with them the ratio of the same code spread from
15 to 23 over five processes, without them from 36.6 to 40.2 over seven. The Spark JVM compiles with C1 only
(``C1_ONLY``), which cuts the measurement's CPU by a third.

Every check of both registries runs (``checker.check``, ``spark_engine.check_run``), so a check
added to both is in the figure; the checks that skip on the synthetic history do not cost anything
there, and are listed (``skipped``) so a guard can tell a check it does not time.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

#: The two sizes (values) whose difference is timed: between 30k and 150k values the Spark tasks'
#: cost per value moved by 30% from round to round, between 30k and 300k by 10%.
SIZES = (30_000, 300_000)
#: Counted rounds of the Spark engine at both sizes, after one check at the small size that is not
#: counted (a cold JVM's first check costs its tasks ~1 s more CPU: they run interpreted at first);
#: the figure is the median round's. One round: it costs ~10 s of wall time, mostly Spark's fixed
#: cost per check (planning and compiling ~70 jobs), and single rounds of seven processes spread
#: by 10% (36.6-40.2, docs/BENCHMARKS.md).
ROUNDS = 1
#: The default engine's check at each size, this many times per round, its median CPU taken (it
#: costs 0.03-0.35 s; within one process its runs agree within 5%).
DEFAULT_REPEATS = 3
#: The JVM of the guard's session (``jvm="c1"``): methods compiled by the quick compiler (C1) only.
#: The checker's own settings (``CHECKER_CONF``, ``jvm="checker"``) let the optimizing compiler
#: (C2) work through a short-lived JVM's whole life: in the guard's process of three checks it took
#: 20 of the JVM's 50 s of CPU, where C1 only took 31-33 s in all; its tasks then cost ~1.4x as much
#: per value, as a steady share of the same work. A slowdown that only C2's code has is not seen
#: here (``bench checker`` at 10M values is where it would show). The code cache as large as with
#: both compilers (HotSpot gives C1 alone 48 MB, which Spark's generated code filled in ~40 s: the
#: JVM then stopped compiling, and said so on stdout).
C1_ONLY = {"spark.driver.extraJavaOptions": "-XX:+IgnoreUnrecognizedVMOptions -XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"}
JVMS = {"c1": C1_ONLY, "checker": {}}


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


def keep_freed_memory() -> bool:
    """Have this process's C allocator (glibc's) keep the memory it frees and grow its heap by 512 MB
    at a time, so that the default engine's checks reuse pages instead of faulting in new ones: page
    faults were half of its CPU time at 300k values, and their cost moved by 1.5x from one process to
    the next (0.22-0.35 s a check), where reused pages keep it within 5% (0.13 s). False where the C
    library is not glibc (nothing changed). The Spark JVM is another process: not affected."""
    import ctypes
    import ctypes.util

    m_trim_threshold, m_top_pad = -1, -2  # glibc's malloc.h
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.mallopt(m_trim_threshold, 1 << 30) and libc.mallopt(m_top_pad, 512 << 20))
    except (OSError, AttributeError):
        return False


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


def measure(sizes: tuple[int, int] = SIZES, rounds: int = ROUNDS, tmp: Path | None = None,
            spark_runs: int = 1, jvm: str = "c1") -> dict[str, Any]:
    """Both engines on the synthetic histories of ``sizes`` values, ``rounds`` times after one Spark
    check not counted (the JVM compiling what it runs often); per round the marginal CPU cost per
    value of each engine and their ratio (Spark's over the default's). The figures are the median
    round's. ``spark_runs`` runs the Spark engine's whole check that many times where it is timed
    once: a planted slowdown, the guard's negative control (``--spark-runs 3``). ``jvm``: a key of
    ``JVMS``, the compilers of the session's JVM."""
    from harness.bench.checker import generate, timed_check
    from harness.checker.spark_engine import check_run
    from harness.history import store
    from harness.sparkjob.session import CHECKER_CONF, CHECKER_MEMORY, session

    small, big = sizes
    phases_s: dict[str, float] = {}  # where this measurement's own wall time went
    t0 = time.monotonic()

    def lap(name: str) -> None:
        nonlocal t0
        phases_s[name], t0 = round(time.monotonic() - t0, 3), time.monotonic()

    with tempfile.TemporaryDirectory(prefix="eos-chaos-engine-ratio-", dir=tmp) as folder, ThreadPoolExecutor(1) as pool:
        dirs = {n: Path(folder) / str(n) for n in sizes}
        events = Path(folder) / "spark-events"
        events.mkdir()

        def start_and_warm_up() -> Any:
            spark = session("eos-chaos-engine-ratio", tmp_dir=Path(folder) / "spark-tmp", memory=CHECKER_MEMORY,
                            conf={**CHECKER_CONF, **JVMS[jvm], **event_log_conf(events)})
            try:
                check_run(dirs[small], spark)  # not counted: the JVM's first check
            except BaseException:
                spark.stop()
                raise
            return spark

        # the JVM starts and runs its first check while the big history is written and both are
        # loaded (none of it is timed)
        generate(small, dirs[small])
        starting = pool.submit(start_and_warm_up)
        try:
            generate(big, dirs[big])
            tables = {n: store.load(d) for n, d in dirs.items()}  # loading is not timed (as in bench checker)
        except BaseException:
            starting.result().stop()
            raise
        spark = starting.result()
        lap("session_and_warm_up")
        spans: dict[tuple[int, int], tuple[float, float]] = {}
        tree_cpu: dict[tuple[int, int], float] = {}  # every process's CPU, the JVM's whole: shown, not judged
        try:
            def default(n: int, _round: int) -> tuple[float, float, Any]:
                # this process only, to the nanosecond (psutil counts in clock ticks of 10 ms)
                def fresh() -> Any:
                    tables[n].cache.clear()  # what the checks built and kept on the tables: each run builds it again
                    return timed_check(tables[n])

                runs = [_cost(fresh, time.process_time) for _ in range(DEFAULT_REPEATS)]
                cpu, wall, (verdict, seconds) = sorted(runs, key=lambda r: r[0])[len(runs) // 2]
                return cpu, wall, (verdict, {**seconds, "cpu_runs_s": [round(r[0], 3) for r in runs]})

            def spark_engine(n: int, round_: int) -> tuple[float, float, Any]:
                seconds: dict[str, float] = {}
                t0, cpu0 = time.time(), cpu_s()
                cpu, wall, verdicts = _cost(lambda: [check_run(dirs[n], spark, seconds) for _ in range(spark_runs)],
                                            time.process_time)
                spans[(round_, n)] = (t0, time.time())
                tree_cpu[(round_, n)] = cpu_s() - cpu0
                return cpu, wall, (verdicts[-1], seconds)

            samples = [_round(i, sizes, {"default": default, "spark": spark_engine}) for i in range(rounds)]
            lap("rounds")
        finally:
            spark.stop()
        task_cpu = task_cpu_s(events, spans)
        lap("stop")
    _add_spark_cpu_and_cost(samples, sizes, task_cpu, tree_cpu)
    return {"sizes": list(sizes), "rounds": rounds, "spark_runs": spark_runs, "jvm": jvm, **_median_round(samples, big),
            "phases_s": phases_s, "samples": samples}


def _median_round(samples: list[dict[str, Any]], big: int) -> dict[str, Any]:
    """The figures of the round of the median ratio (the lower of the two middle ones), and every round's ratio."""
    median = statistics.median_low(s["ratio"] for s in samples)
    chosen = next(s for s in samples if s["ratio"] == median)
    return {"ratio": median, "ratios": [s["ratio"] for s in samples],
            "default_us_per_value": chosen["default_us_per_value"], "spark_us_per_value": chosen["spark_us_per_value"],
            "skipped": {"default": chosen[f"default_{big}"]["skipped"], "spark": chosen[f"spark_{big}"]["skipped"]}}


#: one engine's check of the history of ``n`` values in round ``i``: (CPU s, wall s, (verdict, seconds by check))
_Timed = Callable[[int, int], tuple[float, float, Any]]


def _round(i: int, sizes: tuple[int, int], engines: dict[str, _Timed]) -> dict[str, Any]:
    """Round ``i``'s sample: each engine's figures on each size; ``AssertionError`` when an engine
    finds the synthetic history anything but valid (the measurement would time the wrong work)."""
    sample: dict[str, Any] = {}
    for engine, run in engines.items():
        for n in sizes:
            cpu, wall, (verdict, seconds) = run(n, i)
            if verdict.valid is not True:
                raise AssertionError(f"{engine} engine: the synthetic history of {n} values must be valid: "
                                     f"{verdict.to_json()['checks']}")
            sample[f"{engine}_{n}"] = {"cpu_s": round(cpu, 3), "wall_s": round(wall, 3), "by_check_s": seconds,
                                       "skipped": sorted(k for k, c in verdict.checks.items() if c.skipped)}
    return sample


def _add_spark_cpu_and_cost(samples: list[dict[str, Any]], sizes: tuple[int, int], task_cpu: dict[tuple[int, int], float],
                            tree_cpu: dict[tuple[int, int], float]) -> None:
    """Add to each round's sample the Spark tasks' CPU (``task_cpu``) to the Spark engine's, each
    engine's marginal CPU cost per value and their ratio."""
    small, big = sizes
    for i, s in enumerate(samples):
        for n in sizes:
            # the Spark engine's: the driver's Python (measured above) and the tasks
            s[f"spark_{n}"]["python_cpu_s"] = s[f"spark_{n}"]["cpu_s"]
            s[f"spark_{n}"]["task_cpu_s"] = round(task_cpu[(i, n)], 3)
            s[f"spark_{n}"]["cpu_s"] = round(s[f"spark_{n}"]["cpu_s"] + task_cpu[(i, n)], 3)
            s[f"spark_{n}"]["all_processes_cpu_s"] = round(tree_cpu[(i, n)], 3)
        for engine in ("default", "spark"):
            s[f"{engine}_us_per_value"] = round(1e6 * (s[f"{engine}_{big}"]["cpu_s"] - s[f"{engine}_{small}"]["cpu_s"]) / (big - small), 3)
        s["ratio"] = round(s["spark_us_per_value"] / max(s["default_us_per_value"], 1e-3), 2)


def main(argv: list[str] | None = None) -> None:
    """``python -m harness.bench.engine_ratio``: ``measure``'s result as JSON on stdout."""
    import argparse
    import json

    p = argparse.ArgumentParser(prog="python -m harness.bench.engine_ratio", description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("sizes", nargs="*", type=int, metavar="SIZE", default=list(SIZES),
                   help=f"the two history sizes in values, small then big (default: {SIZES[0]} {SIZES[1]})")
    p.add_argument("--rounds", type=int, default=ROUNDS, help=f"counted rounds, at least 1 (default: {ROUNDS})")
    p.add_argument("--spark-runs", type=int, default=1,
                   help="the Spark engine's check run this many times where it is timed once: a planted slowdown (default: 1)")
    p.add_argument("--jvm", choices=sorted(JVMS), default="c1",
                   help="c1: the guard's JVM, the quick compiler only (default); checker: the checker's own settings")
    a = p.parse_args(argv)
    if len(a.sizes) != 2 or not 1000 <= a.sizes[0] < a.sizes[1]:
        p.error(f"SIZE: two sizes, the small one at least 1000 and below the big one; got {a.sizes}")
    if a.rounds < 1 or a.spark_runs < 1:
        p.error(f"--rounds and --spark-runs: at least 1; got {a.rounds} and {a.spark_runs}")
    kept = keep_freed_memory()
    print(json.dumps({**measure((a.sizes[0], a.sizes[1]), a.rounds, spark_runs=a.spark_runs, jvm=a.jvm), "freed_memory_kept": kept}))


if __name__ == "__main__":
    main()
