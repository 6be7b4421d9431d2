"""The Summary's recommendation table written row by row: per workload × model, the
recommended option and the runner-up as INDEX formulas into the Plan (:mod:`.summary` holds the
ranking formulas and the columns), the counts, and why nothing or the runner-up lost, each
formula cell with the value the planner computes for it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from planner.outputs.workbook.cells import (
    CENTRE,
    HELPER_FONT,
    INDENT,
    RIGHT,
    _cell,
    _formula_cell,
    _text_cell,
)
from planner.outputs.workbook.plan import RULED_OUT_BY, PlanLayout
from planner.outputs.workbook.summary import (
    BREAK_EVEN,
    COUNT,
    ELIGIBLE,
    ELIGIBLE_COUNT,
    IN_PLACE,
    LAST,
    NEVER,
    NO_OPTION,
    NO_RUNNER_UP,
    NOT_AVAILABLE,
    ONLY_ONE,
    OPTION,
    OPTIONS,
    PLAN_ROW,
    RULED_OUT,
    SUMMARY_FORMATS,
    TIE_WORDS,
    TIED,
    WHY,
    WINNER_FILL,
    WINNER_FONT,
    WINS,
    Group,
    PlanRanges,
    SummaryColumns,
    SummarySheet,
    fast_or_full,
    group_criteria,
    key_header,
    plan_value,
    ranking_formulas,
    ruled_out_header,
)
from planner.plan import recommend
from planner.plan.sweep import Results

#: Plan columns the recommendation needs: its groups, the eligibility and the ranking keys.


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
        rent = plan_value(self.layout, "cloud_usd_per_month", plan_row)
        opex = plan_value(self.layout, "opex_usd_per_month", plan_row)
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
            value = plan_value(self.layout, column, plan_row)
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
                f"=COUNTIFS({group_criteria(block, columns, row)})"
                f"=COUNTIFS({group_criteria(full, columns, row)})"
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
                match = group_criteria(plan, columns, row)
                return f"COUNTIFS({match}{f',{plan(ELIGIBLE)},TRUE()' if eligible else ''})"

            return body

        return {
            header: (
                _formula_cell(
                    ws,
                    "=" + fast_or_full(self.layout, group, in_place, count(header != COUNT)),
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
                match = group_criteria(plan, columns, row)
                return f'COUNTIFS({match},{plan(RULED_OUT_BY)},"{reason}")'

            formula = "=" + fast_or_full(self.layout, group, in_place, count)
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
