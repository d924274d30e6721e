"""Input generators of the shipped apps' scenarios (docs/APPS.md, "The feeder": ``generator:
harness.apps.generators:NAME``). The feeder calls one per record with a random generator seeded from
the run's seed and the topic, and the record's sequence number in that topic; it returns the record
``{"key", "value", "headers", "timestamp"}`` (text; a timestamp of None is the feeder's wall clock).
They import nothing heavy: each run loads this module. ``purchases`` is JSON (``format: json``)."""

from __future__ import annotations

import random
import time
from typing import Any

#: the words lines are made of: mixed case and punctuation, so the app's lower-casing and its split on
#: non-word characters matter (``"Stream's"`` is the words ``stream`` and ``s``)
VOCABULARY = ("Kafka", "kafka", "stream", "Stream's", "exactly", "once", "the", "THE", "a", "log",
              "offset", "commit", "abort", "fence", "epoch", "word", "count", "table", "join", "window")
#: the customers of the join's orders; those past ``REGIONED`` never get a region (their orders join none)
CUSTOMERS = 10
REGIONED = 8
REGIONS = ("eu", "us", "apac", "latam")
#: The categories of ``purchases`` (a revenue per category sums its amounts).
CATEGORIES = ("books", "games", "music", "tools")
#: A purchase's amount: 1 to this many (whole currency units: sums stay exact integers).
MAX_AMOUNT = 100
#: the windowed count's keys
EVENT_KEYS = 8
#: how far back a late event's timestamp goes (ms): past the shipped scenarios' window and grace
LATE_MS = (2500, 6000)


#: ``lines`` as a feeder's ``generator`` names it (``bench app``'s shaped feeder by default)
LINES = f"{__name__}:lines"


def lines(rnd: random.Random, seq: int) -> dict[str, Any]:
    """A line of 1 to 8 words of ``VOCABULARY`` joined by a space, a comma or ``", "`` (no key: the word
    count reads only the value; it never starts with a non-word character, which Java's split would
    turn into an empty first word)."""
    words = [rnd.choice(VOCABULARY) for _ in range(rnd.randint(1, 8))]
    line = words[0]
    for w in words[1:]:
        line += rnd.choice((" ", " ", ", ", "-")) + w
    return {"key": None, "value": line + rnd.choice(("", "", ".", "!")), "headers": None, "timestamp": None}


def events(rnd: random.Random, seq: int) -> dict[str, Any]:
    """An event of key ``e0`` to ``e7`` (value ``"1"``): four in five stamped now, the rest late by up to
    a second and a half (inside the shipped scenarios' grace) or by ``LATE_MS`` (past it: a record the
    windowed count must drop). The wall clock is read here, so the feeder records the stamp given."""
    now = int(time.time() * 1000)
    roll = rnd.random()
    late = 0 if roll < 0.8 else rnd.randint(1, 1500) if roll < 0.95 else rnd.randint(*LATE_MS)
    return {"key": f"e{rnd.randrange(EVENT_KEYS)}", "value": "1", "headers": None, "timestamp": now - late}


def orders(rnd: random.Random, seq: int) -> dict[str, Any]:
    """An order ``o<seq>-<amount>`` of customer ``c0`` to ``c9`` (the key)."""
    return {"key": f"c{rnd.randrange(CUSTOMERS)}", "value": f"o{seq}-{rnd.randint(1, 500)}", "headers": None,
            "timestamp": None}


def regions(rnd: random.Random, seq: int) -> dict[str, Any]:
    """A customer's (``c0`` to ``c7``) region, the table the orders are joined with: the first
    ``REGIONED`` records give each its first region in turn, later ones move a random customer. The
    value is ``<region>-<seq>``, unique, so an order joined with an aborted write is told from one
    joined with a committed write of the same region."""
    customer = seq if seq < REGIONED else rnd.randrange(REGIONED)
    return {"key": f"c{customer}", "value": f"{rnd.choice(REGIONS)}-{seq}", "headers": None, "timestamp": None}


def purchases(rnd: random.Random, seq: int) -> dict[str, Any]:
    """A purchase (format json), keyed by its id: ``{"id": seq, "category": one of CATEGORIES,
    "amount": 1 to MAX_AMOUNT}``: a revenue per category's input."""
    return {"key": f"purchase-{seq}",
            "value": {"id": seq, "category": rnd.choice(CATEGORIES), "amount": rnd.randint(1, MAX_AMOUNT)}}
