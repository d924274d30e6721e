"""``eos-chaos soak``: the same scenarios over and over with fresh seeds, on one cluster, until a
number of runs or hours is reached (or, with ``--fail-fast``, the first run that is not as its
scenario expects). Every run folder is kept under the soak's folder, and ``soak.json`` +
``soak.html`` list the runs, the totals and the commands that replay each failure.

Ctrl-C (or SIGTERM) ends the soak: the run under way stops early (healed and checked), the
cluster is healed once more, and the summary is still written."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from chaos.heal import heal_all
from clusters.backends import artifacts, backends
from clusters.backends.backends import Backend
from clusters.backends.protocol import Cluster
from clusters.builds import pins
from harness.base.errors import ConfigError
from harness.campaigns.shards import Shard, soak_owner
from harness.checker.verdict import UNKNOWN
from harness.phases import table
from harness.run import runner, scenario
from harness.run.scenario import Scenario
from harness.rundir.runfolder import SOAK_HTML, SOAK_JSON, new_run_dir, write_json, write_text

log = logging.getLogger(__name__)

#: How the log says a run's verdict (anything else: UNKNOWN).
VERDICT_WORDS: dict[object, str] = {True: "VALID", False: "INVALID"}


@dataclass
class SoakRun:
    scenario: str
    seed: int
    run_dir: str
    valid: bool | str | None
    as_expected: bool | None
    anomalies: dict[str, int]
    ok_txn_per_s: float | None
    committed_values_per_s: float | None
    seconds: float
    error: str | None = None  # the run itself failed (no verdict)
    interrupted: bool = False  # Ctrl-C / SIGTERM during this run
    #: the command the run recorded in its journal (with the soak's --duration and the Kafka version)
    command: str | None = None
    #: faults of the scenario that failed and did not run (the journal's ``nemesis_errors``): a valid
    #: run with one did not try all it was asked to, and the tables say so
    faults_failed: int = 0

    @property
    def failed(self) -> bool:
        """Not as its scenario expects, or broken; a run cut short by Ctrl-C before its verdict is neither."""
        return self.as_expected is False or (self.error is not None and not self.interrupted)


@dataclass
class Soak:
    seed: int
    scenarios: list[str]
    backend: str
    runs_wanted: int | None
    hours: float | None
    fail_fast: bool
    started: str = field(default_factory=lambda: time.strftime("%Y-%m-%d %H:%M:%S %Z"))
    runs: list[SoakRun] = field(default_factory=list)
    stopped_because: str = ""
    healed_at_end: bool | None = None
    heal_problems: list[str] = field(default_factory=list)
    seconds: float = 0.0
    #: ``--shard I/N``: ``index`` and ``count`` (this folder holds runs I-1, I-1+N, ... of the soak)
    shard: dict[str, int] | None = None

    def totals(self) -> dict[str, Any]:
        anomalies: dict[str, int] = {}
        for r in self.runs:
            for k, n in r.anomalies.items():
                anomalies[k] = anomalies.get(k, 0) + n
        return {"runs": len(self.runs), "as_expected": sum(not r.failed for r in self.runs),
                "not_as_expected": sum(r.failed for r in self.runs),
                "valid": sum(r.valid is True for r in self.runs), "invalid": sum(r.valid is False for r in self.runs),
                "unknown": sum(r.valid == UNKNOWN for r in self.runs),
                "errors": sum(r.error is not None for r in self.runs), "anomalies": anomalies}

    @property
    def interrupted(self) -> bool:
        """Ended by Ctrl-C or SIGTERM (its summary is written all the same)."""
        return self.stopped_because == "interrupted"

    @property
    def as_expected(self) -> bool:
        """Every run as its scenario expects, and the cluster healed at the end."""
        return not self.totals()["not_as_expected"] and self.healed_at_end is not False

    @property
    def only_unknown(self) -> bool:
        """Each run not as expected has an unknown verdict (nothing found, nothing broken): the soak
        could not judge, which is not a finding (exit 3, not 1)."""
        failed = [r for r in self.runs if r.failed]
        return bool(failed) and all(r.valid == UNKNOWN and r.error is None for r in failed) \
            and self.healed_at_end is not False

    def replays(self) -> list[str]:
        """The command that replays each run that was not as expected (same scenario and seed; as
        the run recorded it, else built from them)."""
        return [r.command or f"eos-chaos run {r.scenario} --backend {self.backend} --seed {r.seed}"
                for r in self.runs if r.failed]

    def as_json(self) -> dict[str, Any]:
        return {**{k: v for k, v in asdict(self).items() if k != "runs"}, "totals": self.totals(),
                "replay": self.replays(), "runs": [asdict(r) for r in self.runs]}


def default_scenarios() -> list[str]:
    """Every library scenario that expects a valid run (negative controls are invalid by design)."""
    return [n for n in scenario.names() if scenario.load(n).expect.valid is True]  # no negative control, no hunt


def resolve(names: list[str] | None, duration: float | None) -> list[Scenario]:
    """The scenarios to soak (``ConfigError`` naming the unknown ones and what is allowed)."""
    names = names or default_scenarios()
    known = scenario.names()
    unknown = [n for n in names if n not in known and not Path(n).is_file()]
    if unknown:
        raise ConfigError(f"--scenarios: unknown {unknown}; allowed: {', '.join(known)} (or YAML files)")
    out = [scenario.load(n) for n in names]
    return [sc.with_duration(duration, flag="--duration") if duration else sc for sc in out]


def preflight(scs: list[Scenario]) -> None:
    """What each scenario's runs would refuse only once a cluster is up (``table.preflight``: an
    app's program, working folder and contract function; PySpark), refused before any cluster
    starts: exit 2 naming the scenario."""
    for sc in scs:
        try:
            table.preflight(sc)
        except ConfigError as exc:
            raise ConfigError(f"scenario {sc.name}: {exc}") from None


def runs_wanted(runs: int | None, hours: float | None, scenarios: int) -> int | None:
    """How many runs a soak starts: ``runs``; none counted when it stops after ``hours``; else one
    of each scenario. ``ConfigError`` when both are given."""
    if hours is not None and runs is not None:
        raise ConfigError("--hours and --runs: give one of them (a soak stops at a time or a number of runs)")
    return runs if runs is not None or hours is not None else scenarios


def seeds(master: int) -> Callable[[], int]:
    """Each run's seed, drawn from the soak's: the same ``--seed`` replays the same soak."""
    rnd = random.Random(master)
    return lambda: rnd.randrange(2**31)


def soak(scs: list[Scenario], sources: list[str], backend: Backend, seed: int, out: Path,
         runs: int | None = None, hours: float | None = None, fail_fast: bool = False,
         kafka_version: str | None = None, transaction_version: int | None = None, shard: Shard | None = None) -> Soak:
    """Run the soak; always writes its summary (``soak.json``, ``soak.html``) before returning or
    raising. A KeyboardInterrupt ends it early (``stopped_because: interrupted``).
    ``transaction_version``: the level the soak's cluster is formatted at (None: any that is up, or
    the release's default). ``shard``: only runs ``j`` with ``soak_owner(j)`` its index, each with the
    seed it has in the whole soak (every seed is drawn; the others' are skipped)."""
    result = Soak(seed, sources, backend.value, runs, hours, fail_fast, shard=None if shard is None else shard.as_json())
    next_seed = seeds(seed)
    started = time.monotonic()
    deadline = started + hours * 3600 if hours else None
    cluster: Cluster | None = None
    own = False
    try:
        cluster = runner.cluster_that_is_up(backend, next((s for s in scs if not s.broker_config), scs[0]).model_copy(
            update={"broker_config": {}}), kafka_version, transaction_version=transaction_version)
        if cluster is not None:
            runner.prepare_attached(cluster)
        else:
            arts = artifacts.ensure(kafka_version or pins.KAFKA_VERSION)
            cluster = backends.new_cluster(backend, arts, new_run_dir("soak-cluster", out),
                                           transaction_version=transaction_version,
                                           wire_between_brokers=any(runner.needs_wire_between_brokers(s) for s in scs))
            own = True
            cluster.start()
        i = 0
        while True:
            if runs is not None and i >= runs:
                result.stopped_because = f"{runs} runs done"
                break
            if deadline is not None and time.monotonic() >= deadline:
                result.stopped_because = f"{hours} h reached"
                break
            sc, source = scs[i % len(scs)], sources[i % len(sources)]
            s = next_seed()
            i += 1
            if shard is not None and soak_owner(i - 1, shard.count) != shard.index:
                continue  # another shard's run: its seed is drawn all the same, so ours are the soak's
            one = one_run(sc, source, backend, s, out, cluster)
            result.runs.append(one)
            _write(result, out, started)
            log.info(f"soak [{i}{f'/{runs}' if runs else ''}] {sc.name} seed {s}: "
                + (f"error: {one.error}" if one.error else f"{VERDICT_WORDS.get(one.valid, 'UNKNOWN')}"
                   f"{'' if one.as_expected else ' (NOT as expected)'}, {one.ok_txn_per_s} txn/s"))
            if one.interrupted:
                result.stopped_because = "interrupted"
                break
            if fail_fast and one.failed:
                result.stopped_because = f"--fail-fast: {sc.name} seed {s} was not as expected"
                break
    except KeyboardInterrupt:
        result.stopped_because = "interrupted"
    finally:
        if cluster is not None:
            problems = heal_at_end(cluster, own)
            result.healed_at_end, result.heal_problems = not problems, problems
        result.stopped_because = result.stopped_because or "stopped by an error"
        _write(result, out, started)
    return result


def heal_at_end(cluster: Cluster, own: bool) -> list[str]:
    """Heal ``cluster`` once more after many runs (and stop it when ``own``: started by the caller);
    returns what did not heal (a heal that crashed included), for the summary."""
    try:
        problems = heal_all(cluster)
    except Exception as exc:  # noqa: BLE001 - recorded in the summary
        problems = [f"{type(exc).__name__}: {exc}"]
    if own:
        cluster.stop()
    return problems


def one_run(sc: Scenario, source: str, backend: Backend, seed: int, out: Path, cluster: Cluster) -> SoakRun:
    """One run of ``sc`` on the shared ``cluster``, in a new run folder under ``out``. A run cut
    short by Ctrl-C says ``interrupted``; one that broke without a verdict says its ``error``."""
    run_dir = new_run_dir(sc.name, out)
    t0 = time.monotonic()
    try:
        res = runner.run_on_shared(sc, backend, seed, run_dir, cluster, source=source)
    except KeyboardInterrupt:  # outside the run's own fault phase (which ends the run early itself)
        return SoakRun(sc.name, seed, str(run_dir), None, None, {}, None, None, round(time.monotonic() - t0, 1),
                       error="interrupted before its verdict", interrupted=True)
    except Exception as exc:  # noqa: BLE001 - one broken run is a finding, not the end of a soak
        return SoakRun(sc.name, seed, str(run_dir), None, None, {}, None, None, round(time.monotonic() - t0, 1),
                       error=f"{type(exc).__name__}: {exc}")
    v = res.verdict
    tp = v.figures.throughput
    one = SoakRun(sc.name, seed, str(run_dir), v.valid, v.as_expected, v.counts(), tp.ok_txn_per_s,
                  tp.committed_values_per_s, round(time.monotonic() - t0, 1))
    one.interrupted, one.command = res.interrupted, res.journal.command
    one.faults_failed = len(res.journal.nemesis_errors)
    return one


def _write(result: Soak, out: Path, started: float) -> None:
    from harness.report.soak_page import render_soak

    result.seconds = round(time.monotonic() - started, 1)
    data = result.as_json()
    write_json(out / SOAK_JSON, data)
    write_text(out / SOAK_HTML, render_soak(data, out))
