"""Charts for the report: matplotlib figures rendered to inline SVG with text kept as text.

Every chart plots columns of the results table. Where a chart needs a figure the table does not
hold (the cache at the planned batch, concurrency at token counts no workload asked for), it calls
the metric functions of :mod:`planner.model.memory` with other arguments; it never restates a
formula.

Figures are built with matplotlib's object API (no pyplot, so no global figure state and no
interactive backend) inside :data:`RC`, which keeps SVG text as ``<text>`` elements
(``svg.fonttype = "none"``) so chart labels can be found in the PDF's text, turns mathtext off
(a ``$`` in catalog text is a dollar sign, not a formula) and fixes the hash salt so the same
results give the same SVG.
"""

from __future__ import annotations

import io
import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator

from planner.model import memory
from planner.model.units import GB, GIB, is_finite
from planner.outputs import svg

FONTS = ["Carlito", "DejaVu Sans"]

#: matplotlib settings every chart is drawn under.
RC: dict[str, Any] = {
    "svg.fonttype": "none",
    "svg.hashsalt": "planner",
    "text.parse_math": False,
    "font.family": FONTS,
    "font.size": 8,
    "axes.titlesize": 9,
    "axes.labelsize": 8,
    "legend.fontsize": 7.5,
    "xtick.labelsize": 7.5,
    "ytick.labelsize": 7.5,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#dde2e8",
    "grid.linewidth": 0.6,
    "axes.axisbelow": True,
    # No tick marks: the grid lines mark the same places, and WeasyPrint draws each tick as its
    # own <use> element (about a fifth of a report's chart drawing time).
    "xtick.major.size": 0,
    "ytick.major.size": 0,
    "xtick.minor.size": 0,
    "ytick.minor.size": 0,
}

#: Width of a chart: the text width of an A4 page with the report's margins [in].
WIDTH_IN = 7.0

#: Memory segments of one device, bottom to top, with their colours.
SEGMENTS: list[tuple[str, str, str]] = [
    ("weights", "weights per device", "#3f6fb0"),
    ("runtime", "runtime overhead", "#8a8f98"),
    ("reserve", "reserve", "#d9a400"),
    ("kv", "KV cache at the planned batch", "#3d9a5b"),
    ("free", "free", "#e8ecf1"),
]

TARGET_COLOUR = "#b3261e"
SVG_NS = "http://www.w3.org/2000/svg"
XLINK_NS = "http://www.w3.org/1999/xlink"
ET.register_namespace("", SVG_NS)
ET.register_namespace("xlink", XLINK_NS)
_ID = re.compile(r'(\bid="|url\(#|href="#)([^")]+)')


@contextmanager
def _style() -> Iterator[None]:
    with matplotlib.rc_context(cast(Any, RC)):  # matplotlib types its keys as literals
        yield


def to_svg(fig: Figure, prefix: str) -> str:
    """The figure as an SVG element to inline in HTML.

    The XML declaration, DOCTYPE and metadata are dropped, groups that only carry an id are
    unwrapped (a third fewer elements for WeasyPrint to style and draw), markers and paths of one
    style are joined (:func:`planner.outputs.svg.fewer_elements`: half as many again), and every
    id, with the references to it, is prefixed with ``prefix`` so that charts in one document
    cannot collide.
    """
    buffer = io.BytesIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None})
    root = ET.fromstring(buffer.getvalue())  # matplotlib's own output, not untrusted input
    for metadata in root.findall(f"{{{SVG_NS}}}metadata"):
        root.remove(metadata)
    _unwrap_groups(root)
    svg.fewer_elements(root)
    # Serialise with SVG as the default namespace, whatever another module registered globally
    # (without this, ElementTree writes ns0:svg, which HTML does not render).
    ET.register_namespace("", SVG_NS)
    ET.register_namespace("xlink", XLINK_NS)
    text = ET.tostring(root, encoding="unicode")
    return _ID.sub(lambda m: f"{m.group(1)}{prefix}-{m.group(2)}", text)


def _unwrap_groups(element: ET.Element) -> None:
    """Replace each ``<g>`` whose only attribute is an id by its children, recursively."""
    children: list[ET.Element] = []
    for child in list(element):
        _unwrap_groups(child)
        if child.tag == f"{{{SVG_NS}}}g" and set(child.attrib) <= {"id"}:
            children.extend(child)
        else:
            children.append(child)
    element[:] = children


