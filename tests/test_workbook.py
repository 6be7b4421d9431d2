"""plan.xlsx: live formulas that LibreOffice recomputes to the planner's numbers.

The expected values come from ``planner.plan.sweep.evaluate`` (what ``results.csv`` holds) and, for
the Summary, from ``planner.plan.recommend`` (the recommendation); the workbook's values come from
its cached values (no spreadsheet engine) or from LibreOffice after a forced recalculation
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
from openpyxl.formula.translate import Translator
from openpyxl.utils import get_column_letter
from spreadsheet import ENGINES, computed_values, recalculate_many, require
from test_simulated_inputs import sim_row

from planner.catalog import load_catalog
from planner.model.capacity import STALE_SIMULATION
from planner.outputs import workbook
from planner.outputs.workbook import cached_value_xml, write_workbook
from planner.plan import recommend
from planner.plan.sweep import Results, evaluate
from planner.plan.tables import CANDIDATE, GLOBALS, SIMULATED
from planner.resources import shipped_catalogs

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
        },
        {  # a target almost nothing meets: groups with one eligible option and with none
            "id": "strict",
            "name": "strict",
            "prompt_tokens": 1024,
            "max_output_tokens": 256,
            "concurrency": 8,
            "targets": {"itl_p95": "1 ms"},
        },
    ],
}

#: Prices for the seed's device and an electricity rate: most options get a cost.
SEED_DEVICE_PRICE = {"purchase_usd": 8000.0, "cloud_usd_per_hour": 1.0}
ELECTRICITY_USD_PER_KWH = 0.1
#: The price edit: the seed's device at this purchase price loses the groups it won.
EDITED_PURCHASE_USD = 40000.0


# Catalog folders -------------------------------------------------------------------------------


def _edit_yaml(folder: Path, stem: str, change: Callable[[dict[str, Any]], None]) -> None:
    path = folder / f"{stem}.yaml"
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))


def _entry(data: dict[str, Any], section: str, entry_id: str) -> dict[str, Any]:
    return next(e for e in data[section] if e["id"] == entry_id)


def rich_catalog(folder: Path) -> Path:
    """A copy of the seed with the entries of :data:`EXTRA` added, prices for the seed's device
    (with a power draw) and an electricity rate."""
    shutil.copytree(SEED, folder)
    for section, entries in EXTRA.items():
        _edit_yaml(folder, section, lambda d, s=section, e=entries: d[s].extend(e))
    _edit_yaml(
        folder,
        "hardware",
        lambda d: _entry(d, "hardware", "seed-16gib").update(
            power="300 W", price=dict(SEED_DEVICE_PRICE)
        ),
    )
    _edit_yaml(
        folder,
        "assumptions",
        lambda d: d["assumptions"].update(electricity_usd_per_kwh=ELECTRICITY_USD_PER_KWH),
    )
    return folder


def priced_catalog(source: Path, folder: Path) -> Path:
    """``source`` with one price changed: the seed device's purchase price."""
    shutil.copytree(source, folder)
    _edit_yaml(
        folder,
        "hardware",
        lambda d: _entry(d, "hardware", "seed-16gib")["price"].update(
            purchase_usd=EDITED_PURCHASE_USD
        ),
    )
    return folder


#: The serving engine the ``engine`` workbook models (its pool becomes the KV budget).
ENGINE = {"name": "vllm", "version": "0.10.1", "max_num_batched_tokens": 4096}

#: The other engines' profiles, each sizing its pool by its own rule (SGLang's default share
#: by its reservation, TensorRT-LLM's share of what its profiling pass leaves).
OTHER_ENGINES = {
    "sglang": {"name": "sglang", "version": "0.5.4"},
    "tensorrt-llm": {"name": "tensorrt-llm", "version": "1.0.0"},
}

#: Fits of the engine catalog's devices: one on its engine release (applied), one on another
#: (not applied). The latency points miss by +10 % and −10 %: a root mean square of 10 %.
CALIBRATION = """\
calibration:
  - hardware: big-80gib
    engine: vllm 0.10
    bandwidth_efficiency: 0.63
    step_overhead: 3.5 ms
    compute_efficiency: 0.41
    activation_scale: 1.2
    non_torch: 0.5 GiB
    non_torch_tensor_parallel: 2 GiB
    points:
      - {measurement: bench-8, figure: itl_s.p50, measured: 0.010, fitted: 0.011}
      - {measurement: bench-64, figure: itl_s.p50, measured: 0.020, fitted: 0.018}
      - {measurement: startup, figure: activation_peak_bytes, measured: 1.0e+9, fitted: 1.5e+9}
  - hardware: mid-48gb
    engine: vllm 0.7
    bandwidth_efficiency: 0.5
    points:
      - {measurement: bench-old, figure: itl_s.p50, measured: 0.020, fitted: 0.020}
"""


def engine_catalog(source: Path, folder: Path, engine: dict[str, Any] | None = None) -> Path:
    """``source`` with a serving engine profile in its assumptions (:data:`ENGINE` unless
    given), a model described by its architecture (the shipped Llama 3.1 8B) whose activation
    peak the engine can size, and a calibration of one device (:data:`CALIBRATION`)."""
    shutil.copytree(source, folder)
    profile = dict(ENGINE if engine is None else engine)
    _edit_yaml(
        folder,
        "assumptions",
        lambda d: d["assumptions"].update(engine=profile, rack_power="5 kW", site_power="100 kW"),
    )
    shipped = yaml.safe_load((shipped_catalogs() / "models.yaml").read_text())["models"]
    llama = next(m for m in shipped if m["id"] == "llama-3.1-8b")
    _edit_yaml(folder, "models", lambda d: d["models"].append(llama))
    (folder / "calibration.yaml").write_text(CALIBRATION)
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


#: A device finance adds by hand: priced to win the groups its Plan row joins.
NEW_DEVICE: dict[str, Any] = {
    "id": "new-96gib",
    "name": "Added by finance",
    "memory": "96 GiB",
    "memory_bandwidth": "4 TB/s",
    "compute": {"bf16": "1000 TFLOPS", "fp8": "2000 TFLOPS"},
    "interconnect_bandwidth": "450 GB/s",
    "power": "600 W",
    "price": {"purchase_usd": 2000.0, "cloud_usd_per_hour": 0.5},
}
#: The Plan row copied for the new device: (hardware, model, precision, workload, TP).
COPIED = ("big-80gib", "invented-7b", "bf16", "chat", 1)


#: The optional inputs the rich catalog's mid-48gb lacks (its Plan rows show "n/a" where they
#: count), as finance would type them.
FILLED: dict[str, Any] = {
    "interconnect_bandwidth": "64 GB/s",
    "price": {"purchase_usd": 7000.0, "cloud_usd_per_hour": 0.8},
}


