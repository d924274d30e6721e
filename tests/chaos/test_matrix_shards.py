"""Issue 40's shards on real clusters: a 2 scenario x 1 client x 2 seed matrix (``baseline``, valid,
and the negative control ``negative-duplicates``, a finding in every run: outcomes that do not depend
on timing), 15 s a run, run unsharded, then as shards 1/2 and 2/2 side by side, each with a state
folder and a port base of its own (two local clusters at once), then merged. The merged cells, runs
and seeds equal the unsharded run's; the merge is exit 1 with the finding's replay; every run's
report is in the merged folder; nothing is left up. About 4 min on the 2-core machine: library."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from clusters.backends import procs

pytestmark = [pytest.mark.chaos, pytest.mark.library]
REPO = Path(__file__).resolve().parents[2]
TIMEOUT_S = 600
FLAGS = ["--scenarios", "baseline,negative-duplicates", "--clients", "confluent-kafka", "--seeds", "2", "--seed", "11",
         "--duration", "15", "--backend", "local"]
#: Port bases clear of the session's (19092, and 100 more per xdist worker) and of test_matrix.py's Go matrix
PORT_BASES = {"whole": 19692, "1": 19792, "2": 19892}


def env_for(tmp_path: Path, name: str) -> dict[str, str]:
    return {**os.environ, "CI": "true", "PYTHONPATH": str(REPO), "EOS_CHAOS_STATE": str(tmp_path / f"state-{name}"),
            "EOS_CHAOS_PORT_BASE": str(PORT_BASES[name])}


def eos_chaos(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "harness", *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, stdin=subprocess.DEVNULL, env=env)


def finished(proc: subprocess.Popen[str]) -> tuple[int, str]:
    out, _ = proc.communicate(timeout=TIMEOUT_S)
    return proc.returncode, out


def comparable(data: dict[str, Any]) -> tuple[Any, ...]:
    """What a matrix says, without when, how long, or the run folders' random names."""
    cells = [{k: v for k, v in c.items() if k not in ("seconds", "first_failing")} for c in data["cells"]]
    # as_expected also weighs expectations on throughput, which a loaded machine misses now and then: the verdict is the outcome
    runs = sorted((r["scenario"], r["client"], r["index"], r["seed"], r["valid"], sorted(r["anomalies"])) for r in data["runs"])
    return data["definition"], data["run_seeds"], data["totals"], cells, runs


def test_two_shards_side_by_side_merge_to_the_unsharded_cells(tmp_path: Path) -> None:
    code, out = finished(eos_chaos("matrix", *FLAGS, "--out", str(tmp_path / "whole"), env=env_for(tmp_path, "whole")))
    assert code == 1, out[-3000:]
    shards = {i: eos_chaos("matrix", *FLAGS, "--shard", f"{i}/2", "--out", str(tmp_path / f"shard-{i}"),
                           env=env_for(tmp_path, str(i))) for i in (1, 2)}
    done = {i: finished(p) for i, p in shards.items()}
    # the cut: baseline's two runs in shard 1, the negative control's in shard 2
    assert done[1][0] == 0 and done[2][0] == 1, (done[1][1][-2000:], done[2][1][-2000:])
    merged = tmp_path / "merged"
    proc = subprocess.run([sys.executable, "-m", "harness", "matrix", "merge", str(tmp_path / "shard-1"),
                           str(tmp_path / "shard-2"), "--out", str(merged)], capture_output=True, text=True,
                          env=env_for(tmp_path, "whole"), timeout=120)
    assert proc.returncode == 1 and "replay: " in proc.stdout, proc.stdout + proc.stderr
    data = json.loads((merged / "matrix.json").read_text())
    whole = json.loads((tmp_path / "whole" / "matrix.json").read_text())
    assert comparable(data) == comparable(whole)
    assert [c["state"] for c in data["cells"]] == ["valid", "invalid"] and data["healed_at_end"] is True
    assert data["merged"]["missing"] == [] and [s["runs"] for s in data["merged"]["shards"]] == [2, 2]
    for run in data["runs"]:
        assert (merged / run["run_dir"] / "report.html").is_file(), run["run_dir"]
    for name in ("whole", "1", "2"):
        folder = procs.same_folder(tmp_path / f"state-{name}")
        assert not [t for t in procs.tagged_processes() if t.state == folder], f"a process of {name} is still up"
