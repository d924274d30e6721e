"""No function over ``MAX_LINES`` lines (issue 38): a function that long does several jobs, and a
reader cannot hold it whole. Every function and method in harness/, chaos/ and clusters/ is
measured from its ``def`` line to its last line (docstring, comments and blank lines included;
decorators not), nested ones on their own as well as within their parent."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("harness", "chaos", "clusters")
MAX_LINES = 80

#: Offenders allowed for now, as ``path:function`` (none: every part of issue 38 has landed). An entry
#: that is no longer over the limit fails the test, so the list can only shrink.
PENDING: set[str] = set()


@dataclass(frozen=True)
class Long:
    """A function over the limit: where it starts and how many lines it has."""

    path: str
    line: int
    name: str
    lines: int

    @property
    def key(self) -> str:
        return f"{self.path}:{self.name}"

    def __str__(self) -> str:
        return f"{self.path}:{self.line} {self.name} ({self.lines} lines)"


def long_functions(root: Path, packages: tuple[str, ...] = PACKAGES, limit: int = MAX_LINES) -> list[Long]:
    """Every function and method under ``root``'s ``packages`` longer than ``limit`` lines."""
    found = []
    for pkg in packages:
        for path in sorted((root / pkg).rglob("*.py")):
            tree = ast.parse(path.read_text(), filename=str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    lines = (node.end_lineno or node.lineno) - node.lineno + 1
                    if lines > limit:
                        found.append(Long(path.relative_to(root).as_posix(), node.lineno, node.name, lines))
    return found


def test_no_function_is_over_the_limit() -> None:
    over = [f for f in long_functions(ROOT) if f.key not in PENDING]
    assert not over, f"over {MAX_LINES} lines (split them):\n" + "\n".join(map(str, over))


def test_every_pending_offender_is_still_one() -> None:
    # a function split since is taken off the list, so the list never hides a new one of that name
    still = {f.key for f in long_functions(ROOT)}
    assert PENDING <= still, f"no longer over {MAX_LINES} lines, take them off PENDING: {sorted(PENDING - still)}"


def test_a_planted_long_function_is_named_with_its_place_and_length(tmp_path: Path) -> None:
    pkg = tmp_path / "harness"
    pkg.mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES - 1))  # + the def line: exactly the limit
    (pkg / "ok.py").write_text(f"def fits():\n{body}\n")
    (pkg / "long.py").write_text(f'"""A module."""\n\n\nclass C:\n    def too_long(self):\n{body}\n        return 1\n'
                                 .replace("\n    x", "\n        x"))
    found = long_functions(tmp_path, ("harness",))
    assert [str(f) for f in found] == [f"harness/long.py:5 too_long ({MAX_LINES + 1} lines)"]
