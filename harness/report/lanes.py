"""Jepsen's timeline around an anomaly: one lane per process, each op a bar from invoke to
completion coloured by outcome, the fault windows drawn across all lanes, the example's own ops
outlined. Hand-written inline SVG: no script, and every element says what it is in a ``<title>``
(a tooltip) and ``data-*`` attributes (the browser test reads them)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from html import escape

from harness.report.clock import Clock
from harness.report.data import FaultWindow, RunData
from harness.report.ops import Bar, HistoryColumns, Marked, lane_bars

#: Lane views for the first few anomalies only (each is a few hundred elements).
MAX_LANE_VIEWS = 3
#: At most this many ops in one view; a busier window is narrowed until it fits.
MAX_BARS = 1500
#: At most this many lanes (the example's own processes first).
MAX_LANES = 24
#: The view reaches this far either side of the example's ops (before narrowing).
PAD_S = (0.5, 5.0)
OUTCOME_COLOURS = {"ok": "#2ca02c", "fail": "#ff7f0e", "info": "#9467bd", "open": "#bbbbbb"}
FAULT_FILL = "#1f77b4"
_W, _GUTTER, _LANE, _TOP, _BOTTOM = 1000, 150, 16, 18, 26
#: report seconds -> x in the view
Scale = Callable[[float], float]


@dataclass
class LaneView:
    marked: Marked
    lo_s: float
    hi_s: float
    svg: str
    lanes: int
    bars: int
    #: later anomalies that name the very same ops (one view says it for all: five duplicate
    #: outputs of one input transaction need one picture, not five copies)
    also: list[str] = field(default_factory=list)


def lane_views(data: RunData) -> list[LaneView]:
    """A lane view around each of the first ``MAX_LANE_VIEWS`` anomalies placed in time whose ops
    differ; an anomaly naming the same ops as one already drawn is listed under it."""
    if data.history is None:
        return []
    views: dict[frozenset[int], LaneView] = {}
    for m in data.marked:
        key = frozenset(s.index for s in m.spans)
        if key in views:
            views[key].also.append(m.label)
        elif len(views) < MAX_LANE_VIEWS:
            views[key] = view_of(m, data.history, data.clock, data.faults)
    return list(views.values())


def view_of(m: Marked, history: HistoryColumns, clock: Clock, faults: list[FaultWindow]) -> LaneView:
    """The window around ``m`` (its ops, padded, narrowed until at most ``MAX_BARS`` ops) drawn."""
    pad = min(max(2 * (m.end_s - m.start_s), PAD_S[0]), PAD_S[1])
    while True:
        lo, hi = m.start_s - pad, m.end_s + pad
        bars = lane_bars(history, clock, lo, hi)
        if len(bars) <= MAX_BARS or pad < 0.01:
            break
        pad /= 2
    own = {s.process for s in m.spans}
    procs = sorted({b.process for b in bars} | own, key=lambda p: (p not in own, p))[:MAX_LANES]
    svg = _svg(m, [b for b in bars if b.process in procs], procs, lo, hi, faults)
    return LaneView(m, lo, hi, svg, len(procs), len(bars))


def _svg(m: Marked, bars: list[Bar], procs: list[str], lo: float, hi: float, faults: list[FaultWindow]) -> str:
    height = _TOP + _LANE * len(procs) + _BOTTOM
    scale = (_W - _GUTTER - 10) / max(hi - lo, 1e-9)

    def x(t: float) -> float:
        return _GUTTER + (min(max(t, lo), hi) - lo) * scale

    row = {p: i for i, p in enumerate(procs)}
    mine = {s.index for s in m.spans}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="lanes" viewBox="0 0 {_W} {height}" width="{_W}" '
           f'height="{height}" data-anomaly="{m.label}" data-lo="{lo:.6f}" data-hi="{hi:.6f}" role="img">']
    out += [_fault_rect(n, f, x, lo, hi, height) for n, f in enumerate(faults, 1)
            if f.start_s <= hi and (f.end_s is None or f.end_s >= lo)]
    for p, i in row.items():
        y = _TOP + i * _LANE
        out.append(f'<text x="{_GUTTER - 6}" y="{y + 11}" text-anchor="end" font-size="11">{escape(p)}</text>'
                   f'<line x1="{_GUTTER}" x2="{_W - 10}" y1="{y + _LANE}" y2="{y + _LANE}" stroke="#eee"/>')
    out += [_bar(b, x, _TOP + row[b.process] * _LANE, b.index in mine) for b in bars]
    out.append(_marker(m, x(m.start_s), height))
    out.append(_axis(lo, hi, x, height))
    out.append("</svg>")
    return "".join(out)


def _fault_rect(n: int, f: FaultWindow, x: Scale, lo: float, hi: float, height: int) -> str:
    x0, x1 = x(f.start_s), x(f.end_s if f.end_s is not None else hi)
    return (f'<g class="fault" data-fault="F{n}" data-start="{f.start_s:.6f}" data-end="{f.end_s if f.end_s is not None else hi:.6f}">'
            f'<rect x="{x0:.1f}" y="{_TOP - 4}" width="{max(x1 - x0, 1.5):.1f}" height="{height - _TOP - _BOTTOM + 8}" '
            f'fill="{FAULT_FILL}" fill-opacity="0.13"/><text x="{x0 + 2:.1f}" y="{_TOP - 6}" font-size="10" '
            f'fill="{FAULT_FILL}">F{n} {escape(f.label)}</text><title>F{n} {escape(f.label)}</title></g>')


def _bar(b: Bar, x: Scale, y: int, own: bool) -> str:
    x0, x1 = x(b.start_s), x(b.end_s)
    outline = ' stroke="#8b0000" stroke-width="2" data-own="1"' if own else ""
    return (f'<rect class="op {b.outcome}" x="{x0:.1f}" y="{y + 3}" width="{max(x1 - x0, 1.5):.1f}" height="{_LANE - 6}" '
            f'fill="{OUTCOME_COLOURS.get(b.outcome, "#999")}"{outline} data-index="{b.index}">'
            f'<title>{escape(b.process)} {escape(b.f)} #{b.index}: {b.outcome}, '
            f't={b.start_s:.3f}..{b.end_s:.3f} s</title></rect>')


def _marker(m: Marked, at: float, height: int) -> str:
    return (f'<g class="anomaly-marker" data-anomaly="{m.label}" data-t="{m.start_s:.6f}"><line x1="{at:.1f}" '
            f'x2="{at:.1f}" y1="{_TOP - 4}" y2="{height - _BOTTOM + 4}" stroke="#8b0000" stroke-dasharray="3,2"/>'
            f'<text x="{at + 3:.1f}" y="{height - _BOTTOM + 2}" font-size="10" fill="#8b0000" font-weight="bold">'
            f'{m.label}</text><title>{m.label}: {escape(m.check)}</title></g>')


def _axis(lo: float, hi: float, x: Scale, height: int) -> str:
    """Ticks at a round step, labelled in seconds on the report's clock."""
    span = hi - lo
    step = next(s for s in (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 60, 120, 300, 600)
                if span / s <= 10) if span <= 6000 else span / 10
    y = height - _BOTTOM + 6
    ticks = []
    k = int(lo // step) + 1
    while k * step < hi:
        t = round(k * step, 6)  # no 0.30000000000000004
        ticks.append(f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{y}" y2="{y + 4}" stroke="#555"/>'
                     f'<text x="{x(t):.1f}" y="{y + 15}" font-size="10" text-anchor="middle">{t:g}</text>')
        k += 1
    return (f'<line x1="{_GUTTER}" x2="{_W - 10}" y1="{y}" y2="{y}" stroke="#555"/>' + "".join(ticks)
            + f'<text x="{_GUTTER - 6}" y="{y + 15}" font-size="10" text-anchor="end">t s</text>')
