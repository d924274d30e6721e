"""The report's figures as inline SVG (matplotlib, Agg): a timeline with fault windows and node
lanes, and per-partition offset views. Static SVG keeps the report one small file that opens
offline, in any browser and as a CI artifact; dense point clouds are rasterized inside the SVG."""

from __future__ import annotations

import io
import itertools
from typing import Any

import matplotlib
import pandas as pd

matplotlib.use("Agg")  # never a display: reports are made on headless machines
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import FuncFormatter, NullFormatter, ScalarFormatter  # noqa: E402

from chaos.faults import CATEGORIES, REGISTRY  # noqa: E402
from harness.report.data import FaultWindow, PartitionView, RunData, node_lanes, timeline  # noqa: E402

plt.rcParams.update({"svg.fonttype": "none", "font.size": 9, "axes.spines.top": False, "axes.spines.right": False})
_salt = itertools.count()
#: Fault colours by what they act on (each kind's ``category``, chaos.faults.CATEGORIES): the colour,
#: and its name in the legend.
COLOURS = {"process": ("#d62728", "red"), "network": ("#1f77b4", "blue"), "workload": ("#ff7f0e", "orange"),
           "spark": ("#8c564b", "brown"), "wire": ("#17becf", "cyan"), "feature": ("#bcbd22", "olive"),
           "producer": ("#e377c2", "pink")}
#: A kind no registry entry names (a history of an older version): drawn, never refused.
UNKNOWN_COLOUR = ("#7f7f7f", "grey")
STATE_COLOURS = {"down": "#d62728", "paused": "#9467bd"}
#: Up to this many fault windows get their label written in the plot (more: numbers only).
MAX_INLINE_LABELS = 8
#: Fault labels are stacked in at most this many rows; a label that fits in none is cut to its number.
LABEL_ROWS = 4
#: The colour of anomaly markers (check examples placed in time).
ANOMALY = "#8b0000"
#: The timeline's plotting width in points (11 in figure, less the legends on the right): to lay labels out.
_PLOT_WIDTH_PT = 11 * 72 * 0.78
#: A 7 pt label's width per character, in points (a sans-serif's average advance).
_CHAR_PT = 7 * 0.6
#: Zoom panels of a partition show this many offsets around the first one marked.
ZOOM_OFFSETS = 30


def category(kind: str) -> str | None:
    """What fault ``kind`` acts on, as its model says (None: no such kind here)."""
    model = REGISTRY.get(kind)
    return model.category if model is not None else None


def fault_colour(kind: str) -> str:
    return COLOURS.get(category(kind) or "", UNKNOWN_COLOUR)[0]


def legend(kinds: list[str]) -> list[str]:
    """``red: broker processes``, ... for the categories of ``kinds``, in ``COLOURS`` order."""
    present = {category(k) for k in kinds}
    said = [f"{name}: {CATEGORIES[c]}" for c, (_, name) in COLOURS.items() if c in present]
    return said + ([f"{UNKNOWN_COLOUR[1]}: other"] if None in present else [])


def to_svg(fig: Figure) -> str:
    """The figure as an ``<svg>`` element to inline; element ids unique within one page."""
    plt.rcParams["svg.hashsalt"] = f"eos-chaos-{next(_salt)}"
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    svg = buf.getvalue()
    return svg[svg.index("<svg"):]


def plain_number(v: float, _pos: object = None) -> str:
    """A tick label as a person writes it: 1000, 20, 0.5 (never 1e3 or 10^3)."""
    return f"{v:,.0f}" if v >= 1 else f"{v:g}"


def label_rows(starts: list[float], texts: list[str], span_s: float) -> list[int | None]:
    """A row for each fault label so that no two labels in a row overlap (greedy, in start order);
    None: no row left (``LABEL_ROWS``), the label is cut to its number."""
    per_pt = span_s / _PLOT_WIDTH_PT
    ends: list[float] = []  # per row, where its last label ends (seconds)
    rows: list[int | None] = []
    for start, text in zip(starts, texts):
        width = (len(text) + 1) * _CHAR_PT * per_pt
        row = next((r for r, end in enumerate(ends) if end <= start), None)
        if row is None and len(ends) < LABEL_ROWS:
            ends.append(0.0)
            row = len(ends) - 1
        if row is not None:
            ends[row] = start + width
        rows.append(row)
    return rows