def _figure(height_in: float, width_in: float = WIDTH_IN) -> Figure:
    return Figure(figsize=(width_in, height_in))


#: Approximate width of one character of a 7.5 pt tick label [in] (Carlito averages ~0.5 em).
CHAR_IN = 0.05


def _labels_in(labels: list[str]) -> float:
    """Room for the longest of ``labels`` left of an axis [in]."""
    return 0.15 + CHAR_IN * max((len(label) for label in labels), default=0)


def _place(
    fig: Figure, left: float, bottom: float, top: float, right: float = 0.2, **spacing: float
) -> None:
    """Position the axes by margins in inches (a fixed layout: cheaper than constrained)."""
    width, height = fig.get_size_inches()
    fig.subplots_adjust(
        left=left / width,
        right=1 - right / width,
        bottom=bottom / height,
        top=1 - top / height,
        **spacing,
    )


def _gib(n_bytes: Any) -> Any:
    return n_bytes / GIB


def _gib_to_gb(v: Any) -> Any:
    return v * GIB / GB


def _gb_to_gib(v: Any) -> Any:
    return v * GB / GIB


# Memory breakdown ---------------------------------------------------------------------------


def memory_segments(
    rows: pd.DataFrame, runtime_overhead_bytes: float, reserve_bytes: float
) -> pd.DataFrame:
    """Per-device memory of each row split into :data:`SEGMENTS` [B].

    The cache at the planned batch is :func:`planner.model.memory.kv_bytes_at_concurrency` applied
    to the replica's ``decode_batch``, and what is left is
    :func:`planner.model.memory.memory_headroom_bytes` of that cache: the same formulas the plan
    uses for the workload's concurrency.
    """
    kv = memory.kv_bytes_at_concurrency(
        rows["decode_batch"].to_numpy(float), rows["kv_bytes_per_sequence"].to_numpy(float)
    )
    free = memory.memory_headroom_bytes(rows["kv_budget_bytes"].to_numpy(float), kv)
    return pd.DataFrame(
        {
            "weights": rows["weight_bytes_per_device"].to_numpy(float),
            "runtime": np.full(len(rows), float(runtime_overhead_bytes)),
            "reserve": np.full(len(rows), float(reserve_bytes)),
            "kv": kv,
            "free": free,
            "total": rows["memory_bytes"].to_numpy(float),
        },
        index=rows.index,
    )


def memory_breakdown(labels: list[str], segments: pd.DataFrame, prefix: str) -> str:
    """Stacked horizontal bars of each option's device memory, in GiB with a GB axis on top."""
    n = len(labels)
    bar_in, top_in, bottom_in = 0.24, 0.5, 0.75
    with _style():
        fig = _figure(top_in + bottom_in + bar_in * max(n, 1))
        ax = fig.add_subplot()
        _place(fig, left=_labels_in(labels), bottom=bottom_in, top=top_in)
        y = np.arange(n)[::-1]
        left = np.zeros(n)
        for key, name, colour in SEGMENTS:
            width = np.clip(_gib(segments[key].to_numpy(float)), 0, None)
            edge = "#6b7480" if key == "free" else "none"
            ax.barh(
                y,
                width,
                left=left,
                color=colour,
                label=name,
                height=0.66,
                edgecolor=edge,
                linewidth=0.4,
            )
            left = left + width
        for yi, total in zip(y, _gib(segments["total"].to_numpy(float)), strict=True):
            ax.text(
                total,
                yi,
                f" {total:,.1f} GiB · {_gib_to_gb(total):,.1f} GB",
                va="center",
                ha="left",
                fontsize=6.5,
            )
        ax.set_yticks(y, labels)
        ax.set_ylim(-0.6, n - 0.4)
        ax.set_xlim(0, max(left.max(), 1) * 1.3)
        ax.set_xlabel("GiB per device (1 GiB = 1024³ B)")
        top = ax.secondary_xaxis("top", functions=(_gib_to_gb, _gb_to_gib))
        top.set_xlabel("GB per device (1 GB = 1000³ B)")
        top.grid(False)  # a zero-height axis: its grid lines would be invisible elements
        ax.grid(axis="y", visible=False)
        fig.legend(
            loc="lower center", ncols=len(SEGMENTS), frameon=False, bbox_to_anchor=(0.5, 0.0)
        )
        return to_svg(fig, prefix)


