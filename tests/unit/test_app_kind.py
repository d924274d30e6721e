"""The ``app`` workload kind without a cluster (docs/APPS.md): its scenario refused when wrong (file
and line), its command and contract function looked for before anything starts, the function applied
in a child process and refused when it misbehaves, the feeder's keyed input and integer values, the
output serdes, and the wrapper around the app's command (readiness by a log line, exits recorded, an
app that ignores SIGTERM killed)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import asdict
from pathlib import Path

import orjson
import pytest

from harness.base.errors import ConfigError
from harness.base.wait import wait_until
from harness.kafka.serde import decode, encode
from harness.phases import app_expect, app_run
from harness.run import scenario
from harness.workloads.app_wrapper import KILLED_AT_STOP
from harness.workloads.common import WorkloadConfig
from harness.workloads.registry import AppSettings, TxnProducerSettings
from harness.workloads.txn_producer import keyed_sends, partition_of

APP = """name: my-app
description: x
topics: [app-in, app-out]
workloads:
  - kind: app
    count: 2
    settings:
      command: ["{python}", -m, my_app, --in, "{topic:app-in}", --out, "{topic:app-out}"]
      inputs: [app-in]
      outputs: [app-out]
      ready: {log: started}
      contract: {kind: map}
"""


def _app_file(tmp_path: Path, text: str = APP) -> Path:
    f = tmp_path / "my-app.yaml"
    f.write_text(text)
    return f


def _refused(tmp_path: Path, text: str) -> str:
    with pytest.raises(ConfigError) as e:
        scenario.load(str(_app_file(tmp_path, text)))
    return str(e.value)


def test_an_app_scenario_loads_with_its_cwd_the_scenario_files_folder(tmp_path: Path) -> None:
    sc = scenario.load(str(_app_file(tmp_path)))
    (w,) = sc.workloads
    assert w.kind == "app" and w.count == 2 and w.settings["cwd"] == str(tmp_path.resolve())
    s = AppSettings.model_validate(w.settings)
    assert s.feeder.keys == 16 and s.contract.function == "identity" and s.ready.log == "started"


@pytest.mark.parametrize("change, says", [
    (("{topic:app-in}", "{topic:nope}"), "my-app.yaml:8: workloads[0].settings.command[4]: '{topic:nope}': "
                                         "{topic:nope} names no topic of the scenario (app-in, app-out)"),
    (("{python}", "{pyton}"), "{pyton} is not a placeholder"),
    (("inputs: [app-in]", "inputs: [nope]"), "an app workload needs settings ['inputs']"),
    (("ready: {log: started}", "ready: {log: started, output: first}"), "ready: exactly one of log, group, output"),
    (("ready: {log: started}", "ready: {log: '('}"), "is not a regular expression"),
    (("contract: {kind: map}", "contract: {kind: aggregate}"), "aggregates: required in an aggregate contract"),
    (("contract: {kind: map}", "contract: {kind: map, function: 'not a function'}"), "allowed: identity, or module:function"),
    (("contract: {kind: map}", "contract: {kind: aggregate, aggregates: {elsewhere: count}}"), "not in outputs"),
    (("outputs: [app-out]", "outputs: [app-in]"), "in both"),
    (("contract: {kind: map}", "contract: {kind: windowed, aggregates: {app-out: count}}"),
     "window: required in a windowed contract"),
    (("contract: {kind: map}", "contract: {kind: model}"), "function: required in a model contract"),
    (("contract: {kind: map}", "contract: {kind: model, function: 'm:f', by: 'm:g'}"),
     "by: only in an aggregate or windowed contract, not a model one"),
    (("contract: {kind: map}", "contract: {kind: aggregate, aggregates: {app-out: count}, by: 'a b'}"),
     "by: 'a b'; allowed: module:function"),
    (("contract: {kind: map}", "contract: {kind: join, function: 'm:f', stream: app-in, table: app-out}"),
     "two of the app's inputs"),
    (("contract: {kind: map}", "contract: {kind: windowed, aggregates: {app-out: count}, window: {size_ms: 5, "
      "advance_ms: 9}}"), "advance_ms 9 above size_ms 5"),
    # a second app of the same name: two apps make a pipeline, each with a name of its own (docs/APPS.md)
    (("count: 2", "count: 2\n    settings: {}\n  - kind: app\n    count: 1"), "name: 'app' is an earlier app's too"),
])
def test_a_wrong_app_scenario_is_refused_naming_file_line_and_what_is_allowed(
        tmp_path: Path, change: tuple[str, str], says: str) -> None:
    text = APP.replace(*change) if "earlier app" not in says else APP + "  - kind: app\n    settings:\n" + "\n".join(
        "  " + line for line in APP.split("    settings:\n")[1].splitlines()) + "\n"
    assert says in _refused(tmp_path, text)


@pytest.mark.parametrize("change, says", [
    ("contract: {kind: map, order: perkey}", "contract.order: 'perkey'; allowed: per-key, none; did you mean 'per-key'?"),
    ("contract: {kind: map, output_serde: {key: lng}}", "contract.output_serde.key: 'lng'; allowed: string, long, int"),
    ("contract: {kind: aggregate, aggregates: {app-out: avg}}", "contract.aggregates.app-out: 'avg'; allowed: count, "
                                                                "sum, min, max"),
    ("contract: {kind: map, ordr: none}", "contract.ordr: unknown (allowed: kind, function, order, aggregates, "
                                          "by, window, window_key, monotone, stream, table, output_serde); did you "
                                          "mean 'order'?"),
    ("contract: {kind: map, output_serde: {kye: long}}", "contract.output_serde.kye: unknown (allowed: key, value); "
                                                         "did you mean 'key'?"),
])
def test_a_wrong_nested_app_setting_says_what_its_own_model_allows(tmp_path: Path, change: str, says: str) -> None:
    """Nested settings said ``allowed: `` with nothing after it, and an unknown nested key listed
    the top level's keys with no did-you-mean."""
    assert says in _refused(tmp_path, APP.replace("contract: {kind: map}", change))


