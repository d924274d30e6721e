"""The shipped apps (harness/apps, docs/APPS.md "The shipped apps"): their launchers refuse bad flags
with a usage message and exit 2 before anything is built, exec the JVM with the flags they were
given, and their builds are keyed by a hash of the sources; ``SHIPPED`` is complete. No cluster,
no Maven, no JVM."""

from __future__ import annotations

import importlib
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clusters.builds import javac
from harness import apps
from harness.apps import jvm, kafka_copier, streams_count_sum, streams_join, streams_jvm, streams_windowed_count, streams_wordcount
from harness.base.errors import EnvironmentProblem
from harness.base.paths import REPO_ROOT

BOOT = "127.0.0.1:19092"
STREAMS = ["--bootstrap", BOOT, "--input", "in", "--count-topic", "count", "--sum-topic", "sum",
           "--application-id", "app-r1", "--state-dir", "/runs/r1/app-0/state"]
WORDCOUNT = ["--bootstrap", BOOT, "--application-id", "app-r1", "--state-dir", "/runs/r1/app-0/state"]
WINDOWED = [*WORDCOUNT, "--input", "in", "--output", "out"]
JOIN = [*WORDCOUNT, "--orders", "orders", "--customers", "customers", "--output", "joined"]
#: the Streams launchers, which share one build (streams_jvm)
STREAMS_LAUNCHERS = (streams_count_sum, streams_wordcount, streams_windowed_count, streams_join)
COPIER = ["--broker-list", BOOT, "--input-topic", "in", "--input-partition", "0", "--output-topic", "out",
          "--transactional-id", "app-r1-0", "--consumer-group", "app-r1", "--group-mode", "--use-group-metadata"]


@pytest.fixture
def execs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[list[str]]:
    """What the launchers would exec (nothing is), with builds that are already there."""
    done: list[list[str]] = []

    def execv(path: str, argv: list[str]) -> None:
        done.append(argv)
        raise SystemExit(0)

    monkeypatch.setattr(jvm.os, "execv", execv)
    for launcher in STREAMS_LAUNCHERS:
        monkeypatch.setattr(launcher, "prepare",
                            lambda: javac.Build(Path("/jdk/bin/java"), tmp_path / "classes", tmp_path / "libs"))
    monkeypatch.setattr(kafka_copier, "prepare", lambda: tmp_path / "tools")
    monkeypatch.setattr(kafka_copier.jdk, "find_java", lambda: (Path("/jdk/bin/java"), 17))
    monkeypatch.delenv(jvm.JAVA_OPTS, raising=False)
    return done


