"""plan.xlsx: editable input sheets, a Plan sheet of live formulas, a Summary, and Notes.

The renderer computes no metric itself. Input sheets hold the catalog numbers (in the units of
their headers); every Plan cell other than the ids is a formula: a lookup of an input by the row's
id, or a metric traced from its Python definition (:mod:`planner.expr`). An edit in an input cell
therefore recomputes the plan in Excel or LibreOffice exactly as ``planner run`` would have.

Sheets, in order: ``Summary`` (the best fitting candidates of each workload, ranked by a Plan
column the reader may change, and charts), ``Plan`` (one row per candidate, the columns of
``results.csv``), the input sheets of ``results.inputs`` (``Hardware``, ``Models``,
``Precisions``, ``Workloads``, ...: Excel tables), ``Assumptions`` (named cells), and ``Notes``
(what every column means).

Cached values: openpyxl writes formulas without results, so a file viewer that does not
calculate would show empty cells. After openpyxl has saved the workbook, :func:`write_workbook`
therefore writes every Plan formula's value into the file itself (the Python value of the same
metric, which is by construction what the formula computes: ``TRUE``/``FALSE`` as booleans, text
as text, NaN as ``#N/A``), and the Summary's values from the same ranking the formulas express.
The workbook also asks Excel to recalculate everything on open (``fullCalcOnLoad``).

For speed the Plan's data rows are written straight as XML (openpyxl writes the sheet frame and a
template row whose cell styles the generated rows reuse), each computed column as one shared
formula, the way Excel stores a filled-down column: 20,000 rows take seconds, not minutes.

Catalog text is untrusted: every text cell is written as a string, never a formula, so a name
such as ``=HYPERLINK(...)`` stays inert text.
"""

from __future__ import annotations

import io
import math
import os
import re
import warnings
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal
from xml.etree import ElementTree
from xml.sax.saxutils import escape

import numpy as np
import pandas as pd
from openpyxl import Workbook
from openpyxl.cell import WriteOnlyCell
from openpyxl.chart import BarChart, Reference
from openpyxl.formatting.rule import FormulaRule
from openpyxl.styles import Alignment, Font, PatternFill
from openpyxl.utils import get_column_letter, quote_sheetname
from openpyxl.workbook.defined_name import DefinedName
from openpyxl.workbook.properties import CalcProperties
from openpyxl.worksheet.datavalidation import DataValidation
from openpyxl.worksheet.filters import AutoFilter
from openpyxl.worksheet.formula import ArrayFormula
from openpyxl.worksheet.table import Table, TableColumn, TableStyleInfo

from .expr import Raw, to_excel
from .metric import Metric
from .sweep import Results
from .tables import GLOBALS, KEYS, Column, Lookup

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
INPUT_TAB = "4472C4"
OUTPUT_TAB = "70AD47"

#: Computed Plan columns per printed page (the key columns repeat on every page).
PLAN_COLUMNS_PER_PAGE = 10

#: Excel's last row: a plan longer than this cannot be one sheet.
MAX_ROWS = 1_048_576

#: Display formats by unit. Other numbers show as General, or with thousands separators when
#: they are whole and large (so that a bytes-per-value of 0.5 typed later does not show as 1).
NUMBER_FORMATS = {
    "GiB": "0.00",
    "GB": "0.00",
    "MiB": "#,##0.00",
    "s": "0.000000",
    "ms": "0.000",
    "FLOP": "0.00E+00",
    "FLOP/s": "0.00E+00",
    "B/s": "0.00E+00",
    "USD": "#,##0.00",
    "USD/h": "#,##0.00",
    "fraction": "0.00",
}
INTEGER_FORMAT = "#,##0"
LARGE = 10_000


# Ranking of the Summary ----------------------------------------------------------------------


@dataclass(frozen=True)
class Ranking:
    """How the Summary orders a workload's candidates: among the rows where the boolean Plan
    column ``among`` is TRUE, by the numeric Plan column ``column``, lowest or highest first."""

    column: str
    order: Literal["lowest", "highest"] = "lowest"
    among: str = "fits"