# Concurrency against tokens per sequence ------------------------------------------------------


def concurrency_curve(row: pd.Series, tokens: np.ndarray, kv_block_tokens: float) -> np.ndarray:
    """Maximum concurrent sequences of one option at each tokens-per-sequence figure.

    The chain of :mod:`planner.model.memory` formulas that gives ``max_sequences``, evaluated at
    ``tokens`` instead of the workload's prompt plus promised output.
    """
    allocated = memory.allocated_tokens_per_sequence(tokens, kv_block_tokens)
    windowed = memory.windowed_tokens_per_sequence(tokens, row["window_tokens"], kv_block_tokens)
    per_sequence = memory.kv_bytes_per_sequence(
        allocated,
        row["kv_bytes_per_token"],
        windowed,
        row["kv_bytes_per_token_windowed"],
        row["state_bytes_per_sequence"],
    )
    return np.asarray(memory.max_sequences(row["kv_budget_bytes"], per_sequence), dtype=float)


def token_range(marker: float) -> np.ndarray:
    """Tokens per sequence to plot: powers of two from 512 to past the workload's figure."""
    top = max(131072.0, 2 ** math.ceil(math.log2(max(marker, 1)) + 1))
    return np.unique(np.round(np.geomspace(512, top, 60)))


def concurrency_chart(
    rows: pd.DataFrame,
    labels: list[str],
    kv_block_tokens: float,
    tokens_marker: float,
    concurrency: float,
    batch_limit: float,
    prefix: str,
) -> str:
    """Max sequences per replica against tokens per sequence, one line per option (log axes)."""
    tokens = token_range(tokens_marker)
    legend_rows = math.ceil((len(rows) + 1 + (concurrency > 0)) / 2)
    bottom_in = 0.5 + 0.16 * legend_rows
    with _style():
        fig = _figure(2.8 + bottom_in)
        ax = fig.add_subplot()
        _place(fig, left=0.75, bottom=bottom_in, top=0.15)
        markers = "osD^v<>ph*"
        for i, ((_, row), label) in enumerate(zip(rows.iterrows(), labels, strict=True)):
            values = concurrency_curve(row, tokens, kv_block_tokens)
            values = np.where(values >= 1, values, np.nan)
            ax.plot(
                tokens,
                values,
                label=label,
                linewidth=1.3,
                marker=markers[i % len(markers)],
                markevery=8,
                markersize=3.5,
            )
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(_token_tick))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
        ax.axvline(tokens_marker, color=TARGET_COLOUR, linestyle="--", linewidth=1)
        ax.annotate(
            f"this workload: {tokens_marker:,.0f} tokens",
            (tokens_marker, 1),
            xycoords=("data", "axes fraction"),
            xytext=(4, -10),
            textcoords="offset points",
            color=TARGET_COLOUR,
            fontsize=7,
        )
        if concurrency > 0:
            ax.axhline(
                concurrency,
                color="#444",
                linestyle=":",
                linewidth=1.2,
                label=f"this workload: {concurrency:,.0f} concurrent users",
            )
        ax.axhline(
            batch_limit,
            color="#8a8f98",
            linestyle="-.",
            linewidth=0.9,
            label=f"engine batch limit: {batch_limit:,.0f} sequences",
        )
        ax.set_xlabel("tokens per sequence (prompt + promised output)")
        ax.set_ylabel("max concurrent sequences per replica")
        fig.legend(
            loc="lower center", ncols=2, frameon=False, fontsize=7, bbox_to_anchor=(0.5, 0.0)
        )
        return to_svg(fig, prefix)


def _token_tick(value: float, _: Any) -> str:
    return f"{value / 1024:,.0f}k" if value >= 1024 else f"{value:,.0f}"


# Latency against targets ----------------------------------------------------------------------

