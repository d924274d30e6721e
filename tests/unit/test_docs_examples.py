"""The README and docs/ stay true: every code example runs as written, and the reference pages list
what the code has. Python examples compile, name nothing undefined and leave no ``...``; those that
need no cluster run. Every ``eos-chaos`` line in a shell block parses on the real command line, every
``--eos-*`` option is the plugin's, every ``make`` target exists. YAML examples are valid scenarios,
JSON parses (links: tests/unit/test_doc_links.py). The reference tables hold every command option, fault kind, check,
library scenario, workload setting and plugin option, and nothing else; the README's exit-code
table is the guard's. Each check is also shown failing on a block written to fail it (the old
README's plugin example among them). The examples that need a cluster: tests/chaos/test_docs_examples.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests import docs_examples as de
from tests.docs_examples import Block

BLOCKS = de.all_blocks()
DOCS = de.ROOT / "docs"


def _of(lang: str | tuple[str, ...]) -> list[Block]:
    langs = (lang,) if isinstance(lang, str) else lang
    return [b for b in BLOCKS if b.lang in langs]


@pytest.fixture(scope="module")
def plugin_options(pytestconfig: pytest.Config) -> set[str]:
    """The options the installed plugin registers (through its entry point, wherever it lives)."""
    plugin = pytestconfig.pluginmanager.get_plugin("eos_chaos")
    assert plugin is not None, "the eos_chaos pytest plugin is not installed"
    return de.pytest_plugin_options(plugin.pytest_addoption)


def _section(page: Path, heading: str) -> str:
    """The text of ``page`` under ``## heading`` up to the next heading of that level or higher."""
    text = page.read_text()
    start = text.index(f"## {heading}\n")
    after = re.search(r"^#{1,2} ", text[start + 3:], re.M)
    return text[start:start + 3 + after.start()] if after else text[start:]


def _first_column(text: str) -> list[str]:
    """The backticked names in the first column of the markdown tables in ``text``."""
    return re.findall(r"^\| `([^`]+)` \|", text, re.M)


# ---- the examples ----

def test_the_docs_have_examples_of_every_kind_this_file_checks() -> None:
    langs = {b.lang for b in BLOCKS}
    assert {"python", "sh", "yaml", "json"} <= langs, langs
    assert [b for b in BLOCKS if b.marker == "chaos"], "the README's plugin example must be marked to run on a cluster"
    assert [b for b in BLOCKS if b.marker == "workflow"], "docs/howto/matrix-in-ci.md's workflow must be marked"


@pytest.mark.parametrize("page", de.pages(), ids=de.shown)
def test_fences_say_their_language_and_markers_mark_a_fence(page: Path) -> None:
    problems = de.marker_problems(page) + [p for b in de.blocks(page) for p in de.language_problems(b)]
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize("block", _of("python"), ids=str)
def test_a_python_example_is_complete_and_runs_unless_it_needs_a_cluster(
        block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    problems = de.python_problems(block, run=block.marker is None)
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize("block", _of(("sh", "console")), ids=str)
def test_every_command_in_a_shell_example_exists_as_written(block: Block, plugin_options: set[str]) -> None:
    problems = de.command_problems(block, plugin_options)
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize("block", [b for b in _of("yaml") if b.marker != "workflow"], ids=str)
def test_a_yaml_example_is_a_valid_scenario(block: Block, tmp_path: Path) -> None:
    problems = de.yaml_problems(block, tmp_path)
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.marker == "workflow"], ids=str)
def test_a_workflow_example_has_jobs_and_its_commands_exist_as_written(block: Block, plugin_options: set[str]) -> None:
    problems = de.workflow_problems(block, plugin_options)
    assert problems == [], "\n".join(problems)


