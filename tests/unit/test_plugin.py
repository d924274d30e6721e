"""The pytest plugin as a user meets it, in a fresh pytest run (pytester), without a cluster:
markers and options registered, bad option values refused, the library collected one test per
scenario with junit names that say which, and a failing scenario's message carrying the check
counts, the first example and the report. (The fixtures on a real cluster: tests/chaos/test_plugin.py.)"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.base.paths import cache_dir
from harness.pytest_plugin import ScenarioResult
from harness.run import scenario

pytest_plugins = ["pytester"]

INVALID = {
    "valid": False, "as_expected": False, "expected": {"valid": True, "fires": [], "min_ok_txns": 0, "min_fenced": 0},
    "checks": {"duplicate": {"count": 6, "examples": [{"value": "txn-producer-0.0-1459-0",
                                                      "positions": ["eos-a-2@247", "eos-a-2@248"]}]},
               "lost-write": {"count": 0, "examples": []}},
    "stats": {"txn": {"ok": 10, "fail": 0, "info": 0}, "fenced": 0},
    "run": {"healed": True, "nemesis_errors": []},
}

# Stands in for the cluster run: what the plugin does with the verdict is what is tested here.
CONFTEST = f"""
import pytest
from harness.pytest_plugin import ScenarioResult

@pytest.fixture
def run_scenario(tmp_path):
    def run(name, **overrides):
        ok = dict({INVALID!r}, valid=True, as_expected=True)
        ok["checks"] = {{k: {{"count": 0, "examples": []}} for k in ok["checks"]}}
        return ScenarioResult({INVALID!r} if name == "baseline" else ok, tmp_path, name, 42, "local")
    return run
