"""The Java client bridge without a cluster: how Java exceptions become ``ErrorFacts`` (in the real
JVM, both kafka-clients lines), how records travel (buffered, one message per flush, offsets back in
send order, a failed flush still reporting what was acknowledged), and that the JVM dies with the
workload process that started it, by its stdin closing or with its process group."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from clusters.backends import procs
from clusters.builds import pins
from harness.base.errors import ConfigError
from harness.base.wait import wait_until
from harness.cli import app
from harness.workloads import clients
from harness.workloads.client import ClientError, ErrorFacts
from harness.workloads.clients import DEFAULT_JAVA_VERSION, java, java_build
from harness.workloads.outcome import Phase, classify, retry_commit, should_abort

ROOT = Path(__file__).resolve().parents[2]
VERSIONS = [DEFAULT_JAVA_VERSION, pins.JAVA_CLIENT_3X_VERSION]
E = "org.apache.kafka.common.errors."


def exc(cls: str, message: str = "m", cause: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"class": cls if "." in cls else E + cls, "message": message, "cause": cause}


# (exception built in the JVM, facts it must map to: name and the flags that are set)
MAPPING = [
    (exc("TimeoutException", "Timeout expired after 30000ms while awaiting EndTxn(true)"),
     "REQUEST_TIMED_OUT", {"retriable", "timed_out"}),
    (exc("ProducerFencedException"), "PRODUCER_FENCED", {"fenced", "fatal"}),
    (exc("InvalidProducerEpochException"), "INVALID_PRODUCER_EPOCH", {"fenced"}),
    (exc("TransactionAbortableException"), "TRANSACTION_ABORTABLE", {"txn_requires_abort"}),
    (exc("NotLeaderOrFollowerException"), "NOT_LEADER_OR_FOLLOWER", {"retriable"}),
    (exc("OutOfOrderSequenceException"), "OUT_OF_ORDER_SEQUENCE_NUMBER", {"fatal"}),
    (exc("TransactionalIdAuthorizationException"), "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", {"fatal"}),
    # Java wraps the error of a producer in an error state: the cause names it
    (exc("org.apache.kafka.common.KafkaException", "Cannot execute transactional method because we are in an error state",
         exc("ProducerFencedException", "There is a newer producer")), "PRODUCER_FENCED", {"fenced", "fatal"}),
    # an abort while a timed-out commit is pending: refused, nothing else
    (exc("java.lang.IllegalStateException", "Cannot attempt operation `abortTransaction` because the previous call to "
         "`commitTransaction` timed out and must be retried"), "IllegalStateException", set()),
    (exc("org.apache.kafka.clients.consumer.CommitFailedException"), "CommitFailedException", set()),
]
FLAGS = ("retriable", "fatal", "txn_requires_abort", "fenced", "timed_out")


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(("spec", "name", "flags"), MAPPING, ids=[m[1] + "-" + m[0]["class"].rsplit(".", 1)[1] for m in MAPPING])
def test_java_exceptions_map_to_the_facts_the_outcome_rules_read(version: str, spec: dict[str, Any], name: str,
                                                                 flags: set[str]) -> None:
    facts = java.client_facts(version, spec)
    assert facts.name == name, facts
    assert {f for f in FLAGS if getattr(facts, f)} == flags, facts
    cls = spec["class"].rsplit(".", 1)[1]
    # NAME: Class: message, the class said once (it is the name when Kafka has no error code for it)
    assert facts.describe().startswith(name + ": " + ("" if name == cls else cls + ": ")), facts
    assert f"{cls}: {cls}" not in facts.describe(), facts


@pytest.mark.parametrize("version", VERSIONS)
def test_the_outcome_rules_read_java_facts_as_they_read_librdkafka_s(version: str) -> None:
    timeout = java.client_facts(version, exc("TimeoutException", "Timeout expired while awaiting EndTxn(true)"))
    assert retry_commit(timeout)  # Java, like librdkafka: calling commitTransaction again resumes it
    assert classify(Phase.COMMIT, timeout).type == "info"
    fenced = java.client_facts(version, exc("ProducerFencedException"))
    assert not should_abort(Phase.COMMIT, fenced) and classify(Phase.BEFORE_COMMIT, fenced).event == "fenced"
    refused = java.client_facts(version, exc("java.lang.IllegalStateException", "previous call timed out"))
    assert not retry_commit(refused) and not refused.fatal


def test_an_error_answer_becomes_error_facts() -> None:
    err = {"name": "PRODUCER_FENCED", "message": "ProducerFencedException: x", "retriable": False, "fatal": True,
           "txn_requires_abort": False, "fenced": True, "timed_out": False, "exception": "o.a.k.ProducerFencedException"}
    assert java.facts_from(err) == ErrorFacts("PRODUCER_FENCED", "ProducerFencedException: x", fatal=True, fenced=True)


class FakeBridge:
    """Answers the requests ``JavaClient`` sends as the JVM would, and keeps them."""

    def __init__(self, fail_flush: dict[str, Any] | None = None) -> None:
        self.requests: list[dict[str, Any]] = []
        self.fail_flush = fail_flush
        self.pending = 0

    def request(self, op: str, wait_s: float, **args: Any) -> Any:
        self.requests.append({"op": op, **args})
        if op == "producer.open":
            return 7
        if op == "producer.send":
            self.pending += len(args["records"])
        if op == "producer.flush":
            n, self.pending = self.pending + len(args["records"]), 0
            offsets = [100 + k for k in range(n)]
            if self.fail_flush:
                offsets[-1] = None  # the last record was not acknowledged
                raise java.BridgeClientError(java.facts_from(self.fail_flush), offsets)
            return offsets
        return None


def client_on(fake: FakeBridge, monkeypatch: pytest.MonkeyPatch) -> java.JavaClient:
    monkeypatch.setattr(java, "bridge", lambda version: fake)
    return java.JavaClient(DEFAULT_JAVA_VERSION, "b:1", "t", 60_000, {"isolation.level": "x"})


def test_sends_are_buffered_and_travel_in_one_flush_with_offsets_back_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeBridge()
    client = client_on(fake, monkeypatch)
    assert fake.requests[0]["config"]["isolation.level"] == "x"  # overrides pass through
    assert fake.requests[0]["config"]["transaction.timeout.ms"] == 60_000
    got: dict[bytes, int] = {}
    client.begin()
    for k in range(3):
        client.send("t", k, f"v{k}".encode(), None, got.__setitem__)
    assert [r["op"] for r in fake.requests] == ["producer.open", "producer.begin"]  # nothing sent yet
    client.flush(5.0)
    assert fake.requests[-1]["records"] == [("t", 0, None, "v0"), ("t", 1, None, "v1"), ("t", 2, None, "v2")]
    assert got == {b"v0": 100, b"v1": 101, b"v2": 102}


def test_a_full_buffer_goes_ahead_and_its_offsets_come_with_the_flush(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeBridge()
    client = client_on(fake, monkeypatch)
    got: dict[bytes, int] = {}
    client.begin()
    n = java.SEND_CHUNK + 2
    for k in range(n):
        client.send("t", 0, str(k).encode(), b"key", got.__setitem__)
    assert [r["op"] for r in fake.requests].count("producer.send") == 1
    assert fake.requests[-1]["records"][0][2] == "key"
    client.flush(5.0)
    assert len(fake.requests[-1]["records"]) == 2 and len(got) == n and got[str(n - 1).encode()] == 100 + n - 1


def test_a_failed_flush_reports_the_acknowledged_records_then_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    abortable = {"name": "REQUEST_TIMED_OUT", "message": "TimeoutException: expired", "retriable": True,
                 "txn_requires_abort": True, "timed_out": True}
    fake = FakeBridge(fail_flush=abortable)
    client = client_on(fake, monkeypatch)
    got: dict[bytes, int] = {}
    client.begin()
    client.send("t", 0, b"a", None, got.__setitem__)
    client.send("t", 0, b"b", None, got.__setitem__)
    with pytest.raises(ClientError) as caught:
        client.flush(5.0)
    assert got == {b"a": 100}
    assert caught.value.facts.txn_requires_abort and caught.value.facts.timed_out


def test_group_metadata_of_another_library_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    client = client_on(FakeBridge(), monkeypatch)
    with pytest.raises(TypeError, match="JavaGroupReader"):
        client.send_offsets({("t", 0): 1}, object(), 1.0)


#: A workload-like process: starts its bridge JVM, prints the JVM's pid, waits to be killed.
HOLDER = textwrap.dedent("""\
    import sys, time
    from harness.workloads.clients import java
    b = java.bridge(sys.argv[2])  # argv[1]: the config file, as a workload's
    print(b.proc.pid, b.startup_s, flush=True)
    time.sleep(600)