def filled_catalog(source: Path, folder: Path) -> Path:
    """``source`` with :data:`FILLED` given to mid-48gb."""
    shutil.copytree(source, folder)
    _edit_yaml(folder, "hardware", lambda d: _entry(d, "hardware", "mid-48gb").update(FILLED))
    return folder


def added_catalog(source: Path, folder: Path) -> Path:
    """``source`` with :data:`NEW_DEVICE` appended to hardware.yaml."""
    shutil.copytree(source, folder)
    _edit_yaml(folder, "hardware", lambda d: d["hardware"].append(dict(NEW_DEVICE)))
    return folder


def edited_catalog(source: Path, folder: Path, device: str, **fields: Any) -> Path:
    """``source`` with fields of one device changed (``price`` updated, not replaced)."""
    shutil.copytree(source, folder)

    def change(d: dict[str, Any]) -> None:
        entry = _entry(d, "hardware", device)
        for key, value in fields.items():
            if key == "price":
                entry["price"].update(value)
            else:
                entry[key] = value

    _edit_yaml(folder, "hardware", change)
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


NOT_SIMULATED = "not simulated"

#: What a Plan cell shows where the planner has no number (an optional input left out).
MISSING = "n/a"


def expected_plan(results: Results) -> pd.DataFrame:
    """What every Plan cell should compute: the planner's table, where a simulated figure of a
    candidate missing from the Simulated sheet reads "not simulated" instead of a missing value
    (a text a SUM passes over; ``#N/A`` would break it). Text columns are plain objects here,
    so that a test can set any value."""
    table = results.table.copy()
    for name in table.select_dtypes("category"):
        table[name] = table[name].astype(object)
    listed = table[CANDIDATE].isin(set(results.inputs.sheets[SIMULATED]["id"]))
    for lookup in results.lookups:
        if lookup.key == CANDIDATE:
            column = table[lookup.name].astype(object)
            assert column[~listed].isna().all()
            column[~listed] = NOT_SIMULATED
            table[lookup.name] = column
    # a computed number the planner does not have reads "n/a", never the error #N/A
    keys = set(results.key_columns)
    for name in table.columns:
        column = table[name]
        if name in keys or column.dtype == bool:
            continue
        missing = np.array([isinstance(v, float) and math.isnan(v) for v in column], dtype=bool)
        if missing.any():
            column = column.astype(object)
            column[missing] = MISSING
            table[name] = column
    return table


def assert_plan_equals(rows: list[list[Any]], table: pd.DataFrame | Results) -> None:
    """Every cell of a Plan sheet equals the planner's table (header and order included)."""
    if isinstance(table, Results):
        table = expected_plan(table)
    rows, below = rows[: len(table) + 1], rows[len(table) + 1 :]
    # below the data: empty rows for options added by hand, then the printing note
    assert below and str(below[-1][0]).startswith("The Plan (")
    assert all(v in (None, "") for row in below[:-1] for v in row)
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
            assert x == y or (x is not None and same(x, y)) or {x, y} == {"", None}, (
                f"{get_column_letter(c)}{r}: {x!r} != {y!r}"
            )


def cached(path: Path, sheet: str) -> list[list[Any]]:
    """The values stored in the file (no recalculation)."""
    return computed_values(path, sheet)


#: Summary header texts of the Plan columns it shows, back to the Plan names.
TITLE_KEYS = {title: key for key, title in workbook.TITLES.items()}


def summary_by_group(rows: list[list[Any]]) -> dict[tuple[str, str], dict[str, dict[str, Any]]]:
    """The Summary's recommendation table: per (workload, model), in sheet order, each option's
    row ('recommended', 'runner-up') as a dict by column (Plan names for what the Plan gives)."""
    start = next(i for i, row in enumerate(rows) if row and row[0] == "workload")
    keys = [TITLE_KEYS.get(h, h) for h in rows[start]]
    groups: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for row in rows[start + 1 :]:
        if not row or row[0] is None:
            break
        record = dict(zip(keys, row, strict=False))
        groups.setdefault((record["workload"], record["model"]), {})[record["option"]] = record
    return groups


def shown_same(expected: Any, got: Any) -> bool:
    """:func:`same`, where the Summary shows a missing number as 'n/a'."""
    if expected is None or (isinstance(expected, float) and math.isnan(expected)):
        return got == workbook.NOT_AVAILABLE
    return same(expected, got)


def assert_recommendation(rows: list[list[Any]], table: pd.DataFrame) -> None:
    """The Summary shows ``planner.plan.recommend``'s recommendation of ``table``: the groups in
    plan order, each winner and runner-up with every shown column, the counts, and a line
    saying so where no option (or no runner-up) is eligible."""
    got = summary_by_group(rows)
    expected = recommend.recommendations(table)
    assert list(got) == list(zip(expected["workload"], expected["model"], strict=True))
    ranks = recommend.ranked(table)
    wrong = []
    for _, exp in expected.iterrows():
        key = (exp["workload"], exp["model"])
        winner, runner = got[key]["recommended"], got[key]["runner-up"]
        assert (winner["options"], winner["eligible options"]) == (exp["options"], exp["eligible"])
        if pd.isna(exp["hardware"]):
            assert winner["hardware"] == "no eligible option", key
            assert all(winner[c] in (None, "") for c in workbook.SHOWN[1:]), key
            assert winner["why"].startswith("ruled out: "), key
            assert runner["hardware"] in (None, "") and runner["why"] in (None, ""), key
            continue
        assert winner["why"] == "lowest cost over the period"
        group = ranks[(ranks["workload"] == key[0]) & (ranks["model"] == key[1])]
        for option, record, rank in (("", winner, 1), ("runner_up_", runner, 2)):
            picked = group[group["rank"] == rank]
            if picked.empty:
                assert pd.isna(exp[f"{option}hardware"])
                assert record["hardware"] == "no runner-up", key
                assert record["why"] == "the only eligible option is recommended", key
                continue
            for column in workbook.SHOWN:
                # recommendations() where it has the column, the ranked row otherwise
                value = exp.get(f"{option}{column}", picked.iloc[0][column])
                if column == "break_even_month" and pd.isna(value):
                    # no break-even: "never" where renting costs no more than operating
                    rent, opex = picked.iloc[0][["cloud_usd_per_month", "opex_usd_per_month"]]
                    value = "never" if pd.notna(rent) and rent <= opex else value
                if not shown_same(value, record[column]):
                    wrong.append((key, option or "winner", column, value, record[column]))
    assert not wrong, (
        f"{len(wrong)} Summary cells differ (group, option, column, expected, got): {wrong[:6]}"
    )


