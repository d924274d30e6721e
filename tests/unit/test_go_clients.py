"""The Go client bridges without a cluster: the protocol is the Java bridge's (read from both
sources), Go errors become ``ErrorFacts`` as docs/CLIENTS.md says (in the real bridges), a call that
outlives the workload's timeout is resumed and blocks another, the bridge ends with its stdin,
franz-go's copier producer is paired with its group reader, and the build is keyed by client,
version and sources and refuses a release it cannot build, naming the ones there are."""

from __future__ import annotations

import re
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clusters.backends import procs
from harness.base.errors import ConfigError
from harness.base.wait import wait_until
from harness.workloads import clients
from harness.workloads.client import ClientError
from harness.workloads.clients import DEFAULT_FRANZ_VERSION, DEFAULT_SARAMA_VERSION, FRANZ_PRE_TV2_VERSION, go_build, gobridge
from harness.workloads.outcome import Phase, classify, retry_commit, should_abort

ROOT = Path(__file__).resolve().parents[2]
JAVA = ROOT / "harness" / "workloads" / "clients" / "java_src" / "eoschaos"
GO_COMMON = ROOT / "harness" / "workloads" / "clients" / "go_src" / "common" / "bridge.go"
FLAGS = ("retriable", "fatal", "txn_requires_abort", "fenced", "timed_out")
#: the versions ``eos-chaos setup --all`` builds (the tests use those, as the Java tests do)
FRANZ_VERSIONS = [DEFAULT_FRANZ_VERSION, FRANZ_PRE_TV2_VERSION]


# ---------------------------------------------------------------- one protocol, two bridges

def java_protocol() -> tuple[set[str], set[str], set[str], set[str]]:
    """The ops, request fields, answer fields and fact fields Bridge.java and Facts.java use."""
    bridge, facts = (JAVA / "Bridge.java").read_text(), (JAVA / "Facts.java").read_text()
    ops = set(re.findall(r'case "(\w+(?:\.\w+)?)"', bridge))
    fields = set(re.findall(r'(?:req|spec)\.(?:get|path|has|hasNonNull)\("(\w+)"\)', bridge))
    answers = set(re.findall(r'response\.(?:put|set)\("(\w+)"', bridge))
    return ops, fields, answers, set(re.findall(r'f\.put\("(\w+)"', facts))


def go_protocol(source: Path = GO_COMMON) -> tuple[set[str], set[str], set[str], set[str]]:
    """The same of the Go bridges' shared source."""
    src = source.read_text()
    request = src[src.index("type request struct"):src.index("}", src.index("type request struct"))]
    facts = src[src.index("type Facts struct"):src.index("}", src.index("type Facts struct"))]
    ops = set(re.findall(r'case "(\w+(?:\.\w+)?)"', src))
    answers = set(re.findall(r'ans\["(\w+)"\]', src)) | set(re.findall(r'map\[string\]any\{"(\w+)":', src))
    return ops, set(re.findall(r'json:"(\w+)"', request)), answers, set(re.findall(r'json:"(\w+)"', facts))


def test_the_go_bridge_speaks_the_java_bridge_s_protocol() -> None:
    (jops, jfields, janswers, jfacts), (gops, gfields, ganswers, gfacts) = java_protocol(), go_protocol()
    assert len(jops) > 10 and len(jfields) > 8 and len(jfacts) == 8  # the sources were read, not missed
    assert gops == jops
    assert gfields == jfields
    assert ganswers == janswers
    assert gfacts == jfacts
    # and the Python side reads every fact the bridges send but the class name (in the message)
    assert {f for f in jfacts if f not in ("exception",)} == {"name", "message", *FLAGS}


def test_a_request_field_only_one_bridge_reads_is_caught(tmp_path: Path) -> None:
    changed = tmp_path / "bridge.go"
    changed.write_text(GO_COMMON.read_text().replace('`json:"token"`', '`json:"snapshot"`'))
    assert go_protocol(changed)[1] ^ java_protocol()[1] == {"token", "snapshot"}


