"""The Summary's recommendation table: the ranking of :mod:`planner.plan.recommend` as formulas.

Per workload × model, the recommended option and the runner-up found by one-cell array formulas
``MIN(IF(...))`` over the Plan (lowest total cost, then fewest devices, then lowest inter-token
latency, then the earlier row), every shown cell an INDEX into the Plan, counts by COUNTIFS; each
formula cell carries the value the planner computes for it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from openpyxl.styles import Font, PatternFill
from openpyxl.utils import get_column_letter

from planner.model.cost import RULED_OUT_REASONS
from planner.outputs import formatting
from planner.outputs.workbook.cells import (
    FONT_NAME,
    INTEGER_FORMAT,
)
from planner.outputs.workbook.plan import RULED_OUT_BY, PlanLayout
from planner.plan import recommend
from planner.plan.sweep import Results

#: Plan columns the recommendation needs: its groups, the eligibility and the ranking keys.
ELIGIBLE = "eligible"

NEEDED = (*recommend.GROUP, ELIGIBLE, *recommend.ORDER)

#: What the Summary shows of each option, read from the Plan by the option's row (those the plan
#: has): the ids that tell options apart, the fleet, and the costs.
SHOWN = (
    "hardware",
    "precision",
    "tensor_parallel",
    "devices_needed",
    "devices_upper",
    "advice",
    "cost_usd",
    "capital_usd",
    "opex_usd_per_month",
    "tco_usd",
    "cloud_usd_per_month",
    "rent_usd",
    "break_even_month",
    "api_usd",
    "latency_headroom",
    "latency_band_fraction",
    "kv_spare_fraction",
    "simulation",
)

BREAK_EVEN = "break_even_month"

#: What the Summary's break-even shows when renting costs no more per month than operating
#: owned devices: buying never pays back (the report says the same).
NEVER = "never"

#: Shown columns whose value below the margin_fraction assumption is flagged (filled).
MARGINS = ("latency_headroom", "kv_spare_fraction")

#: Header texts of the shown Plan columns (each header cell's comment names its Plan column).
TITLES = {
    "tensor_parallel": "tensor parallel",
    "devices_needed": "devices",
    "devices_upper": "devices at 90% confidence",
    "latency_band_fraction": "latency band at 90% confidence",
    "capital_usd": "capital (USD)",
    "opex_usd_per_month": "operating cost per month (USD)",
    "advice": "buy, rent or API",
    "cost_usd": "cost over the period (USD)",
    "tco_usd": "total cost of ownership (USD)",
    "cloud_usd_per_month": "cloud rental per month (USD)",
    "rent_usd": "renting over the period (USD)",
    "api_usd": "hosted API over the period (USD)",
    "latency_headroom": "headroom to the tightest target",
    "kv_spare_fraction": "KV capacity spare at the forecast",
    "break_even_month": "break-even month (buy vs rent)",
    "simulation": "simulation",
}

#: The options listed per group, in rank order.
OPTIONS = ("recommended", "runner-up")

NO_OPTION = "no eligible option"

NO_RUNNER_UP = "no runner-up"

WINS = recommend.WINS

ONLY_ONE = "the only eligible option is recommended"

RULED_OUT = "ruled out: "

#: The values of the Plan's ``ruled_out_by`` counted when nothing is eligible ("ruled out:
#: 1 × memory; 5 × latency"); see :func:`planner.model.cost.ruled_out_by`.
REASONS = RULED_OUT_REASONS

#: Why the runner-up lost when it ties on every ranking key before the one named: the words of
#: :mod:`planner.plan.recommend`, which the formulas write as the cached values say them.
TIE_WORDS = recommend.TIE_WORDS

TIED = recommend.TIED

#: Rank key of a missing value: after every number, as :func:`planner.plan.recommend.rank` ranks it.
LAST = recommend.MISSING_LAST

LAST_TEXT = f"{LAST:.0E}"  # 1E+300

#: What a missing Plan value (``#N/A``) shows as on the Summary.
NOT_AVAILABLE = formatting.NOT_AVAILABLE

#: Display formats of the Summary's columns (money in whole units).
SUMMARY_FORMATS = {
    "tensor_parallel": "0",
    "devices_needed": INTEGER_FORMAT,
    "devices_upper": INTEGER_FORMAT,
    "capital_usd": INTEGER_FORMAT,
    "opex_usd_per_month": "#,##0.00",
    "cost_usd": INTEGER_FORMAT,
    "tco_usd": INTEGER_FORMAT,
    "cloud_usd_per_month": "#,##0.00",
    "rent_usd": INTEGER_FORMAT,
    "api_usd": INTEGER_FORMAT,
    "latency_headroom": "0%",
    "latency_band_fraction": "+0%",
    "kv_spare_fraction": "0%",
    "break_even_month": "0",
}

WINNER_FILL = PatternFill("solid", fgColor="E2EFDA")

WINNER_FONT = Font(name=FONT_NAME, bold=True)

HELPER_HEADER_FONT = Font(name=FONT_NAME, bold=True, italic=True, color="808080")

#: Headers of the recommendation table's own columns.
OPTION, COUNT, ELIGIBLE_COUNT, WHY, PLAN_ROW, IN_PLACE = (
    "option",
    "options",
    "eligible options",
    "why",
    "Plan row",
    "group in its Plan rows",
)

TITLE = "Recommendation: the cheapest eligible option for each workload and model"

INTRO = (
    "Eligible: the Plan's 'eligible' is TRUE (a replica holds a maximum-length sequence, every "
    "latency target is met, the cost is known). Best: lowest cost_usd (owning or renting, "
    "whichever is cheaper over the period), then fewest "
    "devices_needed, then lowest itl_load_s, then the Plan's order.",
    "Every cell is a formula over the Plan: edit a price on the Hardware sheet (or any input) "
    "and the recommendation follows. The grey columns on the right are the ranking's helpers.",
)


@dataclass
class SummarySheet:
    """The Summary's cells, written row by row, with the value each formula cell will compute."""

    ws: Any
    cache: dict[str, Any] = field(default_factory=dict)
    row: int = 0

    def append(self, cells: list[Any], values: Mapping[int, Any] | None = None) -> int:
        """Append a row; ``values`` maps column numbers of formula cells to their values."""
        self.row += 1
        self.ws.append(cells)
        for col, value in (values or {}).items():
            self.cache[f"{get_column_letter(col)}{self.row}"] = value
        return self.row


