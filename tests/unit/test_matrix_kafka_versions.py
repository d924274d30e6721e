"""The matrix's Kafka-version axis without a cluster: ``--kafka-versions`` (and ``--kafka-version``,
its one-version case) in the plan and the runs, one cluster per (Kafka version, transaction version),
every release fetched before any cell runs, a cell's identity on resume, a (Kafka version, level)
the release cannot be formatted at recorded and shown as such, a format-1 matrix.json still read,
and bad flags refused (exit 2, nothing started). The fakes are tests/unit/test_matrix.py's; the
Kafka releases are a fake cache here."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from clusters.backends import artifacts
from clusters.backends.backends import Backend
from clusters.builds import jdk, maven, pins
from harness.base.errors import ConfigError
from harness.campaigns import matrix, soak
from harness.campaigns.matrix import Cell, Matrix, RunKey
from harness.report.matrix_page import render_matrix
from tests.unit.test_cli import _restore_logging  # noqa: F401 - the fixture puts the loggers back after each invocation
from tests.unit.test_matrix import (
    FakeCluster,
    Fakes,
    _levels_supported,  # noqa: F401 - an autouse fixture: new_cluster's level keyword
    cli,
    definition,
    install_fakes,
)

OLD, NEW = "4.3.1", pins.KAFKA_VERSION


@pytest.fixture(name="fakes")
def _fakes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Fakes:
    """tests/unit/test_matrix.py's fakes: clusters, runs and builds that start nothing."""
    return install_fakes(monkeypatch, tmp_path)


@pytest.fixture
def cache(fakes: Fakes, monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """The Kafka releases in a fake cache (``NEW`` at first): ``ensure`` adds one with a ``fetch``
    event next to the clusters' (4.9.9 is not on Maven Central, as ``fetch_kafka`` says it), and
    the clusters are named by their release and level."""
    cached = {NEW}

    def ready(kv: str) -> Any:
        return SimpleNamespace(kafka_version=kv) if kv in cached else None

    def ensure(kv: str, flag: str = "--kafka-version") -> Any:
        if kv == "4.9.9":
            raise ConfigError(f"{flag} 4.9.9: org.apache.kafka:kafka_2.13:4.9.9 is not on Maven Central. "
                              f"Use a released version (default {pins.KAFKA_VERSION}).")
        fakes.events.append(f"fetch {kv}")
        cached.add(kv)
        return ready(kv)

    def level_cluster(backend: Backend, arts: Any, run_dir: Path, level: Any, overrides: dict[str, str],
                      wire_between_brokers: bool = False) -> FakeCluster:
        return FakeCluster(f"tv-{matrix.level_name(level)} kafka-{arts.kafka_version}", fakes.events, arts.kafka_version)

    monkeypatch.setattr(matrix.artifacts, "ready", ready)
    monkeypatch.setattr(matrix.artifacts, "ensure", ensure)
    monkeypatch.setattr(matrix.kafka_release, "kafka_ready", lambda kv: Path("libs") if kv in cached else None)
    monkeypatch.setattr(matrix, "level_cluster", level_cluster)
    return cached


def data_of(out: Path) -> dict[str, Any]:
    return json.loads((out / "matrix.json").read_text())


def words(page: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))


# ---- the axis in the definition, the plan and the runs ----

def test_cells_are_kafka_version_by_kafka_version_then_level() -> None:
    d = definition(scenarios="baseline", clients_="confluent-kafka", kafka_versions=f"{OLD},{NEW}", levels="0,2", seeds=1)
    assert d.kafka_versions == [OLD, NEW]
    assert d.cells() == [Cell("baseline", "confluent-kafka", kv, lv) for kv in (OLD, NEW) for lv in (0, 2)]
    assert definition(kafka_version=OLD).kafka_versions == [OLD], "--kafka-version X is --kafka-versions X"
    assert definition().kafka_versions == [NEW], "neither flag: the pinned release"
    assert definition(kafka_versions="4.04.0").kafka_versions == ["4.4.0"]


