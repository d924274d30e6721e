"""No function over ``MAX_LINES`` lines (issue 38) in the folders listed here: a longer one does
several jobs, and is split where its jobs part. Lines run from ``def`` to the function's last line,
its docstring and comments included."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 80
#: The folders held to it. The rest of harness/ joins as the other parts of issue 38 split their
#: long functions (``sparkjob/job.py:main``, ``workloads/common.py:transaction``, ...).
FOLDERS = ("harness/checker",)


def long_functions(root: Path, folders: tuple[str, ...] = FOLDERS) -> list[str]:
    """Each function or method longer than ``MAX_LINES`` under ``folders``, as ``path:line name (n lines)``."""
    out = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    n = (node.end_lineno or node.lineno) - node.lineno + 1
                    if n > MAX_LINES:
                        out.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({n} lines)")
    return out


def test_no_function_is_over_the_limit() -> None:
    assert long_functions(ROOT) == []


def test_a_long_function_or_method_is_named(tmp_path: Path) -> None:
    """A function of exactly ``MAX_LINES`` lines passes; a method one line longer is named."""
    folder = tmp_path / "harness" / "checker"
    folder.mkdir(parents=True)
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_LINES - 1))
    source = (f"def fits():\n{body}\n\n"
              f"class C:\n    def too_long(self):\n" + "".join(f"        y{i} = {i}\n" for i in range(MAX_LINES)))
    (folder / "planted.py").write_text(source)
    assert long_functions(tmp_path) == [f"harness/checker/planted.py:{MAX_LINES + 4} too_long ({MAX_LINES + 1} lines)"]
