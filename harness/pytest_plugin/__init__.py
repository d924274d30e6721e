"""The eos-chaos pytest plugin (entry point ``pytest11: eos_chaos``), loaded wherever eos-chaos is
installed. It registers the ``chaos`` and ``library`` markers, the ``--eos-*`` options and three
fixtures for tests of your own:

- ``kafka_cluster`` (session): a real 3-node Kafka cluster behind Toxiproxy (``--eos-backend``), or
  one you already run, fronted by the harness's proxies (``--eos-inventory FILE``);
- ``nemesis``: inject faults inside a test (``with nemesis.fault("partition", target="leader",
  of="orders/0"): ...``); every fault is healed when the test ends, and the heal is checked;
- ``run_scenario(name, **overrides)``: run a library scenario (or a YAML file) on that cluster and
  get its verdict (``ScenarioResult``: the verdict dict, plus its run folder and report).

``pytest -m chaos --eos-library`` adds the scenario library, one test per scenario.
Nothing here imports Kafka clients or Spark until a fixture is used: unit-test runs stay light.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from clusters.kafka.topology import MAX_PORT_BASE, MIN_PORT_BASE  # --eos-port-base's bounds
from harness.pytest_plugin import inventory_option
from harness.rundir.run_verdict import RunFacts, RunVerdict
from harness.rundir.runfolder import RunFolder
from harness.workloads.clients import spelled as client_libraries

log = logging.getLogger("eos_chaos.pytest")

if TYPE_CHECKING:
    from clusters.backends.protocol import Cluster
    from harness.run.scenario import Fault

BACKENDS = ("local", "compose")
#: A fault opened with ``nemesis.fault(...)`` lasts until the block ends; this bounds it anyway.
BLOCK_FAULT_MAX_S = 3600.0
#: Until an injected fault has started: resolving a role asks the cluster (seconds), and a process
#: fault waits for one still restarting a node (up to a minute or two here).
FAULT_START_TIMEOUT_S = 300.0
#: One xdist worker's cluster from the next: 100 also moves the compose backend's bridge subnets.
XDIST_PORT_STEP = 100


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if value < 5:
        raise argparse.ArgumentTypeError(f"{text}: a scenario runs at least 5 seconds")
    return value


def _port_base(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not MIN_PORT_BASE <= value <= MAX_PORT_BASE:
        raise argparse.ArgumentTypeError(f"{value}: a port base is between {MIN_PORT_BASE} and {MAX_PORT_BASE} "
                                         "(a cluster's ports and its workers' run up from it)")
    return value


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("eos-chaos", "Kafka exactly-once chaos tests (eos-chaos)")
    g.addoption("--eos-backend", choices=BACKENDS, default=None,
                help="where kafka_cluster runs: local processes or Docker Compose [default: $EOS_CHAOS_BACKEND, else local]")
    g.addoption("--eos-kafka-version", default=None, metavar="X.Y.Z",
                help="Apache Kafka release kafka_cluster runs (fetched once from Maven Central) [default: eos-chaos's pin]")
    g.addoption("--eos-transaction-version", type=int, choices=(0, 1, 2), default=None, metavar="0|1|2",
                help="transaction.version kafka_cluster is formatted at (KIP-890 part 2 is 2) [default: the Kafka release's]")
    g.addoption("--eos-duration", type=_positive, default=None, metavar="SECONDS",
                help="run every scenario this long instead of its own duration")
    g.addoption("--eos-seed", type=int, default=None, metavar="N",
                help="seed of every scenario run (fault schedules, targets, workload choices) [default: random per run]")
    g.addoption("--eos-results", default=None, metavar="DIR",
                help="where run folders go [default: $EOS_CHAOS_RESULTS, else results/ in pytest's rootdir]")
    g.addoption("--eos-library", action="store_true",
                help="add the scenario library: one test per scenario, negative controls expect invalid")
    g.addoption("--eos-port-base", type=_port_base, default=None, metavar="PORT",
                help="first port of kafka_cluster (each pytest-xdist worker adds 100 per worker number, so "
                     "parallel workers get clusters of their own) [default: the backend's]")
    g.addoption("--eos-keep", action="store_true",
                help="leave kafka_cluster up after the session, for debugging; the session ends by saying how "
                     "to take it down")
    g.addoption("--eos-require-backend", action="store_true",
                help="fail, instead of skip, tests whose backend cannot be had (no Docker engine for compose)")
    g.addoption("--eos-client", default=None, metavar="LIB",
                help=f"run every scenario's workloads on this client library: {client_libraries()} "
                     "(a scenario that cannot is skipped) [default: each workload's own]")
    inventory_option.add_options(g)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "chaos: runs against a real Kafka cluster (eos-chaos); slow")
    config.addinivalue_line("markers", "library: one scenario of the eos-chaos library (~40 min for all, per backend)")
    from harness.base import logsetup

    logsetup.to_stdout()  # the harness's narrative with each test's output (-s to see it live)
    _sigterm_as_interrupt(config)
    inventory_option.configure(config)  # a bad inventory stops the session before anything starts
    worker = _xdist_worker(config)
    if worker is not None:
        # a worker's cluster records itself apart from the other workers' (one record per backend
        # per state folder): `eos-chaos cluster down` of one worker must not find another's
        from harness.base.paths import state_dir

        os.environ["EOS_CHAOS_STATE"] = str(state_dir() / f"xdist-{worker}")
    version = config.getoption("--eos-kafka-version", None)
    if version:
        from clusters.kafka.kafka_release import parse_kafka_version
        from harness.base.errors import ConfigError

        try:
            parse_kafka_version(version)
        except ConfigError as exc:
            raise pytest.UsageError(str(exc).replace("--kafka-version", "--eos-kafka-version")) from None
    level = config.getoption("--eos-transaction-version", None)
    if level is not None:
        from clusters.builds import pins
        from clusters.kafka.feature_levels import check_transaction_version
        from harness.base.errors import ConfigError

        try:
            check_transaction_version(version or pins.KAFKA_VERSION, level, flag="--eos-transaction-version")
        except ConfigError as exc:
            raise pytest.UsageError(str(exc)) from None
    client = config.getoption("--eos-client", None)
    if client:
        from harness.workloads.clients import parse

        try:
            parse(client)
        except ValueError as exc:
            raise pytest.UsageError(f"--eos-client: {exc}") from None
    if config.getoption("--eos-library", False):
        from harness.pytest_plugin import library

        # the folder, not the file: test ids then read test_eos_chaos_library.py::test_scenario[NAME]
        config.args.append(str(Path(library.__file__).parent))


def _sigterm_as_interrupt(config: pytest.Config) -> None:
    """SIGTERM (a CI job cancelled, ``kill``) ends the session as Ctrl-C does: pytest tears it down,
    the session's cluster with it. With Python's default the process ended on the spot and left the
    cluster, its proxies and their processes up until the next start reclaimed them (seen: a
    ``make test`` stopped by SIGTERM). Only where nothing else handles SIGTERM, in the main thread;
    the default comes back with the session's end."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)

    def restore() -> None:
        if signal.getsignal(signal.SIGTERM) is interrupt:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)

    config.add_cleanup(restore)