def plan_name(column: str) -> str:
    """The defined name of a Plan column's data cells (``plan_tco_usd``)."""
    return f"plan_{column}"


def ruled_out_header(reason: str) -> str:
    """Header of the helper that counts the options of a group that ``reason`` rules out."""
    return f"ruled out: {reason}"


def key_header(column: str) -> str:
    """Header of the helper that holds an option's value of ranking key ``column``."""
    return f"{column} key"


@dataclass(frozen=True)
class Group:
    """One group of :data:`planner.plan.recommend.GROUP` (workload × model): its ids, its number of
    options and of eligible ones, the table positions of its best (at most two, in rank order),
    and how many of its options each of :data:`REASONS` rules out."""

    ids: tuple[Any, ...]
    options: int
    eligible: int
    best: list[int]
    reasons: dict[str, int] = field(default_factory=dict)
    block: tuple[int, int] = (2, 2)  # the Plan rows from its first row to its last


def recommendation_groups(table: pd.DataFrame, ranks: pd.DataFrame | None = None) -> list[Group]:
    """The groups in plan order, each with its winner and runner-up as
    :func:`planner.plan.recommend.rank` ranks them (``ranks``, where the caller has it). This is
    what the Summary's formulas compute; it gives their cached values."""
    keys = list(recommend.GROUP)
    eligible = table["eligible"].astype(bool).to_numpy()
    places = (recommend.rank(table) if ranks is None else ranks)["rank"].to_numpy()
    leaders = np.flatnonzero((places >= 1) & (places <= len(OPTIONS)))
    leaders = leaders[np.argsort(places[leaders], kind="stable")]
    best: dict[tuple[Any, ...], list[int]] = {}
    for position, named in zip(
        leaders, table[keys].iloc[leaders].itertuples(index=False, name=None), strict=True
    ):
        best.setdefault(tuple(named), []).append(int(position))
    counts = table[keys].assign(_eligible=eligible, _row=np.arange(len(table)) + 2)
    if RULED_OUT_BY in table:
        ruled_out = table[RULED_OUT_BY].astype(str)
        counts = counts.assign(**{r: ruled_out == r for r in REASONS})
    totals = counts.groupby(keys, sort=False).agg(["size", "sum", "min", "max"])
    groups = []
    for key, sums in totals.iterrows():
        ids: tuple[Any, ...] = key if isinstance(key, tuple) else (key,)
        reasons = {r: int(sums[(r, "sum")]) for r in REASONS if (r, "sum") in sums.index}
        options, n_eligible = int(sums[("_eligible", "size")]), int(sums[("_eligible", "sum")])
        block = (int(sums[("_row", "min")]), int(sums[("_row", "max")]))
        groups.append(Group(ids, options, n_eligible, best.get(ids, []), reasons, block))
    return groups