def test_a_workflow_that_is_no_workflow_or_runs_a_wrong_command_is_caught(plugin_options: set[str]) -> None:
    def problems(code: str) -> list[str]:
        return de.workflow_problems(_block("yaml", code, "workflow"), plugin_options)

    assert "a workflow has jobs" in problems("name: x\non: push\n")[0]
    assert "job 'a' has no steps" in problems("jobs:\n  a:\n    runs-on: ubuntu-latest\n")[0]
    wrong = problems("jobs:\n  a:\n    steps:\n      - run: |\n          eos-chaos matrix --scenarios x --shards ${{ matrix.i }}/7\n"
                     "      - run: make setup-everything\n")
    assert len(wrong) == 2 and "No such option: --shards" in wrong[0] and "no target 'setup-everything'" in wrong[1], wrong
    right = "jobs:\n  a:\n    steps:\n      - run: eos-chaos matrix --scenarios x --seed 1 --shard ${{ matrix.i }}/7\n"
    assert problems(right) == [], "a CI expression stands for a value"
    assert "a workflow example is YAML" in de.language_problems(_block("sh", "true", "workflow"))[0]


@pytest.mark.parametrize("block", _of("json"), ids=str)
def test_a_json_example_parses(block: Block) -> None:
    assert de.json_problems(block) == []


# ---- each check fails where it must (negative controls) ----

def _block(lang: str, code: str, marker: str | None = None) -> Block:
    return Block(Path("made-up.md"), 1, lang, code, marker)


OLD_README_PLUGIN_EXAMPLE = """\
import pytest
from confluent_kafka import Producer

def test_my_transactions_survive_a_leader_kill(kafka_cluster, nemesis):
    producer = Producer({"bootstrap.servers": kafka_cluster.bootstrap, "transactional.id": "orders"})
    with nemesis.fault("kill", target="leader", of="orders/0"):
        for i in range(20):
            commit(producer, f"order-{i}", "orders")
    ...
"""


def test_the_old_readme_plugin_example_is_caught_twice() -> None:
    problems = "\n".join(de.python_problems(_block("python", OLD_README_PLUGIN_EXAMPLE, "chaos"), run=False))
    assert "Undefined name `commit`" in problems
    assert "`...` placeholder" in problems


def test_a_python_example_that_raises_or_does_not_compile_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert "raised when run" in de.python_problems(_block("python", "x = {}\nx['missing']\n"), run=True)[0]
    assert "does not compile" in de.python_problems(_block("python", "def f(:\n"), run=True)[0]
    assert de.python_problems(_block("python", "x = {'a': 1}\nassert x['a'] == 1\n"), run=True) == []


@pytest.mark.parametrize("line, says", [
    ("eos-chaos runn txn-baseline", "eos-chaos has no command 'runn'"),
    ("eos-chaos run txn-baseline --sed 7", "No such option: --sed"),
    ("eos-chaos run txn-baseline --seed seven", "Invalid value for '--seed'"),
    ("eos-chaos run txn-baseline --duration 1", "Invalid value for '--duration'"),
    ("eos-chaos matrix --seeds 5", "Missing option '--scenarios'"),
    ("eos-chaos cluster upp", "eos-chaos cluster has no command 'upp'"),
    ("eos-chaos --verbos run txn-baseline", "eos-chaos has no option --verbos"),
    ("eos-chaos run txn-baseline [--backend local|compose] [--sed S]", "eos-chaos run has no option --sed"),
    ("pytest -m chaos --eos-backnd compose tests/", "pytest has no option --eos-backnd"),
    ("make tests", "the Makefile has no target 'tests'"),
    ("eos-chaos run 'unclosed", "cannot be split like a shell would"),
])
def test_a_command_that_does_not_exist_as_written_is_caught(line: str, says: str, plugin_options: set[str]) -> None:
    problems = de.command_problems(_block("sh", line + "\n"), plugin_options)
    assert len(problems) == 1 and says in problems[0], problems


def test_commands_are_read_as_a_shell_reads_them(plugin_options: set[str]) -> None:
    code = ("X=1 .venv/bin/eos-chaos run txn-baseline \\\n    --seed 7   # a comment --no-such-option\n"
            "eos-chaos cluster status --json | jq .nodes && make down\n"
            "$ eos-chaos scenarios\nnot a command line\n")
    found = [(c.tool, c.args) for c in de.commands(_block("sh", code))]
    assert found == [("eos-chaos", ("run", "txn-baseline", "--seed", "7")),
                     ("eos-chaos", ("cluster", "status", "--json")), ("make", ("down",))]
    assert [c.args for c in de.commands(_block("console", code))] == [("scenarios",)]  # console: $ lines only
    assert de.command_problems(_block("sh", code), plugin_options) == []


