"""plan.xlsx printed as finance prints it: LibreOffice converts the workbook to PDF, and every
page's text must be 8 pt or larger, on landscape A4, the Summary's header and option columns
repeated on each of its pages.

Font sizes are read from the PDF's content stream (pypdf): the size set by ``Tf`` times the
scale of the text and page matrices, so a sheet printed at 40 % shows 11 pt text as 4.4 pt.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from openpyxl import Workbook
from openpyxl.utils import get_column_letter
from pypdf import PdfReader
from spreadsheet import recalculate_many, require
from test_workbook import SEED, rich_catalog

from planner.catalog import load_catalog
from planner.outputs.workbook import write_workbook
from planner.outputs.workbook.cells import pages_across, width_pt
from planner.plan.sweep import evaluate

#: The smallest text a printed page may carry [pt].
SMALLEST_PT = 8.0

#: A4 landscape [pt]: 297 × 210 mm.
A4_LANDSCAPE = (297 / 25.4 * 72, 210 / 25.4 * 72)


def page_texts(path: Path) -> list[list[tuple[float, str]]]:
    """Per page of a PDF, each piece of text with its printed size [pt]."""
    pages = []
    for page in PdfReader(path).pages:
        found: list[tuple[float, str]] = []

        def visit(
            text: str,
            cm: list[float],
            tm: list[float],
            font: object,
            size: float,
            found: list[tuple[float, str]] = found,
        ) -> None:
            if text.strip():  # the y scale of text matrix × page matrix gives the printed size
                c = tm[2] * cm[0] + tm[3] * cm[2]
                d = tm[2] * cm[1] + tm[3] * cm[3]
                found.append((size * math.hypot(c, d), text.strip()))

        page.extract_text(visitor_text=visit)
        pages.append(found)
    return pages


@pytest.fixture(scope="module")
def printed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The seed's workbook (with charts) and the rich catalog's, printed to PDF by LibreOffice."""
    require("libreoffice")
    folder = tmp_path_factory.mktemp("printed")
    books = {
        "seed": write_workbook(evaluate(load_catalog(SEED)), folder / "seed.xlsx"),
        "rich": write_workbook(
            evaluate(load_catalog(rich_catalog(folder / "rich-catalog"))), folder / "rich.xlsx"
        ),
    }
    pdfs = recalculate_many(list(books.values()), folder / "pdf", convert_to="pdf")
    return dict(zip(books, pdfs, strict=True))


@pytest.mark.parametrize("name", ["seed", "rich"])
def test_no_printed_text_is_smaller_than_8_pt(printed: dict[str, Path], name: str) -> None:
    pages = page_texts(printed[name])
    assert len(pages) > 3
    small = [
        (number, round(size, 1), text)
        for number, page in enumerate(pages, start=1)
        for size, text in page
        if size < SMALLEST_PT
    ]
    assert not small, small[:5]


@pytest.mark.parametrize("name", ["seed", "rich"])
def test_pages_are_landscape_a4(printed: dict[str, Path], name: str) -> None:
    for page in PdfReader(printed[name]).pages:
        size = (float(page.mediabox.width), float(page.mediabox.height))
        assert size == pytest.approx(A4_LANDSCAPE, abs=1)


def test_every_summary_page_repeats_the_header_and_the_option(printed: dict[str, Path]) -> None:
    """The Summary prints across several pages, each with the header row and the workload,
    model and option columns, its text at 8 pt or larger (it printed at 4 pt on one page)."""
    pages = page_texts(printed["rich"])
    summary = [
        [text for _, text in page]
        for page in pages
        if any(text in ("recommended", "runner-up") for _, text in page)  # table rows
    ]
    assert len(summary) >= 2
    for texts in summary:
        words = " ".join(texts).split()
        assert {"workload", "model", "option"} <= set(words)
        assert any(word in ("chat", "strict") for word in words)


@pytest.mark.parametrize(
    ("widths", "pages"),
    [
        ([20.0] * 5, 1),  # 20 characters are 109 pt: 544 pt fit one page at full size
        ([20.0] * 9, 1),  # 979 pt: one page of 784 pt at 80.1 %
        ([20.0] * 10, 2),  # 1,088 pt: 72 % on one page, so two (the first column on each)
        ([20.0] * 18, 3),  # 1,958 pt: 1,849 pt besides the first column, 872 pt a page
    ],
)
def test_pages_across(widths: list[float], pages: int) -> None:
    ws = Workbook().active
    for i, w in enumerate(widths, start=1):
        ws.column_dimensions[get_column_letter(i)].width = w
    assert width_pt(20) == pytest.approx(108.75)
    assert pages_across(ws, f"A:{get_column_letter(len(widths))}", "A:A") == pages
