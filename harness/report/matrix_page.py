"""``matrix.html``: the matrix as a grid readable at a glance (rows scenario x Kafka version,
columns client x transaction version, cells coloured by what their runs found; a cell whose Kafka
version cannot be formatted at its transaction version says so; one whose runs had faults that
failed says how many), then every cell's counts, checks, failed faults,
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
    "not-run": "not run: its shard is missing from the merge (no finding, and not valid either)",
    "other-shard": "run by another shard of this matrix (eos-chaos matrix merge joins them)",
    "unsupported": "the Kafka version cannot be formatted at this transaction version: nothing to run (no finding)",
}


def level_name(level: int | None) -> str:
    return "default" if level is None else str(level)


def kafka_versions(d: dict[str, Any]) -> list[str]:
    """The definition's Kafka versions; a format-1 definition's one (null: the release's default)."""
    return d.get("kafka_versions") or [d.get("kafka_version") or "default"]


def render_matrix(data: dict[str, Any], name: str = "") -> str:
    d = data["definition"]
    versions = kafka_versions(d)
    # a format-1 cell has neither: it ran on the one Kafka version, and every level was supported;
    # a cell recorded before failed faults were counted had none counted
    all_cells = [{"kafka_version": versions[0], "unsupported": None, "faults_failed": 0, "runs_with_failed_faults": 0, **c}
                 for c in data["cells"]]
    cells = {(c["scenario"], c["client"], c["kafka_version"], c["transaction_version"]): c for c in all_cells}
    columns = [(client, level) for client in d["clients"] for level in d["levels"]]
    grid = [(s, d["expect_valid"].get(s, True),
             [(kv, [cells[(s, client, kv, level)] for client, level in columns]) for kv in versions])
            for s in d["scenarios"]]
    return _env.get_template("matrix.html.j2").render(
        m=data, d=d, t=data["totals"], columns=[(c, level_name(lv)) for c, lv in columns], grid=grid,
        cells=all_cells, states=STATES, levels=[level_name(lv) for lv in d["levels"]], level_name=level_name,
        kafka_versions=versions, title=name if "matrix" in name else f"matrix {name}".strip(),
        colours=COLOURS, count=(data.get("merged") or {}).get("count"),
        failed_faults=sum(c.get("faults_failed", 0) for c in all_cells),
        runs_with_failed_faults=sum(c.get("runs_with_failed_faults", 0) for c in all_cells))


#: Each state's colour, in the grid and the legend.
COLOURS = {"valid": "#c8e6c9", "partial": "#e8f5e9", "invalid": "#ffcdd2", "unknown": "#ffe0b2", "pending": "#eeeeee",
           "not-run": "#d7ccc8", "other-shard": "#f5f5f5", "unsupported": "#e3e8f0"}
