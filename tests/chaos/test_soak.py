"""``eos-chaos soak`` on the test session's cluster (it attaches to the cluster that is up):
runs with seeds drawn from the master seed, every run folder kept with its report, soak.json and
soak.html written; and SIGTERM in the middle of a run ends the soak healed, summary written.
Local backend only: the soak is backend-independent, the runner under it is tested on both."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from clusters.backends.protocol import Cluster
from harness.base.wait import wait_until
from harness.campaigns.soak import seeds

pytestmark = pytest.mark.chaos
SOAK_TIMEOUT_S = 600


def soak(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "harness", "soak", "--backend", "local", "--out", str(tmp_path / "soak"),
                             *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            stdin=subprocess.DEVNULL, env={**os.environ, "CI": "true"})


def local_only(cluster: Cluster) -> None:
    if cluster.backend != "local":
        pytest.skip("the soak is backend-independent; the runner under it runs on both backends elsewhere")


# in `make library` since the app scenarios came into `make test` (40 s): the seeds' drawing is unit-tested
# (tests/unit/test_soak.py), and a soak on a real cluster stays in `make test` through the SIGTERM test below
@pytest.mark.library
def test_soak_repeats_with_seeds_from_the_master_seed(cluster: Cluster, tmp_path: Path) -> None:
    local_only(cluster)
    proc = soak(tmp_path, "--scenarios", "baseline", "--runs", "2", "--duration", "15", "--seed", "5")
    output, _ = proc.communicate(timeout=SOAK_TIMEOUT_S)
    assert proc.returncode == 0, output[-3000:]
    summary = json.loads((tmp_path / "soak" / "soak.json").read_text())
    draw = seeds(5)
    assert [r["seed"] for r in summary["runs"]] == [draw(), draw()]
    assert summary["totals"]["runs"] == 2 and summary["totals"]["as_expected"] == 2, summary["totals"]
    assert summary["healed_at_end"] is True and summary["stopped_because"] == "2 runs done"
    page = (tmp_path / "soak" / "soak.html").read_text()
    for r in summary["runs"]:
        run_dir = Path(r["run_dir"])
        assert run_dir.parent == tmp_path / "soak" and (run_dir / "report.html").exists()
        assert f'href="{run_dir.name}/report.html"' in page


def test_sigterm_mid_run_ends_the_soak_healed_with_its_summary(cluster: Cluster, tmp_path: Path) -> None:
    local_only(cluster)
    proc = soak(tmp_path, "--scenarios", "baseline", "--runs", "3", "--duration", "40", "--seed", "6")
    folder = tmp_path / "soak"

    def committing() -> bool:  # the first run's producer has committed transactions
        return any(b'"type":"ok","f":"txn"' in p.read_bytes() for p in folder.glob("*/history/txn-producer-*.jsonl"))

    try:
        wait_until(committing, timeout=300, what="the soak's first run to commit transactions",
                   state=lambda: f"files: {[str(p.relative_to(folder)) for p in folder.glob('*/history/*')]}")
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=SOAK_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, output[-3000:]
    summary = json.loads((folder / "soak.json").read_text())
    assert summary["stopped_because"] == "interrupted" and summary["healed_at_end"] is True, summary
    assert len(summary["runs"]) == 1 and summary["runs"][0]["interrupted"] is True, summary["runs"]
    assert (folder / "soak.html").exists()