def winners(table: pd.DataFrame) -> dict[tuple[str, str], Any]:
    """(hardware, precision, tensor parallel) of each group's recommended option, or None."""
    frame = recommend.recommendations(table)
    return {
        (r["workload"], r["model"]): None
        if pd.isna(r["hardware"])
        else (r["hardware"], r["precision"], int(r["tensor_parallel"]))
        for _, r in frame.iterrows()
    }


def input_changes(before: Results, after: Results) -> list[tuple[str, str, Any]]:
    """(sheet, cell, new value) of every input cell that differs between two evaluations."""
    changes = []
    for sheet, frame in before.inputs.sheets.items():
        if sheet == SIMULATED:  # the last run's figures: not an input anyone types
            continue
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
    book.save(out)


def add_option(
    path: Path, device: list[Any], copy_row: int | None, out: Path, *, last: bool = False
) -> int:
    """Type a device into the Hardware sheet's first free row with openpyxl and, when
    ``copy_row`` is given, copy that Plan row into the Plan's first free row (formulas moved as
    Excel's copy and paste moves them) with the new device's id; returns the Plan row written.
    With ``last``, the device and the Plan row go into the last of the spare rows instead."""
    book = openpyxl.load_workbook(path)
    hardware = book["Hardware"]
    row = hardware.max_row + 1
    if last:
        row = hardware.max_row + workbook.SPARE_ROWS  # the header, the entries, the spare rows
    for column, value in enumerate(device, start=1):
        if not pd.isna(value):
            hardware.cell(row, column, value.item() if hasattr(value, "item") else value)
    table = hardware.tables["Hardware"]
    table.ref = table.autoFilter.ref = (
        f"A1:{get_column_letter(hardware.max_column)}{hardware.max_row}"
    )
    plan = book["Plan"]
    new = next(r for r in range(2, plan.max_row + 1) if plan.cell(r, 1).value is None)
    if last:
        new += workbook.SPARE_ROWS - 1
    if copy_row is not None:
        for cell in plan[copy_row]:
            value = cell.value
            if cell.data_type == "f":
                value = Translator(value, origin=cell.coordinate).translate_formula(
                    f"{cell.column_letter}{new}"
                )
            plan.cell(new, cell.column, value)
        plan.cell(new, 1, device[0])
    book.save(out)
    return new


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


def scattered(results: Results) -> Results:
    """``results`` with the plan's rows shuffled: each group's rows lie among other groups'."""
    table = results.table.sample(frac=1, random_state=7).reset_index(drop=True)
    return dataclasses.replace(results, table=table)


_GROUPS = workbook.recommendation_groups


def moved_groups(table: pd.DataFrame, ranks: pd.DataFrame | None = None) -> list[workbook.Group]:
    """The groups with their Plan rows one row off, as if the Plan had been sorted since."""
    groups = _GROUPS(table, ranks)
    return [dataclasses.replace(g, block=(g.block[0] + 1, g.block[1] + 1)) for g in groups]


# Fixtures ------------------------------------------------------------------------------------