def timeline_svg(data: RunData) -> str:
    end, begin = data.duration_s, data.start_s
    tl = timeline(data.txns, end, start_s=begin)
    lanes = node_lanes(data.faults, data.node_ids, end)
    spark = data.spark_batches is not None
    stats = data.verdict.stats
    readers = bool(stats.get("unseen") or stats.get("realtime_lag"))
    ratios = [3, 2.2] + ([1.8] if readers else []) + ([2] if spark else []) + [1.2]
    fig, axes = plt.subplots(len(ratios), 1, figsize=(11, 6.2 + (1.4 if readers else 0) + (1.6 if spark else 0)),
                             sharex=True, gridspec_kw={"height_ratios": ratios})
    ax_tp, ax_lat, ax_nodes = axes[0], axes[1], axes[-1]
    if readers:
        _readers_panel(axes[2], stats, data.clock.zero_ns / 1e9)
    if spark:
        _spark_panel(axes[2 + readers], data)
    ax_tp.plot(tl["t"], tl["ok"], color="#2ca02c", lw=1.2, label="ok (committed)")
    ax_tp.plot(tl["t"], tl["fail"], color="#ff7f0e", lw=1, label="fail (aborted)")
    ax_tp.plot(tl["t"], tl["info"].where(tl["info"] > 0), color="#9467bd", marker="o", ms=3, ls="none", label="info (unknown)")
    ax_tp.set_ylabel("transactions / s")
    ax_tp.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    ax_lat.plot(tl["t"], tl["lat_p50"], color="#333333", lw=1, label="p50")
    ax_lat.plot(tl["t"], tl["lat_max"], color="#aaaaaa", lw=0.8, label="max")
    if tl["lat_max"].notna().any():
        ax_lat.set_yscale("log")
        ax_lat.yaxis.set_major_formatter(FuncFormatter(plain_number))
        ax_lat.yaxis.set_minor_formatter(NullFormatter())
    ax_lat.set_ylabel("commit latency ms")
    ax_lat.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    draw_node_lanes(ax_nodes, lanes, begin, end)
    ax_nodes.set_xlabel("seconds (t=0: the workloads' start)" if data.clock.zero_ns else "seconds since the runner started")
    ax_nodes.set_xlim(begin, end)
    _fault_windows(list(axes), data.faults, begin, end)
    _anomaly_markers(list(axes), data)
    fig.align_ylabels()
    return to_svg(fig)


def draw_node_lanes(ax: Axes, lanes: dict[int, list[tuple[float, float, str]]], begin: float, end: float) -> None:
    """One lane per node: up (pale green) unless a fault had it down or paused."""
    for i, (_node, spans) in enumerate(sorted(lanes.items())):
        ax.broken_barh([(begin, end - begin)], (i - 0.35, 0.7), color="#e6f2e6")
        for state in STATE_COLOURS:
            mine = [(a, max(b - a, end / 500)) for a, b, s in spans if s == state]
            if mine:
                ax.broken_barh(mine, (i - 0.35, 0.7), color=STATE_COLOURS[state], label=state)
    ax.set_yticks(range(len(lanes)), [f"n{n}" for n in sorted(lanes)])
    ax.set_ylim(-0.6, len(lanes) - 0.4)
    handles, names = ax.get_legend_handles_labels()
    seen = dict(zip(names, handles))
    if seen:
        ax.legend(seen.values(), seen.keys(), loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)


def faults_svg(faults: list[FaultWindow], node_ids: list[int], end: float, xlabel: str) -> str:
    """The fault windows over the node lanes, for a page without workloads (a test's ``nemesis``)."""
    fig, (ax_faults, ax_nodes) = plt.subplots(2, 1, figsize=(11, 2.8), sharex=True, gridspec_kw={"height_ratios": [1.2, 1.2]})
    ax_faults.set_yticks([])
    ax_faults.set_ylabel("faults")
    draw_node_lanes(ax_nodes, node_lanes(faults, node_ids, end), 0.0, end)
    ax_nodes.set_xlabel(xlabel)
    ax_nodes.set_xlim(0.0, end)
    _fault_windows([ax_faults, ax_nodes], faults, 0.0, end)
    fig.align_ylabels()
    return to_svg(fig)


