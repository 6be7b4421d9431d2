"""plan.xlsx: editable input sheets, a Plan sheet of live formulas, a Summary, and Notes.

The renderer computes no metric itself. Input sheets hold the catalog numbers (in the units of
their headers); every Plan cell other than the ids is a formula: a lookup of an input by the row's
id, or a metric traced from its Python definition (:mod:`planner.expr`). An edit in an input cell
therefore recomputes the plan in Excel or LibreOffice exactly as ``planner run`` would have.

Sheets, in order: ``Summary`` (the recommendation of :mod:`planner.recommend` as formulas: for
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
as text, NaN as ``#N/A``), and the Summary's values from the same ranking the formulas express
(:func:`recommendation_groups`).
The workbook also asks Excel to recalculate everything on open (``fullCalcOnLoad``).

For speed the Plan's data rows are written straight as XML (openpyxl writes the sheet frame and a
template row whose cell styles the generated rows reuse), each computed column as one shared
formula, the way Excel stores a filled-down column: 20,000 rows take seconds, not minutes.

Catalog text is untrusted: every text cell is written as a string, never a formula, so a name
such as ``=HYPERLINK(...)`` stays inert text.
"""

from __future__ import annotations

import copy
import io
import math
import os
import re
import warnings
import weakref
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any
from xml.etree import ElementTree
from xml.sax.saxutils import escape

import numpy as np
import pandas as pd
from openpyxl import Workbook
from openpyxl.cell import WriteOnlyCell
from openpyxl.chart import BarChart, Reference
from openpyxl.comments import Comment
from openpyxl.formatting.rule import FormulaRule
from openpyxl.styles import Alignment, Font, PatternFill
from openpyxl.utils import get_column_letter, quote_sheetname
from openpyxl.workbook.defined_name import DefinedName
from openpyxl.workbook.properties import CalcProperties
from openpyxl.worksheet.datavalidation import DataValidation
from openpyxl.worksheet.filters import AutoFilter
from openpyxl.worksheet.formula import ArrayFormula
from openpyxl.worksheet.pagebreak import Break
from openpyxl.worksheet.table import Table, TableColumn, TableStyleInfo

from . import recommend
from .capacity import NOT_SIMULATED
from .cost import RULED_OUT_REASONS
from .expr import Raw, to_excel
from .metric import Metric
from .sweep import Results
from .tables import (
    CANDIDATE,
    GLOBALS,
    KEYS,
    SIMULATED,
    SIMULATED_FORMULA_COLUMNS,
    SIMULATION_INPUTS,
    Column,
    Lookup,
    simulation_input_column,
)

#: Calibri, Excel's default; LibreOffice draws it with the metric-compatible Carlito.
FONT_NAME = "Calibri"
HEADER_FONT = Font(name=FONT_NAME, bold=True)
HEADER_FILL = PatternFill("solid", fgColor="DDE4EE")
TITLE_FONT = Font(name=FONT_NAME, bold=True, size=14)
SECTION_FONT = Font(name=FONT_NAME, bold=True, size=12)
HELPER_FONT = Font(name=FONT_NAME, color="808080", italic=True)
INPUT_FILL = PatternFill("solid", fgColor="FFF2CC")
MISFIT_FILL = PatternFill("solid", fgColor="F8D7DA")
WRAP = Alignment(wrap_text=True, vertical="top")
INDENT = Alignment(indent=1)
CENTRE = Alignment(horizontal="center")
RIGHT = Alignment(horizontal="right")  # numbers and the "n/a" or "never" in their place
INPUT_TAB = "4472C4"
OUTPUT_TAB = "70AD47"
#: The Simulated sheet holds values computed by the last run, not catalog entries: orange.
SIMULATED_TAB = "ED7D31"
SIMULATED_NOTE = "Values from the serving simulation of the last planner run, not formulas"

#: What prints of the Plan: one line, below the rows the Summary reads. A printed workbook is
#: the Summary, the inputs and the Notes, not hundreds of pages of formulas.
PLAN_PRINT_NOTE = (
    "The Plan ({rows:,} rows) is not printed: select the cells you want and set them as the "
    "print area (Page Layout > Print Area) to print them."
)

#: Excel's last row: a plan longer than this cannot be one sheet.
MAX_ROWS = 1_048_576

#: Empty rows below the Plan and the input sheets that the Summary's ranges and the checks for
#: unplanned ids already cover: room for options and entries finance adds by hand.
SPARE_ROWS = 1000

#: Display formats by unit: what a reader reads, never scientific notation. Rates in bytes or
#: operations per second show in GB/s and TFLOPS through the format's thousands divisor (each
#: trailing comma divides the shown number by 1,000; the cell keeps its base-unit value).
#: Other numbers show as General, or with thousands separators when they are whole and large
#: (so that a bytes-per-value of 0.5 typed later does not show as 1).
NUMBER_FORMATS = {
    "GiB": "#,##0.00",
    "GB": "#,##0.00",
    "MiB": "#,##0.00",
    "s": "0.000###",
    "ms": "#,##0.000",
    "FLOP": '#,##0.0,,," GFLOP"',
    "FLOP/s": '#,##0.0,,,," TFLOPS"',
    "B/s": '#,##0.0,,," GB/s"',
    "USD": "#,##0.00",
    "USD/h": "#,##0.00",
    "USD/month": "#,##0.00",
    "kUSD": "#,##0.0",
    "kWh/month": "#,##0.0",
    "tokens/s": "#,##0.0",
    "tokens/month": "#,##0",
    "1/s": "#,##0.000",
    "fraction": "0.0%",
}

#: Base units whose columns the Plan groups and hides where a metric restates them in a unit
#: people read (bytes in GiB, seconds in ms): ``results.csv`` keeps both.
HIDDEN_BASE_UNITS = ("B", "s")
INTEGER_FORMAT = "#,##0"
LARGE = 10_000


# Cells ------------------------------------------------------------------------------------------

#: Per workbook, the style index array of each (number format, style objects) already applied:
#: openpyxl hashes every style object it is given, which costs more than writing the cell.
_STYLES: weakref.WeakKeyDictionary[Any, dict[tuple[Any, ...], tuple[Any, ...]]] = (
    weakref.WeakKeyDictionary()
)


