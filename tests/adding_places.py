"""What docs/ADDING.md says about the code, read so a test can hold it to the code: every file,
folder, test and dotted name it names in backticks, and its worked examples, the blocks that list
every module naming one identifier.

A worked example is a ``text`` fence of this shape (the maintainer's list; tests/named_in.py finds
what the code says)::

    names "app":
      harness/workloads/registry.py    its Kind entry and settings
    "app" meaning something else:
      harness/cli/__init__.py          the Typer object ``app``

The first list holds the modules that name the thing; the second, modules where the same string
means something else (counted, since the code cannot tell them apart, and said so).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tests.doc_links import ROOT

ADDING = ROOT / "docs" / "ADDING.md"
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
_NAMES = re.compile(r'^names "(?P<ident>[^"]+)":$')
_OTHER = re.compile(r'^"(?P<ident>[^"]+)" meaning something else:$')
_ENTRY = re.compile(r"^\s+(?P<path>\S+)(?:\s+(?P<note>.*))?$")
#: A backticked repository path: a file or folder under a top folder, a test (``file.py::test``).
_PATH = re.compile(r"^(?:harness|chaos|clusters|tests|docs)/[\w./<>-]*(?:::\w+)?$|^(?:pyproject\.toml|README\.md|Makefile)$")
#: A backticked dotted name of the code: ``harness.history.model.PROGRESS_OPS``, ``clusters.artifacts.cache_lock()``.
_DOTTED = re.compile(r"^(?:harness|chaos|clusters)(?:\.\w+)+(?:\(\))?$")


@dataclass
class Example:
    """One worked example: the identifier and the modules the page lists for it."""

    ident: str
    #: 1-based line of the block's ``names`` line in the page
    line: int
    section: str
    names: dict[str, str] = field(default_factory=dict)
    other: dict[str, str] = field(default_factory=dict)

    @property
    def listed(self) -> set[str]:
        return set(self.names) | set(self.other)


class PageError(ValueError):
    """A worked example's block that does not follow the shape above."""


def _section_at(text: str, offset: int) -> str:
    headings = re.findall(r"^## (.+)$", text[:offset], re.M)
    return headings[-1] if headings else ""


def examples(page: Path = ADDING) -> list[Example]:
    """The worked examples of ``page``, in page order. PageError names a block's bad line."""
    text = page.read_text(encoding="utf-8")
    out = []
    for fence in _FENCE.finditer(text):
        lines = fence.group(2).splitlines()
        if fence.group(1) != "text" or not lines or not (head := _NAMES.match(lines[0])):
            continue
        first = text.count("\n", 0, fence.start(2)) + 1
        ex = Example(head.group("ident"), first, _section_at(text, fence.start()))
        into = ex.names
        for n, line in enumerate(lines[1:], start=first + 1):
            other, entry = _OTHER.match(line), _ENTRY.match(line)
            if other and other.group("ident") == ex.ident and into is ex.names:
                into = ex.other
            elif entry and not line.startswith(" " * 8):
                into[entry.group("path")] = entry.group("note") or ""
            elif line.strip():
                raise PageError(f"{page.name}:{n}: {line.strip()!r} is not a module line (two spaces, a path, a note) "
                                f"nor '\"{ex.ident}\" meaning something else:'")
        out.append(ex)
    return out


def example_problems(ex: Example, found: Mapping[str, object], page: str = "docs/ADDING.md") -> list[str]:
    """What is wrong with a worked example against ``found`` (path -> its first mention, from
    tests/named_in.py): each module listed that does not name it, each that names it unlisted."""
    out = [f"{page}:{ex.line}: {path} is listed as naming {ex.ident!r}, but its code does not mention it "
           "(take the line out of the list)" for path in sorted(ex.listed - set(found))]
    out += [f"{page}:{ex.line}: {path} mentions {ex.ident!r} ({found[path]}) but is not in the list of "
            f"modules naming {ex.ident!r} (add it, with what it does with {ex.ident!r})"
            for path in sorted(set(found) - ex.listed)]
    return out


def _module_file(dotted: list[str]) -> tuple[Path, list[str]] | None:
    """The file of the longest module prefix of ``dotted``, and the names after it."""
    for cut in range(len(dotted), 0, -1):
        base = ROOT.joinpath(*dotted[:cut])
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.exists():
                return candidate, dotted[cut:]
    return None


def _defines(path: Path, name: str) -> bool:
    """``name`` is bound at the top of module ``path``, or is a class's attribute or method there."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return True
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store):
            return True
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
            return True
        if isinstance(node, ast.alias) and (node.asname or node.name) == name:
            return True
    return False


def reference_problems(page: Path = ADDING) -> list[str]:
    """Each backticked path, test or dotted name of ``page`` that the repository does not have."""
    text = page.read_text(encoding="utf-8")
    refs = [(m.group(1), text.count("\n", 0, m.start()) + 1) for m in re.finditer(r"`([^`\n]+)`", text)]
    refs += [(ex_path, ex.line) for ex in examples(page) for ex_path in ex.listed]
    out = []
    for ref, line in refs:
        where = f"{page.name}:{line}: `{ref}`"
        if _PATH.match(ref):
            path, _, test = ref.partition("::")
            if "<" in path:  # a placeholder (`harness/workloads/<name>.py`): its folder must be there
                path = path[:path.index("<")].rpartition("/")[0]
            if not (ROOT / path).exists():
                out.append(f"{where}: no such file or folder")
            elif test and not _defines(ROOT / path, test):
                out.append(f"{where}: {path} has no {test}")
        elif _DOTTED.match(ref):
            found = _module_file(ref.removesuffix("()").split("."))
            if found is None:
                out.append(f"{where}: no such module")
            elif found[1] and not _defines(found[0], found[1][0]):
                out.append(f"{where}: {found[0].relative_to(ROOT)} has no {found[1][0]}")
    return out
