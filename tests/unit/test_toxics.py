"""Network fault kinds -> Toxiproxy toxics, and bad parameters named with what is allowed."""

from __future__ import annotations

import pytest

from chaos.toxics import specs


def test_latency_with_jitter_on_both_streams() -> None:
    s = specs("latency", {"latency_ms": 250.0, "jitter_ms": 50})
    assert [(t.type, t.stream) for t in s] == [("latency", "upstream"), ("latency", "downstream")]
    assert all(t.attributes == {"latency": 250, "jitter": 50} for t in s)
    assert all(isinstance(v, int) for t in s for v in t.attributes.values()), "Toxiproxy rejects 250.0"
    assert len({t.name for t in s}) == 2


def test_blackhole_is_timeout_zero_and_drop_responses_only_downstream() -> None:
    assert {(t.type, t.attributes["timeout"]) for t in specs("blackhole")} == {("timeout", 0)}
    assert [t.stream for t in specs("drop-responses")] == ["downstream"]


@pytest.mark.parametrize("kind,params,expect", [
    ("jitterbug", {}, "allowed: bandwidth, blackhole"),
    ("latency", {"rate_kbps": 5}, "allowed: jitter_ms, latency_ms"),
    ("latency", {"latency_ms": -1}, "must be a number >= 0"),
])
def test_bad_input_names_what_is_allowed(kind: str, params: dict, expect: str) -> None:
    with pytest.raises(ValueError, match=expect):
        specs(kind, params)
