"""``--shard i/N``: which share of a campaign's runs one runner of a CI job matrix runs.

A share is a function of the definition alone (its runs in run order and what each costs), so
every runner computes the same shares without talking to the others, whatever the others ran
and in whatever order they started. The matrix's shares are contiguous pieces of its run order
(``share``): each shard starts few clusters (a cluster start is 20 s on the local backend, minutes
on compose), and the pieces are cut by cost so that the runners finish at about the same time.
A soak's runs are dealt round-robin instead (``soak_owner``): each run is one scenario on one
cluster, there is nothing to keep together."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from harness.base.errors import ConfigError

#: More shards than any CI's job matrix takes (GitHub Actions: 256 jobs a matrix).
MAX_SHARDS = 1000
_SHARD = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")

K = TypeVar("K")


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count``, 1-based as a CI's job matrix counts them (``2/7``)."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def as_json(self) -> dict[str, int]:
        return {"index": self.index, "count": self.count}


def parse_shard(text: str | None, flag: str = "--shard") -> Shard | None:
    """``--shard i/N`` as a Shard (None when not given); ConfigError (exit 2) naming the flag and
    what is allowed for anything but 1 <= i <= N <= ``MAX_SHARDS``."""
    if text is None:
        return None
    allowed = f"give i/N with 1 <= i <= N <= {MAX_SHARDS}, for example 2/7 (shard 2 of 7)"
    m = _SHARD.fullmatch(text)
    if m is None:
        raise ConfigError(f"{flag} {text!r} is not a shard; {allowed}")
    index, count = int(m[1]), int(m[2])
    if not 1 <= count <= MAX_SHARDS or not 1 <= index <= count:
        raise ConfigError(f"{flag} {text}: shard {index} of {count} does not exist; {allowed}")
    return Shard(index, count)


def shares(keys: Sequence[K], costs: Sequence[float], count: int) -> list[list[K]]:
    """``keys`` (in run order) cut into ``count`` contiguous pieces of about equal cost: a key goes
    to the piece its cost's midpoint falls in. Integer arithmetic on milliseconds, so every machine
    cuts at the same keys; a piece may be empty (more shards than runs)."""
    ms = [max(1, round(c * 1000)) for c in costs]
    total = sum(ms)
    out: list[list[K]] = [[] for _ in range(count)]
    before = 0
    for key, c in zip(keys, ms, strict=True):
        # the midpoint before + c/2 as a fraction of the total, times count, rounded down
        out[min(count - 1, (2 * before + c) * count // (2 * total))].append(key)
        before += c
    return out


def soak_owner(j: int, count: int) -> int:
    """The shard (1-based) that runs a soak's run ``j`` (0-based): every ``count``-th run."""
    return j % count + 1
