"""``eos-chaos minimize RUN_DIR``: the smallest scenario that still shows an invalid run's anomalies,
found by running smaller ones: delta debugging, as Jepsen and QuickCheck shrink a failing case.

It starts from the run's own scenario made runnable again (``repro.replayable``: the run's planned
faults written out, a ``random`` target pinned to the node it hit), replayed as the run was: the
same seed, Kafka release, transaction.version and client libraries (each workload names its own),
every run on one cluster. Each candidate is a ``repro.Cut`` of it; in order:

1. ``eos-chaos repro``'s draft (one instance of each workload the anomaly involves, only the faults
   in its window); when it does not reproduce, the run's own scenario (when that does not either,
   there is nothing to cut down: the outcome is ``none``);
2. faults: all of them out; then ddmin (Zeller's delta debugging) over those kept: split in ``n``
   parts, each part alone, then (``n`` > 2) each part's complement; ``n`` doubled when none
   reproduces, until the parts are single faults;
3. workloads: the draft's (those the anomaly does not involve out), each entry out in turn, each
   entry's count down to 1;
4. the duration: down to the end of the last kept fault or of the anomaly (on the run's clock), and
   ``repro.MARGIN_S``.

A candidate reproduces when one of its runs (at most ``tries``: a timing bug reproduces at a rate
below 1) fires every check in ``Start.checks`` (by default every check the run's verdict fired);
it then becomes the scenario the next candidates are cut from. ``max_runs`` bounds the runs in
all. A candidate tried before is not run again; one that is not a valid scenario (a fault whose
workload was taken out) is passed over without a run.

``minimize`` is the loop; it takes the function that runs a candidate. ``replay`` gives the real
one (``runner.run``, the code path of ``eos-chaos run``); the unit tests and ``--dry-run`` (``plan``)
pass their own."""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from harness.base.errors import ConfigError
from harness.report import repro, repro_md
from harness.report.repro import MARGIN_S, SHORTEST_S, Checked, Cut, Repro
from harness.run import scenario
from harness.rundir import runinfo
from harness.rundir.runfolder import make_folder, new_run_dir, write_output

log = logging.getLogger(__name__)

#: minimize.json's layout.
FORMAT = 1
#: Where in the output folder the candidates' scenario files and run folders go.
CANDIDATES = "candidates"
RUNS = "runs"
#: The steps a candidate comes from, in the order they are taken.
Step = Literal["draft", "original", "faults", "workloads", "duration"]
Outcome = Literal["smaller", "original", "none"]


@dataclass(frozen=True)
class Candidate:
    step: Step
    #: what it takes out of the scenario it was cut from, in words
    removed: str
    cut: Cut


@dataclass
class RunSeen:
    """One run of a candidate, as far as minimizing reads it."""

    run_dir: str
    #: verdict.json's ``valid``: True, False or "unknown"
    valid: bool | str | None
    #: the checks that found something
    fired: list[str]
    interrupted: bool = False


#: Runs one candidate once: (its number, the candidate, its scenario, which try from 1) -> the run.
RunOne = Callable[[int, Candidate, dict[str, Any], int], RunSeen]


@dataclass
class Tried:
    """A candidate as it went."""

    number: int
    step: Step
    removed: str
    cut: Cut
    processes: int
    runs: list[RunSeen] = field(default_factory=list)
    #: True or False; None: not decided (not a valid scenario, the budget spent, interrupted)
    reproduced: bool | None = None
    note: str = ""


