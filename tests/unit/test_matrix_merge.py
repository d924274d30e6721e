"""``eos-chaos matrix merge`` without a cluster, on shard folders the real command wrote (runs are
test_matrix.py's fakes): every shard merged is the unsharded record; a missing shard's cells are
``not-run`` (never valid) and exit 3; shards of other definitions, of other eos-chaos versions, the
same shard twice and folders that are no shards are refused (exit 2, nothing written); the merged
folder resumes only the missing runs; hunts merge with their summary."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from harness.campaigns import hunt, matrix
from harness.cli import app
from harness.report.matrix_page import STATES
from tests.unit.test_cli import WIDE, _restore_logging  # noqa: F401 - the loggers put back after each invocation
from tests.unit.test_matrix import Fakes, _levels_supported, install_fakes  # noqa: F401 - autouse fixture
from tests.unit.test_matrix_shards import TABLE


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Fakes:
    f = install_fakes(monkeypatch, tmp_path)
    # one finding, in a cell of its own: (leader-kill, java) at every level and seed
    f.outcome = lambda source, lib, seed: "invalid" if source == "leader-kill" and lib.startswith("java") else "valid"
    return f


def cli(*args: str) -> Result:
    return CliRunner(env=WIDE).invoke(app, list(args))


def shard_folders(tmp_path: Path, count: int, only: tuple[int, ...] | None = None, args: list[str] = TABLE) -> list[Path]:
    out = []
    for i in only or range(1, count + 1):
        tmp_path.mkdir(parents=True, exist_ok=True)
        folder = tmp_path / f"shard-{i}"
        r = cli("matrix", *args, "--shard", f"{i}/{count}", "--out", str(folder))
        assert r.exit_code in (0, 1), r.output
        out.append(folder)
    return out


def merge(*folders: Path, out: Path) -> Result:
    return cli("matrix", "merge", *map(str, folders), "--out", str(out))


def comparable(data: dict[str, Any]) -> tuple[Any, ...]:
    """What a matrix says, leaving out when and how long (and the folders' random names)."""
    cells = [{k: v for k, v in c.items() if k not in ("seconds", "first_failing")} for c in data["cells"]]
    runs = sorted((r["scenario"], r["client"], r["kafka_version"], r["transaction_version"], r["index"], r["seed"],
                   r["valid"], r["anomalies"]) for r in data["runs"])
    return data["definition"], data["run_seeds"], data["totals"], cells, runs


def test_merging_every_shard_gives_the_unsharded_record(fakes: Fakes, tmp_path: Path) -> None:
    whole = tmp_path / "whole"
    assert cli("matrix", *TABLE, "--out", str(whole)).exit_code == 1
    folders = shard_folders(tmp_path, 3)
    r = merge(*folders, out=tmp_path / "merged")
    assert r.exit_code == 1, r.output
    merged = json.loads((tmp_path / "merged" / "matrix.json").read_text())
    assert comparable(merged) == comparable(json.loads((whole / "matrix.json").read_text()))
    assert merged["merged"]["missing"] == [] and [s["index"] for s in merged["merged"]["shards"]] == [1, 2, 3]
    assert merged["shard"] is None and merged["totals"]["not_run"] == 0 and merged["healed_at_end"] is True
    assert [(s["stopped_because"], s["healed_at_end"]) for s in merged["merged"]["shards"]] == [("every run done", True)] * 3
    for run in merged["runs"]:  # every run's folder copied, at the path the record names
        assert (tmp_path / "merged" / run["run_dir"] / "report.html").is_file(), run["run_dir"]
    for cell in merged["cells"]:
        if cell["first_failing"]:
            assert (tmp_path / "merged" / cell["first_failing"]["report"]).is_file()
    assert "replay: " in r.output and "24/24 runs: 18 valid, 6 invalid, 0 unknown" in r.output


def test_a_missing_shard_is_cells_not_run_and_exit_3(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    install_fakes(monkeypatch, tmp_path)  # every run valid: nothing but the missing shard to say
    folders = shard_folders(tmp_path, 3, only=(1, 3))
    r = merge(*folders, out=tmp_path / "merged")
    assert r.exit_code == 3, r.output
    data = json.loads((tmp_path / "merged" / "matrix.json").read_text())
    missing = data["shares"][1]
    assert data["merged"]["missing"] == [2] and data["totals"]["not_run"] == len(missing)
    not_run = [c for c in data["cells"] if c["state"] == "not-run"]
    assert not_run and all(c["missing_shards"] == [2] for c in not_run)
    in_shard_2 = {tuple(k[:4]) for k in missing}
    assert {(c["scenario"], c["client"], c["kafka_version"], c["transaction_version"]) for c in not_run} == in_shard_2
    assert all(c["state"] == "valid" for c in data["cells"] if c not in not_run), "only the missing shard's cells"
    assert "not run (shard 2/3 missing)" in r.output


def test_a_finding_wins_over_a_missing_shard(fakes: Fakes, tmp_path: Path) -> None:
    r = merge(*shard_folders(tmp_path, 3, only=(3,)), out=tmp_path / "merged")
    assert r.exit_code == 1, r.output
    data = json.loads((tmp_path / "merged" / "matrix.json").read_text())
    assert {c["state"] for c in data["cells"]} >= {"invalid", "not-run"}


def test_the_merged_page_says_not_run_for_a_missing_shard(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    install_fakes(monkeypatch, tmp_path)
    merge(*shard_folders(tmp_path, 3, only=(1, 2)), out=tmp_path / "merged")
    page = (tmp_path / "merged" / "matrix.html").read_text()
    words = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))
    assert 'class="cell not-run"' in page and "not run shard 3/3 missing" in words
    assert "Missing shard 3/3" in words and "NOT RUN" in words and "ALL VALID" not in words
    assert STATES["not-run"] in words


def differing(tmp_path: Path, args: list[str]) -> Result:
    a = shard_folders(tmp_path / "a", 2, only=(1,))
    b = shard_folders(tmp_path / "b", 2, only=(2,), args=args)
    return merge(*a, *b, out=tmp_path / "merged")


@pytest.mark.parametrize(("change", "says"), [
    ({"--seed": "6"}, "--seed 5 vs 6"),
    ({"--seeds": "2"}, "--seeds 3 vs 2"),
    ({"--clients": "confluent-kafka,java@3.9.2"}, "--clients confluent-kafka,java@4.4.0 vs confluent-kafka,java@3.9.2"),
    ({"--duration": "41"}, "--duration 40.0 vs 41.0"),
    ({"--transaction-versions": "2,0"}, "--transaction-versions 0,2 vs 2,0"),
])
def test_shards_of_different_definitions_are_refused_naming_each_difference(change: dict[str, str], says: str,
                                                                            fakes: Fakes, tmp_path: Path) -> None:
    args = list(TABLE)
    for flag, value in change.items():
        args[args.index(flag) + 1] = value
    r = differing(tmp_path, args)
    assert r.exit_code == 2 and "are shards of different matrices" in r.output and says in r.output, r.output
    assert not (tmp_path / "merged").exists()


def test_every_difference_is_named(fakes: Fakes, tmp_path: Path) -> None:
    args = list(TABLE)
    args[args.index("--seed") + 1], args[args.index("--seeds") + 1] = "6", "2"
    r = differing(tmp_path, args)
    assert r.exit_code == 2 and "--seeds 3 vs 2" in r.output and "--seed 5 vs 6" in r.output, r.output


def test_shards_of_different_harness_versions_are_refused(fakes: Fakes, tmp_path: Path) -> None:
    one, two = shard_folders(tmp_path, 2)
    data = json.loads((two / "matrix.json").read_text())
    data["harness"] = {**data["harness"], "source": "0123456789abcdef", "commit": "f" * 40}
    (two / "matrix.json").write_text(json.dumps(data))
    r = merge(one, two, out=tmp_path / "merged")
    assert r.exit_code == 2, r.output
    assert f"shard 2/2 ({two}) was made by eos-chaos 0.1.0 (source 0123456789abcdef, commit ffffffffffff)" in r.output
    assert "merge shards of one eos-chaos" in r.output and not (tmp_path / "merged").exists()


def test_the_same_shard_twice_is_refused(fakes: Fakes, tmp_path: Path) -> None:
    (one,) = shard_folders(tmp_path, 2, only=(1,))
    (again,) = shard_folders(tmp_path / "again", 2, only=(1,))
    r = merge(one, again, out=tmp_path / "merged")
    assert r.exit_code == 2 and f"shard 1/2 is given twice, {one} and {again}" in r.output, r.output
    assert not (tmp_path / "merged").exists()


def test_folders_that_are_no_shards_of_one_table_are_refused(fakes: Fakes, tmp_path: Path) -> None:
    (two,) = shard_folders(tmp_path, 2, only=(2,))
    (three,) = shard_folders(tmp_path / "t", 3, only=(1,))
    whole = tmp_path / "whole"
    assert cli("matrix", *TABLE, "--out", str(whole)).exit_code == 1
    cases = [([two, three], "is shard 1/3"), ([two, whole], "is a whole matrix, made without --shard, not a shard"),
             ([two, tmp_path / "nowhere"], "is not a folder"), ([two, tmp_path / "state"], "holds no matrix.json"),
             ([two, two], "is given twice")]
    (tmp_path / "state").mkdir(exist_ok=True)
    for folders, says in cases:
        r = merge(*folders, out=tmp_path / "merged")
        assert r.exit_code == 2 and says in r.output and "internal error" not in r.output, (says, r.output)
        assert not (tmp_path / "merged").exists()
    merged = tmp_path / "m2"
    assert merge(two, out=merged).exit_code == 1
    r = merge(merged, out=tmp_path / "merged")
    assert r.exit_code == 2 and "is a merged matrix, not a shard" in r.output


def test_a_merged_folder_resumes_only_the_missing_runs(fakes: Fakes, tmp_path: Path) -> None:
    merged = tmp_path / "merged"
    merge(*shard_folders(tmp_path, 3, only=(1, 3)), out=merged)
    data = json.loads((merged / "matrix.json").read_text())
    missing = data["shares"][1]
    plan = cli("matrix", *TABLE, "--out", str(merged), "--dry-run")
    assert plan.exit_code == 0 and f"({len(missing)} to run, {24 - len(missing)} done)" in plan.output, plan.output
    before = len(fakes.runs)
    r = cli("matrix", *TABLE, "--out", str(merged))
    assert r.exit_code == 1, r.output
    ran = fakes.runs[before:]
    seeds = data["run_seeds"]
    assert sorted((s, lib, seed) for s, lib, _, seed in ran) == sorted((k[0], k[1], seeds[k[4]]) for k in missing)
    after = json.loads((merged / "matrix.json").read_text())
    assert after["totals"]["not_run"] == 0 and "not-run" not in {c["state"] for c in after["cells"]}
    assert after["totals"]["runs"] == 24


def test_hunt_shards_merge_with_their_summary(fakes: Fakes, tmp_path: Path) -> None:
    seeds = hunt.seeds(3, 2)
    fakes.outcome = lambda source, lib, seed: "invalid" if lib == "confluent-kafka" and str(seeds[0]) in source else "valid"
    flags = ["hunt", "--seeds", "2", "--seed", "3", "--duration", "30", "--clients", "confluent-kafka,java@4.4.0",
             "--transaction-versions", "2"]
    assert cli(*flags, "--out", str(tmp_path / "whole")).exit_code == 1
    for i in (1, 2):
        assert cli(*flags, "--shard", f"{i}/2", "--out", str(tmp_path / f"h{i}")).exit_code in (0, 1)
    r = merge(tmp_path / "h1", tmp_path / "h2", out=tmp_path / "merged")
    assert r.exit_code == 1, r.output
    whole = json.loads((tmp_path / "whole" / hunt.HUNT_JSON).read_text())
    merged = json.loads((tmp_path / "merged" / hunt.HUNT_JSON).read_text())
    assert [(c["client"], c["found"], c["judged"]) for c in merged["columns"]] == \
        [(c["client"], c["found"], c["judged"]) for c in whole["columns"]] == [("confluent-kafka", 1, 2), ("java@4.4.0", 0, 2)]
    assert (tmp_path / "merged" / hunt.HUNT_MD).is_file()
    m = matrix.load(tmp_path / "merged")
    assert m is not None and all(Path(s).parent == tmp_path / "merged" / "scenarios" for s in m.definition.scenarios)
    (tmp_path / "h2" / "scenarios" / f"hunt-{seeds[0]}.yaml").write_text("name: other\n")
    bad = merge(tmp_path / "h1", tmp_path / "h2", out=tmp_path / "merged2")
    assert bad.exit_code == 2 and "the drawn scenarios of" in bad.output, bad.output
