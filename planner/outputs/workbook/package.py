"""Post-processing the saved file: the Plan's rows written as XML, and cached values.

openpyxl writes the workbook's frame and one template Plan row; the data rows are then streamed
into the sheet's XML (each computed column one shared formula, stored without its leading "=" as
OOXML wants), and every formula cell gets the value the planner computed for it.
"""

from __future__ import annotations

import io
import math
import os
import re
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from xml.etree import ElementTree
from xml.sax.saxutils import escape

import numpy as np
import pandas as pd

from planner.outputs.workbook.plan import PlanRows

_MAIN_NS = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"

_REL_NS = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"

_PKG_NS = "{http://schemas.openxmlformats.org/package/2006/relationships}"

_TEMPLATE_ROW = re.compile(rb'<row r="2"[^>]*>.*?</row>', re.DOTALL)

_TEMPLATE_CELL = re.compile(rb'<c r="([A-Z]+)2"([^>]*)>')

_STYLE = re.compile(rb' s="[0-9]+"')

_FORMULA_CELL = re.compile(rb'<c r="([A-Z]+[0-9]+)"([^>]*)><f([^>]*)>([^<]*)</f><v\s*/></c>')

_ROWS_PER_CHUNK = 500

#: zlib level of the file. Measured on the shipped run's workbook (73 MB of XML): level 3
#: compresses it in 0.40 s of CPU to 9.8 MB, level 6 (zlib's default) in 0.91 s to 8.4 MB, level
#: 1 in 0.28 s to 12.3 MB; 3 halves the time for a sixth more bytes.
COMPRESSION = 3


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
        rows_here = [str(r) for r in range(start + 2, stop + 2)]
        # each column's cells as text, a column at a time; then joined row by row
        texts = [_column_cells(c, start, stop, rows_here) for c in columns]
        parts = [
            f'<row r="{r}">{"".join(row)}</row>'
            for r, row in zip(rows_here, zip(*texts, strict=True), strict=True)
        ]
        yield "".join(parts).encode()


def _column_cells(column: _ColumnXml, start: int, stop: int, rows: list[str]) -> list[str]:
    """One column's cells of rows ``start`` to ``stop`` (0-based data rows; ``rows`` their
    sheet row numbers) as XML, ``""`` for a constant left out."""
    head, style = column.letter, column.style
    if column.master is None:  # constants may be None (left out); cached values never
        cells = (constant_xml(v) for v in column.values[start:stop].tolist())
        return [
            "" if cell is None else f'<c r="{head}{r}"{style}{cell[0]}>{cell[1]}</c>'
            for r, cell in zip(rows, cells, strict=True)
        ]
    follower = column.follower
    out = [
        f'<c r="{head}{r}"{style}{kind}>{follower}<v>{text}</v></c>'
        for r, (kind, text) in zip(rows, _cached_column(column.values[start:stop]), strict=True)
    ]
    if start == 0 and out:  # the shared formula's master, in the first data row
        kind, text = _cached_column(column.values[0:1])[0]
        out[0] = f'<c r="{head}{rows[0]}"{style}{kind}>{column.master}<v>{text}</v></c>'
    return out


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