def _style(cell: Any, number_format: str | None, style: Mapping[str, Any]) -> None:
    """Give ``cell`` a number format and style attributes (font, fill, alignment...), reusing
    the index array of a cell of this workbook that was given the same objects before."""
    if not number_format and not style:
        return
    cache = _STYLES.setdefault(cell.parent.parent, {})
    key = (number_format, *((k, id(v)) for k, v in style.items()))
    known = cache.get(key)
    if known is not None:
        cell._style = copy.copy(known[0])
        return
    if number_format:
        cell.number_format = number_format
    for name, value in style.items():
        setattr(cell, name, value)
    cache[key] = (copy.copy(cell._style), *style.values())  # the objects keep their ids


def _text_cell(ws: Any, value: str, **style: Any) -> WriteOnlyCell:
    """A cell that holds ``value`` as text, whatever it looks like (formula injection guard)."""
    cell = WriteOnlyCell(ws, value=value)
    cell.data_type = "s"  # after the value: assigning a value re-infers the type
    _style(cell, None, style)
    return cell


def _cell(ws: Any, value: Any, number_format: str | None = None, **style: Any) -> Any:
    """A constant cell: text as text, NaN/None as an empty cell, numbers with a format."""
    if isinstance(value, str):
        return _text_cell(ws, value, **style)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if hasattr(value, "item"):
        value = value.item()
    cell = WriteOnlyCell(ws, value=value)
    _style(cell, number_format, style)
    return cell


def _formula_cell(
    ws: Any,
    formula: str,
    number_format: str | None = None,
    *,
    array_at: str | None = None,
    **style: Any,
) -> WriteOnlyCell:
    """A formula cell; ``array_at`` (its own address) makes it a one-cell array formula."""
    value: Any = ArrayFormula(array_at, formula) if array_at else formula
    cell = WriteOnlyCell(ws, value=value)
    _style(cell, number_format, style)
    return cell


def _header(ws: Any, names: Iterable[str]) -> list[WriteOnlyCell]:
    return [_text_cell(ws, n, font=HEADER_FONT, fill=HEADER_FILL, alignment=WRAP) for n in names]


def column_width(header: str, values: pd.Series, fmt: str | None) -> float:
    """A width (in characters) that shows the header (wrapped at 22) and the values as
    formatted, at most 40."""
    sample = values.head(1000)
    if not len(sample) or pd.api.types.is_bool_dtype(sample):
        longest = 5
    elif not pd.api.types.is_numeric_dtype(sample):
        longest = max(len(str(v)) for v in sample)
    else:
        numbers = pd.to_numeric(sample, errors="coerce").abs()
        top = float(numbers.max()) if numbers.notna().any() else 0.0
        if fmt == INTEGER_FORMAT:
            longest = len(f"{top:,.0f}")
        elif fmt and "E" in fmt:
            longest = 9
        elif fmt and "." in fmt:
            decimals = len(fmt.split(".")[1])
            longest = len(f"{top:,.{decimals}f}") + 1
        else:
            longest = min(len(repr(top)), 11)
    return float(max(10, min(22, len(header) + 2), min(40, longest + 3)))


def number_format(unit: str, values: Iterable[Any] = ()) -> str | None:
    """The display format of a column: by its unit, else ``#,##0`` when its values reach 10,000
    and are whole numbers (or bytes), else None (General)."""
    if unit in NUMBER_FORMATS:
        return NUMBER_FORMATS[unit]
    numbers = [
        float(v)
        for v in values
        if isinstance(v, (int, float, np.number)) and not isinstance(v, bool)
    ]
    finite = [v for v in numbers if math.isfinite(v)]
    if not finite:
        return None
    large = max(abs(v) for v in finite) >= LARGE
    if (unit == "B" and large) or (large and all(v.is_integer() for v in finite)):
        return INTEGER_FORMAT  # bytes by the ten thousand need no fractions
    return None


def hidden_columns(results: Results) -> list[str]:
    """Plan columns in a base unit (:data:`HIDDEN_BASE_UNITS`) that another column restates in
    a unit people read: grouped and hidden on the Plan, first-class in ``results.csv``."""
    units = column_units(results)
    restated = {m.restates for m in results.metrics if m.restates}
    return [n for n in results.table.columns if n in restated and units[n] in HIDDEN_BASE_UNITS]


# Sheet set-up -----------------------------------------------------------------------------------


def _widths(ws: Any, widths: Iterable[float]) -> list[float]:
    """Set the column widths (in characters); returns them."""
    widths = list(widths)
    for i, w in enumerate(widths, start=1):
        ws.column_dimensions[get_column_letter(i)].width = w
    return widths


def _hide(ws: Any, letters: Iterable[str]) -> None:
    """Group the columns ``letters`` one outline level down, collapsed (set before the first
    row: a write-only sheet writes its column settings with it)."""
    for letter in letters:
        dimension = ws.column_dimensions[letter]
        dimension.outlineLevel, dimension.hidden = 1, True


def _fit_row(ws: Any, row: int, texts: Iterable[Any], widths: list[float]) -> None:
    """Make row ``row`` tall enough for its wrapped texts (set before the row is written:
    LibreOffice does not grow rows of an xlsx by itself)."""
    lines = [
        math.ceil(len(t) / max(w * 1.1 - 1, 1))
        for t, w in zip(texts, widths, strict=False)
        if isinstance(t, str) and t
    ]
    if max(lines, default=1) > 1:
        ws.row_dimensions[row].height = 15 * min(max(lines), 12)


def _new_sheet(wb: Workbook, name: str, tab: str) -> Any:
    """A sheet with a tab colour that prints scaled to fit (sheet properties are written with
    the first row, so they are set here, before any)."""
    ws = wb.create_sheet(name)
    ws.sheet_properties.tabColor = tab
    ws.sheet_properties.pageSetUpPr.fitToPage = True
    return ws


