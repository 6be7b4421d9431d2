"""plan.xlsx: live formulas that LibreOffice recomputes to the planner's numbers.

The expected values come from ``planner.sweep.evaluate`` (what ``results.csv`` holds) and, for the
Summary, from a ranking written here with pandas; the workbook's values come from its cached
values (no spreadsheet engine) or from LibreOffice after a forced recalculation
(:mod:`spreadsheet`). Every LibreOffice conversion of the module happens in one ``soffice``
start (about two seconds each otherwise).
"""

from __future__ import annotations

import dataclasses
import math
import re
import shutil
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import openpyxl
import pandas as pd
import pytest
import yaml
from openpyxl.utils import get_column_letter
from spreadsheet import computed_values, recalculate_many, soffice

from planner import workbook
from planner.catalog import load_catalog
from planner.sweep import Results, evaluate
from planner.tables import GLOBALS
from planner.workbook import Ranking, cached_value_xml, write_workbook

SEED = Path(__file__).resolve().parent.parent / "catalogs" / "examples" / "seed"
INJECTIONS = ['=HYPERLINK("http://example.com","x")', "+1+1", "-2+3", "@SUM(1,2)"]
TRICKY_NAME = 'Invented 13B <dense> & "quoted"'

# Entries added to a copy of the seed: two more devices (one without fp8 and without price or
# interconnect: #N/A paths and the compute fallback), a model, an fp8 precision, a workload.
EXTRA: dict[str, list[dict[str, Any]]] = {
    "hardware": [
        {
            "id": "big-80gib",
            "name": INJECTIONS[0],
            "memory": "80 GiB",
            "memory_bandwidth": "3.35 TB/s",
            "compute": {"bf16": "989 TFLOPS", "fp8": "1979 TFLOPS"},
            "interconnect_bandwidth": "450 GB/s",
            "power": "700 W",
            "price": {"purchase_usd": 30000.0, "cloud_usd_per_hour": 3.0},
            "source": INJECTIONS[3],
        },
        {
            "id": "mid-48gb",
            "name": INJECTIONS[1],
            "memory": "48 GB",
            "memory_bandwidth": "864 GB/s",
            "compute": {"bf16": "362 TFLOPS"},
            "power": "350 W",
            "source": INJECTIONS[2],
        },
    ],
    "models": [
        {
            "id": "invented-13b",
            "name": TRICKY_NAME,
            "parameters": 13_000_000_000,
            "layers": 40,
            "kv_heads": 40,
            "head_dim": 128,
            "attention_heads": 40,
            "hidden_size": 5120,
            "source": "invented",
        }
    ],
    "precisions": [
        {
            "id": "fp8",
            "name": "FP8 weights and cache",
            "weight_bytes_per_param": 1,
            "kv_bytes_per_value": 1,
            "compute": "fp8",
            "compute_fallback": "bf16",
        }
    ],
    "workloads": [
        {
            "id": "chat",
            "name": "chat",
            "prompt_tokens": 1024,
            "max_output_tokens": 512,
            "concurrency": 64,
        }
    ],
}


# Catalog folders -------------------------------------------------------------------------------


def _edit_yaml(folder: Path, stem: str, change: Callable[[dict[str, Any]], None]) -> None:
    path = folder / f"{stem}.yaml"
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))


def _entry(data: dict[str, Any], section: str, entry_id: str) -> dict[str, Any]:
    return next(e for e in data[section] if e["id"] == entry_id)


def rich_catalog(folder: Path) -> Path:
    """A copy of the seed with the entries of :data:`EXTRA` added."""
    shutil.copytree(SEED, folder)
    for section, entries in EXTRA.items():
        _edit_yaml(folder, section, lambda d, s=section, e=entries: d[s].extend(e))
    return folder


def changed_catalog(source: Path, folder: Path) -> Path:
    """``source`` with a device's memory, a model's KV heads, the reserve and a workload's
    maximum output changed: what the live-workbook test types into the workbook."""
    shutil.copytree(source, folder)
    _edit_yaml(
        folder, "hardware", lambda d: _entry(d, "hardware", "big-80gib").update(memory="40 GiB")
    )
    _edit_yaml(folder, "models", lambda d: _entry(d, "models", "invented-7b").update(kv_heads=4))
    _edit_yaml(folder, "assumptions", lambda d: d["assumptions"].update(reserve="6 GiB"))
    _edit_yaml(
        folder, "workloads", lambda d: _entry(d, "workloads", "chat").update(max_output_tokens=3000)
    )
    return folder