@dataclasses.dataclass
class Built:
    folder: Path
    seed: Results
    rich: Results
    planted: Results
    changed: Results
    priced: Results
    files: dict[str, Path]
    added: Results  # the rich catalog with NEW_DEVICE
    added_row: int  # the Plan row typed for it
    simulated: Results  # the rich catalog with one option simulated (see ``sim_key``)
    sim_key: tuple[str, str, str, str, int]  # (hardware, model, precision, workload, TP)
    smaller: Results  # that option's device with 1 GiB less memory, same simulated figures
    dearer: Results  # that option's device at ten times the price, same simulated figures
    engine: Results  # the rich catalog with a serving engine profile (see ENGINE)
    filled: Results  # the rich catalog with FILLED given to the device that lacked them
    #: the same with SGLang's and TensorRT-LLM's profiles (their own budget rules)
    engines: dict[str, Results] = dataclasses.field(default_factory=dict)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The module's workbooks: seed, rich, stale caches, a planted input, two openpyxl edits
    (several inputs; one price)."""
    folder = tmp_path_factory.mktemp("workbooks")
    rich_dir = rich_catalog(folder / "rich-catalog")
    seed = evaluate(load_catalog(SEED))
    rich = evaluate(load_catalog(rich_dir))
    planted = evaluate(load_catalog(planted_catalog(folder / "planted-catalog")))
    changed = evaluate(load_catalog(changed_catalog(rich_dir, folder / "changed-catalog")))
    priced = evaluate(load_catalog(priced_catalog(rich_dir, folder / "priced-catalog")))
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
    files["priced"] = folder / "priced.xlsx"
    edit_with_openpyxl(files["rich"], input_changes(rich, priced), files["priced"])
    files["scattered"] = write_workbook(scattered(rich), folder / "scattered.xlsx")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(workbook, "recommendation_groups", moved_groups)
        files["moved"] = write_workbook(rich, folder / "moved.xlsx")

    # finance adds a device on Hardware, then a Plan row for it
    added = evaluate(load_catalog(added_catalog(rich_dir, folder / "added-catalog")))
    new_device = added.inputs.sheets["Hardware"].set_index("id").loc[NEW_DEVICE["id"]]
    device = [NEW_DEVICE["id"], *new_device.tolist()]
    files["device-only"] = folder / "device-only.xlsx"
    add_option(files["rich"], device, None, files["device-only"])
    files["added"] = folder / "added.xlsx"
    added_row = add_option(files["rich"], device, plan_row(rich.table, COPIED), files["added"])
    files["added-last"] = folder / "added-last.xlsx"
    add_option(files["rich"], device, plan_row(rich.table, COPIED), files["added-last"], last=True)

    # one option simulated; then its device's bandwidth or its price edited in the workbook
    best = recommend.recommendations(rich.table).set_index(["workload", "model"])
    winner = best.loc[("chat", "invented-7b")]
    sim_key = (winner["hardware"], "invented-7b", winner["precision"], "chat", 1)
    assert int(winner["tensor_parallel"]) == 1
    keys = dict(zip(recommend.ALL_KEYS, sim_key, strict=True))
    frame = pd.DataFrame([sim_row(**keys, sim_replicas_needed=1.0)])
    simulated = evaluate(load_catalog(rich_dir), simulated=frame)
    files["sim"] = write_workbook(simulated, folder / "sim.xlsx")
    hardware = rich.inputs.sheets["Hardware"].set_index("id").loc[sim_key[0]]
    memory = f"{float(hardware['memory_gib']) - 1} GiB"
    smaller_dir = edited_catalog(rich_dir, folder / "smaller", sim_key[0], memory=memory)
    smaller = evaluate(load_catalog(smaller_dir), simulated=frame)
    price = {"purchase_usd": float(hardware["purchase_usd"]) * 10}
    dearer_dir = edited_catalog(rich_dir, folder / "dearer", sim_key[0], price=price)
    dearer = evaluate(load_catalog(dearer_dir), simulated=frame)
    for name, after in (("sim-smaller", smaller), ("sim-dearer", dearer)):
        files[name] = folder / f"{name}.xlsx"
        edit_with_openpyxl(files["sim"], input_changes(simulated, after), files[name])
    # the device without interconnect or prices gets them, typed into the workbook
    filled_dir = filled_catalog(rich_dir, folder / "filled-catalog")
    filled = evaluate(load_catalog(filled_dir))
    files["filled"] = folder / "filled.xlsx"
    edit_with_openpyxl(files["rich"], input_changes(rich, filled), files["filled"])
    engine = evaluate(load_catalog(engine_catalog(rich_dir, folder / "engine-catalog")))
    files["engine"] = write_workbook(engine, folder / "engine.xlsx")
    engines = {}
    for name, profile in OTHER_ENGINES.items():
        other = engine_catalog(rich_dir, folder / f"{name}-catalog", profile)
        engines[name] = evaluate(load_catalog(other))
        files[name] = write_workbook(engines[name], folder / f"{name}.xlsx")
    return Built(
        folder,
        seed,
        rich,
        planted,
        changed,
        priced,
        files,
        added,
        added_row,
        simulated,
        sim_key,
        smaller,
        dearer,
        engine,
        filled,
        engines,
    )


def plan_row(table: pd.DataFrame, key: tuple[str, str, str, str, int]) -> int:
    """The Plan row of the candidate (hardware, model, precision, workload, TP)."""
    match = np.logical_and.reduce(
        [(table[k] == v).to_numpy() for k, v in zip(recommend.ALL_KEYS, key, strict=True)]
    )
    return int(np.flatnonzero(match)[0]) + 2


@pytest.fixture(scope="module", params=ENGINES)
def recalculated(built: Built, request: pytest.FixtureRequest) -> dict[str, Path]:
    """Every workbook of :func:`built` recalculated by each spreadsheet engine (LibreOffice in
    one start; Gnumeric a file at a time)."""
    engine = request.param
    require(engine)
    names = list(built.files)
    outputs = recalculate_many(
        [built.files[n] for n in names], built.folder / f"recalculated-{engine}", engine=engine
    )
    return dict(zip(names, outputs, strict=True))


# Without a spreadsheet engine --------------------------------------------------------------------


def test_every_plan_cell_right_of_the_keys_is_a_formula(built: Built) -> None:
    book = openpyxl.load_workbook(built.files["rich"])
    ws = book["Plan"]
    header = [c.value for c in ws[1]]
    assert header == list(built.rich.table.columns)
    keys = set(built.rich.key_columns)
    n = len(built.rich.table)
    for row in ws.iter_rows(min_row=2, max_row=n + 1):
        for name, cell in zip(header, row, strict=True):
            if name in keys:
                assert cell.data_type != "f" and cell.value is not None
            else:
                assert cell.data_type == "f" and str(cell.value).startswith("="), (name, cell.value)
    # the rows below the data stay empty for added options; then one line, all that prints
    note_row = n + 1 + workbook.SPARE_ROWS + 2
    assert ws.max_row == note_row
    assert all(
        c.value is None for row in ws.iter_rows(min_row=n + 2, max_row=note_row - 1) for c in row
    )
    assert ws[f"A{note_row}"].value.startswith(f"The Plan ({n:,} rows) is not printed")
    assert ws.print_area == f"'Plan'!$A${note_row}:$H${note_row}"


@pytest.mark.parametrize("name", ["seed", "rich"])
def test_cached_values_are_the_planner_values(built: Built, name: str) -> None:
    results = {"seed": built.seed, "rich": built.rich}[name]
    assert_plan_equals(cached(built.files[name], "Plan"), results)


def test_plan_rows_written_in_several_chunks(built: Built, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(workbook.package, "_ROWS_PER_CHUNK", 7)
    path = write_workbook(built.rich, tmp_path / "chunks.xlsx")
    assert_plan_equals(cached(path, "Plan"), built.rich)


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
    column = get_column_letter(list(built.rich.table.columns).index("ruled_out_by") + 1)
    assert [r.formula for r in rules if r.dxf and r.dxf.fill] == [[f'${column}2="memory"']]
    table = built.rich.table
    # shaded: a replica cannot hold one maximum-length sequence; never an eligible option, even
    # one whose concurrency needs several replicas ('fits' FALSE)
    shaded = table["ruled_out_by"] == "memory"
    assert shaded.any() and (shaded == ~table["replica_fits"]).all()
    assert not (shaded & table["eligible"]).any()
    assert (table["eligible"] & ~table["fits"]).any()


def test_summary_of_the_seed_by_hand(built: Built) -> None:
    """The seed has no prices: no option of any group is eligible, each says why."""
    groups = summary_by_group(cached(built.files["seed"], "Summary"))
    assert list(groups) == [
        ("seed-4k", "invented-7b"),
        ("seed-4k", "invented-4gib"),
        ("seed-4k-prompt-1k-out", "invented-7b"),
        ("seed-4k-prompt-1k-out", "invented-4gib"),
    ]
    winner = groups[("seed-4k", "invented-4gib")]["recommended"]
    assert winner["hardware"] == "no eligible option"
    assert (winner["options"], winner["eligible options"]) == (1, 0)
    assert winner["why"] == "ruled out: 1 × cost"
    assert groups[("seed-4k", "invented-7b")]["recommended"]["why"] == "ruled out: 1 × memory"
    assert_recommendation(cached(built.files["seed"], "Summary"), built.seed.table)


def test_summary_cache_is_the_recommendation(built: Built) -> None:
    table = built.rich.table
    assert table["eligible"].any() and (table["cost_usd"].isna()).any()  # prices and gaps
    assert_recommendation(cached(built.files["rich"], "Summary"), table)


def test_rich_catalog_exercises_every_case(built: Built) -> None:
    """Groups with two or more eligible options, with one, with none; winners decided by cost
    and by a tie on cost and devices (the margin kept to a target or to memory)."""
    frame = recommend.recommendations(built.rich.table)
    assert set(frame["eligible"]) >= {0, 1, 2}
    groups = summary_by_group(cached(built.files["rich"], "Summary"))
    whys = {g["runner-up"]["why"] for g in groups.values()}
    assert "same cost and devices; less margin to a target or to memory" in whys
    assert any(str(w).startswith("cost: ") for w in whys)
    none = groups[("strict", "invented-7b")]["recommended"]
    assert none["why"] == "ruled out: 1 × memory; 5 × latency"


def test_summary_cache_ranks_like_recommend_with_ties_and_missing_values() -> None:
    """recommendation_groups (the cache) orders ties and missing keys as recommend.ranked does."""
    nan = float("nan")
    table = pd.DataFrame(
        {
            "workload": ["w"] * 6 + ["v"] * 2,
            "model": ["m"] * 6 + ["m"] * 2,
            "eligible": [True, True, True, True, False, True, False, False],
            "cost_usd": [5.0, 3.0, 3.0, 3.0, 1.0, 3.0, 1.0, 2.0],
            "devices_needed": [1.0, 2.0, 2.0, 1.0, 1.0, 2.0, 1.0, 1.0],
            "margin_shortfall": [0.0, 0.0, 0.05, 0.0, 0.0, 0.0, 0.0, 0.0],
            "itl_load_s": [0.1, nan, 0.2, 0.3, 0.1, 0.2, 0.1, 0.1],
            "status": ["eligible"] * 4 + ["cost: x", "eligible", "memory: y", "latency: z"],
            "ruled_out_by": [""] * 4 + ["cost", "", "memory", "latency"],
        }
    )
    groups = workbook.recommendation_groups(table)
    ranks = recommend.ranked(table)
    best = ranks[ranks["workload"] == "w"].sort_values("rank").dropna(subset=["rank"])
    assert groups[0].ids == ("w", "m") and groups[0].best == list(best.index[:2])
    # fewer devices; then the options keeping their margin; then a number before a missing ITL
    assert groups[0].best == [3, 5]
    assert (groups[0].options, groups[0].eligible) == (6, 5)
    assert groups[1].best == [] and groups[1].reasons == {
        "memory": 1,
        "latency": 1,
        "simulation": 0,
        "power": 0,
        "cost": 0,
    }


def test_summary_cells_are_formulas_over_the_plan(built: Built) -> None:
    ws = openpyxl.load_workbook(built.files["rich"])["Summary"]
    rows = list(ws.iter_rows())
    start = next(i for i, row in enumerate(rows) if row[0].value == "workload")
    titles = [TITLE_KEYS.get(c.value, c.value) for c in rows[start]]
    for row in rows[start + 1 : start + 1 + 2 * 12]:
        for key, cell in zip(titles, row, strict=False):
            if key in workbook.SHOWN or key in ("why", "Plan row"):
                assert cell.data_type == "f", (cell.coordinate, cell.value)
    helper = rows[start + 1][titles.index("Plan row")]
    assert "MIN(IF(" in str(helper.value.text) and "plan_eligible" in str(helper.value.text)


def test_summary_has_native_charts(built: Built) -> None:
    with zipfile.ZipFile(built.files["rich"]) as archive:
        charts = sorted(n for n in archive.namelist() if n.startswith("xl/charts/chart"))
        assert len(charts) == 2
        xml = [archive.read(c).decode() for c in charts]
    assert all("Summary" in x and "barChart" in x for x in xml)
    assert "Cost over the amortisation period" in xml[0] and "Memory of one device" in xml[1]


def test_no_eligible_option_rows_are_marked(built: Built) -> None:
    ws = openpyxl.load_workbook(built.files["rich"])["Summary"]
    rules = [r for cf in ws.conditional_formatting for r in cf.rules]
    assert any('="recommended"' in r.formula[0] and "=0)" in r.formula[0] for r in rules)


def test_too_many_groups_for_charts(built: Built, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(workbook.charts, "MAX_CHART_GROUPS", 3)
    path = write_workbook(built.rich, tmp_path / "many.xlsx")
    with zipfile.ZipFile(path) as archive:
        assert not [n for n in archive.namelist() if n.startswith("xl/charts/")]
    rows = cached(path, "Summary")
    assert any(row and str(row[0]).startswith("No charts: 12 ") for row in rows)
    assert_recommendation(rows, built.rich.table)


def test_simulated_sheet_is_marked(built: Built) -> None:
    book = openpyxl.load_workbook(built.files["rich"])
    ws = book["Simulated"]
    assert ws["A1"].value == "id"  # lookups need the header in row 1
    assert ws.sheet_properties.tabColor.rgb.endswith(workbook.SIMULATED_TAB)
    assert ws["A1"].comment.text == workbook.SIMULATED_NOTE
    notes = [c.value for row in book["Notes"].iter_rows() for c in row if c.value]
    assert "Simulated" in notes
    assert any("serving simulation of the last planner run" in str(v) for v in notes)


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
    assert_plan_equals(cached(path, "Plan"), results)
    assert "lacks the columns the recommendation needs" in cached(path, "Summary")[1][0]


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


# Recalculated by LibreOffice and by Gnumeric ---------------------------------------------------


@pytest.mark.parametrize("name", ["seed", "rich", "engine", *OTHER_ENGINES])
def test_engine_recomputes_every_plan_cell(
    built: Built, recalculated: dict[str, Path], name: str
) -> None:
    every = {"seed": built.seed, "rich": built.rich, "engine": built.engine} | built.engines
    results = every[name]
    assert_plan_equals(computed_values(recalculated[name], "Plan"), results)


@pytest.mark.parametrize("name", ["seed", "rich"])
def test_engine_recomputes_the_summary_to_its_cached_values(
    built: Built, recalculated: dict[str, Path], name: str
) -> None:
    assert_sheets_equal(
        cached(built.files[name], "Summary"), computed_values(recalculated[name], "Summary")
    )


def test_stale_cached_values_are_recomputed(built: Built, recalculated: dict[str, Path]) -> None:
    """Proves that the helper recalculates: every planted cached value was wrong."""
    with pytest.raises(AssertionError):
        assert_plan_equals(cached(built.files["stale"], "Plan"), built.rich)
    assert_plan_equals(computed_values(recalculated["stale"], "Plan"), built.rich)
    assert_sheets_equal(
        cached(built.files["rich"], "Summary"), computed_values(recalculated["stale"], "Summary")
    )


def test_an_input_planted_under_cached_values_recomputes(
    built: Built, recalculated: dict[str, Path]
) -> None:
    assert_plan_equals(cached(built.files["planted"], "Plan"), built.seed)  # still stale
    assert_plan_equals(computed_values(recalculated["planted"], "Plan"), built.planted)
    assert_recommendation(computed_values(recalculated["planted"], "Summary"), built.planted.table)


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
    assert_plan_equals(computed_values(recalculated["edited"], "Plan"), built.changed)
    assert_recommendation(computed_values(recalculated["edited"], "Summary"), built.changed.table)


def test_engine_recomputes_the_recommendation(built: Built, recalculated: dict[str, Path]) -> None:
    assert_recommendation(computed_values(recalculated["rich"], "Summary"), built.rich.table)


def test_groups_scattered_over_the_plan_are_recommended_right(
    built: Built, recalculated: dict[str, Path]
) -> None:
    """Rows of a group need not sit together: the formulas match the group's ids."""
    shuffled = scattered(built.rich)
    table = shuffled.table
    assert_plan_equals(computed_values(recalculated["scattered"], "Plan"), shuffled)
    assert_recommendation(computed_values(recalculated["scattered"], "Summary"), table)