@dataclass(frozen=True)
class Start:
    """What minimizing starts from, and how its candidates are run."""

    run_name: str
    #: the run's scenario to run again (``repro.replayable``); every cut is of it
    scenario: dict[str, Any]
    original: Cut
    #: ``eos-chaos repro``'s draft (None: no anomaly in time to cut around)
    draft: Cut | None
    #: the checks a candidate's run must fire
    checks: tuple[str, ...]
    #: when the anomaly's last op ended, on the run's clock (None: the anomaly is not placed in time)
    anomaly_end_s: float | None
    seed: int
    backend: str
    kafka_version: str | None
    transaction_version: int | None

    def processes(self, cut: Cut) -> int:
        return sum(n for _, n in cut.workloads)

    def fault_label(self, i: int) -> str:
        f = self.scenario["faults"][i]
        return f"#{i + 1} {f.get('kind')} at {float(f.get('at') or 0):g}s"

    def workload_label(self, i: int) -> str:
        return f"{self.scenario['workloads'][i].get('kind')} (entry {i + 1})"


@dataclass
class Result:
    start: Start
    tries: int
    max_runs: int
    tried: list[Tried]
    #: the smallest candidate that reproduced (None: none did)
    best: Tried | None
    runs: int
    stopped_because: str
    interrupted: bool = False
    #: what ended it early when that was an error (the caller raises it once the record is written)
    error: BaseException | None = None

    @property
    def outcome(self) -> Outcome:
        """``smaller``: a candidate smaller than the run's scenario reproduced; ``original``: the run's
        own did and nothing smaller; ``none``: nothing reproduced."""
        if self.best is None:
            return "none"
        return "original" if self.best.cut == self.start.original else "smaller"

    @property
    def complete(self) -> bool:
        """Every step was taken (not cut short by the budget, an interruption or an error)."""
        return self.stopped_because == DONE


DONE = "every step done"


class _Spent(Exception):
    """The budget of runs is spent."""


def start_of(r: Repro, checks: list[str] | None = None) -> Start:
    """What minimizing the run ``r`` gathered starts from; ``ConfigError`` (exit 2) for a run with no
    anomaly to reproduce, no scenario to run again, or ``checks`` that did not fire in it."""
    name = r.run_dir.name
    fired = [n for n, _ in r.fired]
    if not fired:
        raise ConfigError(f"{r.run_dir}: the verdict is {r.status} and no check found anything, so there is no "
                          "anomaly to reproduce; minimize takes a run whose checks found something")
    wanted = list(dict.fromkeys(checks or fired))
    missing = [c for c in wanted if c not in fired]
    if missing:
        raise ConfigError(f"--checks: {', '.join(missing)} found nothing in run {name}; checks that fired: "
                          f"{', '.join(fired)}")
    sc, j = r.replayable, r.journal
    if sc is None or j is None:
        raise ConfigError(f"{r.run_dir}: journal.json keeps no scenario with workloads (its 'resolved'), so the run "
                          "cannot be run again; a folder eos-chaos run wrote keeps one")
    original = Cut(tuple(range(len(sc["faults"]))),
                   tuple((i, int(w.get("count") or 1)) for i, w in enumerate(sc["workloads"])), float(sc["duration"]))
    placed = r.anomaly is not None and bool(r.anomaly.spans)
    return Start(name, sc, original, r.draft, tuple(wanted), r.window[1] - MARGIN_S if placed else None, j.seed,
                 j.backend, repro.replay_kafka_version(j), repro.replay_transaction_version(j))


def scenario_of(start: Start, cut: Cut, description: str) -> dict[str, Any]:
    """The scenario file a cut runs as: named after the run's, expecting the checks to fire."""
    return repro.cut_scenario(start.scenario, cut, name=f"{start.scenario.get('name', 'scenario')}-minimal",
                              description=description, expect={"valid": False, "fires": list(start.checks)})


def problem_of(sc: dict[str, Any]) -> str | None:
    """Why ``sc`` is not a scenario ``eos-chaos run`` takes (None: it is)."""
    try:
        valid = scenario.Scenario.model_validate(sc)
    except ValidationError as exc:
        return "; ".join(scenario.problems(exc, sc))
    late = [f"{f.kind} at {f.at:g}s" for f in valid.faults if f.at > valid.duration]
    return f"faults past its end ({valid.duration:g}s): {', '.join(late)}" if late else None


