"""A user's functions named in an app's settings (a map contract's ``function``; tomorrow ``by``,
``model``, a join's ``function``, the feeder's ``generator``: docs/APPS.md), run in a child process
(``harness.workloads.app_function``: the runner never runs user code) and tried before anything
starts on sample inputs shaped as the run's will be: one that cannot be imported, raises, returns
the wrong shape, or names a topic that is not one of the app's outputs is refused then (exit 2
naming the setting, the function and the sample input), not after the run as an unknown verdict, or
as thousands of ``app-map`` findings.

``SETTINGS`` is the table: a row per setting that names a function (where in the settings, which
form of ``app_function.FORMS`` it is called by, the sample inputs); adding a function is a row here
and a form there. The feeder's generators are a row too, tried their own way (``check_feed``: the
feeder's child checks its records as it will write them), and first: when the user shapes the input,
the functions are tried on the generators' own first records (a records file's first lines), since
samples of the harness's making would not be what the app reads (a word count's lines)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from harness.base.errors import ConfigError
from harness.history.model import AGGREGATE, APP_FEEDER, IDENTITY, MAP
from harness.history.schema import window_key_function
from harness.phases import app_expect
from harness.workloads.registry import AppSettings

#: Sample inputs per input topic the preflight tries a function on: a few keys, a few values.
SAMPLES_PER_TOPIC = 3


def apply_function(function: str, inputs: list[Any], cwd: Path, form: str = "map",
                   outputs: Sequence[str] = ()) -> list[Any]:
    """``function`` called on each of ``inputs`` as ``form`` (a mode of ``app_function``) says, in the
    runner's child process (``app_expect.apply_function``): its answers, or ``ConfigError`` naming the
    function and the input."""
    return app_expect.apply_function(function, inputs, cwd, form, list(outputs) if outputs else None)


def sample_records(s: AppSettings) -> list[dict[str, Any]]:
    """Input records as the feeder writes them and a function is given them (scenario topic names):
    per input topic, a few keys, values as the feeder makes them (integers for an aggregate or long
    values, else ``<feeder>-<seq>-<k>`` text)."""
    numbers = s.contract.kind == AGGREGATE or s.feeder.value_serde == "long"
    return [{"topic": t, "partition": 0, "offset": k, "key": f"k{k % s.feeder.keys}",
             "value": str(k + 1) if numbers else f"{APP_FEEDER}.0-0-{k}", "timestamp": 0, "headers": {}}
            for t in s.inputs for k in range(SAMPLES_PER_TOPIC)]


def _records(s: AppSettings, records: list[dict[str, Any]]) -> list[Any]:
    """A per-record function's samples: the records themselves."""
    return records


def _by_topic(s: AppSettings, records: list[dict[str, Any]]) -> list[Any]:
    """A model's one sample: every input topic's sample records."""
    return [{t: [r for r in records if r["topic"] == t] for t in s.inputs}]


def _join_pairs(s: AppSettings, records: list[dict[str, Any]]) -> list[Any]:
    """A join function's samples: each stream sample without a table value, and with the table's of its key."""
    table = {r["key"]: r for r in records if r["topic"] == s.contract.table}
    return [[r, v] for r in records if r["topic"] == s.contract.stream for v in (None, table.get(r["key"]))]