""")


def holder(tmp_path: Path, new_group: bool) -> tuple[subprocess.Popen[str], int]:
    config = tmp_path / "txn-producer-9.json"  # the JVM is named after the workload's config file
    p = subprocess.Popen([sys.executable, "-c", HOLDER, str(config), DEFAULT_JAVA_VERSION], stdout=subprocess.PIPE, text=True,
                         cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, start_new_session=new_group)
    assert p.stdout is not None
    jvm = int(p.stdout.readline().split()[0])
    return p, jvm


def gone_with(p: subprocess.Popen[str], jvm: int, how: str) -> None:
    """Reap the workload ``p`` and wait until its JVM is gone too."""
    p.wait(timeout=30)
    wait_until(lambda: not procs.alive(jvm), timeout=30, what=f"the bridge JVM (pid {jvm}) to {how}",
               state=lambda: f"alive: {procs.alive(jvm)}")


def test_the_jvm_halts_when_its_workload_dies(tmp_path: Path) -> None:
    p, jvm = holder(tmp_path, new_group=False)
    try:
        assert procs.describe(jvm) == "java client JVM of txn-producer-9"
        assert os.getpgid(jvm) == os.getpgid(p.pid)  # one group: killpg of a workload reaches its JVM
        p.kill()  # the workload alone, SIGKILLed: the JVM's stdin closes
        gone_with(p, jvm, "halt on the end of its stdin")
    finally:
        procs.kill_hard(jvm, "bridge JVM")


def test_a_kill_of_the_workload_group_takes_the_jvm(tmp_path: Path) -> None:
    p, jvm = holder(tmp_path, new_group=True)  # as procs.spawn starts a workload
    try:
        os.killpg(p.pid, signal.SIGSTOP)  # a pause-workload fault freezes the JVM too
        wait_until(lambda: procs.stopped(jvm), timeout=30, what=f"the bridge JVM (pid {jvm}) to be stopped",
                   state=lambda: f"status stopped: {procs.stopped(jvm)}")
        os.killpg(p.pid, signal.SIGKILL)
        gone_with(p, jvm, "die with its group")
    finally:
        procs.kill_hard(jvm, "bridge JVM")


def test_an_unknown_client_or_a_release_maven_central_lacks_is_refused_before_anything_starts(tmp_path: Path) -> None:
    out = tmp_path / "run"
    r = CliRunner(env={"COLUMNS": "400"}).invoke(app, ["run", "txn-baseline", "--library", "jav", "--out", str(out)])
    assert r.exit_code == 2 and "unknown client library" in r.output and "java@VERSION" in r.output, r.output
    r = CliRunner(env={"COLUMNS": "400"}).invoke(app, ["run", "txn-baseline", "--library", "java@3.9.99", "--out", str(out)])
    assert r.exit_code == 2, r.output
    assert "org.apache.kafka:kafka-clients:3.9.99 is not on Maven Central" in r.output, r.output
    assert "3.9.2" in r.output  # a nearby release this machine knows
    assert not out.exists()  # nothing started: not even the run folder


def test_prepare_builds_each_java_version_once_and_ignores_other_libraries(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[str] = []
    monkeypatch.setattr(java_build, "ensure", built.append)
    clients.prepare(["confluent-kafka", "java", f"java@{pins.JAVA_CLIENT_3X_VERSION}", "java@4.4.0"])
    assert built == sorted({DEFAULT_JAVA_VERSION, pins.JAVA_CLIENT_3X_VERSION})
    with pytest.raises(ValueError, match="unknown client library"):
        clients.prepare(["nope"])


def test_the_build_is_keyed_by_version_and_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EOS_CHAOS_CACHE", str(tmp_path))
    assert java_build.ready("4.4.0") is None
    assert java_build.classes_dir("4.4.0") != java_build.classes_dir("3.9.2")
    assert java_build.source_hash() in java_build.classes_dir("4.4.0").name
    assert "<artifactId>kafka-clients</artifactId><version>3.9.2</version>" in java_build.pom("3.9.2")


def test_a_missing_release_names_it_and_the_nearby_known_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EOS_CHAOS_CACHE", str(tmp_path))
    for v in ("3.9.1", "3.9.2", "4.4.0"):
        d = tmp_path / "m2" / "org" / "apache" / "kafka" / "kafka-clients" / v
        d.mkdir(parents=True)
        (d / f"kafka-clients-{v}.jar").touch()
    problem = java_build._missing("3.9.99", "Could not find artifact org.apache.kafka:kafka-clients:jar:3.9.99 in central")
    assert isinstance(problem, ConfigError)
    assert "3.9.99 is not on Maven Central; versions known here: 3.9.1, 3.9.2 " in str(problem)
    assert java_build._missing("3.9.99", "some other Maven failure") is None
