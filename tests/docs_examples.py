"""The code examples of README.md and docs/**/*.md, read as markdown (markdown-it, not regexes), and
what is wrong with each: every fenced block with its page, line, language and marker, and for each
language the problems a reader would meet running it as written.

A marker is an HTML comment right before a fence: ``<!-- example: chaos -->`` says the block needs a
real cluster, so tests/chaos/test_docs_examples.py runs it and the unit test only compiles it.
Each ``*_problems`` function returns a list of ``page:line: what is wrong`` lines (empty: fine), so
tests/unit/test_docs_examples.py can show every problem of a block at once, and can prove each
check fails on a block written to fail it.
"""

from __future__ import annotations

import ast
import json
import re
import shlex
import subprocess
import sys
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from markdown_it import MarkdownIt

from tests.doc_links import ROOT, pages, shown

#: What a marker before a fence may say, and what it means.
MARKERS = {"chaos": "needs a real cluster: run by tests/chaos/test_docs_examples.py, only compiled otherwise",
           "inventory": "a YAML block that is an external cluster's inventory: loaded by the inventory loader, "
                        "not the scenario loader",
           "workflow": "a CI workflow (YAML with jobs): each step's run: lines are checked as a sh block",
           "manifest": "a Kubernetes manifest the harness applies (Chaos Mesh): tests/unit/test_chaos_mesh.py holds "
                       "it equal to what the harness renders"}
#: The markers of YAML blocks that are not scenarios.
YAML_MARKERS = ("inventory", "workflow", "manifest")
#: A CI expression (``${{ matrix.shard }}``): the CI puts a value there before the shell runs.
_CI_EXPRESSION = re.compile(r"\$\{\{[^}]*\}\}")
_MARKER = re.compile(r"<!--\s*example:\s*(\S*)\s*-->")
#: The languages a fence may declare; ``text`` (output, diagrams) is the only one not checked.
LANGUAGES = ("python", "sh", "console", "yaml", "json", "text")
#: Commands whose lines in sh/console blocks are checked against the real thing.
TOOLS = ("eos-chaos", "pytest", "make")
#: Shell operators that end one command and start the next.
_SEPARATORS = {"&&", "||", ";", "|"}
_ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
#: pyflakes' rules, through ruff: an undefined helper is the mistake a compile cannot see.
_RUFF = [sys.executable, "-m", "ruff", "check", "--isolated", "--select", "F", "--output-format", "concise",
         "--stdin-filename", "example.py", "-"]


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    page: Path
    #: 1-based line of the opening fence
    line: int
    lang: str
    code: str
    marker: str | None

    def __str__(self) -> str:
        return f"{shown(self.page)}:{self.line}"


@dataclass(frozen=True)
class Command:
    """One command line of a shell block: the tool and its arguments, environment assignments and
    the ``.venv/bin/`` prefix taken off. ``synopsis`` lines (``[--seed S]``, ``local|compose``) are
    checked for the names they use only."""

    where: str
    tool: str
    args: tuple[str, ...]
    synopsis: bool


def _tokens(page: Path) -> list[Any]:
    return MarkdownIt("commonmark").parse(page.read_text(encoding="utf-8"))


def blocks(page: Path) -> list[Block]:
    """Every fenced block of ``page``, each with the marker on the line before its fence, if any."""
    tokens = _tokens(page)
    out = []
    for i, tok in enumerate(tokens):
        if tok.type != "fence":
            continue
        prev = tokens[i - 1] if i else None
        marker = _MARKER.search(prev.content) if prev is not None and prev.type == "html_block" else None
        out.append(Block(page, tok.map[0] + 1, tok.info.strip(), tok.content, marker.group(1) if marker else None))
    return out


def all_blocks() -> list[Block]:
    return [b for p in pages() for b in blocks(p)]


