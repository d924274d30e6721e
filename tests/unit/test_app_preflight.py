"""An app's preflight (harness/phases/user_functions.py, app_run.preflight) before anything starts:
a contract function tried on sample inputs shaped as the feeder's, refused (exit 2, naming the
setting, the function and the sample input) when it raises, answers the wrong shape, or names a
topic that is not one of the app's outputs (issue 39: that was judged INVALID with thousands of
``app-map`` counts); the same topic check on the run's real inputs at the end (the function's
error: unknown). And the dry runs of ``run``, ``matrix`` and the start of a ``soak`` run that
preflight: a missing program is exit 2 there, not once a cluster is up."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.base.errors import ConfigError
from harness.phases import app_run, user_functions
from harness.run import scenario
from harness.workloads.app_function import MODES
from harness.workloads.registry import AppSettings
from tests.unit.test_cli import cli

APP = """name: my-app
description: x
duration: 10
topics: [app-in, app-out, app-audit]
workloads:
  - kind: app
    settings:
      command: [PROGRAM, app.py]
      inputs: [app-in]
      outputs: [app-out]
      ready: {log: started}
      contract: {kind: map, function: FUNCTION}
"""

FUNCTIONS = '''
def upper(record):
    return [{"topic": "app-out", "key": record["key"], "value": record["value"].upper()}]

def as_int(record):  # a user who thought the feeder wrote integers
    return [{"topic": "app-out", "key": record["key"], "value": str(int(record["value"]) * 2)}]

def one_record(record):
    return {"topic": "app-out", "key": record["key"], "value": record["value"]}

def numbers(record):
    return [{"topic": "app-out", "key": record["key"], "value": 7}]

def to_the_input(record):  # writes back to its input: the app's outputs are app-out only
    return [{"topic": "app-out", "key": record["key"], "value": "x"}, {"topic": "app-in", "key": None, "value": "y"}]

def to_the_run_name(record):  # the topic as the run names it, not as the scenario does
    return [{"topic": record["topic"] + ".run-1", "key": None, "value": "y"}]
'''


def _scenario(tmp_path: Path, function: str = "fns:upper", program: str = '"{python}"') -> Path:
    (tmp_path / "fns.py").write_text(FUNCTIONS)
    f = tmp_path / "my-app.yaml"
    f.write_text(APP.replace("PROGRAM", program).replace("FUNCTION", f"'{function}'"))
    return f


def _refused(tmp_path: Path, function: str) -> str:
    with pytest.raises(ConfigError) as e:
        app_run.preflight(scenario.load(str(_scenario(tmp_path, function))))
    return str(e.value)


def test_a_function_that_works_on_the_samples_passes(tmp_path: Path) -> None:
    app_run.preflight(scenario.load(str(_scenario(tmp_path))))


def test_a_function_that_raises_on_a_sample_input_is_refused_naming_it_and_the_input(tmp_path: Path) -> None:
    said = _refused(tmp_path, "fns:as_int")
    assert said.startswith("app setting contract.function: contract function fns:as_int: raised ValueError: "), said
    assert "for input {'topic': 'app-in', 'partition': 0, 'offset': 0, 'key': 'k0', 'value': 'app-feeder.0-0-0'" in said, said
    assert "a sample input the preflight made" in said


@pytest.mark.parametrize("function, says", [
    ("fns:one_record", "returned a dict for input {'topic': 'app-in'"),
    ("fns:numbers", "returned {'topic': 'app-out', 'key': 'k0', 'value': 7} for input"),
])
def test_a_function_that_answers_the_wrong_shape_is_refused(tmp_path: Path, function: str, says: str) -> None:
    said = _refused(tmp_path, function)
    assert f"contract function {function}: {says}" in said, said


@pytest.mark.parametrize("function, topic", [("fns:to_the_input", "app-in"), ("fns:to_the_run_name", "app-in.run-1")])
def test_a_function_that_names_a_topic_not_among_the_outputs_is_refused(tmp_path: Path, function: str, topic: str) -> None:
    said = _refused(tmp_path, function)
    assert (f"contract function {function}: returned a record for topic {topic!r}, not one of the app's outputs "
            "(app-out), for input ") in said, said


def test_at_the_end_a_topic_not_among_the_outputs_is_the_functions_error_not_findings(tmp_path: Path) -> None:
    """A function that names another topic only for some real input: ``record_expected`` raises
    (the runner records it as the function's error: the verdict is unknown, naming the input)."""
    (tmp_path / "fns.py").write_text(FUNCTIONS + '''
def late(record):
    return [{"topic": "app-out" if record["value"] != "v9" else "elsewhere", "key": None, "value": "x"}]
''')
    inputs = [{"topic": "app-in", "partition": 0, "key": None, "value": f"v{i}"} for i in range(10)]
    assert len(user_functions.apply_function("fns:late", inputs[:9], tmp_path, outputs=["app-out"])) == 9
    with pytest.raises(ConfigError, match=r"fns:late: returned a record for topic 'elsewhere', not one of the app's outputs \(app-out\), for input .*'v9'"):
        user_functions.apply_function("fns:late", inputs, tmp_path, outputs=["app-out"])


def test_every_row_of_the_table_is_called_by_a_form_the_child_knows() -> None:
    # every row the child calls (the feeder's is tried by the feeder's own child: check_feed)
    assert {row.form for row in user_functions.SETTINGS if row.tried is None} <= set(MODES)
    s = AppSettings.model_validate({"command": ["x"], "inputs": ["a", "b"], "outputs": ["o"], "ready": {"log": "x"},
                                    "contract": {"kind": "map", "function": "m:f"}})
    assert [row.spec(s) for row in user_functions.SETTINGS] == ["m:f", None, None, None, None, None]
    shaped = s.model_copy(update={"feeder": s.feeder.model_copy(update={"generator": "g:lines"})})
    assert [row.spec(shaped) for row in user_functions.SETTINGS][-1] == "feeder"
    samples = user_functions.sample_records(s)
    assert {r["topic"] for r in samples} == {"a", "b"} and all(set(r) == {"topic", "partition", "offset", "key", "value", "timestamp", "headers"}
                                                                 for r in samples)
    identity = s.model_copy(update={"contract": s.contract.model_copy(update={"function": "identity"})})
    assert [row.spec(identity) for row in user_functions.SETTINGS] == [None] * 6  # the harness's own: nothing to try


WINDOWED = """name: my-windows
description: x
duration: 10
topics: [app-in, app-out]
workloads:
  - kind: app
    settings:
      command: ["{python}", app.py]
      inputs: [app-in]
      outputs: [app-out]
      ready: {log: started}
      contract: {kind: windowed, aggregates: {app-out: count}, window: {size_ms: 1000}, window_key: WINDOW_KEY}
"""


@pytest.mark.parametrize("window_key, says", [
    ("fns:upper", None),  # imported: the app's keys exist only after the run, so it is not called here
    ("fns:no_such", "app setting contract.window_key: contract function fns:no_such: module 'fns' has no 'no_such'"),
    ("nomodule:f", "app setting contract.window_key: contract function nomodule:f: cannot import module 'nomodule'"),
])
def test_a_window_key_function_that_cannot_be_imported_is_refused_before_anything_starts(
        tmp_path: Path, window_key: str, says: str | None) -> None:
    (tmp_path / "fns.py").write_text(FUNCTIONS)
    f = tmp_path / "my-windows.yaml"
    f.write_text(WINDOWED.replace("WINDOW_KEY", window_key))
    sc = scenario.load(str(f))
    if says is None:
        app_run.preflight(sc)
        return
    with pytest.raises(ConfigError) as e:
        app_run.preflight(sc)
    assert says in str(e.value), str(e.value)


# ---- the dry runs and the campaigns' starts


def _missing_program(tmp_path: Path) -> Path:
    return _scenario(tmp_path, program="./no-such-app")


def test_run_dry_run_refuses_a_missing_program(tmp_path: Path) -> None:
    r = cli("run", str(_missing_program(tmp_path)), "--dry-run")
    assert r.exit_code == 2, r.output
    assert "'./no-such-app' is not an executable file in" in " ".join(r.output.split()), r.output
    assert cli("run", str(_scenario(tmp_path)), "--dry-run").exit_code == 0


def test_run_dry_run_refuses_a_function_that_fails_on_a_sample(tmp_path: Path) -> None:
    r = cli("run", str(_scenario(tmp_path, "fns:as_int")), "--dry-run")
    assert r.exit_code == 2, r.output
    assert "contract function fns:as_int: raised ValueError" in " ".join(r.output.split()), r.output


def test_matrix_dry_run_refuses_a_missing_program_naming_the_scenario(tmp_path: Path) -> None:
    r = cli("matrix", "--scenarios", str(_missing_program(tmp_path)), "--dry-run")
    assert r.exit_code == 2, r.output
    assert "scenario my-app: app setting command: './no-such-app'" in " ".join(r.output.split()), r.output


def test_matrix_and_soak_refuse_a_missing_program_before_any_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.campaigns import matrix, soak

    started: list[Any] = []
    for step in ("prepare_kafka", "prepare_clients", "run_matrix"):  # what comes before and starts clusters
        monkeypatch.setattr(matrix, step, lambda *a, step=step, **kw: started.append(step))
    monkeypatch.setattr(soak, "soak", lambda *a, **kw: started.append("soak"))
    f = str(_missing_program(tmp_path))
    for args in (["matrix", "--scenarios", f, "--out", str(tmp_path / "m")],
                 ["soak", "--scenarios", f, "--out", str(tmp_path / "s")]):
        r = cli(*args)
        assert r.exit_code == 2, r.output
        assert "'./no-such-app' is not an executable file" in " ".join(r.output.split()), r.output
    assert started == []