# ---------------------------------------------------------------- errors -> facts, in the real bridges

def code(n: int, during: str = "") -> dict[str, Any]:
    return {"code": n, "during": during}


def kind(k: str, during: str = "") -> dict[str, Any]:
    return {"kind": k, "during": during}


# (error built in the bridge, name, flags set)
FRANZ = [
    (code(90), "PRODUCER_FENCED", {"fenced", "fatal"}),
    (code(47), "INVALID_PRODUCER_EPOCH", {"fenced"}),
    (code(7), "REQUEST_TIMED_OUT", {"retriable", "timed_out"}),
    # EndTransaction leaves the transaction before it sends EndTxn: never retried, whatever the code
    (code(7, "producer.commit"), "REQUEST_TIMED_OUT", {"timed_out"}),
    (code(6, "producer.commit"), "NOT_LEADER_FOR_PARTITION", set()),  # kerr keeps code 6's old name
    (code(55, "producer.commit"), "OPERATION_NOT_ATTEMPTED", {"txn_requires_abort"}),
    (code(48, "producer.commit"), "INVALID_TXN_STATE", {"fatal"}),
    (code(59, "producer.commit"), "UNKNOWN_PRODUCER_ID", {"txn_requires_abort"}),
    (code(6, "producer.flush"), "NOT_LEADER_FOR_PARTITION", {"retriable", "txn_requires_abort"}),
    (kind("record-timeout", "producer.flush"), "RECORD_TIMEOUT", {"timed_out", "txn_requires_abort"}),
    (kind("session-aborted", "producer.commit"), "SESSION_ABORTED", {"txn_requires_abort"}),
    (code(53), "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", {"fatal"}),
    (kind("refused"), "NETWORK_EXCEPTION", {"retriable"}),
    (kind("refused", "producer.commit"), "NETWORK_EXCEPTION", set()),
]
SARAMA = [
    (code(90), "PRODUCER_FENCED", {"fenced", "fatal"}),
    (code(47), "INVALID_PRODUCER_EPOCH", {"fenced"}),
    (code(7), "REQUEST_TIMED_OUT", {"retriable", "timed_out"}),
    (code(7, "producer.commit"), "REQUEST_TIMED_OUT", {"retriable", "timed_out"}),  # CommitTxn again re-sends EndTxn
    (code(51), "CONCURRENT_TRANSACTIONS", {"retriable"}),
    (code(45), "OUT_OF_ORDER_SEQUENCE_NUMBER", {"fatal"}),
    (code(6, "producer.flush"), "NOT_LEADER_OR_FOLLOWER", {"retriable", "txn_requires_abort"}),
    (code(48), "INVALID_TXN_STATE", set()),
    (kind("not-ready"), "TRANSACTION_NOT_READY", set()),
]
CASES = ([("franz-go", v, *case) for v in FRANZ_VERSIONS for case in FRANZ]
         + [("sarama", DEFAULT_SARAMA_VERSION, *case) for case in SARAMA])


@pytest.mark.parametrize(("name", "version", "spec", "error", "flags"), CASES,
                         ids=[f"{n}@{v}-{e}-{s['during'] or 'any'}" for n, v, s, e, _ in CASES])
def test_go_errors_map_to_the_facts_the_outcome_rules_read(name: str, version: str, spec: dict[str, Any], error: str,
                                                           flags: set[str]) -> None:
    facts = gobridge.client_facts(name, version, spec)
    assert facts.name == error, facts
    assert {f for f in FLAGS if getattr(facts, f)} == flags, facts
    assert not facts.describe().startswith(f"{error}: {error}"), facts  # the name said once


def test_the_outcome_rules_read_franz_go_s_commit_errors_safely() -> None:
    timeout = gobridge.client_facts("franz-go", DEFAULT_FRANZ_VERSION, code(7, "producer.commit"))
    # a retried EndTransaction returns nil having done nothing: a retry would record a commit that never was
    assert not retry_commit(timeout) and classify(Phase.COMMIT, timeout).type == "info"
    aborted = gobridge.client_facts("franz-go", DEFAULT_FRANZ_VERSION, kind("session-aborted", "producer.commit"))
    assert should_abort(Phase.COMMIT, aborted) and classify(Phase.COMMIT, aborted, aborted=True).type == "fail"


