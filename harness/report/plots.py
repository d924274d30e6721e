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
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import ScalarFormatter  # noqa: E402

from harness.report.data import NODE_STATE, PartitionView, RunData, node_lanes, timeline  # noqa: E402

plt.rcParams.update({"svg.fonttype": "none", "font.size": 9, "axes.spines.top": False, "axes.spines.right": False})
_salt = itertools.count()
#: Fault colours by what they act on.
COLOURS = {"process": "#d62728", "network": "#1f77b4", "client": "#ff7f0e"}
STATE_COLOURS = {"down": "#d62728", "paused": "#9467bd"}
#: Up to this many fault windows get their label written in the plot (more: numbers only).
MAX_INLINE_LABELS = 8


def category(kind: str) -> str:
    if kind in NODE_STATE:
        return "process"
    if kind.endswith("-workload") or kind.endswith("-driver"):
        return "client"
    return "network"


def to_svg(fig: Figure) -> str:
    """The figure as an ``<svg>`` element to inline; element ids unique within one page."""
    plt.rcParams["svg.hashsalt"] = f"eos-chaos-{next(_salt)}"
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    svg = buf.getvalue()
    return svg[svg.index("<svg"):]


def timeline_svg(data: RunData) -> str:
    end = data.duration_s
    tl = timeline(data.txns, end)
    lanes = node_lanes(data.faults, data.node_ids, end)
    spark = data.spark_batches is not None
    stats = data.verdict.get("stats") or {}
    readers = bool(stats.get("unseen") or stats.get("realtime_lag"))
    ratios = [3, 2.2] + ([1.8] if readers else []) + ([2] if spark else []) + [1.2]
    fig, axes = plt.subplots(len(ratios), 1, figsize=(11, 6.2 + (1.4 if readers else 0) + (1.6 if spark else 0)),
                             sharex=True, gridspec_kw={"height_ratios": ratios})
    ax_tp, ax_lat, ax_nodes = axes[0], axes[1], axes[-1]
    if readers:
        _readers_panel(axes[2], stats)
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
    ax_lat.set_ylabel("commit latency ms")
    ax_lat.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    for i, (_node, spans) in enumerate(sorted(lanes.items())):
        ax_nodes.broken_barh([(0, end)], (i - 0.35, 0.7), color="#e6f2e6")
        for state in STATE_COLOURS:
            mine = [(a, max(b - a, end / 500)) for a, b, s in spans if s == state]
            if mine:
                ax_nodes.broken_barh(mine, (i - 0.35, 0.7), color=STATE_COLOURS[state], label=state)
    ax_nodes.set_yticks(range(len(lanes)), [f"n{n}" for n in sorted(lanes)])
    ax_nodes.set_ylim(-0.6, len(lanes) - 0.4)
    handles, names = ax_nodes.get_legend_handles_labels()
    seen = dict(zip(names, handles))
    if seen:
        ax_nodes.legend(seen.values(), seen.keys(), loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8,
                        frameon=False)
    ax_nodes.set_xlabel("seconds since the run started")
    ax_nodes.set_xlim(0, end)
    for n, f in enumerate(data.faults, 1):
        stop = f.end_s if f.end_s is not None else end
        colour = COLOURS[category(f.kind)]
        for ax in axes[:-1]:
            ax.axvspan(f.start_s, max(stop, f.start_s + end / 500), color=colour, alpha=0.12, lw=0)
        text = f"F{n} {f.label}" if len(data.faults) <= MAX_INLINE_LABELS else f"F{n}"
        ax_tp.annotate(text, (f.start_s, 1.0), xycoords=("data", "axes fraction"), xytext=(2, -2 - 10 * (n % 3)),
                       textcoords="offset points", va="top", fontsize=7, color=colour)
    fig.align_ylabels()
    return to_svg(fig)


