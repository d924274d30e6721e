"""The app contract is typed once (issue 38): ``harness.history.schema.AppContract``, what the run
records (``app-contract``) and the checker and the report read; the scenario's contract settings
(``registry.ContractSettings``) make one with ``recorded``. One name, one thing."""

from __future__ import annotations

import ast
from pathlib import Path

from harness.history.schema import AppContract, contracts
from harness.phases.app_run import contract_value
from harness.workloads.registry import AppSettings

HARNESS = Path(__file__).resolve().parents[2] / "harness"


def classes_named(name: str, root: Path = HARNESS) -> list[str]:
    """``file:line`` of every class ``name`` defined under ``root``."""
    return [f"{p.relative_to(root.parent)}:{n.lineno}" for p in sorted(root.rglob("*.py"))
            for n in ast.walk(ast.parse(p.read_text())) if isinstance(n, ast.ClassDef) and n.name == name]


def test_app_contract_is_defined_once() -> None:
    found = classes_named("AppContract")
    assert len(found) == 1 and found[0].startswith("harness/history/schema.py:"), found


def test_the_count_sees_a_second_definition(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("class AppContract:\n    pass\n")
    (tmp_path / "b.py").write_text("class AppContract(Base):\n    x: int\n")
    assert len(classes_named("AppContract", tmp_path)) == 2


def _app(contract: dict[str, object]) -> AppSettings:
    return AppSettings.model_validate({"command": ["{python}", "app.py"], "inputs": ["in"], "outputs": ["out", "cnt"][:2 if
                                       contract["kind"] == "aggregate" else 1], "ready": {"log": "up"}, "contract": contract})


def test_the_recorded_contract_has_the_shape_the_history_always_had_and_reads_back_typed() -> None:
    m = _app({"kind": "map", "order": "per-key"})
    a = _app({"kind": "aggregate", "aggregates": {"cnt": "count"}})
    assert contract_value(m) == {"app": "app", "contract": "map", "inputs": ["in"], "outputs": ["out"],
                                 "function": "identity", "order": "per-key"}
    assert contract_value(a) == {"app": "app", "contract": "aggregate", "inputs": ["in"], "outputs": ["out", "cnt"],
                                 "aggregates": {"cnt": "count"}}
    typed = contracts({"apps": [contract_value(m), contract_value(a)]})
    assert [type(c) for c in typed] == [AppContract, AppContract]
    assert [c.contract for c in contracts({"apps": [contract_value(m), contract_value(a)]}, "aggregate")] == ["aggregate"]
    assert typed[0].value() == contract_value(m)