def test_every_release_is_fetched_before_any_cluster_and_each_version_level_gets_one(cache: set[str], fakes: Fakes,
                                                                                     tmp_path: Path) -> None:
    r = cli("--scenarios", "baseline", "--kafka-versions", f"{OLD},{NEW}", "--transaction-versions", "0,2",
            "--seed", "5", "--out", str(tmp_path / "m"))
    assert r.exit_code == 0, r.output
    assert fakes.events == [f"fetch {OLD}",  # NEW is in the cache: looked at, not fetched
                            f"start tv-0 kafka-{OLD}", f"stop tv-0 kafka-{OLD}", f"start tv-2 kafka-{OLD}", f"stop tv-2 kafka-{OLD}",
                            f"start tv-0 kafka-{NEW}", f"stop tv-0 kafka-{NEW}", f"start tv-2 kafka-{NEW}", f"stop tv-2 kafka-{NEW}"]
    data = data_of(tmp_path / "m")
    assert data["definition"]["kafka_versions"] == [OLD, NEW] and "kafka_version" not in data["definition"]
    assert [(c["kafka_version"], c["transaction_version"], c["state"]) for c in data["cells"]] == [
        (OLD, 0, "valid"), (OLD, 2, "valid"), (NEW, 0, "valid"), (NEW, 2, "valid")]
    assert [r["kafka_version"] for r in data["runs"]] == [OLD, OLD, NEW, NEW]
    assert data["runs"][0]["run_dir"].startswith(f"runs/kafka-{OLD}/tv-0/confluent-kafka/")
    assert data["totals"] == {"runs": 4, "wanted": 4, "valid": 4, "invalid": 0, "unknown": 0, "not_run": 0}


def test_a_release_maven_central_lacks_is_exit_2_naming_it_with_nothing_run(cache: set[str], fakes: Fakes,
                                                                           tmp_path: Path) -> None:
    r = cli("--scenarios", "baseline", "--kafka-versions", f"{NEW},4.9.9", "--out", str(tmp_path / "m"))
    assert r.exit_code == 2, r.output
    assert "--kafka-versions 4.9.9: org.apache.kafka:kafka_2.13:4.9.9 is not on Maven Central" in r.output
    assert fakes.events == [] and fakes.runs == [] and not (tmp_path / "m").exists(), "the version before it did not run"
    r = cli("--scenarios", "baseline", "--kafka-version", "4.9.9", "--out", str(tmp_path / "m"))
    assert r.exit_code == 2 and "--kafka-version 4.9.9: " in r.output, "named by the flag it was given with"


def test_the_real_fetch_names_the_flag_of_a_release_maven_central_lacks(monkeypatch: pytest.MonkeyPatch,
                                                                        tmp_path: Path) -> None:
    """``artifacts.ensure`` down to Maven's answer (Maven itself not run): its miss is a
    ConfigError naming the flag the matrix passes."""
    monkeypatch.setenv("EOS_CHAOS_CACHE", str(tmp_path))
    monkeypatch.setattr(jdk, "find_java", lambda: (Path("java"), 17))
    monkeypatch.setattr(artifacts, "build_servers", lambda: (Path("toxiproxy"), Path("kwire")))

    def maven_fetch(what: str, pom: str, d: Path, missing: Any = None, settings: str | None = None) -> Path:
        raise missing("[ERROR] Could not find artifact org.apache.kafka:kafka_2.13:jar:4.9.9 in central")

    monkeypatch.setattr(maven, "fetch", maven_fetch)
    with pytest.raises(ConfigError, match=r"^--kafka-versions 4\.9\.9: org\.apache\.kafka:kafka_2\.13:4\.9\.9 is not on Maven Central"):
        artifacts.ensure("4.9.9", flag="--kafka-versions")


def test_the_cluster_that_is_up_runs_the_cells_of_its_release_first_then_makes_way(cache: set[str], fakes: Fakes,
                                                                                  tmp_path: Path) -> None:
    fakes.shared = FakeCluster("tv-default shared", fakes.events, NEW)
    r = cli("--scenarios", "baseline", "--kafka-versions", f"{OLD},{NEW}", "--seed", "5", "--out", str(tmp_path / "m"))
    assert r.exit_code == 0, r.output
    assert fakes.events == [f"fetch {OLD}", "stop tv-default shared", f"start tv-default kafka-{OLD}",
                            f"stop tv-default kafka-{OLD}", "start tv-default shared"]
    assert [x[2] for x in fakes.runs] == ["default", "default"] and len(data_of(tmp_path / "m")["runs"]) == 2
    # one of another release serves no cell: it makes way before the first
    fakes.events.clear()
    fakes.shared = FakeCluster("tv-default shared", fakes.events, "4.0.0")
    assert cli("--scenarios", "baseline", "--kafka-version", NEW, "--seed", "5", "--out", str(tmp_path / "n")).exit_code == 0
    assert fakes.events == ["stop tv-default shared", f"start tv-default kafka-{NEW}", f"stop tv-default kafka-{NEW}",
                            "start tv-default shared"]