def marker_problems(page: Path) -> list[str]:
    """Markers that name no known marker, or that stand before something other than a fence (a
    block the author meant to mark would silently not be)."""
    tokens = _tokens(page)
    out = []
    for i, tok in enumerate(tokens):
        found = _MARKER.search(tok.content) if tok.type == "html_block" else None
        if found is None:
            continue
        where = f"{shown(page)}:{tok.map[0] + 1}"
        if found.group(1) not in MARKERS:
            out.append(f"{where}: unknown example marker {found.group(1)!r}; allowed: {', '.join(MARKERS)}")
        if i + 1 >= len(tokens) or tokens[i + 1].type != "fence":
            out.append(f"{where}: an example marker must be on the line right before a code fence")
    return out


def language_problems(block: Block) -> list[str]:
    if block.lang not in LANGUAGES:
        return [f"{block}: the fence says {block.lang or 'no language'!r}; say one of {', '.join(LANGUAGES)} "
                "(text for output and diagrams), so the example is checked as what it is"]
    if block.marker in YAML_MARKERS and block.lang != "yaml":
        return [f"{block}: {'an' if block.marker == 'inventory' else 'a'} {block.marker} example is YAML; this one is {block.lang}"]
    if block.marker not in (None, *YAML_MARKERS) and block.lang != "python":
        return [f"{block}: only python examples are run against a cluster; this one is {block.lang}"]
    return []


# ---- python ----

def python_problems(block: Block, run: bool) -> list[str]:
    """A python block compiles, leaves no ``...`` placeholder, names nothing undefined (pyflakes),
    and, when ``run``, runs without raising (in the current directory, which the caller chooses)."""
    try:
        tree = ast.parse(block.code, filename=str(block))
        code = compile(tree, str(block), "exec")
    except SyntaxError as exc:
        return [f"{block}: does not compile: {exc}"]
    out = [f"{block}: line {node.lineno} of the block is a `...` placeholder; an example must be complete"
           for node in ast.walk(tree)
           if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and node.value.value is Ellipsis]
    flakes = subprocess.run(_RUFF, input=block.code, capture_output=True, text=True, timeout=60, cwd=ROOT)
    if flakes.returncode not in (0, 1):
        raise RuntimeError(f"ruff failed ({flakes.returncode}): {flakes.stderr}")
    out += [f"{block}: {line.removeprefix('example.py:')}" for line in flakes.stdout.splitlines()
            if line.startswith("example.py:")]
    if run and not out:
        try:
            exec(code, {"__name__": "docs_example"})  # noqa: S102 - the point: the example runs as written
        except Exception:  # noqa: BLE001 - any failure of the example is the finding
            out.append(f"{block}: raised when run:\n{traceback.format_exc(limit=-3)}")
    return out


# ---- shell ----

def commands(block: Block) -> list[Command]:
    """The eos-chaos, pytest and make command lines of a sh/console block (console: the ``$ `` lines)."""
    lines = block.code.splitlines()
    out: list[Command] = []
    i = 0
    while i < len(lines):
        first, text = i, lines[i]
        while text.rstrip().endswith("\\") and i + 1 < len(lines):
            i += 1
            text = text.rstrip()[:-1] + " " + lines[i]
        i += 1
        if block.lang == "console":
            if not text.startswith("$ "):
                continue
            text = text[2:]
        where = f"{shown(block.page)}:{block.line + 1 + first}"
        try:
            tokens = shlex.split(text, comments=True)
        except ValueError as exc:
            out.append(Command(where, "?", (f"cannot be split like a shell would: {exc}",), False))
            continue
        synopsis = any(t == "..." or ("[" in t or "]" in t or "|" in t) and t not in _SEPARATORS for t in tokens)
        for segment in _segments(tokens, set() if synopsis else _SEPARATORS):
            while segment and _ENV_ASSIGNMENT.match(segment[0]):
                segment = segment[1:]
            if segment and Path(segment[0]).name in TOOLS:
                out.append(Command(where, Path(segment[0]).name, tuple(segment[1:]), synopsis))
    return out


def _segments(tokens: list[str], separators: set[str]) -> Iterable[list[str]]:
    segment: list[str] = []
    for t in tokens:
        if t in separators:
            yield segment
            segment = []
        else:
            segment.append(t)
    yield segment


def _option_names(command: Any) -> set[str]:
    return {o for p in command.params if p.param_type_name == "option" for o in [*p.opts, *p.secondary_opts]}


