"""The Summary's recommendation table: the ranking of :mod:`planner.plan.recommend` as formulas.

Per workload × model, the recommended option and the runner-up found by one-cell array formulas
``MIN(IF(...))`` over the Plan (lowest total cost, then fewest devices, then lowest inter-token
latency, then the earlier row), every shown cell an INDEX into the Plan, counts by COUNTIFS; each
formula cell carries the value the planner computes for it.
"""

from __future__ import annotations

import math
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
    CENTRE,
    FONT_NAME,
    HELPER_FONT,
    INDENT,
    INTEGER_FORMAT,
    RIGHT,
    _cell,
    _formula_cell,
    _text_cell,
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


def recommendation_groups(table: pd.DataFrame) -> list[Group]:
    """The groups in plan order, each with its winner and runner-up as
    :func:`planner.plan.recommend.rank` ranks them. This is what the Summary's formulas compute; it
    gives their cached values."""
    keys = list(recommend.GROUP)
    eligible = table["eligible"].astype(bool).to_numpy()
    ranks = recommend.rank(table)["rank"].to_numpy()
    leaders = np.flatnonzero((ranks >= 1) & (ranks <= len(OPTIONS)))
    leaders = leaders[np.argsort(ranks[leaders], kind="stable")]
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


def _group_match(plan: PlanRanges, columns: SummaryColumns, row: int) -> str:
    """A product that is 1 on the Plan rows of the group named in ``row`` and 0 elsewhere."""
    return "*".join(f"({plan(g)}={columns.cell(g, row)})" for g in recommend.GROUP)


def _group_criteria(plan: PlanRanges, columns: SummaryColumns, row: int) -> str:
    """COUNTIFS criteria pairs that select the Plan rows of the group named in ``row``."""
    return ",".join(f"{plan(g)},{columns.cell(g, row)}" for g in recommend.GROUP)


def _fast_or_full(
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
            mask = f"{_group_match(plan, columns, row)}*({plan(ELIGIBLE)}=TRUE())"
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
        key_header(k): "=" + _fast_or_full(layout, group, in_place, helper(k))
        for k in recommend.ORDER
    }
    formulas[PLAN_ROW] = "=" + _fast_or_full(layout, group, in_place, helper(None))
    return formulas


def _plan_value(layout: PlanLayout, column: str, plan_row: str) -> str:
    return f"INDEX({layout.rows(column)},{plan_row})"


def _shown_value(value: Any) -> Any:
    """What a shown cell displays for a Plan value: a missing number reads ``n/a``."""
    if value is None or value is pd.NA:
        return NOT_AVAILABLE
    if isinstance(value, (float, np.floating)) and math.isnan(value):
        return NOT_AVAILABLE
    return value.item() if hasattr(value, "item") else value


