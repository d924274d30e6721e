"""The shipped Flink job's launcher (harness/apps/flink_job.py; docs/APPS.md "flink-job", docs/FLINK.md):
bad flags are a usage error with exit 2 before anything is built, the JVM is exec'd with the job's
flags and defaults, its build is keyed by its sources and the pinned Flink and connector; its contract
function is the job's map. No cluster, no Maven, no JVM."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from clusters.builds import javac, pins
from harness.apps import SHIPPED, flink_job, jvm
from harness.apps.functions import FLINK_JOB_OUTPUT, FLINK_SUFFIX, flink_suffix
from harness.base.paths import REPO_ROOT

JOB = ["--bootstrap", "127.0.0.1:19092", "--input", "in", "--output", "out", "--group", "app-r1",
       "--transactional-id-prefix", "app-r1-0", "--state-dir", "/runs/r1/app-0/flink"]


@pytest.fixture
def execs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[list[str]]:
    """What the launcher would exec (nothing is), with a build that is already there."""
    done: list[list[str]] = []

    def execv(path: str, argv: list[str]) -> None:
        done.append(argv)
        raise SystemExit(0)

    monkeypatch.setattr(jvm.os, "execv", execv)
    monkeypatch.setattr(flink_job, "prepare",
                        lambda: javac.Build(Path("/jdk/bin/java"), tmp_path / "classes", tmp_path / "libs"))
    monkeypatch.delenv(jvm.JAVA_OPTS, raising=False)
    return done


@pytest.mark.parametrize(("argv", "says"), [
    (JOB[2:], "required: --bootstrap"),
    ([*JOB, "--guarantee", "exactly_once_v2"], "invalid choice: 'exactly_once_v2'"),
    ([*JOB, "--naming", "random"], "invalid choice: 'random'"),
    ([*JOB, "--parallelism", "0"], "'0' is not an integer of 1 or more"),
    ([*JOB, "--restored-parallelism", "two"], "'two' is not an integer of 1 or more"),
    ([*JOB, "--restored-parallelism", "1,0"], "'0' is not an integer of 1 or more"),
    ([*JOB, "--checkpoint-ms", "-5"], "'-5' is not an integer of 1 or more"),
    ([*JOB[:-2], "--state", "/x"], "--state-dir"),  # no abbreviations
])
def test_bad_flags_are_a_usage_error_with_exit_2_before_anything_is_built(
        argv: list[str], says: str, execs: list[list[str]], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        flink_job.main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: python -m {flink_job.MODULE}")
    assert says in err
    assert not execs


def test_the_launcher_module_itself_exits_2_on_a_bad_flag() -> None:
    proc = subprocess.run([sys.executable, "-m", flink_job.MODULE, "--no-such-flag"], capture_output=True,
                          text=True, timeout=60, cwd=REPO_ROOT)
    assert proc.returncode == 2, proc.stderr
    assert "usage:" in proc.stderr and "Traceback" not in proc.stderr


def test_the_jvm_gets_the_jobs_flags_and_defaults(execs: list[list[str]], tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        flink_job.main([*JOB, "--guarantee", "at_least_once", "--parallelism", "2"])
    [argv] = execs
    assert argv[:2] == ["/jdk/bin/java", "-Xmx512m"]
    assert "-Dorg.slf4j.simpleLogger.log.org.apache.flink.runtime.checkpoint.CheckpointCoordinator=info" in argv
    main = argv.index(flink_job.MAIN_CLASS)
    assert argv[main - 2] == "-cp"
    assert argv[main + 1:] == [*JOB, "--guarantee", "at_least_once", "--parallelism", "2", "--naming", "incrementing",
                               "--checkpoint-ms", "1000", "--transaction-timeout-ms", "60000"]
    execs.clear()
    with pytest.raises(SystemExit):
        flink_job.main([*JOB, "--parallelism", "2", "--restored-parallelism", "1,2", "--naming", "pooling"])
    [argv] = execs
    assert argv[-2:] == ["--restored-parallelism", "1,2"] and "pooling" in argv


def test_the_java_job_knows_every_flag_the_launcher_passes() -> None:
    java = (flink_job.SOURCES / "eoschaos" / "apps" / "FlinkSuffixJob.java").read_text()
    flags = [a.option_strings[0] for a in flink_job.parser()._actions if a.option_strings[0].startswith("--")
             and a.option_strings[0] != "--help"]
    assert len(flags) == 12
    for flag in flags:
        assert f'"{flag}"' in java, flag
    assert re.search(r'SUFFIX = "([^"]*)"', java).group(1) == FLINK_SUFFIX  # type: ignore[union-attr]


def test_the_build_is_keyed_by_its_sources_and_the_pinned_flink_and_connector() -> None:
    program = flink_job.program()
    assert javac.classes_dir(program).name == f"classes-{javac.source_hash(flink_job.SOURCES)}"
    assert program.folder.name == f"{pins.FLINK_VERSION}-{pins.FLINK_KAFKA_CONNECTOR_VERSION}"
    assert pins.FLINK_KAFKA_CONNECTOR_VERSION.endswith("-" + pins.FLINK_VERSION.rsplit(".", 1)[0])  # built for it
    for dep in ("flink-streaming-java", "flink-clients", "flink-connector-kafka", "slf4j-simple"):
        assert f"<artifactId>{dep}</artifactId>" in program.pom
    assert SHIPPED["flink-job"].module == flink_job.MODULE and not SHIPPED["flink-job"].ahead


def test_flink_suffix_owes_one_output_per_input_same_key_value_with_the_suffix() -> None:
    record = {"topic": "app-in", "partition": "1", "key": "k3", "value": "17"}
    assert flink_suffix(record) == [{"topic": FLINK_JOB_OUTPUT, "key": "k3", "value": "17:flink"}]
    assert record["value"] == "17"  # the input is not changed
    assert flink_suffix({"topic": "app-in", "partition": "0", "key": None, "value": None}) == [
        {"topic": "app-out", "key": None, "value": ":flink"}]