"""


def test_markers_and_options_are_registered(pytester: pytest.Pytester) -> None:
    markers = pytester.runpytest("--markers").stdout.str()
    assert "@pytest.mark.chaos:" in markers and "@pytest.mark.library:" in markers
    helptext = pytester.runpytest("--help").stdout.str()
    for opt in ("--eos-backend", "--eos-kafka-version", "--eos-duration", "--eos-seed", "--eos-results", "--eos-library",
                "--eos-transaction-version", "--eos-client", "--eos-port-base", "--eos-keep", "--eos-require-backend"):
        assert opt in helptext


def test_every_fixture_is_registered_with_the_plugin(pytester: pytest.Pytester) -> None:
    """``app_under_test`` lives in its own module, which the plugin names in ``pytest_plugins``."""
    pytester.makepyfile(test_plain="def test_nothing():\n    pass\n")
    fixtures = pytester.runpytest("--fixtures").stdout.str()
    for name in ("kafka_cluster", "nemesis", "run_scenario", "app_under_test"):
        assert f"\n{name} " in fixtures, name


@pytest.mark.parametrize("args, says", [
    (["--eos-duration", "2"], "a scenario runs at least 5 seconds"),
    (["--eos-duration", "soon"], "'soon' is not a number of seconds"),
    (["--eos-backend", "k8s"], "invalid choice: 'k8s'"),
    (["--eos-kafka-version", "4.x"], "--eos-kafka-version '4.x' is not a release version"),
    (["--eos-kafka-version", "3.0.0"], "--eos-kafka-version 3.0.0 is older than"),
    (["--eos-transaction-version", "3"], "invalid choice: 3 (choose from 0, 1, 2)"),
    (["--eos-transaction-version", "2", "--eos-kafka-version", "3.9.1"],
     "--eos-transaction-version 2: Kafka 3.9.1 cannot be formatted at transaction.version=2"),
    (["--eos-port-base", "80"], "80: a port base is between 2000 and 60000"),
    (["--eos-port-base", "x"], "'x' is not a port number"),
    (["--eos-client", "jav"], "--eos-client: library 'jav': unknown client library; allowed: confluent-kafka, java"),
])
def test_bad_option_values_are_usage_errors_that_say_what_is_allowed(pytester: pytest.Pytester, args: list[str], says: str) -> None:
    done = pytester.runpytest(*args)
    assert done.ret == pytest.ExitCode.USAGE_ERROR
    assert says in done.stderr.str()


def test_the_library_is_one_test_per_scenario(pytester: pytest.Pytester) -> None:
    done = pytester.runpytest("-m", "chaos", "--eos-library", "--collect-only", "-q")
    ids = [line for line in done.stdout.lines if "::test_scenario[" in line]
    assert sorted(ids) == sorted(f"test_eos_chaos_library.py::test_scenario[{n}]" for n in scenario.names())


def test_a_failing_scenario_says_what_fired_and_where_the_report_is(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    junit = pytester.path / "junit.xml"
    done = pytester.runpytest("-m", "chaos", "--eos-library", "-k", "baseline", f"--junitxml={junit}")
    done.assert_outcomes(passed=1, failed=1)  # baseline (canned invalid), txn-baseline (canned valid)
    cases = {c.get("name"): c for c in ET.parse(junit).iter("testcase")}
    assert set(cases) == {"test_scenario[baseline]", "test_scenario[txn-baseline]"}
    failure = cases["test_scenario[baseline]"].find("failure")
    assert failure is not None and cases["test_scenario[txn-baseline]"].find("failure") is None
    message = failure.get("message", "") + (failure.text or "")
    assert "baseline (seed 42, local): INVALID, expected valid" in message
    assert "checks: duplicate 6" in message
    assert 'first duplicate: {"value": "txn-producer-0.0-1459-0"' in message
    assert "report.html" in message and "re-run: eos-chaos run baseline --backend local --seed 42" in message


def test_summary_names_unmet_minimums_and_unhealed_faults(tmp_path) -> None:  # type: ignore[no-untyped-def]
    v = dict(INVALID, valid=True, expected={"valid": True, "min_fenced": 1},
             checks={"duplicate": {"count": 0, "examples": []}},
             stats={"txn": {"ok": 5}, "fenced": 0},
             run={"healed": False, "heal_problems": ["node 2: down"], "nemesis_errors": ["kill at 5.0s: LookupError"]})
    text = ScenarioResult(v, tmp_path, "leader-kill", 1, "compose", "eos-chaos run leader-kill --backend compose --seed 1 --duration 20").summary()
    assert "checks: none fired" in text and "below the scenario's minimum: min_fenced 0" in text
    assert "not healed: ['node 2: down']" in text and "faults that failed: ['kill at 5.0s: LookupError']" in text
    assert text.endswith("re-run: eos-chaos run leader-kill --backend compose --seed 1 --duration 20")  # as recorded


# A stand-in cluster and run: the real run_scenario fixture records what the run left (junit
# properties, the session page); only the cluster run itself is canned.
CANNED_RUN = f"""
import types
INTERRUPTED = False  # a run that caught a Ctrl-C: the twin below sets it
import pytest
from harness.run import runner

@pytest.fixture(scope="session")
def kafka_cluster():
    return types.SimpleNamespace(backend="local")

@pytest.fixture(autouse=True)
def canned_run(monkeypatch):
    def run_on_shared(sc, backend, seed, run_dir, cluster, source):
        verdict = {INVALID!r}
        return types.SimpleNamespace(verdict=verdict, run_dir=run_dir, interrupted=INTERRUPTED,
                                     journal=types.SimpleNamespace(command=f"eos-chaos run {{source}} --seed {{seed}}"))
    monkeypatch.setattr(runner, "run_on_shared", run_on_shared)
