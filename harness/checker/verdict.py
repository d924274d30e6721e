"""The checker's result, typed: one ``CheckResult`` per check and the ``Verdict`` of a history.

JSON (``to_json``): ``{"format": 1, "valid": true|false|"unknown", "checks": {<name>: {"count",
"examples"[, "skipped"][, "error", "traceback"]}}, "stats": {...}, "history": {...}, "engine"}``.
Every check is present even when its count is 0. A check that crashes reports ``count: null`` and
its error, and makes ``valid`` "unknown", never false. Writing it to a run folder is not the
checker's job (it only reads history).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

FORMAT = 1
UNKNOWN: Literal["unknown"] = "unknown"
Validity = bool | Literal["unknown"]


@dataclass
class CheckResult:
    """What one check found: how many anomalies (None: it crashed) and a few examples."""

    count: int | None
    examples: list[dict[str, Any]] = field(default_factory=list)
    #: set when the history holds nothing this check could look at (it then counts 0 but says so)
    skipped: str | None = None
    #: the exception a crashed check raised (``Type: message``) and where
    error: str | None = None
    traceback: str | None = None

    def to_json(self) -> dict[str, Any]:
        """``{"count", "examples"}``, plus ``skipped`` / ``error`` and ``traceback`` when set."""
        out: dict[str, Any] = {"count": self.count, "examples": self.examples}
        if self.skipped:
            out["skipped"] = self.skipped
        if self.error is not None:
            out["error"] = self.error
            out["traceback"] = self.traceback
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> CheckResult:
        """The result ``to_json`` wrote."""
        return cls(d.get("count"), list(d.get("examples") or []), d.get("skipped"), d.get("error"), d.get("traceback"))


@dataclass
class Verdict:
    """The verdict of one history: every check's result, figures of the history, what was read."""

    valid: Validity
    checks: dict[str, CheckResult]
    #: informational figures of the history alone (never failing)
    stats: dict[str, Any]
    #: how much history was checked: ``ops``, ``truncated`` files (and a ``note`` when any)
    history: dict[str, Any]
    engine: str = "default"
    format: int = FORMAT

    def to_json(self) -> dict[str, Any]:
        """The verdict as ``verdict.json`` has always held it (the keys in this order)."""
        return {"format": self.format, "valid": self.valid,
                "checks": {name: c.to_json() for name, c in self.checks.items()},
                "stats": self.stats, "history": self.history, "engine": self.engine}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Verdict:
        """The verdict in ``d`` (a ``to_json``; keys it does not own, like a run's facts, are left out)."""
        return cls(d["valid"], {name: CheckResult.from_json(c) for name, c in d.get("checks", {}).items()},
                   dict(d.get("stats") or {}), dict(d.get("history") or {}), d.get("engine", "default"),
                   int(d.get("format", FORMAT)))


def validity(checks: dict[str, CheckResult]) -> Validity:
    """False when any check found an anomaly; else "unknown" when one crashed; else True."""
    if any(c.count for c in checks.values()):
        return False
    return UNKNOWN if any(c.count is None for c in checks.values()) else True
