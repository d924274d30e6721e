"""The copier's output values, as ``harness.history.model.copy_value`` writes them:
``copy/<topic>/<partition>/<offset>/<attempt>/<value>`` (the value may hold ``/``, a topic name
cannot). The checks that read them (``copy-exactly-once``, ``g1c``'s copier reads) take one
definition from here, on both engines, so that they agree on every string:

- a value that does not start with ``copy/`` is not a copy (another workload's record);
- a copy is well-formed when it has all six parts and its partition and offset are ASCII decimal
  digits, at most 18 of them (an int64 holds them; Arrow's and Spark's casts take them all);
- a copy that is not well-formed names no input (``copy-exactly-once`` reports it as malformed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.history.model import COPY_PREFIX

#: what every copy starts with
PREFIX = COPY_PREFIX + "/"
#: the parts of a copy, split at its first five ``/``
PARTS = 6
#: a partition or an offset. ``\A`` and ``\z``, not ``^`` and ``$``: Java's ``$`` (Spark's rlike)
#: also matches before a final newline, RE2's (Arrow's) does not. ``[0-9]``, not ``\d`` or
#: ``utf8_is_digit``: other scripts' digits pass those, and the casts then fail.
NUMBER = r"\A[0-9]{1,18}\z"


@dataclass(frozen=True)
class CopyInputs:
    """The inputs copier output values name: ``at`` (each one's place among the values given) and,
    per input, its topic, partition, offset and value (the strings as Arrow arrays)."""

    at: np.ndarray
    topic: Any
    partition: np.ndarray
    offset: np.ndarray
    value: Any


def copy_input(values: Any) -> CopyInputs:
    """The input each well-formed copy among ``values`` names (strings: an Arrow array, a sequence,
    array or Series); other values are left out. Split by Arrow, not per string in Python (900k
    copies took 3 s so)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else pa.array(np.asarray(values, dtype=object), type=pa.string())
    parts = pc.split_pattern(arr, "/", max_splits=PARTS - 1)
    whole = pc.fill_null(pc.equal(pc.list_value_length(parts), PARTS), False)
    keep = np.flatnonzero(whole.to_numpy(zero_copy_only=False))
    if len(keep) < len(parts):  # copies only, normally: then no copy of the lists
        parts = parts.take(pa.array(keep, type=pa.int64()))

    def part(k: int) -> Any:
        return pc.list_element(parts, k)

    def number(k: int) -> Any:
        return pc.match_substring_regex(part(k), NUMBER)

    good = pc.and_(pc.equal(part(0), COPY_PREFIX), pc.and_(number(2), number(3)))
    ok = np.flatnonzero(pc.fill_null(good, False).to_numpy(zero_copy_only=False))
    sel = None if len(ok) == len(keep) else pa.array(ok, type=pa.int64())

    def column(k: int) -> Any:
        return part(k) if sel is None else pc.take(part(k), sel)

    return CopyInputs(keep[ok], column(1), pc.cast(column(2), pa.int64()).to_numpy(), pc.cast(column(3), pa.int64()).to_numpy(),
                      column(5))


def spark_copy(value: Any) -> tuple[Any, Any]:
    """A Spark column of strings split into a copy's parts (``F.get(parts, k)``), and whether it is
    a well-formed copy (the Spark engine's ``copy_input``)."""
    from pyspark.sql import functions as F

    parts = F.split(value, "/", PARTS)
    well = (value.startswith(PREFIX) & (F.size(parts) == PARTS) & F.get(parts, 2).rlike(NUMBER)
            & F.get(parts, 3).rlike(NUMBER))
    return parts, well
