"""The ``app_under_test`` fixture: your own exactly-once application put under faults on the session's
cluster and judged by the contract its output must keep (docs/APPS.md), in a few lines of a test.

The scenario it builds is written next to the run's results as YAML, so that the re-run command
(``eos-chaos run THAT.yaml --seed N``) runs the same app the same way from a shell."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.pytest_plugin import EosOptions, ScenarioResult, _slug, run_on_session_cluster

#: The faults an app gets unless a test names its own, at shares of the run's duration: its
#: instances killed -9 (restarted after 3 s), a partition leader of its first output killed, then
#: its instances paused, then 300 ms on the clients' links.
DEFAULT_FAULTS: list[tuple[float, dict[str, Any]]] = [
    (0.15, {"kind": "kill-workload", "workload": "app", "duration": 3}),
    (0.35, {"kind": "kill", "target": "leader", "duration": 5}),
    (0.55, {"kind": "pause-workload", "workload": "app", "duration": 3}),
    (0.7, {"kind": "latency", "target": "all", "listeners": "client", "params": {"latency_ms": 300}, "duration": 5}),
]


def app_scenario(name: str, command: list[str], inputs: list[str], outputs: list[str], contract: dict[str, Any],
                 ready: dict[str, Any], instances: int = 1, duration: float = 40, faults: list[dict[str, Any]] | None = None,
                 valid: bool = True, partitions: int = 3, cwd: Path | None = None,
                 topics: list[str | dict[str, Any]] | None = None, **settings: Any) -> dict[str, Any]:
    """The scenario (as YAML would hold it) of an app under test: ``command`` run as ``instances``
    instances, fed ``inputs``, judged on ``outputs`` by ``contract``, under ``faults`` (default
    ``DEFAULT_FAULTS``, the leader kill on ``outputs[0]``); ``topics``: the scenario's topic entries
    (default: ``inputs`` then ``outputs``, by name; a mapping keeps a name or gives a topic its own
    partitions or config); ``settings`` are the app's other settings (``env``, ``feeder``, ``drain_s``, ...)."""
    if faults is None:
        faults = [{"at": round(share * duration, 1), **f, **({"of": f"{outputs[0]}/0"} if f["kind"] == "kill" else {})}
                  for share, f in DEFAULT_FAULTS]
    app = {"command": list(command), "inputs": list(inputs), "outputs": list(outputs), "contract": contract,
           "ready": ready, **({"cwd": str(cwd)} if cwd is not None else {}), **settings}
    return {"name": name, "description": f"{name}: an app under test (docs/APPS.md)", "duration": duration,
            "partitions": partitions, "topics": list(topics) if topics is not None else [*inputs, *outputs],
            "workloads": [{"kind": "app", "count": instances, "settings": app}], "faults": faults,
            "expect": {"valid": valid}}


@pytest.fixture
def app_under_test(kafka_cluster: Any, eos_options: EosOptions, request: pytest.FixtureRequest) -> Callable[..., ScenarioResult]:
    """``app_under_test(command=[...], inputs=[...], outputs=[...], contract={...}, ready={...},
    instances=1, duration=40, faults=None, topics=None, seed=None, **settings)``: run your app under faults on the
    session's cluster and return its ``ScenarioResult`` (``.valid``, ``.report``, ``.check_expected()``).
    The command's placeholders (``{bootstrap}``, ``{topic:NAME}``, ``{id}``, ``{instance}``, ...) are
    filled per instance; a relative working folder is the test file's folder."""

    def run(*, seed: int | None = None, name: str | None = None, **kwargs: Any) -> ScenarioResult:
        from pydantic import ValidationError

        from harness.base.paths import results_dir
        from harness.run import scenario

        name = name or f"app-{_slug(request.node.name)}"
        kwargs.setdefault("cwd", Path(request.path).parent)
        fields = app_scenario(name, **kwargs)
        if eos_options.duration:
            fields["duration"] = eos_options.duration
        try:
            sc = scenario.Scenario.model_validate(fields)
        except ValidationError as exc:
            raise pytest.UsageError(f"app_under_test({name}): " + "; ".join(scenario.problems(exc, fields))) from None
        path = results_dir() / "scenarios" / f"{name}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(fields, sort_keys=False))
        return run_on_session_cluster(sc, str(path), seed, kafka_cluster, eos_options, request)

    return run
