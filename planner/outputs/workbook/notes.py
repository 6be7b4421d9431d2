"""The Notes sheet: how the workbook works, what may be edited, the cautions, and every column's
unit, meaning, formula and source.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from openpyxl import Workbook
from openpyxl.cell import WriteOnlyCell

from planner.outputs.workbook.cells import (
    SECTION_FONT,
    TITLE_FONT,
    WRAP,
    _fit_row,
    _header,
    _new_sheet,
    _print_setup,
    _text_cell,
    _widths,
)
from planner.outputs.workbook.plan import _number, formula_in_words
from planner.plan import recommend
from planner.plan.sweep import Results
from planner.plan.tables import GLOBALS, KEYS, SIMULATED, Lookup

SHEETS_TEXT = [
    (
        "Summary",
        "The recommendation, as formulas over the Plan: for each workload and model, the "
        "eligible option with the lowest cost over the period, owned or rented (ties: "
        f"{recommend.TIE_BREAKS}, then Plan order) and the runner-up, their fleet and costs, or "
        "why no option is eligible; charts of their cost and of the recommended device's memory.",
    ),
    (
        "Plan",
        "One row per candidate (hardware × model × precision × workload × tensor parallel), the "
        "same rows and columns as results.csv. Every cell right of the ids is a formula: a lookup "
        "of an input by id, or a metric over the row's other cells. Rows whose replica cannot "
        "hold one maximum-length sequence (ruled_out_by: memory) are shaded red. Columns in bytes "
        "or seconds that a GiB, GB, MiB or ms column restates are grouped and hidden (the + above "
        "the column letters shows them); bandwidth shows in GB/s and compute in TFLOPS while the "
        "cells hold B/s and FLOP/s.",
    ),
    (
        "Hardware, Models, Precisions, Workloads",
        "The catalogs, one entry per row, in the units of "
        "the column headers (GiB, GB/s, TFLOPS, USD). Edit values here.",
    ),
    (
        SIMULATED,
        "Values from the serving simulation of the last planner run (replicas needed, p95 "
        "latencies, rejected share), one row per simulated candidate, looked up by the Plan's "
        "candidate id. They are numbers, not formulas: editing another sheet does not rerun the "
        "simulation. Beside them (grouped, hidden) the Plan values each was simulated with; "
        "sim_inputs_unchanged turns 0 and changed_input names the first that differs once an "
        "edit moves one, and the Plan's and the Summary's 'simulation' then read 'simulated with "
        "other inputs: rerun planner'. Run the planner again for new figures. Orange tab.",
    ),
    (
        "Assumptions",
        "Planning assumptions that apply to every candidate; each value is a named "
        "cell (e.g. reserve_gib) that the Plan's formulas use by name.",
    ),
    (
        "Measured",
        "Only with measurements/index.yaml: each measured figure beside planner's estimate for "
        "the same device, model, precision and engine settings, and the error. Constants, not "
        "formulas: the estimates are for each measurement's own settings, not rows of the Plan.",
    ),
    ("Notes", "This sheet: how the workbook works, what every column means, and the cautions."),
]

EDITING_TEXT = [
    "You may edit: any number or text on the input sheets (a price on Hardware, a memory size, a "
    "workload's tokens) and the Assumptions values. The Plan and the Summary recompute, and the "
    "Summary's recommendation may change: it is ranked by formulas, not pasted.",
    "Do not rename ids: the Plan finds each input by its id.",
    "To add an option: type the new entry (a device, say) into the first empty row of its input "
    "sheet; copy an existing Plan row into the first empty row below the Plan and change its id "
    "(the hardware id for a device). Copying moves every formula to the new row, which computes "
    "in full, and the Summary ranks it (its ranges cover 1,000 empty rows below the Plan and "
    "each input sheet). Until a Plan row names a new id, the Summary's line 'Input ids in no "
    "Plan row' names it. An added option is 'not simulated': run the planner on the changed "
    "catalog to simulate it.",
    "Do not type over Plan or Summary cells: they are formulas, and a typed number stops updating. "
    "Sorting or filtering the Plan is fine; only ties between options then follow the new order.",
    "Excel recalculates the whole workbook when it opens it. LibreOffice shows the values stored "
    "by the planner (the same numbers) and recomputes whatever an edit changes; Data > Calculate > "
    "Recalculate Hard (Ctrl+Shift+F9) recomputes everything.",
    "A number cell showing n/a has no input to compute from, e.g. a device without a price or a "
    "rate for the precision's compute format (a blank cell on the Hardware sheet); typing the "
    "input fills it in. Inside the formulas a missing value is #N/A, so that it cannot be "
    "taken for a number. "
    "A missing break_even_month on the Summary reads 'never' where renting costs no more per "
    "month than operating owned devices.",
    "Printing: the workbook prints the Summary with its charts, the input sheets and these Notes. "
    "The Plan prints a one-line note: select the cells you want and set a print area to print "
    "part of it.",
]

SUMMARY_TEXT = [
    "Groups: one per workload and model, in the Plan's order. Options: the group's Plan rows whose "
    "'eligible' is TRUE (a replica holds a maximum-length sequence, every latency target is met, "
    "it fits the rack and site power limits, the cost is known; 'status' says why a row is "
    "not).",
    "Ranking, as planner recommends: lowest cost_usd (the cheaper of owning, tco_usd, and "
    "renting, rent_usd, over the period; acquisition says which, and advice says API where "
    "the hosted API costs less still); on a tie fewer "
    "devices_needed; then lower itl_load_s (a missing value last); then the earlier Plan row. The "
    "runner-up is the best of the rest. 'why' says how the runner-up lost, or how many "
    "options memory, latency, the simulation, power or a missing cost ruled out (COUNTIFS over "
    "the Plan's ruled_out_by). 'simulation' says whether the option's simulated figures hold for "
    "the inputs as they stand.",
    "The grey helper columns do the ranking: each is an array formula MIN(IF(...)) over the Plan "
    "(the option's cost_usd, devices_needed and itl_load_s, then its Plan row, 0 for none). "
    "Every other cell reads the Plan row they find with INDEX. n/a: the Plan has no value "
    "(n/a there too), e.g. no rental price or no break-even.",
    "For speed the helpers scan only the Plan rows that held the group when the planner wrote the "
    "workbook, while 'group in its Plan rows' is TRUE; after the Plan has been sorted it turns "
    "FALSE and they scan the whole Plan (right, only slower); so does a group with a row added "
    "below the Plan. 'ruled out: ...' counts the group's options by their ruled_out_by.",
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
    blank = "; n/a where that cell is blank" if lk.column_from else ""
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
    widths = _widths(ws, [28, 10, 50, 55, 27])  # one landscape page across
    rows: list[list[Any]] = [
        [_text_cell(ws, "planner: how to read this workbook", font=TITLE_FONT)],
        [],
    ]
    rows.append(_header(ws, ["sheet", "", "what it holds"]))
    rows += [_notes_row(ws, [name, "", text]) for name, text in SHEETS_TEXT]
    if results.notes:
        rows += [[], [_text_cell(ws, "This run", font=SECTION_FONT)]]
        rows += [_notes_row(ws, ["", "", line]) for line in results.notes]
    sections = (
        ("Editing and recalculation", EDITING_TEXT),
        ("How the Summary recommends", SUMMARY_TEXT),
        ("Cautions", NOTES),
    )
    for title, lines in sections:
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