@dataclass
class RecommendationTable:
    """Writes the recommendation table, two rows per group, with each formula's cached value."""

    sheet: SummarySheet
    results: Results
    layout: PlanLayout
    columns: SummaryColumns
    verdicts: np.ndarray  # :func:`planner.plan.recommend.verdicts` of every Plan row
    _kinds: dict[str, bool] = field(default_factory=dict)
    _columns: dict[str, np.ndarray] = field(default_factory=dict)

    def _value(self, column: str, position: int) -> Any:
        """The table's value of ``column`` at ``position`` (columns read once, as arrays)."""
        if column not in self._columns:
            self._columns[column] = self.results.table[column].to_numpy()
        return self._columns[column][position]

    def _numeric(self, column: str) -> bool:
        if column not in self._kinds:
            values = self.results.table[column]
            self._kinds[column] = pd.api.types.is_numeric_dtype(
                values
            ) and not pd.api.types.is_bool_dtype(values)
        return self._kinds[column]

    def _never_applies(self) -> bool:
        return BREAK_EVEN in self.columns.shown and all(
            c in self.layout.letters for c in ("cloud_usd_per_month", "opex_usd_per_month")
        )

    def _missing(self, column: str, plan_row: str) -> str:
        """What a shown number reads where the Plan has none: "never" for a break-even month
        when renting costs no more per month than operating, else "n/a"."""
        if column != BREAK_EVEN or not self._never_applies():
            return f'"{NOT_AVAILABLE}"'
        rent = _plan_value(self.layout, "cloud_usd_per_month", plan_row)
        opex = _plan_value(self.layout, "opex_usd_per_month", plan_row)
        never = f'IF({rent}<={opex},"{NEVER}","{NOT_AVAILABLE}")'
        return (
            f'IF(ISNUMBER({rent}),IF(ISNUMBER({opex}),{never},"{NOT_AVAILABLE}"),"{NOT_AVAILABLE}")'
        )

    def _shown(self, column: str, position: int) -> Any:
        """The value the shown cell of ``column`` computes for the option at ``position``."""
        value = _shown_value(self._value(column, position))
        if value == NOT_AVAILABLE and column == BREAK_EVEN and self._never_applies():
            rent = self._value("cloud_usd_per_month", position)
            opex = self._value("opex_usd_per_month", position)
            if pd.notna(rent) and pd.notna(opex) and rent <= opex:
                return NEVER
        return value

    def helper_values(self, position: int | None) -> list[float]:
        """An option's ranking keys and Plan row, as its helpers compute them (0s: none)."""
        if position is None:
            return [0] * (len(recommend.ORDER) + 1)
        keys = [pd.to_numeric(self._value(k, position), errors="coerce") for k in recommend.ORDER]
        return [*(float(v) if pd.notna(v) else LAST for v in keys), position + 2]

    def write(self, group: Group) -> None:
        """The group's rows: the recommended option, then the runner-up."""
        first = self.sheet.row + 1
        self.option(group, 0, first)
        self.option(group, 1, first)

    def option(self, group: Group, rank: int, first: int) -> None:
        """Row of option ``rank`` (0: recommended) of ``group``, whose first row is ``first``."""
        ws, columns = self.sheet.ws, self.columns
        row = self.sheet.row + 1
        position = group.best[rank] if rank < len(group.best) else None
        style: dict[str, Any] = {"font": WINNER_FONT, "fill": WINNER_FILL} if rank == 0 else {}
        plan_row = columns.cell(PLAN_ROW, row)
        cells: dict[str, tuple[Any, Any]] = {
            g: (_cell(ws, value, **style), None)
            for g, value in zip(recommend.GROUP, group.ids, strict=True)
        }
        cells[OPTION] = (_text_cell(ws, OPTIONS[rank], **style), None)
        for column in columns.shown:
            value = _plan_value(self.layout, column, plan_row)
            if column == columns.shown[0]:  # names the option, or says there is none
                if rank == 0:
                    blank, blank_value = f'"{NO_OPTION}"', NO_OPTION
                else:
                    count = columns.cell(ELIGIBLE_COUNT, first)
                    blank = f'IF({count}>0,"{NO_RUNNER_UP}","")'
                    blank_value = NO_RUNNER_UP if group.eligible else ""
                formula = f"=IF({plan_row}=0,{blank},{value})"
            else:
                blank_value = ""
                missing = self._missing(column, plan_row)
                formula = (
                    f'=IF({plan_row}=0,"",IF(ISNUMBER({value}),{value},{missing}))'
                    if self._numeric(column)
                    else f'=IF({plan_row}=0,"",{value})'
                )
            shown = blank_value if position is None else self._shown(column, position)
            fmt = SUMMARY_FORMATS.get(column)
            alignment = RIGHT if self._numeric(column) else INDENT
            align = {"alignment": CENTRE if column in (BREAK_EVEN, "advice") else alignment}
            cells[column] = (_formula_cell(ws, formula, fmt, **style, **align), shown)
        cells |= self._counts(group, row, style)
        helpers = self.helper_values(position)
        if rank == 0:
            why = self._why(group, row)
            why_value = WINS if position is not None else self._ruled_out(group)
        else:
            why = self._why_not(row, first)
            why_value = self._why_not_value(group, position)
        cells[WHY] = (_formula_cell(ws, why, alignment=INDENT, **style), why_value)
        formulas = ranking_formulas(self.layout, columns, group, row, first)
        for header, helper in zip(columns.ranking_helpers, helpers, strict=True):
            address = f"{columns.letter(header)}{row}"
            cell = _formula_cell(ws, formulas[header], array_at=address, font=HELPER_FONT)
            cells[header] = (cell, helper)
        if rank == 0:
            block, full = PlanRanges(self.layout, group.block), PlanRanges(self.layout)
            in_place = (
                f"=COUNTIFS({_group_criteria(block, columns, row)})"
                f"=COUNTIFS({_group_criteria(full, columns, row)})"
            )
            cells[IN_PLACE] = (_formula_cell(ws, in_place, font=HELPER_FONT), True)
            cells |= self._reason_cells(group, row)
        else:
            cells |= {h: (None, None) for h in columns.group_helpers}
        self.sheet.append(
            [cells[h][0] for h in columns.headers],
            {
                i: cells[h][1]
                for i, h in enumerate(columns.headers, start=1)
                if cells[h][1] is not None
            },
        )

    def _counts(self, group: Group, row: int, style: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
        """The group's options and eligible options (on its first row only)."""
        ws, columns = self.sheet.ws, self.columns
        if not style:
            return {COUNT: (None, None), ELIGIBLE_COUNT: (None, None)}
        in_place = columns.cell(IN_PLACE, row)

        def count(eligible: bool) -> Callable[[PlanRanges], str]:
            def body(plan: PlanRanges) -> str:
                match = _group_criteria(plan, columns, row)
                return f"COUNTIFS({match}{f',{plan(ELIGIBLE)},TRUE()' if eligible else ''})"

            return body

        return {
            header: (
                _formula_cell(
                    ws,
                    "=" + _fast_or_full(self.layout, group, in_place, count(header != COUNT)),
                    alignment=CENTRE,
                    **style,
                ),
                value,
            )
            for header, value in ((COUNT, group.options), (ELIGIBLE_COUNT, group.eligible))
        }

    def _why(self, group: Group, row: int) -> str:
        """Formula of the recommended row's why: it wins, or what ruled every option out."""
        plan_row = self.columns.cell(PLAN_ROW, row)
        parts = []
        for reason in self.columns.reasons:
            n = self.columns.cell(ruled_out_header(reason), row)
            parts.append(f'IF({n}>0,"; "&{n}&" × {reason}","")')
        none = f'"{RULED_OUT}"&MID({"&".join(parts)},3,1000)' if parts else f'"{RULED_OUT}"'
        return f'=IF({plan_row}=0,{none},"{WINS}")'

    def _reason_cells(self, group: Group, row: int) -> dict[str, tuple[Any, Any]]:
        """The group's count of options each reason rules out (its first row only): how many
        of its Plan rows the reason rules out (``ruled_out_by``), counted with COUNTIFS: no
        array evaluation, so every engine counts alike."""
        ws, columns = self.sheet.ws, self.columns
        in_place = columns.cell(IN_PLACE, row)
        cells = {}
        for reason in columns.reasons:

            def count(plan: PlanRanges, reason: str = reason) -> str:
                match = _group_criteria(plan, columns, row)
                return f'COUNTIFS({match},{plan(RULED_OUT_BY)},"{reason}")'

            formula = "=" + _fast_or_full(self.layout, group, in_place, count)
            cells[ruled_out_header(reason)] = (
                _formula_cell(ws, formula, font=HELPER_FONT),
                group.reasons.get(reason, 0),
            )
        return cells

    def _ruled_out(self, group: Group) -> str:
        """What :meth:`_why` computes when no option is eligible."""
        return RULED_OUT + "; ".join(
            f"{group.reasons[r]} × {r}" for r in self.columns.reasons if group.reasons[r]
        )

    def _why_not(self, row: int, first: int) -> str:
        """Formula of the runner-up's why: how it lost to the recommended option."""
        columns = self.columns
        plan_row = columns.cell(PLAN_ROW, row)
        order = list(recommend.ORDER)
        held = [
            (columns.cell(key_header(k), row), columns.cell(key_header(k), first)) for k in order
        ]
        chain = f'"{TIED}"'
        for k, (mine, best) in reversed(list(zip(order[1:], held[1:], strict=True))):
            words = TIE_WORDS.get(k, f"higher {k}")
            chain = f'IF({mine}>{best},"{words}",{chain})'
        mine, best = held[0]
        chain = (
            f'IF({mine}>{best},"{recommend.COST_BEFORE}"&TEXT({mine}-{best},"#,##0")'
            f'&"{recommend.COST_AFTER}",'
            f"{chain})"
        )
        count = columns.cell(ELIGIBLE_COUNT, first)
        return f'=IF({plan_row}=0,IF({count}=1,"{ONLY_ONE}",""),{chain})'

    def _why_not_value(self, group: Group, position: int | None) -> str:
        """What :meth:`_why_not` computes: the runner-up's verdict
        (:mod:`planner.plan.recommend`)."""
        if position is None:
            return ONLY_ONE if group.eligible == 1 else ""
        return str(self.verdicts[position])


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