#: The Summary's default ranking: the first whose columns the plan has. A cost metric put first
#: here makes cost the default; readers can change the column and order in the workbook itself.
RANKINGS: tuple[Ranking, ...] = (
    Ranking("weight_read_s", "lowest"),
    Ranking("max_sequences", "highest"),
)

#: How many options the Summary lists per workload.
TOP_OPTIONS = 3

#: Plan columns shown beside each Summary option, where the plan has them.
SUMMARY_CONTEXT = (
    "max_sequences",
    "concurrency",
    "weight_read_ms",
    "compute_bound_ms",
    "weight_gib",
    "kv_gib_at_concurrency",
    "memory_gib",
)

#: Parts of one device's memory in the Summary's chart: for each, the Plan columns (GiB) that
#: may give it, first present wins; the GiB assumptions (runtime overhead, reserve) come after
#: the weights. A part the plan lacks is left out; without weights there is no chart.
MEMORY_PARTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("weights", ("weight_gib_per_device", "weight_gib")),
    ("KV cache at concurrency", ("kv_gib_at_concurrency",)),
    ("free", ("memory_headroom_gib",)),
)


def _kinds(results: Results) -> dict[str, str]:
    return {lk.name: lk.kind for lk in results.lookups} | {m.name: m.kind for m in results.metrics}


def rankable_columns(results: Results) -> list[str]:
    """Plan columns that hold numbers (a Summary can rank by any of them)."""
    kinds = _kinds(results)
    return [n for n in results.table.columns if kinds.get(n) in ("number", "integer")]


def usable(results: Results, ranking: Ranking) -> bool:
    """Whether the plan has the ranking's numeric column and its boolean filter column."""
    kinds = _kinds(results)
    return ranking.column in rankable_columns(results) and kinds.get(ranking.among) == "bool"


def default_ranking(results: Results) -> Ranking | None:
    """The first of :data:`RANKINGS` the plan can use, else None."""
    return next((r for r in RANKINGS if usable(results, r)), None)


def best_options(
    results: Results, ranking: Ranking, top: int = TOP_OPTIONS
) -> dict[str, list[int]]:
    """For each workload (in plan order), the table positions of its best ``top`` rows.

    Rows where ``ranking.among`` is true and the ranking column holds a number, ordered by that
    column (lowest or highest first), ties in plan order. This is what the Summary's formulas
    compute; it gives their cached values.
    """
    table = results.table
    sign = -1.0 if ranking.order == "highest" else 1.0
    values = pd.to_numeric(table[ranking.column], errors="coerce").to_numpy(dtype=float)
    eligible = table[ranking.among].to_numpy(dtype=bool) & np.isfinite(values)
    keys = sign * values
    workloads = table["workload"].to_numpy()
    chosen: dict[str, list[int]] = {}
    for workload in pd.unique(workloads):
        rows = np.flatnonzero(eligible & (workloads == workload))
        ordered = sorted(rows.tolist(), key=lambda i: (keys[i], i))
        chosen[str(workload)] = ordered[:top]
    return chosen


# Cells ------------------------------------------------------------------------------------------


def _text_cell(ws: Any, value: str, **style: Any) -> WriteOnlyCell:
    """A cell that holds ``value`` as text, whatever it looks like (formula injection guard)."""
    cell = WriteOnlyCell(ws, value=value)
    cell.data_type = "s"  # after the value: assigning a value re-infers the type
    for key, val in style.items():
        setattr(cell, key, val)
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
    if number_format:
        cell.number_format = number_format
    for key, val in style.items():
        setattr(cell, key, val)
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
    if number_format:
        cell.number_format = number_format
    for key, val in style.items():
        setattr(cell, key, val)
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
    """The display format of a column: by its unit, else ``#,##0`` when its values are whole
    numbers of 10,000 or more, else None (General)."""
    if unit in NUMBER_FORMATS:
        return NUMBER_FORMATS[unit]
    numbers = [
        float(v)
        for v in values
        if isinstance(v, (int, float, np.number)) and not isinstance(v, bool)
    ]
    finite = [v for v in numbers if math.isfinite(v)]
    if finite and all(v.is_integer() for v in finite) and max(abs(v) for v in finite) >= LARGE:
        return INTEGER_FORMAT
    return None