def _readers_panel(ax: plt.Axes, stats: dict[str, Any]) -> None:
    """Jepsen's reader figures: values committed and not yet polled (``unseen``), and how far behind
    the head the worst reader was (``realtime_lag``), each at the end of its step."""
    unseen, lag = stats.get("unseen"), stats.get("realtime_lag")
    if unseen:
        t, n = zip(*unseen["series"])
        ax.step(t, n, where="post", color="#1f77b4", lw=1.2, label="unseen (committed, not yet polled)")
    ax.set_ylabel("values unseen")
    ax.yaxis.set_major_formatter(ScalarFormatter())
    handles, names = ax.get_legend_handles_labels()
    if lag:
        ax2 = ax.twinx()
        t, s = zip(*lag["series"])
        ax2.plot(t, s, color="#d62728", lw=1, marker=".", ms=3, label="realtime lag, worst reader")
        ax2.set_ylabel("lag s")
        h2, n2 = ax2.get_legend_handles_labels()
        handles, names = handles + h2, names + n2
    ax.legend(handles, names, loc="upper left", bbox_to_anchor=(1.06, 1.0), fontsize=8, frameon=False)


def _spark_panel(ax: plt.Axes, data: RunData) -> None:
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


def partition_svg(view: PartitionView) -> str:
    """Jepsen-style order plot of one partition: each offset against the place, in the order of all
    writes, of the value Kafka kept there, coloured by writer. A healthy partition climbs; a
    duplicate is a flat step, a reordering a step down. Crosses are values only read_uncommitted
    sees; red lines are offsets anomalies name, and the lower panel zooms on the first of them."""
    scan = view.scan
    committed = scan[scan["isolation"] == "read_committed"]
    uncommitted_only = scan[(scan["isolation"] != "read_committed") & ~scan["offset"].isin(committed["offset"])]
    writers = sorted(set(committed["writer"]))
    colours = plt.get_cmap("tab10")
    marks = sorted({o for offs in view.marks.values() for o in offs})
    fig, axes = plt.subplots(2 if marks else 1, 1, figsize=(11, 6.5 if marks else 3.2), squeeze=False,
                             gridspec_kw={"hspace": 0.45})
    windows = [(None, None)] + ([(max(0, marks[0] - 15), max(0, marks[0] - 15) + 30)] if marks else [])
    for ax, (lo, hi) in zip(axes[:, 0], windows):
        def cut(df: pd.DataFrame, lo: int | None = lo, hi: int | None = hi) -> pd.DataFrame:
            return df if lo is None else df[(df["offset"] >= lo) & (df["offset"] <= hi)]
        dense = lo is None
        for i, w in enumerate(writers):
            c = cut(committed[committed["writer"] == w])
            ax.scatter(c["offset"], c["order"], s=4 if dense else 20, color=colours(i % 10),
                       label=w if i < 10 else None, rasterized=dense and len(c) > 2000)
        u = cut(uncommitted_only)
        ax.scatter(u["offset"], u["order"], s=6 if dense else 24, marker="x", color="#999999",
                   label="read_uncommitted only" if dense else None, rasterized=dense and len(u) > 2000)
        for check, offsets in view.marks.items():
            for o in offsets:
                if lo is None or lo <= o <= hi:
                    ax.axvline(o, color="#d62728", lw=0.8, alpha=0.8)
                    if not dense:
                        ax.annotate(f"{check} @{o}", (o, 0.02), xycoords=("data", "axes fraction"), rotation=90,
                                    va="bottom", ha="right", fontsize=7, color="#d62728")
        if not dense:
            ax.set_xlim(lo, hi)
            ax.set_title(f"zoom: offsets {lo}..{hi}", fontsize=8, loc="left")
        ax.set_xlabel("offset")
        ax.set_ylabel("write order")
    axes[0, 0].legend(loc="upper left", fontsize=7, frameon=False, markerscale=2)
    axes[0, 0].set_title(f"{view.topic}-{view.partition}", fontsize=9, loc="left")
    return to_svg(fig)