# ---------------------------------------------------------------- the bridge process

@pytest.fixture
def franz() -> Iterator[gobridge.GoBridge]:
    b = gobridge.GoBridge(gobridge.FRANZ, DEFAULT_FRANZ_VERSION)
    yield b
    b.shutdown()


def test_a_timed_out_call_goes_on_is_resumed_by_the_same_call_and_blocks_another(franz: gobridge.GoBridge) -> None:
    # a "broker" that takes connections and never answers: InitProducerID cannot finish
    silent = socket.create_server(("127.0.0.1", 0))
    conf = gobridge.producer_config(f"127.0.0.1:{silent.getsockname()[1]}", "t", 60_000, {})
    h = franz.request("producer.open", 10, config=conf)
    t0 = time.monotonic()
    with pytest.raises(ClientError) as first:
        franz.request("producer.init", 10, h=h, timeout=0.3)
    assert first.value.facts.name == "REQUEST_TIMED_OUT" and first.value.facts.retriable and first.value.facts.timed_out
    with pytest.raises(ClientError) as other:
        franz.request("producer.abort", 10, h=h, timeout=0.3)
    assert other.value.facts.name == "CALL_PENDING" and "call init again to resume it" in other.value.facts.message
    assert not any(getattr(other.value.facts, f) for f in FLAGS)
    with pytest.raises(ClientError) as again:
        franz.request("producer.init", 10, h=h, timeout=0.3)
    assert again.value.facts.timed_out
    assert time.monotonic() - t0 < 5
    franz.request("close", 10, h=h)
    silent.close()


def test_unknown_settings_are_refused_naming_the_known_ones(franz: gobridge.GoBridge) -> None:
    with pytest.raises(ClientError, match=r"unknown client settings max\.block\.ms; known: bootstrap\.servers, "):
        franz.request("producer.open", 10, config={"bootstrap.servers": "127.0.0.1:9", "max.block.ms": 5})


def test_the_bridge_ends_with_its_stdin_and_is_named_after_its_workload(franz: gobridge.GoBridge) -> None:
    assert franz.hello["client"] == "franz-go" and franz.hello["version"] == DEFAULT_FRANZ_VERSION
    assert procs.describe(franz.proc.pid).startswith("franz-go client bridge of ")
    assert franz.proc.stdin is not None
    franz.proc.stdin.close()  # as when its workload dies
    wait_until(lambda: franz.proc.poll() is not None, timeout=10, what="the bridge to exit at the end of its stdin",
               state=lambda: f"returncode {franz.proc.poll()}")
    assert franz.proc.returncode == 0


# ---------------------------------------------------------------- pairing (franz-go's copier)

class Fake:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.what = "fake"

    def request(self, op: str, wait_s: float, **args: Any) -> Any:
        self.requests.append({"op": op, **args})
        return len(self.requests)


