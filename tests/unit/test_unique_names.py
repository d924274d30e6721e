"""Each name means one thing: no two modules of harness/, chaos/ and clusters/ share a file name
(``__init__.py`` aside), and no two top-level classes share a name. A reader who meets ``app.py``
or ``RunResult`` should not have to ask which one. The few pairs allowed are listed with why, and
an entry that no longer matches anything fails too, so the lists only shrink."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("harness", "chaos", "clusters")

#: module file names two modules may share, each with the modules and why
SHARED_BASENAMES: dict[str, tuple[set[str], str]] = {
    name: ({f"harness/cli/{name}.py", f"harness/campaigns/{name}.py"},
           f"the `eos-chaos {name}` command (harness/cli/, one module per command) and the campaign it runs: "
           "one thing, its command line and its work")
    for name in ("hunt", "matrix", "minimize", "selftest", "soak")
}

#: top-level class names two modules may share, each with the modules and why
SHARED_CLASSES: dict[str, tuple[set[str], str]] = {
}


def _modules(root: Path) -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (root / pkg).rglob("*.py") if ".venv" not in p.parts)


def shared_basenames(root: Path) -> dict[str, set[str]]:
    """File name -> the modules (paths under ``root``) that have it, for names more than one has."""
    by_name: dict[str, set[str]] = defaultdict(set)
    for p in _modules(root):
        if p.name != "__init__.py":
            by_name[p.name.removesuffix(".py")].add(p.relative_to(root).as_posix())
    return {name: paths for name, paths in by_name.items() if len(paths) > 1}


def shared_classes(root: Path) -> dict[str, set[str]]:
    """Class name -> the modules defining a top-level class of that name, for names defined more
    than once. Private classes (``_Name``) are left out: no other module can name them."""
    by_name: dict[str, set[str]] = defaultdict(set)
    for p in _modules(root):
        for node in ast.parse(p.read_text(), str(p)).body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                by_name[node.name].add(p.relative_to(root).as_posix())
    return {name: paths for name, paths in by_name.items() if len(paths) > 1}


def _unexpected(found: dict[str, set[str]], allowed: dict[str, tuple[set[str], str]]) -> dict[str, set[str]]:
    return {name: paths for name, paths in found.items() if name not in allowed or paths != allowed[name][0]}


def test_no_two_modules_share_a_file_name() -> None:
    clashes = _unexpected(shared_basenames(ROOT), SHARED_BASENAMES)
    assert not clashes, f"modules sharing a file name (rename one so its name says what it owns): {clashes}"


def test_no_two_top_level_classes_share_a_name() -> None:
    clashes = _unexpected(shared_classes(ROOT), SHARED_CLASSES)
    assert not clashes, f"top-level classes sharing a name (rename one so each name means one thing): {clashes}"


@pytest.mark.parametrize(("allowed", "find"), [(SHARED_BASENAMES, shared_basenames), (SHARED_CLASSES, shared_classes)],
                         ids=["basenames", "classes"])
def test_every_allowed_pair_is_still_there(allowed: dict[str, tuple[set[str], str]], find: object) -> None:
    found = find(ROOT)  # type: ignore[operator]
    stale = {name: paths for name, (paths, _) in allowed.items() if found.get(name) != paths}
    assert not stale, f"allowed pairs that no longer clash: take them off the list: {stale}"


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


def test_a_shared_file_name_is_found(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"harness/report/app.py": "", "harness/workloads/app.py": "", "chaos/__init__.py": "",
                            "clusters/__init__.py": "", "harness/__init__.py": "", "clusters/app_x.py": ""})
    assert shared_basenames(root) == {"app": {"harness/report/app.py", "harness/workloads/app.py"}}
    assert _unexpected(shared_basenames(root), SHARED_BASENAMES)


def test_a_shared_class_name_is_found_and_private_ones_are_not(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"harness/run/runner.py": "class RunResult:\n    pass\nclass _Consumer: ...\n",
                            "harness/pytest_plugin/__init__.py": "class RunResult(dict):\n    class Inner: ...\n",
                            "chaos/x.py": "class _Consumer: ...\ndef f():\n    class RunResult: ...\n",
                            "clusters/y.py": "class Inner: ...\n"})
    assert shared_classes(root) == {"RunResult": {"harness/run/runner.py", "harness/pytest_plugin/__init__.py"}}