def taken_out(start: Start, a: Cut, b: Cut) -> str:
    """What ``b`` takes out of ``a``, in words."""
    parts = []
    faults = [start.fault_label(i) for i in a.faults if i not in b.faults]
    if faults:
        parts.append(f"fault{'s' * (len(faults) > 1)} " + ", ".join(faults))
    counts = dict(b.workloads)
    for i, n in a.workloads:
        if i not in counts:
            parts.append(f"workload {start.workload_label(i)}")
        elif counts[i] < n:
            parts.append(f"{start.workload_label(i)} count {n} -> {counts[i]}")
    if b.duration < a.duration:
        parts.append(f"duration {a.duration:g}s -> {b.duration:g}s")
    return "; ".join(parts) or "nothing"


def kept(start: Start, cut: Cut) -> str:
    """A cut's size in words: faults, workload processes, seconds."""
    n, p = len(cut.faults), start.processes(cut)
    return f"{n} fault{'s' * (n != 1)}, {p} process{'es' * (p != 1)}, {cut.duration:g}s"


class _Search:
    """The loop's state: the candidates tried, the runs used, the smallest that reproduced."""

    def __init__(self, start: Start, run_one: RunOne, tries: int, max_runs: int, say: Callable[[str], None]) -> None:
        self.start, self.run_one, self.tries, self.max_runs, self.say = start, run_one, tries, max_runs, say
        self.tried: list[Tried] = []
        self.seen: dict[Cut, bool] = {}
        self.runs = 0
        self.best: Tried | None = None

    # ---- the steps ----

    def search(self) -> None:
        st = self.start
        if st.draft is not None and st.draft != st.original:
            self.attempt("draft", st.draft, st.original)
        if self.best is None and not self.attempt("original", st.original, st.original):
            return  # not even the run's own scenario reproduced: nothing to cut down
        self.faults()
        self.workloads()
        self.duration()

    def faults(self) -> None:
        if self.best is None or not self.best.cut.faults:
            return
        if self.cut("faults", faults=()):
            return
        self.ddmin(list(self.best.cut.faults))

    def ddmin(self, c: list[int]) -> None:
        """Zeller's ddmin over the fault indices ``c`` (whose cut reproduces): the smallest subset
        from which taking out any one part of the last split stops it reproducing."""
        n = 2
        while len(c) >= 2:
            parts = _split(c, n)
            subsets = [(p, 2) for p in parts] + ([([x for x in c if x not in p], max(n - 1, 2)) for p in parts]
                                                  if n > 2 else [])
            for subset, next_n in subsets:
                if self.cut("faults", faults=tuple(subset)):
                    c, n = subset, next_n
                    break
            else:
                if n >= len(c):
                    return
                n = min(len(c), 2 * n)

    def workloads(self) -> None:
        if self.best is None:
            return
        if self.start.draft is not None:  # those the anomaly does not involve out
            mine = {i for i, _ in self.start.draft.workloads}
            self.cut("workloads", workloads=tuple((i, n) for i, n in self.best.cut.workloads if i in mine))
        for entry, _ in list(self.best.cut.workloads):
            w = self.best.cut.workloads
            if len(w) > 1 and entry in dict(w):
                self.cut("workloads", workloads=tuple(x for x in w if x[0] != entry))
        for entry, _ in list(self.best.cut.workloads):
            w = self.best.cut.workloads
            if dict(w).get(entry, 1) > 1:
                self.cut("workloads", workloads=tuple((i, 1 if i == entry else n) for i, n in w))

    def duration(self) -> None:
        if self.best is None or self.start.anomaly_end_s is None:
            return
        cut = self.best.cut
        ends = []
        for i in cut.faults:
            f = self.start.scenario["faults"][i]
            repeats = float(f.get("every") or 0) > 0
            ends.append(cut.duration if repeats else min(cut.duration, float(f.get("at") or 0) + float(f.get("duration") or 0)))
        shorter = float(max(SHORTEST_S, math.ceil(max([self.start.anomaly_end_s, *ends]) + MARGIN_S)))
        if shorter < cut.duration:
            self.cut("duration", duration=shorter)

    # ---- one candidate ----

    def cut(self, step: Step, **change: Any) -> bool:
        """The best cut so far with ``change``, tried; whether it reproduced."""
        assert self.best is not None
        return self.attempt(step, replace(self.best.cut, **change), self.best.cut)

    def attempt(self, step: Step, cut: Cut, parent: Cut) -> bool:
        """Run ``cut`` (at most ``tries`` times) unless it was tried before or is no smaller than the
        best; whether it reproduced. It becomes the best when it did."""
        if cut in self.seen or (self.best is not None and cut == self.best.cut):
            return False
        st = self.start
        t = Tried(len(self.tried) + 1, step, taken_out(st, parent, cut), cut, st.processes(cut))
        self.tried.append(t)
        sc = scenario_of(st, cut, f"Candidate {t.number} of eos-chaos minimize on run {st.run_name} ({step}); "
                                  f"taken out: {t.removed}.")
        self.say(f"candidate {t.number} ({step}): takes out {t.removed}; keeps {kept(st, cut)}")
        problem = problem_of(sc)
        if problem is not None:
            t.note = f"not a valid scenario, not run: {problem}"
            self.say(f"  {t.note}")
            self.seen[cut] = False
            return False
        for i in range(1, self.tries + 1):
            if self.runs >= self.max_runs:
                t.note = f"not decided: --max-runs {self.max_runs} spent"
                raise _Spent
            self.runs += 1
            seen = self.run_one(t.number, Candidate(step, t.removed, cut), sc, i)
            t.runs.append(seen)
            if seen.interrupted:
                t.note = "interrupted (its run was cut short)"
                raise KeyboardInterrupt
            hit = set(st.checks) <= set(seen.fired)
            self.say(f"  run {i}/{self.tries} ({self.runs}/{self.max_runs} in all): {_verdict(seen.valid)}"
                     + (f" ({', '.join(seen.fired)})" if seen.fired else "")
                     + (": reproduces" if hit else f": does not fire {', '.join(c for c in st.checks if c not in seen.fired)}"))
            if hit:
                t.reproduced = self.seen[cut] = True
                self.best = t
                return True
        t.reproduced = self.seen[cut] = False
        return False