@dataclass(frozen=True)
class SummaryColumns:
    """The recommendation table's columns: the group's ids, the option, what the Plan says of
    it, the group's counts and why, then the ranking's helpers (grey)."""

    shown: list[str]
    reasons: tuple[str, ...] = REASONS  # none when the plan has no ruled_out_by column

    @property
    def visible(self) -> list[str]:
        return [*recommend.GROUP, OPTION, *self.shown, COUNT, ELIGIBLE_COUNT, WHY]

    @property
    def ranking_helpers(self) -> list[str]:
        return [*(key_header(k) for k in recommend.ORDER), PLAN_ROW]

    @property
    def group_helpers(self) -> list[str]:
        """Helpers of a group's first row: whether it is still in its Plan rows, and the
        count of options each reason rules out."""
        return [IN_PLACE, *(ruled_out_header(r) for r in self.reasons)]

    @property
    def helpers(self) -> list[str]:
        return [*self.ranking_helpers, *self.group_helpers]

    @property
    def headers(self) -> list[str]:
        """The columns' keys: Plan column names for what is read from the Plan."""
        return self.visible + self.helpers

    @property
    def titles(self) -> list[str]:
        """The header row's texts: :data:`TITLES` for the Plan columns shown."""
        return [TITLES.get(h, h) for h in self.headers]

    def letter(self, header: str) -> str:
        return get_column_letter(self.headers.index(header) + 1)

    def cell(self, header: str, row: int) -> str:
        """Address of ``header``'s cell in ``row``, its column absolute (``$J6``)."""
        return f"${self.letter(header)}{row}"


@dataclass(frozen=True)
class PlanRanges:
    """How the Summary's formulas refer to the Plan columns they scan: the whole data range (a
    defined name, ``plan_tco_usd``), or only the Plan rows ``first..last`` of one group as the
    workbook was written (``Plan!$AB$8:$AB$13``)."""

    layout: PlanLayout
    block: tuple[int, int] | None = None

    def __call__(self, column: str) -> str:
        if self.block is None:
            return plan_name(column)
        letter = self.layout.letters[column]
        first, last = self.block
        return f"Plan!${letter}${first}:${letter}${last}"


def _ranking_key(plan: PlanRanges, column: str) -> str:
    """A Plan column as a ranking key: a missing value (#N/A) ranks after every number."""
    return f"IF(ISNUMBER({plan(column)}),{plan(column)},{LAST_TEXT})"


