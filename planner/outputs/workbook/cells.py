"""Cells, styles and sheet set-up shared by every sheet of ``plan.xlsx``.

Fonts, fills and number formats by unit; write-only cells that keep catalog text as text (never a
formula); column widths, outline grouping, print set-up, Excel tables and input validation.
"""

from __future__ import annotations

import copy
import math
import re
import warnings
import weakref
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd
from openpyxl import Workbook
from openpyxl.cell import WriteOnlyCell
from openpyxl.styles import Alignment, Font, PatternFill
from openpyxl.utils import column_index_from_string, get_column_letter
from openpyxl.worksheet.datavalidation import DataValidation
from openpyxl.worksheet.filters import AutoFilter
from openpyxl.worksheet.formula import ArrayFormula
from openpyxl.worksheet.table import Table, TableColumn, TableStyleInfo

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


#: The paper the workbook prints on: A4, as the report (OOXML's paper size 9).
PAPER_SIZE = "9"

#: Printable width of a landscape A4 page within :func:`_print_setup`'s margins [pt]:
#: 297 mm less 0.4 in each side.
PRINTABLE_WIDTH_PT = 297 / 25.4 * 72 - 2 * 0.4 * 72

#: The smallest print scale a sheet is fitted to: 11 pt text prints at 8.8 pt or more. A sheet
#: too wide for one page at this scale prints across as many pages as its columns need.
MIN_PRINT_SCALE = 0.8

#: Excel's width of a column left unset [characters].
DEFAULT_WIDTH = 8.43


def width_pt(characters: float) -> float:
    """A column's printed width at 100 % [pt] from its width in characters of Calibri 11
    (7 pixels a character and 5 of padding, at 96 pixels an inch)."""
    return (characters * 7 + 5) * 0.75


def _letters(first: str, last: str) -> list[str]:
    low, high = column_index_from_string(first), column_index_from_string(last)
    return [get_column_letter(i) for i in range(low, high + 1)]


def _printed_width(ws: Any, letters: Iterable[str]) -> float:
    """The width of the columns ``letters`` as printed at 100 %, hidden ones left out [pt]."""
    total = 0.0
    for letter in letters:
        dimension = ws.column_dimensions.get(letter)
        if dimension is not None and dimension.hidden:
            continue
        width = dimension.width if dimension is not None and dimension.width else DEFAULT_WIDTH
        total += width_pt(width)
    return total


def pages_across(ws: Any, columns: str, title_cols: str | None = None) -> int:
    """How many landscape pages side by side print the columns ``columns`` (``A:AD``) at
    :data:`MIN_PRINT_SCALE` or larger, with ``title_cols`` repeated on each page."""
    first, last = columns.split(":")
    titles = title_cols.split(":") if title_cols else None
    repeated = _printed_width(ws, _letters(*titles)) if titles else 0.0
    total = _printed_width(ws, _letters(first, last))
    page = PRINTABLE_WIDTH_PT / MIN_PRINT_SCALE
    if total <= page:
        return 1
    return max(1, math.ceil((total - repeated) / max(page - repeated, page / 4)))


def _print_setup(
    ws: Any,
    area: str,
    *,
    title_rows: str | None = None,
    title_cols: str | None = None,
) -> None:
    """Landscape A4 with a print area, scaled to fit its width on as few pages across as keep
    the text at :data:`MIN_PRINT_SCALE` or larger, as many pages down as needed; ``title_rows``
    and ``title_cols`` (``1:1``, ``A:C``) repeat on every page."""
    ws.page_setup.orientation = "landscape"
    ws.page_setup.paperSize = PAPER_SIZE
    first, last = (re.sub(r"\d", "", corner) for corner in area.split(":"))
    ws.page_setup.fitToWidth = pages_across(ws, f"{first}:{last}", title_cols)
    ws.page_setup.pageOrder = "overThenDown"  # a row's pages follow each other
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
