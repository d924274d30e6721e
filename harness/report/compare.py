"""``eos-chaos compare RUN_A RUN_B``: what differs between two runs — the verdict, each check's
count, throughput, commit latency, transaction outcomes, and how they were run (scenario, seed,
backend, versions). Read from each folder's ``verdict.json``, ``scenario.json`` and ``journal.json`` alone."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness.base.errors import ConfigError
from harness.rundir.journal import Journal
from harness.rundir.run_verdict import RunVerdict
from harness.rundir.runfolder import RunFolder

#: Figures compared, as (section, path in the verdict's stats).
FIGURES: list[tuple[str, tuple[str, ...]]] = [
    ("throughput", ("throughput", "ok_txn_per_s")),
    ("throughput", ("throughput", "committed_values_per_s")),
    *[("latency", ("commit_latency_ms", q)) for q in ("p50", "p95", "p99", "max")],
    *[("transactions", ("txn", k)) for k in ("ok", "fail", "info")],
    ("transactions", ("fenced",)),
    ("transactions", ("committed_values",)),
]
RUN_FIELDS = ("name", "backend", "seed", "duration")


@dataclass
class Row:
    section: str
    key: str
    a: Any
    b: Any

    @property
    def differs(self) -> bool:
        return bool(self.a != self.b)

    @property
    def change(self) -> str:
        """Relative change of a figure (``+12.5%``), or empty."""
        numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (self.a, self.b))
        if self.section in ("throughput", "latency", "transactions") and numbers and self.a:
            return f"{(self.b - self.a) / abs(self.a) * 100:+.1f}%"
        return ""


def _run(path: Path) -> tuple[RunVerdict, dict[str, Any]]:
    """The folder's verdict, and how it was run: ``scenario.json`` with the journal's versions (a
    folder made before runs kept a journal: those ``scenario.json`` recorded)."""
    if not path.is_dir():
        raise ConfigError(f"run folder {path} does not exist")
    folder = RunFolder(path)
    verdict = RunVerdict.load(folder)
    if verdict is None:
        raise ConfigError(f"{path} has no {folder.verdict.name}: not a finished run (eos-chaos check {path} makes one)")
    scenario = folder.read_json(folder.scenario) or {}
    journal = Journal.load(folder)
    if journal is not None:
        scenario["versions"] = journal.versions
    return verdict, scenario


def _dig(d: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k)  # type: ignore[assignment]
    return d


def _count(v: RunVerdict, check: str) -> int | None:
    """What ``check`` counted in ``v`` (None: it crashed, or ``v`` has no such check)."""
    return v.checks[check].count if check in v.checks else None


def compare(a: Path, b: Path) -> list[Row]:
    """Every compared row (``Row.differs`` tells which differ)."""
    (va, sa), (vb, sb) = _run(a), _run(b)
    rows = [Row("verdict", "valid", va.valid, vb.valid)]
    if va.as_expected is not None or vb.as_expected is not None:
        rows.append(Row("verdict", "as expected", va.as_expected, vb.as_expected))
    for name in dict.fromkeys([*va.checks, *vb.checks]):
        rows.append(Row("checks", name, _count(va, name), _count(vb, name)))
    for section, path in FIGURES:
        key = path[-1] + (" ms" if section == "latency" else "")
        rows.append(Row(section, key, _dig(va.stats, path), _dig(vb.stats, path)))
    for k in RUN_FIELDS:
        rows.append(Row("run", k, sa.get(k), sb.get(k)))
    for k in dict.fromkeys([*(sa.get("versions") or {}), *(sb.get("versions") or {})]):
        rows.append(Row("versions", k, (sa.get("versions") or {}).get(k), (sb.get("versions") or {}).get(k)))
    rows.append(Row("run", "faults", _dig(va.stats, ("faults",)), _dig(vb.stats, ("faults",))))
    return rows


def as_json(a: Path, b: Path, rows: list[Row]) -> dict[str, Any]:
    return {"a": str(a), "b": str(b), "differs": [asdict(r) | {"change": r.change} for r in rows if r.differs],
            "same": [asdict(r) for r in rows if not r.differs]}
