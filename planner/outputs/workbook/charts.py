"""The Summary's native charts: total cost of the recommended option and the runner-up, and the
recommended device's memory, with the formulas that feed them.
"""

from __future__ import annotations

import math
from typing import Any

from openpyxl.chart import BarChart, Reference
from openpyxl.worksheet.pagebreak import Break

from planner.outputs.workbook.cells import (
    HELPER_FONT,
    INTEGER_FORMAT,
    NUMBER_FORMATS,
    SECTION_FONT,
    _formula_cell,
    _header,
    _text_cell,
)
from planner.outputs.workbook.plan import PlanLayout
from planner.outputs.workbook.summary import (
    PLAN_ROW,
    Group,
    SummaryColumns,
    SummarySheet,
    key_header,
    plan_value,
)
from planner.plan import recommend
from planner.plan.sweep import Results
from planner.plan.tables import GLOBALS

#: Above this many groups the Summary draws no charts (the bars would be unreadable).
MAX_CHART_GROUPS = 40

#: Parts of one device's memory in the Summary's chart: for each, the Plan columns (GiB) that
#: may give it, first present wins; the GiB assumptions (runtime overhead, reserve) come after
#: the weights. Without weights there is no memory chart.
MEMORY_PARTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("weights", ("weight_gib_per_device", "weight_gib")),
    ("KV cache budget", ("kv_budget_gib",)),
)


def _rows_under(height: float) -> int:
    """Rows a chart ``height`` cm tall covers (a default row is 15 pt, about 0.53 cm), plus a
    gap."""
    return math.ceil(height / 0.53) + 2


def _memory_parts(layout: PlanLayout) -> list[tuple[str, str]]:
    """(label, source) of each part of device memory: a Plan column or a GiB assumption."""
    parts = [
        (label, next(c for c in sources if c in layout.letters))
        for label, sources in MEMORY_PARTS
        if any(c in layout.letters for c in sources)
    ]
    if not parts or parts[0][0] != "weights":
        return []
    assumed = [
        (g.cell.removesuffix("_gib").replace("_", " "), g.cell) for g in GLOBALS if g.unit == "GiB"
    ]
    return parts[:1] + assumed + parts[1:]


def _summary_charts(
    sheet: SummarySheet,
    results: Results,
    layout: PlanLayout,
    columns: SummaryColumns,
    groups: list[Group],
    first: int,
) -> int:
    """Native charts below the recommendation table, and the data they read after them (one row
    per group, formulas over the table); returns the last row of the charts (the print area).

    A bar chart of the total cost of ownership of the recommended option and the runner-up, and
    a stacked bar of one device's memory for the recommended option (weights, runtime overhead,
    reserve, KV cache budget). Too many groups for readable bars: no charts, a line saying so.
    """
    ws = sheet.ws
    if len(groups) > MAX_CHART_GROUPS:
        sheet.append([])
        note = (
            f"No charts: {len(groups)} workload × model groups are more than "
            f"{MAX_CHART_GROUPS} bars can show readably."
        )
        sheet.append([_text_cell(ws, note, font=HELPER_FONT)])
        return sheet.row
    parts = _memory_parts(layout)
    cost = [("recommended", 0), ("runner-up", 1)]
    # chart data: labels in A (they spill over the empty B and C), values from D
    start = 4
    data_title = "Chart data (read by the charts above): formulas over the table"
    headers = ["workload · model", "", ""]
    headers += [f"{label} (USD)" for label, _ in cost] + [f"{p} (GiB)" for p, _ in parts]
    specs = [
        (
            "Cost over the amortisation period, owned or rented, whichever is cheaper (USD)",
            "USD",
            (start, start + 1),
            False,
        )
    ]
    if parts:
        specs.append(
            (
                "Memory of one device of each recommended option (GiB)",
                "GiB",
                (start + 2, start + 1 + len(parts)),
                True,
            )
        )
    n = len(groups)
    anchor = sheet.row + 2
    end = anchor + sum(_rows_under(_chart_height(n, stacked)) for *_, stacked in specs) - 1
    title_row = end + 2
    header_row = title_row + 1
    for title, axis, data_columns, stacked in specs:
        chart = _bar_chart(ws, title, axis, header_row, n, data_columns, stacked)
        ws.add_chart(chart, f"A{anchor}")
        ws.row_breaks.append(Break(id=anchor - 1))  # printed, each chart starts a page
        anchor += _rows_under(chart.height)
    while sheet.row < title_row - 1:
        sheet.append([])
    sheet.append([_text_cell(ws, data_title, font=SECTION_FONT)])
    sheet.append(_header(ws, headers))
    cost_key = key_header(recommend.COST)
    for i, group in enumerate(groups):
        winner, runner = first + 2 * i, first + 2 * i + 1
        label = " · ".join(str(v) for v in group.ids)
        cells: list[Any] = [_text_cell(ws, label), None, None]
        values: dict[int, Any] = {}
        for rank, row in enumerate((winner, runner)):
            pick = columns.cell(PLAN_ROW, row)
            formula = f'=IF({pick}=0,"",{columns.cell(cost_key, row)})'
            cells.append(_formula_cell(ws, formula, INTEGER_FORMAT))
            position = group.best[rank] if rank < len(group.best) else None
            values[len(cells)] = (
                "" if position is None else results.table[recommend.COST].iloc[position]
            )
        pick = columns.cell(PLAN_ROW, winner)
        position = group.best[0] if group.best else None
        for _, source in parts:
            if source in layout.letters:
                formula = f'=IF({pick}=0,"",{plan_value(layout, source, pick)})'
                value = "" if position is None else results.table[source].iloc[position]
            else:
                formula = f'=IF({pick}=0,"",{source})'
                value = "" if position is None else results.inputs.globals[source]
            cells.append(_formula_cell(ws, formula, NUMBER_FORMATS["GiB"]))
            values[len(cells)] = value
        sheet.append(cells, values)
    return end


def _chart_height(n: int, stacked: bool) -> float:
    """Height (cm) of a bar chart of ``n`` groups."""
    return 5 + (0.8 if stacked else 1.0) * n


def _bar_chart(
    ws: Any,
    title: str,
    axis: str,
    header_row: int,
    n: int,
    columns: tuple[int, int],
    stacked: bool,
) -> BarChart:
    """Horizontal bars, one per group: series in ``columns`` (titles in ``header_row``, the
    ``n`` groups below it), categories in column A."""
    chart = BarChart()
    chart.type = "bar"
    chart.title = title
    chart.y_axis.title = axis
    chart.y_axis.numFmt = "#,##0"
    chart.x_axis.delete = False
    chart.y_axis.delete = False
    chart.x_axis.scaling.orientation = "maxMin"  # first group at the top, as in the table
    if stacked:
        chart.grouping = "stacked"
        chart.overlap = 100
    chart.gapWidth = 40
    low, high = columns
    last = header_row + n
    data = Reference(ws, min_col=low, max_col=high, min_row=header_row, max_row=last)
    chart.add_data(data, titles_from_data=True)
    chart.set_categories(Reference(ws, min_col=1, max_col=1, min_row=header_row + 1, max_row=last))
    chart.legend.position = "b"
    chart.width = 24
    chart.height = _chart_height(n, stacked)
    return chart