def _fault_windows(axes: list[Axes], faults: list[FaultWindow], begin: float, end: float) -> None:
    """Shade each fault's window on every panel but the node lanes, its label on the top panel in
    rows that keep labels apart. The top panel's shade carries the id ``fault-F<n>`` (the browser
    test measures it)."""
    texts = [f"F{n} {f.label}" if len(faults) <= MAX_INLINE_LABELS else f"F{n}" for n, f in enumerate(faults, 1)]
    rows = label_rows([f.start_s for f in faults], texts, end - begin)
    for n, (f, text, row) in enumerate(zip(faults, texts, rows), 1):
        stop = f.end_s if f.end_s is not None else end
        shade = fault_colour(f.kind)
        for i, ax in enumerate(axes[:-1]):
            span = ax.axvspan(f.start_s, max(stop, f.start_s + (end - begin) / 500), color=shade, alpha=0.12, lw=0)
            if i == 0:
                span.set_gid(f"fault-F{n}")
        axes[0].annotate(text if row is not None else f"F{n}", (f.start_s, 1.0), xycoords=("data", "axes fraction"),
                         xytext=(2, -2 - 10 * (row if row is not None else LABEL_ROWS)), textcoords="offset points",
                         va="top", fontsize=7, color=shade)


def _anomaly_markers(axes: list[Axes], data: RunData) -> None:
    """Each check example placed in time: a dotted line across the panels at its first op, and a
    marked span of its ops under the top panel, labelled A1, A2, ... (id ``anomaly-A<n>``)."""
    for m in data.marked:
        for ax in axes[:-1]:
            ax.axvline(m.start_s, color=ANOMALY, lw=0.8, ls=":", zorder=4)
        bar = axes[0].plot([m.start_s, max(m.end_s, m.start_s)], [0.0, 0.0], transform=axes[0].get_xaxis_transform(),
                           color=ANOMALY, lw=4, solid_capstyle="butt", marker="^", ms=6, clip_on=False, zorder=5)[0]
        bar.set_gid(f"anomaly-{m.label}")
        axes[0].annotate(m.label, (m.start_s, 0.0), xycoords=("data", "axes fraction"), xytext=(3, 4),
                         textcoords="offset points", fontsize=7, color=ANOMALY, fontweight="bold")


def _readers_panel(ax: Axes, stats: dict[str, Any], zero_s: float) -> None:
    """Jepsen's reader figures: values committed and not yet polled (``unseen``), and how far behind
    the head the worst reader was (``realtime_lag``), each at the end of its step (the checker
    counts in history seconds: ``zero_s`` moves them onto the report's clock)."""
    unseen, lag = stats.get("unseen"), stats.get("realtime_lag")
    if unseen:
        t, n = zip(*unseen["series"])
        ax.step([x - zero_s for x in t], n, where="post", color="#1f77b4", lw=1.2, label="unseen (committed, not yet polled)")
    ax.set_ylabel("values unseen")
    ax.yaxis.set_major_formatter(ScalarFormatter())
    handles, names = ax.get_legend_handles_labels()
    if lag:
        ax2 = ax.twinx()
        t, s = zip(*lag["series"])
        ax2.plot([x - zero_s for x in t], s, color="#d62728", lw=1, marker=".", ms=3, label="realtime lag, worst reader")
        ax2.set_ylabel("lag s")
        h2, n2 = ax2.get_legend_handles_labels()
        handles, names = handles + h2, names + n2
    ax.legend(handles, names, loc="upper left", bbox_to_anchor=(1.06, 1.0), fontsize=8, frameon=False)


def _spark_panel(ax: Axes, data: RunData) -> None:
    """The Spark job: records per micro-batch by outcome, replays skipped, driver (re)starts."""
    b = data.spark_batches
    assert b is not None
    for outcome, colour in (("ok", "#2ca02c"), ("fail", "#ff7f0e")):
        mine = b[b["outcome"] == outcome]
        if len(mine):
            ax.plot(mine["time_s"], mine["records"], marker="o", ms=3, ls="none", color=colour,
                    label=f"batch {'committed' if outcome == 'ok' else 'failed'}")
    other = b[~b["outcome"].isin(["ok", "fail"])]
    if len(other):
        ax.plot(other["time_s"], other["records"], marker="o", ms=3, ls="none", color="#9467bd", label="batch unknown")
    for i, t in enumerate(data.spark_skips):
        ax.axvline(t, color="#1f77b4", lw=1, ls=":", label="replay skipped" if i == 0 else None)
    for i, t in enumerate(data.spark_starts[1:]):
        ax.axvline(t, color="#555555", lw=1, ls="--", label="driver restart" if i == 0 else None)
    ax.set_ylabel("Spark records / batch")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)


