"""Every relative link of README.md and docs/**/*.md, and what is wrong with each: the file (or
folder, or code file) it names must exist, and its ``#anchor`` must be a heading of that page under
GitHub's slug rules or an explicit ``<a id=...>`` / ``<a name=...>``.

GitHub's rules (github-slugger, what github.com renders): a heading's text as rendered (code spans
keep their text, emphasis and links their words, inline HTML goes), lower-cased, every character but
letters, digits, ``_``, ``-`` and spaces dropped, each space a ``-``; a slug a page already has gets
``-1``, then ``-2``, ... Links to http(s) pages and mail addresses are not followed: nothing leaves
this machine. Markdown is read with markdown-it (tables on, as GitHub has them), never regexes, so a
link inside a code span or a fence is no link.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parent.parent
#: A scheme (``https:``, ``mailto:``) marks a link this test does not follow.
_EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)
#: What github-slugger keeps: word characters (letters, digits, ``_``), ``-`` and spaces.
_DROPPED = re.compile(r"[^\w\- ]")


@dataclass(frozen=True)
class Link:
    """One link of a page: where it stands and what it points to."""

    page: Path
    #: 1-based line of the paragraph, heading or table row the link is in
    line: int
    href: str

    @property
    def where(self) -> str:
        return f"{shown(self.page)}:{self.line}"


def shown(path: Path) -> str:
    """``path`` relative to the repository where it is inside it."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def pages() -> list[Path]:
    """The README and every page under docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _parse(text: str) -> list[Any]:
    return MarkdownIt("commonmark").enable("table").parse(text)


class _HtmlAttrs(HTMLParser):
    """The ``(tag, attribute, value)`` triples of a piece of raw HTML."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found += [(tag, name, value) for name, value in attrs if value is not None]


def _html_attrs(html: str) -> list[tuple[str, str, str]]:
    parser = _HtmlAttrs()
    parser.feed(html)
    parser.close()
    return parser.found


def slug(text: str) -> str:
    """GitHub's anchor of a heading whose rendered text is ``text`` (before the duplicate suffix)."""
    return _DROPPED.sub("", text.strip().lower()).replace(" ", "-")


def _rendered(inline: Any) -> str:
    """The text a heading shows: code spans and link words kept, markup and inline HTML dropped."""
    return "".join(c.content for c in inline.children or [] if c.type in ("text", "code_inline"))


@cache
def _anchors_of(text: str) -> frozenset[str]:
    tokens = _parse(text)
    seen: dict[str, int] = {}
    out: set[str] = set()
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open":
            base = slug(_rendered(tokens[i + 1]))
            anchor = base
            while anchor in out:  # github-slugger: the n-th repeat of a slug is slug-n
                seen[base] = seen.get(base, 0) + 1
                anchor = f"{base}-{seen[base]}"
            out.add(anchor)
        for html in _html_pieces(tok):
            out |= {value for tag, name, value in _html_attrs(html) if tag == "a" and name in ("id", "name")}
    return frozenset(out)


def anchors(page: Path) -> frozenset[str]:
    """Every ``#anchor`` that lands somewhere on ``page``: its headings' slugs and explicit ids."""
    return _anchors_of(page.read_text(encoding="utf-8"))


def _html_pieces(tok: Any) -> Iterator[str]:
    if tok.type == "html_block":
        yield tok.content
    for child in tok.children or []:
        if child.type == "html_inline":
            yield child.content


def links(page: Path) -> list[Link]:
    """Every link and image of ``page``, markdown or raw HTML (``<a href>``, ``<img src>``)."""
    out = []
    for tok in _parse(page.read_text(encoding="utf-8")):
        line = tok.map[0] + 1 if tok.map else 0
        hrefs = [c.attrs.get("href") if c.type == "link_open" else c.attrs.get("src") if c.type == "image" else None
                 for c in tok.children or []]
        hrefs += [value for html in _html_pieces(tok) for tag, name, value in _html_attrs(html)
                  if (tag, name) in (("a", "href"), ("img", "src"))]
        out += [Link(page, line, h) for h in hrefs if isinstance(h, str)]
    return out


def link_problems(page: Path) -> list[str]:
    """``page:line: link 'href': what is wrong`` for each relative link of ``page`` whose file does
    not exist or whose anchor lands nowhere (empty: every link resolves)."""
    out = []
    for link in links(page):
        if _EXTERNAL.match(link.href):
            continue
        target, _, anchor = link.href.partition("#")
        path = (page.parent / target).resolve() if target else page
        if not path.exists():
            out.append(f"{link.where}: link {link.href!r}: {shown(path)} does not exist")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            near = sorted(a for a in anchors(path) if a.split("-")[0] == anchor.split("-")[0])
            hint = f" (headings there like it: {', '.join('#' + a for a in near)})" if near else ""
            out.append(f"{link.where}: link {link.href!r}: {shown(path)} has no heading or id #{anchor}{hint}")
    return out