def test_a_group_no_longer_in_its_plan_rows_is_ranked_over_the_whole_plan(
    built: Built, recalculated: dict[str, Path]
) -> None:
    """When the Plan rows the formulas expect no longer hold the whole group (the Plan was
    sorted), 'group in its Plan rows' turns FALSE and the ranking reads every Plan row."""
    rows = computed_values(recalculated["moved"], "Summary")
    assert_recommendation(rows, built.rich.table)
    flags = [g["recommended"][workbook.IN_PLACE] for g in summary_by_group(rows).values()]
    assert flags and not any(flags)
    rich = computed_values(recalculated["rich"], "Summary")
    assert all(g["recommended"][workbook.IN_PLACE] for g in summary_by_group(rich).values())


def test_a_price_edit_changes_the_recommendation(
    built: Built, recalculated: dict[str, Path]
) -> None:
    """One purchase price typed into the Hardware sheet; LibreOffice recomputes the winners of
    the catalog changed the same way, and they differ from before."""
    changes = input_changes(built.rich, built.priced)
    headers = list(built.rich.inputs.sheets["Hardware"].columns)
    column = get_column_letter(headers.index("purchase_usd") + 1)
    assert changes == [("Hardware", f"{column}2", EDITED_PURCHASE_USD)]  # seed-16gib's row
    before, after = winners(built.rich.table), winners(built.priced.table)
    changed = {k for k in before if before[k] != after[k]}
    assert changed and all(before[k][0] == "seed-16gib" for k in changed)
    summary = computed_values(recalculated["priced"], "Summary")
    assert_recommendation(summary, built.priced.table)
    shown = summary_by_group(summary)
    for key in changed:
        winner = shown[key]["recommended"]
        assert (winner["hardware"], winner["precision"]) == after[key][:2] != before[key][:2]
    assert_plan_equals(computed_values(recalculated["priced"], "Plan"), built.priced)