# Sheet set-up -----------------------------------------------------------------------------------


def _widths(ws: Any, widths: Iterable[float]) -> list[float]:
    """Set the column widths (in characters); returns them."""
    widths = list(widths)
    for i, w in enumerate(widths, start=1):
        ws.column_dimensions[get_column_letter(i)].width = w
    return widths


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


def _write_input_sheet(wb: Workbook, name: str, results: Results) -> None:
    frame = results.inputs.sheets[name]
    columns: list[Column] = results.inputs.columns[name]
    ws = _new_sheet(wb, name, INPUT_TAB)
    ws.freeze_panes = "B2"
    formats = [number_format(c.unit, frame[c.name]) for c in columns]
    widths = _widths(
        ws, [column_width(c.name, frame[c.name], f) for c, f in zip(columns, formats, strict=True)]
    )
    _fit_row(ws, 1, [c.name for c in columns], widths)
    ws.append(_header(ws, [c.name for c in columns]))
    for row in frame.itertuples(index=False):
        ws.append([_cell(ws, v, f) for v, f in zip(row, formats, strict=True)])
    last_row = max(len(frame), 1) + 1
    for i, c in enumerate(columns, start=1):
        if c.kind == "number":
            letter = get_column_letter(i)
            _non_negative(ws, f"{letter}2:{letter}{last_row}", c.name)
    _table(ws, name, [c.name for c in columns], len(frame))
    _print_setup(ws, f"A1:{get_column_letter(len(columns))}{last_row}", title_rows="1:1")


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
    fallback's column is read where the first has no number.
    """
    columns = [c.name for c in results.inputs.columns[lookup.sheet]]
    sheet = quote_sheetname(lookup.sheet)
    match_row = f"MATCH({{{lookup.key}}},{_sheet_range(lookup.sheet, 'A')},0)"
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

    names = (lookup.key, lookup.column_from)
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

    def column(self, name: str) -> str:
        """The data cells of column ``name``, absolute (``Plan!$D$2:$D$9``)."""
        letter = self.letters[name]
        return f"Plan!${letter}$2:${letter}${self.last_row}"


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


def _write_plan(wb: Workbook, results: Results, layout: PlanLayout) -> PlanRows:
    """The Plan sheet: header, the first data row (a template), formatting and filters."""
    table = results.table
    formulas = plan_formulas(results)
    units = column_units(results)
    ws = _new_sheet(wb, "Plan", OUTPUT_TAB)
    ws.freeze_panes = f"{layout.first_computed}2"
    formats = {n: number_format(units.get(n, ""), table[n].head(1000)) for n in layout.names}
    widths = _widths(ws, [column_width(n, table[n], formats[n]) for n in layout.names])
    _fit_row(ws, 1, layout.names, widths)
    ws.append(_header(ws, layout.names))
    rows = PlanRows(
        [(layout.letters[n], formulas.get(n), table[n]) for n in layout.names], layout.n_rows
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
    fits_col = layout.letters.get("fits")
    if fits_col and layout.n_rows:
        ws.conditional_formatting.add(
            f"A2:{layout.last_letter}{layout.last_row}",
            FormulaRule(formula=[f"${fits_col}2=FALSE()"], fill=MISFIT_FILL),
        )
    ws.auto_filter.ref = area
    last_key = get_column_letter(len(layout.keys))
    pages = math.ceil((len(layout.names) - len(layout.keys)) / PLAN_COLUMNS_PER_PAGE)
    _print_setup(ws, area, pages_wide=max(pages, 1), title_rows="1:1", title_cols=f"A:{last_key}")
    return rows


# Summary ----------------------------------------------------------------------------------------


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


#: Defined names the Summary's formulas read, so that the formulas stay readable.
PLAN_WORKLOAD, PLAN_AMONG, PLAN_RANK = "plan_workload", "plan_among", "plan_rank"
RANK_BY, RANK_ORDER, RANK_SIGN = "rank_by", "rank_order", "rank_sign"
RANK_BY_CELL, RANK_ORDER_CELL = "B2", "D2"


def _define_summary_names(wb: Workbook, layout: PlanLayout, ranking: Ranking) -> None:
    first, last = layout.first_computed, layout.last_letter
    values = f"Plan!${first}$2:${last}${layout.last_row}"
    header = f"Plan!${first}$1:${last}$1"
    texts = {
        PLAN_WORKLOAD: layout.column("workload"),
        PLAN_AMONG: layout.column(ranking.among),
        PLAN_RANK: f"INDEX({values},0,MATCH({RANK_BY},{header},0))",
        RANK_SIGN: f'IF({RANK_ORDER}="highest",-1,1)',
        RANK_BY: "Summary!" + _absolute(RANK_BY_CELL),
        RANK_ORDER: "Summary!" + _absolute(RANK_ORDER_CELL),
    }
    for name, text in texts.items():
        wb.defined_names[name] = DefinedName(name, attr_text=text)


def _absolute(cell: str) -> str:
    letters = cell.rstrip("0123456789")
    return f"${letters}${cell[len(letters) :]}"


def option_formulas(workload: str, key_cell: str, prev: tuple[str, str] | None) -> tuple[str, str]:
    """Array formulas for one option's rank key and Plan row, after option ``prev`` (key, row).

    ``workload`` is the cell holding the workload id, ``key_cell`` the cell of this option's key
    (which the row formula reads), ``prev`` the previous option's key and row cells.

    The key is the rank column times ``rank_sign`` (so the best is always the smallest); among
    the workload's qualifying rows with a number there, the option is the smallest (key, row)
    pair after the previous option's. MIN over no rows is 0, and no Plan row is 0: "none".
    """
    key = f"{RANK_SIGN}*{PLAN_RANK}"
    rows = f"ROW({PLAN_WORKLOAD})"
    chosen = f"({PLAN_WORKLOAD}={workload})*{PLAN_AMONG}"
    if prev is not None:
        pk, pr = prev
        chosen += f"*(({key}>{pk})+({key}={pk})*({rows}>{pr}))"
    key_formula = f"MIN(IF(ISNUMBER({PLAN_RANK}),IF({chosen},{key})))"
    row_formula = f"MIN(IF(ISNUMBER({PLAN_RANK}),IF({chosen}*({key}={key_cell}),{rows})))"
    if prev is not None:
        key_formula = f"IF({prev[1]}=0,0,{key_formula})"
        row_formula = f"IF({prev[1]}=0,0,{row_formula})"
    return "=" + key_formula, "=" + row_formula


#: Headers of the Summary table's fixed and helper columns.
WORKLOAD, OPTION, RANK_VALUE = "workload", "option", "rank value"
QUALIFYING, PLAN_ROW, RANK_KEY = "qualifying candidates", "Plan row", "rank key (helper)"


@dataclass(frozen=True)
class SummaryColumns:
    """The Summary table's columns: workload, the option's ids (hardware first), its rank and
    what the Plan says about it, then the count of qualifying candidates and two helpers."""

    ids: list[str]  # Plan key columns other than the workload
    context: list[str]

    @property
    def headers(self) -> list[str]:
        return [
            WORKLOAD,
            *self.ids,
            OPTION,
            RANK_VALUE,
            *self.context,
            QUALIFYING,
            PLAN_ROW,
            RANK_KEY,
        ]

    def number(self, header: str) -> int:
        """Column number of ``header``."""
        return self.headers.index(header) + 1

    def letter(self, header: str) -> str:
        return get_column_letter(self.number(header))


def _write_summary(
    wb: Workbook, results: Results, layout: PlanLayout, ranking: Ranking | None, top: int
) -> dict[str, Any]:
    """The Summary sheet; returns the value of each of its formula cells (its cache)."""
    ws = _new_sheet(wb, "Summary", OUTPUT_TAB)
    sheet = SummarySheet(ws)
    if ranking is None or not layout.n_rows or "workload" not in layout.letters:
        _widths(ws, [90])
        sheet.append([_text_cell(ws, "Best options per workload", font=TITLE_FONT)])
        why = "This plan has no candidates, or no boolean and numeric columns to rank by."
        sheet.append([_text_cell(ws, why)])
        return sheet.cache
    ids = [k for k in layout.keys if k != "workload"]
    columns = SummaryColumns(ids, [c for c in SUMMARY_CONTEXT if c in layout.letters])
    _define_summary_names(wb, layout, ranking)
    ws.freeze_panes = "B6"
    widths = _widths(ws, _summary_widths(results, columns))
    _summary_heading(sheet, ranking, top)
    _fit_row(ws, sheet.row + 1, columns.headers, widths)
    first = sheet.append(_header(ws, columns.headers)) + 1
    best_rows: dict[str, int] = {}
    for workload, picks in best_options(results, ranking, top).items():
        best_rows[workload] = sheet.row + 1
        prev: tuple[str, str] | None = None
        for k in range(1, top + 1):
            pick = picks[k - 1] if k <= len(picks) else None
            _summary_row(sheet, results, layout, ranking, columns, workload, k, prev, pick)
            row = sheet.row
            prev = (f"${columns.letter(RANK_KEY)}${row}", f"${columns.letter(PLAN_ROW)}${row}")
    last_col = get_column_letter(len(columns.headers))
    ws.conditional_formatting.add(
        f"A{first}:{last_col}{sheet.row}",
        FormulaRule(
            formula=[f"${columns.letter(OPTION)}{first}=1"],
            font=Font(name=FONT_NAME, bold=True),
        ),
    )
    _rank_validation(ws, layout, rankable_columns(results))
    end_row = _summary_charts(sheet, results, layout, columns, best_rows, widths)
    _print_setup(ws, f"A1:{last_col}{end_row}")
    return sheet.cache


def _summary_widths(results: Results, columns: SummaryColumns) -> list[float]:
    """Column widths: the workload (and the chart labels below it), the first id wide enough
    for any rankable column's name (it sits under 'rank by'), the other ids for their values."""
    table = results.table

    def longest(key: str) -> int:
        return max((len(str(v)) for v in table[key].head(1000)), default=0)

    label = 12 + sum(longest(k) + 3 for k in columns.ids)
    rank_names = max(len(c) for c in rankable_columns(results)) + 2
    widths: list[float] = [min(max(24, label), 60)]
    for i, k in enumerate(columns.ids):
        widths.append(max(12, longest(k) + 2, rank_names if i == 0 else 0))
    widths += [8, 12] + [12] * len(columns.context) + [12, 10, 14]
    return widths