def pytest_unconfigure(config: pytest.Config) -> None:
    """The inventory this session named is forgotten (pytester runs sessions in one process)."""
    if config.getoption("--eos-inventory", None):
        from clusters.backends.backends import use_external

        use_external(None)


def _xdist_worker(config: pytest.Config) -> str | None:
    """This process's pytest-xdist worker id (``gw0``, ``gw1``, ...), None outside xdist."""
    workerinput = getattr(config, "workerinput", None)
    return str(workerinput["workerid"]) if workerinput else None


def _use_results_folder(config: pytest.Config) -> Path:
    """Where this session's run folders go: ``--eos-results``, else ``$EOS_CHAOS_RESULTS``, else
    results/ in pytest's rootdir. Set in the environment only by a fixture that makes run folders,
    so a session that uses none of the plugin's fixtures keeps its environment as it was."""
    results = config.getoption("--eos-results", None)
    if results or not os.environ.get("EOS_CHAOS_RESULTS"):
        os.environ["EOS_CHAOS_RESULTS"] = str(Path(results).resolve() if results else config.rootpath / "results")
    return Path(os.environ["EOS_CHAOS_RESULTS"])


@dataclass(frozen=True)
class EosOptions:
    backend: str
    duration: float | None
    seed: int | None
    kafka_version: str | None = None
    transaction_version: int | None = None
    #: ``--eos-client``: the client library every workload that can choose runs on
    client: str | None = None
    #: ``--eos-port-base`` plus this xdist worker's share (None: the backend's default)
    port_base: int | None = None
    keep: bool = False
    require_backend: bool = False
    results: Path = Path("results")


