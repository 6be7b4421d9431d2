"""plan.xlsx: editable input sheets and a Plan sheet of live formulas over them.

The renderer computes nothing itself. Input sheets hold the catalog numbers (in the units of their
headers); every Plan cell other than the ids is a formula: a lookup of an input by the row's id,
or a metric traced from its Python definition (:mod:`planner.expr`). An edit in an input cell
therefore recomputes the plan in Excel or LibreOffice exactly as ``planner run`` would have.

Catalog text is untrusted: every text cell is written with its type forced to string, so a name
such as ``=HYPERLINK(...)`` stays inert text.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from openpyxl import Workbook
from openpyxl.cell import WriteOnlyCell
from openpyxl.formatting.rule import FormulaRule
from openpyxl.styles import Alignment, Font, PatternFill
from openpyxl.utils import get_column_letter, quote_sheetname
from openpyxl.workbook.defined_name import DefinedName
from openpyxl.workbook.properties import CalcProperties
from openpyxl.worksheet.table import Table, TableColumn, TableStyleInfo

from .expr import Raw, to_excel
from .metric import Metric
from .sweep import Results
from .tables import GLOBALS, KEYS, Lookup

HEADER_FONT = Font(bold=True)
HEADER_FILL = PatternFill("solid", fgColor="DDE4EE")
MISFIT_FILL = PatternFill("solid", fgColor="F8D7DA")
FONT_NAME = "Carlito"

NUMBER_FORMATS = {
    "B": "#,##0",
    "GiB": "0.00",
    "GB": "0.00",
    "MiB": "#,##0.00",
    "s": "0.000000",
    "ms": "0.000",
    "FLOP": "0.00E+00",
    "FLOP/s": "0.00E+00",
    "B/s": "0.00E+00",
    "tokens": "#,##0",
    "sequences": "#,##0",
    "requests": "#,##0",
}


def _text_cell(ws: Any, value: str, **style: Any) -> WriteOnlyCell:
    """A cell that holds ``value`` as text, whatever it looks like (formula injection guard)."""
    cell = WriteOnlyCell(ws, value=value)
    cell.data_type = "s"  # after the value: assigning a value re-infers the type
    for key, val in style.items():
        setattr(cell, key, val)
    return cell


def _cell(ws: Any, value: Any, number_format: str | None = None) -> Any:
    if isinstance(value, str):
        return _text_cell(ws, value)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if hasattr(value, "item"):
        value = value.item()
    cell = WriteOnlyCell(ws, value=value)
    if number_format:
        cell.number_format = number_format
    return cell


def _header(ws: Any, names: Iterable[str]) -> list[WriteOnlyCell]:
    return [_text_cell(ws, n, font=HEADER_FONT, fill=HEADER_FILL) for n in names]


def _table(ws: Any, name: str, headers: list[str], n_rows: int) -> None:
    ref = f"A1:{get_column_letter(len(headers))}{max(n_rows, 1) + 1}"
    table = Table(displayName=name, ref=ref)
    # write-only sheets cannot read the header back: name the table's columns here
    table.tableColumns = [TableColumn(id=i, name=h) for i, h in enumerate(headers, start=1)]
    table.tableStyleInfo = TableStyleInfo(name="TableStyleLight9", showRowStripes=True)
    with warnings.catch_warnings():
        # openpyxl warns that write-only tables need their columns named: they are, above
        warnings.filterwarnings("ignore", message="In write-only mode")
        ws.add_table(table)


def _widths(ws: Any, widths: list[int]) -> None:
    for i, w in enumerate(widths, start=1):
        ws.column_dimensions[get_column_letter(i)].width = w


def _write_input_sheet(wb: Workbook, name: str, results: Results) -> None:
    frame = results.inputs.sheets[name]
    columns = results.inputs.columns[name]
    ws = wb.create_sheet(name)
    ws.freeze_panes = "B2"
    _widths(ws, [max(12, min(40, len(c.name) + 4)) for c in columns])
    ws.append(_header(ws, [c.name for c in columns]))
    formats = [NUMBER_FORMATS.get(c.unit) for c in columns]
    for row in frame.itertuples(index=False):
        ws.append([_cell(ws, v, f) for v, f in zip(row, formats, strict=True)])
    _table(ws, name, [c.name for c in columns], len(frame))


def _write_assumptions(wb: Workbook, results: Results) -> None:
    ws = wb.create_sheet("Assumptions")
    ws.freeze_panes = "B2"
    _widths(ws, [26, 14, 10, 60])
    ws.append(_header(ws, ["id", "value", "unit", "description"]))
    for i, g in enumerate(GLOBALS, start=2):
        ws.append(
            [
                _text_cell(ws, g.cell),
                _cell(ws, results.inputs.globals[g.cell]),
                _text_cell(ws, g.unit),
                _text_cell(ws, g.description),
            ]
        )
        wb.defined_names[g.cell] = DefinedName(g.cell, attr_text=f"Assumptions!$B${i}")
    _table(ws, "Assumptions", ["id", "value", "unit", "description"], len(GLOBALS))


def _sheet_range(sheet: str, letter: str) -> str:
    return f"{quote_sheetname(sheet)}!${letter}:${letter}"


def lookup_expression(lookup: Lookup, results: Results) -> Raw:
    """The INDEX/MATCH formula that reads ``lookup`` for one Plan row, scaled to base units."""
    columns = [c.name for c in results.inputs.columns[lookup.sheet]]
    sheet = lookup.sheet
    match_row = f"MATCH({{{lookup.key}}},{_sheet_range(sheet, 'A')},0)"
    names: tuple[str, ...] = (lookup.key,)
    if lookup.column_from is None:
        letter = get_column_letter(columns.index(lookup.column) + 1)
        value = f"INDEX({_sheet_range(sheet, letter)},{match_row})"
    else:
        last = get_column_letter(len(columns))
        header = f"{quote_sheetname(sheet)}!$1:$1"
        value = (
            f"INDEX({quote_sheetname(sheet)}!$A:${last},{match_row},"
            f'MATCH({{{lookup.column_from}}}&"{lookup.column}",{header},0))'
        )
        names = (lookup.key, lookup.column_from)
    if lookup.kind == "text":
        return Raw(value, names)
    scaled = value if lookup.scale == 1 else f"{value}*{_number(lookup.scale)}"
    optional = lookup.column_from is not None or _has_blanks(results, lookup)
    if optional:
        return Raw(f'IF({value}="",NA(),{scaled})', names)
    return Raw(scaled, names)


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
    """For each non-key Plan column, its formula with ``{r}`` standing for the row number."""
    names = list(results.table.columns)
    letters = {n: get_column_letter(i) for i, n in enumerate(names, start=1)}

    def ref(name: str) -> str:
        if name in letters:
            prefix = "$" if name in KEYS else ""
            return f"{prefix}{letters[name]}{{r}}"
        g = _global_ref(name)
        if g is None:
            raise KeyError(f"formula refers to {name!r}, which is neither a column nor an assumption")
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


def _write_plan(wb: Workbook, results: Results) -> None:
    table = results.table
    names = list(table.columns)
    formulas = plan_formulas(results)
    units = {m.name: m.unit for m in results.metrics} | {lk.name: lk.unit for lk in results.lookups}
    ws = wb.create_sheet("Plan", 0)
    ws.freeze_panes = "E2"
    _widths(ws, [max(11, min(30, len(n) + 3)) for n in names])
    ws.append(_header(ws, names))
    formats = [NUMBER_FORMATS.get(units.get(n, "")) for n in names]
    keys = table[list(KEYS)].to_numpy()
    templates: list[tuple[int, str, str | None]] = [
        (i, formulas[n], formats[i]) for i, n in enumerate(names) if n in formulas
    ]
    for r, key_row in enumerate(keys, start=2):
        row: list[Any] = [_text_cell(ws, str(k)) for k in key_row]
        rendered = str(r)
        for _, template, fmt in templates:
            cell = WriteOnlyCell(ws, value=template.replace("{r}", rendered))
            if fmt:
                cell.number_format = fmt
            row.append(cell)
        ws.append(row)
    last_col = get_column_letter(len(names))
    last_row = len(table) + 1
    fits_col = letters_of(names).get("fits")
    if fits_col and len(table):
        ws.conditional_formatting.add(
            f"A2:{last_col}{last_row}",
            FormulaRule(formula=[f"${fits_col}2=FALSE()"], fill=MISFIT_FILL),
        )
    ws.auto_filter.ref = f"A1:{last_col}{last_row}"
    ws.print_title_rows = "1:1"


def letters_of(names: list[str]) -> dict[str, str]:
    """Column letter of each column name."""
    return {n: get_column_letter(i) for i, n in enumerate(names, start=1)}


def _write_notes(wb: Workbook, results: Results) -> None:
    ws = wb.create_sheet("Notes")
    _widths(ws, [28, 10, 70, 60, 30])
    wrap = Alignment(wrap_text=True, vertical="top")
    for line in NOTES:
        ws.append([_text_cell(ws, line, alignment=wrap)])
    ws.append([])
    ws.append(_header(ws, ["column", "unit", "meaning", "formula", "source"]))
    rows: list[tuple[str, str, str, str, str]] = []
    for lk in results.lookups:
        rows.append((lk.name, lk.unit, lk.description, f"looked up from {lk.sheet} by {lk.key} id", ""))
    for m in results.metrics:
        rows.append((m.name, m.unit, m.description, formula_in_words(m), m.source))
    for row in rows:
        ws.append([_text_cell(ws, v, alignment=wrap) for v in row])


NOTES = [
    "planner: how to read this workbook",
    "Every number on the Plan sheet is a formula over the input sheets (Hardware, Models, "
    "Precisions, Workloads, Assumptions). Edit an input cell and the plan recomputes.",
    "Memory: decimal GB = 1000^3 bytes, binary GiB = 1024^3 bytes. Base-unit columns are in bytes.",
    "KV cache uses KV heads, not query heads, and reserves the promised maximum tokens "
    "(prompt + maximum output) for every concurrent sequence; no prefix-cache hits are assumed.",
    "weight_read_s and compute_bound_s are idealised lower bounds, not measured latency.",
    "A model that loads proves only that its weights fit; 'fits' asks whether the workload's "
    "concurrency at maximum length fits as well.",
]


def write_workbook(results: Results, path: str | Path) -> Path:
    """Write ``plan.xlsx`` for ``results`` to ``path``."""
    wb = Workbook(write_only=True)
    wb.calculation = CalcProperties(fullCalcOnLoad=True)
    _write_plan(wb, results)
    for name in ("Hardware", "Models", "Precisions", "Workloads"):
        _write_input_sheet(wb, name, results)
    _write_assumptions(wb, results)
    _write_notes(wb, results)
    path = Path(path)
    wb.save(path)
    return path


