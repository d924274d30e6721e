"""Every registry entry is complete: adding a fault kind, a client library, a workload kind or a
check is one entry plus its own module (docs/ADDING.md), and this file names what an incomplete
one lacks. Each check is a function that lists the problems of the registry as it is now; the
plant tests put an incomplete entry in (monkeypatch) and see that check name it, so none of them
passes by checking nothing."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar, Literal, get_args

import pytest
from pydantic import BaseModel
from typing_extensions import get_protocol_members

from chaos import faults
from chaos.faults.base import CATEGORIES, Category, FaultBase, FaultContext, Heal
from harness import checker
from harness.checker.catalog import CATALOG, Check
from harness.report import plots
from harness.workloads import clients, registry
from harness.workloads.client import Client, GroupReader, Reader
from tests.unit import test_faults

ROOT = Path(__file__).resolve().parents[2]
#: The references people read: every fault kind is named in the first (in backticks), every check
#: has a row in the second.
FAULT_REFERENCE = ROOT / "docs" / "reference" / "faults.md"
CHECK_REFERENCE = ROOT / "docs" / "reference" / "checks.md"


# ---------------------------------------------------------------- faults

def fault_problems() -> list[str]:
    """What a fault kind of ``chaos.faults.REGISTRY`` lacks: a model of its own, a category the
    report can draw, a mention in the reference, a fire test in tests/unit/test_faults.py."""
    reference = FAULT_REFERENCE.read_text()
    out = []
    for kind, model in faults.REGISTRY.items():
        if not (isinstance(model, type) and issubclass(model, FaultBase)) or model.model_fields["kind"].default != kind:
            out.append(f"{kind}: no model of its own (a FaultBase with kind: Literal[{kind!r}])")
            continue
        if model.apply is FaultBase.apply:
            out.append(f"{kind}: its model has no apply")
        category = getattr(model, "category", None)
        if category not in CATEGORIES:
            out.append(f"{kind}: category {category!r} is none of {', '.join(CATEGORIES)}")
        if f"`{kind}`" not in reference:
            out.append(f"{kind}: not named in {FAULT_REFERENCE.name}'s list of kinds")
        if kind not in test_faults.FIRED:
            out.append(f"{kind}: no entry in tests/unit/test_faults.py FIRED (the test that fires every kind)")
    return out


def test_every_fault_kind_is_complete() -> None:
    assert fault_problems() == []
    assert list(faults.REGISTRY) == list(get_args(faults.FaultKind))  # the type is the registry's keys


def test_every_category_is_drawn_in_a_colour_of_its_own_and_named_in_the_legend() -> None:
    assert set(CATEGORIES) == set(get_args(Category)) == set(plots.COLOURS)
    colours = [c for c, _ in plots.COLOURS.values()] + [plots.UNKNOWN_COLOUR[0]]
    assert len(set(colours)) == len(colours)
    assert plots.legend(list(faults.REGISTRY)) == [f"{name}: {CATEGORIES[c]}" for c, (_, name) in plots.COLOURS.items()]


class _Unfinished(FaultBase):
    """A new kind as a first draft leaves it: a model, nothing else."""

    kind: Literal["unfinished"] = "unfinished"


class _Finished(FaultBase):
    kind: Literal["kill"] = "kill"
    category: ClassVar[Category] = "process"

    def apply(self, ctx: FaultContext) -> Heal:
        return lambda: None


def test_a_fault_kind_without_category_apply_reference_or_fire_test_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(faults.REGISTRY, "unfinished", _Unfinished)
    assert fault_problems() == ["unfinished: its model has no apply",
                                "unfinished: category None is none of " + ", ".join(CATEGORIES),
                                "unfinished: not named in faults.md's list of kinds",
                                "unfinished: no entry in tests/unit/test_faults.py FIRED (the test that fires every kind)"]


def test_a_fault_kind_registered_with_another_kinds_model_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(faults.REGISTRY, "kill-twice", _Finished)
    assert fault_problems() == ["kill-twice: no model of its own (a FaultBase with kind: Literal['kill-twice'])"]


def test_the_report_draws_each_kind_by_the_category_its_model_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(faults.REGISTRY["kill-executor"], "category", "wire")
    assert plots.fault_colour("kill-executor") == plots.COLOURS["wire"][0]  # read from the model, not the name


# ---------------------------------------------------------------- client libraries

def _entry_problems(key: str, name: str, module: str) -> list[str]:
    """An entry filed under another name than its own, or naming a module that is not there."""
    return ([f"{key}: entry named {name!r}"] if name != key else []) + (
        [f"{key}: no module {module}"] if importlib.util.find_spec(module) is None else [])


#: Each protocol's constructor arguments after the version (``ClientLibrary``'s docstring).
OPENED_WITH = {"producer": (Client, ["bootstrap", "txn_id", "transaction_timeout_ms", "overrides"]),
               "reader": (Reader, ["bootstrap", "group", "partitions", "overrides"]),
               "group_reader": (GroupReader, ["bootstrap", "group", "topics", "overrides"])}


def client_problems() -> list[str]:
    """What an entry of ``harness.workloads.clients.CLIENTS`` lacks: its module, a class per
    protocol with every method and the constructor the table calls, complete versions with a way
    to prepare one."""
    out = []
    for name, c in clients.CLIENTS.items():
        out += _entry_problems(name, c.name, c.module)
        if importlib.util.find_spec(c.module) is None:
            continue
        module = importlib.import_module(c.module)
        for role in clients.ROLES:
            protocol, args = OPENED_WITH[role]
            cls = getattr(module, getattr(c, role), None)
            if not inspect.isclass(cls):
                out.append(f"{name}: {c.module} has no class {getattr(c, role)!r} ({role})")
                continue
            missing = sorted(m for m in get_protocol_members(protocol) if not callable(getattr(cls, m, None)))
            if missing:
                out.append(f"{name}: {cls.__name__} lacks {protocol.__name__}'s {', '.join(missing)}")
            wanted = (["version"] if c.versions else []) + args
            got = list(inspect.signature(cls).parameters)
            if got != wanted:
                out.append(f"{name}: {cls.__name__}{tuple(got)} is not opened with {tuple(wanted)}")
        if c.versions is not None:
            v = c.versions
            if not all(re.fullmatch(v.pattern, x) for x in (v.default, v.example, *v.setup)):
                out.append(f"{name}: its default, example or set-up versions do not match {v.pattern!r}")
            if not (v.spelled and v.what):
                out.append(f"{name}: its versions do not say how they are spelled and what they name")
            if c.prepare is None:
                out.append(f"{name}: takes versions but says no way to prepare one (prepare)")
    if clients.DEFAULT_LIBRARY not in clients.CLIENTS:
        out.append(f"the default library {clients.DEFAULT_LIBRARY} has no entry")
    return out


def test_every_client_library_is_complete() -> None:
    assert client_problems() == []
    assert clients.LIBRARIES == tuple(clients.CLIENTS)


def test_a_client_entry_without_its_module_or_prepare_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(clients.CLIENTS, "franz-go", clients.ClientLibrary(
        "franz-go", "harness.workloads.clients.franz_go", "FranzClient", "FranzReader", "FranzGroupReader",
        versions=clients.Versions("1.18.0", r"\d+\.\d+\.\d+", "MAJOR.MINOR.PATCH", "a franz-go release", "1.17.1")))
    assert client_problems() == ["franz-go: no module harness.workloads.clients.franz_go"]


def test_a_client_entry_with_a_missing_class_or_the_wrong_constructor_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    java = clients.CLIENTS["java"]
    monkeypatch.setitem(clients.CLIENTS, "java", clients.ClientLibrary(
        "java", java.module, "JavaProducer", "ConfluentReader", java.group_reader, versions=java.versions))
    monkeypatch.setattr(importlib.import_module(java.module), "ConfluentReader", GroupReaderOnly, raising=False)
    assert client_problems() == [
        "java: harness.workloads.clients.java has no class 'JavaProducer' (producer)",
        "java: GroupReaderOnly lacks Reader's poll",
        "java: GroupReaderOnly('bootstrap', 'group', 'topics') is not opened with "
        "('version', 'bootstrap', 'group', 'partitions', 'overrides')",
        "java: takes versions but says no way to prepare one (prepare)"]


class GroupReaderOnly:
    def __init__(self, bootstrap: str, group: str, topics: list[str]) -> None: ...

    def close(self) -> None: ...


def test_a_versioned_library_other_than_java_is_one_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    """franz-go@VERSION as a later entry will be: parsed, prepared per version and opened with its
    version, by the table alone (its classes here are stand-ins recording how they were opened)."""
    made: list[str] = []
    module = importlib.import_module("harness.workloads.clients.java")
    monkeypatch.setattr(module, "FranzClient", lambda *args: ("producer", args), raising=False)
    monkeypatch.setitem(clients.CLIENTS, "franz-go", clients.ClientLibrary(
        "franz-go", module.__name__, "FranzClient", "JavaReader", "JavaGroupReader",
        versions=clients.Versions("1.18.0", r"\d+\.\d+\.\d+", "MAJOR.MINOR.PATCH", "a franz-go release", "1.17.1",
                                  setup=("1.18.0",)),
        prepare=made.append))
    assert str(clients.parse("franz-go")) == "franz-go@1.18.0" and str(clients.parse("franz-go@1.17.1")) == "franz-go@1.17.1"
    with pytest.raises(ValueError, match=r"expected franz-go@MAJOR.MINOR.PATCH"):
        clients.parse("franz-go@1.x")
    with pytest.raises(ValueError, match=r"only java, franz-go and sarama take a version \(java@VERSION, franz-go@VERSION, sarama@VERSION\)"):
        clients.parse("kafka-python@2.0.0")
    clients.prepare(["franz-go", "franz-go@1.17.1", "franz-go@1.18.0", "confluent-kafka"])
    assert made == ["1.17.1", "1.18.0"]  # each version once, nothing for the others
    assert "franz-go@1.18.0" in clients.setup_specs()
    assert "franz-go or franz-go@VERSION" in clients.spelled()
    assert clients.open_producer("franz-go@1.17.1", "b:1", "t", 60_000, {}) == (  # type: ignore[comparison-overlap]
        "producer", ("1.17.1", "b:1", "t", 60_000, {}))


def test_the_plain_sends_rule_reads_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="a txn-producer with transactional: false runs on confluent-kafka only, not kafka-python"):
        registry.check_library("txn-producer", "kafka-python", {"transactional": False})
    monkeypatch.setitem(clients.CLIENTS, "kafka-python", clients.CLIENTS["kafka-python"].__class__(
        **{**vars(clients.CLIENTS["kafka-python"]), "plain_sends": True}))
    registry.check_library("txn-producer", "kafka-python", {"transactional": False})  # now it may


# ---------------------------------------------------------------- workload kinds

def workload_problems() -> list[str]:
    """What a kind of ``harness.workloads.registry.KINDS`` lacks: its module, a settings model, and
    settings of that model wherever the entry names one."""
    out = []
    for name, k in registry.KINDS.items():
        out += _entry_problems(name, k.name, k.module)
        if not (inspect.isclass(k.settings) and issubclass(k.settings, BaseModel)):
            out.append(f"{name}: no settings model")
            continue
        fields = k.settings.model_fields
        named = [*k.topic_settings, *k.compacted, *([k.consumes.group, k.consumes.input] if k.consumes else []),
                 *([k.group] if k.group else []),
                 *([k.plain_sends_setting] if k.plain_sends_setting else []), *(["role"] if k.roles else [])]
        unknown = [s for s in named if s not in fields]
        if unknown:
            out.append(f"{name}: names settings its model lacks: {', '.join(unknown)}")
        if not set(k.compacted) <= set(k.topic_settings):
            out.append(f"{name}: compacted settings must be topic settings")
        if k.progress_file is not None and "{name}" not in k.progress_file:
            out.append(f"{name}: progress_file without {{name}}")
        if not set(k.libraries) <= set(clients.LIBRARIES):
            out.append(f"{name}: libraries {sorted(set(k.libraries) - set(clients.LIBRARIES))} are not in the client table")
    public = tuple(n for n, k in registry.KINDS.items() if not k.internal)
    if set(public) != set(get_args(registry.KindName)):
        out.append(f"KindName {get_args(registry.KindName)} is not the registry's kinds {public}")
    return out


def test_every_workload_kind_is_complete() -> None:
    assert workload_problems() == []


def test_a_workload_kind_without_module_or_settings_model_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry.KINDS, "new", registry.Kind("new", "harness.workloads.new", dict))  # type: ignore[arg-type]
    monkeypatch.setitem(registry.KINDS, "newer", registry.Kind(
        "newer", "harness.workloads.reader", registry.ReaderSettings, topic_settings=("input",), compacted=("markers",),
        progress_file="progress.json"))
    assert workload_problems() == [
        "new: no module harness.workloads.new", "new: no settings model",
        "newer: names settings its model lacks: input, markers", "newer: compacted settings must be topic settings",
        "newer: progress_file without {name}",
        f"KindName {get_args(registry.KindName)} is not the registry's kinds "
        f"{tuple(n for n, k in registry.KINDS.items() if not k.internal)}"]


def test_the_spark_jobs_progress_file_is_the_one_the_job_writes(tmp_path: Path) -> None:
    from harness.sparkjob.job import PROGRESS_FILE, job_dir

    pattern = registry.kind("spark-job").progress_file
    assert pattern is not None and tmp_path / pattern.format(name="spark-job-0") == job_dir(tmp_path, "spark-job-0") / PROGRESS_FILE


# ---------------------------------------------------------------- checks

def check_problems(records: tuple[Check, ...] = CATALOG) -> list[str]:
    """What a check's record (harness/checker/catalog.py) lacks: a meaning (the report and the summary
    say it), a default implementation, a row in docs/reference/checks.md, and on the Spark engine
    either an implementation that resolves (held equal to the default engine's by
    tests/unit/test_spark_engine.py) or the reason it has none, with the meta-only "nothing to
    judge" its stand-in answers by (tests/unit/test_app_contracts.py holds the stand-ins to the
    default engine's reasons for skipping)."""
    readme = CHECK_REFERENCE.read_text()
    out = []
    names = [c.name for c in records]
    out += [f"{name}: {names.count(name)} records" for name in sorted(set(names)) if names.count(name) > 1]
    for c in records:
        if not c.meaning.strip():
            out.append(f"{c.name}: no meaning")
        if not callable(c.default):
            out.append(f"{c.name}: no default engine implementation")
        if f"| `{c.name}` |" not in readme:
            out.append(f"{c.name}: no row in docs/reference/checks.md")
        if c.spark is None:
            if not (c.spark_missing or "").strip():
                out.append(f"{c.name}: the Spark engine lacks it without a reason (spark_missing)")
            if c.nothing_to_judge is None:
                out.append(f"{c.name}: the Spark engine lacks it, and nothing says when a history gives it nothing to judge")
            continue
        if c.spark_missing is not None:
            out.append(f"{c.name}: a Spark implementation and a reason it has none")
        try:
            if not callable(c.spark_check()):
                out.append(f"{c.name}: {c.spark} is not a function")
        except (ImportError, AttributeError) as exc:
            out.append(f"{c.name}: {c.spark} does not resolve ({type(exc).__name__})")
    return out