def group_match(plan: PlanRanges, columns: SummaryColumns, row: int) -> str:
    """A product that is 1 on the Plan rows of the group named in ``row`` and 0 elsewhere."""
    return "*".join(f"({plan(g)}={columns.cell(g, row)})" for g in recommend.GROUP)


def group_criteria(plan: PlanRanges, columns: SummaryColumns, row: int) -> str:
    """COUNTIFS criteria pairs that select the Plan rows of the group named in ``row``."""
    return ",".join(f"{plan(g)},{columns.cell(g, row)}" for g in recommend.GROUP)


def fast_or_full(
    layout: PlanLayout, group: Group, in_place: str, body: Callable[[PlanRanges], str]
) -> str:
    """``body`` over the group's own Plan rows while they still hold every row of the group
    (the cell ``in_place`` is TRUE), else over the whole Plan (after someone sorted it): as
    fast as the group is small, and right in any row order. IF evaluates one branch only."""
    block, full = PlanRanges(layout, group.block), PlanRanges(layout)
    return f"IF({in_place},{body(block)},{body(full)})"


def ranking_formulas(
    layout: PlanLayout, columns: SummaryColumns, group: Group, row: int, first: int
) -> dict[str, str]:
    """Array formulas of one option's helpers: its value of each ranking key, then its Plan row.

    Among the group's eligible Plan rows (less the recommended option's row when ``row`` is the
    runner-up's, below the group's ``first`` Summary row), the first key's value is the
    smallest; the next key's the smallest among the rows that hold the first; and so on; the
    Plan row is the first row that holds them all. MIN over no rows is 0, and no Plan row is 0:
    "no option".
    """
    in_place = columns.cell(IN_PLACE, first)

    def helper(target: str | None) -> Callable[[PlanRanges], str]:
        def body(plan: PlanRanges) -> str:
            rows = f"ROW({plan(recommend.GROUP[0])})"
            mask = f"{group_match(plan, columns, row)}*({plan(ELIGIBLE)}=TRUE())"
            if row != first:
                mask += f"*({rows}<>{columns.cell(PLAN_ROW, first)})"
            position = recommend.ORDER.index(target) if target else len(recommend.ORDER)
            inner = rows if target is None else _ranking_key(plan, target)
            for before in reversed(recommend.ORDER[:position]):
                held = columns.cell(key_header(before), row)
                inner = f"IF({_ranking_key(plan, before)}={held},{inner})"
            return f"MIN(IF({mask},{inner}))"

        return body

    formulas = {
        key_header(k): "=" + fast_or_full(layout, group, in_place, helper(k))
        for k in recommend.ORDER
    }
    formulas[PLAN_ROW] = "=" + fast_or_full(layout, group, in_place, helper(None))
    return formulas


def plan_value(layout: PlanLayout, column: str, plan_row: str) -> str:
    return f"INDEX({layout.rows(column)},{plan_row})"


def _summary_widths(results: Results, columns: SummaryColumns) -> list[float]:
    """Column widths: ids as wide as their values, the first shown column wide enough for "no
    eligible option", money wide enough for millions, 'why' for its sentences."""
    table = results.table

    def longest(key: str) -> int:
        return max((len(str(v)) for v in table[key].head(5000)), default=0)

    widths: dict[str, float] = {g: max(12, longest(g) + 2) for g in recommend.GROUP}
    widths[OPTION] = 13
    for column in columns.shown:
        if column == columns.shown[0]:
            widths[column] = max(len(NO_OPTION) + 2, longest(column) + 2)
        elif not pd.api.types.is_numeric_dtype(table[column]):
            widths[column] = max(11, longest(column) + 2)
        elif "usd" in column:
            widths[column] = 13
        else:
            widths[column] = 12
    widths |= {COUNT: 9, ELIGIBLE_COUNT: 9, WHY: 50, PLAN_ROW: 9}
    widths |= {key_header(k): 14 for k in recommend.ORDER} | {IN_PLACE: 11}
    widths |= {ruled_out_header(r): 11 for r in columns.reasons}
    return [widths[h] for h in columns.headers]