def _none_text(ranking: Ranking) -> str:
    return "none fits" if ranking.among == "fits" else f"none is {ranking.among}"


def _summary_heading(sheet: SummarySheet, ranking: Ranking, top: int) -> None:
    ws = sheet.ws
    title = f"Best options per workload (among candidates whose '{ranking.among}' is TRUE)"
    sheet.append([_text_cell(ws, title, font=TITLE_FONT)])
    sheet.append(
        [
            _text_cell(ws, "rank by", font=HEADER_FONT),
            _text_cell(ws, ranking.column, fill=INPUT_FILL),
            _text_cell(ws, "order", font=HEADER_FONT),
            _text_cell(ws, ranking.order, fill=INPUT_FILL),
            _text_cell(
                ws,
                "← the yellow cells may be changed: a numeric Plan column; lowest or highest first",
            ),
        ]
    )
    explain = (
        f"For each workload, up to {top} candidates whose Plan column '{ranking.among}' is TRUE "
        "and that have a number in the ranking column, best first; ties keep the Plan's order. "
        "Every cell below is a formula over the Plan sheet."
    )
    sheet.append([_text_cell(ws, explain)])
    sheet.append([])


def _summary_row(
    sheet: SummarySheet,
    results: Results,
    layout: PlanLayout,
    ranking: Ranking,
    columns: SummaryColumns,
    workload: str,
    k: int,
    prev: tuple[str, str] | None,
    pick: int | None,
) -> None:
    """Option ``k`` of ``workload``: its choice (helper cells) and what the Plan says about it."""
    ws = sheet.ws
    row = sheet.row + 1
    table = results.table
    units = column_units(results)
    key_ref = f"${columns.letter(RANK_KEY)}${row}"
    row_ref = f"${columns.letter(PLAN_ROW)}{row}"
    key_formula, row_formula = option_formulas(f"$A${row}", key_ref, prev)
    record = None if pick is None else table.iloc[pick]

    def from_plan(column: str, blank: str = "") -> tuple[Any, Any]:
        letter = layout.letters[column]
        fmt = number_format(units.get(column, ""), table[column].head(1000))
        formula = f'=IF({row_ref}=0,"{blank}",INDEX(Plan!${letter}:${letter},{row_ref}))'
        return _formula_cell(ws, formula, fmt), blank if record is None else record[column]

    qualifying = table[ranking.among].to_numpy(dtype=bool) & (table["workload"] == workload)
    count = f"=COUNTIFS({PLAN_WORKLOAD},$A{row},{PLAN_AMONG},TRUE())"
    rank_value = f"INDEX(Plan!$A:${layout.last_letter},{row_ref},MATCH({RANK_BY},Plan!$1:$1,0))"
    sign = -1.0 if ranking.order == "highest" else 1.0
    helper = {"font": HELPER_FONT}
    fields: dict[str, tuple[Any, Any]] = {WORKLOAD: (_text_cell(ws, workload), workload)}
    for i, key in enumerate(columns.ids):
        fields[key] = from_plan(key, _none_text(ranking) if (i == 0 and k == 1) else "")
    fields[OPTION] = (_cell(ws, k), k)
    rank_format = number_format(units.get(ranking.column, ""), table[ranking.column].head(1000))
    fields[RANK_VALUE] = (
        _formula_cell(ws, f'=IF({row_ref}=0,"",{rank_value})', rank_format),
        "" if record is None else record[ranking.column],
    )
    fields |= {column: from_plan(column) for column in columns.context}
    fields[QUALIFYING] = (_formula_cell(ws, count), int(qualifying.sum()))
    fields[PLAN_ROW] = (
        _formula_cell(ws, row_formula, array_at=row_ref.replace("$", ""), **helper),
        0 if pick is None else pick + 2,
    )
    fields[RANK_KEY] = (
        _formula_cell(ws, key_formula, array_at=key_ref.replace("$", ""), **helper),
        0 if record is None else sign * float(record[ranking.column]),
    )
    cells = [fields[h][0] for h in columns.headers]
    sheet.append(cells, {i: fields[h][1] for i, h in enumerate(columns.headers, start=1)})