def test_a_wrong_ready_output_says_what_is_allowed(tmp_path: Path) -> None:
    assert "ready.output: 'frist'; allowed: first; did you mean 'first'?" in _refused(
        tmp_path, APP.replace("ready: {log: started}", "ready: {output: frist}"))


def test_a_workload_fault_on_an_instance_the_scenario_does_not_run_is_refused(tmp_path: Path) -> None:
    """``instance: 5`` on a 2-instance app passed the dry run and failed when the fault came."""
    fault = "faults:\n  - {at: 10, kind: kill-workload, workload: app, instance: %d, duration: 5}\n"
    assert "my-app.yaml:5: faults[0] (kill-workload at 10s) instance: 5: the scenario runs 2 app processes (app-0 to app-1)" in _refused(
        tmp_path, APP.replace("workloads:", fault % 5 + "workloads:"))
    sc = scenario.load(str(_app_file(tmp_path, APP.replace("workloads:", fault % 1 + "workloads:"))))
    assert sc.faults[0].instance == 1  # type: ignore[union-attr]


def test_an_identity_app_read_with_other_serdes_than_its_feeder_writes_is_refused(tmp_path: Path) -> None:
    """It was accepted and ended in a false INVALID: every copied value read as another one."""
    msg = _refused(tmp_path, APP.replace("contract: {kind: map}", "contract: {kind: map, output_serde: {value: long}}"))
    assert "contract.output_serde: identity copies the feeder's records as they are (keys string, values string" in msg
    assert "give {key: string, value: string}" in msg
    both_long = APP.replace("contract: {kind: map}", "feeder: {value_serde: long}\n      contract: {kind: map, "
                                                     "output_serde: {value: long}}")
    assert scenario.load(str(_app_file(tmp_path, both_long))).workloads[0].kind == "app"


@pytest.mark.parametrize("producer", ["{topics: [app-in]}", "{topics: [app-out]}", "{}"])
def test_another_workload_writing_the_apps_topics_is_refused(tmp_path: Path, producer: str) -> None:
    """Its records read as the app's mistakes: a false INVALID. (``{}`` writes every topic but
    the app's outputs, its inputs among them.)"""
    text = APP.replace("[app-in, app-out]", "[app-in, app-out, mine]") + f"  - kind: txn-producer\n    settings: {producer}\n"
    assert "workloads[1].settings: a txn-producer workload writes ['app-" in _refused(tmp_path, text)
    assert "give it topics of its own (mine)" in _refused(tmp_path, text)
    ok = text.replace(f"settings: {producer}", "settings: {topics: [mine]}")
    assert [w.kind for w in scenario.load(str(_app_file(tmp_path, ok))).workloads] == ["app", "txn-producer"]


