"""The readers' figures Jepsen reports (``harness/checker/figures.py``): ``unseen`` and
``realtime_lag`` over time, worked out by hand on a history whose reader falls behind and catches
up; its twin whose reader keeps up shows no lag; a history without polls has neither figure. The
Spark engine's identical figures are in ``test_spark_engine.py``."""

from __future__ import annotations

from pathlib import Path

from harness.checker import check
from harness.history.builder import History
from harness.history.model import tp_key

S = 1_000_000_000


def at(h: History, seconds: float) -> History:
    """The builder's next op (an invoke, then its completion 1 µs later) completes at ``seconds``."""
    h.t = int(seconds * S) - 2000
    return h


def lagging(keeps_up: bool = False) -> History:
    """p1 commits a@0, b@2, c@4 at 1.5, 2.5, 3.5 s and d@6 at 9.5 s; r1 polls a at 4.5 s, b at
    6.5 s, c at 8.5 s, and never d. ``keeps_up``: r1 polls each value 0.25 s after its commit."""
    h = History()
    h.init("p1", "tx-1")
    k = tp_key("t", 0)
    polls = [] if keeps_up else [(4.5, 0, "a"), (6.5, 2, "b"), (8.5, 4, "c")]
    for second, offset, value in [(1.5, 0, "a"), (2.5, 2, "b"), (3.5, 4, "c"), (9.5, 6, "d")]:
        at(h, second).txn("p1", [("t", 0, value, offset)], txn_id="tx-1")
        if keeps_up:
            at(h, second + 0.25).poll("r1", {k: [(offset, value)]})
    for second, offset, value in polls:
        at(h, second).poll("r1", {k: [(offset, value)]})
    at(h, 10.5).scan({k: [(0, "a"), (2, "b"), (4, "c"), (6, "d")]})
    return h


def test_unseen_counts_the_acknowledged_values_no_poll_had_returned_yet() -> None:
    unseen = check(lagging().tables()).stats["unseen"]
    # a, b, c acknowledged by 4 s and none polled; a at 4.5 s, b at 6.5 s, c at 8.5 s; d never
    assert unseen == {"step_s": 1, "series": [[1, 0], [2, 1], [3, 2], [4, 3], [5, 2], [6, 2], [7, 1], [8, 1], [9, 0], [10, 1]],
                      "max": 3, "final": 1}


def test_realtime_lag_is_the_time_since_the_earliest_unread_acknowledged_commit() -> None:
    lag = check(lagging().tables()).stats["realtime_lag"]
    # at 4.5 s r1 is at a (0): b, acknowledged at 2.5 s, is unread (2 s); at 6.5 s c, since 3.5 s (3 s);
    # at 8.5 s nothing acknowledged is unread (d comes at 9.5 s)
    assert lag == {"step_s": 1, "series": [[5, 2.0], [7, 3.0], [9, 0.0]], "max": 3.0, "by_reader": {"r1": 3.0}}


def test_a_reader_that_keeps_up_has_no_lag_and_leaves_nothing_unseen() -> None:
    stats = check(lagging(keeps_up=True).tables()).stats
    assert stats["realtime_lag"]["max"] == 0.0 and stats["realtime_lag"]["by_reader"] == {"r1": 0.0}
    # each value is unseen for the 0.25 s before its poll, never at a step's end
    assert stats["unseen"]["final"] == 0 and stats["unseen"]["max"] == 0


def test_without_polls_neither_figure_is_measured() -> None:
    h = History()
    h.init("p1", "tx-1")
    at(h, 1.5).txn("p1", [("t", 0, "a", 0)], txn_id="tx-1")
    at(h, 2.5).scan({tp_key("t", 0): [(0, "a")]})
    stats = check(h.tables()).stats
    assert stats["unseen"] is None and stats["realtime_lag"] is None


def test_the_figures_are_the_same_from_the_saved_parquet(tmp_path: Path) -> None:
    """Loaded from Parquet the readers' names are categories (their codes are used, not the strings)."""
    from harness.history import store

    h = lagging()
    store.save(h.tables(), tmp_path)
    again = check(store.load(tmp_path)).stats
    fresh = check(h.tables()).stats
    assert (again["unseen"], again["realtime_lag"]) == (fresh["unseen"], fresh["realtime_lag"])