def _rank_validation(ws: Any, layout: PlanLayout, numeric: list[str]) -> None:
    """Drop-down lists for the ranking cells: the Plan's header, and lowest/highest."""
    column = DataValidation(
        type="list",
        formula1=f"Plan!${layout.first_computed}$1:${layout.last_letter}$1",
        showErrorMessage=True,
        errorTitle="Unknown column",
        error="Pick a numeric column of the Plan sheet, e.g. " + ", ".join(numeric[:4]),
    )
    column.add(RANK_BY_CELL)
    order = DataValidation(type="list", formula1='"lowest,highest"', showErrorMessage=True)
    order.add(RANK_ORDER_CELL)
    ws.data_validations.append(column)
    ws.data_validations.append(order)


def _rows_under(chart: BarChart) -> int:
    """Rows a chart covers (a default row is 15 pt, about 0.53 cm), plus a gap."""
    return math.ceil(chart.height / 0.53) + 2


def _summary_charts(
    sheet: SummarySheet,
    results: Results,
    layout: PlanLayout,
    columns: SummaryColumns,
    best_rows: dict[str, int],
    widths: list[float],
) -> int:
    """Chart data (the best option of each workload) and native charts over it; last row used.

    A stacked bar of device memory (weights, runtime overhead, reserve, KV cache at the
    workload's concurrency, free) and a bar of required concurrency against sequences that fit.
    Each needs its Plan columns; a chart whose columns the plan lacks is left out.
    """
    parts = _memory_parts(layout)
    capacity = [(c, c) for c in ("concurrency", "max_sequences") if c in layout.letters]
    memory_chart, capacity_chart = len(parts) >= 2, len(capacity) == 2
    if not (memory_chart or capacity_chart):
        return sheet.row
    ws = sheet.ws
    pick_letter = columns.letter(PLAN_ROW)
    sources = parts + capacity
    sheet.append([])
    title = "Chart data: the best option of each workload"
    sheet.append([_text_cell(ws, title, font=SECTION_FONT)])
    headers = ["option"] + [label for label, _ in sources]
    _fit_row(ws, sheet.row + 1, headers, widths)
    header_row = sheet.append(_header(ws, headers))
    for row in best_rows.values():
        pick = f"${pick_letter}${row}"
        picked = int(sheet.cache[f"{pick_letter}{row}"])
        cells = [_formula_cell(ws, _option_label(row, pick, columns))]
        values: dict[int, Any] = {1: _option_label_value(sheet.cache, row, columns)}
        for col, (label, source) in enumerate(sources, start=2):
            formula, value = _chart_value(source, pick, layout, results, picked)
            fmt = NUMBER_FORMATS["GiB"] if (label, source) in parts else None
            cells.append(_formula_cell(ws, formula, fmt))
            values[col] = value
        sheet.append(cells, values)
    last = sheet.row
    anchor = last + 2
    charts = []
    if memory_chart:
        title = "Memory of one device for each workload's best option (GiB)"
        charts.append(_bar_chart(ws, title, "GiB", header_row, last, 2, len(parts) + 1, True))
    if capacity_chart:
        title = "Concurrency required and sequences that fit at maximum length"
        col = len(parts) + 2
        charts.append(_bar_chart(ws, title, "sequences", header_row, last, col, col + 1, False))
    for chart in charts:
        ws.add_chart(chart, f"A{anchor}")
        anchor += _rows_under(chart)
    return anchor - 1