def check_feed(s: AppSettings, cwd: Path) -> list[dict[str, Any]]:
    """The input records the feeder's generators make first (``SAMPLES_PER_TOPIC`` each, seq 0 up;
    a records file's first lines) as a function is given them, and the harness's own samples of
    the inputs the user does not shape; ``ConfigError`` naming the function and its sample, or
    ``file:line``, when a generator cannot be imported, raises or returns the wrong shape on one, or
    a records file is missing or has a bad line: in a child process (the user's code never runs in
    the runner), before anything starts."""
    if not s.feeder.shaped():
        return sample_records(s)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        f.write(orjson.dumps(s.feed()).decode())
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(cwd), *filter(None, [os.environ.get("PYTHONPATH")])])}
    try:
        done = subprocess.run([sys.executable, "-m", "harness.workloads.feed", f.name, str(SAMPLES_PER_TOPIC)],
                              capture_output=True, cwd=cwd, env=env, timeout=app_expect.FUNCTION_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise ConfigError(f"app setting feeder: its generators gave no sample within {app_expect.FUNCTION_TIMEOUT_S:.0f}s") from None
    finally:
        os.unlink(f.name)
    if done.returncode != 0:
        err = done.stderr.decode(errors="replace").strip().splitlines()
        raise ConfigError(f"app setting feeder: {err[-1] if err else f'its check exited {done.returncode}'}")
    made = [orjson.loads(line) for line in done.stdout.splitlines() if line.strip()]
    shaped = {r["topic"] for r in made}
    return made + [r for r in sample_records(s) if r["topic"] not in shaped]


@dataclass(frozen=True)
class FunctionSetting:
    """A setting of an app that names a user function: where, how it is called, on what samples."""

    #: the setting as a scenario writes it (the error names it)
    setting: str
    #: the ``module:function`` the settings name (None: none, or one of the harness's own)
    spec: Callable[[AppSettings], str | None]
    #: the form of ``harness.workloads.app_function.FORMS`` that calls it and checks its answer
    form: str
    #: the sample inputs it is tried on, made of the sample input records (``check_feed``'s)
    samples: Callable[[AppSettings, list[dict[str, Any]]], list[Any]]
    #: whether its answers name output topics (then each must be one of the app's outputs)
    names_outputs: bool = True
    #: a setting tried its own way instead (the feeder's generators and records files, in the
    #: feeder's own child process, which gives the sample input records): ``ConfigError`` naming it
    tried: Callable[[AppSettings, Path], list[dict[str, Any]]] | None = None


def _map_function(s: AppSettings) -> str | None:
    return s.contract.function if s.contract.kind == MAP and s.contract.function != IDENTITY else None


def _window_key_function(s: AppSettings) -> str | None:
    return window_key_function(s.contract.window_key) if s.contract.kind == "windowed" else None


def _function_of(kind: str) -> Callable[[AppSettings], str | None]:
    return lambda s: s.contract.function if s.contract.kind == kind else None


#: Every setting that names a user function: one row each.
SETTINGS: tuple[FunctionSetting, ...] = (
    FunctionSetting("contract.function", _map_function, "map", _records),
    FunctionSetting("contract.by", lambda s: s.contract.by, "by", _records),
    FunctionSetting("contract.function", _function_of("model"), "model", _by_topic),
    FunctionSetting("contract.function", _function_of("join"), "join", _join_pairs),
    # a windowed contract's key decoder: imported only (the app's output keys exist only after the run)
    FunctionSetting("contract.window_key", _window_key_function, "window-key", lambda s, r: [], names_outputs=False),
    # the generators (seq 0) and records files of the input the user shapes
    FunctionSetting("feeder", lambda s: "feeder" if s.feeder.shaped() else None, "generator", lambda s, r: [],
                    tried=check_feed),
)


def preflight(s: AppSettings, cwd: Path) -> None:
    """Each function the settings name (``SETTINGS``) tried on its sample inputs (the feeder's own
    first records when the user shapes them, ``check_feed``; tried first, since they are the others'
    samples): ``ConfigError`` (exit 2) naming the setting, the function and the sample input when it
    fails."""
    records = check_feed(s, cwd)
    made_by = "the feeder's generator made" if s.feeder.shaped() else "the preflight made as the feeder writes them"
    for row in SETTINGS:
        spec = row.spec(s)
        if spec is None or row.tried is not None:
            continue
        try:
            apply_function(spec, row.samples(s, records), cwd, row.form, list(s.outputs) if row.names_outputs else ())
        except ConfigError as exc:
            raise ConfigError(f"app setting {row.setting}: {exc} (a sample input {made_by}, before anything "
                              "started)") from None