@pytest.fixture(scope="session")
def eos_options(pytestconfig: pytest.Config) -> EosOptions:
    backend = pytestconfig.getoption("--eos-backend") or os.environ.get("EOS_CHAOS_BACKEND", "local")
    if pytestconfig.getoption("--eos-inventory", None):  # checked at configure: the option wins over the variable
        backend = inventory_option.EXTERNAL
    elif backend not in BACKENDS:
        raise pytest.UsageError(f"EOS_CHAOS_BACKEND={backend!r}; allowed: {', '.join(BACKENDS)}")
    return EosOptions(backend, pytestconfig.getoption("--eos-duration"), pytestconfig.getoption("--eos-seed"),
                      pytestconfig.getoption("--eos-kafka-version"), pytestconfig.getoption("--eos-transaction-version"),
                      pytestconfig.getoption("--eos-client"), port_base(pytestconfig, backend),
                      pytestconfig.getoption("--eos-keep"), pytestconfig.getoption("--eos-require-backend"),
                      _use_results_folder(pytestconfig))


def port_base(config: pytest.Config, backend: str) -> int | None:
    """``--eos-port-base`` (else the backend's default), moved up XDIST_PORT_STEP per xdist worker
    number; None outside xdist without the option (the backend's default, as ``eos-chaos run``)."""
    from clusters.backends.backends import Backend, default_port_base

    base = config.getoption("--eos-port-base", None)
    worker = _xdist_worker(config)
    if worker is None:
        return base  # type: ignore[no-any-return]
    index = int(worker.removeprefix("gw") or 0)
    return int(base or default_port_base(Backend(backend))) + XDIST_PORT_STEP * index


def _engine_or_skip(options: EosOptions) -> bool:
    """Make sure the compose backend has a Docker engine; returns whether one answered already.
    None can be had (no engine, and none we may start): the test is skipped with the reason, or
    failed with ``--eos-require-backend``."""
    from clusters.backends.compose.engine import docker_answers, ensure_engine
    from harness.base.errors import EnvironmentProblem

    if docker_answers():
        return True
    try:
        ensure_engine()
    except EnvironmentProblem as exc:
        why = f"the compose backend has no Docker engine: {exc}"
        if options.require_backend:
            pytest.fail(f"{why} (--eos-require-backend)", pytrace=False)
        pytest.skip(why)
    return False


@pytest.fixture(scope="session")
def kafka_cluster(eos_options: EosOptions, pytestconfig: pytest.Config) -> Iterator[Cluster]:
    """A 3-node KRaft cluster for the whole session, on ``--eos-backend``; taken down at the end
    (and a Docker engine this fixture had to start is stopped again), unless ``--eos-keep``. With
    ``--eos-inventory``: the cluster it describes, as it is, behind proxies the session starts and
    stops (the brokers stay)."""
    from clusters.backends import artifacts, backends
    from clusters.backends.backends import Backend
    from clusters.builds import pins
    from harness.rundir.runfolder import new_run_dir

    backend = Backend(eos_options.backend)
    had_engine = _engine_or_skip(eos_options) if backend is Backend.compose else True
    if backend is Backend.external:
        cluster = inventory_option.start_external(eos_options.port_base, eos_options.keep, eos_options.kafka_version)
    else:
        arts = artifacts.ensure(eos_options.kafka_version or pins.KAFKA_VERSION)
        cluster = backends.new_cluster(backend, arts, new_run_dir(f"pytest-{backend.value}"), eos_options.port_base,
                                       detached=eos_options.keep, transaction_version=eos_options.transaction_version)
    kept = False
    try:
        cluster.start()  # an external one is up already: a no-op
        yield cluster
        kept = eos_options.keep
    finally:
        if kept:
            _kept(pytestconfig, cluster)
        else:
            cluster.stop()
            if not had_engine:
                from clusters.backends.compose.engine import stop_engine

                stop_engine()