"""


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """The plugin sets EOS_CHAOS_RESULTS in the (in-process) inner session: restored afterwards."""
    for name in ("EOS_CHAOS_RESULTS", "EOS_CHAOS_STATE", "DOCKER_HOST"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_a_scenario_test_records_report_verdict_seed_and_rerun_as_junit_properties(
        pytester: pytest.Pytester, clean_env: pytest.MonkeyPatch) -> None:
    pytester.makeconftest(CANNED_RUN)
    pytester.makepyfile(test_mine="def test_it(run_scenario):\n    run_scenario('baseline', seed=42)\n")
    junit, results = pytester.path / "junit.xml", pytester.path / "runs"
    done = pytester.runpytest(f"--junitxml={junit}", f"--eos-results={results}")
    done.assert_outcomes(passed=1)
    case = next(ET.parse(junit).iter("testcase"))
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    run_dir = next(results.glob("*-pytest-baseline-*"))
    assert props == {"eos_verdict": "invalid", "eos_as_expected": "false", "eos_scenario": "baseline", "eos_seed": "42",
                     "eos_backend": "local", "eos_report": str(run_dir / "report.html"),
                     "eos_rerun": "eos-chaos run baseline --seed 42"}
    pages = list(results.glob("pytest-session-*.html"))  # the session's own page lists its run
    assert len(pages) == 1 and run_dir.name in pages[0].read_text()
    assert f'href="{pages[0].name}"' in (results / "index.html").read_text()  # and the results index links it


def test_a_run_interrupted_by_ctrl_c_ends_the_session_as_ctrl_c_does(
        pytester: pytest.Pytester, clean_env: pytest.MonkeyPatch) -> None:
    """A run catches the Ctrl-C to heal and check what ran; the interrupt is the session's all the same:
    the session ends interrupted, its later tests not run (it used to fail the one test and go on).
    The twin above, a run not interrupted, ends as its verdict says."""
    pytester.makeconftest(CANNED_RUN.replace("INTERRUPTED = False", "INTERRUPTED = True"))
    pytester.makepyfile(test_mine="def test_it(run_scenario):\n    run_scenario('baseline', seed=42)\n\n"
                                  "def test_after():\n    pass\n")
    done = pytester.runpytest_subprocess(f"--eos-results={pytester.path / 'runs'}")  # a Ctrl-C in-process is ours
    assert done.ret == pytest.ExitCode.INTERRUPTED, done.stdout.str()[-2000:]
    done.assert_outcomes()  # neither passed nor failed: the session stopped in the first
    assert next((pytester.path / "runs").glob("*-pytest-baseline-*")).is_dir()  # its run kept, for its report


def test_a_session_that_uses_no_fixture_keeps_its_environment(pytester: pytest.Pytester, clean_env: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_plain="import os\n\ndef test_env():\n    assert 'EOS_CHAOS_RESULTS' not in os.environ\n")
    pytester.runpytest("--eos-results", str(pytester.path / "runs")).assert_outcomes(passed=1)
    assert not (pytester.path / "runs").exists()


def test_compose_without_an_engine_is_a_skip_with_the_reason_or_a_failure_when_required(
        pytester: pytest.Pytester, clean_env: pytest.MonkeyPatch) -> None:
    # an engine the user named that does not answer: eos-chaos must not start one of its own
    clean_env.setenv("DOCKER_HOST", f"unix://{pytester.path}/no-engine.sock")
    pytester.makepyfile(test_mine="def test_it(kafka_cluster):\n    pass\n")
    skipped = pytester.runpytest("--eos-backend", "compose", "-rs", "--eos-results", str(pytester.path / "runs"))
    skipped.assert_outcomes(skipped=1)
    assert "the compose backend has no Docker engine" in skipped.stdout.str()
    assert "no-engine.sock is set but no Docker engine answers there" in skipped.stdout.str()
    required = pytester.runpytest("--eos-backend", "compose", "--eos-require-backend", "--eos-results", str(pytester.path / "runs"))
    required.assert_outcomes(errors=1)
    assert required.ret == pytest.ExitCode.TESTS_FAILED and "(--eos-require-backend)" in required.stdout.str()


class _Config:
    """What ``port_base`` reads of a pytest config: the option and the xdist worker input."""

    def __init__(self, base: int | None, worker: str | None) -> None:
        self.base = base
        if worker is not None:
            self.workerinput = {"workerid": worker}

    def getoption(self, name: str, default: object = None) -> object:
        return self.base


@pytest.mark.parametrize("base, worker, backend, expected", [
    (None, None, "local", None),  # the backend's own default, as eos-chaos run
    (21000, None, "local", 21000),
    (None, "gw0", "local", 19092), (None, "gw1", "local", 19192), (None, "gw3", "compose", 29392),
    (21000, "gw2", "compose", 21200),
])
def test_each_xdist_worker_gets_a_port_base_of_its_own(base: int | None, worker: str | None, backend: str,
                                                       expected: int | None) -> None:
    from harness.pytest_plugin import port_base

    assert port_base(_Config(base, worker), backend) == expected  # type: ignore[arg-type]


def test_roles_need_their_of_in_a_test(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from chaos import faults
    from harness.pytest_plugin import FaultInjector, _require_of

    injector = FaultInjector.__new__(FaultInjector)  # no cluster: the check comes before any question to it
    with pytest.raises(ValueError, match=r"resolve\('coordinator'\) needs of=: the transactional.id"):
        injector.resolve("coordinator")
    with pytest.raises(pytest.UsageError, match="kill-leader target='leader' needs of=: the partition"):
        _require_of(faults.parse({"at": 0, "kind": "kill-leader"}))
    with pytest.raises(pytest.UsageError, match="partition peer='group-coordinator' needs of="):
        _require_of(faults.parse({"at": 0, "kind": "partition", "partition": "directed", "target": 1,
                                  "peer": "group-coordinator"}))
    _require_of(faults.parse({"at": 0, "kind": "kill", "target": "coordinator", "of": "my-txn"}))  # its clean twin


# ---------------------------------------------------------------- --eos-inventory: a cluster you already run


#: The artifact cache as this session found it (pytester moves HOME, and with it the default).
CACHE = cache_dir()


@pytest.fixture
def forget_inventory() -> Iterator[None]:
    """The inventory an in-process session named is forgotten afterwards, whatever the test did."""
    from clusters.backends import backends

    yield
    backends.use_external(None)


@pytest.mark.parametrize("args, says", [
    (["--eos-allow-non-disposable"], "--eos-allow-non-disposable is about a cluster you already run: give it with "
                                     "--eos-inventory FILE"),
    (["--eos-inventory", "nowhere.yaml"], "--eos-inventory nowhere.yaml: no such file"),
    (["--eos-inventory", "."], "--eos-inventory .: not a file"),
    (["--eos-inventory", "INV", "--eos-backend", "compose"], "--eos-backend compose names another: give one of them"),
    (["--eos-inventory", "INV", "--eos-transaction-version", "2"],
     "--eos-transaction-version 2: the cluster of --eos-inventory runs at the levels it has"),
])
def test_inventory_options_that_contradict_are_usage_errors(pytester: pytest.Pytester, forget_inventory: None,
                                                            args: list[str], says: str) -> None:
    from tests.external_nodes import local_inventory

    inv = local_inventory(pytester.path, ["1", "2", "3"])
    done = pytester.runpytest(*[str(inv) if a == "INV" else a for a in args])
    assert done.ret == pytest.ExitCode.USAGE_ERROR
    assert says in done.stderr.str(), done.stderr.str()


def test_a_bad_inventory_is_a_usage_error_naming_file_and_line(pytester: pytest.Pytester, forget_inventory: None) -> None:
    from clusters.backends import backends
    from tests.external_nodes import local_inventory

    inv = local_inventory(pytester.path, ["1", "2", "3"])
    inv.write_text(inv.read_text().replace("    host: 127.0.0.1\n", "    host: 127.0.0.1\n    colour: blue\n", 1))
    pytester.makepyfile(test_mine="def test_it(kafka_cluster):\n    raise AssertionError('never runs')\n")
    done = pytester.runpytest("--eos-inventory", str(inv))
    assert done.ret == pytest.ExitCode.USAGE_ERROR
    assert f"{inv}:6" in done.stderr.str() and "colour" in done.stderr.str(), done.stderr.str()
    assert backends.external_target() is None  # nothing of the refused session stays in the process
    # its clean twin: the same file without the unknown key is taken, and the session runs
    inv.write_text(inv.read_text().replace("    colour: blue\n", ""))
    pytester.makepyfile(test_mine="def test_it(eos_options):\n    assert eos_options.backend == 'external'\n")
    pytester.runpytest("--eos-inventory", str(inv)).assert_outcomes(passed=1)
    assert backends.external_target() is None  # forgotten at the session's end (pytest_unconfigure)


def _free_proxy_base(brokers: int) -> int:
    """A port base for an external cluster's proxies where every port they would listen on is free
    now, below the kernel's ephemeral ports (32768 up): a random base in 42000-58000 met a
    connection's port beside another eos-chaos run ("port 127.0.0.1:52804 (proxy client-to-n3) is
    already in use") and away from the backends' own bases (19092 up, 29092 up)."""
    import random

    from clusters.backends.external.proxy_plan import ExternalPlan
    from clusters.backends.procs import _bind_error

    for _ in range(50):
        base = random.randrange(21000, 28000, 100)
        plan = ExternalPlan(tuple((n, f"127.0.0.1:{n}") for n in range(1, brokers + 1)), base)
        if all(_bind_error(addr) is None for addr, _ in plan.all_binds()):
            return base
    raise AssertionError("no port base in 21000-28000 with every proxy port free in 50 tries")


