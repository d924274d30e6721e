"""Network fault kinds as Toxiproxy toxics: the toxic type, its attributes, and the stream it acts
on. A ``partition`` is not a toxic: the proxy is disabled (it stops listening and drops its open
connections), which is a clean cut in both directions of that one link.

| kind          | toxic        | attributes (defaults)                      | effect                                  |
|---------------|--------------|--------------------------------------------|-----------------------------------------|
| latency       | latency      | latency_ms 100, jitter_ms 20               | every chunk delayed                     |
| bandwidth     | bandwidth    | rate_kbps 64                               | throughput capped                       |
| reset-peer    | reset_peer   | timeout_ms 0                               | connections reset (TCP RST)             |
| blackhole     | timeout      | timeout 0                                  | data dropped, connections held open     |
| slicer        | slicer       | average_size 64, size_variation 32, delay_us 10 | chunks sliced and delayed          |
| drop-responses| timeout      | timeout 0, downstream only                 | requests arrive, answers never return   |
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: kind -> (toxic type, default attributes, stream)
TOXICS: dict[str, tuple[str, dict[str, Any], str]] = {
    "latency": ("latency", {"latency": 100, "jitter": 20}, "both"),
    "bandwidth": ("bandwidth", {"rate": 64}, "both"),
    "reset-peer": ("reset_peer", {"timeout": 0}, "both"),
    "blackhole": ("timeout", {"timeout": 0}, "both"),
    "slicer": ("slicer", {"average_size": 64, "size_variation": 32, "delay": 10}, "both"),
    "drop-responses": ("timeout", {"timeout": 0}, "downstream"),
}
#: user-facing parameter names -> Toxiproxy attribute names
PARAMS = {"latency_ms": "latency", "jitter_ms": "jitter", "rate_kbps": "rate", "timeout_ms": "timeout",
          "average_size": "average_size", "size_variation": "size_variation", "delay_us": "delay"}


@dataclass(frozen=True)
class ToxicSpec:
    name: str
    type: str
    stream: str
    attributes: dict[str, Any]


def specs(kind: str, params: dict[str, Any] | None = None, tag: str = "") -> list[ToxicSpec]:
    """The toxics to add to each affected proxy (one per stream). ``tag`` makes the names unique per
    fault: Toxiproxy refuses (409) a second toxic of the same name on a proxy, so two latency faults
    on one link at once need names of their own; each fault's heal removes its own by name."""
    if kind not in TOXICS:
        raise ValueError(f"unknown network fault {kind!r}; allowed: {', '.join(sorted(TOXICS))} (and partition)")
    toxic_type, defaults, stream = TOXICS[kind]
    attrs = dict(defaults)
    for key, value in (params or {}).items():
        if key not in PARAMS or PARAMS[key] not in defaults:
            allowed = sorted(k for k, v in PARAMS.items() if v in defaults)
            raise ValueError(f"{kind}: unknown parameter {key!r}; allowed: {', '.join(allowed) or 'none'}")
        if not isinstance(value, (int, float)) or value < 0:
            raise ValueError(f"{kind}: {key} must be a number >= 0, not {value!r}")
        attrs[PARAMS[key]] = round(value)  # Toxiproxy's attributes are integers (400 on 200.0)
    streams = ["upstream", "downstream"] if stream == "both" else [stream]
    return [ToxicSpec(f"eos-{kind}-{s}" + (f"-{tag}" if tag else ""), toxic_type, s, attrs) for s in streams]