def eos_chaos_problem(args: tuple[str, ...], synopsis: bool) -> str | None:
    """What is wrong with ``eos-chaos ARGS`` as the real command line sees it: a command that does
    not exist, an option it does not take, a bad value (click parses the line, nothing runs); for a
    synopsis, only the command and the option names."""
    import typer

    from harness.cli import app

    command: Any = typer.main.get_command(app)
    path, rest = ["eos-chaos"], list(args)
    while hasattr(command, "list_commands"):
        ctx = command.make_context(" ".join(path), [], resilient_parsing=True)
        if getattr(command, "invoke_without_command", False) and (not rest or rest[0] not in command.list_commands(ctx)):
            break  # a group that is a command of its own too (eos-chaos matrix, and matrix merge)
        while rest and rest[0].startswith("-"):  # the group's own options (-v, -q)
            opt = rest.pop(0).split("=")[0]
            if opt not in _option_names(command):
                return f"{' '.join(path)} has no option {opt}"
        if not rest:
            return f"{' '.join(path)}: no command given"
        name = rest.pop(0)
        sub = command.get_command(ctx, name)
        if sub is None:
            return f"{' '.join(path)} has no command {name!r}; it has {', '.join(command.list_commands(ctx))}"
        command, path = sub, [*path, name]
    if synopsis:
        known = _option_names(command)
        unknown = [o for t in rest for o in re.findall(r"--[a-z][a-z0-9-]*", t) if o not in known]
        return f"{' '.join(path)} has no option {unknown[0]}" if unknown else None
    try:
        command.make_context(" ".join(path), rest)
    except Exception as exc:  # click's UsageError family (typer vendors its own click)
        if not hasattr(exc, "format_message"):
            raise
        return f"{' '.join(path)} {' '.join(rest)}: {exc.format_message()}"
    return None


def make_targets() -> set[str]:
    return set(re.findall(r"^([A-Za-z][\w-]*):", (ROOT / "Makefile").read_text(), re.M))


def command_problems(block: Block, pytest_options: set[str]) -> list[str]:
    """Each eos-chaos line parses; each ``--eos-*`` option of a pytest line is the plugin's; each
    make target exists."""
    out = []
    for c in commands(block):
        if c.tool == "?":
            out.append(f"{c.where}: {c.args[0]}")
        elif c.tool == "eos-chaos":
            problem = eos_chaos_problem(c.args, c.synopsis)
            if problem:
                out.append(f"{c.where}: {problem}")
        elif c.tool == "pytest":
            out += [f"{c.where}: pytest has no option {name} (the plugin's are {', '.join(sorted(pytest_options))})"
                    for name in (a.split("=")[0] for a in c.args if a.startswith("--eos-")) if name not in pytest_options]
        elif c.tool == "make":
            targets = make_targets()
            out += [f"{c.where}: the Makefile has no target {a!r}" for a in c.args
                    if not a.startswith("-") and "=" not in a and a not in targets]
    return out


def pytest_plugin_options(addoption: Callable[[Any], None]) -> set[str]:
    """The option names the plugin's ``pytest_addoption`` registers (given that hook)."""
    names: set[str] = set()

    class Group:
        def addoption(self, *opts: str, **_: Any) -> None:
            names.update(opts)

    class Parser:
        def getgroup(self, *_: Any, **__: Any) -> Group:
            return Group()

        def addoption(self, *opts: str, **_: Any) -> None:
            names.update(opts)

    addoption(Parser())
    return names


# ---- yaml and json ----

#: What a scenario fragment is completed with, for the fields it leaves out: the smallest scenario.
_FILL: dict[str, Any] = {"name": "docs-example", "description": "an example from the docs",
                         "workloads": [{"kind": "txn-producer"}, {"kind": "reader"}]}