def planted_catalog(folder: Path) -> Path:
    """The seed with the device's usable memory at 12 GiB (the cell planted in the XML)."""
    shutil.copytree(SEED, folder)
    _edit_yaml(
        folder,
        "hardware",
        lambda d: _entry(d, "hardware", "seed-16gib").update(usable_memory="12 GiB"),
    )
    return folder


# Reading workbooks back ------------------------------------------------------------------------


def same(expected: Any, got: Any) -> bool:
    """Whether a workbook value equals a planner value: numbers to 1e-9 relative, booleans and
    text exactly, NaN as ``#N/A``; an empty text reads back from a file as None."""
    if isinstance(expected, str):
        return got == expected or (expected == "" and got is None)
    if isinstance(expected, (bool, np.bool_)):
        return isinstance(got, bool) and got == bool(expected)
    if expected is None:
        return got is None
    number = float(expected)
    if math.isnan(number):
        return got == "#N/A"
    if math.isinf(number):
        return got == "#DIV/0!"
    if isinstance(got, bool) or not isinstance(got, (int, float)):
        return False
    return math.isclose(got, number, rel_tol=1e-9, abs_tol=1e-12)


def assert_plan_equals(rows: list[list[Any]], table: pd.DataFrame) -> None:
    """Every cell of a Plan sheet equals the planner's table (header and order included)."""
    assert rows[0] == list(table.columns)
    assert len(rows) - 1 == len(table)
    wrong = [
        (i + 2, name, expected, got)
        for i, record in enumerate(table.itertuples(index=False))
        for name, expected, got in zip(table.columns, record, rows[i + 1], strict=True)
        if not same(expected, got)
    ]
    assert not wrong, (
        f"{len(wrong)} Plan cells differ, e.g. (row, column, planner, workbook): {wrong[:8]}"
    )


def assert_sheets_equal(expected: list[list[Any]], got: list[list[Any]]) -> None:
    """Two read-back sheets hold the same values (numbers to 1e-9 relative)."""
    assert len(expected) == len(got)
    for r, (a, b) in enumerate(zip(expected, got, strict=True), start=1):
        width = max(len(a), len(b))
        a, b = list(a) + [None] * (width - len(a)), list(b) + [None] * (width - len(b))
        for c, (x, y) in enumerate(zip(a, b, strict=True), start=1):
            assert x == y or (x is not None and same(x, y)) or (x == "" and y is None), (
                f"{get_column_letter(c)}{r}: {x!r} != {y!r}"
            )


def cached(path: Path, sheet: str) -> list[list[Any]]:
    """The values stored in the file (no recalculation)."""
    return computed_values(path, sheet)


def summary_options(rows: list[list[Any]]) -> dict[str, list[tuple[Any, ...]]]:
    """Summary options by workload: (hardware, model, precision) of each; 'none' rows left out."""
    start = next(i for i, row in enumerate(rows) if row and row[0] == "workload") + 1
    header = rows[start - 1]
    picks: dict[str, list[tuple[Any, ...]]] = {}
    for row in rows[start:]:
        if not row or row[0] is None:
            break
        picks.setdefault(row[0], [])
        if row[header.index("Plan row")]:
            picks[row[0]].append(
                tuple(row[header.index(k)] for k in ("hardware", "model", "precision"))
            )
    return picks


def expected_options(
    table: pd.DataFrame, column: str, order: str, among: str = "fits", top: int = 3
) -> dict[str, list[tuple[Any, ...]]]:
    """The ranking the Summary promises, computed here with pandas."""
    sign = -1 if order == "highest" else 1
    frame = table.assign(_key=sign * table[column].astype(float), _row=np.arange(len(table)))
    frame = frame[frame[among].astype(bool) & np.isfinite(frame["_key"])]
    picks: dict[str, list[tuple[Any, ...]]] = {}
    for workload in table["workload"].unique():
        best = frame[frame.workload == workload].sort_values(["_key", "_row"]).head(top)
        picks[workload] = list(
            best[["hardware", "model", "precision"]].itertuples(index=False, name=None)
        )
    return picks


def input_changes(before: Results, after: Results) -> list[tuple[str, str, Any]]:
    """(sheet, cell, new value) of every input cell that differs between two evaluations."""
    changes = []
    for sheet, frame in before.inputs.sheets.items():
        new = after.inputs.sheets[sheet]
        assert list(frame.columns) == list(new.columns) and list(frame["id"]) == list(new["id"])
        for r in range(len(frame)):
            for c in range(len(frame.columns)):
                old, value = frame.iat[r, c], new.iat[r, c]
                if not (old == value or (pd.isna(old) and pd.isna(value))):
                    changes.append((sheet, f"{get_column_letter(c + 1)}{r + 2}", value))
    for i, g in enumerate(GLOBALS, start=2):
        old, value = before.inputs.globals[g.cell], after.inputs.globals[g.cell]
        if not (old == value or (math.isnan(old) and math.isnan(value))):
            changes.append(("Assumptions", f"B{i}", value))
    return changes


