"""A page for the runs of one pytest session (the plugin writes it at the session's end): the same
rows as ``index.html`` (harness/report/index_page.py), for exactly the session's runs."""

from __future__ import annotations

from pathlib import Path

from harness.report.index_page import write_runs_page


def write_session_page(out: Path, run_dirs: list[Path], title: str) -> Path:
    """Write ``out`` (an HTML file; links in it are relative to its folder) listing exactly
    ``run_dirs``, in that order, atomically; return its path. A run folder that is missing or broken
    is a row that says so, never an error."""
    n = len(run_dirs)
    return write_runs_page(out, run_dirs, title, f"{n} run{'' if n == 1 else 's'} of this pytest session, in the order they ran.")
