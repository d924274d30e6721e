"""``history.txt`` of an app run (docs/APPS.md) on hand-written app histories (no cluster): the
feeder's records with their keys, the contract as compact JSON, the inputs the ``expect`` lines
cover, the records the reads of the app's output got (``app_outputs``, not ``reads``) with theirs,
``null`` for a null key or value, the same from Parquet as from the JSON lines, and the
``app-ready`` / ``app-exit`` lines naming where their values are."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.history import store, text
from harness.history.builder import History
from harness.history.model import APP_EXIT, APP_READY, INFO, OK
from harness.workloads.app_wrapper import KILLED_AT_STOP
from tests.unit.histories import app_map
from tests.unit.test_report import make_run

#: the instances' wrappers: app-0 ready, killed by a fault and ready again, stopped at the end; app-1
#: ready, and killed at stop after ignoring SIGTERM
WRAPPERS = [("app-0.0", APP_READY, OK, {"how": "log line matched 'started': started"}),
            ("app-1.0", APP_READY, OK, {"how": "log line matched 'started': started"}),
            ("app-0.1", APP_READY, OK, {"how": "log line matched 'started': started"}),
            ("app-0.1", APP_EXIT, INFO, {"code": 0, "signal": None, "after_ready": True, "stopped": True}),
            ("app-1.0", APP_EXIT, INFO, {"code": -9, "signal": "SIGKILL", "after_ready": True, "stopped": True,
                                         "killed_after_s": 2.0})]
#: the app's scenario entry as the journal's resolved scenario has it
SETTINGS = {"command": ["{python}", "app.py", "--out", "{topic:out}"], "inputs": ["in"], "outputs": ["out"],
            "contract": {"kind": "map", "function": "tests.apps:twice", "order": "per-key"},
            "ready": {"log": "started"}, "stop_timeout_s": 2, "drain_s": 30}
#: what the runner's journal says of the app
FACTS = {"restarted_for_drain": ["app-1"],
         "drain": {"drained": False, "how": "not within drain_s 30s", "took_s": 30.4, "last": {"outputs_open": True}},
         "exits": {"app-0": 0, "app-1": KILLED_AT_STOP}, "outputs_read": 21,
         "function_error": "contract function tests.apps:twice: ValueError: no answer for i9"}
#: a kill of app-0 over the whole hand-written history (its ops are 1 ms apart)
KILL_APP_0 = [(0.0, {"kind": "kill-workload", "phase": "start", "workload": "app-0"}),
              (1.0, {"kind": "kill-workload", "phase": "stop", "workload": "app-0"})]


def with_wrappers(h: History) -> History:
    """``h`` with the instances' ``app-ready`` / ``app-exit`` events, among its ops."""
    for k, (process, f, type_, value) in enumerate(WRAPPERS):
        h.ops.append({"time": (k + 1) * 3000 + 500, "process": process, "type": type_, "f": f, "value": value})
    return h


def app_run(root: Path, h: History, name: str, facts: dict[str, Any] | None = None) -> Path:
    """A run folder of an app run: the history, the journal's app facts (``FACTS`` by default), the
    instances' logs."""
    run = make_run(root, name=name, faults=KILL_APP_0, history=with_wrappers(h),
                   journal_fields={"resolved": {"name": name, "duration": 10.0,
                                                "workloads": [{"kind": "app", "count": 2, "settings": SETTINGS}]},
                                   "app": FACTS if facts is None else facts})
    (run / "workloads").mkdir()
    for log in ("app-0", "app-1", "app-feeder", "app-reader"):
        (run / "workloads" / f"{log}.log").write_text(f"[eos-chaos] starting {log}\n")
    return run