def edit_with_openpyxl(path: Path, changes: list[tuple[str, str, Any]], out: Path) -> None:
    """Type ``changes`` into a copy of the workbook with openpyxl (normal mode) and save it."""
    book = openpyxl.load_workbook(path)
    for sheet, cell, value in changes:
        book[sheet][cell] = value.item() if hasattr(value, "item") else value
    book["Summary"]["B2"] = "max_sequences"
    book["Summary"]["D2"] = "highest"
    book.save(out)


def plant(path: Path, sheet: str, cell: str, value: float, out: Path) -> None:
    """Copy the workbook with one constant cell's XML replaced, keeping every cached value."""
    with zipfile.ZipFile(path) as source:
        member = workbook.sheet_members(source)[sheet]
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
            for info in source.infolist():
                data = source.read(info.filename)
                if info.filename == member:
                    pattern = re.compile(rb'<c r="' + cell.encode() + rb'"([^>]*)>(.*?)</c>')
                    data, n = pattern.subn(
                        lambda m: (
                            b'<c r="'
                            + cell.encode()
                            + b'" t="n"><v>'
                            + str(value).encode()
                            + b"</v></c>"
                        ),
                        data,
                    )
                    assert n == 1
                target.writestr(info, data)


def stale(results: Results) -> Results:
    """``results`` with every computed value wrong (keys kept): planted cached values."""
    table = results.table.copy()
    keys = set(results.key_columns)
    for name in table.columns:
        if name in keys:
            continue
        column = table[name]
        if column.dtype == bool:
            table[name] = ~column
        elif column.dtype.kind in "fi":
            table[name] = column.astype(float) * 3 + 1
        else:
            table[name] = "stale"
    return dataclasses.replace(results, table=table)


# Fixtures ------------------------------------------------------------------------------------


@dataclasses.dataclass
class Built:
    folder: Path
    seed: Results
    rich: Results
    planted: Results
    changed: Results
    files: dict[str, Path]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The module's workbooks: seed, rich, stale caches, a planted input, an openpyxl edit."""
    folder = tmp_path_factory.mktemp("workbooks")
    rich_dir = rich_catalog(folder / "rich-catalog")
    seed = evaluate(load_catalog(SEED))
    rich = evaluate(load_catalog(rich_dir))
    planted = evaluate(load_catalog(planted_catalog(folder / "planted-catalog")))
    changed = evaluate(load_catalog(changed_catalog(rich_dir, folder / "changed-catalog")))
    files = {
        "seed": write_workbook(seed, folder / "seed.xlsx"),
        "rich": write_workbook(rich, folder / "rich.xlsx"),
        "stale": write_workbook(stale(rich), folder / "stale.xlsx"),
    }
    column = list(seed.inputs.sheets["Hardware"].columns).index("memory_gib") + 1
    files["planted"] = folder / "planted.xlsx"
    plant(files["seed"], "Hardware", f"{get_column_letter(column)}2", 12, files["planted"])
    files["edited"] = folder / "edited.xlsx"
    edit_with_openpyxl(files["rich"], input_changes(rich, changed), files["edited"])
    return Built(folder, seed, rich, planted, changed, files)


@pytest.fixture(scope="module")
def recalculated(built: Built) -> dict[str, Path]:
    """Every workbook of :func:`built` recalculated by LibreOffice, in one start."""
    if soffice() is None:
        pytest.skip("LibreOffice (soffice) is not installed")
    names = list(built.files)
    outputs = recalculate_many([built.files[n] for n in names], built.folder / "recalculated")
    return dict(zip(names, outputs, strict=True))


# Without a spreadsheet engine --------------------------------------------------------------------


def test_every_plan_cell_right_of_the_keys_is_a_formula(built: Built) -> None:
    book = openpyxl.load_workbook(built.files["rich"])
    ws = book["Plan"]
    header = [c.value for c in ws[1]]
    assert header == list(built.rich.table.columns)
    keys = set(built.rich.key_columns)
    for row in ws.iter_rows(min_row=2):
        for name, cell in zip(header, row, strict=True):
            if name in keys:
                assert cell.data_type != "f" and cell.value is not None
            else:
                assert cell.data_type == "f" and str(cell.value).startswith("="), (name, cell.value)
    assert ws.max_row == len(built.rich.table) + 1