def test_a_yaml_example_that_is_not_a_valid_scenario_is_caught(tmp_path: Path) -> None:
    bad_kind = de.yaml_problems(_block("yaml", "- {at: 5, kind: partiton, duration: 3}\n"), tmp_path)
    assert len(bad_kind) == 1 and "'partiton' is not a fault kind" in bad_kind[0]
    late = de.yaml_problems(_block("yaml", "name: x\ndescription: y\nduration: 10\nworkloads: [{kind: reader}]\n"
                                           "faults: [{at: 20, kind: kill}]\n"), tmp_path)
    assert len(late) == 1 and "line 5" in late[0] and "past the scenario's end" in late[0], late
    assert "not scenario fields" in de.yaml_problems(_block("yaml", "colour: red\n"), tmp_path)[0]
    assert de.yaml_problems(_block("yaml", "workloads: [{kind: reader, client: {isolation.level: read_uncommitted}}]\n"
                                           "expect: {valid: false, fires: [aborted-read]}\n"), tmp_path) == []


def test_an_inventory_example_is_loaded_as_an_inventory(tmp_path: Path) -> None:
    good = "name: docs\nnodes:\n  - {id: 1, host: h, listeners: {client: \"h:9092\"}, control: {local: {}}, broker: {service: kafka}}\n"
    assert de.yaml_problems(_block("yaml", good, "inventory"), tmp_path) == []
    assert "not scenario fields" in de.yaml_problems(_block("yaml", good), tmp_path)[0]  # unmarked: a scenario
    bad = de.yaml_problems(_block("yaml", good.replace("service: kafka", "servise: kafka"), "inventory"), tmp_path)
    assert len(bad) == 1 and "line 3: nodes[0].broker.servise: unknown key" in bad[0], bad
    assert "an inventory example is YAML" in de.language_problems(_block("json", "{}", "inventory"))[0]


def test_a_broken_marker_is_caught(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n"
                    "<!-- example: chaos -->\nA paragraph, not a fence.\n\n<!-- example: slow -->\n```python\npass\n```\n")
    markers = de.marker_problems(page)
    assert len(markers) == 2 and "right before a code fence" in markers[0] and "unknown example marker 'slow'" in markers[1]
    assert [b.marker for b in de.blocks(page)] == ["slow"]
    assert "the fence says 'no language'" in de.language_problems(_block("", "x"))[0]


# ---- the reference pages hold what the code has ----

def test_the_cli_reference_lists_exactly_each_commands_options() -> None:
    import typer

    from harness.cli import app

    text = (DOCS / "reference" / "cli.md").read_text()
    sections = dict(re.findall(r"^## `(eos-chaos [^`]+)`\n(.*?)(?=^## |\Z)", text, re.M | re.S))
    intro = text[:text.index("\n## ")]
    problems = []

    def walk(command: object, path: str) -> None:
        if hasattr(command, "list_commands"):
            ctx = command.make_context(path, [], resilient_parsing=True)  # type: ignore[attr-defined]
            for name in command.list_commands(ctx):  # type: ignore[attr-defined]
                walk(command.get_command(ctx, name), f"{path} {name}")  # type: ignore[attr-defined]
            if not getattr(command, "invoke_without_command", False):  # else a command too: eos-chaos matrix
                return
        if path not in sections:
            problems.append(f"no section for `{path}`")
            return
        documented = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", sections.pop(path)))
        options = {o for o in de._option_names(command) if o.startswith("--")} - {"--help"}
        if documented != options:
            problems.append(f"`{path}`: missing {sorted(options - documented)}, not options of it {sorted(documented - options)}")

    root = typer.main.get_command(app)
    walk(root, "eos-chaos")
    problems += [f"a section for `{name}`, which is not a command" for name in sections]
    root_options = {o for o in de._option_names(root) if o.startswith("--")} - {"--help"}
    if not root_options <= set(re.findall(r"--[a-z][a-z0-9-]*", intro)):
        problems.append(f"the global options {sorted(root_options)} belong before the first section")
    assert problems == [], "\n".join(problems)