def _option_label(row: int, pick: str, columns: SummaryColumns) -> str:
    """Formula naming an option: ``workload: hardware · model · precision`` (and more keys)."""
    parts = [
        f"${columns.letter(k)}${row}" if k in KEYS else f'"{k}="&${columns.letter(k)}${row}'
        for k in columns.ids
    ]
    ids = '&" · "&'.join(parts) or '""'
    first = f"${columns.letter(columns.ids[0])}${row}" if columns.ids else '""'
    return f'=IF({pick}=0,$A${row}&": "&{first},$A${row}&": "&{ids})'


def _option_label_value(cache: Mapping[str, Any], row: int, columns: SummaryColumns) -> str:
    """The label's value, from the cached values of the option's cells."""
    ids = [_as_text(cache[f"{columns.letter(k)}{row}"]) for k in columns.ids]
    named = [v if k in KEYS else f"{k}={v}" for k, v in zip(columns.ids, ids, strict=True)]
    picked = cache[f"{columns.letter(PLAN_ROW)}{row}"]
    workload = cache.get(f"A{row}", "")
    return f"{workload}: " + (" · ".join(named) if picked else (ids[0] if ids else ""))


def _as_text(value: Any) -> str:
    """A value as the spreadsheet's ``&`` writes it (whole numbers without a decimal point)."""
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


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