@pytest.mark.parametrize("args", [["run", "app-py-copier", "--library", "java", "--dry-run"],
                                  ["matrix", "--scenarios", "app-py-copier,smoke", "--clients", "confluent-kafka,java",
                                   "--dry-run"]])
def test_a_client_library_no_workload_of_an_app_scenario_can_run_on_is_refused(args: list[str]) -> None:
    """It changed nothing, silently, and a matrix page showed a Java column that never ran Java."""
    from tests.unit.test_cli import cli

    r = cli(*args)
    assert r.exit_code == 2, r.output
    assert "scenario app-py-copier has no workload that can run on it: app runs on confluent-kafka only" in " ".join(
        r.output.split()), r.output
    assert cli("run", "app-py-copier", "--library", "confluent-kafka", "--dry-run").exit_code == 0


def test_a_command_that_is_not_there_is_refused_before_anything_starts(tmp_path: Path) -> None:
    sc = scenario.load(str(_app_file(tmp_path, APP.replace('"{python}", -m, my_app', "./no-such-app"))))
    with pytest.raises(ConfigError, match=r"'./no-such-app' is not an executable file in "):
        app_run.preflight(sc)
    sc = scenario.load(str(_app_file(tmp_path, APP.replace('"{python}", -m, my_app', "no-such-program-xyz"))))
    with pytest.raises(ConfigError, match=r"'no-such-program-xyz' is not an executable file on PATH"):
        app_run.preflight(sc)
    app_run.preflight(scenario.load(str(_app_file(tmp_path))))  # {python} is there


def test_a_working_folder_that_is_not_there_is_refused(tmp_path: Path) -> None:
    sc = scenario.load(str(_app_file(tmp_path, APP.replace("      inputs:", "      cwd: nowhere\n      inputs:"))))
    with pytest.raises(ConfigError, match="nowhere is not a folder"):
        app_run.preflight(sc)


FUNCTIONS = '''
def split(record):
    return [{"topic": "app-out", "key": record["key"], "value": record["value"] + ":" + s} for s in "ab"]

def boom(record):
    raise KeyError("no such field")

def wrong(record):
    return {"topic": "app-out"}

NOT_A_FUNCTION = 3
'''


def test_a_contract_function_is_applied_in_a_child_process(tmp_path: Path) -> None:
    (tmp_path / "fns.py").write_text(FUNCTIONS)
    out = app_expect.apply_function("fns:split", [{"topic": "app-in", "partition": 0, "key": "k1", "value": "7"}], tmp_path)
    assert out == [[{"topic": "app-out", "key": "k1", "value": "7:a"}, {"topic": "app-out", "key": "k1", "value": "7:b"}]]


@pytest.mark.parametrize("function, says", [
    ("fns:boom", "raised KeyError: 'no such field' for input {'topic': 'app-in', 'partition': 0, 'key': 'k1', 'value': '7'}"),
    ("fns:wrong", "returned a dict for input"),
    ("fns:NOT_A_FUNCTION", "fns:NOT_A_FUNCTION is a int, not a function"),
    ("fns:missing", "module 'fns' has no 'missing'"),
    ("nosuchmodule:f", "cannot import module 'nosuchmodule'"),
])
def test_a_contract_function_that_misbehaves_is_refused_naming_the_input(tmp_path: Path, function: str, says: str) -> None:
    (tmp_path / "fns.py").write_text(FUNCTIONS)
    with pytest.raises(ConfigError, match=f"contract function {function}: ") as e:
        app_expect.apply_function(function, [{"topic": "app-in", "partition": 0, "key": "k1", "value": "7"}], tmp_path)
    assert says in str(e.value)


def test_a_function_that_cannot_be_imported_is_refused_before_anything_starts(tmp_path: Path) -> None:
    sc = scenario.load(str(_app_file(tmp_path, APP.replace("contract: {kind: map}", "contract: {kind: map, function: 'fns:gone'}"))))
    with pytest.raises(ConfigError, match="cannot import module 'fns'"):
        app_run.preflight(sc)


