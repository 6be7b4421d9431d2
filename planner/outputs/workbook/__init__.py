"""plan.xlsx: editable input sheets, a Plan sheet of live formulas, a Summary, and Notes.

One module per part: :mod:`.cells` (styles, cells, sheet set-up), :mod:`.inputs` (input sheets,
Assumptions), :mod:`.plan` (the Plan), :mod:`.summary` (the recommendation as formulas),
:mod:`.charts` (the Summary's charts), :mod:`.notes`, and :mod:`.package` (the Plan's rows and the
cached values written into the saved file). This module assembles them.

The renderer computes no metric itself. Input sheets hold the catalog numbers (in the units of
their headers); every Plan cell other than the ids is a formula: a lookup of an input by the row's
id, or a metric traced from its Python definition (:mod:`planner.model.expr`). An edit in an input
cell therefore recomputes the plan in Excel or LibreOffice exactly as ``planner run`` would have.

Sheets, in order: ``Summary`` (the recommendation of :mod:`planner.plan.recommend` as formulas: for
each workload × model, the cheapest eligible option and the runner-up, and charts), ``Plan`` (one
row per candidate, the columns of ``results.csv``), the input sheets of ``results.inputs``
(``Hardware``, ``Models``, ``Precisions``, ``Workloads``: Excel tables; ``Simulated``: figures of
the last run's serving simulation, an orange tab), ``Assumptions`` (named cells), and ``Notes``
(what every column means).

The Summary ranks in formulas that LibreOffice 7.4 and Excel both evaluate: per option, one-cell
array formulas ``MIN(IF(group and eligible, key))`` find the smallest total cost of ownership,
then among the rows holding it the fewest devices, then the lowest inter-token latency, then the
first Plan row; the runner-up repeats this without the winner's row. Everything shown is
``INDEX`` into the Plan by that row, so a price typed on the Hardware sheet can change the winner.

Cached values: openpyxl writes formulas without results, so a file viewer that does not
calculate would show empty cells. After openpyxl has saved the workbook, :func:`write_workbook`
therefore writes every Plan formula's value into the file itself (the Python value of the same
metric, which is by construction what the formula computes: ``TRUE``/``FALSE`` as booleans, text
as text, NaN as "n/a"), and the Summary's values from the same ranking the formulas express
(:func:`recommendation_groups`, from :func:`planner.plan.recommend.rank`).
The workbook also asks Excel to recalculate everything on open (``fullCalcOnLoad``).

For speed the Plan's data rows are written straight as XML (openpyxl writes the sheet frame and a
template row whose cell styles the generated rows reuse), each computed column as one shared
formula, the way Excel stores a filled-down column: 20,000 rows take seconds, not minutes.

Catalog text is untrusted: every text cell is written as a string, never a formula, so a name
such as ``=HYPERLINK(...)`` stays inert text.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pandas as pd
from openpyxl import Workbook
from openpyxl.comments import Comment
from openpyxl.formatting.rule import FormulaRule
from openpyxl.utils import get_column_letter
from openpyxl.workbook.defined_name import DefinedName
from openpyxl.workbook.properties import CalcProperties

from planner.outputs.workbook.cells import (
    HEADER_FILL,
    MISFIT_FILL,
    NUMBER_FORMATS,
    OUTPUT_TAB,
    SIMULATED_NOTE,
    SIMULATED_TAB,
    TITLE_FONT,
    WRAP,
    _fit_row,
    _header,
    _new_sheet,
    _print_setup,
    _text_cell,
    _widths,
    number_format,
)
from planner.outputs.workbook.charts import MAX_CHART_GROUPS, _summary_charts
from planner.outputs.workbook.coverage import unplanned_ids_row
from planner.outputs.workbook.fleet import write_fleet
from planner.outputs.workbook.fleet_months import write_fleet_months
from planner.outputs.workbook.inputs import _write_assumptions, _write_input_sheet
from planner.outputs.workbook.measured import write_measured
from planner.outputs.workbook.notes import _write_notes
from planner.outputs.workbook.package import (
    _finish,
    cached_value_xml,
    constant_xml,
    insert_cached_values,
    sheet_members,
)
from planner.outputs.workbook.plan import (
    RULED_OUT_BY,
    SPARE_ROWS,
    PlanLayout,
    _write_plan,
    hidden_columns,
    lookup_expression,
    plan_formulas,
    shown_plan,
)
from planner.outputs.workbook.recommendation import RecommendationTable
from planner.outputs.workbook.schedule import write_schedule, write_sensitivity
from planner.outputs.workbook.summary import (
    HELPER_HEADER_FONT,
    IN_PLACE,
    INTRO,
    MARGINS,
    NEEDED,
    NOT_AVAILABLE,
    OPTION,
    OPTIONS,
    PLAN_ROW,
    REASONS,
    SHOWN,
    TITLE,
    TITLES,
    Group,
    SummaryColumns,
    SummarySheet,
    _summary_widths,
    plan_name,
    recommendation_groups,
)
from planner.outputs.workbook.uncertainty import write_uncertainty
from planner.plan import recommend
from planner.plan.fleet import Fleet
from planner.plan.fleet_schedule import FleetSchedule
from planner.plan.schedule import WorkloadSchedule
from planner.plan.sensitivity import SWING
from planner.plan.sweep import Results
from planner.plan.tables import KEYS


def _write_summary(
    wb: Workbook, results: Results, layout: PlanLayout, ranks: pd.DataFrame | None = None
) -> dict[str, Any]:
    """The Summary sheet (``ranks``: :func:`planner.plan.recommend.rank` of the results where
    the caller has it); returns the value of each of its formula cells (its cache)."""
    ws = _new_sheet(wb, "Summary", OUTPUT_TAB)
    sheet = SummarySheet(ws)
    missing = [c for c in NEEDED if c not in layout.letters]
    if missing or not layout.n_rows:
        _widths(ws, [110])
        sheet.append([_text_cell(ws, TITLE, font=TITLE_FONT)])
        why = (
            "This plan has no candidates."
            if not layout.n_rows
            else "This plan lacks the columns the recommendation needs: " + ", ".join(missing)
        )
        sheet.append([_text_cell(ws, why)])
        return sheet.cache
    columns = SummaryColumns(
        [c for c in SHOWN if c in layout.letters],
        REASONS if RULED_OUT_BY in layout.letters else (),
    )
    read = {*NEEDED, *KEYS, RULED_OUT_BY}
    for column in (c for c in layout.names if c in read):
        wb.defined_names[plan_name(column)] = DefinedName(
            plan_name(column), attr_text=layout.column(column)
        )
    ranks = recommend.rank(results.table) if ranks is None else ranks
    groups = recommendation_groups(results.table, ranks)
    widths = _widths(ws, _summary_widths(results, columns))
    sheet.append([_text_cell(ws, TITLE, font=TITLE_FONT)])
    for line in INTRO:
        sheet.append([_text_cell(ws, line)])
    unplanned_ids_row(sheet, results, layout, columns)
    sheet.append([])
    _fit_row(ws, sheet.row + 1, columns.titles, widths)
    header = _header(ws, columns.titles[: len(columns.visible)])
    for cell, column in zip(header, columns.visible, strict=True):
        if column in columns.shown:
            text = f"The Plan's column {column} in the option's row."
            cell.comment = Comment(text, "planner", width=220, height=50)
    helper_header = {"font": HELPER_HEADER_FONT, "fill": HEADER_FILL, "alignment": WRAP}
    header += [_text_cell(ws, h, **helper_header) for h in columns.helpers]
    header_row = sheet.append(header)
    table = RecommendationTable(
        sheet, results, layout, columns, recommend.verdicts(results.table, ranks)
    )
    for group in groups:
        table.write(group)
    first, last_visible = header_row + 1, get_column_letter(len(columns.visible))
    ws.freeze_panes = f"{get_column_letter(len(recommend.GROUP) + 2)}{first}"
    option, plan_row = columns.letter(OPTION), columns.letter(PLAN_ROW)
    ws.conditional_formatting.add(
        f"A{first}:{last_visible}{sheet.row}",
        FormulaRule(
            formula=[f'AND(${option}{first}="{OPTIONS[0]}",${plan_row}{first}=0)'],
            fill=MISFIT_FILL,
        ),
    )
    for column in MARGINS:  # a tight margin is flagged, against the margin_fraction assumption
        if column in columns.shown:
            letter = columns.letter(column)
            ws.conditional_formatting.add(
                f"{letter}{first}:{letter}{sheet.row}",
                FormulaRule(
                    formula=[f"AND(ISNUMBER({letter}{first}),{letter}{first}<margin_fraction)"],
                    fill=MISFIT_FILL,
                ),
            )
    end = _summary_charts(sheet, results, layout, columns, groups, first)
    _print_setup(
        ws,
        f"A1:{last_visible}{end}",
        title_rows=f"{header_row}:{header_row}",
        title_cols=f"A:{option}",  # the workload, the model and which option
    )
    return sheet.cache


def write_workbook(
    results: Results,
    path: str | Path,
    measured: pd.DataFrame | None = None,
    schedules: list[WorkloadSchedule] | None = None,
    sensitivity: tuple[float, float, list[Any]] | None = None,
    growth: list[list[Any]] | None = None,
    uncertainty: Any = None,
    ranks: pd.DataFrame | None = None,
    fleet: Fleet | str | None = None,
    fleet_months: FleetSchedule | None = None,
) -> Path:
    """Write ``plan.xlsx`` for ``results`` to ``path``, with cached values for every formula;
    ``measured`` (:func:`planner.measure.compare.comparison`) adds the Measured sheet and
    ``schedules`` (:func:`planner.plan.schedule.schedules`) the Schedule sheet and
    ``sensitivity`` (:func:`planner.plan.sensitivity.tornado`) the Sensitivity sheet, with
    ``growth`` (per schedule, :func:`planner.plan.schedule.growth_cases`) below it;
    ``uncertainty`` (:class:`planner.plan.uncertainty.Bands`) the Uncertainty sheet; ``ranks``
    is :func:`planner.plan.recommend.rank` of the results where the caller has it; ``fleet``
    (:func:`planner.plan.portfolio.plan_fleet`) the Fleet sheet and ``fleet_months``
    (:func:`planner.plan.fleet_schedule.fleet_schedule`) the Fleet months sheet."""
    layout = PlanLayout.of(results)
    wb = Workbook(write_only=True)
    wb.calculation = CalcProperties(fullCalcOnLoad=True)
    summary_cache = _write_summary(wb, results, layout, ranks)
    plan_rows = _write_plan(wb, results, layout)
    caches = {"Summary": summary_cache}
    for name in results.inputs.sheets:
        caches[name] = _write_input_sheet(wb, name, results, layout)
    caches["Assumptions"] = _write_assumptions(wb, results)
    positions = {index: i for i, index in enumerate(results.table.index)}
    caches["Schedule"] = write_schedule(wb, schedules or [], layout, positions)
    caches["Fleet"] = write_fleet(wb, fleet)
    caches["Fleet months"] = write_fleet_months(wb, fleet_months)
    pairs = list(zip(schedules or [], growth or [], strict=True)) if growth else []
    write_sensitivity(wb, sensitivity, SWING, pairs)
    write_uncertainty(wb, uncertainty)
    if measured is not None:
        write_measured(wb, measured)
    _write_notes(wb, results)
    frame = io.BytesIO()
    wb.save(frame)
    path = Path(path)
    _finish(frame.getvalue(), path, plan_rows, caches)
    return path


#: The package's public names: what the run, the tests and the benchmarks use.
__all__ = [
    "IN_PLACE",
    "MAX_CHART_GROUPS",
    "NOT_AVAILABLE",
    "NUMBER_FORMATS",
    "SHOWN",
    "SIMULATED_NOTE",
    "SIMULATED_TAB",
    "SPARE_ROWS",
    "TITLES",
    "Group",
    "cached_value_xml",
    "constant_xml",
    "hidden_columns",
    "insert_cached_values",
    "lookup_expression",
    "number_format",
    "plan_formulas",
    "recommendation_groups",
    "sheet_members",
    "shown_plan",
    "write_workbook",
]