def test_the_faults_reference_has_a_row_per_kind_with_its_own_fields() -> None:
    from chaos.faults import REGISTRY
    from chaos.faults.base import FaultBase

    kinds = _section(DOCS / "reference" / "faults.md", "Kinds")
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `([^`]+)` \|.*$", kinds, re.M)}
    assert sorted(rows) == sorted(REGISTRY)
    for kind, model in REGISTRY.items():
        own = set(model.model_fields) - set(FaultBase.model_fields)
        listed = set(re.findall(r"`([a-z_]+)`", rows[kind].rsplit("|", 2)[1]))
        assert listed == own, f"{kind}: fields {sorted(own)}, the row lists {sorted(listed)}"


def test_the_checks_reference_has_a_row_per_check_with_its_final_column() -> None:
    from harness.checker import CHECKS, NEEDS_FINAL_READS

    rows = re.findall(r"^\| `([a-z0-9-]+)` \|.*\| *(yes)? *\|$", _section(DOCS / "reference" / "checks.md", "The checks"), re.M)
    assert [name for name, _ in rows] == list(CHECKS)  # the verdict's order
    assert {name for name, final in rows if final} == set(NEEDS_FINAL_READS)


def test_the_scenario_library_reference_names_every_scenario_once() -> None:
    from harness.run import scenario

    names = _first_column((DOCS / "reference" / "scenarios.md").read_text())
    assert sorted(names) == scenario.names()


def test_the_scenario_format_reference_names_every_workload_kind_and_setting() -> None:
    from harness.workloads.registry import KINDS

    text = _section(DOCS / "reference" / "scenario-format.md", "Workloads")
    for kind, k in KINDS.items():
        if k.internal:
            continue  # the harness's own (an app's output reader): not a scenario's to name
        assert f"**`{kind}`**" in text
        missing = [s for s in k.settings.model_fields if f"`{s}`" not in text]
        assert missing == [], f"{kind}: settings not in the reference: {missing}"


def test_the_plugin_reference_lists_exactly_the_plugins_options(plugin_options: set[str]) -> None:
    rows = _first_column(_section(DOCS / "reference" / "pytest-plugin.md", "Options"))
    assert sorted(rows) == sorted(plugin_options)


def test_every_environment_variable_the_docs_name_is_read_by_the_code() -> None:
    code = "".join(p.read_text() for d in ("harness", "clusters", "chaos") for p in (de.ROOT / d).rglob("*.py"))
    code += (de.ROOT / "Makefile").read_text() + (de.ROOT / "tests" / "conftest.py").read_text()
    named = {v for p in de.pages() for v in re.findall(r"\bEOS_CHAOS_[A-Z0-9_]+\b", p.read_text())}
    assert named and {v for v in named if v not in code} == set()
    # the user's pages name only what a user may set; the design pages also name the harness's own
    users = {v for p in de.pages() if p.parent.name != "docs" or p.name in ("README.md", "tutorial.md")
             for v in re.findall(r"\bEOS_CHAOS_[A-Z0-9_]+\b", p.read_text())}
    rows = _first_column((DOCS / "reference" / "environment.md").read_text())
    assert {v for v in users if v not in rows} == set(), "every variable a user's page names has a row in environment.md"


def test_the_readme_exit_code_table_is_the_guards() -> None:
    from harness.base.errors import HarnessError
    from harness.cli import guard
    from harness.cli.summary import EXIT_CODES

    table = _section(de.ROOT / "README.md", "Exit codes")
    meanings = dict(re.findall(r"^\| (\d+) \| ([^|]+)", table, re.M))
    assert sorted(int(c) for c in meanings) == [0, 1, 2, 3, 130]
    assert (EXIT_CODES[True], EXIT_CODES[False], EXIT_CODES["unknown"]) == (0, 1, 3)
    assert meanings["0"].startswith("valid") and meanings["1"].startswith("a finding")
    assert meanings["3"].startswith("unknown") and meanings[str(guard.EXIT_INTERRUPTED)].startswith("interrupted")
    assert HarnessError.exit_code == guard.EXIT_INTERNAL == 2 and meanings["2"].startswith("bad input")


def test_the_readme_is_a_front_page() -> None:
    readme = (de.ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    for link in ("docs/README.md", "docs/KIP890.md", "docs/howto/matrix.md", "docs/howto/pytest-plugin.md"):
        assert f"]({link})" in readme
