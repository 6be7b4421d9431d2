"""The Plan sheet: one row per candidate, every computed cell a formula.

Lookups of inputs by id (INDEX/MATCH, scaled to base units) and each metric traced from its
Python definition (:mod:`planner.model.expr`); the layout the Summary's formulas refer to; the
values the cells compute (a simulated figure of a candidate never simulated reads "not simulated").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd
from openpyxl import Workbook
from openpyxl.formatting.rule import FormulaRule
from openpyxl.utils import get_column_letter, quote_sheetname

from planner.model.capacity import NOT_SIMULATED
from planner.model.expr import Expr, Raw, to_excel
from planner.model.metric import Metric
from planner.outputs.formatting import NOT_AVAILABLE
from planner.outputs.workbook.cells import (
    HIDDEN_BASE_UNITS,
    MISFIT_FILL,
    OUTPUT_TAB,
    PAPER_SIZE,
    _cell,
    _fit_row,
    _formula_cell,
    _header,
    _hide,
    _new_sheet,
    _widths,
    column_width,
    number_format,
)
from planner.plan.sweep import Results
from planner.plan.tables import CANDIDATE, GLOBALS, SIMULATED, Lookup

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


def hidden_columns(results: Results) -> list[str]:
    """Plan columns in a base unit (:data:`HIDDEN_BASE_UNITS`) that another column restates in
    a unit people read: grouped and hidden on the Plan, first-class in ``results.csv``."""
    units = column_units(results)
    restated = {m.restates for m in results.metrics if m.restates}
    return [n for n in results.table.columns if n in restated and units[n] in HIDDEN_BASE_UNITS]


def rows_end(n_rows: int) -> int:
    """The last row that ranges over a sheet of ``n_rows`` data rows (below its header) cover:
    the data and :data:`SPARE_ROWS` more, so that an entry typed below is found; never a whole
    column, which engines scan to row 1,048,576."""
    return min(max(n_rows, 1) + 1 + SPARE_ROWS, MAX_ROWS)


def column_range(sheet: str, letter: str, last_row: int) -> str:
    """Column ``letter`` of ``sheet`` from row 1 to ``last_row`` (``'Hardware'!$D$1:$D$1012``):
    from row 1, so that MATCH over it gives, and INDEX into it takes, sheet row numbers."""
    return f"{quote_sheetname(sheet)}!${letter}$1:${letter}${last_row}"


def _sheet_range(results: Results, sheet: str, letter: str) -> str:
    """Column ``letter`` of input sheet ``sheet``: its entries and the spare rows below."""
    return column_range(sheet, letter, rows_end(len(results.inputs.sheets[sheet])))


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
        match_row = _match_row(lookup, results)
        return Raw(f'IF(ISNA({match_row}),"{NOT_SIMULATED}",{value})', (lookup.key,))
    return _lookup_value(lookup, results)


def _match_row(lookup: Lookup, results: Results) -> str:
    """The row of the input sheet whose id is the Plan row's ``lookup.key``."""
    return f"MATCH({{{lookup.key}}},{_sheet_range(results, lookup.sheet, 'A')},0)"


def _lookup_value(lookup: Lookup, results: Results) -> Raw:
    """:func:`lookup_expression` without the candidate lookup's "not simulated"."""
    columns = [c.name for c in results.inputs.columns[lookup.sheet]]
    sheet = quote_sheetname(lookup.sheet)
    match_row = _match_row(lookup, results)
    scale = "" if lookup.scale == 1 else f"*{_number(lookup.scale)}"
    if lookup.column_from is None:
        letter = get_column_letter(columns.index(lookup.column) + 1)
        value = f"INDEX({_sheet_range(results, lookup.sheet, letter)},{match_row})"
        if lookup.kind == "text":
            return Raw(f'{value}&""', (lookup.key,))
        if lookup.fallback_column is not None:
            letter = get_column_letter(columns.index(lookup.fallback_column) + 1)
            fallback = f"INDEX({_sheet_range(results, lookup.sheet, letter)},{match_row})"
            otherwise = f'IF({fallback}="",NA(),{fallback}{scale})'
            return Raw(f'IF({value}="",{otherwise},{value}{scale})', (lookup.key,))
        if _has_blanks(results, lookup):
            return Raw(f'IF({value}="",NA(),{value}{scale})', (lookup.key,))
        return Raw(f"{value}{scale}", (lookup.key,))

    def by_header(name: str) -> str:
        last = get_column_letter(len(columns))
        end = rows_end(len(results.inputs.sheets[lookup.sheet]))
        header = f'MATCH({{{name}}}&"{lookup.column}",{sheet}!$A$1:${last}$1,0)'
        return f"INDEX({sheet}!$A$1:${last}${end},{match_row},{header})"

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


def number_columns(results: Results) -> list[str]:
    """The computed Plan columns that hold numbers: where the planner has none (NaN), their
    cell shows :data:`NOT_AVAILABLE` rather than ``#N/A``, which reads as a broken sheet."""
    keys = set(results.key_columns)
    table = results.table
    return [
        n
        for n in table.columns
        if n not in keys
        and pd.api.types.is_numeric_dtype(table[n])
        and not pd.api.types.is_bool_dtype(table[n])
    ]


