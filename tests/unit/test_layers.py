"""Layering is a rule (docs/ARCHITECTURE.md): the import-linter contracts in pyproject.toml hold for
the code as it is, and they catch a violation planted in a copy of it (the negative control)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("harness", "chaos", "clusters")
LINT_TIMEOUT_S = 120.0  # parsing ~100 modules takes a second or two; generous for a loaded machine


def lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` with the project's contracts over the packages under ``tree``."""
    exe = Path(sys.executable).with_name("lint-imports")
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run([str(exe), "--config", str(ROOT / "pyproject.toml"), "--no-cache"], cwd=tree, env=env,
                          capture_output=True, text=True, timeout=LINT_TIMEOUT_S)


def copy_tree(dest: Path) -> Path:
    for pkg in PACKAGES:
        shutil.copytree(ROOT / pkg, dest / pkg, ignore=shutil.ignore_patterns("__pycache__", "*.yaml", "templates"))
    return dest


def test_the_code_keeps_every_contract() -> None:
    r = lint_imports(ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 broken" in r.stdout, r.stdout


@pytest.mark.parametrize("module, planted, contract", [
    ("harness/checker/arrays.py", "import harness.run.runner", "The checker reads histories only"),
    ("harness/checker/arrays.py", "import clusters.backends.procs", "The checker reads histories only"),
    ("chaos/nemesis.py", "import harness.workloads.copier", "Chaos never imports workloads"),
    ("clusters/backends/procs.py", "import chaos.heal", "Layers"),
    ("harness/history/store.py", "import harness.checker", "Layers"),
    ("harness/base/wait.py", "import harness.rundir.journal", "Layers"),
    ("harness/run/supervisor.py", "import harness.run.runner", "One run's layers"),
])
def test_a_planted_violation_breaks_its_contract(tmp_path: Path, module: str, planted: str, contract: str) -> None:
    tree = copy_tree(tmp_path)
    path = tree / module
    path.write_text(path.read_text() + f"\n{planted}  # planted by the test\n")
    r = lint_imports(tree)
    assert r.returncode != 0, r.stdout
    assert f"{contract} BROKEN" in r.stdout.splitlines(), r.stdout


def _layer_packages() -> set[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    named: set[str] = set()
    for contract in config["tool"]["importlinter"]["contracts"]:
        if contract["name"] == "Layers":
            for layer in contract["layers"]:
                named.update(m.strip() for m in layer.replace("|", ":").split(":"))
    return named


def test_every_module_is_inside_a_layer() -> None:
    """No module is left outside the layers: each of harness/'s modules and folders is a layer's package."""
    named = _layer_packages()
    top = {"harness." + (p.stem if p.is_file() else p.name) for p in (ROOT / "harness").iterdir()
           if (p.suffix == ".py" and p.name != "__init__.py") or (p.is_dir() and (p / "__init__.py").exists())}
    assert top - named == set(), f"modules or folders of harness/ in no layer of pyproject.toml: {sorted(top - named)}"
    assert {"chaos", "clusters"} <= named
