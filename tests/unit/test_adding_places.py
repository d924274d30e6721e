"""docs/ADDING.md's lists of places are the code's: every path, test and dotted name it gives in
backticks exists, and each worked example (a ``names "IDENT":`` block) lists exactly the modules of
harness/, chaos/ and clusters/ whose code names IDENT. A failure says which module is listed but
does not name it, or names it but is not listed. Each rule is shown firing on a page written to
fail it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import adding_places as ap
from tests.named_in import modules_naming

EXAMPLES = ap.examples()


def test_every_path_test_and_name_the_page_gives_exists() -> None:
    problems = ap.reference_problems()
    assert problems == [], "\n".join(problems)


def test_each_kind_of_addition_has_a_worked_example() -> None:
    sections = {ex.section for ex in EXAMPLES}
    assert sections == {"A client", "A fault", "A check", "A workload kind", "A shipped app"}, sections
    assert {"app", "copier"} <= {ex.ident for ex in EXAMPLES}, "the workload kinds' worked examples are the app and the copier"


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda ex: ex.ident)
def test_a_worked_example_lists_exactly_the_modules_that_name_it(example: ap.Example) -> None:
    problems = ap.example_problems(example, modules_naming(example.ident))
    assert problems == [], "\n".join(problems)


# ---- each rule fires where it must ----

def test_a_module_listed_but_not_naming_it_and_one_naming_it_unlisted_are_both_named(tmp_path: Path) -> None:
    page = tmp_path / "ADDING.md"
    page.write_text('## A workload kind\n\n```text\nnames "copier":\n'
                    "  harness/workloads/registry.py   its entry\n"
                    "  harness/run/supervisor.py       does not name it\n"
                    '"copier" meaning something else:\n  harness/apps/kafka_copier.py   the folder\n```\n')
    [ex] = ap.examples(page)
    assert ex.section == "A workload kind" and ex.line == 4 and set(ex.other) == {"harness/apps/kafka_copier.py"}
    problems = ap.example_problems(ex, modules_naming("copier"))
    listed_only = [p for p in problems if "is listed as naming 'copier', but its code does not mention it" in p]
    unlisted = [p for p in problems if "is not in the list of modules naming 'copier'" in p]
    assert [p.split(": ")[1].split()[0] for p in listed_only] == ["harness/run/supervisor.py"], problems
    assert "harness/history/model.py mentions 'copier' (" in "\n".join(unlisted), problems
    assert "harness/workloads/registry.py" not in "\n".join(problems), "a module listed and naming it is fine"
    assert len(problems) == 1 + len(modules_naming("copier")) - 2


def test_a_constant_bound_to_the_name_counts_wherever_it_is_imported_or_read(tmp_path: Path) -> None:
    for folder in ("harness/history", "harness/run", "harness/checker", "chaos", "clusters"):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
    (tmp_path / "harness/history/model.py").write_text('KIND, OTHER = "my-kind", "x"\n')
    (tmp_path / "harness/run/runner.py").write_text("from harness.history import model as m\n\nK = m.KIND\n")
    (tmp_path / "harness/checker/progress.py").write_text("from harness.history.model import KIND as K\n\nx = [K]\n")
    (tmp_path / "harness/checker/again.py").write_text("from harness.checker.progress import K\n")
    (tmp_path / "harness/run/other.py").write_text('"""Docstring naming my-kind."""\n# my-kind\nKIND = "other"\n')
    (tmp_path / "chaos/literal.py").write_text('kinds = {"my-kind": 1}\n')
    found = modules_naming("my-kind", root=tmp_path)
    assert sorted(found) == ["chaos/literal.py", "harness/checker/again.py", "harness/checker/progress.py",
                             "harness/history/model.py", "harness/run/runner.py"], found
    assert found["harness/run/runner.py"].how == "m.KIND (= 'my-kind')" and found["harness/run/runner.py"].line == 3


def test_a_path_test_or_name_the_code_lacks_is_named(tmp_path: Path) -> None:
    page = tmp_path / "ADDING.md"
    page.write_text("## A fault\n\n| `chaos/faults/gone.py` | `harness/workloads/<name>.py` | `harness/nowhere/<name>.py` |\n"
                    "`tests/unit/test_faults.py::test_no_such_test` `harness.history.model.PROGRESS_OPS` "
                    "`harness.history.model.NO_SUCH` `clusters.builds.cache.cache_lock()` `clusters.gone.thing` "
                    "`clusters/backends/procs.describe_cmdline`\n")
    problems = ap.reference_problems(page)
    assert [p.split("`")[1] for p in problems] == [
        "chaos/faults/gone.py", "harness/nowhere/<name>.py", "tests/unit/test_faults.py::test_no_such_test",
        "harness.history.model.NO_SUCH", "clusters.gone.thing", "clusters/backends/procs.describe_cmdline"], problems
    assert problems[2].endswith("tests/unit/test_faults.py has no test_no_such_test")


def test_a_block_line_that_is_not_a_module_line_is_refused(tmp_path: Path) -> None:
    page = tmp_path / "ADDING.md"
    page.write_text('```text\nnames "app":\nharness/run/runner.py without its indent\n```\n')
    with pytest.raises(ap.PageError, match=r"ADDING.md:3: 'harness/run/runner.py without its indent' is not a module line"):
        ap.examples(page)