#: Latency panels: closed-form column, title, unit, factor from seconds, target, simulated p95.
LATENCY_PANELS: list[tuple[str, str, str, float, str, str]] = [
    ("itl_load_s", "ITL", "ms", 1e3, "itl_p95_target_s", "itl_p95_s"),
    ("ttft_load_s", "TTFT", "ms", 1e3, "ttft_p95_target_s", "ttft_p95_s"),
    ("e2e_load_s", "End-to-end", "s", 1.0, "e2e_p95_target_s", "e2e_p95_s"),
    ("task_load_s", "Task", "s", 1.0, "task_p95_target_s", "task_p95_s"),
]

ESTIMATE_COLOUR = "#9cb6d8"
SIMULATED_COLOUR = "#1f4e8c"
BAND_COLOUR = "#444444"


def _column(rows: pd.DataFrame, name: str) -> np.ndarray:
    """A column as floats, all missing when the table does not have it (no simulation)."""
    if name not in rows:
        return np.full(len(rows), np.nan)
    return pd.to_numeric(rows[name], errors="coerce").to_numpy(float)


def latency_chart(rows: pd.DataFrame, labels: list[str], panels: list[str], prefix: str) -> str:
    """One panel per latency named in ``panels``: per option the closed-form estimate and, where
    the serving simulation ran, its p95; the workload's p95 target is the dashed line."""
    chosen = [p for p in LATENCY_PANELS if p[0] in panels]
    n = len(rows)
    simulated = any(np.isfinite(_column(rows, p[5])).any() for p in chosen)
    cols = 2 if len(chosen) > 1 else 1
    grid_rows = math.ceil(len(chosen) / cols)
    per_bar = 0.3 if simulated else 0.2
    panel_in, gap_in, top_in = per_bar * max(n, 1), 0.6, 0.3
    bottom_in = 0.6 if simulated else 0.3
    with _style():
        fig = _figure(top_in + bottom_in + grid_rows * panel_in + (grid_rows - 1) * gap_in)
        axes = fig.subplots(grid_rows, cols, squeeze=False, sharey=True)
        _place(
            fig,
            left=_labels_in(labels),
            bottom=bottom_in,
            top=top_in,
            hspace=gap_in / panel_in,
            wspace=0.12,
        )
        y = np.arange(n)[::-1]
        for ax, panel in zip(axes.flat, chosen, strict=False):
            _latency_panel(ax, rows, y, panel, simulated)
            ax.set_yticks(y, labels)
            ax.set_ylim(-0.6, n - 0.4)
        for ax in list(axes.flat)[len(chosen) :]:
            ax.set_visible(False)
        if simulated:
            handles: dict[str, Any] = {}
            for ax in list(axes.flat)[: len(chosen)]:
                for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
                    handles.setdefault(label, handle)
            fig.legend(
                list(handles.values()),
                list(handles),
                loc="lower center",
                ncols=4,
                frameon=False,
                bbox_to_anchor=(0.5, 0.0),
            )
        return to_svg(fig, prefix)


def _latency_panel(
    ax: Any,
    rows: pd.DataFrame,
    y: np.ndarray,
    panel: tuple[str, str, str, float, str, str],
    simulated: bool,
) -> None:
    """One latency panel: estimate bars, simulated p95 bars (if any), the 90% band of the
    planned figure (the simulated p95 where there is one, else the estimate) as a whisker, and
    the target line."""
    column, title, unit, factor, target_column, sim_column = panel
    estimate = _column(rows, column) * factor
    p95 = _column(rows, sim_column) * factor
    target = _column(rows, target_column)[0] * factor if len(rows) else math.nan
    band = np.nan_to_num(_column(rows, "latency_band_fraction"))
    offset, height = (0.18, 0.34) if simulated else (0.0, 0.6)
    on_p95 = np.isfinite(p95) if simulated else np.zeros(len(rows), bool)
    planned = np.where(on_p95, p95, estimate)
    upper = planned * (1 + band)
    ax.barh(
        y + offset,
        estimate,
        height=height,
        color=ESTIMATE_COLOUR if simulated else SIMULATED_COLOUR,
        label="closed-form estimate",
    )
    for yi, v, u, p in zip(y, estimate, upper, on_p95, strict=True):
        ax.text(v if p else max(v, u), yi + offset, f" {_short(v)}", va="center", fontsize=6)
    if simulated:
        ax.barh(
            y - offset,
            np.nan_to_num(p95),
            height=height,
            color=SIMULATED_COLOUR,
            label="simulated p95",
        )
        for yi, v, u in zip(y, p95, upper, strict=True):
            text = f" {_short(v)}" if is_finite(v) else " not simulated"
            ax.text(u if is_finite(v) else 0, yi - offset, text, va="center", fontsize=6)
    if band.any():
        ax.errorbar(
            planned,
            np.where(on_p95, y - offset, y + offset),
            xerr=[np.zeros(len(rows)), planned * band],
            fmt="none",
            ecolor=BAND_COLOUR,
            elinewidth=0.9,
            capsize=2,
            label="90% band",
        )
    top = np.nanmax(
        np.concatenate([estimate, p95, upper, [target if is_finite(target) else 0, 1e-9]])
    )
    if is_finite(target):
        ax.axvline(target, color=TARGET_COLOUR, linestyle="--", linewidth=1.1, label="p95 target")
        ax.set_title(f"{title} [{unit}] · p95 target {_short(target)} {unit}", loc="left")
    else:
        ax.set_title(f"{title} [{unit}] · no target", loc="left")
    ax.set_xlim(0, top * 1.28)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: _short(v)))
    ax.grid(axis="y", visible=False)