def _kept(config: pytest.Config, cluster: Cluster) -> None:
    """``--eos-keep``: heal what the last test left, and say (at the end of the session's output)
    where the cluster is and how to take it down."""
    from chaos.heal import heal_all

    problems = heal_all(cluster)
    state = os.environ.get("EOS_CHAOS_STATE")
    prefix = f"EOS_CHAOS_STATE={state} " if _xdist_worker(config) and state else ""
    lines = [f"eos-chaos: the {cluster.backend} cluster stays up (--eos-keep): bootstrap {cluster.bootstrap}, "
             f"run folder {cluster.run_dir}" + (f"; not healed: {problems}" if problems else ""),
             f"eos-chaos: take it down with: {prefix}{inventory_option.down_command(cluster)}"]
    _say(config, lines)
    for line in lines:
        log.warning(line)


_SUMMARY = pytest.StashKey[list[str]]()


def _say(config: pytest.Config, lines: list[str]) -> None:
    """Lines for the end of pytest's output; an xdist worker's go to the controller, which prints
    them (pytest_testnodedown)."""
    config.stash.setdefault(_SUMMARY, []).extend(lines)
    if hasattr(config, "workeroutput"):
        config.workeroutput.setdefault("eos_summary", []).extend(lines)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """pytest-xdist, in the controller: what a worker had to say at its end (a kept cluster)."""
    lines = (getattr(node, "workeroutput", None) or {}).get("eos_summary") or []
    node.config.stash.setdefault(_SUMMARY, []).extend(lines)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    for line in config.stash.get(_SUMMARY, []):
        terminalreporter.write_line(line, yellow=True)


class FaultInjector:
    """Faults inside a test, on ``kafka_cluster``: the catalogue of ``eos-chaos run`` (partition,
    latency, kill, pause, ... with the same fields as a scenario's ``faults`` entries). Events go to
    ``run_dir/history/nemesis.jsonl``."""

    def __init__(self, cluster: Cluster, run_dir: Path, test: str = "") -> None:
        from chaos.nemesis import Nemesis
        from harness.history.recorder import Recorder
        from harness.run.supervisor import Supervisor

        self.cluster = cluster
        self.run_dir = run_dir
        self._rec = Recorder(run_dir, "nemesis")
        # no defaults: a role's `of` is the test's to give (a test runs no eos-chaos workload, so the
        # harness's own transactional.id or topic would be a silent wrong guess)
        self._nemesis = Nemesis(cluster, Supervisor(run_dir, dict(os.environ)), self._rec)
        self._threads: list[threading.Thread] = []
        # what the test's report needs beside the fault events (harness/report/nemesis_page.py)
        self._meta: dict[str, Any] = {
            "test": test, "t0_ns": self._rec.now(), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "backend": cluster.backend, "bootstrap": cluster.bootstrap, "cluster_dir": str(cluster.run_dir)}
        self._save_meta()

    def _save_meta(self) -> None:
        from harness.report.nemesis_page import META_FILE
        from harness.rundir.runfolder import write_json

        write_json(self.run_dir / META_FILE, self._meta)

    def _fault(self, kind: str, duration: float, fields: dict[str, Any]) -> Fault:
        from pydantic import ValidationError

        from chaos.faults import of_category, parse, problems

        if kind in of_category("workload"):  # a test runs no eos-chaos workload to act on
            raise pytest.UsageError(f"nemesis fault {kind!r} acts on eos-chaos workloads; in your own test, stop "
                                    "your own processes. Allowed here: broker and network faults")
        try:
            fault = parse({"at": 0, "kind": kind, "duration": duration, **fields})
        except ValidationError as exc:
            raise pytest.UsageError(f"nemesis fault {kind} {fields}: {'; '.join(problems(exc))}") from None
        if self.cluster.backend == inventory_option.EXTERNAL:  # checked before anything touches its nodes
            refused = inventory_option.refusals(kind, fault)
            if refused:
                raise FaultNotApplied(f"nemesis fault {kind} {fields} refused on the cluster of --eos-inventory:\n  "
                                      + "\n  ".join(refused))
        return fault

    def inject(self, kind: str, duration: float = 30.0, **fields: Any) -> None:
        """Start ``kind`` now for ``duration`` seconds, in the background (``heal`` ends it early);
        returns once the fault has started (its target resolved, its action under way)."""
        from harness.base.wait import wait_until

        fault = self._fault(kind, duration, fields)
        _require_of(fault)
        before = self._nemesis.faults
        applied = threading.Event()
        errors_before = len(self._nemesis.errors)
        th = self._nemesis.start_now(fault, applied)
        self._threads.append(th)

        def settled() -> bool:
            # a fault that holds (partition, latency, pause, ...) is applied once its action is in
            # place; one that runs its course (restart, flap) once it has started
            started = applied.is_set() or (not fault.holds and self._nemesis.faults > before)
            return started or not th.is_alive() or len(self._nemesis.errors) > errors_before

        # a process fault waits its turn behind another one (Nemesis._process_lock): minutes at most
        wait_until(settled, timeout=FAULT_START_TIMEOUT_S, what=f"nemesis fault {kind} {fields} to be applied",
                   state=lambda: f"active: {self._nemesis.active_faults()}, errors: {self._nemesis.errors}")
        if len(self._nemesis.errors) > errors_before:
            errors = self._nemesis.errors[errors_before:]
            del self._nemesis.errors[errors_before:]  # raised here, not again by the heal at the end
            self._meta.setdefault("errors", []).extend(errors)  # the test's report lists them
            raise FaultNotApplied(f"nemesis fault {kind} {fields} could not be applied: {'; '.join(errors)}")

    @contextmanager
    def fault(self, kind: str, **fields: Any) -> Iterator[None]:
        """``kind`` is on for the ``with`` block; the cluster is healed (and checked) after it."""
        self.inject(kind, BLOCK_FAULT_MAX_S, **fields)
        try:
            yield
        finally:
            self.heal()

    def resolve(self, target: str | int, of: str | None = None) -> int:
        """The node a role names right now: ``resolve("leader", of="orders/0")``, ``"coordinator"``
        (``of`` a transactional.id), ``"group-coordinator"`` (``of`` a group), ``"controller"``."""
        if target in ROLES_OF and of is None:
            raise ValueError(f"resolve({target!r}) needs of=: {ROLES_OF[target]}")
        return self._nemesis.resolve(target, of)

    def heal(self) -> None:
        """End every fault, heal the cluster, wait until it is healthy; fail the test if it is not."""
        from chaos.heal import heal_all
        from chaos.nemesis import FAULT_END_TIMEOUT_S

        self._nemesis.stop.set()
        for th in self._threads:
            th.join(timeout=FAULT_END_TIMEOUT_S)
        self._threads.clear()
        self._nemesis.stop = threading.Event()
        problems = heal_all(self.cluster)
        errors, self._nemesis.errors[:] = list(self._nemesis.errors), []
        self._meta.update(healed=not problems, heal_problems=problems,
                          errors=[*self._meta.get("errors", []), *errors], ended_ns=self._rec.now())
        self._save_meta()
        if problems or errors:
            pytest.fail(f"nemesis: faults that failed {errors}; not healed: {problems} (events: {self.run_dir})",
                        pytrace=False)

    def close(self) -> None:
        try:
            self.heal()
        finally:
            self._rec.close()