def test_every_check_record_is_complete_on_both_engines() -> None:
    assert check_problems() == []


def test_an_incomplete_check_record_is_named() -> None:
    def new_check(t: Any) -> Any: ...

    planted = (*CATALOG,
               Check("new-check", " ", new_check, None),  # the Spark engine lacks it, without a reason
               Check("gone-twin", "what it means", new_check, "harness.checker.spark_engine:no_such_check"),
               Check("both", "what it means", new_check, "harness.checker.spark_engine:duplicate", "why not"),
               CATALOG[0])
    assert check_problems(planted) == [
        "duplicate: 2 records",
        "new-check: no meaning", "new-check: no row in docs/reference/checks.md",
        "new-check: the Spark engine lacks it without a reason (spark_missing)",
        "new-check: the Spark engine lacks it, and nothing says when a history gives it nothing to judge",
        "gone-twin: no row in docs/reference/checks.md",
        "gone-twin: harness.checker.spark_engine:no_such_check does not resolve (AttributeError)",
        "both: no row in docs/reference/checks.md", "both: a Spark implementation and a reason it has none"]


def test_every_table_by_check_name_is_derived_from_the_records() -> None:
    """Nothing else names a check: the checker's and the Spark engine's tables are the records'."""
    from harness.checker import spark_engine

    names = [c.name for c in CATALOG]
    assert list(checker.CHECKS) == list(checker.MEANING) == list(spark_engine.CHECKS) == names
    assert checker.NEEDS_FINAL_READS == tuple(c.name for c in CATALOG if c.needs_final_reads)
    assert spark_engine.DEFAULT_ENGINE_ONLY == {c.name: c.spark_missing for c in CATALOG if c.spark is None}


def spark_modules_loaded_by(*modules: str) -> list[str]:
    """The Spark engine's modules, PySpark's and py4j's that importing ``modules`` loads (in a fresh interpreter)."""
    code = (f"import json, sys, {', '.join(modules)}; "
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('pyspark', 'py4j', 'harness.checker.spark_')))))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    loaded: list[str] = json.loads(r.stdout)
    return loaded


def test_importing_the_checker_imports_neither_the_spark_engine_nor_pyspark() -> None:
    """The records name the Spark engine's implementations (``module:function``); only the Spark
    engine resolves them, so the default engine runs where PySpark is not installed. The control:
    importing the Spark engine is seen."""
    assert spark_modules_loaded_by("harness.checker", "harness.checker.catalog") == []
    assert "harness.checker.spark_engine" in spark_modules_loaded_by("harness.checker.spark_engine")