def test_a_missing_input_reads_n_a_until_it_is_typed(
    built: Built, recalculated: dict[str, Path]
) -> None:
    """Where an optional input is missing (mid-48gb has no interconnect and no price), the Plan
    shows "n/a", never an error value; typed into the workbook, the inputs give the numbers the
    planner computes from the catalog with them."""
    changes = input_changes(built.rich, built.filled)
    assert {sheet for sheet, _, _ in changes} == {"Hardware"} and len(changes) == 3
    for name, results in (("rich", built.rich), ("filled", built.filled)):
        rows = computed_values(recalculated[name], "Plan")
        assert_plan_equals(rows, results)
        errors = [v for row in rows for v in row if isinstance(v, str) and v.startswith("#")]
        assert not errors, errors[:5]
    before = computed_values(recalculated["rich"], "Plan")
    after = computed_values(recalculated["filled"], "Plan")
    header = before[0]
    mid = [i for i, row in enumerate(before) if row[0] == "mid-48gb"]
    for column in ("capital_usd", "cloud_usd_per_month", "interconnect_bytes_per_s"):
        at = header.index(column)
        assert {before[i][at] for i in mid} == {MISSING}, column
        assert all(isinstance(after[i][at], float | int) for i in mid), column
    assert_recommendation(computed_values(recalculated["filled"], "Summary"), built.filled.table)


def test_catalog_text_survives_the_engine_as_text(recalculated: dict[str, Path]) -> None:
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


# Portable formulas ------------------------------------------------------------------------------

FORMULA_TEXT = re.compile(rb"<f(?: [^>]*)?>([^<]*)</f>")


@pytest.mark.parametrize("name", ["seed", "rich", "sim"])
def test_no_formula_is_stored_with_a_leading_equals_sign(built: Built, name: str) -> None:
    """OOXML stores formula text without "="; Gnumeric reads "<f>=A1</f>" as the text "=A1"."""
    with zipfile.ZipFile(built.files[name]) as archive:
        formulas = [
            text
            for member in archive.namelist()
            if member.startswith("xl/worksheets/")
            for text in FORMULA_TEXT.findall(archive.read(member))
        ]
    assert len(formulas) > 100
    assert not [f for f in formulas if f.startswith(b"=")]


def test_ruled_out_by_is_the_first_word_of_status(built: Built) -> None:
    """The Summary counts ruled-out options by ``ruled_out_by`` (COUNTIFS, no text parsing); it
    names the same reason as the status sentence."""
    table = built.rich.table
    assert set(table["ruled_out_by"]) == {"", "memory", "latency", "cost"}
    assert (table["eligible"] == (table["ruled_out_by"] == "")).all()
    ruled_out = table[~table["eligible"]]
    assert (ruled_out["status"].str.split(":").str[0] == ruled_out["ruled_out_by"]).all()


# Finance adds an option ----------------------------------------------------------------------


def test_an_added_option_is_computed_and_ranked(
    built: Built, recalculated: dict[str, Path]
) -> None:
    """A device typed on Hardware and a Plan row copied for it give a fully computed row (equal
    to planner's own evaluation of the catalog with that device) that the Summary ranks."""
    added = expected_plan(built.added)
    position = plan_row(built.added.table, (NEW_DEVICE["id"], *COPIED[1:])) - 2
    row = added.iloc[[position]]
    expected = pd.concat([expected_plan(built.rich), row], ignore_index=True)
    assert built.added_row == len(built.rich.table) + 2
    assert_plan_equals(computed_values(recalculated["added"], "Plan"), expected)
    summary = computed_values(recalculated["added"], "Summary")
    assert_recommendation(summary, expected)
    winner = summary_by_group(summary)[(COPIED[3], COPIED[1])]["recommended"]
    assert (winner["hardware"], winner["simulation"]) == (NEW_DEVICE["id"], "not simulated")
    assert summary[3][0] == "Input ids in no Plan row: none"