#: Roles that name a node only with ``of``, and what ``of`` is for each.
ROLES_OF = {"leader": "the partition, as of='topic/partition'", "coordinator": "the transactional.id, as of='my-txn-id'",
            "group-coordinator": "the consumer group, as of='my-group'"}


class FaultNotApplied(AssertionError):
    """A fault ``nemesis.inject``/``fault`` could not put in place (its error says why); an
    AssertionError, so pytest reports the test as failed at the line that asked for it."""


def _require_of(fault: Fault) -> None:
    for field in ("target", "peer"):
        role = getattr(fault, field, None)
        if isinstance(role, str) and role in ROLES_OF and getattr(fault, "of", None) is None:
            raise pytest.UsageError(f"nemesis fault {fault.kind} {field}={role!r} needs of=: {ROLES_OF[role]}")


_SESSION_RUNS = pytest.StashKey[list[Path]]()


def session_runs(config: pytest.Config) -> list[Path]:
    """The run folders this session's fixtures made (its session page lists them)."""
    return config.stash.setdefault(_SESSION_RUNS, [])


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """One page for the runs of this session (beside them in the results folder), like a soak's;
    under xdist each worker writes its own. A page that cannot be made is logged, never fatal."""
    runs = session.config.stash.get(_SESSION_RUNS, [])
    if not runs:
        return
    from harness.report.session_page import write_session_page

    worker = _xdist_worker(session.config)
    name = f"pytest-session-{time.strftime('%Y%m%d-%H%M%S')}{'-' + worker if worker else ''}.html"
    from harness.report.index_page import write_index

    try:
        path = write_session_page(runs[0].parent / name, runs, title=f"pytest session {name[15:-5]}")
        write_index(runs[0].parent)  # the session page, and nemesis-only tests, listed there too
    except Exception as exc:  # noqa: BLE001 - the tests' outcome stands
        log.warning(f"the session page could not be written ({type(exc).__name__}: {exc})")
        return
    line = f"eos-chaos: this session's runs: {path}"
    _say(session.config, [line])


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text)[:60].strip("-")