def test_the_feeders_keys_pick_their_partition_as_kafkas_java_clients_do() -> None:
    # murmur2 as Kafka's BuiltInPartitioner, on the hashes Kafka's own UtilsTest gives for these keys
    java = {"21": -973932308, "foobar": -790332482, "abc": 479470107}
    assert {k: partition_of(k, 7) for k in java} == {k: (h & 0x7FFFFFFF) % 7 for k, h in java.items()}
    cfg = WorkloadConfig(run_dir="/tmp", name="app-feeder", bootstrap="", topics=["in"], partitions=3)
    s = TxnProducerSettings(keys=4, topics=["in"])  # type: ignore[call-arg]
    sends, keys = keyed_sends(cfg, s, random.Random(1), [str(v) for v in range(200)])
    assert set(keys) == {"k0", "k1", "k2", "k3"}
    assert all(p == partition_of(k, 3) for (_, p, _), k in zip(sends, keys))
    assert len({partition_of(k, 3) for k in keys}) > 1  # the keys spread over the partitions


@pytest.mark.parametrize("serde, raw, text", [
    ("string", b"abc", "abc"), ("string", b"\xff", "!bytes:ff"), ("long", (7).to_bytes(8, "big"), "7"),
    ("long", (-2).to_bytes(8, "big", signed=True), "-2"), ("int", (9).to_bytes(4, "big"), "9"),
    ("long", b"\x00\x01", "!bytes:0001"), ("string", None, None),
])
def test_output_serdes_read_text_and_integers_and_keep_what_does_not_fit_visible(serde: str, raw: bytes | None,
                                                                                 text: str | None) -> None:
    assert decode(serde, raw) == text
    if text is not None and not text.startswith("!"):
        assert encode(serde, text) == raw


def test_the_feeder_inputs_are_read_from_its_history(tmp_path: Path) -> None:
    h = tmp_path / "history"
    h.mkdir()
    lines = [{"time": 1, "process": "app-feeder.0", "type": "invoke", "f": "txn", "txn_id": "x",
              "value": [["send", "in.r1", 2, "5"], ["send", "other.r1", 0, "6"]], "keys": ["k1", "k2"]},
             {"time": 2, "process": "app-feeder.0", "type": "ok", "f": "txn", "value": []}]
    (h / "app-feeder.jsonl").write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines) + b'{"cut')
    s = AppSettings.model_validate(scenario.load(str(_app_file(tmp_path))).workloads[0].settings
                                   | {"inputs": ["in.r1"], "outputs": ["out.r1"]})
    assert app_expect.feeder_inputs(tmp_path, s) == [("5", {"topic": "in.r1", "partition": 2, "offset": None, "key": "k1",
                                                            "value": "5", "timestamp": None, "headers": {}})]


# ---------------------------------------------------------------------------------------------- the wrapper
def _wrapper(tmp_path: Path, script: str, ready: str = "started", stop_timeout_s: float = 2) -> subprocess.Popen[bytes]:
    (tmp_path / "app.py").write_text(textwrap.dedent(script))
    settings = {"command": [sys.executable, "app.py", "{instance}", "{id}"], "cwd": str(tmp_path), "inputs": ["in"],
                "outputs": ["out"], "ready": {"log": ready}, "contract": {"kind": "map"}, "stop_timeout_s": stop_timeout_s}
    cfg = WorkloadConfig(run_dir=str(tmp_path), name="app-1", bootstrap="127.0.0.1:1", topics=["in", "out"],
                         partitions=1, settings=settings, topic_names={"in": "in", "out": "out"}, instances=2)
    (tmp_path / "app-1.json").write_text(json.dumps(asdict(cfg)))
    env = {k: v for k, v in os.environ.items() if not k.startswith("EOS_CHAOS_LIFELINE")}
    return subprocess.Popen([sys.executable, "-m", "harness.workloads.app_wrapper", str(tmp_path / "app-1.json")],
                            stdout=open(tmp_path / "app-1.log", "wb"), stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)


def _ops(tmp_path: Path) -> list[dict[str, object]]:
    path = tmp_path / "history" / "app-1.jsonl"
    return [orjson.loads(x) for x in path.read_bytes().splitlines()] if path.exists() else []


def test_the_wrapper_records_readiness_by_a_log_line_and_a_clean_stop(tmp_path: Path) -> None:
    p = _wrapper(tmp_path, """
        import signal, sys, time
        signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
        print("instance", sys.argv[1], "of app", sys.argv[2], "started", flush=True)
        while True:
            time.sleep(0.1)
        """)
    try:
        wait_until(lambda: any(o["f"] == "app-ready" for o in _ops(tmp_path)), timeout=30, what="app-ready",
                   state=lambda: (tmp_path / "app-1.log").read_text())
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=30) == 0
    finally:
        os.killpg(p.pid, signal.SIGKILL) if p.poll() is None else None
    ops = _ops(tmp_path)
    assert [o["f"] for o in ops] == ["app-start", "app-ready", "app-exit"]
    assert ops[2]["value"] == {"code": 0, "signal": None, "after_ready": True, "stopped": True}
    assert "instance 1 of app eos-chaos-app started" in (tmp_path / "app-1.log").read_text()