@pytest.mark.parametrize(("module", "argv", "says"), [
    (streams_count_sum, STREAMS[2:], "required: --bootstrap"),
    (streams_count_sum, [*STREAMS, "--guarantee", "exactly_once"], "invalid choice: 'exactly_once'"),
    (streams_count_sum, [*STREAMS, "--threads", "0"], "'0' is not an integer of 1 or more"),
    (streams_count_sum, [*STREAMS, "--output", "x"], "unrecognized arguments: --output x"),
    (streams_count_sum, [*STREAMS[:-2], "--state"], "--state-dir"),  # no abbreviations
    (streams_wordcount, [*WORDCOUNT, "--input", "in"], "unrecognized arguments: --input in"),  # its topics are fixed
    (streams_wordcount, [*WORDCOUNT, "--commit-interval-ms", "0"], "'0' is not an integer of 1 or more"),
    (streams_wordcount, WORDCOUNT[2:], "required: --bootstrap"),
    (streams_windowed_count, [*WINDOWED, "--grace-ms", "-1"], "'-1' is not an integer of 0 or more"),
    (streams_windowed_count, [*WINDOWED, "--window-size-ms", "2s"], "'2s' is not an integer of 1 or more"),
    (streams_windowed_count, [*WINDOWED, "--window-key", "binary"], "invalid choice: 'binary'"),
    (streams_join, JOIN[:-2], "required: --output"),
    (streams_join, [*JOIN, "--guarantee", "exactly_once_beta"], "invalid choice: 'exactly_once_beta'"),
    (kafka_copier, COPIER[:8], "required: --transactional-id"),
    (kafka_copier, [*COPIER, "--input-partition", "one"], "--input-partition: invalid int value: 'one'"),
    (kafka_copier, [*COPIER, "--transactions-off"], "unrecognized arguments: --transactions-off"),
])
def test_bad_flags_are_a_usage_error_with_exit_2_before_anything_is_built(
        module: object, argv: list[str], says: str, execs: list[list[str]], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        module.main(argv)  # type: ignore[attr-defined]
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: python -m {module.__name__}")  # type: ignore[attr-defined]
    assert says in err
    assert not execs


@pytest.mark.parametrize("module", ["harness.apps.streams_count_sum", "harness.apps.streams_wordcount",
                                    "harness.apps.streams_windowed_count", "harness.apps.streams_join",
                                    "harness.apps.kafka_copier"])
def test_the_launcher_module_itself_exits_2_on_a_bad_flag(module: str) -> None:
    proc = subprocess.run([sys.executable, "-m", module, "--no-such-flag"], capture_output=True, text=True,
                          timeout=60, cwd=REPO_ROOT)
    assert proc.returncode == 2, proc.stderr
    assert "usage:" in proc.stderr and "Traceback" not in proc.stderr


def test_streams_execs_its_jvm_with_the_flags_defaults_and_java_opts(execs: list[list[str]], tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(jvm.JAVA_OPTS, "-Xmx256m -Dx='a b'")
    with pytest.raises(SystemExit):
        streams_count_sum.main([*STREAMS, "--guarantee", "at_least_once"])
    [argv] = execs
    assert argv[:3] == ["/jdk/bin/java", "-Xmx512m", "-Xmx256m"]  # JAVA_OPTS after ours: it wins
    assert "-Dx=a b" in argv
    main = argv.index(streams_count_sum.MAIN_CLASS)
    assert argv[main - 2:main] == ["-cp", os.pathsep.join([str(tmp_path / "classes"), str(tmp_path / "libs" / "*")])]
    assert argv[main + 1:] == [*STREAMS, "--guarantee", "at_least_once", "--threads", "1"]


@pytest.mark.parametrize(("module", "argv", "passed"), [
    (streams_wordcount, WORDCOUNT, [*WORDCOUNT, "--guarantee", "exactly_once_v2"]),
    (streams_wordcount, [*WORDCOUNT, "--guarantee", "at_least_once", "--commit-interval-ms", "60000"],
     [*WORDCOUNT, "--guarantee", "at_least_once", "--commit-interval-ms", "60000"]),
    (streams_windowed_count, WINDOWED,
     [*WORDCOUNT, "--input", "in", "--output", "out", "--guarantee", "exactly_once_v2", "--window-size-ms", "2000",
      "--grace-ms", "1000", "--window-key", "time-windowed"]),
    (streams_join, [*JOIN, "--guarantee", "at_least_once"], [*JOIN, "--guarantee", "at_least_once"]),
])
def test_each_streams_app_gets_its_main_class_and_flags_with_their_defaults(
        module: object, argv: list[str], passed: list[str], execs: list[list[str]]) -> None:
    with pytest.raises(SystemExit):
        module.main(argv)  # type: ignore[attr-defined]
    [args] = execs
    main = args.index(module.MAIN_CLASS)  # type: ignore[attr-defined]
    assert sorted(zip(args[main + 1::2], args[main + 2::2])) == sorted(zip(passed[::2], passed[1::2]))
    assert module.MAIN_CLASS.split(".")[-1] + ".java" in {  # type: ignore[attr-defined]
        f.name for f in javac.source_files(streams_jvm.SOURCES)}


def test_the_copier_gets_its_flags_unchanged(execs: list[list[str]], tmp_path: Path) -> None:
    flags = [*COPIER, "--transaction-size=50", "--enable-random-aborts"]
    with pytest.raises(SystemExit):
        kafka_copier.main(flags)
    [argv] = execs
    main = argv.index(kafka_copier.MAIN_CLASS)
    assert argv[main + 1:] == flags
    assert argv[0] == "/jdk/bin/java"
    assert argv[main - 2:main] == ["-cp", str(tmp_path / "tools" / "*")]
    assert f"-Dlog4j2.configurationFile={kafka_copier.LOG_CONFIG}" in argv
    assert kafka_copier.LOG_CONFIG.is_file()


def test_a_build_that_fails_is_one_line_and_its_exit_code(monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    def broken() -> javac.Build:
        raise EnvironmentProblem("`javac` not found")

    monkeypatch.setattr(streams_count_sum, "prepare", broken)
    with pytest.raises(SystemExit) as exit_:
        streams_count_sum.main(STREAMS)
    assert exit_.value.code == 2
    assert capsys.readouterr().err == f"python -m {streams_count_sum.MODULE}: error: `javac` not found\n"


def test_java_opts_that_are_not_shell_words_are_refused(execs: list[list[str]], monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(jvm.JAVA_OPTS, "-Dx='unclosed")
    with pytest.raises(SystemExit) as exit_:
        kafka_copier.main(COPIER)
    assert exit_.value.code == 2 and not execs
    assert "JAVA_OPTS=\"-Dx='unclosed\" is not a list of shell words" in capsys.readouterr().err


def test_the_source_hash_changes_with_a_source_and_only_with_one(tmp_path: Path) -> None:
    src = tmp_path / "src" / "eoschaos"
    src.mkdir(parents=True)
    (src / "A.java").write_text("class A {}\n")
    program = javac.Program("a test program", tmp_path / "src", javac.pom("t", []), tmp_path / "cache", "nothing")
    first = javac.source_hash(program.sources)
    assert javac.classes_dir(program).name == f"classes-{first}"
    (src / "notes.txt").write_text("not a source")
    assert javac.source_hash(program.sources) == first
    (src / "A.java").write_text("class A { int x; }\n")
    edited = javac.source_hash(program.sources)
    assert edited != first
    (src / "A.java").rename(src / "B.java")
    assert javac.source_hash(program.sources) not in (first, edited)  # a name is part of it
    assert javac.ready(program) is None  # nothing fetched into the cache folder


def test_the_streams_build_is_keyed_by_its_own_sources_and_version() -> None:
    program = streams_jvm.program()
    assert javac.classes_dir(program).name == f"classes-{javac.source_hash(streams_jvm.SOURCES)}"
    assert javac.source_files(streams_jvm.SOURCES)
    assert program.folder.parts[-2:] == ("streams", streams_jvm.pins.KAFKA_STREAMS_VERSION)
    for dep in ("kafka-streams", "slf4j-simple"):
        assert f"<artifactId>{dep}</artifactId>" in program.pom


def test_every_shipped_app_is_complete(monkeypatch: pytest.MonkeyPatch) -> None:
    assert apps.SHIPPED
    prepared: list[str] = []
    for name, app in apps.SHIPPED.items():
        assert app.name == name and name == name.lower() and " " not in name
        assert app.what.strip() and "\n" not in app.what
        assert importlib.util.find_spec(app.module) is not None, app.module
        module = importlib.import_module(app.module)
        assert callable(module.main) and callable(module.prepare)
        monkeypatch.setattr(module, "prepare", lambda name=name: prepared.append(name))
    ahead = [n for n, a in apps.SHIPPED.items() if a.ahead]
    assert apps.prepare_all() == ahead and prepared == ahead  # each entry's prepare is its launcher's
    assert "go-copier" not in ahead  # built by the first run that needs it (make library's)


def test_setup_all_builds_the_shipped_apps(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from harness import cli
    from harness.cli import setup
    from harness.workloads import clients

    arts = setup.artifacts.Artifacts("4.4.0", tmp_path / "kafka", tmp_path / "toxiproxy", Path("/jdk/bin/java"))
    monkeypatch.setattr(setup.artifacts, "ensure", lambda version: arts)
    monkeypatch.setattr(setup.spark_jars, "ensure_spark", lambda: [])
    monkeypatch.setattr(clients, "prepare", lambda specs: None)
    built: list[str] = []
    for app in apps.SHIPPED.values():
        monkeypatch.setattr(importlib.import_module(app.module), "prepare", lambda name=app.name: built.append(name))
    r = CliRunner(env={"COLUMNS": "400"}).invoke(cli.app, ["setup", "--all"])
    assert r.exit_code == 0, r.output
    ahead = [n for n, a in apps.SHIPPED.items() if a.ahead]
    assert built == ahead
    assert f"apps ({', '.join(ahead)})" in r.output
