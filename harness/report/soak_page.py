"""``soak.html``: the soak's runs as one table (each linking to its own report), the totals, and
the commands that replay the failures. Self-contained like the run reports."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from harness.report import _env
from harness.rundir.runfolder import RunFolder


def render_soak(data: dict[str, Any], out: Path) -> str:
    rows = []
    for r in data["runs"]:
        run_dir = Path(r["run_dir"])
        report = RunFolder(run_dir).report
        rows.append({**r, "name": run_dir.name,
                     "link": os.path.relpath(report, out) if report.exists() else None})
    title = out.name if "soak" in out.name else f"soak {out.name}"
    return _env.get_template("soak.html.j2").render(d=data, rows=rows, title=title)
