"""The command line in-process (typer's CliRunner), no cluster: refusals before anything starts,
the help texts, run folders and scenario files given as paths, the error guard and -v/-q."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from harness.base import logsetup
from harness.base.errors import ConfigError
from harness.campaigns.soak import Soak, runs_wanted
from harness.cli import app
from harness.run import runner, scenario
from harness.run.scenario import LIBRARY

#: Wide enough that no help line wraps, so a default is found in one piece.
WIDE = {"COLUMNS": "400", "TERMINAL_WIDTH": "400"}


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    """Each invocation points the project's loggers at its console: put them back afterwards."""
    saved = {n: (logging.getLogger(n).level, list(logging.getLogger(n).handlers)) for n in logsetup.ROOTS}
    yield
    for name, (level, handlers) in saved.items():
        logger = logging.getLogger(name)
        logger.setLevel(level)
        logger.handlers[:] = handlers


def cli(*args: str) -> Result:
    return CliRunner(env=WIDE).invoke(app, list(args))


@pytest.fixture
def no_real_run(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Calls that would have started a real run (none may happen)."""
    started: list[Any] = []
    monkeypatch.setattr(runner, "run", lambda *a, **kw: started.append(a))
    return started


def test_json_without_dry_run_refuses_before_anything_starts(no_real_run: list[Any]) -> None:
    r = cli("run", "baseline", "--json")
    assert r.exit_code == 2, r.output
    assert "--json needs --dry-run" in r.output
    assert no_real_run == []


def test_json_with_dry_run_prints_the_schedule(no_real_run: list[Any]) -> None:
    r = cli("run", "leader-kill", "--seed", "3", "--dry-run", "--json")
    assert r.exit_code == 0, r.output
    assert '"scenario": "leader-kill"' in r.stdout and '"seed": 3' in r.stdout
    assert no_real_run == []


@pytest.mark.parametrize(("library", "said"), [
    ("java@9.9", "--library: library 'java@9.9': '9.9' is not a release version; expected java@MAJOR.MINOR.PATCH"),
    ("rust", "--library: library 'rust': unknown client library; allowed: confluent-kafka, java, kafka-python"),
    ("confluent-kafka@2.5.0", "--library: library 'confluent-kafka@2.5.0': only java, franz-go and sarama take a version"),
    # a release that does not exist: refused while the client is prepared, before the run starts anything
    ("java@9.9.9", "--library: library java@9.9.9: org.apache.kafka:kafka-clients:9.9.9 is not on Maven Central"),
])
def test_a_bad_library_is_exit_2_naming_the_flag_before_the_run_starts(library: str, said: str, no_real_run: list[Any],
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.workloads.clients import java_build

    def ensure(version: str) -> None:  # what java_build._missing says, without asking Maven Central
        raise ConfigError(f"library java@{version}: org.apache.kafka:kafka-clients:{version} is not on Maven Central; "
                          "versions known here: 3.9.1, 4.4.0")

    monkeypatch.setattr(java_build, "ensure", ensure)
    r = cli("run", "baseline", "--library", library)
    assert r.exit_code == 2, r.output
    assert said in " ".join(r.output.split()) and "internal error" not in r.output
    assert no_real_run == []


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "86401", "1e9", "4"])
@pytest.mark.parametrize("command", [["run", "baseline", "--dry-run"], ["soak", "--runs", "1"]])
def test_a_duration_that_is_not_5_s_to_24_h_is_refused_naming_the_flag(value: str, command: list[str],
                                                                        no_real_run: list[Any]) -> None:
    r = cli(*command, "--duration", value)
    assert r.exit_code == 2, r.output
    assert "--duration" in r.output and "24 h" in r.output
    assert no_real_run == []


@pytest.mark.parametrize(("command", "flag", "allowed"), [
    (["smoke"], "--duration", "from 10 to 3600"), (["soak"], "--hours", "of at least 0.001"),
    (["bench", "producer"], "--seconds", "from 5 to 3600"), (["bench", "spark"], "--seconds", "of at least 45"),
    (["bench", "cluster"], "--load", "of at least 0"),
])
@pytest.mark.parametrize("value", ["inf", "nan"])
def test_every_float_option_refuses_inf_and_nan(command: list[str], flag: str, allowed: str, value: str) -> None:
    r = cli(*command, flag, value)
    assert r.exit_code == 2, r.output
    assert flag in r.output and f"give a number {allowed}" in r.output


@pytest.mark.parametrize(("name", "value"), [("baseline", "5"), ("leader-kill", "60"), ("leader-kill", "86400")])
def test_a_duration_within_the_limit_plans_a_schedule(name: str, value: str) -> None:
    # baseline at 5 s: leader-kill's faults at 8 s and later would be cut off, which is refused
    r = cli("run", name, "--dry-run", "--duration", value)
    assert r.exit_code == 0, r.output
    assert f"{float(value):.0f}s:" in r.stdout


@pytest.mark.parametrize(("command", "defaults"), [
    (["run"], ["[default: random]", "[default: results/<run id>]", "[default: the cluster that is up, else ",
               "[default: 19092 local, 29092 compose]"]),
    (["soak"], ["[default: every one that expects a valid run]", "[default: one of each scenario]",
                "[default: random]", "[default: results/<id>-soak]", "Apache Kafka release [default: "]),
    (["report"], ["[default: RUN_DIR/report.html]"]),
    (["cluster", "up"], ["[default: 19092 local, 29092 compose]"]),
])
def test_help_shows_the_defaults_written_in_it(command: list[str], defaults: list[str]) -> None:
    r = cli(*command, "--help")
    assert r.exit_code == 0, r.output
    for default in defaults:
        assert default in r.stdout, f"{default!r} missing from {' '.join(command)} --help"


def test_seed_help_says_what_the_seed_chooses_today() -> None:
    r = cli("run", "--help")
    assert "later" not in r.stdout and "fault schedule" in r.stdout


@pytest.mark.parametrize("command", [["check"], ["report"], ["compare", "."]])
def test_a_file_given_as_run_folder_is_called_a_file(command: list[str], tmp_path: Path) -> None:
    afile = tmp_path / "verdict.json"
    afile.write_text("{}")
    r = cli(*command, str(afile))
    assert r.exit_code == 2, r.output
    assert "is a file, not a run folder" in r.output


def test_a_missing_run_folder_is_said_to_not_exist(tmp_path: Path) -> None:
    r = cli("check", str(tmp_path / "nope"))
    assert r.exit_code == 2 and "does not exist" in r.output


def test_a_scenario_file_without_yaml_suffix_is_loaded(tmp_path: Path) -> None:
    path = tmp_path / "my-scenario"
    shutil.copy(LIBRARY / "leader-kill.yaml", path)
    r = cli("run", str(path), "--dry-run", "--seed", "1")
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("leader-kill, seed 1")


def test_a_scenario_file_without_suffix_that_is_not_a_scenario_says_so(tmp_path: Path) -> None:
    path = tmp_path / "notes"
    path.write_text("name: x\nduration: 10\n")
    r = cli("run", str(path), "--dry-run")
    assert r.exit_code == 2, r.output
    assert str(path) in r.output and "unknown scenario" not in r.output


def test_an_unknown_scenario_name_lists_the_known_ones() -> None:
    r = cli("run", "no-such-scenario", "--dry-run")
    assert r.exit_code == 2 and "unknown scenario 'no-such-scenario'; known: app-flink, app-flink-alos, app-go-copier, " in r.output


def _raise(exc: BaseException) -> Any:
    def boom(*args: Any, **kwargs: Any) -> Any:
        raise exc
    return boom


def test_an_exit_code_a_command_chooses_passes_the_guard(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EOS_CHAOS_STATE", str(tmp_path / "state"))
    r = cli("cluster", "status", "--backend", "local", "--json")
    assert r.exit_code == 2, r.output  # no cluster up: an environment without one (harness.cli.exits), not a finding
    assert '"up": false' in r.stdout and "internal error" not in r.output


def test_a_bug_is_one_line_without_traceback_exit_2(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scenario, "names", _raise(ZeroDivisionError("division by zero")))
    r = cli("scenarios")
    assert r.exit_code == 2, r.output
    assert "internal error: ZeroDivisionError: division by zero" in r.output
    assert "Traceback" not in r.output


def test_with_v_a_bug_shows_its_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scenario, "names", _raise(ZeroDivisionError("division by zero")))
    r = cli("-v", "scenarios")
    assert r.exit_code == 2 and "Traceback" in r.output and "internal error" in r.output


def test_a_harness_error_is_its_message_and_exit_code(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scenario, "names", _raise(ConfigError("bad [thing] here")))
    r = cli("scenarios")
    assert r.exit_code == 2 and "error: bad [thing] here" in r.output


def test_ctrl_c_exits_130(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scenario, "names", _raise(KeyboardInterrupt()))
    r = cli("scenarios")
    assert r.exit_code == 130 and "interrupted" in r.output


def _logs_a_line(*args: Any, **kwargs: Any) -> list[str]:
    logging.getLogger("harness.run.scenario").info("an info line")
    logging.getLogger("harness.run.scenario").warning("a warning line")
    logging.getLogger("harness.run.scenario").debug("a debug line")
    return []


@pytest.mark.parametrize(("flags", "shown", "hidden"), [
    ([], ["an info line", "a warning line"], ["a debug line"]),
    (["-q"], ["a warning line"], ["an info line", "a debug line"]),
    (["--quiet"], ["a warning line"], ["an info line"]),
    (["-v"], ["a debug line", "an info line", "a warning line"], []),
])
def test_v_and_q_choose_which_log_lines_show(flags: list[str], shown: list[str], hidden: list[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scenario, "names", _logs_a_line)
    r = cli(*flags, "scenarios")
    assert r.exit_code == 0, r.output
    for line in shown:
        assert line in r.stderr
    for line in hidden:
        assert line not in r.stderr


def test_v_and_q_together_are_refused() -> None:
    r = cli("-v", "-q", "scenarios")
    assert r.exit_code == 2 and "-v" in r.output


# The soak's rules (harness.campaigns.soak), which the CLI only turns into exit codes.

def test_a_soak_runs_one_of_each_scenario_unless_told_runs_or_hours() -> None:
    assert runs_wanted(None, None, 3) == 3
    assert runs_wanted(5, None, 3) == 5
    assert runs_wanted(None, 1.5, 3) is None
    with pytest.raises(ConfigError, match="--hours and --runs: give one of them"):
        runs_wanted(5, 1.5, 3)


def test_a_soak_is_as_expected_only_if_every_run_was_and_the_cluster_healed() -> None:
    s = Soak(7, ["baseline"], "local", 1, None, False, stopped_because="1 runs done", healed_at_end=True)
    assert s.as_expected and not s.interrupted
    s.healed_at_end = False
    assert not s.as_expected
    s = Soak(7, ["baseline"], "local", 1, None, False, stopped_because="interrupted")
    assert s.interrupted


# What run, check and smoke print at the end (harness.cli.summary), and the dry run's schedule.

def test_check_prints_the_one_verdict_summary(tmp_path: Path) -> None:
    from tests.unit.test_report import make_run

    clean, dup = make_run(tmp_path, "", "clean"), make_run(tmp_path, "duplicate", "dup")
    r = cli("check", str(clean))
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("VALID txn ok=") and f"run folder: {clean}" in r.stdout
    assert "duplicate:" not in r.stdout
    r = cli("check", str(dup))
    assert r.exit_code == 1, r.output
    assert r.stdout.startswith("INVALID txn ok=") and "  duplicate: " in r.stdout and f"run folder: {dup}" in r.stdout


def test_an_unknown_verdict_is_exit_3_never_a_finding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness import checker
    from tests.unit.test_report import make_run

    run = make_run(tmp_path, "", "crashing")

    def crash(t: object) -> object:
        raise RuntimeError("a check that crashes")

    monkeypatch.setitem(checker.CHECKS, "duplicate", crash)
    r = cli("check", str(run))
    assert r.exit_code == 3, r.output
    assert r.stdout.startswith("UNKNOWN") and "duplicate: check crashed: RuntimeError" in r.stdout, r.stdout


def test_print_outcome_is_the_smoke_summary_too(capsys: pytest.CaptureFixture[str]) -> None:
    from harness.cli.summary import FAIL, print_outcome

    print_outcome(FAIL, "transactions ok=3 [not markup]", ["missing: ['v-1']"], "logs: /x")
    assert capsys.readouterr().out == "FAIL transactions ok=3 [not markup]\n  missing: ['v-1']\nlogs: /x\n"


def test_the_dry_run_text_lists_the_json_schedule() -> None:
    import json

    planned = json.loads(cli("run", "flaky-network", "--seed", "5", "--dry-run", "--json").stdout)
    text = cli("run", "flaky-network", "--seed", "5", "--dry-run").stdout.splitlines()
    assert text[0] == f"flaky-network, seed 5, {planned['duration']:.0f}s:"
    assert [line.split()[1] for line in text[1:]] == [f["kind"] for f in planned["schedule"]]
    assert planned["schedule"], "flaky-network plans faults"


def test_a_scenario_file_that_is_not_text_says_so(tmp_path: Path) -> None:
    path = tmp_path / "scenario.bin"
    path.write_bytes(b"name: x\n\xd0\xff\xfe\n")
    r = cli("run", str(path), "--dry-run")
    assert r.exit_code == 2, r.output
    assert f"{path}: not valid YAML" in r.output and "internal error" not in r.output


def test_every_command_is_wrapped_in_the_one_guard() -> None:
    import typer

    from harness.cli.guard import guarded

    guard_code = guarded(lambda: None).__code__

    def commands(t: typer.Typer, prefix: str = "") -> Iterator[tuple[str, Any]]:
        for c in t.registered_commands:
            yield f"{prefix}{c.name or getattr(c.callback, '__name__', '?')}", c.callback
        for g in t.registered_groups:
            assert g.typer_instance is not None
            yield from commands(g.typer_instance, f"{prefix}{g.name + ' ' if g.name else ''}")

    found = dict(commands(app))
    assert len(found) >= 20, sorted(found)  # every command the CLI had before the split
    unguarded = [name for name, callback in found.items() if getattr(callback, "__code__", None) is not guard_code]
    assert unguarded == []


def test_the_flag_limit_is_the_scenario_limit() -> None:
    from harness.cli import options
    from harness.run import scenario

    assert options.MAX_DURATION_S == scenario.MAX_DURATION_S


def test_bench_spark_on_a_standalone_cluster_wants_a_long_enough_run() -> None:
    r = cli("bench", "spark", "--spark", "standalone", "--seconds", "90")
    assert r.exit_code == 2 and "--seconds 90 with --spark standalone: at least 150" in r.output, r.output


def test_bench_app_build_refuses_an_app_that_is_not_shipped_naming_the_shipped() -> None:
    r = cli("bench", "app-build", "--apps", "streams-count-sum,my-app", "--runs", "1")
    assert r.exit_code == 2 and "--apps my-app: no such shipped app; allowed: streams-count-sum," in r.output, r.output
    assert "flink-job" in r.output and "Traceback" not in r.output, r.output


def test_running_out_of_memory_is_exit_2_and_names_the_spark_engine(capsys: pytest.CaptureFixture[str]) -> None:
    """A history too large for the default engine is an environment limit, not a bug."""
    import typer

    from harness.cli.guard import guarded

    def too_large() -> None:
        raise MemoryError

    with pytest.raises(typer.Exit) as stopped:
        guarded(too_large)()
    assert stopped.value.exit_code == 2
    said = capsys.readouterr().err
    assert "out of memory" in said and "--engine spark" in said and "internal error" not in said


def test_a_usage_error_raised_inside_a_command_is_a_usage_error_not_a_bug() -> None:
    """typer vendors its own click: a ``typer.BadParameter`` raised by a guarded command is a usage
    error with its own message (exit 2), never "internal error (a bug in eos-chaos)"."""
    import typer
    from typer.testing import CliRunner

    from harness.cli.guard import guarded

    app = typer.Typer()

    @app.command()
    @guarded
    def only(n: int = 1) -> None:
        raise typer.BadParameter("give a number of at most 3", param_hint="'--n'")

    r = CliRunner().invoke(app, ["--n", "5"])
    assert r.exit_code == 2, r.output
    assert "internal error" not in r.output and "at most 3" in r.output


@pytest.mark.parametrize(("base", "bound"), [("1500", "greater than or equal to 2000"), ("60001", "less than or equal to 60000")])
def test_port_base_flag_takes_the_bounds_the_environment_variable_takes(no_real_run: list[Any], base: str, bound: str) -> None:
    r = cli("run", "baseline", "--port-base", base)
    assert r.exit_code == 2, r.output
    assert "--port-base" in r.output and bound in r.output
    assert no_real_run == []


@pytest.mark.parametrize("args", [["run", ":fire:"], ["run", "smoke", "--library", ":fire:", "--dry-run"],
                                  ["report", ":fire:"]])
def test_echoed_input_is_printed_as_typed_not_as_an_emoji(args: list[str]) -> None:
    """``run ":fire:"`` printed a fire emoji: rich's emoji codes are off for what the user typed."""
    r = cli(*args)
    assert r.exit_code == 2 and ":fire:" in r.output and "\N{FIRE}" not in r.output, r.output


@pytest.mark.parametrize("args, flag", [
    (["matrix", "--scenarios", "smoke", "--kafka-versions", "", "--dry-run"], "--kafka-versions"),
    (["matrix", "--scenarios", "smoke", "--transaction-versions", " , ", "--dry-run"], "--transaction-versions"),
    (["hunt", "--seeds", "1", "--transaction-versions", "", "--dry-run"], "--transaction-versions"),
    (["matrix", "--scenarios", "smoke", "--clients", "", "--dry-run"], "--clients"),
    (["bench", "txn-throughput", "--scenarios", "", "--from", "."], "--scenarios"),
    (["bench", "txn-throughput", "--producers", ",", "--from", "."], "--producers"),
])
def test_an_empty_list_flag_is_refused_naming_it_everywhere(args: list[str], flag: str) -> None:
    """An empty list meant the default for some flags (--kafka-versions, --transaction-versions,
    bench's --scenarios) and was refused for others (--clients): now refused everywhere."""
    r = cli(*args)
    assert r.exit_code == 2 and f"{flag} is empty; give one or more values separated by commas" in r.output, r.output
