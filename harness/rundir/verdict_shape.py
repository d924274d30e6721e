"""What every reader of a run's ``verdict.json`` relies on (the report, compare, the index), checked
where it is read: a file that is not a verdict is a ``ConfigError`` naming it. The verdict is
assembled one layer up (harness/run/verdict_file.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.base.errors import ConfigError, problems_in_brief


class _Shape(BaseModel):
    """What every reader of a verdict's figures relies on (the report, compare); the rest they read
    with ``.get``. Any format: a format-1 verdict has the same."""

    model_config = ConfigDict(extra="allow", strict=True)

    valid: bool | Literal["unknown"]
    checks: dict[str, dict[str, Any]]
    stats: dict[str, Any]
    history: dict[str, Any] = Field(default_factory=dict)


def as_verdict(path: Path, data: dict[str, Any]) -> dict[str, Any]:
    """``data``, read from ``path``, when it is a verdict (with ``history``, empty when it had
    none); ``ConfigError`` naming the file and the first field that is not, else."""
    try:
        _Shape.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{path}: not a verdict ({problems_in_brief(exc)})") from None
    data.setdefault("history", {})
    return data