def _verdict(valid: bool | str | None) -> str:
    return "VALID" if valid is True else "INVALID" if valid is False else "UNKNOWN"


def _split(c: list[int], n: int) -> list[list[int]]:
    """``c`` in ``n`` parts as even as can be, in order."""
    size, extra = divmod(len(c), n)
    parts, at = [], 0
    for k in range(n):
        step = size + (k < extra)
        parts.append(c[at:at + step])
        at += step
    return [p for p in parts if p]


def minimize(start: Start, run_one: RunOne, tries: int, max_runs: int,
             say: Callable[[str], None] = lambda _: None) -> Result:
    """The candidates tried in order, each run through ``run_one``, within ``max_runs`` runs. A
    Ctrl-C, or a run it cut short, ends it (``interrupted``); an error ends it too (``error``, for
    the caller to raise once the record is written)."""
    s = _Search(start, run_one, tries, max_runs, say)
    stopped, interrupted, error = DONE, False, None
    try:
        s.search()
    except _Spent:
        stopped = f"--max-runs {max_runs} spent"
    except KeyboardInterrupt:
        stopped, interrupted = "interrupted", True
    except Exception as exc:  # noqa: BLE001 - the record is written first; the caller raises it
        stopped, error = f"stopped by an error: {type(exc).__name__}: {exc}", exc
        if s.tried and not s.tried[-1].note:
            s.tried[-1].note = stopped
    return Result(start, tries, max_runs, s.tried, s.best, s.runs, stopped, interrupted, error)