def test_an_app_that_ignores_sigterm_is_killed_after_its_stop_timeout_and_says_so(tmp_path: Path) -> None:
    p = _wrapper(tmp_path, """
        import signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print("started", flush=True)
        while True:
            time.sleep(0.1)
        """, stop_timeout_s=1)
    try:
        wait_until(lambda: any(o["f"] == "app-ready" for o in _ops(tmp_path)), timeout=30, what="app-ready")
        t0 = time.monotonic()
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=30) == KILLED_AT_STOP
        assert time.monotonic() - t0 < 10
    finally:
        os.killpg(p.pid, signal.SIGKILL) if p.poll() is None else None
    assert _ops(tmp_path)[-1]["value"] == {"code": -9, "signal": "SIGKILL", "after_ready": True, "stopped": True,
                                           "killed_after_s": 1}
    assert "did not exit within 1s of SIGTERM: killed" in (tmp_path / "app-1.log").read_text()


def test_an_app_that_exits_before_it_is_ready_ends_the_wrapper_with_its_code(tmp_path: Path) -> None:
    p = _wrapper(tmp_path, """
        import sys
        print("no config file", flush=True)
        sys.exit(4)
        """)
    assert p.wait(timeout=30) == 4
    assert _ops(tmp_path)[-1]["value"] == {"code": 4, "signal": None, "after_ready": False, "stopped": False}
    assert "no config file" in (tmp_path / "app-1.log").read_text()


def test_a_fault_on_the_coordinator_in_an_app_scenario_is_of_the_apps_own_transactions(tmp_path: Path) -> None:
    sc = scenario.load(str(_app_file(tmp_path)))
    d = sc.target_defaults()
    assert d.transactional_id == "eos-chaos-app*" and d.group == "eos-chaos-app"  # the prefix of its ids, its group
    tagged = runner_physical(sc)
    assert tagged.target_defaults().transactional_id == "eos-chaos-app.r1*"


def runner_physical(sc: scenario.Scenario) -> scenario.Scenario:
    from harness.run.runner import physical

    return physical(sc, "r1")


def test_the_drain_waits_for_an_instance_started_again_to_be_ready_again(tmp_path: Path) -> None:
    h = tmp_path / "history"
    h.mkdir()

    def write(name: str, *fs: str) -> None:
        (h / f"{name}.jsonl").write_bytes(b"".join(orjson.dumps({"time": i, "process": f"{name}.0", "type": "info",
                                                                 "f": f, "value": {}}) + b"\n" for i, f in enumerate(fs)))

    write("app-0", "app-start", "app-ready", "app-exit", "app-start")  # started again, not ready yet
    write("app-1", "app-start", "app-ready", "app-start", "app-ready")  # ready again
    write("app-2", "app-start")
    assert app_run.running_again(tmp_path, ["app-0", "app-1", "app-2", "app-3"]) == ["app-0", "app-2", "app-3"]


def test_ready_by_output_means_new_output_since_this_start_not_the_earlier_incarnations(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Spark driver restarted after a kill was ready 60 ms after its start, by the records its
    earlier incarnation had written: the drain took it for running and ended a minute before its
    first micro-batch (2710 inputs missing)."""
    from harness.workloads.app_wrapper import AppReadiness

    cfg = WorkloadConfig(run_dir="/tmp", name="app-0", bootstrap="", topics=[], partitions=2)
    s = AppSettings.model_validate({"command": ["x"], "inputs": ["in"], "outputs": ["out"], "ready": {"output": "first"},
                                    "contract": {"kind": "map"}})
    r = AppReadiness(cfg, s)
    ends = {("out", 0): 0, ("out", 1): 0}
    monkeypatch.setattr(r, "output_ends", lambda: dict(ends))
    r.probe()
    assert not r.ready.is_set()
    ends[("out", 1)] = 5
    r.probe()
    assert r.ready.is_set() and r.how == "a first record in an output topic since this start"
    r.reset()  # started again: what the output holds already shows nothing
    r.probe()
    r.probe()
    assert not r.ready.is_set()
    ends[("out", 0)] = 1
    r.probe()
    assert r.ready.is_set()