def shown_missing(formula: str) -> str:
    """A number column's formula (without ``=``) that shows a missing value as "n/a"
    (``IFNA``, Excel 2013 and later; only ``#N/A`` is replaced, so a ``#DIV/0!`` still shows)."""
    return f'_xlfn.IFNA({formula},"{NOT_AVAILABLE}")'


def read_number(cell: str) -> str:
    """A reference to a cell of a number column (:func:`number_columns`) as the formulas read
    it: its "n/a" back to ``#N/A``, so that a missing value flows through every formula as the
    planner's NaN does (a text would be skipped by MIN and compare greater than any number)."""
    return f'IF({cell}="{NOT_AVAILABLE}",NA(),{cell})'


def plan_formulas(results: Results) -> dict[str, str]:
    """For each computed Plan column, its formula with ``{r}`` standing for the row number."""
    letters = letters_of(list(results.table.columns))
    keys = set(results.key_columns)
    expressions: dict[str, Expr] = {
        lk.name: lookup_expression(lk, results) for lk in results.lookups
    }
    expressions |= {m.name: m.expression() for m in results.metrics}
    shown = missable(results, expressions) & set(number_columns(results))

    def ref(name: str) -> str:
        if name in shown:
            return read_number(f"{letters[name]}{{r}}")
        if name in letters:
            prefix = "$" if name in keys else ""
            return f"{prefix}{letters[name]}{{r}}"
        g = _global_ref(name)
        if g is None:
            raise KeyError(
                f"formula refers to {name!r}, which is neither a column nor an assumption"
            )
        return g

    formulas = {name: to_excel(expression, ref) for name, expression in expressions.items()}
    for name in shown:
        formulas[name] = "=" + shown_missing(formulas[name][1:])
    return formulas


def missable(results: Results, expressions: dict[str, Expr]) -> set[str]:
    """The computed columns whose formula can give ``#N/A``: it calls ``NA()`` (a lookup of an
    input left blank, a missing fallback), reads an assumption the catalog leaves out (written
    as ``=NA()``), or reads such a column. Only these show "n/a" through IFNA and are read back
    through :func:`read_number`: each costs a comparison per reference, which doubles the time
    LibreOffice takes to recalculate when every number column pays it."""
    missing_globals = {
        g.name for g in GLOBALS if pd.isna(results.inputs.globals.get(g.cell, math.nan))
    }
    reads: dict[str, set[str]] = {}
    found: set[str] = set()
    for name, expression in expressions.items():
        names: set[str] = set()

        def note(name: str, names: set[str] = names) -> str:
            names.add(name)
            return name

        text = expression.render(note)
        reads[name] = names
        if "NA()" in text or names & missing_globals:
            found.add(name)
    grown = True
    while grown:  # until no column reads one found missable
        grown = False
        for name, names in reads.items():
            if name not in found and names & found:
                found.add(name)
                grown = True
    return found


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
        return rows_end(self.n_rows)

    def rows(self, name: str) -> str:
        """Column ``name`` from row 1 to :attr:`range_end` (``Plan!$D$1:$D$1009``), for MATCH
        and INDEX by sheet row."""
        return column_range("Plan", self.letters[name], self.range_end)

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
    :func:`lookup_expression`), and a missing number reads "n/a" (:func:`number_columns`)."""
    table = results.table
    shown = table.copy()
    if CANDIDATE in table:
        simulated_ids = set(results.inputs.sheets[SIMULATED]["id"])
        missing = ~table[CANDIDATE].isin(simulated_ids).to_numpy()
        for lookup in results.lookups:
            if missing.any() and lookup.key == CANDIDATE and lookup.name in shown:
                column = shown[lookup.name].astype(object)
                column[missing] = NOT_SIMULATED
                shown[lookup.name] = column
    for name in number_columns(results):
        nan = shown[name].isna().to_numpy()
        if nan.any():
            column = shown[name].astype(object)
            column[nan] = NOT_AVAILABLE
            shown[name] = column
    return shown


def _write_plan(wb: Workbook, results: Results, layout: PlanLayout) -> PlanRows:
    """The Plan sheet: header, the first data row (a template), formatting and filters."""
    table = results.table
    formulas = plan_formulas(results)
    units = column_units(results)
    ws = _new_sheet(wb, "Plan", OUTPUT_TAB)
    ws.sheet_properties.pageSetUpPr.fitToPage = False  # hundreds of columns: print at 100 %
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
    # a part of the Plan that someone sets as the print area prints at full size, landscape,
    # with the header and the key columns on every page
    ws.page_setup.orientation, ws.page_setup.paperSize = "landscape", PAPER_SIZE
    ws.print_title_rows = "1:1"
    ws.print_title_cols = f"A:{get_column_letter(len(layout.keys))}"
    return rows


RULED_OUT_BY = "ruled_out_by"