def plan(start: Start, tries: int, max_runs: int) -> Result:
    """What ``--dry-run`` shows: the loop run with a stand-in for the runs, in which the first
    candidate (the draft, else the run's own scenario) reproduces at its first run and nothing
    smaller does: every candidate the steps go through from it, within ``max_runs``."""

    ran: list[int] = []

    def pretend(number: int, cand: Candidate, sc: dict[str, Any], i: int) -> RunSeen:
        ran.append(number)
        return RunSeen("", False, list(start.checks) if ran[0] == number else [])

    return minimize(start, pretend, tries, max_runs)


# ---- running the candidates for real ----

@contextmanager
def replay(start: Start, out: Path, show: Callable[[Path, float, Callable[[], list[str]]], Any] | None = None
           ) -> Iterator[RunOne]:
    """The function that runs a candidate as ``eos-chaos run`` does (``runner.run``) with the run's
    seed and transaction.version, its scenario file in ``out/candidates/`` and its run folder in
    ``out/runs/``; all on one cluster: the backend's cluster that is up if it can run the scenario
    (same Kafka release, transaction.version and broker settings; ``ConfigError`` naming what
    differs otherwise, as ``eos-chaos run`` says it), else one started here and taken down after,
    whatever happens. ``show``: the progress display of each run."""
    from clusters.backends import artifacts
    from clusters.backends.backends import Backend
    from clusters.builds import pins
    from harness.campaigns import matrix, soak
    from harness.run import runner

    backend = Backend(start.backend)
    first = scenario.Scenario.model_validate(start.scenario)
    for stale in (out / CANDIDATES).glob("*.yaml"):  # an earlier minimize's: this one numbers its own
        stale.unlink()
    cluster = runner.cluster_that_is_up(backend, first, start.kafka_version, transaction_version=start.transaction_version)
    own = cluster is None
    if cluster is not None:
        runner.prepare_attached(cluster)
    else:
        kv = start.kafka_version or pins.KAFKA_VERSION
        arts = artifacts.ready(kv) or artifacts.ensure(kv)
        cluster = matrix.level_cluster(backend, arts, new_run_dir("cluster", make_folder(out / RUNS)),
                                       start.transaction_version, dict(first.broker_config),
                                       runner.needs_wire_between_brokers(first))
        log.info(f"minimize: a Kafka {kv} cluster for the candidates' runs")

    def run_one(number: int, cand: Candidate, sc: dict[str, Any], i: int) -> RunSeen:
        folder = make_folder(out / CANDIDATES)
        source = folder / f"{number:02d}-{cand.step}.yaml"
        if i == 1:
            write_output(source, repro.scenario_yaml(sc))
        model = scenario.load(str(source))  # as eos-chaos run reads it
        run_dir = new_run_dir(model.name, make_folder(out / RUNS))
        res = runner.run(model, backend, start.seed, run_dir, start.kafka_version, cluster=cluster, show=show,
                         source=str(source), transaction_version=start.transaction_version)
        return RunSeen(str(run_dir), res.verdict.valid, list(res.verdict.fired()), res.interrupted)

    try:
        if own:
            cluster.start()  # inside: a start cut short by Ctrl-C is taken down too
        yield run_one
    finally:
        problems = soak.heal_at_end(cluster, own)
        if problems:
            log.warning(f"minimize: the cluster did not heal after the runs: {problems}")


# ---- what it writes ----

