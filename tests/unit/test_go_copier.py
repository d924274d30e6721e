"""go-copier, the shipped Go app (harness/apps/go_copier.py, go_copier_src/): its contract's map
function, the launcher's cache key and error path, its registration, and the service's refusal of
bad flags. Nothing here builds Go: the flag tests run the binary only if it is already built."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from clusters.builds import golang
from harness.apps import SHIPPED
from harness.apps import go_copier as launcher
from harness.apps.functions import GO_COPIER_OUTPUT, GO_SUFFIX, go_suffix
from harness.base.errors import EnvironmentProblem
from harness.base.paths import REPO_ROOT


def test_go_suffix_owes_one_output_per_input_same_key_value_with_the_suffix() -> None:
    record = {"topic": "app-in", "partition": "2", "key": "k3", "value": "17"}
    assert go_suffix(record) == [{"topic": "app-out", "key": "k3", "value": "17:go"}]
    assert go_suffix(record) == go_suffix(dict(record))  # deterministic, and the input is not changed
    assert record["value"] == "17"
    # a keyless input keeps no key; a null value is copied as empty, as the service reads it
    assert go_suffix({"topic": "app-in", "partition": "0", "key": None, "value": None}) == [
        {"topic": GO_COPIER_OUTPUT, "key": None, "value": ":go"}]


def test_the_functions_suffix_is_the_services() -> None:
    main_go = (launcher.SOURCE / "main.go").read_text()
    found = re.search(r'^\s*Suffix\s*=\s*"([^"]*)"', main_go, re.MULTILINE)
    assert found, "main.go no longer declares Suffix"
    assert found.group(1) == GO_SUFFIX


def test_the_docs_name_the_output_topic_and_the_function() -> None:
    apps_md = (REPO_ROOT / "docs" / "APPS.md").read_text()
    assert "harness.apps.functions:go_suffix" in apps_md
    assert f"{{topic:{GO_COPIER_OUTPUT}}}" in apps_md


@pytest.fixture
def source(tmp_path: Path) -> Path:
    """A copy of the service's source to change."""
    return Path(shutil.copytree(launcher.SOURCE, tmp_path / "src"))


def test_the_cache_key_follows_the_source_go_mod_and_go_sum(source: Path) -> None:
    before = golang.go_source_digest(source)
    assert before == golang.go_source_digest(launcher.SOURCE)
    main_go = (source / "main.go").read_text()
    (source / "main.go").write_text(main_go.replace('Suffix = ":go"', 'Suffix = ":gO"'))
    assert golang.go_source_digest(source) != before
    (source / "main.go").write_text(main_go)
    assert golang.go_source_digest(source) == before
    for name in ("go.mod", "go.sum"):
        original = (source / name).read_text()
        (source / name).write_text(original + "\n")
        assert golang.go_source_digest(source) != before, name
        (source / name).write_text(original)
    (source / "extra.go").write_text("package main\n")
    assert golang.go_source_digest(source) != before
    (source / "extra.go").unlink()
    (source / "main_test.go").write_text("package main\n")  # tests are not built into the binary
    assert golang.go_source_digest(source) == before


def test_the_binary_lives_in_the_cache_under_the_digest(source: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EOS_CHAOS_CACHE", str(tmp_path / "cache"))
    path = launcher.binary(source)
    assert path == tmp_path / "cache" / "apps" / "go-copier" / golang.go_source_digest(source) / "go-copier"
    (source / "main.go").write_text((source / "main.go").read_text() + "\n// changed\n")
    assert launcher.binary(source) != path


def test_a_cached_binary_is_not_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "go-copier"
    target.write_text("#!/bin/sh\n")
    target.chmod(0o755)

    def no_build(*_: object, **__: object) -> None:
        raise AssertionError("a cached binary was rebuilt")

    monkeypatch.setattr(golang, "run_go", no_build)
    assert golang.build_go_module(launcher.SOURCE, target, "go-copier") == target


def test_the_launcher_says_why_a_build_failed_and_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("EOS_CHAOS_CACHE", str(tmp_path / "cache"))  # nothing built there

    def no_go() -> Path:
        raise EnvironmentProblem("`go` is not on PATH: needed to build go-copier")

    monkeypatch.setattr(launcher, "prepare", no_go)
    monkeypatch.setattr(os, "execv", lambda *_: pytest.fail("exec'd without a binary"))
    with pytest.raises(SystemExit) as exc:
        launcher.main(["--bootstrap", "127.0.0.1:9092"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "go-copier: building" in err and "go-copier: `go` is not on PATH" in err
    assert "Traceback" not in err


def test_it_is_registered_and_prepared_through_its_launcher(monkeypatch: pytest.MonkeyPatch) -> None:
    app = SHIPPED["go-copier"]
    assert app.name == "go-copier" and app.module == "harness.apps.go_copier"
    calls: list[str] = []

    def prepare() -> Path:
        calls.append("prepare")
        return Path("/built")

    monkeypatch.setattr(launcher, "prepare", prepare)
    assert app.prepare() == Path("/built") and calls == ["prepare"]


def test_the_go_source_is_gofmt_formatted() -> None:
    go = shutil.which("go")
    gofmt = shutil.which("gofmt") or (str(Path(go).resolve().with_name("gofmt")) if go else None)
    if not gofmt or not Path(gofmt).exists():
        pytest.skip("gofmt is not installed (it comes with Go)")
    fmt = subprocess.run([gofmt, "-l", "."], cwd=launcher.SOURCE, capture_output=True, text=True, timeout=60)
    assert fmt.returncode == 0 and fmt.stdout == "", f"gofmt -w these: {fmt.stdout}{fmt.stderr}"


GOOD = ["--bootstrap", "127.0.0.1:1", "--input", "in", "--output", "out", "--group", "g", "--txn-id", "t"]


def _without(flag: str) -> list[str]:
    i = GOOD.index(flag)
    return GOOD[:i] + GOOD[i + 2:]


@pytest.mark.parametrize(("args", "named"), [
    ([*GOOD, "--nope"], "-nope"),
    (_without("--bootstrap"), "--bootstrap"),
    (_without("--group"), "--group"),
    (_without("--txn-id"), "--txn-id"),
    ([*GOOD[:-2], "--txn-id", "t", "extra"], '"extra"'),
    ([*_without("--bootstrap"), "--bootstrap", "127.0.0.1"], "--bootstrap"),
    ([*_without("--output"), "--output", "in"], "--output"),
    (["--unsafe=maybe", *GOOD], "-unsafe"),
], ids=["unknown", "no-bootstrap", "no-group", "no-txn-id", "positional", "no-port", "output-is-input", "bad-bool"])
def test_bad_flags_get_the_usage_and_exit_2(args: list[str], named: str) -> None:
    binary = launcher.built()
    if binary is None:
        pytest.skip("go-copier is not built; `python -m harness.apps.go_copier --help` builds it (tests never build Go)")
    proc = subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=10)
    assert proc.returncode == 2, proc.stderr
    assert named in proc.stderr and "usage: go-copier" in proc.stderr
    assert proc.stdout == ""


def test_the_launcher_execs_the_service() -> None:
    if launcher.built() is None:
        pytest.skip("go-copier is not built; `python -m harness.apps.go_copier --help` builds it (tests never build Go)")
    proc = subprocess.run([sys.executable, "-m", "harness.apps.go_copier", "--nope"], capture_output=True, text=True,
                          timeout=30, cwd=REPO_ROOT)
    assert proc.returncode == 2 and "usage: go-copier" in proc.stderr
    assert "Traceback" not in proc.stderr and "RuntimeWarning" not in proc.stderr
