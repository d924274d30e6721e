"""Which modules of harness/, chaos/ and clusters/ name an identifier (a workload kind, a fault
kind, a check, a client library), read from their syntax trees: comments and prose never count.

A module names ``"app"`` when its code holds the string ``"app"`` itself (``Kind("app", ...)``,
``Literal["app"]``, ``w.kind == "app"``), or a constant some module binds to it at module level
(``APP = "app"``) imported by name (``from harness.history.model import APP``) or read off its
module (``app_run.APP``). Each mention comes with its line, so a message can point at it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from tests.doc_links import ROOT

#: The code ADDING.md's lists of places are held to.
SEARCHED = ("harness", "chaos", "clusters")


@dataclass(frozen=True)
class Mention:
    """The first place a module names the identifier."""

    path: str
    line: int
    how: str


@dataclass
class _Index:
    """What one module's code holds, each with the first line it is at: read once, asked per name."""

    strings: dict[str, int] = field(default_factory=dict)
    #: module-level ``NAME = "string"`` (one of a tuple assignment too)
    constants: dict[str, str] = field(default_factory=dict)
    #: ``from MODULE import NAME as ALIAS``: (module, name, alias, line)
    from_imports: list[tuple[str, str, str, int]] = field(default_factory=list)
    #: ``import MODULE as ALIAS``: alias -> module
    module_aliases: dict[str, str] = field(default_factory=dict)
    names: dict[str, int] = field(default_factory=dict)
    attributes: dict[tuple[str, str], int] = field(default_factory=dict)


def _index(tree: ast.Module) -> _Index:
    ix = _Index()
    for stmt in tree.body:
        if not isinstance(stmt, (ast.Assign, ast.AnnAssign)) or stmt.value is None:
            continue
        value = stmt.value
        for target in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
            pairs = (zip(target.elts, value.elts, strict=False)
                     if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) else [(target, value)])
            for name, val in pairs:
                if isinstance(name, ast.Name) and isinstance(val, ast.Constant) and isinstance(val.value, str):
                    ix.constants[name.id] = val.value
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            ix.strings[node.value] = min(line, ix.strings.get(node.value, line))
        elif isinstance(node, ast.Name):
            ix.names[node.id] = min(line, ix.names.get(node.id, line))
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            key = (node.value.id, node.attr)
            ix.attributes[key] = min(line, ix.attributes.get(key, line))
        elif isinstance(node, ast.ImportFrom) and node.module:
            ix.from_imports += [(node.module, a.name, a.asname or a.name, line) for a in node.names]
        elif isinstance(node, ast.Import):
            ix.module_aliases.update({a.asname: a.name for a in node.names if a.asname})
    return ix


@cache
def _indexes(root: Path) -> dict[str, _Index]:
    """Every module of the searched folders, by dotted name (``harness.run.runner``), indexed."""
    out = {}
    for top in SEARCHED:
        for path in sorted((root / top).rglob("*.py")):
            rel = path.relative_to(root).with_suffix("")
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            out[".".join(parts)] = _index(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
    return out


def _path_of(module: str, root: Path) -> str:
    as_file = Path(*module.split(".")).with_suffix(".py")
    return str(as_file if (root / as_file).exists() else Path(*module.split("."), "__init__.py"))


def _binders(indexes: dict[str, _Index], ident: str) -> dict[str, set[str]]:
    """Module -> the names it binds to exactly ``ident`` at module level (``APP = "app"``, or one of
    ``A, B = "x", "app"``) or imports from a module that does."""
    out = {m: {n for n, v in ix.constants.items() if v == ident} for m, ix in indexes.items()}
    out = {m: names for m, names in out.items() if names}
    grew = True
    while grew:  # a module importing such a name binds it too, for whoever imports it from there
        grew = False
        for module, ix in indexes.items():
            names = {alias for src, name, alias, _ in ix.from_imports if name in out.get(src, ())}
            if names - out.get(module, set()):
                out.setdefault(module, set()).update(names)
                grew = True
    return out


def _first_mention(module: str, ix: _Index, ident: str, binders: dict[str, set[str]]) -> tuple[int, str] | None:
    found = []
    if ident in ix.strings:
        found.append((ix.strings[ident], f"the string {ident!r}"))
    for name in binders.get(module, ()):  # its own constant, or one it imported
        found += [(ix.names[name], f"{name} (= {ident!r})")] if name in ix.names else []
    found += [(line, f"import of {name} (= {ident!r})") for src, name, _, line in ix.from_imports
              if name in binders.get(src, ())]
    whole = dict(ix.module_aliases)  # local alias -> a module bound whole
    whole.update({alias: f"{src}.{name}" for src, name, alias, _ in ix.from_imports if f"{src}.{name}" in binders})
    found += [(line, f"{alias}.{attr} (= {ident!r})") for (alias, attr), line in ix.attributes.items()
              if attr in binders.get(whole.get(alias, ""), ())]
    return min(found) if found else None


def modules_naming(ident: str, root: Path = ROOT) -> dict[str, Mention]:
    """Path (``harness/run/runner.py``) -> the first line where that module names ``ident``, for
    every module of harness/, chaos/ and clusters/ that does."""
    indexes = _indexes(root)
    binders = _binders(indexes, ident)
    out = {}
    for module, ix in indexes.items():
        first = _first_mention(module, ix, ident, binders)
        if first is not None:
            path = _path_of(module, root)
            out[path] = Mention(path, *first)
    return out
