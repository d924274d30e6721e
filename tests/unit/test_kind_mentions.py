"""The runner and the supervisor name no workload kind (issue 38): what a kind does in a run is its
``KindRun`` (harness/phases/). At most ``ALLOWED`` lines of harness/run/*.py may mention a
particular kind: its name as a string, a constant naming it or one of its processes (``APP``,
``TXN_PRODUCER``, ``APP_READER``...), or an import of a module of its own (a kind's process module,
the Spark job's package, a kind's phases)."""

from __future__ import annotations

import ast
from pathlib import Path

from harness.history import model
from harness.phases import table
from harness.workloads import registry

RUN = Path(__file__).resolve().parents[2] / "harness" / "run"
ALLOWED = 3


def _kind_words() -> tuple[set[str], set[str], set[str]]:
    """(kind and process names as strings, constants naming them, module names of kinds)."""
    names = set(registry.KINDS) | {model.APP_FEEDER, model.APP_READER}
    constants = {n for n, v in vars(model).items() if n.isupper() and isinstance(v, str) and v in names}
    constants |= {n for n, v in vars(registry).items() if n.isupper() and isinstance(v, str) and v in names}
    constants |= {n.replace("-", "_").upper() for n in names}
    modules = set(registry.modules().values()) | {c.__module__ for c in table.RUNS.values()} | {"harness.sparkjob"}
    modules |= {m.rpartition(".")[2] for m in modules if m.startswith(("harness.workloads.", "harness.phases."))}
    modules.add("app_run")  # the app's part of a run, which lived in harness/run/ before issue 38
    return names, constants, modules


def mentions(source: str) -> dict[int, str]:
    """Line -> what mentions a particular kind there, in Python ``source``."""
    names, constants, modules = _kind_words()
    found: dict[int, str] = {}
    for node in ast.walk(ast.parse(source)):
        what = None
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names:
            what = repr(node.value)
        elif isinstance(node, ast.Name) and node.id in constants:
            what = node.id
        elif isinstance(node, ast.Attribute) and node.attr in constants | modules:
            what = node.attr
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            hit = [a.name for a in node.names if a.name in constants | modules]
            if any(mod == m or mod.startswith(m + ".") or mod.endswith("." + m) for m in modules):
                what = f"from {mod}"
            elif hit:
                what = f"import {hit[0]}"
        elif isinstance(node, ast.Import):
            hit = [a.name for a in node.names if any(a.name == m or a.name.startswith(m + ".") for m in modules)]
            what = f"import {hit[0]}" if hit else None
        if what is not None:
            found.setdefault(node.lineno, what)
    return found


def kind_mentions(folder: Path = RUN) -> list[str]:
    """``file:line: what`` for each line of ``folder``/*.py that mentions a particular kind."""
    return [f"{path.name}:{line}: {what}" for path in sorted(folder.glob("*.py"))
            for line, what in sorted(mentions(path.read_text()).items())]


def test_the_runner_and_supervisor_name_at_most_three_kinds() -> None:
    found = kind_mentions()
    assert len(found) <= ALLOWED, "harness/run/ names particular kinds (give the kind a KindRun phase instead):\n" + \
        "\n".join(found)


def test_the_count_sees_each_way_of_naming_a_kind() -> None:
    code = '''
from harness.run import app_run
from harness.history.model import APP_READER
from harness.sparkjob.job import job_dir
from harness.workloads import txn_producer
import harness.workloads.zombie
if w.kind == "spark-job": pass
keep = registry.APP_READER
n = TXN_PRODUCER
ok = registry.kind(w.kind).ready_ops
'''
    assert sorted(mentions(code)) == [2, 3, 4, 5, 6, 7, 8, 9], mentions(code)


def test_the_old_runner_named_kinds_far_more_than_three(tmp_path: Path) -> None:
    """The runner before issue 38 (excerpts of its kind special cases): the count fires on it."""
    (tmp_path / "runner.py").write_text('''
from harness.history.model import APP_CONTRACT, TXN_PRODUCER
from harness.run import app_run, verdict_file
from harness.sparkjob.job import ENV_JOB_CONF, ENV_JOB_MASTER
counts = {int(w.settings.get("producers", 1)) for w in sc.workloads if w.kind == TXN_PRODUCER}
mine = registry.kind(kind).internal or kind == app_run.APP
draining = (*app_run.instances(sup), registry.APP_READER) if app is not None else ()
''')
    assert len(kind_mentions(tmp_path)) > ALLOWED