def history_lines(run: Path, batch: int, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.setattr(text, "BATCH", batch)
    return text.write_history_text(run, store.load(run)).read_text().splitlines()


def line(lines: list[str], *parts: str) -> str:
    """The first line that has every one of ``parts``."""
    found = [ln for ln in lines if all(p in ln for p in parts)]
    assert found, (parts, "\n".join(lines))
    return found[0]


# ---- history.txt

@pytest.mark.parametrize("batch", [text.BATCH, 3])
def test_history_txt_shows_the_apps_keys_contract_expectations_and_output_records(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch: int) -> None:
    """3 ops a batch: an op's records and a final scan span batches of the tables they come from."""
    lines = history_lines(app_run(tmp_path, app_map("duplicate", function=True), "txt"), batch, monkeypatch)
    assert "topic-partition@offset[key]=value" in lines[1]  # the header says how a keyed record reads
    # the feeder's records with their keys; the invoke has no offsets yet
    assert line(lines, "app-feeder.0", " invoke ", " txn ").endswith(" in-0[k0]=i1 in-1[k1]=i2")
    assert line(lines, "app-feeder.0", " ok ", " txn ").endswith(" in-0@0[k0]=i1 in-1@0[k1]=i2")
    assert line(lines, "runner", "app-contract").endswith(
        ' {"app":"app","contract":"map","inputs":["in"],"outputs":["out"],"function":"tests.apps:twice","order":"per-key"}')
    assert line(lines, "runner", "expect").endswith(" app app: 8 inputs")  # i1..i8, i4 yielding nothing included
    # the output reader's poll and the final scans of the output: the app_outputs table, with keys
    assert line(lines, "app-reader.0", " ok ", " poll ").endswith(" out-0@0[k0]=i1:a")
    committed, uncommitted = [ln for ln in lines if "final" in ln and " scan " in ln and "out-" in ln]
    assert committed.endswith(" out-0@0[k0]=i1:a out-0@2[k0]=i1:b out-0@4[k0]=i3:a out-0@6[k0]=i3:b "
                              "out-0@8[k0]=i7:a out-0@10[k0]=i7:b (+3 more)")  # i3:a twice: at 4 and at 20
    assert uncommitted.endswith("(+5 more)")
    # the input's scans are reads, as ever: no key
    assert line(lines, "final", "scan", "in-0@0=i1")
    # the wrappers' events: their values are in no table; the line says where they are
    assert line(lines, "app-1.0", " info ", " app-exit ").endswith(" (its value: history/app-1.jsonl)")
    assert len([ln for ln in lines if " app-ready " in ln]) == 3


def test_history_txt_reads_the_same_from_parquet_and_from_the_lines_and_says_null(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    h = app_map(function=True)
    h.app_poll("app-reader.0", "app", {"out-1": [(40, None, None), (41, "v", None)]})  # a tombstone, a null key
    run = app_run(tmp_path, h, "nulls")
    from_parquet = history_lines(run, 4, monkeypatch)
    ops, truncated = store.read_ops(run)
    from_lines = text.write_history_text(run, store.flatten(ops, truncated)).read_text().splitlines()
    assert from_parquet == from_lines
    assert line(from_lines, "app-reader.0", "out-1@40").endswith(" out-1@40[null]=null out-1@41[null]=v")


def test_expect_lines_say_which_of_them_they_are_when_there_are_several(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    h = app_map(function=True)
    h.expect("app", [("i9", [("out", "k1", "i9:a")])])
    lines = history_lines(app_run(tmp_path, h, "expects"), text.BATCH, monkeypatch)
    said = [ln for ln in lines if " expect " in ln]
    assert [ln.split("expect", 1)[1].strip() for ln in said] == [
        "app app: 9 inputs over 2 expect lines (this one: 1 of 2)", "app app: 9 inputs over 2 expect lines (this one: 2 of 2)"]


def test_an_app_stray_line_names_the_topics_written_undeclared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = history_lines(app_run(tmp_path, app_map("undeclared"), "stray"), text.BATCH, monkeypatch)
    assert line(lines, "runner", " app-stray ").endswith(' {"app":"app","topics":{"audit-log":1}}')