@pytest.mark.parametrize("name", ["seed", "rich"])
def test_cached_values_are_the_planner_values(built: Built, name: str) -> None:
    results = {"seed": built.seed, "rich": built.rich}[name]
    assert_plan_equals(cached(built.files[name], "Plan"), results.table)


def test_plan_rows_written_in_several_chunks(built: Built, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(workbook, "_ROWS_PER_CHUNK", 7)
    path = write_workbook(built.rich, tmp_path / "chunks.xlsx")
    assert_plan_equals(cached(path, "Plan"), built.rich.table)


def test_catalog_text_is_stored_as_text_never_as_a_formula(built: Built) -> None:
    book = openpyxl.load_workbook(built.files["rich"])
    cells = [c for ws in book for row in ws.iter_rows() for c in row if c.value in INJECTIONS]
    assert {c.value for c in cells} == set(INJECTIONS)
    assert all(c.data_type == "s" for c in cells)
    names = [c.value for c in book["Models"]["B"]]
    assert TRICKY_NAME in names


def test_input_sheets_are_filtered_tables_with_frozen_headers(built: Built) -> None:
    book = openpyxl.load_workbook(built.files["rich"])
    for name in ("Hardware", "Models", "Precisions", "Workloads", "Assumptions"):
        ws = book[name]
        table = ws.tables[name]
        assert table.ref == f"A1:{get_column_letter(ws.max_column)}{ws.max_row}"
        assert table.autoFilter is not None
        assert ws.freeze_panes == "B2"
        assert ws["A1"].value == "id"
    assert [c.value for c in book["Hardware"][1]] == list(
        built.rich.inputs.sheets["Hardware"].columns
    )
    for g in GLOBALS:
        sheet, cell = next(iter(book.defined_names[g.cell].destinations))
        value, expected = (
            book[sheet][cell.replace("$", "")].value,
            built.rich.inputs.globals[g.cell],
        )
        assert value == "=NA()" if math.isnan(expected) else value == expected


def test_misfits_are_marked_by_conditional_formatting(built: Built) -> None:
    ws = openpyxl.load_workbook(built.files["rich"])["Plan"]
    rules = [r for cf in ws.conditional_formatting for r in cf.rules]
    fits = get_column_letter(list(built.rich.table.columns).index("fits") + 1)
    assert any(r.formula == [f"${fits}2=FALSE()"] for r in rules)


def test_summary_of_the_seed_by_hand(built: Built) -> None:
    """Only invented-4gib on seed-16gib serves seed-4k (16 sequences); nothing serves the other."""
    rows = cached(built.files["seed"], "Summary")
    assert summary_options(rows) == {
        "seed-4k": [("seed-16gib", "invented-4gib", "bf16")],
        "seed-4k-prompt-1k-out": [],
    }
    start = next(i for i, row in enumerate(rows) if row and row[0] == "workload")
    header, best, none = rows[start], rows[start + 1], rows[start + 4]
    assert best[header.index("max_sequences")] == 16
    assert best[header.index("qualifying candidates")] == 1
    assert none[header.index("hardware")] == "none fits"


def test_summary_cache_follows_the_ranking(built: Built) -> None:
    assert summary_options(cached(built.files["rich"], "Summary")) == expected_options(
        built.rich.table, "weight_read_s", "lowest"
    )


def test_summary_ranks_by_another_column(built: Built, tmp_path: Path) -> None:
    path = write_workbook(
        built.rich, tmp_path / "by.xlsx", ranking=Ranking("max_sequences", "highest")
    )
    rows = cached(path, "Summary")
    assert rows[1][1:4] == ["max_sequences", "order", "highest"]
    assert summary_options(rows) == expected_options(built.rich.table, "max_sequences", "highest")


def test_summary_has_native_charts(built: Built) -> None:
    with zipfile.ZipFile(built.files["rich"]) as archive:
        charts = [n for n in archive.namelist() if n.startswith("xl/charts/chart")]
        assert len(charts) == 2
        xml = archive.read(charts[0]).decode()
    assert "Summary" in xml and "barChart" in xml


def test_a_plan_without_fits_still_writes(built: Built, tmp_path: Path) -> None:
    """Metrics are generic: a plan of a few metrics (no 'fits') still makes a workbook."""
    full = built.seed
    by_name = {m.name: m for m in full.metrics}
    keep: set[str] = set()
    looked_up_by = [n for lk in full.lookups for n in (lk.key, lk.column_from, lk.fallback_from)]
    pending = ["weight_gib", *(n for n in looked_up_by if n)]
    while pending:
        name = pending.pop()
        if name in by_name and name not in keep:
            keep.add(name)
            pending += list(by_name[name].inputs)
    metrics = [m for m in full.metrics if m.name in keep]
    columns = [c for c in full.table.columns if c not in by_name or c in keep]
    results = dataclasses.replace(full, table=full.table[columns], metrics=metrics)
    path = write_workbook(results, tmp_path / "small.xlsx")
    assert_plan_equals(cached(path, "Plan"), results.table)
    assert "no candidates" in cached(path, "Summary")[1][0]


@pytest.mark.parametrize(
    ("value", "xml"),
    [
        (True, (' t="b"', "1")),
        (np.bool_(False), (' t="b"', "0")),
        ("a<b & c", (' t="str"', "a&lt;b &amp; c")),
        (float("nan"), (' t="e"', "#N/A")),
        (float("inf"), (' t="e"', "#DIV/0!")),
        (17179869184.0, ("", "17179869184")),
        (0.1, ("", "0.1")),
        (np.int64(3), ("", "3")),
    ],
)
def test_cached_value_xml(value: Any, xml: tuple[str, str]) -> None:
    assert cached_value_xml(value) == xml


# With LibreOffice ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["seed", "rich"])
def test_libreoffice_recomputes_every_plan_cell(
    built: Built, recalculated: dict[str, Path], name: str
) -> None:
    results = {"seed": built.seed, "rich": built.rich}[name]
    assert_plan_equals(computed_values(recalculated[name], "Plan"), results.table)


@pytest.mark.parametrize("name", ["seed", "rich"])
def test_libreoffice_recomputes_the_summary_to_its_cached_values(
    built: Built, recalculated: dict[str, Path], name: str
) -> None:
    assert_sheets_equal(
        cached(built.files[name], "Summary"), computed_values(recalculated[name], "Summary")
    )


def test_stale_cached_values_are_recomputed(built: Built, recalculated: dict[str, Path]) -> None:
    """Proves that the helper recalculates: every planted cached value was wrong."""
    with pytest.raises(AssertionError):
        assert_plan_equals(cached(built.files["stale"], "Plan"), built.rich.table)
    assert_plan_equals(computed_values(recalculated["stale"], "Plan"), built.rich.table)
    assert_sheets_equal(
        cached(built.files["rich"], "Summary"), computed_values(recalculated["stale"], "Summary")
    )


def test_an_input_planted_under_cached_values_recomputes(
    built: Built, recalculated: dict[str, Path]
) -> None:
    assert_plan_equals(cached(built.files["planted"], "Plan"), built.seed.table)  # still stale
    assert_plan_equals(computed_values(recalculated["planted"], "Plan"), built.planted.table)
    assert summary_options(computed_values(recalculated["planted"], "Summary")) == expected_options(
        built.planted.table, "weight_read_s", "lowest"
    )


def test_edited_workbook_recomputes_like_the_changed_catalog(
    built: Built, recalculated: dict[str, Path]
) -> None:
    changes = {(sheet, cell) for sheet, cell, _ in input_changes(built.rich, built.changed)}
    headers = {s: list(f.columns) for s, f in built.rich.inputs.sheets.items()}

    def cell(sheet: str, entry: str, column: str) -> tuple[str, str]:
        row = list(built.rich.inputs.sheets[sheet]["id"]).index(entry) + 2
        return sheet, f"{get_column_letter(headers[sheet].index(column) + 1)}{row}"

    assert cell("Hardware", "big-80gib", "memory_gib") in changes
    assert cell("Models", "invented-7b", "kv_heads") in changes
    assert cell("Workloads", "chat", "max_output_tokens") in changes
    assert any(sheet == "Assumptions" for sheet, _ in changes)
    fits_before, fits_after = built.rich.table["fits"], built.changed.table["fits"]
    assert (fits_before != fits_after).any()  # the edits change which candidates fit
    assert_plan_equals(computed_values(recalculated["edited"], "Plan"), built.changed.table)
    summary = computed_values(recalculated["edited"], "Summary")
    assert summary_options(summary) == expected_options(
        built.changed.table, "max_sequences", "highest"
    )


def test_catalog_text_survives_libreoffice_as_text(recalculated: dict[str, Path]) -> None:
    for name in ("rich", "edited"):
        book = openpyxl.load_workbook(recalculated[name])
        cells = {
            c.value: c
            for ws in book
            for row in ws.iter_rows()
            for c in row
            if c.value in INJECTIONS
        }
        assert set(cells) == set(INJECTIONS), name
        assert all(c.data_type == "s" for c in cells.values()), name
