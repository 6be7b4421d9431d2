"""The input sheets (Hardware, Models, Precisions, Workloads, Simulated) and Assumptions.

Each input sheet is an Excel table in the units of its headers; the Simulated sheet adds formulas
that compare the inputs each candidate was simulated with against the Plan's current values.
Assumptions are named cells the Plan's formulas use by name.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from openpyxl import Workbook
from openpyxl.comments import Comment
from openpyxl.utils import get_column_letter
from openpyxl.workbook.defined_name import DefinedName

from planner.outputs.workbook.cells import (
    HELPER_FONT,
    INPUT_FILL,
    INPUT_TAB,
    NUMBER_FORMATS,
    SIMULATED_NOTE,
    SIMULATED_TAB,
    WRAP,
    _cell,
    _fit_row,
    _formula_cell,
    _header,
    _hide,
    _new_sheet,
    _non_negative,
    _print_setup,
    _table,
    _text_cell,
    _widths,
    column_width,
    number_format,
)
from planner.outputs.workbook.plan import PlanLayout
from planner.plan.sweep import Results
from planner.plan.tables import (
    CANDIDATE,
    GLOBALS,
    SIMULATED,
    SIMULATED_FORMULA_COLUMNS,
    SIMULATION_INPUTS,
    Column,
    simulation_input_column,
)


def _write_input_sheet(
    wb: Workbook, name: str, results: Results, layout: PlanLayout
) -> dict[str, Any]:
    """An input sheet as an Excel table; returns the cached values of its formula cells (the
    Simulated sheet's comparison with the Plan)."""
    frame = results.inputs.sheets[name]
    columns: list[Column] = results.inputs.columns[name]
    formulas = simulated_formulas(results, layout) if name == SIMULATED else {}
    cache: dict[str, Any] = {}
    ws = _new_sheet(wb, name, SIMULATED_TAB if name == SIMULATED else INPUT_TAB)
    ws.freeze_panes = "B2"
    formats = [number_format(c.unit, frame[c.name]) for c in columns]
    widths = _widths(
        ws, [column_width(c.name, frame[c.name], f) for c, f in zip(columns, formats, strict=True)]
    )
    inputs = {simulation_input_column(n) for n in SIMULATION_INPUTS}
    recorded = [i for i, c in enumerate(columns, start=1) if c.name in inputs]
    _hide(ws, [get_column_letter(i) for i in recorded])  # an audit trail: grouped, not printed
    _fit_row(ws, 1, [c.name for c in columns], widths)
    header = _header(ws, [c.name for c in columns])
    if name == SIMULATED:  # row 1 must stay the header: the note is a comment on A1
        header[0].comment = Comment(SIMULATED_NOTE, "planner", width=300, height=80)
    ws.append(header)
    names = [c.name for c in columns]
    for r, row in enumerate(frame.itertuples(index=False), start=2):
        cells = [_cell(ws, v, f) for v, f in zip(row, formats, strict=True)]
        for column, (formula, value) in formulas.items():
            i = names.index(column)
            cells[i] = _formula_cell(ws, formula.format(r=r), formats[i], font=HELPER_FONT)
            cache[f"{get_column_letter(i + 1)}{r}"] = value(r - 2)
        ws.append(cells)
    last_row = max(len(frame), 1) + 1
    for i, c in enumerate(columns, start=1):
        if c.kind == "number":
            letter = get_column_letter(i)
            _non_negative(ws, f"{letter}2:{letter}{last_row}", c.name)
    _table(ws, name, [c.name for c in columns], len(frame))
    printed = min(recorded, default=len(columns) + 1) - 1
    area = f"A1:{get_column_letter(printed)}{last_row}"
    _print_setup(ws, area, title_rows="1:1", title_cols="A:A")
    return cache


def _same_value(recorded: str, current: str) -> str:
    """TRUE when two cells hold the same number (to 1e-9 relative) or both hold none."""
    return (
        f"IF(ISNUMBER({recorded}),IF(ISNUMBER({current}),"
        f"ABS({current}-{recorded})<=1E-9*ABS({recorded}),FALSE()),NOT(ISNUMBER({current})))"
    )


def simulated_formulas(
    results: Results, layout: PlanLayout
) -> dict[str, tuple[str, Callable[[int], Any]]]:
    """The Simulated sheet's formula columns (``{r}``: the sheet row) with each one's value at
    a data row (0 first): the candidate's Plan row, whether every recorded simulation input still
    equals the Plan's value (1 or 0), and the first one that does not."""
    frame = results.inputs.sheets[SIMULATED]
    names = [c.name for c in results.inputs.columns[SIMULATED]]
    if frame.empty or CANDIDATE not in layout.letters:
        return {}

    def at(column: str) -> str:
        return f"${get_column_letter(names.index(column) + 1)}{{r}}"

    plan_row = at("plan_row")
    checks = [
        (
            name,
            _same_value(
                at(simulation_input_column(name)),
                f"INDEX({layout.rows(name)},{plan_row})",
            ),
        )
        for name in SIMULATION_INPUTS
        if simulation_input_column(name) in names and name in layout.letters
    ]
    changed = '""'
    for name, check in reversed(checks):
        changed = f'IF({check},{changed},"{name}")'
    rows = {c: i + 2 for i, c in enumerate(results.table[CANDIDATE])} if len(results.table) else {}
    ids = frame["id"].tolist()
    formulas: dict[str, tuple[str, Callable[[int], Any]]] = {
        "plan_row": (
            f"=MATCH($A{{r}},{layout.rows(CANDIDATE)},0)",
            lambda i: rows.get(ids[i], math.nan),
        ),
        "sim_inputs_unchanged": (
            f"=IF(AND({','.join(c for _, c in checks)}),1,0)" if checks else "=1",
            lambda i: 1,
        ),
        "changed_input": ("=" + changed, lambda i: ""),
    }
    return {c: formulas[c] for c in SIMULATED_FORMULA_COLUMNS}


def _write_assumptions(wb: Workbook, results: Results) -> dict[str, Any]:
    """The Assumptions sheet, one named cell per assumption; returns its formula cells' values.

    An assumption the catalog leaves out (NaN) is written as ``=NA()``: a blank cell would read
    as 0 in the formulas, where the planner has no value. Typing a number over it fills it in.
    """
    ws = _new_sheet(wb, "Assumptions", INPUT_TAB)
    ws.freeze_panes = "B2"
    _widths(ws, [26, 14, 10, 60])
    headers = ["id", "value", "unit", "description"]
    ws.append(_header(ws, headers))
    cache: dict[str, Any] = {}
    for i, g in enumerate(GLOBALS, start=2):
        value = results.inputs.globals[g.cell]
        fmt = NUMBER_FORMATS.get(g.unit)
        missing = isinstance(value, float) and math.isnan(value)
        description = g.description + (" (not in the catalog: enter a value)" if missing else "")
        ws.append(
            [
                _text_cell(ws, g.cell),
                _formula_cell(ws, "=NA()", fmt, fill=INPUT_FILL)
                if missing
                else _cell(ws, value, fmt),
                _text_cell(ws, g.unit),
                _text_cell(ws, description, alignment=WRAP),
            ]
        )
        if missing:
            cache[f"B{i}"] = value
        wb.defined_names[g.cell] = DefinedName(g.cell, attr_text=f"Assumptions!$B${i}")
    last_row = len(GLOBALS) + 1
    _non_negative(ws, f"B2:B{last_row}", "assumption")
    _table(ws, "Assumptions", headers, len(GLOBALS))
    _print_setup(ws, f"A1:D{last_row}", title_rows="1:1")
    return cache
