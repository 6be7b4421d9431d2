"""The Summary's line on the input sheets' coverage: which ids typed on an input sheet no Plan row
uses (an entry is planned only once a Plan row names it), as live formulas over each sheet's ids.
"""

from __future__ import annotations

from typing import Any

from openpyxl.formatting.rule import FormulaRule
from openpyxl.utils import get_column_letter, quote_sheetname

from planner.outputs.workbook.cells import HEADER_FONT, HELPER_FONT, MISFIT_FILL, _formula_cell
from planner.outputs.workbook.plan import PlanLayout, column_range, rows_end
from planner.outputs.workbook.summary import SummaryColumns, SummarySheet, plan_name
from planner.plan.sweep import Results
from planner.plan.tables import KEYS

UNPLANNED = "Input ids in no Plan row: "


def unplanned_ids_row(
    sheet: SummarySheet, results: Results, layout: PlanLayout, columns: SummaryColumns
) -> None:
    """A line saying which ids of the input sheets no Plan row uses (an entry typed on an input
    sheet is planned only once a Plan row names it), with per sheet a count and the first such id
    in the grey helper columns: array formulas over the sheet's ids, its spare rows included."""
    ws, row = sheet.ws, sheet.row + 1
    sheets = [(key, name) for key, name in KEYS.items() if key in layout.letters]
    if not sheets:
        return
    first_helper = len(columns.visible) + 1
    cells: dict[int, tuple[Any, Any]] = {}
    parts, totals, found = [], [], []
    for i, (key, name) in enumerate(sheets):
        end = rows_end(len(results.inputs.sheets[name]))
        column_a = column_range(name, "A", end)
        ids = f"{quote_sheetname(name)}!$A$2:$A${end}"
        missing = f'({ids}<>"")*ISNA(MATCH({ids},{plan_name(key)},0))'
        at = first_helper + 2 * i
        count_at, first_at = (f"{get_column_letter(c)}{row}" for c in (at, at + 1))
        first = f'=IF({count_at}=0,"",INDEX({column_a},MIN(IF({missing},ROW({ids})))))'
        planned = set(results.table[key].astype(str))
        unplanned = [v for v in results.inputs.sheets[name]["id"] if str(v) not in planned]
        cells[at] = (
            _formula_cell(ws, f"=SUM(IF({missing},1,0))", array_at=count_at, font=HELPER_FONT),
            len(unplanned),
        )
        cells[at + 1] = (
            _formula_cell(ws, first, array_at=first_at, font=HELPER_FONT),
            unplanned[0] if unplanned else "",
        )
        parts.append(f'IF({count_at}>0,"; {name}: "&{count_at}&", e.g. "&{first_at},"")')
        totals.append(count_at)
        if unplanned:
            found.append(f"{name}: {len(unplanned)}, e.g. {unplanned[0]}")
    text = f'="{UNPLANNED}"&IF({"+".join(totals)}=0,"none",MID({"&".join(parts)},3,1000))'
    cells[1] = (_formula_cell(ws, text, font=HEADER_FONT), UNPLANNED + ("; ".join(found) or "none"))
    last = max(cells)
    sheet.append(
        [cells[c][0] if c in cells else None for c in range(1, last + 1)],
        {c: value for c, (_, value) in cells.items()},
    )
    ws.conditional_formatting.add(
        f"A{row}", FormulaRule(formula=[f'A{row}<>"{UNPLANNED}none"'], fill=MISFIT_FILL)
    )
