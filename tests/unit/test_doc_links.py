"""Every relative link and anchor of README.md and docs/ resolves: the file exists (a page, a folder
or a code file) and its ``#anchor`` is a heading of that page by GitHub's slug rules or an explicit
``<a id>``/``<a name>``. Shown failing on a page written with one broken link of each sort."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import doc_links as dl


@pytest.mark.parametrize("page", dl.pages(), ids=dl.shown)
def test_every_relative_link_and_anchor_resolves(page: Path) -> None:
    problems = dl.link_problems(page)
    assert problems == [], "\n".join(problems)


def test_the_pages_have_links_of_every_sort_this_file_checks() -> None:
    hrefs = [link.href for page in dl.pages() for link in dl.links(page)]
    assert any(h.startswith("#") for h in hrefs), "no same-page anchor link left to check"
    assert any(".md#" in h for h in hrefs), "no link to another page's section left to check"
    assert any(h.endswith(".png") for h in hrefs), "no image left to check"


@pytest.mark.parametrize(("heading", "anchor"), [
    ("The `app` kind: what it does", "the-app-kind-what-it-does"),
    ("Client × protocol (KAFKA-17754)", "client--protocol-kafka-17754"),
    ("What **each** [fault](x.md) hit", "what-each-fault-hit"),
    ("snake_case stays", "snake_case-stays"),
])
def test_anchors_follow_githubs_slug_rules(tmp_path: Path, heading: str, anchor: str) -> None:
    page = tmp_path / "page.md"
    page.write_text(f"## {heading}\n")
    assert dl.anchors(page) == {anchor}


def test_repeated_headings_and_explicit_ids_are_anchors(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Runs\n\n## Runs\n\n### Runs\n\n<a id=\"kept\"></a>\n\nText <a name=\"old-name\"></a> here.\n")
    assert dl.anchors(page) == {"runs", "runs-1", "runs-2", "kept", "old-name"}


def test_a_broken_link_or_anchor_of_each_sort_is_caught(tmp_path: Path) -> None:
    (tmp_path / "code.py").write_text("")
    (tmp_path / "other.md").write_text("# Other\n\n## A section\n\n## A section\n")
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n"
        "Good: [here](#title) [there](other.md#a-section) [again](other.md#a-section-1) [code](code.py) "
        "[web](https://example.org/#nothing) [mail](mailto:a@b.c) `[in code](gone.md)`\n\n"
        "| a table | [cell](nowhere.md) |\n|---|---|\n\n"
        "Broken: [section](other.md#no-section) [third](other.md#a-section-2) [self](#no-such-heading) "
        "[code](../harness/gone.py) ![pic](img/none.png) <a href=\"raw.md\">raw</a>\n")
    problems = dl.link_problems(page)
    expected = ["'nowhere.md'", "'other.md#no-section'", "'other.md#a-section-2'", "'#no-such-heading'",
                "'../harness/gone.py'", "'img/none.png'", "'raw.md'"]
    assert len(problems) == len(expected), "\n".join(problems)
    for problem, href in zip(problems, expected, strict=True):
        assert f"link {href}" in problem, (href, problem)
    assert "page.md:5:" in problems[0] and "does not exist" in problems[0]
    assert "has no heading or id #no-section" in problems[1]
    assert "#a-section, #a-section-1" in problems[2], "a near miss names the anchors the page has"
