"""An app's placeholders (harness/workloads/app_args.py, docs/APPS.md): filled per instance, in the
environment too, and a wrong one named with what is allowed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.base.errors import ConfigError
from harness.workloads.app_args import PLACEHOLDERS, Place, environment, expand, problem

PLACE = Place(bootstrap="127.0.0.1:19092,127.0.0.1:19093", topics={"app-in": "app-in-r7", "app-out": "app-out-r7"},
              inputs=("app-in",), outputs=("app-out",), instance=1, instances=2, id="eos-chaos-app-r7",
              workdir="/runs/r7/workloads/app-1", python="/venv/bin/python")


def test_every_placeholder_is_filled_and_literal_braces_stay() -> None:
    argv = ["--bootstrap", "{bootstrap}", "--in={inputs}", "--out={outputs}", "{topic:app-in}", "{id}-{instance}",
            "of {instances}", '{{"json": true}}']
    assert [expand(a, PLACE) for a in argv] == [
        "--bootstrap", "127.0.0.1:19092,127.0.0.1:19093", "--in=app-in-r7", "--out=app-out-r7", "app-in-r7",
        "eos-chaos-app-r7-1", "of 2", '{"json": true}']


def test_every_placeholder_is_in_the_environment_too() -> None:
    assert environment(PLACE) == {
        "EOS_CHAOS_APP_BOOTSTRAP": "127.0.0.1:19092,127.0.0.1:19093", "EOS_CHAOS_APP_INPUTS": "app-in-r7",
        "EOS_CHAOS_APP_OUTPUTS": "app-out-r7", "EOS_CHAOS_APP_TOPICS": "app-in=app-in-r7,app-out=app-out-r7",
        "EOS_CHAOS_APP_INSTANCE": "1", "EOS_CHAOS_APP_INSTANCES": "2", "EOS_CHAOS_APP_ID": "eos-chaos-app-r7",
        "EOS_CHAOS_APP_WORKDIR": "/runs/r7/workloads/app-1", "EOS_CHAOS_APP_PYTHON": "/venv/bin/python"}
    assert set(environment(PLACE)) == {var for var, _ in PLACEHOLDERS.values()}


@pytest.mark.parametrize("text, says", [
    ("{bootstrp}", "{bootstrp} is not a placeholder; placeholders: {bootstrap}, {inputs}"),
    ("{topic:nope}", "{topic:nope} names no topic of the scenario (app-in, app-out)"),
    ("{topic}", "{topic} names a topic: {topic:NAME}, NAME one of app-in, app-out"),
    ("{id!r}", "{id!r} takes no conversion"),
    ("{instance:>3}", "{instance:>3} is not a placeholder"),
    ("{id", "a literal brace is written twice"),
])
def test_a_wrong_placeholder_is_named_with_what_is_allowed(text: str, says: str) -> None:
    found = problem(text, list(PLACE.topics))
    assert found is not None and says in found, found
    with pytest.raises(ConfigError, match=re.escape(says)):
        expand(text, PLACE)


def test_the_design_page_lists_every_placeholder() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "APPS.md").read_text()
    rows = dict(re.findall(r"^\| `\{([^}]+)\}` \| `(EOS_CHAOS_APP_[A-Z_]+)` \|", page, re.M))
    assert rows == {name: var for name, (var, _) in PLACEHOLDERS.items()}