def zoom_window(first: int, offsets: pd.Series) -> tuple[int, int]:
    """The offsets a zoom panel shows: ``ZOOM_OFFSETS`` around ``first``, within the partition's
    own offsets (a 9-offset partition is shown 0..8, not 0..30)."""
    low = int(offsets.min()) if len(offsets) else 0
    high = int(offsets.max()) if len(offsets) else first
    lo = max(low, min(first, high) - ZOOM_OFFSETS // 2)
    hi = min(max(high, first), lo + ZOOM_OFFSETS)
    return min(lo, first), max(hi, first)


def partition_svg(view: PartitionView) -> str:
    """Jepsen-style order plot of one partition: each offset against the place, in the order of all
    writes, of the value Kafka kept there, coloured by writer. A healthy partition climbs; a
    duplicate is a flat step, a reordering a step down. Crosses are values only read_uncommitted
    sees, red triangles on the lower edge records it cannot place (``view.unplaced``); red lines
    are offsets anomalies name, and the lower panel zooms on the first of them. An app's output
    partition places its records as ``view.ylabel`` says."""
    scan = view.scan
    committed = scan[scan["isolation"] == "read_committed"]
    uncommitted_only = scan[(scan["isolation"] != "read_committed") & ~scan["offset"].isin(committed["offset"])]
    # a record with no place (written by no recorded write, an app's output no input explains) sits
    # on the lower edge, so it is seen and counted rather than dropped as NaN
    unplaced = committed[committed["order"].isna()]
    committed = committed[committed["order"].notna()]
    writers = sorted(set(committed["writer"]))
    colours = plt.get_cmap("tab10")
    marks = sorted({o for offs in view.marks.values() for o in offs})
    fig, axes = plt.subplots(2 if marks else 1, 1, figsize=(11, 6.5 if marks else 3.2), squeeze=False,
                             gridspec_kw={"hspace": 0.45})
    # the whole partition (None), then the zoom's offsets
    windows: list[tuple[int, int] | None] = [None, *([zoom_window(marks[0], scan["offset"])] if marks else [])]
    for ax, window in zip(axes[:, 0], windows):
        def cut(df: pd.DataFrame, window: tuple[int, int] | None = window) -> pd.DataFrame:
            return df if window is None else df[(df["offset"] >= window[0]) & (df["offset"] <= window[1])]
        dense = window is None
        for i, w in enumerate(writers):
            c = cut(committed[committed["writer"] == w])
            # dots over the red lines: a duplicate's two dots sit on the offsets the lines mark
            ax.scatter(c["offset"], c["order"], s=4 if dense else 20, color=colours(i % 10),
                       label=w if i < 10 else None, rasterized=dense and len(c) > 2000, zorder=3)
        u = cut(uncommitted_only)
        ax.scatter(u["offset"], u["order"], s=6 if dense else 24, marker="x", color="#999999",
                   label="read_uncommitted only" if dense else None, rasterized=dense and len(u) > 2000, zorder=3)
        for check, offsets in view.marks.items():
            for o in offsets:
                if window is None or window[0] <= o <= window[1]:
                    ax.axvline(o, color="#d62728", lw=0.8, alpha=0.6, zorder=1)
                    if not dense:
                        ax.annotate(f"{check} @{o}", (o, 0.02), xycoords=("data", "axes fraction"), rotation=90,
                                    va="bottom", ha="right", fontsize=7, color="#d62728")
        c = cut(unplaced)
        if len(c):
            if not (len(committed) or uncommitted_only["order"].notna().any()):
                ax.set_ylim(0, 1)  # nothing placed: no scale to speak of
                ax.set_yticks([])
            bottom = ax.get_ylim()[0]
            ax.scatter(c["offset"], [bottom] * len(c), s=10 if dense else 30, marker="v", color="#d62728",
                       label=f"{view.unplaced} ({len(unplaced)})" if dense else None, clip_on=False, zorder=4)
            ax.set_ylim(bottom=bottom)
        if window is not None:
            lo, hi = window
            ax.set_xlim(lo - 0.5, hi + 0.5)
            ax.set_title(f"zoom: offsets {lo}..{hi}", fontsize=8, loc="left")
        ax.set_xlabel("offset")
        ax.set_ylabel(view.ylabel)
    axes[0, 0].legend(loc="upper left", fontsize=7, frameon=False, markerscale=2)
    axes[0, 0].set_title(f"{view.topic}-{view.partition}", fontsize=9, loc="left")
    return to_svg(fig)

