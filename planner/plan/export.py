"""Tables as files: the results table with whole numbers as integers, and as every CSV planner
writes it (formula-like text made inert, every text cell quoted)."""

from __future__ import annotations

import csv
from typing import Any

import numpy as np
import pandas as pd


def export_table(table: pd.DataFrame) -> pd.DataFrame:
    """The results table for files: whole-number float columns as integers (no ``.0``)."""
    out = table.copy()
    for col in out.columns:
        values = out[col]
        if values.dtype.kind != "f":
            continue
        finite = values[np.isfinite(values)]
        if len(finite) and (finite == np.round(finite)).all() and (finite.abs() < 2**53).all():
            out[col] = values.round().astype("Int64")
    return out


#: First characters that make a spreadsheet program read a CSV cell as a formula (OWASP, CSV
#: injection): such text cells are written with a leading apostrophe.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _inert(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def csv_table(table: pd.DataFrame) -> pd.DataFrame:
    """The results table as ``results.csv`` holds it: :func:`export_table`, with every text cell
    that a spreadsheet would run as a formula neutralised (``results.json`` keeps the text)."""
    out = export_table(table)
    for col in out.columns:
        if out[col].dtype == object or pd.api.types.is_string_dtype(out[col]):
            out[col] = out[col].map(_inert)
    return out


def csv_text(table: pd.DataFrame, header: bool = True) -> str:
    """A table as every CSV planner writes it: :func:`csv_table`'s inert cells, and every text
    cell quoted, so a line break inside one (even a bare CR, which the minimal quoting leaves
    bare) never splits a row; without ``header``, the rows alone (a block appended to a file)."""
    return csv_table(table).to_csv(index=False, header=header, quoting=csv.QUOTE_NONNUMERIC)