def as_scenario(data: Any) -> tuple[dict[str, Any] | None, str]:
    """The scenario a YAML block is, or the one it is a fragment of (a list of faults or workloads,
    or a mapping of some scenario fields), completed with the smallest one; None and why not."""
    from harness.run.scenario import Scenario
    from harness.workloads.registry import KINDS

    if isinstance(data, list) and data and all(isinstance(d, dict) and "kind" in d for d in data):
        # workload entries have no time; a fault entry has one (a misspelt kind is still a fault)
        timed = any("at" in d for d in data) or not {d["kind"] for d in data} <= set(KINDS)
        data = {"faults": data} if timed else {"workloads": data}
    if not isinstance(data, dict) or not data:
        return None, "a YAML example is a scenario, part of one, or a list of faults or workloads"
    unknown = set(data) - set(Scenario.model_fields)
    if unknown:
        return None, f"{sorted(unknown)} are not scenario fields; a YAML example is a scenario or part of one"
    filled = {**_FILL, **data}
    if "duration" not in data:  # long enough for every fault of a fragment
        ats = [f.get("at", 0) for f in filled.get("faults") or [] if isinstance(f, dict)]
        filled["duration"] = max([45, *(a + 1 for a in ats if isinstance(a, int | float))])
    return filled, ""


def yaml_problems(block: Block, tmp: Path) -> list[str]:
    """A YAML block is a valid scenario, through the scenario loader (a complete one as written, so
    its errors name the block's own lines; a fragment completed first)."""
    from harness.base.errors import ConfigError
    from harness.run import scenario

    if block.marker == "inventory":
        return inventory_problems(block, tmp)
    try:
        data = yaml.safe_load(block.code)
    except yaml.YAMLError as exc:
        return [f"{block}: not YAML: {exc}"]
    if block.marker == "manifest":  # what it must equal is tests/unit/test_chaos_mesh.py's
        return []
    filled, why = as_scenario(data)
    if filled is None:
        return [f"{block}: {why}"]
    path = tmp / "example.yaml"
    complete = isinstance(data, dict) and filled.keys() == data.keys()
    path.write_text(block.code if complete else yaml.safe_dump(filled, sort_keys=False))
    try:
        scenario.load(str(path))
    except ConfigError as exc:
        # the loader's lines are the block's own (counted from the fence) only for a complete scenario
        said = str(exc).replace(f"{path}:", "line " if complete else "(completed) line ")
        return [f"{block}: {said}"]
    return []


def inventory_problems(block: Block, tmp: Path) -> list[str]:
    """A YAML block marked ``inventory`` loads as an external cluster's inventory, as written (its
    errors name the block's own lines)."""
    from clusters.backends.external import inventory
    from harness.base.errors import ConfigError

    path = tmp / "inventory.yaml"
    path.write_text(block.code)
    try:
        inventory.load(path)
    except ConfigError as exc:
        return [f"{block}: {str(exc).replace(f'{path}:', 'line ')}"]
    return []


def workflow_problems(block: Block, pytest_options: set[str]) -> list[str]:
    """A workflow block is YAML with ``jobs``, each with ``steps``; each step's ``run:`` script, with
    its CI expressions replaced by a value (``1``), passes ``command_problems`` as a sh block."""
    try:
        data = yaml.safe_load(block.code)
    except yaml.YAMLError as exc:
        return [f"{block}: not YAML: {exc}"]
    jobs = data.get("jobs") if isinstance(data, dict) else None
    if not isinstance(jobs, dict) or not jobs:
        return [f"{block}: a workflow has jobs (a mapping of job name to job)"]
    out = []
    for name, job in jobs.items():
        steps = job.get("steps") if isinstance(job, dict) else None
        if not isinstance(steps, list) or not steps:
            out.append(f"{block}: job {name!r} has no steps")
            continue
        for step in steps:
            script = step.get("run") if isinstance(step, dict) else None
            if isinstance(script, str):
                run = Block(block.page, block.line, "sh", _CI_EXPRESSION.sub("1", script), None)
                out += [f"{p} (job {name})" for p in command_problems(run, pytest_options)]
    return out


def json_problems(block: Block) -> list[str]:
    """A JSON block parses: as one document, or as JSON lines."""
    try:
        json.loads(block.code)
        return []
    except json.JSONDecodeError:
        pass
    out = []
    for n, line in enumerate(block.code.splitlines(), start=1):
        if line.strip():
            try:
                json.loads(line)
            except json.JSONDecodeError as exc:
                out.append(f"{block}: line {n} is not JSON: {exc}")
    return out