def record(result: Result, out: Path) -> dict[str, Any]:
    """``minimize.json``: the start, every candidate tried and its runs, the outcome."""
    st, best = result.start, result.best

    def rel(p: str) -> str:
        return os.path.relpath(p, out) if p else ""

    return {
        "format": FORMAT, "run": st.run_name, "checks": list(st.checks), "seed": st.seed, "backend": st.backend,
        "kafka_version": st.kafka_version, "transaction_version": st.transaction_version,
        "tries": result.tries, "max_runs": result.max_runs, "runs": result.runs, "outcome": result.outcome,
        "stopped_because": result.stopped_because,
        "original": {"faults": len(st.original.faults), "processes": st.processes(st.original),
                     "duration_s": st.original.duration},
        "minimal": None if best is None else {
            "file": repro_md.CHECKED_FILE, "candidate": best.number, "faults": len(best.cut.faults),
            "processes": best.processes, "duration_s": best.cut.duration,
            "command": runinfo.rerun_command(repro_md.CHECKED_FILE, st.backend, st.seed, best.cut.duration,
                                             st.kafka_version, st.transaction_version),
            "reproduced_in": [sum(set(st.checks) <= set(r.fired) for r in best.runs), len(best.runs)]},
        "candidates": [{"number": t.number, "step": t.step, "removed": t.removed, "kept": kept(st, t.cut),
                        "faults": [i + 1 for i in t.cut.faults], "workloads": [list(w) for w in t.cut.workloads],
                        "duration_s": t.cut.duration, "reproduced": t.reproduced, "note": t.note,
                        "runs": [{"run_dir": rel(r.run_dir), "valid": r.valid, "fired": r.fired} for r in t.runs]}
                       for t in result.tried],
    }


def says(result: Result) -> str:
    """The outcome in words, for REPORT.md and the terminal."""
    st, best = result.start, result.best
    checks = ", ".join(f"`{c}`" for c in st.checks)
    budget = ("" if result.complete else
              f" It stopped before every step was taken ({result.stopped_because}), so a smaller one may still exist.")
    tried = f"{len(result.tried)} candidate{'s' * (len(result.tried) != 1)}, {result.runs} run{'s' * (result.runs != 1)}"
    if best is None:
        first = result.tried[0] if result.tried else None
        what = "; ".join(f"{t.step}: {len(t.runs)} run{'s' * (len(t.runs) != 1)}, none fired them"
                         + (f" ({t.note})" if t.note else "") for t in result.tried[:2])
        return (f"Nothing reproduced {checks} ({tried}; {what or 'no run'}): the anomaly did not happen again in "
                f"{result.tries} tr{'y' if result.tries == 1 else 'ies'} of each"
                + ("" if first is None or first.step == "original" else ", the draft and the run's own scenario")
                + ". A timing bug may reproduce at a low rate: try --tries higher." + budget)
    k = sum(set(st.checks) <= set(r.fired) for r in best.runs)
    rate = f"{k} of {len(best.runs)} run{'s' * (len(best.runs) != 1)}"
    if result.outcome == "original":
        return (f"The run's own scenario reproduced {checks} ({rate}) and no smaller one did ({tried}): it is minimal "
                "as far as these steps cut." + budget)
    o = st.original
    return (f"Reproduced {checks} in {rate} of candidate {best.number}: {len(best.cut.faults)} of the run's "
            f"{len(o.faults)} faults, {best.processes} of its {st.processes(o)} workload processes, "
            f"{best.cut.duration:g}s of its {o.duration:g}s ({tried})." + budget)


def checked(result: Result, out: Path) -> Checked:
    """What REPORT.md cites of ``result`` (the minimal scenario as a file, its replay command)."""
    data = record(result, out)
    best = result.best
    minimal, command = None, ""
    if best is not None:
        st = result.start
        desc = (f"Cut down from run {st.run_name} by eos-chaos minimize (candidate {best.number}): "
                f"{kept(st, best.cut)}; it fired {', '.join(st.checks)} in "
                f"{data['minimal']['reproduced_in'][0]} of {data['minimal']['reproduced_in'][1]} runs.")
        minimal, command = repro.scenario_yaml(scenario_of(st, best.cut, desc)), data["minimal"]["command"]
    return Checked(minimal, command, says(result), repro_md.candidates_md(data), data)


def write(r: Repro, result: Result, out: Path) -> list[Path]:
    """REPORT.md (citing the minimal scenario and its replay command), ``minimal.yaml``,
    ``candidates.md`` and ``minimize.json`` into ``out``, with the repro's excerpts."""
    r.checked = checked(result, out)
    return repro_md.write(r, out)