def test_a_dry_run_lists_the_clusters_per_kafka_version_and_what_it_would_fetch(cache: set[str], fakes: Fakes,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    def no(*a: Any, **kw: Any) -> Any:
        raise AssertionError("a dry run must not fetch or start anything")

    for name in ("ensure", "ready"):
        monkeypatch.setattr(matrix.artifacts, name, no)
    r = cli("--scenarios", "app-py-copier", "--kafka-versions", f"{OLD},{NEW}", "--transaction-versions", "0,2",
            "--seeds", "1", "--seed", "5", "--dry-run")
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert "matrix of 4 cells x 1 seed = 4 runs (4 to run)" in lines[0]
    heads = [line for line in lines if line.startswith("Kafka ")]
    assert heads == [f"Kafka {OLD} (not in the cache: fetched from Maven Central before any cell runs): 2 clusters",
                     f"Kafka {NEW} (in the cache): 2 clusters"]
    clusters = [line for line in lines if re.match(r"  \d\. ", line)]
    assert [re.match(r"  \d\. local, Kafka (\S+), transaction version (\d)", c).groups() for c in clusters] == [  # type: ignore[union-attr]
        (OLD, "0"), (OLD, "2"), (NEW, "0"), (NEW, "2")]
    assert r.stdout.count("     app-py-copier / confluent-kafka: seed ") == 4
    assert "+ 4 cluster starts x 20 s" in r.stdout and fakes.events == []


# ---- a level a release cannot be formatted at: a cell that says so ----

def test_an_unsupported_version_and_level_is_a_cell_that_says_so_not_an_error(cache: set[str], fakes: Fakes,
                                                                            tmp_path: Path) -> None:
    args = ["--scenarios", "baseline", "--kafka-versions", f"3.9.2,{NEW}", "--transaction-versions", "0,2", "--seed", "5"]
    r = cli(*args, "--dry-run")
    assert r.exit_code == 0, r.output
    assert "matrix of 4 cells (1 not supported) x 1 seed = 3 runs" in r.stdout
    assert ("  not run, transaction version 2: not supported: Kafka 3.9.2 formats transaction.version 0 only "
            "(baseline / confluent-kafka)") in r.stdout
    r = cli(*args, "--out", str(tmp_path / "m"))
    assert r.exit_code == 0, r.output  # neither a finding nor unknown
    assert fakes.events == ["fetch 3.9.2", "start tv-0 kafka-3.9.2", "stop tv-0 kafka-3.9.2", f"start tv-0 kafka-{NEW}",
                            f"stop tv-0 kafka-{NEW}", f"start tv-2 kafka-{NEW}", f"stop tv-2 kafka-{NEW}"]
    data = data_of(tmp_path / "m")
    cell = data["cells"][1]
    assert (cell["kafka_version"], cell["transaction_version"], cell["state"], cell["runs"], cell["wanted"]) == ("3.9.2", 2, "unsupported", 0, 0)
    assert cell["unsupported"] == "not supported: Kafka 3.9.2 formats transaction.version 0 only"
    assert [c["unsupported"] for c in data["cells"] if c is not cell] == [None, None, None]
    assert data["totals"] == {"runs": 3, "wanted": 3, "valid": 3, "invalid": 0, "unknown": 0, "not_run": 0}
    page = (tmp_path / "m" / "matrix.html").read_text()
    assert page.count('class="cell unsupported"') == 1
    assert "not supported Kafka 3.9.2 formats transaction.version 0 only" in words(page)
    assert "not supported: Kafka 3.9.2 formats transaction.version 0 only" in words(page)  # the cells' table


def test_the_page_has_a_kafka_column_and_a_row_per_scenario_and_kafka_version() -> None:
    d = definition(scenarios="baseline,leader-kill", clients_="confluent-kafka", kafka_versions=f"3.9.2,{NEW}",
                   levels="0,2", seeds=1)
    m = Matrix(d)
    cell = Cell("baseline", "confluent-kafka", NEW, 2)
    m.runs[RunKey(cell, 0)] = matrix.MatrixRun(*cell, 0, 7, "runs/x", False, False, {"duplicate": 1}, 3.0)
    page = render_matrix(m.as_json(), "m")
    assert '<th rowspan="2">Kafka</th>' in page and "<th>Kafka</th>" in page  # the grid's and the cells' table's
    assert page.count('<th class="kafka">3.9.2</th>') == 2 and page.count(f'<th class="kafka">{NEW}</th>') == 2
    assert '<th rowspan="2">baseline' in page, "a scenario's name spans its Kafka versions' rows"
    assert "× Kafka 3.9.2, 4.4.0 × transaction versions 0, 2" in words(page)
    assert page.count('class="cell unsupported"') == 2 and page.count('class="cell invalid"') == 1
    assert f"baseline / confluent-kafka / Kafka {NEW} / transaction version 2: a run found an anomaly" in page


# ---- resume: a cell's identity includes its Kafka version ----

def test_resume_keys_runs_by_kafka_version_and_a_matrix_may_grow_by_versions(cache: set[str], fakes: Fakes,
                                                                            tmp_path: Path) -> None:
    out = str(tmp_path / "m")
    base = ["--scenarios", "baseline", "--seeds", "2", "--seed", "5", "--out", out]
    assert cli(*base, "--kafka-version", NEW).exit_code == 0
    assert len(fakes.runs) == 2
    fakes.runs.clear()
    r = cli(*base, "--kafka-versions", f"{NEW},{OLD}")
    assert r.exit_code == 0, r.output
    assert len(fakes.runs) == 2, "only the new version's runs: the same (scenario, client, level, index) is another run"
    data = data_of(tmp_path / "m")
    assert [(x["kafka_version"], x["index"]) for x in data["runs"]] == [(NEW, 0), (NEW, 1), (OLD, 0), (OLD, 1)]
    assert data["totals"]["runs"] == 4 and data["sessions"] == 2
    loaded = matrix.load(tmp_path / "m")
    assert loaded is not None and set(loaded.runs) == set(loaded.definition.run_keys()) and loaded.pending == []
    fakes.runs.clear()
    fakes.events.clear()
    r = cli(*base, "--kafka-versions", f"{NEW},{OLD}")  # the same command again: nothing left
    assert r.exit_code == 0 and fakes.runs == [] and fakes.events == [] and "4/4 runs" in r.output
    r = cli(*base, "--kafka-versions", OLD)
    assert r.exit_code == 2 and f"--kafka-versions leaves out {NEW}" in r.output and "may only grow" in r.output


def test_a_replay_names_the_cells_kafka_version() -> None:
    d = definition(scenarios="baseline", clients_="confluent-kafka", kafka_versions=OLD, levels="2", seeds=1)
    scs = {("baseline", "confluent-kafka"): soak.resolve(["baseline"], 10.0)[0]}
    cmd = matrix.replay(None, RunKey(Cell("baseline", "confluent-kafka", OLD, 2), 0), 7, d, scs)
    assert f"--kafka-version {OLD}" in cmd and cmd.endswith("--library confluent-kafka --transaction-version 2")


# ---- a matrix folder of format 1 (before the axis) ----

def format_1(kafka_version: str | None, command_version: str = NEW) -> dict[str, Any]:
    """A matrix.json as format 1 wrote it: one run of two done, ``definition.kafka_version``, runs
    and cells without a Kafka version, the run's folder under ``runs/tv-<level>/``."""
    d = definition(scenarios="baseline", clients_="confluent-kafka", levels="default", seeds=2, duration=10.0)
    seeds = d.run_seeds()
    defn = {k: v for k, v in d.as_json().items() if k != "kafka_versions"}
    run = {"scenario": "baseline", "client": "confluent-kafka", "transaction_version": None, "index": 0, "seed": seeds[0],
           "run_dir": "runs/tv-default/confluent-kafka/r0", "valid": True, "as_expected": True, "anomalies": {},
           "seconds": 12.5, "error": None,
           "command": f"eos-chaos run baseline --backend local --seed {seeds[0]} --duration 10 --kafka-version "
                      f"{command_version} --library confluent-kafka"}
    cell = {"scenario": "baseline", "client": "confluent-kafka", "transaction_version": None, "state": "partial",
            "runs": 1, "wanted": 2, "valid": 1, "invalid": 0, "unknown": 0, "checks": {}, "reproduction_rate": 0.0,
            "seconds": 12.5, "first_failing": None}
    return {"format": 1, "definition": {**defn, "kafka_version": kafka_version}, "run_seeds": seeds,
            "started": "2026-11-20 10:00:00 UTC", "seconds": 20.0, "sessions": 1, "stopped_because": "interrupted",
            "healed_at_end": True, "heal_problems": [], "totals": {"runs": 1, "wanted": 2, "valid": 1, "invalid": 0, "unknown": 0},
            "cells": [cell], "runs": [run]}


@pytest.mark.parametrize(("given", "recorded", "version"), [(None, NEW, NEW), (OLD, OLD, OLD), (None, OLD, OLD)])
def test_a_format_1_matrix_is_one_kafka_version_the_one_it_ran(given: str | None, recorded: str, version: str,
                                                              tmp_path: Path) -> None:
    (tmp_path / "matrix.json").write_text(json.dumps(format_1(given, recorded)))
    m = matrix.load(tmp_path)
    assert m is not None and m.definition.kafka_versions == [version]
    assert list(m.runs) == [RunKey(Cell("baseline", "confluent-kafka", version, None), 0)]
    assert len(m.pending) == 1 and m.as_json()["format"] == 3


def test_a_format_1_matrix_resumes_with_the_same_command_and_its_page_renders(cache: set[str], fakes: Fakes,
                                                                             tmp_path: Path) -> None:
    out = tmp_path / "m"
    old = format_1(None)
    (out / "runs/tv-default/confluent-kafka/r0").mkdir(parents=True)
    (out / "runs/tv-default/confluent-kafka/cut-short").mkdir()  # a run an earlier session did not finish
    (out / "matrix.json").write_text(json.dumps(old))
    page = render_matrix(old, "m")  # the page of a format-1 matrix.json, as it is
    assert '<th class="kafka">default</th>' in page and page.count('class="cell partial"') == 1
    r = cli("--scenarios", "baseline", "--seeds", "2", "--duration", "10", "--out", str(out))  # its command, unchanged
    assert r.exit_code == 0, r.output
    assert len(fakes.runs) == 1, "the run done is kept; the other runs"
    assert not (out / "runs/tv-default/confluent-kafka/cut-short").exists() and (out / "runs/tv-default/confluent-kafka/r0").exists()
    data = data_of(out)
    assert data["format"] == 3 and data["definition"]["kafka_versions"] == [NEW] and data["sessions"] == 2
    assert [(x["kafka_version"], x["index"], x["run_dir"].split("/")[1]) for x in data["runs"]] == [
        (NEW, 0, "tv-default"), (NEW, 1, f"kafka-{NEW}")]
    assert f'<th class="kafka">{NEW}</th>' in (out / "matrix.html").read_text()


# ---- bad flags: exit 2, what is allowed, nothing started ----

@pytest.mark.parametrize(("args", "message"), [
    (["--kafka-versions", "4.4"], "--kafka-versions '4.4' is not a release version; expected MAJOR.MINOR.PATCH, for example 4.4.0"),
    (["--kafka-versions", f"{NEW},latest"], "--kafka-versions 'latest' is not a release version"),
    (["--kafka-versions", "3.8.1"], "--kafka-versions 3.8.1 is older than 3.9.0: the harness needs KRaft with advertised "
                                    "controller listeners (KIP-853). Use 3.9.0 or newer"),
    (["--kafka-version", "3.7.2"], "--kafka-version 3.7.2 is older than 3.9.0"),
    (["--kafka-version", NEW, "--kafka-versions", OLD], f"--kafka-version {NEW} and --kafka-versions {OLD}: give one of the two"),
    (["--kafka-version", f"{OLD},{NEW}"], f"--kafka-version {OLD},{NEW}: give one release (MAJOR.MINOR.PATCH); for several, "
                                          f"--kafka-versions {OLD},{NEW}"),
    (["--kafka-versions", f"{NEW},4.4.00"], "--kafka-versions: '4.4.00' is given twice (the same as '4.4.0')"),
    (["--kafka-versions", " , "], "--kafka-versions is empty"),
    (["--kafka-versions", "3.9.0,3.9.2", "--transaction-versions", "1,2"],
     "--transaction-versions 1,2 with --kafka-versions 3.9.0,3.9.2: no Kafka version can be formatted at any of them "
     "(Kafka 3.9.0 formats transaction.version 0 only; Kafka 3.9.2 formats transaction.version 0 only)"),
])
def test_a_bad_kafka_version_flag_is_exit_2_naming_it_and_what_is_allowed(args: list[str], message: str, cache: set[str],
                                                                        fakes: Fakes, tmp_path: Path) -> None:
    r = cli("--scenarios", "baseline", *args, "--out", str(tmp_path / "m"))
    assert r.exit_code == 2, r.output
    assert message in " ".join(r.output.split()) and "internal error" not in r.output, r.output
    assert fakes.events == [] and fakes.runs == [] and not (tmp_path / "m").exists()
