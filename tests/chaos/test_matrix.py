"""``eos-chaos matrix`` on the test session's cluster (the default transaction version runs on the
cluster that is up): a 2-cell x 1-seed matrix, ``baseline`` (valid) and the negative control
``negative-aborted-read`` (a finding), 10 s each on confluent-kafka. matrix.json and matrix.html
are written, the finding is exit 1 with its replay command and report, and the same command again
resumes with nothing left to run. Local backend only: the matrix is backend-independent, the runner
under it runs on both backends elsewhere."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clusters.backends.protocol import Cluster
from clusters.builds.pins import KAFKA_VERSION
from harness.campaigns.soak import seeds

pytestmark = pytest.mark.chaos
MATRIX_TIMEOUT_S = 400
REPO = Path(__file__).resolve().parents[2]
#: The Go matrix's clusters' port base: clear of the session's (19092, and 100 more per xdist worker)
GO_MATRIX_PORT_BASE = 19592
#: What a read_uncommitted reader of committing and aborting producers can show, and nothing else
READ_UNCOMMITTED = {"aborted-read", "precommitted-read", "g1c"}


def matrix(out: Path) -> subprocess.CompletedProcess[str]:
    # run from the folder above ``out`` with a relative --out, as a user types it: nothing the
    # matrix hands its processes may depend on the working directory
    return subprocess.run([sys.executable, "-m", "harness", "matrix", "--scenarios", "baseline,negative-aborted-read",
                           "--clients", "confluent-kafka", "--seeds", "1", "--seed", "3", "--duration", "10",
                           "--backend", "local", "--out", out.name],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL,
                          cwd=out.parent, env={**os.environ, "CI": "true", "PYTHONPATH": str(REPO)},
                          timeout=MATRIX_TIMEOUT_S)


@pytest.mark.library  # make test's matrix is the Go one below: a finding, its replay and report, resume
def test_a_two_cell_matrix_writes_its_grid_and_a_finding_is_exit_1(cluster: Cluster, tmp_path: Path) -> None:
    if cluster.backend != "local":
        pytest.skip("the matrix is backend-independent; the runner under it runs on both backends elsewhere")
    out = tmp_path / "matrix"
    proc = matrix(out)
    assert proc.returncode == 1, proc.stdout[-3000:]
    data = json.loads((out / "matrix.json").read_text())
    seed = seeds(3)()
    assert data["run_seeds"] == [seed] and data["totals"] == {"runs": 2, "wanted": 2, "not_run": 0, "valid": 1, "invalid": 1, "unknown": 0}
    assert data["healed_at_end"] is True and data["stopped_because"] == "every run done"
    ok, bad = data["cells"]
    assert (ok["scenario"], ok["state"], ok["transaction_version"], ok["first_failing"]) == ("baseline", "valid", None, None)
    assert (bad["scenario"], bad["state"], bad["reproduction_rate"]) == ("negative-aborted-read", "invalid", 1.0)
    assert bad["checks"]["aborted-read"]["runs"] == 1 and bad["checks"]["aborted-read"]["anomalies"] > 0
    first = bad["first_failing"]
    assert first["seed"] == seed and f"eos-chaos run negative-aborted-read --backend local --seed {seed}" in first["replay"]
    assert first["replay"].endswith("--library confluent-kafka") and "replay: " + first["replay"] in proc.stdout
    assert (out / first["report"]).exists()
    page = (out / "matrix.html").read_text()
    assert 'class="cell valid"' in page and 'class="cell invalid"' in page and f'href="{first["report"]}"' in page
    again = matrix(out)  # resume: nothing left to run, no cluster touched, the same verdict
    assert again.returncode == 1 and "2/2 runs" in again.stdout, again.stdout[-3000:]
    assert json.loads((out / "matrix.json").read_text())["sessions"] == 2


# make test runs the matrix over one Kafka release (the session's): over two it starts a second
# cluster and fetches 4.3.1 cold, ~60 s more (the suite's 30-minute budget); make library runs both
@pytest.mark.parametrize("kafka_versions", [pytest.param([KAFKA_VERSION], id="one-release"),
                                            pytest.param(["4.3.1", "4.4.0"], id="two-releases", marks=pytest.mark.library)])
def test_a_matrix_over_kafka_versions_and_both_go_clients(cluster: Cluster, tmp_path: Path,
                                                          kafka_versions: list[str]) -> None:
    """Issue 30 at unit size: the negative control ``negative-aborted-read`` for 8 s over Kafka 4.3.1
    and 4.4.0 (the pinned release alone in make test), on franz-go and sarama. Each Go bridge is built on first need (cold in CI: the Go
    standard library is in the build cache from Toxiproxy's build already), 4.3.1 is fetched once,
    and the matrix starts a cluster per Kafka version beside the session's, which it neither sees
    nor touches (a state folder and a port base of its own). In every cell the Go producers commit
    and the Go reader, told read_uncommitted, reads aborted values: aborted-read fires (with what
    else reading uncommitted records shows, and nothing more), so
    the matrix is exit 1 with each cell's replay command and report; each run records its Kafka and
    client releases; the same command again resumes with nothing left to run."""
    if cluster.backend != "local":
        pytest.skip("the matrix is backend-independent; the runner under it runs on both backends elsewhere")
    from harness.workloads.clients import DEFAULT_FRANZ_VERSION, DEFAULT_SARAMA_VERSION

    out = tmp_path / "go-matrix"
    env = {**os.environ, "CI": "true", "PYTHONPATH": str(REPO), "EOS_CHAOS_STATE": str(tmp_path / "state"),
           "EOS_CHAOS_PORT_BASE": str(GO_MATRIX_PORT_BASE)}

    def go_matrix() -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "harness", "matrix", "--scenarios", "negative-aborted-read",
                               "--kafka-versions", ",".join(kafka_versions), "--clients", "franz-go,sarama", "--seeds", "1",
                               "--seed", "5", "--duration", "8", "--backend", "local", "--out", str(out)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL,
                              env=env, timeout=MATRIX_TIMEOUT_S * 2)

    proc = go_matrix()
    assert proc.returncode == 1, proc.stdout[-3000:]
    data = json.loads((out / "matrix.json").read_text())
    n = 2 * len(kafka_versions)
    assert data["totals"] == {"runs": n, "wanted": n, "not_run": 0, "valid": 0, "invalid": n, "unknown": 0}
    assert data["healed_at_end"] is True and data["definition"]["kafka_versions"] == kafka_versions
    releases = {"franz-go": DEFAULT_FRANZ_VERSION, "sarama": DEFAULT_SARAMA_VERSION}
    clients = [f"{name}@{version}" for name, version in releases.items()]  # the matrix names them resolved
    cells = {(c["kafka_version"], c["client"]): c for c in data["cells"]}
    assert set(cells) == {(kv, c) for kv in kafka_versions for c in clients}
    for (kv, client), cell in cells.items():
        # reading uncommitted records: aborted ones, and committed ones before their commit (a read
        # ahead of its writer's commit is also a G1c), nothing a producer's own commits could show
        assert (cell["state"], cell["reproduction_rate"]) == ("invalid", 1.0), cell
        assert "aborted-read" in cell["checks"] and set(cell["checks"]) <= READ_UNCOMMITTED, cell["checks"]
        first = cell["first_failing"]
        assert f"--kafka-version {kv}" in first["replay"] and first["replay"].endswith(f"--library {client}"), first
        assert (out / first["report"]).exists() and "replay: " + first["replay"] in proc.stdout
    for run in data["runs"]:
        folder = out / run["run_dir"]
        journal = json.loads((folder / "journal.json").read_text())
        verdict = json.loads((folder / "verdict.json").read_text())
        name, _, version = run["client"].partition("@")
        assert journal["kafka_version"] == run["kafka_version"], run
        assert journal["versions"]["clients"] == {name: version}, journal["versions"]
        assert verdict["stats"]["txn"]["ok"] > 0, (run, verdict["stats"]["txn"])  # the Go producers committed
    assert not list((tmp_path / "state").glob("*.json")), "a matrix cluster is still recorded as up"
    again = go_matrix()  # resume: nothing left to run, no cluster started, the same verdict
    assert again.returncode == 1 and f"{n}/{n} runs" in again.stdout, again.stdout[-3000:]
    assert json.loads((out / "matrix.json").read_text())["sessions"] == 2
