"""Which feature levels a Kafka release can be formatted at (``pins.TRANSACTION_VERSIONS``), checked
before anything starts, and the format flags that set them.

A table rather than asking the release itself: the storage tool of 3.9 cannot list its levels
(``version-mapping`` came in 4.0), and a JVM per check would cost seconds of a 2-core machine
before every start. The table is checked against the brokers' own ``SupportedFeatures`` by the
real-cluster tests, and the fault ``set-transaction-version`` asks the running cluster itself.
"""

from __future__ import annotations

from clusters.builds import pins
from harness.base.errors import ConfigError

TRANSACTION_VERSION = "transaction.version"


def _release(kafka_version: str) -> tuple[int, int]:
    major, minor, *_ = (int(x) for x in kafka_version.split("."))
    return major, minor


def transaction_versions(kafka_version: str) -> tuple[tuple[int, ...], int]:
    """(levels the release accepts, its default) for ``kafka_version`` (``X.Y.Z``)."""
    rel = _release(kafka_version)
    rows = [r for r in pins.TRANSACTION_VERSIONS if r[0] <= rel] or [pins.TRANSACTION_VERSIONS[0]]
    _, levels, default = rows[-1]
    return levels, default


def check_transaction_version(kafka_version: str, level: int | None, flag: str = "--transaction-version") -> None:
    """``ConfigError`` (exit 2) unless ``level`` is None (the release's default) or one the release
    accepts; the message names the flag, the release and what is allowed."""
    if level is None:
        return
    lo, hi = pins.TRANSACTION_VERSION_RANGE
    if not lo <= level <= hi:
        raise ConfigError(f"{flag} {level}: transaction.version levels are {lo}..{hi} (0 classic, 1 flexible "
                          f"transaction records, 2 KIP-890 epoch bump per transaction)")
    levels, default = transaction_versions(kafka_version)
    if level not in levels:
        raise ConfigError(f"{flag} {level}: Kafka {kafka_version} cannot be formatted at transaction.version={level}; "
                          f"it accepts {', '.join(map(str, levels))} (default {default}). Levels 1 and 2 need Kafka 4.0 "
                          f"or newer (--kafka-version {pins.KAFKA_VERSION}).")


def unsupported(kafka_version: str, level: int | None) -> str | None:
    """Why ``kafka_version`` cannot be formatted at ``level`` (``formats transaction.version 0
    only``), or None when it can (None, the release's default, it always can). The level must be in
    ``pins.TRANSACTION_VERSION_RANGE`` (``check_transaction_version`` says so otherwise)."""
    levels, _ = transaction_versions(kafka_version)
    if level is None or level in levels:
        return None
    return f"formats transaction.version {', '.join(map(str, levels))} only"


def format_args(transaction_version: int | None) -> list[str]:
    """The storage tool's flags for the levels asked for (none: the release's defaults, as before)."""
    return [] if transaction_version is None else ["--feature", f"{TRANSACTION_VERSION}={transaction_version}"]


def intended_levels(kafka_version: str, transaction_version: int | None) -> dict[str, int]:
    """The feature levels a cluster formatted so should be at, and a heal restores."""
    return {TRANSACTION_VERSION: transaction_versions(kafka_version)[1] if transaction_version is None else transaction_version}