def _short(value: float) -> str:
    """A figure for a chart label: three significant digits, thousands separated, no exponent."""
    if not is_finite(value):
        return "n/a"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.3g}"


# Capacity over time ---------------------------------------------------------------------------


def schedule_chart(needed: list[int], owned: list[int], rented: list[int], prefix: str) -> str:
    """Nodes per month: owned nodes in service and rented nodes, stacked, against the nodes the
    forecast needs (the line)."""
    months = np.arange(len(needed))
    with _style():
        fig = _figure(2.4)
        _place(fig, left=0.6, bottom=0.75, top=0.15)
        ax = fig.add_subplot()
        ax.bar(months, owned, width=0.85, color=SIMULATED_COLOUR, label="owned, in service")
        ax.bar(months, rented, width=0.85, bottom=owned, color=ESTIMATE_COLOUR, label="rented")
        ax.step(months, needed, where="mid", color=TARGET_COLOUR, linewidth=1.2, label="needed")
        ax.set_xlabel("month")
        ax.set_ylabel("nodes")
        ax.set_xlim(-0.6, len(needed) - 0.4)
        ax.set_ylim(0, max(max(needed), 1) * 1.15)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(axis="x", visible=False)
        fig.legend(loc="lower center", ncols=3, frameon=False, bbox_to_anchor=(0.5, 0.0))
        return to_svg(fig, prefix)


def tornado_chart(base_usd: float, bars: list[Any], swing: float, prefix: str) -> str:
    """Per uncertain input, the ask's cost over the period with the input lowered (light) and
    raised (dark) by ``swing``, from the cost at the inputs as given (the line); widest first."""
    n = len(bars)
    labels = [b.label for b in bars]
    with _style():
        fig = _figure(0.6 + 0.75 + 0.35 * max(n, 1))
        _place(fig, left=_labels_in(labels), bottom=0.75, top=0.15)
        ax = fig.add_subplot()
        y = np.arange(n)[::-1]
        for yi, bar in zip(y, bars, strict=True):
            for value, colour, label in (
                (bar.low_usd, ESTIMATE_COLOUR, f"input −{swing:.0%}"),
                (bar.high_usd, SIMULATED_COLOUR, f"input +{swing:.0%}"),
            ):
                ax.barh(yi, value - base_usd, left=base_usd, height=0.6, color=colour, label=label)
        ax.axvline(base_usd, color=TARGET_COLOUR, linewidth=1.1, label="inputs as given")
        ax.set_yticks(y, labels)
        ax.set_xlabel("cost of the ask over the period [USD]")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: _short(v)))
        ax.grid(axis="y", visible=False)
        handles: dict[str, Any] = {}
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
        fig.legend(
            list(handles.values()), list(handles), loc="lower center", ncols=3, frameon=False,
            bbox_to_anchor=(0.5, 0.0),
        )  # fmt: skip
        return to_svg(fig, prefix)
