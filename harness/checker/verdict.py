"""The checker's result, typed: one ``CheckResult`` per check and the ``Verdict`` of a history.

JSON (``to_json``): ``{"format": 1, "valid": true|false|"unknown", "unknown_because": [...], "checks": {<name>: {"count",
"examples"[, "skipped"][, "error", "traceback"][, "by_app"]}}, "stats": {...}, "history": {...}, "engine"}``.
Every check is present even when its count is 0. A check that crashes reports ``count: null`` and
its error, and makes ``valid`` "unknown", never false; so does a history that cannot be judged
whole (``unknown_because``: no final reads, nothing committed, nothing read). Writing it to a run folder is not the
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
    #: an app contract's check: the findings of each app it judged (``checks.Found.by_app``)
    by_app: dict[str, int] | None = None

    def to_json(self) -> dict[str, Any]:
        """``{"count", "examples"}``, plus ``skipped`` / ``error`` and ``traceback`` / ``by_app`` when set."""
        out: dict[str, Any] = {"count": self.count, "examples": self.examples}
        if self.skipped:
            out["skipped"] = self.skipped
        if self.by_app is not None:
            out["by_app"] = self.by_app
        if self.error is not None:
            out["error"] = self.error
            out["traceback"] = self.traceback
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> CheckResult:
        """The result ``to_json`` wrote."""
        return cls(d.get("count"), list(d.get("examples") or []), d.get("skipped"), d.get("error"), d.get("traceback"),
                   d.get("by_app"))


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
    #: why the history could not be judged as a whole (no final reads, nothing committed, no reads):
    #: with no finding, each makes ``valid`` "unknown"
    unknown_because: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The verdict as ``verdict.json`` holds it (the keys in this order)."""
        return {"format": self.format, "valid": self.valid, "unknown_because": self.unknown_because,
                "checks": {name: c.to_json() for name, c in self.checks.items()},
                "stats": self.stats, "history": self.history, "engine": self.engine}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Verdict:
        """The verdict in ``d`` (a ``to_json``; keys it does not own, like a run's facts, are left out)."""
        return cls(d["valid"], {name: CheckResult.from_json(c) for name, c in d.get("checks", {}).items()},
                   dict(d.get("stats") or {}), dict(d.get("history") or {}), d.get("engine", "default"),
                   int(d.get("format", FORMAT)), list(d.get("unknown_because") or []))


def validity(checks: dict[str, CheckResult], unknown_because: list[str] | None = None) -> Validity:
    """False when any check found an anomaly; else "unknown" when one crashed or the history as a
    whole could not be judged (``unknown_because``); else True. A finding stands even in a history
    that cannot be judged whole: an aborted read seen by a poll happened, final reads or not."""
    if any(c.count for c in checks.values()):
        return False
    return UNKNOWN if unknown_because or any(c.count is None for c in checks.values()) else True
