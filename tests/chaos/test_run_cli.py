"""`eos-chaos run` and `eos-chaos check` through the real CLI: exit codes, the run folder, and bad
input (unknown scenario, a folder without history, a history cut off mid-line)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.chaos.cli_helpers import run

pytestmark = pytest.mark.chaos

ALT_PORT_BASE = 19292  # its own cluster, away from the session cluster's ports


def test_unknown_scenario_lists_the_known_ones(iso_env: dict[str, str]) -> None:
    r = run(["run", "no-such-scenario"], iso_env)
    assert r.returncode == 2 and "unknown scenario 'no-such-scenario'" in r.stderr and "txn-baseline" in r.stderr, r.stderr


def test_check_of_a_folder_without_history_is_a_clear_error(iso_env: dict[str, str], tmp_path: Path) -> None:
    r = run(["check", str(tmp_path)], iso_env)
    assert r.returncode == 2 and "has no history" in r.stderr, r.stderr
    r = run(["check", str(tmp_path / "nope")], iso_env)
    assert r.returncode == 2 and "does not exist" in r.stderr, r.stderr


def test_run_exits_1_on_a_negative_control_and_check_agrees_even_on_a_cut_history(iso_env: dict[str, str],
                                                                                   tmp_path: Path) -> None:
    out = tmp_path / "run"
    r = run(["run", "negative-aborted-read", "--backend", "local", "--port-base", str(ALT_PORT_BASE),
             "--duration", "15", "--seed", "7", "--out", str(out)], iso_env, timeout=600)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "INVALID" in r.stdout and "aborted-read" in r.stdout and str(out) in r.stdout
    verdict = json.loads((out / "verdict.json").read_text())
    assert verdict["valid"] is False and verdict["checks"]["aborted-read"]["count"] > 0
    assert set(verdict["checks"]) >= {"duplicate", "lost-write", "zombie-commit", "copy-exactly-once"}
    assert json.loads((out / "scenario.json").read_text())["seed"] == 7
    assert (out / "history.parquet").is_dir() and list((out / "nodes").glob("n*/server.log"))

    # The checker again, from the JSON lines alone, with the reader's file cut off mid-line.
    cut = tmp_path / "cut"
    shutil.copytree(out / "history", cut / "history")
    reader = cut / "history" / "reader-0.jsonl"
    data = reader.read_bytes()
    reader.write_bytes(data[: len(data) - 7])
    c = run(["check", str(cut)], iso_env)
    assert c.returncode == 1, c.stdout + c.stderr
    again = json.loads((cut / "verdict.json").read_text())
    assert again["history"]["truncated"] == ["reader-0.jsonl"] and again["checks"]["aborted-read"]["count"] > 0
    assert "last whole line" in c.stdout