def _chart_value(
    source: str, pick: str, layout: PlanLayout, results: Results, picked: int
) -> tuple[str, Any]:
    """Formula and value of one chart-data cell: a Plan column of the pick, or an assumption."""
    if source in layout.letters:
        letter = layout.letters[source]
        formula = f'=IF({pick}=0,"",INDEX(Plan!${letter}:${letter},{pick}))'
        value = "" if picked == 0 else results.table.iloc[picked - 2][source]
    else:
        formula = f'=IF({pick}=0,"",{source})'
        value = "" if picked == 0 else results.inputs.globals[source]
    return formula, value


def _bar_chart(
    ws: Any,
    title: str,
    axis: str,
    header_row: int,
    last: int,
    min_col: int,
    max_col: int,
    stacked: bool,
) -> BarChart:
    """Horizontal bars of columns ``min_col..max_col`` (titles in ``header_row``), one per row."""
    chart = BarChart()
    chart.type = "bar"
    chart.title = title
    chart.y_axis.title = axis
    chart.x_axis.delete = False
    chart.y_axis.delete = False
    if stacked:
        chart.grouping = "stacked"
        chart.overlap = 100
    data = Reference(ws, min_col=min_col, max_col=max_col, min_row=header_row, max_row=last)
    chart.add_data(data, titles_from_data=True)
    chart.set_categories(Reference(ws, min_col=1, max_col=1, min_row=header_row + 1, max_row=last))
    chart.legend.position = "b"
    chart.width = 24
    chart.height = 6 + 0.9 * (last - header_row)
    return chart


