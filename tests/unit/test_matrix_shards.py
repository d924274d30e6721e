"""``--shard I/N`` without a cluster: every run in exactly one shard, shares contiguous in run order
and balanced by cost, the same on every machine and whatever the other shards ran; bad flags exit 2;
a shard's folder resumes as the same shard only; a soak's shards take every N-th seed. The runs are
test_matrix.py's fakes (the real command, the real records)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from clusters.backends.backends import Backend
from harness.base.errors import ConfigError
from harness.campaigns import matrix, shards, soak
from harness.campaigns.shards import Shard, parse_shard
from harness.cli import app
from harness.run import runner
from tests.unit.test_cli import WIDE, _restore_logging  # noqa: F401 - the loggers put back after each invocation
from tests.unit.test_matrix import Fakes, _levels_supported, install_fakes  # noqa: F401 - autouse fixture

REPO = Path(__file__).resolve().parents[2]
#: a table of 2 scenarios (40 s and 15 s) x 2 clients x 2 levels x 3 seeds: 24 runs on 2 clusters
TABLE = ["--scenarios", "baseline,leader-kill", "--clients", "confluent-kafka,java@4.4.0", "--transaction-versions", "0,2",
         "--seeds", "3", "--seed", "5", "--duration", "40"]


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Fakes:
    return install_fakes(monkeypatch, tmp_path)


def cli(*args: str) -> Result:
    return CliRunner(env=WIDE).invoke(app, list(args))


def table(seeds: int = 3) -> tuple[matrix.Definition, dict[tuple[str, str], Any]]:
    return matrix.define("baseline,leader-kill", "confluent-kafka,java@4.4.0", "0,2", seeds, 5, Backend.local, 40.0)


# ---- the share ----

@pytest.mark.parametrize("count", [1, 2, 3, 5, 7, 24, 25, 100])
def test_the_shares_cover_every_run_once(count: int) -> None:
    d, scs = table()
    cut = matrix.run_shares(d, scs, count)
    everything = [k for keys in cut for k in keys]
    assert len(cut) == count and sorted(everything) == sorted(d.run_keys()) and len(set(everything)) == len(everything)
    if count > len(d.run_keys()):
        assert sum(not keys for keys in cut) == count - len(d.run_keys()), "a shard with nothing to run is empty, not an error"


def test_shares_are_contiguous_and_balanced_by_cost() -> None:
    keys = list(range(10))
    costs = [100.0, 1, 1, 1, 1, 1, 1, 1, 1, 100]  # two heavy runs at the ends
    assert shards.shares(keys, costs, 2) == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
    assert shards.shares(keys, costs, 3) == [[0], [1, 2, 3, 4, 5, 6, 7, 8], [9]], "a heavy run is a shard of its own"
    d, scs = table()
    order = [k for ks in matrix.groups(d.run_keys(), scs).values() for k in ks]
    for count in (2, 3, 4):
        cut = matrix.run_shares(d, scs, count)
        assert [k for ks in cut for k in ks] == order, "contiguous pieces of the run order"
        cost = [sum(scs[(k.cell.scenario, k.cell.client)].duration + matrix.RUN_OVERHEAD_S for k in ks) for ks in cut]
        biggest_run = max(sc.duration for sc in scs.values()) + matrix.RUN_OVERHEAD_S
        assert max(cost) - min(cost) <= biggest_run, (count, cost)
        assert all(len({(k.cell.kafka_version, k.cell.level) for k in ks}) <= 2 for ks in cut), "few clusters a shard"


def test_every_runner_computes_the_same_shares(fakes: Fakes, tmp_path: Path) -> None:
    d, scs = table()
    here = [[matrix.key_json(k) for k in ks] for ks in matrix.run_shares(d, scs, 3)]
    code = ("import json; from clusters.backends.backends import Backend; from harness.campaigns import matrix\n"
            "d, scs = matrix.define('baseline,leader-kill', 'confluent-kafka,java@4.4.0', '0,2', 3, 5, Backend.local, 40.0)\n"
            "print(json.dumps([[matrix.key_json(k) for k in ks] for ks in matrix.run_shares(d, scs, 3)]))")
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path,
                           env={**os.environ, "PYTHONPATH": str(REPO), "PYTHONHASHSEED": "12345"})
    assert json.loads(other.stdout) == here, "another process (another hash seed, folder) cuts the same shares"
    # and whatever the other shards ran first: shard 3 alone, then shard 1 after shard 2 ran
    assert cli("matrix", *TABLE, "--shard", "3/3", "--out", str(tmp_path / "s3")).exit_code == 0
    assert cli("matrix", *TABLE, "--shard", "2/3", "--out", str(tmp_path / "s2")).exit_code == 0
    assert cli("matrix", *TABLE, "--shard", "1/3", "--out", str(tmp_path / "s1")).exit_code == 0
    for i in (1, 2, 3):
        data = json.loads((tmp_path / f"s{i}" / "matrix.json").read_text())
        assert data["shares"] == here and data["shard"] == {"index": i, "count": 3}
        assert sorted(r[:5] for r in ([r["scenario"], r["client"], r["kafka_version"], r["transaction_version"], r["index"]]
                                      for r in data["runs"])) == sorted(here[i - 1])
        assert data["harness"]["source"] and data["harness"]["eos_chaos"]
    assert len(fakes.runs) == len(d.run_keys()), "each run once over the three shards"


# ---- bad flags and resume ----

@pytest.mark.parametrize("value", ["0/3", "4/3", "x", "1/0", "2", "1/1001", "-1/3", "1/2/3"])
@pytest.mark.parametrize("command", [["matrix", "--scenarios", "baseline"], ["hunt", "--seeds", "1"],
                                     ["soak", "--scenarios", "baseline", "--runs", "2"]])
def test_bad_shard_flags_are_exit_2(value: str, command: list[str], fakes: Fakes, tmp_path: Path) -> None:
    r = cli(*command, "--seed", "1", "--shard", value, "--out", str(tmp_path / "o"))
    assert r.exit_code == 2, r.output
    assert f"--shard {value}" in r.output or f"--shard '{value}'" in r.output, r.output
    assert "give i/N with 1 <= i <= N <= 1000" in r.output and "internal error" not in r.output
    assert fakes.runs == [] and not (tmp_path / "o").exists()


def test_parse_shard_takes_i_of_n() -> None:
    assert parse_shard("2/7") == Shard(2, 7) and parse_shard(" 7 / 7 ") == Shard(7, 7) and parse_shard(None) is None
    with pytest.raises(ConfigError, match="--shard '2of7' is not a shard"):
        parse_shard("2of7")


@pytest.mark.parametrize("command", [["matrix", "--scenarios", "baseline"], ["hunt", "--seeds", "1"],
                                     ["soak", "--scenarios", "baseline", "--runs", "2"]])
def test_a_shard_needs_a_master_seed(command: list[str], fakes: Fakes, tmp_path: Path) -> None:
    r = cli(*command, "--shard", "1/2", "--out", str(tmp_path / "o"))
    assert r.exit_code == 2 and "--shard 1/2 needs --seed" in r.output, r.output
    assert fakes.runs == [] and not (tmp_path / "o").exists()


def test_a_sharded_folder_does_not_grow(fakes: Fakes, tmp_path: Path) -> None:
    out = str(tmp_path / "s")
    assert cli("matrix", *TABLE, "--shard", "1/2", "--out", out).exit_code == 0
    ran = len(fakes.runs)
    grown = cli("matrix", *TABLE[:-4], "--seeds", "4", "--seed", "5", "--duration", "40", "--shard", "1/2", "--out", out)
    assert grown.exit_code == 2 and "is shard 1/2 of another matrix" in grown.output, grown.output
    other = cli("matrix", *TABLE, "--shard", "2/2", "--out", out)
    assert other.exit_code == 2 and "is shard 1/2; resume it with --shard 1/2" in other.output
    whole = cli("matrix", *TABLE, "--out", out)
    assert whole.exit_code == 2 and "is shard 1/2 of a matrix: resume it with --shard 1/2" in whole.output
    again = cli("matrix", *TABLE, "--shard", "1/2", "--out", out)
    assert again.exit_code == 0 and len(fakes.runs) == ran, "the same shard resumes, nothing left to run"
    full = str(tmp_path / "whole")
    assert cli("matrix", *TABLE, "--out", full).exit_code == 0
    into = cli("matrix", *TABLE, "--shard", "1/2", "--out", full)
    assert into.exit_code == 2 and "holds a whole matrix, not a shard" in into.output


def test_a_shard_resumed_by_another_eos_chaos_is_refused(fakes: Fakes, tmp_path: Path) -> None:
    out = tmp_path / "s"
    assert cli("matrix", *TABLE, "--shard", "1/2", "--out", str(out)).exit_code == 0
    data = json.loads((out / "matrix.json").read_text())
    data["harness"]["source"] = "0" * 16
    (out / "matrix.json").write_text(json.dumps(data))
    r = cli("matrix", *TABLE, "--shard", "1/2", "--out", str(out))
    assert r.exit_code == 2 and "was made by eos-chaos 0.1.0 (source 0000000000000000" in r.output, r.output


def test_a_shards_dry_run_lists_its_share_only(fakes: Fakes, tmp_path: Path) -> None:
    r = cli("matrix", *TABLE, "--shard", "2/3", "--dry-run")
    d, scs = table()
    mine = matrix.run_shares(d, scs, 3)[1]
    assert r.exit_code == 0 and f"shard 2/3: {len(mine)} runs of the 24" in r.output, r.output
    assert f"matrix of 8 cells x 3 seeds = 24 runs ({len(mine)} to run)" in r.output and fakes.runs == []


def test_a_shards_page_says_which_cells_are_another_shards(fakes: Fakes, tmp_path: Path) -> None:
    out = tmp_path / "s"
    assert cli("matrix", *TABLE, "--shard", "1/3", "--out", str(out)).exit_code == 0
    data = json.loads((out / "matrix.json").read_text())
    states = {c["state"] for c in data["cells"]}
    assert states == {"valid", "other-shard"} or states == {"valid", "partial", "other-shard"}, states
    assert data["totals"]["wanted"] == len(data["shares"][0]) == data["totals"]["runs"]
    page = (out / "matrix.html").read_text()
    assert 'class="cell other-shard"' in page and "Shard 1 of 3" in page


# ---- soak ----

def test_soak_shards_take_every_nth_seed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    ran: list[tuple[str, int]] = []

    def one_run(sc: Any, source: str, backend: Backend, seed: int, out: Path, cluster: Any) -> soak.SoakRun:
        ran.append((source, seed))
        return soak.SoakRun(sc.name, seed, str(out), True, True, {}, 1.0, 1.0, 1.0)

    monkeypatch.setattr(soak, "one_run", one_run)
    monkeypatch.setattr(soak, "heal_all", lambda cluster: [])
    monkeypatch.setattr(runner, "cluster_that_is_up", lambda *a, **kw: object())
    monkeypatch.setattr(runner, "prepare_attached", lambda cluster: [])
    scs = soak.resolve(["baseline", "leader-kill"], None)
    for name in ("w", "s1", "s2", "s3"):
        (tmp_path / name).mkdir()
    whole = soak.soak(scs, ["baseline", "leader-kill"], Backend.local, 9, tmp_path / "w", runs=7)
    assert len(whole.runs) == 7
    everything, ran[:] = list(ran), []
    parts = []
    for i in (1, 2, 3):
        part = soak.soak(scs, ["baseline", "leader-kill"], Backend.local, 9, tmp_path / f"s{i}", runs=7, shard=Shard(i, 3))
        assert part.as_json()["shard"] == {"index": i, "count": 3}
        parts.append(list(ran))
        ran[:] = []
    assert parts == [everything[0::3], everything[1::3], everything[2::3]], "run j in shard j % N + 1, with its own seed"

