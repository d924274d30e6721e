"""Generators of an app feeder's input (docs/APPS.md, "The feeder"): ``feeder: {generator:
"harness.apps.generators:lines"}``. Each is called as ``fn(rnd, seq)`` with the feeder's seeded
``random.Random`` of the input topic and the record's sequence number, and returns the record
``{"key", "value", "headers", "timestamp"}`` (absent fields: None; no timestamp: the feeder's
clock). They draw only from ``rnd``, so a run's seed gives the same input again.
"""

from __future__ import annotations

import random
from typing import Any

#: A small vocabulary, so that words repeat across lines (a word count has counts above 1).
WORDS = ("the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "kafka", "streams", "exactly", "once",
         "chaos", "word", "count", "table")
#: Words per line: 1 to this many.
MAX_WORDS = 8
#: The categories of ``orders`` (a revenue per category sums its amounts).
CATEGORIES = ("books", "games", "music", "tools")
#: An order's amount: 1 to this many (whole currency units: sums stay exact integers).
MAX_AMOUNT = 100


def lines(rnd: random.Random, seq: int) -> dict[str, Any]:
    """A line of 1 to ``MAX_WORDS`` words of ``WORDS`` (text, no key): a word count's input."""
    return {"key": None, "value": " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(1, MAX_WORDS)))}


def orders(rnd: random.Random, seq: int) -> dict[str, Any]:
    """An order (format json), keyed by its id: ``{"id": seq, "category": one of CATEGORIES,
    "amount": 1 to MAX_AMOUNT}``: a revenue per category's input."""
    return {"key": f"order-{seq}",
            "value": {"id": seq, "category": rnd.choice(CATEGORIES), "amount": rnd.randint(1, MAX_AMOUNT)}}
