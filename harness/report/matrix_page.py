"""``matrix.html``: the matrix as a grid readable at a glance (rows scenarios, columns client x
transaction version, cells coloured by what their runs found), then every cell's counts, checks,
wall time and the first failing seed with its replay command and report. Self-contained like the
run reports; made from ``matrix.json``'s data alone."""

from __future__ import annotations

from typing import Any

from harness.report import _env

#: What each cell state means, as the legend says it.
STATES = {
    "valid": "every run valid",
    "partial": "valid so far, runs still to come",
    "invalid": "a run found an anomaly",
    "unknown": "a run broke, a check crashed, or the history had nothing to judge (no finding)",
    "pending": "no run yet",
}


def level_name(level: int | None) -> str:
    return "default" if level is None else str(level)


def render_matrix(data: dict[str, Any], name: str = "") -> str:
    d = data["definition"]
    cells = {(c["scenario"], c["client"], c["transaction_version"]): c for c in data["cells"]}
    columns = [(client, level) for client in d["clients"] for level in d["levels"]]
    grid = [(s, d["expect_valid"].get(s, True), [cells[(s, client, level)] for client, level in columns])
            for s in d["scenarios"]]
    return _env.get_template("matrix.html.j2").render(
        m=data, d=d, t=data["totals"], columns=[(c, level_name(lv)) for c, lv in columns], grid=grid,
        cells=data["cells"], states=STATES, levels=[level_name(lv) for lv in d["levels"]], level_name=level_name,
        title=name if "matrix" in name else f"matrix {name}".strip())