def _print_setup(
    ws: Any,
    area: str,
    *,
    pages_wide: int = 1,
    title_rows: str | None = None,
    title_cols: str | None = None,
) -> None:
    """Landscape, ``pages_wide`` pages across and as many down as needed, a print area."""
    ws.page_setup.orientation = "landscape"
    ws.page_setup.fitToWidth = pages_wide
    ws.page_setup.fitToHeight = 0
    ws.page_margins.left = ws.page_margins.right = 0.4
    ws.page_margins.top = ws.page_margins.bottom = 0.5
    ws.print_area = area
    if title_rows:
        ws.print_title_rows = title_rows
    if title_cols:
        ws.print_title_cols = title_cols


def _table(ws: Any, name: str, headers: list[str], n_rows: int) -> None:
    """Make ``A1`` down to the last row an Excel table with filter buttons and stripes."""
    ref = f"A1:{get_column_letter(len(headers))}{max(n_rows, 1) + 1}"
    table = Table(displayName=re.sub(r"\W", "_", name), ref=ref)
    # write-only sheets cannot read the header back: name the table's columns here
    table.tableColumns = [TableColumn(id=i, name=h) for i, h in enumerate(headers, start=1)]
    table.autoFilter = AutoFilter(ref=ref)
    table.tableStyleInfo = TableStyleInfo(name="TableStyleLight9", showRowStripes=True)
    with warnings.catch_warnings():
        # openpyxl warns that write-only tables need their columns named: they are, above
        warnings.filterwarnings("ignore", message="In write-only mode")
        ws.add_table(table)


def _non_negative(ws: Any, cells: str, what: str) -> None:
    """Accept only numbers ≥ 0 (or blank) in ``cells``: a typo cannot become text silently."""
    rule = DataValidation(
        type="decimal",
        operator="greaterThanOrEqual",
        formula1="0",
        allow_blank=True,
        showErrorMessage=True,
        errorTitle="A number is expected",
        error=f"{what}: enter a number, zero or more, in the unit of the column header.",
    )
    rule.add(cells)
    ws.data_validations.append(rule)