# Notes ------------------------------------------------------------------------------------------


SHEETS_TEXT = [
    (
        "Summary",
        "The best fitting candidates of each workload, ranked by the Plan column named in "
        "its yellow cell, and charts of their memory and concurrency. All formulas.",
    ),
    (
        "Plan",
        "One row per candidate (hardware × model × precision × workload), the same rows and "
        "columns as results.csv. Every cell right of the four ids is a formula: a lookup of an "
        "input by id, or a metric over the row's other cells. Rows that do not fit are shaded red.",
    ),
    (
        "Hardware, Models, Precisions, Workloads",
        "The catalogs, one entry per row, in the units of "
        "the column headers (GiB, GB/s, TFLOPS). Edit values here.",
    ),
    (
        "Assumptions",
        "Planning assumptions that apply to every candidate; each value is a named "
        "cell (e.g. reserve_gib) that the Plan's formulas use by name.",
    ),
    ("Notes", "This sheet: how the workbook works, what every column means, and the cautions."),
]

EDITING_TEXT = [
    "You may edit: any number or text on the input sheets and the Assumptions values; the "
    "Summary's two yellow cells (ranking column and order). The Plan and the Summary recompute.",
    "Do not rename ids: the Plan finds each input by its id. Adding a row to an input sheet does "
    "not add candidates: the Plan holds the candidates of the run; run the planner again for "
    "new ones.",
    "Do not type over Plan or Summary cells: they are formulas, and a typed number stops updating.",
    "Excel recalculates the whole workbook when it opens it. LibreOffice shows the values stored "
    "by the planner (the same numbers) and recomputes whatever an edit changes; Data > Calculate > "
    "Recalculate Hard (Ctrl+Shift+F9) recomputes everything.",
    "A cell showing #N/A has no input to compute from, e.g. a device without a rate for the "
    "precision's compute format (a blank cell on the Hardware sheet).",
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
    for title, lines in (("Editing and recalculation", EDITING_TEXT), ("Cautions", NOTES)):
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


def write_workbook(
    results: Results, path: str | Path, *, ranking: Ranking | None = None, top: int = TOP_OPTIONS
) -> Path:
    """Write ``plan.xlsx`` for ``results`` to ``path``, with cached values for every formula.

    ``ranking`` orders the Summary's options (default: :func:`default_ranking`); ``top`` is how
    many options it lists per workload.
    """
    layout = PlanLayout.of(results)
    ranking = ranking or default_ranking(results)
    if ranking is not None and not usable(results, ranking):
        raise ValueError(f"cannot rank by {ranking}: the plan lacks a numeric column or the filter")
    wb = Workbook(write_only=True)
    wb.calculation = CalcProperties(fullCalcOnLoad=True)
    summary_cache = _write_summary(wb, results, layout, ranking, top)
    plan_rows = _write_plan(wb, results, layout)
    for name in results.inputs.sheets:
        _write_input_sheet(wb, name, results)
    caches = {"Summary": summary_cache, "Assumptions": _write_assumptions(wb, results)}
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
        text = escape(formula.replace("{r}", "2"))
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
        cells = [
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
