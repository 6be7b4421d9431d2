"""The ``Measured`` sheet: each measured figure beside planner's estimate, with the error.

Its values are constants: the estimates are computed for each measurement's own settings (its
tensor-parallel size, engine profile and traffic), not rows of the Plan, so they are not formulas
over it. Bytes are shown in GiB and seconds in ms.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from openpyxl import Workbook

from planner.measure.compare import COLUMNS
from planner.model.units import GIB
from planner.outputs.workbook.cells import (
    TITLE_FONT,
    _cell,
    _fit_row,
    _header,
    _new_sheet,
    _print_setup,
    _text_cell,
    _widths,
)

#: A figure's base unit → the unit shown and the factor to it.
SHOWN_UNITS = {"B": ("GiB", 1 / GIB), "s": ("ms", 1e3)}

#: The comparison's columns as the sheet heads them (its measured figure is named in words).
RENAMED = {"what": "figure", "error_fraction": "error"}
HEADERS = [RENAMED.get(c, c) for c in COLUMNS if c not in ("format", "figure")]


def write_measured(wb: Workbook, measured: pd.DataFrame) -> None:
    """Add the sheet (nothing when there is no measurement)."""
    if measured.empty:
        return
    ws = _new_sheet(wb, "Measured", "70AD47")
    widths = _widths(ws, [26, 16, 18, 10, 8, 11, 30, 8, 12, 12, 9, 50])
    title = "Measurements beside planner's estimates for the same settings (constants)"
    rows: list[list[Any]] = [[_text_cell(ws, title, font=TITLE_FONT)], [], _header(ws, HEADERS)]
    for _, row in measured.iterrows():
        unit, scale = SHOWN_UNITS.get(row["unit"], (row["unit"], 1.0))
        rows.append(
            [
                _text_cell(ws, row["measurement"]),
                _text_cell(ws, row["hardware"]),
                _text_cell(ws, row["model"]),
                _text_cell(ws, row["precision"]),
                _cell(ws, int(row["tensor_parallel"]), "0"),
                _text_cell(ws, row["engine"]),
                _text_cell(ws, row["what"]),
                _text_cell(ws, unit),
                _cell(ws, float(row["measured"]) * scale, "#,##0.00"),
                _cell(ws, float(row["estimated"]) * scale, "#,##0.00"),
                _cell(ws, float(row["error_fraction"]), "+0.0%;-0.0%"),
                _text_cell(ws, row["source"]),
            ]
        )
    for i, cells in enumerate(rows, start=1):
        _fit_row(ws, i, [getattr(c, "value", None) for c in cells], widths)
        ws.append(cells)
    _print_setup(ws, f"A1:L{len(rows)}")