@pytest.fixture
def nemesis(kafka_cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[FaultInjector]:
    """Inject faults into ``kafka_cluster`` inside a test; healed and checked when the test ends."""
    from harness.rundir.runfolder import new_run_dir

    inj = FaultInjector(kafka_cluster, new_run_dir(f"pytest-nemesis-{_slug(request.node.name)}"), request.node.nodeid)
    session_runs(request.config).append(inj.run_dir)
    try:
        yield inj
    finally:
        try:
            inj.close()
        finally:
            _nemesis_report(inj.run_dir, request.node)


def _nemesis_report(run_dir: Path, node: pytest.Item) -> None:
    """A test that used only ``nemesis`` gets a report too: its faults, the node lanes, the logsetup.
    A report that cannot be made is logged; it never fails the test."""
    try:
        from harness.report.nemesis_page import write_nemesis_report

        path = write_nemesis_report(run_dir, title=node.nodeid)
    except Exception as exc:  # noqa: BLE001 - the report is a convenience; the test's outcome stands
        log.warning(f"the nemesis report of {run_dir} could not be written ({type(exc).__name__}: {exc})")
        return
    node.user_properties.append(("eos_report", str(path)))


class ScenarioResult(dict[str, Any]):
    """A run's ``verdict.json`` as a dict (what a test asserts on), plus the same verdict typed
    (``verdict``: what the methods read), where the run is and how to read it."""

    def __init__(self, verdict: RunVerdict | Mapping[str, Any], run_dir: Path, scenario: str, seed: int, backend: str,
                 command: str | None = None) -> None:
        typed = verdict if isinstance(verdict, RunVerdict) else RunVerdict.of(verdict)
        super().__init__(typed.to_json())
        self.verdict = typed
        self.command = command or f"eos-chaos run {scenario} --backend {backend} --seed {seed}"
        self.run_dir = run_dir
        self.report = RunFolder(run_dir).report
        self.scenario = scenario
        self.seed = seed
        self.backend = backend

    @property
    def valid(self) -> bool:
        return self.verdict.valid is True

    @property
    def anomalies(self) -> dict[str, int]:
        return self.verdict.counts()

    def summary(self) -> str:
        """What a failing test says: verdict against expectation, check counts, the first example,
        faults that failed or were not healed, the report and the re-run command."""
        v = self.verdict
        exp = v.expected or {}
        label = v.label.upper()
        lines = [f"{self.scenario} (seed {self.seed}, {self.backend}): {label}"
                 + (f", expected {'valid' if exp.get('valid', True) else 'invalid'}"
                    + (f" with {', '.join(exp['fires'])} firing" if exp.get("fires") else "") if exp else "")]
        lines.append("checks: " + (", ".join(f"{k} {n}" for k, n in self.anomalies.items()) or "none fired"))
        crashed = [k for k, c in v.checks.items() if c.count is None]
        if crashed:
            lines.append(f"checks that crashed: {', '.join(crashed)}")
        for name, c in v.checks.items():
            if c.count and c.examples:
                lines.append(f"first {name}: {json.dumps(c.examples[0], default=str)}")
                break
        s, run = v.figures, v.run or RunFacts()
        if run.nemesis_errors:
            lines.append(f"faults that failed: {run.nemesis_errors}")
        if run.healed is False:
            lines.append(f"not healed: {run.heal_problems}")
        missing = [f"{k} {n}" for k, n in (("min_ok_txns", s.txn.ok), ("min_fenced", s.fenced),
                                           ("min_recreated", s.recreated)) if exp.get(k, 0) > n]
        if missing:
            lines.append(f"below the scenario's minimum: {', '.join(missing)}")
        lines.append(f"report: {self.report}")
        lines.append(f"re-run: {self.command}")
        return "\n".join(lines)

    def check_expected(self) -> None:
        """Fail the test (with ``summary``) unless the run came out as its scenario expects."""
        if self.verdict.as_expected is not True:
            pytest.fail(self.summary(), pytrace=False)


def _scenario(name: str, duration: float | None, overrides: dict[str, Any]) -> Any:
    from pydantic import ValidationError

    from harness.base.errors import ConfigError
    from harness.run import scenario
    from harness.run.scenario import Scenario

    try:
        sc = scenario.load(name)
    except ConfigError as exc:
        raise pytest.UsageError(f"run_scenario({name!r}): {exc}") from None
    fields = {**sc.model_dump(), **({"duration": duration} if duration else {}), **overrides}
    try:
        return Scenario.model_validate(fields)
    except ValidationError as exc:
        raise pytest.UsageError(f"run_scenario({name!r}, {overrides}): " + "; ".join(scenario.problems(exc, fields))) from None


def record_verdict(node: pytest.Item, verdict: ScenarioResult) -> None:
    """The run's facts as JUnit properties of the test (``<property>`` in --junitxml), so a CI
    system shows the report, verdict, seed and re-run command beside the test."""
    for name, value in (("eos_verdict", verdict.verdict.label), ("eos_as_expected", str(verdict.verdict.as_expected is True).lower()),
                        ("eos_scenario", verdict.scenario), ("eos_seed", str(verdict.seed)),
                        ("eos_backend", verdict.backend), ("eos_report", str(verdict.report)),
                        ("eos_rerun", verdict.command)):
        node.user_properties.append((name, value))


@pytest.fixture
def run_scenario(kafka_cluster: Cluster, eos_options: EosOptions, request: pytest.FixtureRequest) -> Callable[..., ScenarioResult]:
    """``run_scenario(name, seed=None, **overrides)``: run a scenario on ``kafka_cluster`` and return
    its ``ScenarioResult``. ``overrides`` replace scenario fields (``duration=60``, ``faults=[...]``). Each
    run's report, verdict, seed and re-run command become JUnit properties of the test."""

    def run(name: str, seed: int | None = None, **overrides: Any) -> ScenarioResult:
        return run_on_session_cluster(_scenario(name, eos_options.duration, overrides), name, seed, kafka_cluster,
                                      eos_options, request)

    return run


def run_on_session_cluster(sc: Any, source: str, seed: int | None, kafka_cluster: Cluster, eos_options: EosOptions,
                           request: pytest.FixtureRequest) -> ScenarioResult:
    """Run scenario ``sc`` (named ``source`` in its re-run command) on the session's cluster with the
    session's options (--eos-client, --eos-seed), as a test's run: its facts become JUnit properties
    and the session's summary lists it."""
    from clusters.backends.backends import Backend
    from harness.run import runner
    from harness.rundir.runfolder import new_run_dir

    if eos_options.client is not None:
        from harness.base.errors import ConfigError

        try:
            sc = sc.with_library(eos_options.client, flag="--eos-client")
        except ConfigError as exc:
            pytest.skip(str(exc))  # e.g. a non-transactional producer, which only confluent-kafka runs
    s = seed if seed is not None else (eos_options.seed if eos_options.seed is not None else random.randrange(2**31))
    backend = Backend(kafka_cluster.backend)
    run_dir = new_run_dir(f"pytest-{_slug(sc.name)}")
    result = runner.run_on_shared(sc, backend, s, run_dir, kafka_cluster, source=source)
    # the command the run recorded: with its duration and Kafka version, as the report shows it
    verdict = ScenarioResult(result.verdict, result.run_dir, source, s, backend.value, result.journal.command)
    record_verdict(request.node, verdict)
    session_runs(request.config).append(result.run_dir)
    if result.interrupted:
        # The run caught the Ctrl-C (or SIGTERM) to stop its workloads, heal and check what ran; the
        # interrupt is the session's all the same. Returned, it was a failed test and the session
        # went on to the next run.
        raise KeyboardInterrupt
    return verdict


#: The ``app_under_test`` fixture's module, which pytest loads with this plugin. Named, not imported:
#: it imports this module, and an import back would be a cycle (tests/unit/test_import_cycles.py).
pytest_plugins = ["harness.pytest_plugin.app_fixture"]