def test_a_franz_go_producer_is_paired_with_the_group_reader_opened_before_it(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = Fake()
    monkeypatch.setattr(gobridge, "bridge", lambda name, version: fake)
    monkeypatch.setattr(gobridge, "_unpaired", {})
    reader = gobridge.FranzGroupReader("1.22.3", "b:1", "g", ["in"], {})
    producer = gobridge.FranzClient("1.22.3", "b:1", "t", 60_000, {})
    assert fake.requests[-1]["op"] == "producer.open" and fake.requests[-1]["group"] == reader.handle
    assert fake.requests[0]["config"]["group.id"] == "g" and fake.requests[0]["config"]["isolation.level"] == "read_committed"
    alone = gobridge.FranzClient("1.22.3", "b:1", "t2", 60_000, {})  # a txn-producer's: nothing to pair with
    assert "group" not in fake.requests[-1]
    other = gobridge.FranzGroupReader("1.22.3", "b:1", "g", ["in"], {})
    other.close()  # closed unpaired: the next producer pairs with nothing
    gobridge.SaramaGroupReader("1.61.1", "b:1", "g", ["in"], {})
    gobridge.SaramaClient("1.61.1", "b:1", "t3", 60_000, {})  # sarama commits offsets of any consumer
    assert "group" not in fake.requests[-1]
    assert producer.handle != alone.handle


# ---------------------------------------------------------------- the table and the build

def test_go_libraries_take_versions_and_default_to_the_newest() -> None:
    assert str(clients.parse("franz-go")) == f"franz-go@{DEFAULT_FRANZ_VERSION}"
    assert str(clients.parse("sarama")) == f"sarama@{DEFAULT_SARAMA_VERSION}"
    # built when a run first needs them, not by setup --all (make test runs none of them)
    assert not {s for s in clients.setup_specs() if s.startswith(("franz-go@", "sarama@"))}
    with pytest.raises(ValueError, match=r"'v1.18.1' is not a release version; expected franz-go@MAJOR.MINOR.PATCH"):
        clients.parse("franz-go@v1.18.1")
    assert not clients.CLIENTS["franz-go"].plain_sends and not clients.CLIENTS["sarama"].plain_sends


def test_a_release_the_bridge_cannot_use_is_refused_naming_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EOS_CHAOS_CACHE", str(tmp_path))
    with pytest.raises(ConfigError, match=r"sarama@1.38.1: the bridge needs sarama 1.40.0 or later .*Shopify/sarama"):
        clients.prepare(["sarama@1.38.1"])
    with pytest.raises(ConfigError, match=r"franz-go@1.17.1: the bridge needs franz-go 1.18.0 or later"):
        clients.prepare(["franz-go@1.17.1"])


def test_a_release_the_proxy_lacks_names_the_nearby_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(go_build, "known_versions", lambda client: ["1.18.0", "1.18.1", "1.19.0", "1.22.3"])
    out = ("go: eos-chaos/franz-bridge imports\n\tgithub.com/twmb/franz-go/pkg/kgo: github.com/twmb/franz-go@v1.18.9: "
           "reading https://proxy.example/github.com/twmb/franz-go/@v/v1.18.9.zip: 403 Forbidden\n"
           "\tserver response: This module version is not available.")
    problem = go_build._missing(gobridge.FRANZ, "1.18.9", out)
    assert str(problem) == ("library franz-go@1.18.9: the Go module proxy has no github.com/twmb/franz-go v1.18.9; "
                            "releases it has: 1.18.0, 1.18.1 (go: server response: This module version is not available.)")


def test_the_build_is_keyed_by_client_version_and_sources_and_picks_the_api_of_the_release(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EOS_CHAOS_CACHE", str(tmp_path))
    new, old = gobridge.SARAMA.files("1.61.1"), gobridge.SARAMA.files("1.45.2")
    assert {p.name for p in new} - {p.name for p in old} == {"offsets_generation.go"}
    assert {p.name for p in old} - {p.name for p in new} == {"offsets_group_only.go"}
    assert {p.parent.name for p in new} == {"common", "sarama"}
    assert go_build.source_hash(gobridge.SARAMA, "1.61.1") != go_build.source_hash(gobridge.SARAMA, "1.45.2")
    target = go_build.binary(gobridge.FRANZ, "1.18.1")
    assert target.relative_to(tmp_path).parts[:3] == ("go-client", "franz-go", "1.18.1")
    assert go_build.ready(gobridge.FRANZ, "1.18.1") is None
    assert "require github.com/twmb/franz-go v1.18.1\n" in go_build.go_mod(gobridge.FRANZ, "1.18.1")


def test_every_go_source_is_gofmt_clean() -> None:
    proc = subprocess.run(["gofmt", "-l", str(ROOT / "harness" / "workloads" / "clients" / "go_src")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout == "", proc.stdout + proc.stderr
