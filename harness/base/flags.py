"""Comma-separated flag values (``--clients a,b``), read one way by every command and by the
campaigns that parse their own flags: a flag given empty is refused by name, never read as its default."""

from __future__ import annotations

from harness.base.errors import ConfigError


def comma_list(flag: str, text: str) -> list[str]:
    """The items of ``text`` as given to ``flag`` (blanks trimmed, empty ones dropped); ``ConfigError``
    naming the flag when none is left: an empty list meant the default for some flags and was
    refused by others. A flag that was not given is the caller's to default (None is not passed here)."""
    items = [x.strip() for x in text.split(",") if x.strip()]
    if not items:
        raise ConfigError(f"{flag} is empty; give one or more values separated by commas")
    return items
