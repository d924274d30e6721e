"""``eos-chaos bench app``'s shaped feeder (issue 39: the feeder's extra when the user shapes the
input): its generator checked before any cluster starts (exit 2 naming ``--generator``), put on
the run's fresh input topic, and its figures printed beside the plain feeder's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.apps.generators import LINES
from harness.base.errors import ConfigError
from harness.bench.app_bench import _on, shaped_feed
from harness.workloads.registry import Feed, TxnProducerSettings


def test_the_shaped_feed_puts_the_generator_on_the_runs_fresh_input_topic() -> None:
    feed = shaped_feed(LINES)
    settings = _on(feed)(["bench-app-in.1a2b", "other"])
    made = Feed.model_validate(settings["feed"])
    assert list(made.inputs) == ["bench-app-in.1a2b"] and made.inputs["bench-app-in.1a2b"].generator == LINES
    assert made.path == str(Path.cwd())
    TxnProducerSettings.model_validate({"values_per_txn": 10, **settings})  # the feeder takes it as its setting


@pytest.mark.parametrize("generator, says", [("harness.apps.generators:nosuch", "nosuch"),
                                             ("no_such_module_here:f", "no_such_module_here"),
                                             ("harness.apps.generators:lines_of_nothing", "lines_of_nothing")])
def test_a_generator_that_cannot_be_used_is_refused_naming_the_flag(generator: str, says: str) -> None:
    with pytest.raises(ConfigError, match=f"--generator {generator}: .*{says}"):
        shaped_feed(generator)


def test_the_command_refuses_a_bad_generator_before_any_cluster_and_prints_the_shaped_figure(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from harness.cli import app
    from harness.cli import bench as cli_bench

    started: list[Any] = []
    monkeypatch.setattr(cli_bench, "_on_one_cluster", lambda *a, **kw: started.append(a) or RESULT)
    runner = CliRunner(env={"COLUMNS": "400", "TERMINAL_WIDTH": "400"})
    r = runner.invoke(app, ["bench", "app", "--generator", "harness.apps.generators:nosuch"])
    assert r.exit_code == 2 and "--generator harness.apps.generators:nosuch" in r.output and started == [], r.output
    r = runner.invoke(app, ["bench", "app", "--runs", "2"])
    assert r.exit_code == 0 and len(started) == 1, r.output
    assert f"shaped feeder ({LINES}), the same otherwise" in r.output
    assert "the shaped feeder's cost: 12.5% fewer committed values/s than the plain feeder (medians)" in r.output
    # a noisy machine: the shaped feeder the faster, said as such (it read "-10.3% fewer")
    faster = {**RESULT, "feeder": {**RESULT["feeder"], "shaped": {**RESULT["feeder"]["shaped"], "extra_pct": -10.3}}}
    monkeypatch.setattr(cli_bench, "_on_one_cluster", lambda *a, **kw: faster)
    r = runner.invoke(app, ["bench", "app", "--runs", "2"])
    assert "the shaped feeder's cost: 10.3% more committed values/s than the plain feeder (medians)" in r.output, r.output


RESULT = {"feeder": {"values_per_s": [160.0, 160.0], "median_values_per_s": 160.0,
                     "shaped": {"generator": LINES, "values_per_s": [140.0, 140.0], "median_values_per_s": 140.0,
                                "extra_pct": 12.5}},
          "copy": {"alone_s": [10.0, 10.0], "harnessed_s": [10.1, 10.1], "overhead_pct": 1.0,
                   "alone_records_per_s": 2000, "harnessed_records_per_s": 1980}}