def test_an_option_in_the_last_spare_rows_is_computed_and_ranked(
    built: Built, recalculated: dict[str, Path]
) -> None:
    """The ranges end below the spare rows, not at the sheet's end: a device typed on the last
    spare row of Hardware, and a Plan row for it on the Plan's last spare row, still compute in
    full and are ranked."""
    n = len(built.rich.table)
    rows = computed_values(recalculated["added-last"], "Plan")
    last = n + 1 + workbook.SPARE_ROWS  # the header, the candidates, the spare rows
    assert rows[last] == [None] * len(rows[0])  # one past the spare rows: empty
    added = expected_plan(built.added)
    position = plan_row(built.added.table, (NEW_DEVICE["id"], *COPIED[1:])) - 2
    row = added.iloc[[position]]
    assert_plan_equals([rows[0], rows[last - 1], rows[-1]], row.reset_index(drop=True))
    assert_plan_equals(rows[: n + 1] + [rows[-1]], built.rich)
    summary = computed_values(recalculated["added-last"], "Summary")
    assert_recommendation(summary, pd.concat([expected_plan(built.rich), row], ignore_index=True))
    winner = summary_by_group(summary)[(COPIED[3], COPIED[1])]["recommended"]
    assert winner["hardware"] == NEW_DEVICE["id"]
    assert summary[3][0] == "Input ids in no Plan row: none"


def test_an_input_id_in_no_plan_row_is_flagged(built: Built, recalculated: dict[str, Path]) -> None:
    assert cached(built.files["rich"], "Summary")[3][0] == "Input ids in no Plan row: none"
    summary = computed_values(recalculated["device-only"], "Summary")
    assert summary[3][0] == f"Input ids in no Plan row: Hardware: 1, e.g. {NEW_DEVICE['id']}"
    assert_recommendation(summary, built.rich.table)  # nothing else changes


# Simulated figures that no longer hold ------------------------------------------------------


def test_a_simulated_option_is_marked_so(built: Built) -> None:
    rows = cached(built.files["sim"], "Plan")
    table = expected_plan(built.simulated)
    assert_plan_equals(rows, built.simulated)
    simulation = dict(zip(table["candidate"], table["simulation"], strict=True))
    key = "|".join(str(k) for k in built.sim_key)
    assert simulation.pop(key) == "simulated"
    assert set(simulation.values()) == {"not simulated"}
    winner = summary_by_group(cached(built.files["sim"], "Summary"))[("chat", "invented-7b")]
    assert winner["recommended"]["simulation"] == "simulated"


def test_an_edited_input_marks_the_simulation_stale(
    built: Built, recalculated: dict[str, Path]
) -> None:
    """The simulated option's device loses 1 GiB of memory on the Hardware sheet: its simulated
    figures were computed with another KV budget, and the Plan and the Summary say so."""
    key = "|".join(str(k) for k in built.sim_key)
    expected = expected_plan(built.smaller)
    at = expected["candidate"] == key
    expected.loc[at, "simulation"] = STALE_SIMULATION
    expected.loc[at, "sim_inputs_unchanged"] = 0
    assert_plan_equals(computed_values(recalculated["sim-smaller"], "Plan"), expected)
    summary = computed_values(recalculated["sim-smaller"], "Summary")
    assert_recommendation(summary, expected)
    winner = summary_by_group(summary)[("chat", "invented-7b")]["recommended"]
    assert (winner["hardware"], winner["simulation"]) == (built.sim_key[0], STALE_SIMULATION)
    simulated = computed_values(recalculated["sim-smaller"], "Simulated")
    record = dict(zip(simulated[0], simulated[1], strict=False))
    assert (record["sim_inputs_unchanged"], record["changed_input"]) == (0, "kv_budget_bytes")
    assert record["plan_row"] == plan_row(built.simulated.table, built.sim_key)
    # before the edit every recorded input matches
    simulated = computed_values(recalculated["sim"], "Simulated")
    record = dict(zip(simulated[0], simulated[1], strict=False))
    assert record["sim_inputs_unchanged"] == 1 and record["changed_input"] in (None, "")


def test_a_never_simulated_winner_is_shown_as_such(
    built: Built, recalculated: dict[str, Path]
) -> None:
    """A price typed on Hardware makes an option that was never simulated the winner."""
    summary = computed_values(recalculated["sim-dearer"], "Summary")
    assert_recommendation(summary, built.dearer.table)
    winner = summary_by_group(summary)[("chat", "invented-7b")]["recommended"]
    assert winner["hardware"] != built.sim_key[0]
    assert winner["simulation"] == "not simulated"


#: Every function the workbook's formulas may call: each is in Excel 2016 (all but IFNA in Excel
#: 2007), in LibreOffice and in Gnumeric. No dynamic arrays, no other _xlfn.-prefixed function.
EXCEL_2016 = {
    "ABS", "AND", "COUNTIFS", "EXP", "FALSE", "IF", "INDEX", "INT", "ISNA", "ISNUMBER", "LARGE",
    "LN", "MATCH", "MAX", "MID", "MIN", "NA", "NOT", "OR", "POWER", "ROUNDUP", "ROW", "SUM",
    "SUMPRODUCT", "TEXT", "TRUE",
    "IFNA",  # Excel 2013: a file stores it as _xlfn.IFNA, as every function newer than 2007
}  # fmt: skip


@pytest.mark.parametrize("name", ["rich", "sim"])
def test_formulas_call_only_functions_excel_2016_has(built: Built, name: str) -> None:
    with zipfile.ZipFile(built.files[name]) as archive:
        texts = b" ".join(
            text
            for member in archive.namelist()
            if member.startswith("xl/worksheets/")
            for text in FORMULA_TEXT.findall(archive.read(member))
        ).decode()
    called = set(re.findall(r"([A-Z][A-Z0-9._]*)\(", re.sub(r'"[^"]*"', '""', texts)))
    assert {"COUNTIFS", "INDEX", "MATCH", "MIN"} <= called
    assert called <= EXCEL_2016, called - EXCEL_2016
    assert "_xlfn.IFNA(" in texts
    assert not re.findall(r"_xlfn\.(?!IFNA\()", texts)  # no other newer function


#: A reference to whole columns or whole rows (``$D:$D``, ``'Hardware'!A:W``, ``1:1``), which
#: engines scan to the sheet's end: a quoted text or a sheet name is removed before the search.
WHOLE_COLUMNS_OR_ROWS = re.compile(
    r"(?<![A-Za-z0-9_$.])\$?(?:[A-Z]{1,3}:\$?[A-Z]{1,3}|\d+:\$?\d+)(?![A-Za-z0-9_(])"
)


