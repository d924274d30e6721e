"""transaction.version as a switch, without a cluster: the wire format of ApiVersions and
UpdateFeatures (golden bytes, and a fake broker on a socket whose answers are built by hand, byte by
byte, not with the module's own encoder), the table of levels each Kafka release accepts, the
refusals (exit 2, naming the flag and what is allowed), the fault's model and its heal, and a run
refusing a cluster that is up at another level."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from chaos import faults
from chaos.faults import feature as fault_module
from clusters.backends import state
from clusters.backends.backends import Backend
from clusters.kafka import feature_levels as release
from harness.base.errors import ConfigError
from harness.cli import app
from harness.kafka import features
from harness.kafka.features import FeatureError
from harness.run import runner, scenario


# ---------------------------------------------------------------- bytes by hand
def u(n: int) -> bytes:
    """An unsigned varint, spelt out for the small numbers used here."""
    assert n < 128
    return bytes([n])


def cstr(s: str) -> bytes:
    return u(len(s) + 1) + s.encode()


def api_versions_response(finalized: dict[str, int], supported: dict[str, tuple[int, int]], epoch: int = 7,
                          error: int = 0) -> bytes:
    """An ApiVersions v4 response body (after its v0 header), tagged fields in tag order."""
    keys = u(2 + 1) + struct.pack(">hhh", 18, 0, 4) + u(0) + struct.pack(">hhh", 57, 0, 1) + u(0)
    sup = u(len(supported) + 1) + b"".join(cstr(n) + struct.pack(">hh", *r) + u(0) for n, r in supported.items())
    fin = u(len(finalized) + 1) + b"".join(cstr(n) + struct.pack(">hh", lvl, 1) + u(0) for n, lvl in finalized.items())
    ep = struct.pack(">q", epoch)
    zk = b"\x00"
    tags = u(4) + u(0) + u(len(sup)) + sup + u(1) + u(len(ep)) + ep + u(2) + u(len(fin)) + fin + u(3) + u(1) + zk
    return struct.pack(">h", error) + keys + struct.pack(">i", 0) + tags


def update_response(error: int = 0, message: str | None = None, results: list[tuple[str, int, str | None]] = ()) -> bytes:  # type: ignore[assignment]
    def nstr(s: str | None) -> bytes:
        return u(0) if s is None else cstr(s)
    res = u(len(results) + 1) + b"".join(cstr(n) + struct.pack(">h", c) + nstr(m) + u(0) for n, c, m in results)
    return struct.pack(">ih", 0, error) + nstr(message) + res + u(0)


# ---------------------------------------------------------------- the encoders
def test_an_api_versions_request_is_header_v2_and_a_v4_body() -> None:
    raw = features.request(18, 4, 5, features.api_versions_body())
    cid = features.CLIENT_ID.encode()
    body = cstr("eos-chaos") + cstr("1") + u(0)
    header = struct.pack(">hhih", 18, 4, 5, len(cid)) + cid + u(0)
    assert raw == struct.pack(">i", len(header) + len(body)) + header + body


def test_an_update_features_body_is_timeout_one_update_and_validate_only() -> None:
    assert features.update_features_body("transaction.version", 0, features.SAFE_DOWNGRADE, 10000) == (
        struct.pack(">i", 10000) + u(2) + cstr("transaction.version") + struct.pack(">hb", 0, 2) + u(0) + b"\x00" + u(0))


def test_varints_past_one_byte() -> None:
    assert features._uvarint(300) == bytes([0xAC, 0x02])
    assert features.BodyReader(bytes([0xAC, 0x02])).uvarint() == 300


# ---------------------------------------------------------------- the decoders
def test_the_finalized_and_supported_features_are_read_from_the_tagged_fields() -> None:
    f = features.parse_api_versions(api_versions_response(
        {"metadata.version": 33, "transaction.version": 2}, {"transaction.version": (0, 2), "metadata.version": (7, 33)}))
    assert f.finalized == {"metadata.version": 33, "transaction.version": 2}
    assert f.supported == {"transaction.version": (0, 2), "metadata.version": (7, 33)} and f.epoch == 7


def test_a_refused_api_versions_and_a_cut_answer_are_feature_errors() -> None:
    with pytest.raises(FeatureError, match=r"UNSUPPORTED_VERSION \(35\)"):
        features.parse_api_versions(api_versions_response({}, {}, error=35))
    with pytest.raises(FeatureError, match="truncated"):
        features.parse_api_versions(api_versions_response({"metadata.version": 33}, {})[:-5])


def test_update_features_errors_are_named_top_level_and_per_feature() -> None:
    assert features.parse_update_features(update_response()) == []
    assert features.parse_update_features(update_response(87, "no", [("transaction.version", 87, "bad level")])) == [
        "INVALID_UPDATE_VERSION (87): no", "transaction.version: INVALID_UPDATE_VERSION (87): bad level"]


# ---------------------------------------------------------------- a fake broker
class FakeBroker:
    """Answers ApiVersions v4 with its levels and UpdateFeatures v1 by changing them (or refusing
    with ``refuse``); records every UpdateFeatures body."""

    def __init__(self, finalized: dict[str, int], supported: dict[str, tuple[int, int]]) -> None:
        self.finalized, self.supported = finalized, supported
        self.updates: list[bytes] = []
        self.refuse: int = 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.bootstrap = f"127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                size = struct.unpack(">i", conn.recv(4))[0]
                msg = b""
                while len(msg) < size:
                    msg += conn.recv(size - len(msg))
                key, version, corr, cid_len = struct.unpack(">hhih", msg[:10])
                body = msg[10 + cid_len + 1:]
                if key == 18:
                    assert version == 4
                    out = struct.pack(">i", corr) + api_versions_response(self.finalized, self.supported)
                else:
                    assert (key, version) == (57, 1)
                    self.updates.append(body)
                    name_len = body[5] - 1
                    name = body[6:6 + name_len].decode()
                    level = struct.unpack(">h", body[6 + name_len:8 + name_len])[0]
                    if self.refuse:
                        out = struct.pack(">i", corr) + u(0) + update_response(self.refuse, "refused")
                    else:
                        if level:
                            self.finalized[name] = level
                        else:
                            self.finalized.pop(name, None)  # level 0: no longer finalized
                        out = struct.pack(">i", corr) + u(0) + update_response(0, None, [(name, 0, None)])
                conn.sendall(struct.pack(">i", len(out)) + out)

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def broker() -> Iterator[FakeBroker]:
    b = FakeBroker({"metadata.version": 33, "transaction.version": 2}, {"transaction.version": (0, 2)})
    yield b
    b.close()


def test_a_feature_that_is_not_finalized_reads_back_as_level_0(broker: FakeBroker) -> None:
    assert features.finalized(broker.bootstrap, 5) == {"transaction.version": 2, "metadata.version": 33}
    broker.finalized.pop("transaction.version")
    assert features.finalized(broker.bootstrap, 5) == {"transaction.version": 0, "metadata.version": 33}


def test_lower_is_a_safe_downgrade_higher_an_upgrade_and_the_same_level_sends_nothing(broker: FakeBroker) -> None:
    assert features.update(broker.bootstrap, "transaction.version", 0, 5)["transaction.version"] == 0
    assert broker.updates[-1][-4] == features.SAFE_DOWNGRADE  # upgrade type, then validate-only and tags
    assert features.update(broker.bootstrap, "transaction.version", 2, 5)["transaction.version"] == 2
    assert broker.updates[-1][-4] == features.UPGRADE
    features.update(broker.bootstrap, "transaction.version", 2, 5)
    assert len(broker.updates) == 2


def test_a_level_the_brokers_do_not_support_is_refused_before_asking(broker: FakeBroker) -> None:
    with pytest.raises(FeatureError, match=r"they support 0..2\); allowed: 0, 1, 2"):
        features.update(broker.bootstrap, "transaction.version", 3, 5)
    broker.supported.clear()  # a 3.9 broker does not list transaction.version
    with pytest.raises(FeatureError, match="do not list it: level 0 only"):
        features.update(broker.bootstrap, "transaction.version", 1, 5)
    assert broker.updates == []


def test_a_refusal_names_kafkas_reason(broker: FakeBroker) -> None:
    broker.refuse = 87
    with pytest.raises(FeatureError, match=r"refused transaction.version 2 -> 0: INVALID_UPDATE_VERSION \(87\): refused"):
        features.update(broker.bootstrap, "transaction.version", 0, 5)


def test_no_broker_answering_is_a_timeout_naming_what_it_waited_for() -> None:
    s = socket.create_server(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with pytest.raises(Exception, match=r"finalized features of the cluster at 127.0.0.1:\d+.*ConnectionRefusedError"):
        features.finalized(f"127.0.0.1:{port}", 1)


# ---------------------------------------------------------------- releases and refusals
@pytest.mark.parametrize("version, levels, default", [
    ("3.9.1", (0,), 0), ("3.9.0", (0,), 0), ("4.0.0", (0, 1, 2), 2), ("4.4.0", (0, 1, 2), 2), ("5.1.0", (0, 1, 2), 2)])
def test_the_levels_each_release_accepts(version: str, levels: tuple[int, ...], default: int) -> None:
    assert release.transaction_versions(version) == (levels, default)


@pytest.mark.parametrize("version, level, says", [
    ("3.9.1", 2, "Kafka 3.9.1 cannot be formatted at transaction.version=2; it accepts 0 (default 0)"),
    ("3.9.1", 1, "Levels 1 and 2 need Kafka 4.0 or newer"),
    ("4.4.0", 3, "--transaction-version 3: transaction.version levels are 0..2"),
    ("4.4.0", -1, "levels are 0..2"),
])
def test_a_level_the_release_does_not_accept_is_a_config_error(version: str, level: int, says: str) -> None:
    with pytest.raises(ConfigError, match=says.replace(".", r"\.").replace("(", r"\(").replace(")", r"\)")):
        release.check_transaction_version(version, level)


def test_none_is_the_releases_default_and_adds_no_format_flag() -> None:
    release.check_transaction_version("3.9.1", None)
    assert release.format_args(None) == [] and release.format_args(0) == ["--feature", "transaction.version=0"]
    assert release.intended_levels("4.4.0", None) == {"transaction.version": 2}
    assert release.intended_levels("4.4.0", 0) == {"transaction.version": 0}


def test_the_local_backend_formats_at_the_level_asked(tmp_path: Path) -> None:
    from clusters.backends import backends
    from clusters.backends.artifacts import Artifacts

    arts = Artifacts("3.9.1", tmp_path, tmp_path / "toxiproxy", tmp_path / "java")
    with pytest.raises(ConfigError, match="cannot be formatted at transaction.version=2"):
        backends.new_cluster(Backend.local, arts, tmp_path / "run", transaction_version=2)
    c = backends.new_cluster(Backend.local, arts, tmp_path / "run", transaction_version=0)
    assert c.transaction_version == 0 and c._record().transaction_version == 0  # type: ignore[attr-defined]


@pytest.mark.parametrize("args, says", [
    (["cluster", "up", "--transaction-version", "3"], "3 is not a transaction.version; allowed: 0, 1, 2"),
    (["cluster", "up", "--transaction-version", "2", "--kafka-version", "3.9.1"], "cannot be formatted at transaction.version=2"),
    (["run", "txn-baseline", "--transaction-version", "1", "--kafka-version", "3.9.1"], "it accepts 0"),
    (["soak", "--transaction-version", "2", "--kafka-version", "3.9.1"], "it accepts 0"),
    (["run", "txn-baseline", "--transaction-version", "-1"], "-1 is not a transaction.version"),
])
def test_the_cli_refuses_a_level_before_anything_starts(args: list[str], says: str, monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[Any] = []
    monkeypatch.setattr(runner, "run", lambda *a, **kw: started.append(a))
    monkeypatch.setattr("clusters.backends.backends.new_cluster", lambda *a, **kw: started.append(a))
    r = CliRunner(env={"COLUMNS": "400", "TERMINAL_WIDTH": "400"}).invoke(app, args)
    assert r.exit_code == 2 and says in r.output, r.output
    assert started == []


def test_a_run_refuses_a_cluster_that_is_up_at_another_level(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EOS_CHAOS_STATE", str(tmp_path))
    state.save(state.ClusterRecord(backend="local", cluster_id="c", run_dir="r", kafka_version="4.4.0", net=10,
                                   port_base=19092, api_port=18474, owner_pid=None, transaction_version=0))
    sc = scenario.load("txn-baseline")
    with pytest.raises(ConfigError, match=r"transaction.version 0 \(--transaction-version\), --transaction-version asks for 2"):
        runner.cluster_that_is_up(Backend.local, sc, transaction_version=2)
    state.save(state.ClusterRecord(backend="local", cluster_id="c", run_dir="r", kafka_version="4.4.0", net=10,
                                   port_base=19092, api_port=18474, owner_pid=None))
    with pytest.raises(ConfigError, match=r"transaction.version 2 \(the release's default\), --transaction-version asks for 1"):
        runner.cluster_that_is_up(Backend.local, sc, transaction_version=1)
    assert runner.cluster_that_is_up(Backend.local, sc, transaction_version=2) is not None


# ---------------------------------------------------------------- the fault
def test_the_fault_takes_a_level_from_0_to_2_only() -> None:
    assert faults.parse({"at": 1, "kind": "set-transaction-version", "level": 0}).model_dump() == {
        "kind": "set-transaction-version", "at": 1.0, "duration": 5.0, "every": 0.0, "level": 0}
    for bad in ({"level": 3}, {"level": -1}, {}, {"level": 1, "target": 2}):
        with pytest.raises(ValidationError):
            faults.parse({"at": 1, "kind": "set-transaction-version", **bad})


def test_a_scenario_fault_level_the_release_does_not_accept_is_refused_before_the_run() -> None:
    f = faults.parse({"at": 3, "kind": "set-transaction-version", "level": 2})
    with pytest.raises(ConfigError, match="fault set-transaction-version at 3s: level 2: Kafka 3.9.1 cannot"):
        runner.check_fault_levels([f], "3.9.1")
    runner.check_fault_levels([f], "4.4.0")


def test_the_fault_sets_the_level_and_its_heal_restores_the_one_found_before(broker: FakeBroker) -> None:
    events: list[tuple[str, str, dict[str, Any]]] = []

    class Cluster:
        direct_bootstrap = broker.bootstrap

    ctx = faults.FaultContext(Cluster(), lambda *a: 1, None, lambda k, **v: events.append(("start", k, v)),  # type: ignore[arg-type]
                              lambda k, **v: events.append(("end", k, v)), threading.Event())
    heal = faults.parse({"at": 0, "kind": "set-transaction-version", "level": 0}).apply(ctx)
    assert broker.finalized.get("transaction.version") is None
    heal()
    assert broker.finalized["transaction.version"] == 2
    assert events == [("start", "set-transaction-version", {"level": 0, "before": 2, "after": 0}),
                      ("end", "set-transaction-version", {"level": 0, "before": 2, "restored": 2})]
    assert fault_module.SetTransactionVersion.holds


def test_heal_all_puts_back_the_level_the_cluster_was_formatted_at(broker: FakeBroker) -> None:
    from chaos.heal import heal_features

    class Cluster:
        direct_bootstrap = broker.bootstrap

        def feature_levels(self) -> dict[str, int]:
            return {"transaction.version": 2}

    broker.finalized.pop("transaction.version")  # a killed run left it at 0
    assert heal_features(Cluster()) == []  # type: ignore[arg-type]
    assert broker.finalized["transaction.version"] == 2
    broker.refuse = 87
    broker.finalized.pop("transaction.version")
    assert "INVALID_UPDATE_VERSION" in heal_features(Cluster())[0]  # type: ignore[arg-type]
