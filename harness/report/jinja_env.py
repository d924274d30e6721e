"""The Jinja environment every HTML page is rendered in (``harness/report/templates``), with the
filters the templates use: ``cell`` (a value as a person reads it) and ``hit``."""

from __future__ import annotations

from typing import Any

import jinja2

from harness.report.app_section import is_record, record_text
from harness.report.data import hit_text, is_position, position_text

ENV = jinja2.Environment(loader=jinja2.PackageLoader("harness.report", "templates"),
                          autoescape=jinja2.select_autoescape(["html", "j2"]), undefined=jinja2.StrictUndefined,
                          trim_blocks=True, lstrip_blocks=True)


def cell(v: Any) -> str:
    """A value of an example or a figure as a person reads it."""
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:,.2f}".rstrip("0").rstrip(".") if v != int(v) or abs(v) < 1e15 else str(v)
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}" if abs(v) >= 10000 else str(v)
    if isinstance(v, (list, tuple)):
        return ", ".join(cell(x) for x in v) if v else "–"
    if is_position(v):
        return position_text(v)
    if is_record(v):
        return record_text(v)
    if isinstance(v, dict):
        return ", ".join(f"{k}: {cell(x)}" for k, x in v.items()) if v else "–"
    return str(v)


ENV.filters["cell"] = cell
ENV.filters["hit"] = hit_text