def whole_references(path: Path) -> list[str]:
    """Every whole-column or whole-row reference in the formulas of a workbook: its cells'
    formulas, conditional formats, validations and defined names (print titles excepted: rows
    and columns repeated on each page are whole by nature)."""
    found = []
    with zipfile.ZipFile(path) as archive:
        for member in archive.namelist():
            if not member.endswith(".xml"):
                continue
            xml = archive.read(member).decode()
            texts = re.findall(r"<(?:\w+:)?f(?: [^>]*)?>([^<]*)</(?:\w+:)?f>", xml)
            texts += re.findall(r"<formula[12]?>([^<]*)</formula[12]?>", xml)
            texts += re.findall(r"<definedName (?![^>]*_xlnm.Print_Titles)[^>]*>([^<]*)<", xml)
            for text in texts:
                bare = re.sub(r"&quot;.*?&quot;|\"[^\"]*\"|'[^']*'!|\w+!", "", text)
                found += [f"{member}: {m}" for m in WHOLE_COLUMNS_OR_ROWS.findall(bare)]
    return found


@pytest.mark.parametrize("text", ["$D:$D", "'Hardware'!$D:$D", "Plan!DR:DR", "A:W", "$1:$1", "2:3"])
def test_a_whole_column_or_row_is_found(tmp_path: Path, text: str) -> None:
    book = openpyxl.Workbook()
    book.active["A1"] = f'=IF(1,"a:b",INDEX({text},1))'
    book.save(tmp_path / "whole.xlsx")
    assert whole_references(tmp_path / "whole.xlsx") == [
        f"xl/worksheets/sheet1.xml: {text.split('!')[-1]}"
    ]


@pytest.mark.parametrize("name", ["seed", "rich", "sim", "engine"])
def test_no_formula_reads_whole_columns_or_rows(built: Built, name: str) -> None:
    """Every range stops at the last spare row: an engine written to Excel's rules need not
    hold a million rows per reference, and Excel's array formulas stay quick."""
    assert not whole_references(built.files[name])


def _hidden_columns(path: Path, sheet: str) -> set[str]:
    """Headers of the columns a sheet's XML hides (grouped one outline level down)."""
    with zipfile.ZipFile(path) as archive:
        xml = archive.read(workbook.sheet_members(archive)[sheet]).decode()
    hidden: set[int] = set()
    for col in re.findall(r"<col [^>]*>", xml):
        if 'hidden="1"' in col and 'outlineLevel="1"' in col:
            low, high = (int(re.search(f'{k}="([0-9]+)"', col).group(1)) for k in ("min", "max"))
            hidden |= set(range(low, high + 1))
    header = computed_values(path, sheet)[0]
    return {header[i - 1] for i in hidden}


def test_base_unit_columns_restated_for_people_are_grouped_and_hidden(built: Built) -> None:
    """Bytes and seconds restated in GiB, GB, MiB or ms are hidden on the Plan (results.csv
    keeps them); money, bandwidth and every column without a restatement stay in view."""
    assert _hidden_columns(built.files["rich"], "Plan") == {
        "memory_bytes",
        "weight_bytes",
        "weight_bytes_per_device",
        "kv_bytes_per_sequence",
        "kv_budget_bytes",
        "kv_bytes_at_concurrency",
        "memory_headroom_bytes",
        "weight_read_s",
        "compute_bound_s",
        "itl_s",
        "ttft_s",
        "engine_memory_bytes",
        "activation_peak_bytes",
        "non_torch_bytes",
        "kv_pool_bytes",
    }
    header = computed_values(built.files["sim"], "Simulated")[0]
    hidden = _hidden_columns(built.files["sim"], "Simulated")
    assert hidden == {c for c in header if c.startswith("sim_input_")} and len(hidden) == 19


def test_with_an_engine_profile_the_kv_budget_is_the_engine_pool(built: Built) -> None:
    """0.9 × the device's memory − weights − activation − non-torch (CUDA graphs are captured
    outside the budget in vLLM 0.10): the planner's overhead and reserve no longer apply. A
    model given by its parameter count alone has no MLP width to size the activation peak
    with, and keeps the planner's budget."""
    table = built.engine.table
    known = table["kv_pool_bytes"].notna()
    assert known.any() and (~known).any()
    assert (table.loc[known, "kv_budget_bytes"] == table.loc[known, "kv_pool_bytes"]).all()
    keys = list(recommend.ALL_KEYS)
    planner = table.loc[~known, [*keys, "kv_budget_bytes"]].merge(
        built.rich.table[[*keys, "kv_budget_bytes"]], on=keys, suffixes=("", "_rich")
    )
    assert len(planner) == (~known).sum()
    assert (planner["kv_budget_bytes"] == planner["kv_budget_bytes_rich"]).all()
    assert table.loc[~known, "mlp_width"].isna().all()
    table = table[known]
    pool = (
        0.9 * table["memory_bytes"]
        - table["weight_bytes_per_device"]
        - table["activation_peak_bytes"]
        - table["non_torch_bytes"]
    )
    assert table["kv_pool_bytes"].to_numpy() == pytest.approx(pool.to_numpy(), rel=1e-12)
    assert not (built.rich.table["kv_budget_bytes"] == built.rich.table["kv_pool_bytes"]).any()


def test_a_calibrated_device_uses_its_fitted_figures(built: Built) -> None:
    """big-80gib is fitted on the plan's release (vllm 0.10): its efficiencies, step overhead,
    activation scale and non-torch memory are the fitted ones, and its latency band is 1.2816
    × 10 % = 12.816 %. mid-48gb's fit is on vllm 0.7: not applied, and the catalog says so;
    it keeps the assumptions and the uncalibrated band (30 %)."""
    table = built.engine.table
    big = table[table["hardware"] == "big-80gib"]
    mid = table[table["hardware"] == "mid-48gb"]
    assumed = built.rich.table.iloc[0]
    assert (big["bandwidth_efficiency"] == 0.63).all()
    assert (big["compute_efficiency"] == 0.41).all()
    assert big["step_overhead_s"].to_numpy() == pytest.approx(0.0035)
    assert (big["activation_scale"] == 1.2).all()
    single = big["tensor_parallel"] == 1
    assert (big.loc[single, "non_torch_bytes"] == 0.5 * 2**30).all()
    assert (big.loc[~single, "non_torch_bytes"] == 2 * 2**30).all()
    assert big["latency_calibrated"].all() and not mid["latency_calibrated"].any()
    assert big["latency_band_fraction"].to_numpy() == pytest.approx(0.12816)
    assert (mid["latency_band_fraction"] == 0.30).all()
    assert (mid["bandwidth_efficiency"] == assumed["bandwidth_efficiency"]).all()
    assert big["itl_upper_s"].to_numpy() == pytest.approx(big["itl_planned_s"] * 1.12816)
    warnings = [w for w in load_catalog(built.folder / "engine-catalog").warnings]
    assert any(
        w.entry == "calibration[1]" and "not applied" in w.message and "vllm 0.7" in w.message
        for w in warnings
    )