# Input sheets -----------------------------------------------------------------------------------


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
    pages = 2 if name == SIMULATED else 1  # its verdicts in words need the width
    area = f"A1:{get_column_letter(printed)}{last_row}"
    _print_setup(ws, area, pages_wide=pages, title_rows="1:1", title_cols="A:A")
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

    candidate = layout.letters[CANDIDATE]
    plan_row = at("plan_row")
    checks = [
        (
            name,
            _same_value(
                at(simulation_input_column(name)),
                f"INDEX(Plan!${layout.letters[name]}:${layout.letters[name]},{plan_row})",
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
            f"=MATCH($A{{r}},Plan!${candidate}:${candidate},0)",
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


# Plan -------------------------------------------------------------------------------------------


def _sheet_range(sheet: str, letter: str) -> str:
    return f"{quote_sheetname(sheet)}!${letter}:${letter}"


def lookup_expression(lookup: Lookup, results: Results) -> Raw:
    """The INDEX/MATCH formula that reads ``lookup`` for one Plan row, scaled to base units.

    A blank input cell gives ``#N/A`` (NaN in Python). Text is read with ``&""`` so that a
    blank stays an empty text, as in Python, not the 0 a bare reference to a blank cell gives.
    With ``column_from`` the sheet column is found by its header; with ``fallback_from`` too, the
    fallback's column is read where the first has no number. A figure of the serving simulation
    reads "not simulated" for a candidate the Simulated sheet does not list: text, which a SUM
    over the column passes over, where ``#N/A`` would break it.
    """
    if lookup.key == CANDIDATE:  # a figure of the simulation: text where there is none
        value = _lookup_value(lookup, results).template
        return Raw(f'IF(ISNA({_match_row(lookup)}),"{NOT_SIMULATED}",{value})', (lookup.key,))
    return _lookup_value(lookup, results)


def _match_row(lookup: Lookup) -> str:
    """The row of the input sheet whose id is the Plan row's ``lookup.key``."""
    return f"MATCH({{{lookup.key}}},{_sheet_range(lookup.sheet, 'A')},0)"


def _lookup_value(lookup: Lookup, results: Results) -> Raw:
    """:func:`lookup_expression` without the candidate lookup's "not simulated"."""
    columns = [c.name for c in results.inputs.columns[lookup.sheet]]
    sheet = quote_sheetname(lookup.sheet)
    match_row = _match_row(lookup)
    scale = "" if lookup.scale == 1 else f"*{_number(lookup.scale)}"
    if lookup.column_from is None:
        letter = get_column_letter(columns.index(lookup.column) + 1)
        value = f"INDEX({_sheet_range(lookup.sheet, letter)},{match_row})"
        if lookup.kind == "text":
            return Raw(f'{value}&""', (lookup.key,))
        if lookup.fallback_column is not None:
            letter = get_column_letter(columns.index(lookup.fallback_column) + 1)
            fallback = f"INDEX({_sheet_range(lookup.sheet, letter)},{match_row})"
            otherwise = f'IF({fallback}="",NA(),{fallback}{scale})'
            return Raw(f'IF({value}="",{otherwise},{value}{scale})', (lookup.key,))
        if _has_blanks(results, lookup):
            return Raw(f'IF({value}="",NA(),{value}{scale})', (lookup.key,))
        return Raw(f"{value}{scale}", (lookup.key,))

    def by_header(name: str) -> str:
        last = get_column_letter(len(columns))
        header = f'MATCH({{{name}}}&"{lookup.column}",{sheet}!$1:$1,0)'
        return f"INDEX({sheet}!$A:${last},{match_row},{header})"

    names: tuple[str, ...] = (lookup.key, lookup.column_from)
    first = by_header(lookup.column_from)
    otherwise = "NA()"
    if lookup.fallback_from:
        names += (lookup.fallback_from,)
        second = by_header(lookup.fallback_from)
        otherwise = f"IF(ISNUMBER({second}),{second}{scale},NA())"
    return Raw(f"IF(ISNUMBER({first}),{first}{scale},{otherwise})", names)


def _has_blanks(results: Results, lookup: Lookup) -> bool:
    frame = results.inputs.sheets[lookup.sheet]
    return bool(frame[lookup.column].isna().any()) if lookup.column in frame else True


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value).upper()


def _global_ref(name: str) -> str | None:
    for g in GLOBALS:
        if g.name == name:
            return g.cell if g.scale == 1 else f"({g.cell}*{_number(g.scale)})"
    return None


def plan_formulas(results: Results) -> dict[str, str]:
    """For each computed Plan column, its formula with ``{r}`` standing for the row number."""
    letters = letters_of(list(results.table.columns))
    keys = set(results.key_columns)

    def ref(name: str) -> str:
        if name in letters:
            prefix = "$" if name in keys else ""
            return f"{prefix}{letters[name]}{{r}}"
        g = _global_ref(name)
        if g is None:
            raise KeyError(
                f"formula refers to {name!r}, which is neither a column nor an assumption"
            )
        return g

    formulas: dict[str, str] = {}
    for lookup in results.lookups:
        formulas[lookup.name] = to_excel(lookup_expression(lookup, results), ref)
    for m in results.metrics:
        formulas[m.name] = to_excel(m.expression(), ref)
    return formulas


def formula_in_words(m: Metric) -> str:
    """A metric's formula over the names of its inputs, for the Notes sheet and the report."""
    return m.expression().render(lambda n: n)


def letters_of(names: list[str]) -> dict[str, str]:
    """Column letter of each column name."""
    return {n: get_column_letter(i) for i, n in enumerate(names, start=1)}


def column_units(results: Results) -> dict[str, str]:
    """The unit of every computed Plan column."""
    return {lk.name: lk.unit for lk in results.lookups} | {m.name: m.unit for m in results.metrics}


@dataclass(frozen=True)
class PlanLayout:
    """Where things are on the Plan sheet: column letters and the data rows' extent."""

    names: list[str]
    letters: dict[str, str]
    n_rows: int
    keys: list[str]

    @classmethod
    def of(cls, results: Results) -> PlanLayout:
        names = list(results.table.columns)
        if len(results.table) + 1 > MAX_ROWS:
            raise ValueError(
                f"the plan has {len(results.table):,} rows; a sheet holds {MAX_ROWS - 1:,}: "
                "split the run with scenarios.yaml"
            )
        keys = [k for k in results.key_columns if k in names]
        return cls(names, letters_of(names), len(results.table), keys)

    @property
    def last_row(self) -> int:
        """The last data row (row 2 even for an empty plan, so ranges stay valid)."""
        return max(self.n_rows, 1) + 1

    @property
    def last_letter(self) -> str:
        return get_column_letter(len(self.names))

    @property
    def first_computed(self) -> str:
        """Letter of the first column right of the keys."""
        return get_column_letter(len(self.keys) + 1)

    @property
    def range_end(self) -> int:
        """The last row the Summary's ranges cover: the data and :data:`SPARE_ROWS` more."""
        return min(self.last_row + SPARE_ROWS, MAX_ROWS)

    def column(self, name: str) -> str:
        """The cells of column ``name`` that the Summary reads, data and spare rows, absolute
        (``Plan!$D$2:$D$1009``)."""
        letter = self.letters[name]
        return f"Plan!${letter}$2:${letter}${self.range_end}"


@dataclass
class PlanRows:
    """What the Plan's data rows hold, for writing them as XML after openpyxl saved the frame.

    ``columns`` lists, in column order, (letter, formula with ``{r}`` or None for a constant,
    the column's values); ``styles`` the style attribute of each column, read off the template
    row that openpyxl wrote.
    """

    columns: list[tuple[str, str | None, pd.Series]]
    n_rows: int
    styles: dict[str, str] = field(default_factory=dict)
    note: tuple[int, str] | None = None  # (row, text) of the printing note below the data


def shown_plan(results: Results) -> pd.DataFrame:
    """The values the Plan's cells compute: the planner's table, except that a figure of the
    serving simulation reads "not simulated" for a candidate that was not (see
    :func:`lookup_expression`)."""
    table = results.table
    simulated_ids = set(results.inputs.sheets[SIMULATED]["id"])
    if CANDIDATE not in table:
        return table
    missing = ~table[CANDIDATE].isin(simulated_ids).to_numpy()
    if not missing.any():
        return table
    shown = table.copy()
    for lookup in results.lookups:
        if lookup.key == CANDIDATE and lookup.name in shown:
            column = shown[lookup.name].astype(object)
            column[missing] = NOT_SIMULATED
            shown[lookup.name] = column
    return shown


def _write_plan(wb: Workbook, results: Results, layout: PlanLayout) -> PlanRows:
    """The Plan sheet: header, the first data row (a template), formatting and filters."""
    table = results.table
    formulas = plan_formulas(results)
    units = column_units(results)
    ws = _new_sheet(wb, "Plan", OUTPUT_TAB)
    ws.freeze_panes = f"{layout.first_computed}2"
    formats = {n: number_format(units.get(n, ""), table[n].head(1000)) for n in layout.names}
    shown = shown_plan(results)
    widths = _widths(ws, [column_width(n, shown[n], formats[n]) for n in layout.names])
    _hide(ws, [layout.letters[n] for n in hidden_columns(results)])
    _fit_row(ws, 1, layout.names, widths)
    ws.append(_header(ws, layout.names))
    rows = PlanRows(
        [(layout.letters[n], formulas.get(n), shown[n]) for n in layout.names], layout.n_rows
    )
    if layout.n_rows:
        template = []
        for n in layout.names:
            if n in formulas:
                template.append(_formula_cell(ws, formulas[n].replace("{r}", "2"), formats[n]))
            else:
                template.append(_cell(ws, table[n].iloc[0], formats[n]))
        ws.append(template)
    area = f"A1:{layout.last_letter}{layout.last_row}"
    ruled_out = layout.letters.get(RULED_OUT_BY)
    if ruled_out and layout.n_rows:  # a replica cannot hold one maximum-length sequence
        ws.conditional_formatting.add(
            f"A2:{layout.last_letter}{layout.range_end}",
            FormulaRule(formula=[f'${ruled_out}2="memory"'], fill=MISFIT_FILL),
        )
    ws.auto_filter.ref = area
    rows.note = (layout.range_end + 2, PLAN_PRINT_NOTE.format(rows=layout.n_rows))
    ws.print_area = f"A{rows.note[0]}:H{rows.note[0]}"
    return rows


# Summary: the recommendation ------------------------------------------------------------------

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
    "capital_usd",
    "opex_usd_per_month",
    "tco_usd",
    "cloud_usd_per_month",
    "break_even_month",
    "simulation",
)

BREAK_EVEN = "break_even_month"
#: What the Summary's break-even shows when renting costs no more per month than operating
#: owned devices: buying never pays back (the report says the same).
NEVER = "never"

#: Header texts of the shown Plan columns (each header cell's comment names its Plan column).
TITLES = {
    "tensor_parallel": "tensor parallel",
    "devices_needed": "devices",
    "capital_usd": "capital (USD)",
    "opex_usd_per_month": "operating cost per month (USD)",
    "tco_usd": "total cost of ownership (USD)",
    "cloud_usd_per_month": "cloud rental per month (USD)",
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
#: 1 × memory; 5 × latency"); see :func:`planner.cost.ruled_out_by`.
REASONS = RULED_OUT_REASONS
RULED_OUT_BY = "ruled_out_by"

#: Why the runner-up lost when it ties on every ranking key before the one named: the words of
#: :mod:`planner.recommend`, which the formulas write as the cached values say them.
TIE_WORDS = recommend.TIE_WORDS
TIED = recommend.TIED

#: Rank key of a missing value: after every number, as :func:`planner.recommend.rank` ranks it.
LAST = recommend.MISSING_LAST
LAST_TEXT = f"{LAST:.0E}"  # 1E+300

#: What a missing Plan value (``#N/A``) shows as on the Summary.
NOT_AVAILABLE = "n/a"

#: Display formats of the Summary's columns (money in whole units).
SUMMARY_FORMATS = {
    "tensor_parallel": "0",
    "devices_needed": INTEGER_FORMAT,
    "capital_usd": INTEGER_FORMAT,
    "opex_usd_per_month": "#,##0.00",
    "tco_usd": INTEGER_FORMAT,
    "cloud_usd_per_month": "#,##0.00",
    "break_even_month": "0",
}

#: Above this many groups the Summary draws no charts (the bars would be unreadable).
MAX_CHART_GROUPS = 40

#: Parts of one device's memory in the Summary's chart: for each, the Plan columns (GiB) that
#: may give it, first present wins; the GiB assumptions (runtime overhead, reserve) come after
#: the weights. Without weights there is no memory chart.
MEMORY_PARTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("weights", ("weight_gib_per_device", "weight_gib")),
    ("KV cache budget", ("kv_budget_gib",)),
)

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
    "latency target is met, the cost is known). Best: lowest tco_usd, then fewest "
    "devices_needed, then lowest itl_s, then the Plan's order.",
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
    """One group of :data:`planner.recommend.GROUP` (workload × model): its ids, its number of
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
    :func:`planner.recommend.rank` ranks them. This is what the Summary's formulas compute; it
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
    letter = layout.letters[column]
    return f"INDEX(Plan!${letter}:${letter},{plan_row})"


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
    verdicts: np.ndarray  # :func:`planner.recommend.verdicts` of every Plan row
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
            align = {"alignment": CENTRE if column == BREAK_EVEN else alignment}
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
            f'IF({mine}>{best},"cost: "&TEXT({mine}-{best},"#,##0")&" USD more over the period",'
            f"{chain})"
        )
        count = columns.cell(ELIGIBLE_COUNT, first)
        return f'=IF({plan_row}=0,IF({count}=1,"{ONLY_ONE}",""),{chain})'

    def _why_not_value(self, group: Group, position: int | None) -> str:
        """What :meth:`_why_not` computes: the runner-up's verdict (:mod:`planner.recommend`)."""
        if position is None:
            return ONLY_ONE if group.eligible == 1 else ""
        return str(self.verdicts[position])


def _write_summary(wb: Workbook, results: Results, layout: PlanLayout) -> dict[str, Any]:
    """The Summary sheet; returns the value of each of its formula cells (its cache)."""
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
    groups = recommendation_groups(results.table)
    widths = _widths(ws, _summary_widths(results, columns))
    sheet.append([_text_cell(ws, TITLE, font=TITLE_FONT)])
    for line in INTRO:
        sheet.append([_text_cell(ws, line)])
    _unplanned_ids_row(sheet, results, layout, columns)
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
    ranks = recommend.rank(results.table)
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
    end = _summary_charts(sheet, results, layout, columns, groups, first)
    _print_setup(ws, f"A1:{last_visible}{end}")
    return sheet.cache


UNPLANNED = "Input ids in no Plan row: "


def _unplanned_ids_row(
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
        column_a = f"{quote_sheetname(name)}!$A:$A"
        ids = f"{quote_sheetname(name)}!$A$2:$A${len(results.inputs.sheets[name]) + 1 + SPARE_ROWS}"
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
            "Total cost of ownership over the amortisation period (USD)",
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
    tco_key = key_header("tco_usd") if "tco_usd" in recommend.ORDER else None
    for i, group in enumerate(groups):
        winner, runner = first + 2 * i, first + 2 * i + 1
        label = " · ".join(str(v) for v in group.ids)
        cells: list[Any] = [_text_cell(ws, label), None, None]
        values: dict[int, Any] = {}
        for rank, row in enumerate((winner, runner)):
            pick = columns.cell(PLAN_ROW, row)
            if tco_key:
                formula = f'=IF({pick}=0,"",{columns.cell(tco_key, row)})'
            else:
                formula = f'=IF({pick}=0,"",{_plan_value(layout, "tco_usd", pick)})'
            cells.append(_formula_cell(ws, formula, INTEGER_FORMAT))
            position = group.best[rank] if rank < len(group.best) else None
            values[len(cells)] = "" if position is None else results.table["tco_usd"].iloc[position]
        pick = columns.cell(PLAN_ROW, winner)
        position = group.best[0] if group.best else None
        for _, source in parts:
            if source in layout.letters:
                formula = f'=IF({pick}=0,"",{_plan_value(layout, source, pick)})'
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


# Notes ------------------------------------------------------------------------------------------


SHEETS_TEXT = [
    (
        "Summary",
        "The recommendation, as formulas over the Plan: for each workload and model, the "
        "eligible option with the lowest total cost of ownership (ties: fewer devices, then lower "
        "inter-token latency, then Plan order) and the runner-up, their fleet and costs, or why "
        "no option is eligible; charts of their cost and of the recommended device's memory.",
    ),
    (
        "Plan",
        "One row per candidate (hardware × model × precision × workload × tensor parallel), the "
        "same rows and columns as results.csv. Every cell right of the ids is a formula: a lookup "
        "of an input by id, or a metric over the row's other cells. Rows whose replica cannot "
        "hold one maximum-length sequence (ruled_out_by: memory) are shaded red. Columns in bytes "
        "or seconds that a GiB, GB, MiB or ms column restates are grouped and hidden (the + above "
        "the column letters shows them); bandwidth shows in GB/s and compute in TFLOPS while the "
        "cells hold B/s and FLOP/s.",
    ),
    (
        "Hardware, Models, Precisions, Workloads",
        "The catalogs, one entry per row, in the units of "
        "the column headers (GiB, GB/s, TFLOPS, USD). Edit values here.",
    ),
    (
        SIMULATED,
        "Values from the serving simulation of the last planner run (replicas needed, p95 "
        "latencies, rejected share), one row per simulated candidate, looked up by the Plan's "
        "candidate id. They are numbers, not formulas: editing another sheet does not rerun the "
        "simulation. Beside them (grouped, hidden) the Plan values each was simulated with; "
        "sim_inputs_unchanged turns 0 and changed_input names the first that differs once an "
        "edit moves one, and the Plan's and the Summary's 'simulation' then read 'simulated with "
        "other inputs: rerun planner'. Run the planner again for new figures. Orange tab.",
    ),
    (
        "Assumptions",
        "Planning assumptions that apply to every candidate; each value is a named "
        "cell (e.g. reserve_gib) that the Plan's formulas use by name.",
    ),
    ("Notes", "This sheet: how the workbook works, what every column means, and the cautions."),
]

EDITING_TEXT = [
    "You may edit: any number or text on the input sheets (a price on Hardware, a memory size, a "
    "workload's tokens) and the Assumptions values. The Plan and the Summary recompute, and the "
    "Summary's recommendation may change: it is ranked by formulas, not pasted.",
    "Do not rename ids: the Plan finds each input by its id.",
    "To add an option: type the new entry (a device, say) into the first empty row of its input "
    "sheet; copy an existing Plan row into the first empty row below the Plan and change its id "
    "(the hardware id for a device). Copying moves every formula to the new row, which computes "
    "in full, and the Summary ranks it (its ranges cover 1,000 empty rows below the Plan and "
    "each input sheet). Until a Plan row names a new id, the Summary's line 'Input ids in no "
    "Plan row' names it. An added option is 'not simulated': run the planner on the changed "
    "catalog to simulate it.",
    "Do not type over Plan or Summary cells: they are formulas, and a typed number stops updating. "
    "Sorting or filtering the Plan is fine; only ties between options then follow the new order.",
    "Excel recalculates the whole workbook when it opens it. LibreOffice shows the values stored "
    "by the planner (the same numbers) and recomputes whatever an edit changes; Data > Calculate > "
    "Recalculate Hard (Ctrl+Shift+F9) recomputes everything.",
    "A cell showing #N/A (n/a on the Summary) has no input to compute from, e.g. a device without "
    "a price or a rate for the precision's compute format (a blank cell on the Hardware sheet). "
    "A missing break_even_month on the Summary reads 'never' where renting costs no more per "
    "month than operating owned devices.",
    "Printing: the workbook prints the Summary with its charts, the input sheets and these Notes. "
    "The Plan prints a one-line note: select the cells you want and set a print area to print "
    "part of it.",
]

SUMMARY_TEXT = [
    "Groups: one per workload and model, in the Plan's order. Options: the group's Plan rows whose "
    "'eligible' is TRUE (a replica holds a maximum-length sequence, every latency target is met, "
    "the cost is known; 'status' says why a row is not).",
    "Ranking, as planner recommends: lowest tco_usd; on a tie fewer devices_needed; then lower "
    "itl_s (a missing value last); then the earlier Plan row. The runner-up is the best of the "
    "rest. 'why' says how the runner-up lost, or how many options memory, latency, the "
    "simulation or a missing cost ruled out (COUNTIFS over the Plan's ruled_out_by). "
    "'simulation' says whether the option's simulated figures hold for the inputs as they "
    "stand.",
    "The grey helper columns do the ranking: each is an array formula MIN(IF(...)) over the Plan "
    "(the option's tco_usd, devices_needed and itl_s, then its Plan row, 0 for none). Every other "
    "cell reads the Plan row they find with INDEX. n/a: the Plan has no value (#N/A), e.g. no "
    "rental price or no break-even.",
    "For speed the helpers scan only the Plan rows that held the group when the planner wrote the "
    "workbook, while 'group in its Plan rows' is TRUE; after the Plan has been sorted it turns "
    "FALSE and they scan the whole Plan (right, only slower); so does a group with a row added "
    "below the Plan. 'ruled out: ...' counts the group's options by their ruled_out_by.",
]

NOTES = [
    "Memory: decimal GB = 1000^3 bytes, binary GiB = 1024^3 bytes. Base-unit columns are in bytes; "
    "the _gib, _gb and _mib columns restate them.",
    "KV cache uses KV heads, not query heads, and reserves the promised maximum tokens "
    "(prompt + maximum output) for every concurrent sequence; no prefix-cache hits are assumed.",
    "weight_read_s and compute_bound_s are idealised lower bounds, not measured latency.",
    "A model that loads proves only that its weights fit; 'fits' asks whether the workload's "
    "concurrency at maximum length fits as well.",
]


def _notes_row(ws: Any, values: Iterable[str], **style: Any) -> list[WriteOnlyCell]:
    return [_text_cell(ws, v, alignment=WRAP, **style) for v in values]


def _lookup_in_words(lk: Lookup) -> str:
    column = f"<{lk.column_from}>{lk.column}" if lk.column_from else lk.column
    scale = f" × {_number(lk.scale)}" if lk.scale != 1 else ""
    blank = "; #N/A where that cell is blank" if lk.column_from else ""
    return f"{lk.sheet}!{column} of the row's {lk.key} id{scale}{blank}"


def _plan_dictionary(results: Results) -> list[tuple[str, str, str, str, str]]:
    """(column, unit, meaning, formula in words, source) for every Plan column, in Plan order."""
    rows = {
        k: (k, "", f"{k} id (key)", f"the candidate's id on the {sheet} sheet", "")
        for k, sheet in KEYS.items()
    }
    for lk in results.lookups:
        rows[lk.name] = (lk.name, lk.unit, lk.description, _lookup_in_words(lk), "catalog")
    for m in results.metrics:
        rows[m.name] = (m.name, m.unit, m.description, formula_in_words(m), m.source)
    return [rows[n] for n in results.table.columns if n in rows]


def _write_notes(wb: Workbook, results: Results) -> None:
    ws = _new_sheet(wb, "Notes", "A5A5A5")
    widths = _widths(ws, [30, 11, 55, 60, 28])
    rows: list[list[Any]] = [
        [_text_cell(ws, "planner: how to read this workbook", font=TITLE_FONT)],
        [],
    ]
    rows.append(_header(ws, ["sheet", "", "what it holds"]))
    rows += [_notes_row(ws, [name, "", text]) for name, text in SHEETS_TEXT]
    sections = (
        ("Editing and recalculation", EDITING_TEXT),
        ("How the Summary recommends", SUMMARY_TEXT),
        ("Cautions", NOTES),
    )
    for title, lines in sections:
        rows += [[], [_text_cell(ws, title, font=SECTION_FONT)]]
        rows += [_notes_row(ws, ["", "", line]) for line in lines]
    rows += [[], [_text_cell(ws, "Plan columns", font=SECTION_FONT)]]
    rows.append(_header(ws, ["column", "unit", "meaning", "formula", "source"]))
    rows += [_notes_row(ws, row) for row in _plan_dictionary(results)]
    rows += [[], [_text_cell(ws, "Input sheet columns", font=SECTION_FONT)]]
    rows.append(_header(ws, ["sheet!column", "unit", "meaning"]))
    for sheet, cols in results.inputs.columns.items():
        rows += [_notes_row(ws, [f"{sheet}!{c.name}", c.unit, c.description]) for c in cols]
    rows += [_notes_row(ws, [f"Assumptions!{g.cell}", g.unit, g.description]) for g in GLOBALS]
    for i, row in enumerate(rows, start=1):
        _fit_row(ws, i, [c.value for c in row], widths)
        ws.append(row)
    _print_setup(ws, f"A1:E{len(rows)}")


# Writing the file ------------------------------------------------------------------------------


def write_workbook(results: Results, path: str | Path) -> Path:
    """Write ``plan.xlsx`` for ``results`` to ``path``, with cached values for every formula."""
    layout = PlanLayout.of(results)
    wb = Workbook(write_only=True)
    wb.calculation = CalcProperties(fullCalcOnLoad=True)
    summary_cache = _write_summary(wb, results, layout)
    plan_rows = _write_plan(wb, results, layout)
    caches = {"Summary": summary_cache}
    for name in results.inputs.sheets:
        caches[name] = _write_input_sheet(wb, name, results, layout)
    caches["Assumptions"] = _write_assumptions(wb, results)
    _write_notes(wb, results)
    frame = io.BytesIO()
    wb.save(frame)
    path = Path(path)
    _finish(frame.getvalue(), path, plan_rows, caches)
    return path


# Post-processing the saved file: Plan rows and cached values -----------------------------------

_MAIN_NS = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_REL_NS = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
_PKG_NS = "{http://schemas.openxmlformats.org/package/2006/relationships}"
_TEMPLATE_ROW = re.compile(rb'<row r="2"[^>]*>.*?</row>', re.DOTALL)
_TEMPLATE_CELL = re.compile(rb'<c r="([A-Z]+)2"([^>]*)>')
_STYLE = re.compile(rb' s="[0-9]+"')
_FORMULA_CELL = re.compile(rb'<c r="([A-Z]+[0-9]+)"([^>]*)><f([^>]*)>([^<]*)</f><v\s*/></c>')
_ROWS_PER_CHUNK = 500
#: zlib level of the file (6, the default: level 1 writes 30 % faster but 40 % larger files).
COMPRESSION = 6


def sheet_members(archive: zipfile.ZipFile) -> dict[str, str]:
    """The zip member of each worksheet of an xlsx, by sheet name."""
    book = ElementTree.fromstring(archive.read("xl/workbook.xml"))
    rels = ElementTree.fromstring(archive.read("xl/_rels/workbook.xml.rels"))
    targets = {r.get("Id"): r.get("Target", "") for r in rels.iter(f"{_PKG_NS}Relationship")}
    members: dict[str, str] = {}
    for sheet in book.iter(f"{_MAIN_NS}sheet"):
        target = targets[sheet.get(f"{_REL_NS}id")]
        member = target.lstrip("/") if target.startswith("/") else str(PurePosixPath("xl") / target)
        members[sheet.get("name", "")] = member
    return members


def cached_value_xml(value: Any) -> tuple[str, str]:
    """The type attribute and ``<v>`` text that store ``value`` as a formula's cached result."""
    if value is None or value is pd.NA:
        return ' t="e"', "#N/A"
    if isinstance(value, (bool, np.bool_)):
        return ' t="b"', "1" if value else "0"
    if isinstance(value, str):
        return ' t="str"', escape(value)
    number = float(value)
    if math.isnan(number):
        return ' t="e"', "#N/A"
    if math.isinf(number):
        return ' t="e"', "#DIV/0!"
    if number.is_integer() and abs(number) < 1e15:
        return "", str(int(number))
    return "", repr(number)


def constant_xml(value: Any) -> tuple[str, str] | None:
    """Type attribute and content of a constant cell (None: leave the cell out)."""
    if value is None or value is pd.NA:
        return None
    if isinstance(value, str):
        space = ' xml:space="preserve"' if value != value.strip() else ""
        return ' t="inlineStr"', f"<is><t{space}>{escape(value)}</t></is>"
    kind, text = cached_value_xml(value)
    if kind == ' t="e"':
        return None
    return kind or ' t="n"', f"<v>{text}</v>"


def _cached_column(values: np.ndarray) -> list[tuple[str, str]]:
    """:func:`cached_value_xml` of every value of a column, fast for numeric columns."""
    if values.dtype == bool:
        return [(' t="b"', "1") if v else (' t="b"', "0") for v in values.tolist()]
    if values.dtype.kind not in "fiu":
        return [cached_value_xml(v) for v in values.tolist()]
    cells = []
    for x in values.astype(float).tolist():
        if x != x:
            cells.append(_NA)
        elif -1e15 < x < 1e15 and x.is_integer():
            cells.append(("", str(int(x))))
        elif x in (math.inf, -math.inf):
            cells.append(_DIV0)
        else:
            cells.append(("", repr(x)))
    return cells


_NA = (' t="e"', "#N/A")
_DIV0 = (' t="e"', "#DIV/0!")


@dataclass(frozen=True)
class _ColumnXml:
    """How one Plan column is written: its cells' style, and for a computed column the shared
    formula of its first row (``master``) and the reference the other rows make to it."""

    letter: str
    style: str
    master: str | None  # None: a constant column (the keys)
    follower: str | None
    values: np.ndarray


def _columns_xml(rows: PlanRows) -> list[_ColumnXml]:
    """Each computed column is one shared formula (as Excel stores a filled-down column): its
    text is stored once, in row 2, and the other rows refer to it, shifted to their own row."""
    last = rows.n_rows + 1
    specs = []
    shared = 0
    for letter, formula, values in rows.columns:
        style = rows.styles.get(letter, "")
        if formula is None:
            specs.append(_ColumnXml(letter, style, None, None, values.to_numpy()))
            continue
        # OOXML stores formula text without the leading "=" (openpyxl strips it likewise);
        # Gnumeric reads "<f>=A1</f>" as the text "=A1"
        text = escape(formula.replace("{r}", "2").removeprefix("="))
        master = f'<f t="shared" ref="{letter}2:{letter}{last}" si="{shared}">{text}</f>'
        follower = f'<f t="shared" si="{shared}"/>'
        specs.append(_ColumnXml(letter, style, master, follower, values.to_numpy()))
        shared += 1
    return specs


def _plan_row_chunks(rows: PlanRows) -> Iterator[bytes]:
    """The Plan's data rows as XML, a few hundred rows at a time (memory stays flat), every
    formula cell with its cached value."""
    columns = _columns_xml(rows)
    for start in range(0, rows.n_rows, _ROWS_PER_CHUNK):
        stop = min(rows.n_rows, start + _ROWS_PER_CHUNK)
        cells: list[list[Any]] = [  # constants may be None (left out); cached values never
            [constant_xml(v) for v in c.values[start:stop].tolist()]
            if c.master is None
            else _cached_column(c.values[start:stop])
            for c in columns
        ]
        parts: list[str] = []
        for j in range(stop - start):
            r = str(start + j + 2)
            parts.append(f'<row r="{r}">')
            for c, column_cells in zip(columns, cells, strict=True):
                cell = column_cells[j]
                if c.master is None:
                    if cell is not None:
                        parts.append(f'<c r="{c.letter}{r}"{c.style}{cell[0]}>{cell[1]}</c>')
                    continue
                formula = c.master if start + j == 0 else c.follower
                parts.append(
                    f'<c r="{c.letter}{r}"{c.style}{cell[0]}>{formula}<v>{cell[1]}</v></c>'
                )
            parts.append("</row>")
        yield "".join(parts).encode()


def _plan_xml(frame: bytes, rows: PlanRows) -> Iterator[bytes]:
    """The Plan sheet's XML with the template row replaced by every data row."""
    match = _TEMPLATE_ROW.search(frame)
    if match is None:
        yield frame
        return
    for letter, attributes in _TEMPLATE_CELL.findall(match.group(0)):
        style = _STYLE.search(attributes)
        rows.styles[letter.decode()] = style.group(0).decode() if style else ""
    yield frame[: match.start()]
    yield from _plan_row_chunks(rows)
    if rows.note:
        row, text = rows.note
        cell = f'<c r="A{row}" t="inlineStr"><is><t>{escape(text)}</t></is></c>'
        yield f'<row r="{row}">{cell}</row>'.encode()
    yield frame[match.end() :]


def insert_cached_values(sheet_xml: bytes, values: Mapping[str, Any]) -> bytes:
    """Give each formula cell of ``sheet_xml`` whose address is in ``values`` that cached value."""

    def replace(match: re.Match[bytes]) -> bytes:
        address = match.group(1).decode()
        if address not in values:
            return match.group(0)
        kind, text = cached_value_xml(values[address])
        attributes = re.sub(rb' t="[^"]*"', b"", match.group(2))
        return (
            b'<c r="'
            + match.group(1)
            + b'"'
            + attributes
            + kind.encode()
            + b"><f"
            + match.group(3)
            + b">"
            + match.group(4)
            + b"</f><v>"
            + text.encode()
            + b"</v></c>"
        )

    return _FORMULA_CELL.sub(replace, sheet_xml)


def _large(plan: PlanRows) -> bool:
    """Whether the Plan's XML may pass 2 GiB, where the zip needs its 64-bit extension."""
    return 80 * len(plan.columns) * plan.n_rows > 2**31 * 0.9


def _finish(
    saved: bytes, path: Path, plan: PlanRows, caches: Mapping[str, Mapping[str, Any]]
) -> None:
    """Write the final file: openpyxl's output with the Plan rows and the cached values added."""
    tmp = path.with_name(path.name + ".partial")
    try:
        with (
            zipfile.ZipFile(io.BytesIO(saved)) as source,
            zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED, compresslevel=COMPRESSION) as target,
        ):
            members = sheet_members(source)
            sheets = {members[name]: values for name, values in caches.items() if values}
            for info in source.infolist():
                data = source.read(info.filename)
                if info.filename == members.get("Plan"):
                    with target.open(info.filename, "w", force_zip64=_large(plan)) as out:
                        for chunk in _plan_xml(data, plan):
                            out.write(chunk)
                elif info.filename in sheets:
                    target.writestr(
                        info.filename, insert_cached_values(data, sheets[info.filename])
                    )
                else:
                    target.writestr(info.filename, data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