def test_a_cluster_that_cannot_be_fronted_ends_the_session_naming_the_node(
        pytester: pytest.Pytester, clean_env: pytest.MonkeyPatch, forget_inventory: None) -> None:
    """Real node commands (``sleep`` processes as brokers), no Kafka: nothing answers on node 1's
    listener, so the session ends before any test with pytest's usage-error status, naming the node
    and its inventory line, and nothing it started is left running."""
    import subprocess

    from clusters.backends import procs
    from clusters.spark.standalone import free_port
    from tests.external_nodes import local_inventory, sleepers

    clean_env.setenv("EOS_CHAOS_STATE", str(pytester.path / "state"))
    clean_env.setenv("EOS_CHAOS_CACHE", str(CACHE))  # pytester's HOME has none: the proxies' builds are there
    pytester.makepyfile(test_mine="def test_it(kafka_cluster):\n    raise AssertionError('never runs')\n")
    with sleepers(3) as args:
        brokers = [subprocess.Popen(["sleep", a]) for a in args]
        try:
            inv = local_inventory(pytester.path, args, ports=[free_port() for _ in args])
            # in a process of its own, as a user's session: the proxies it would start are its children
            done = pytester.runpytest_subprocess("--eos-inventory", str(inv), "--eos-port-base", str(_free_proxy_base(3)),
                                                 "--eos-results", str(pytester.path / "runs"), timeout=300)
        finally:
            for p in brokers:
                p.kill()
                p.wait()
    out = done.stdout.str() + done.stderr.str()
    assert done.ret == pytest.ExitCode.USAGE_ERROR, out
    assert "node 1" in out and f"{inv}:4" in out and "never runs" not in out, out
    assert "Traceback" not in out, out
    left = [t for t in procs.tagged_processes() if str(pytester.path) in procs.cmdline(t.pid)]
    assert left == [], f"a refused session left these running: {left}"


def test_a_nemesis_fault_on_a_cluster_not_said_disposable_is_refused_before_it_starts(
        tmp_path: Path, forget_inventory: None) -> None:
    from clusters.backends import backends
    from harness.pytest_plugin import FaultInjector, FaultNotApplied
    from tests.external_nodes import local_inventory

    inv = local_inventory(tmp_path, ["1", "2", "3"])
    inv.write_text(inv.read_text().replace("disposable: true", "disposable: false"))
    injector = FaultInjector.__new__(FaultInjector)  # no nemesis: the refusal comes before anything runs
    injector.cluster = type("Ext", (), {"backend": "external"})()  # type: ignore[assignment]
    backends.use_external(backends.ExternalTarget(inv, allow_non_disposable=False))
    with pytest.raises(FaultNotApplied, match=rf"does not say the cluster is disposable \({inv}:2\)"):
        injector._fault("kill", 5.0, {"target": 2})
    backends.use_external(backends.ExternalTarget(inv, allow_non_disposable=True))  # its clean twin: the flag
    assert injector._fault("kill", 5.0, {"target": 2}).kind == "kill"
