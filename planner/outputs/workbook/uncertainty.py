"""The ``Uncertainty`` sheet: the plan's bands over Monte Carlo draws of its uncertain inputs.

Its values are constants: each percentile summarises N whole plans evaluated at drawn inputs
(:mod:`planner.plan.uncertainty`), not a formula over one Plan row. The Plan sheet carries the
central values as live formulas.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from openpyxl import Workbook

from planner.outputs.workbook.cells import (
    TITLE_FONT,
    _cell,
    _header,
    _new_sheet,
    _print_setup,
    _text_cell,
    _widths,
)
from planner.plan.uncertainty import Bands, leading_options

#: The purchase table's columns: (heading, column, number format).
PURCHASE_COLUMNS = [
    ("workload", "workload", None),
    ("model", "model", None),
    ("draws served", "served_share", "0%"),
    ("devices P10", "devices_needed_p10", "0"),
    ("devices P50", "devices_needed_p50", "0"),
    ("devices P90", "devices_needed_p90", "0"),
    ("cost P10 [USD]", "cost_usd_p10", "#,##0"),
    ("cost P50 [USD]", "cost_usd_p50", "#,##0"),
    ("cost P90 [USD]", "cost_usd_p90", "#,##0"),
]

#: The option table's columns; latencies are shown in ms.
OPTION_COLUMNS = [
    ("workload", "workload", None),
    ("model", "model", None),
    ("hardware", "hardware", None),
    ("precision", "precision", None),
    ("TP", "tensor_parallel", "0"),
    ("cheapest in", "cheapest_share", "0%"),
    ("meets targets in", "meets_share", "0%"),
    ("devices P50", "devices_needed_p50", "0"),
    ("devices P90", "devices_needed_p90", "0"),
    ("cost P50 [USD]", "cost_usd_p50", "#,##0"),
    ("cost P90 [USD]", "cost_usd_p90", "#,##0"),
    ("TTFT P50 [ms]", "ttft_load_s_p50", "#,##0.0"),
    ("TTFT P90 [ms]", "ttft_load_s_p90", "#,##0.0"),
    ("ITL P50 [ms]", "itl_load_s_p50", "#,##0.0"),
    ("ITL P90 [ms]", "itl_load_s_p90", "#,##0.0"),
]


#: The P90 simulation's columns.
SIMULATED_COLUMNS = [
    ("workload", "workload", None),
    ("model", "model", None),
    ("hardware", "hardware", None),
    ("precision", "precision", None),
    ("TP", "tensor_parallel", "0"),
    ("draw", "draw", "0"),
    ("cost [USD]", "cost_usd", "#,##0"),
    ("devices (closed form)", "devices_needed", "0"),
    ("devices (simulated)", "sim_devices_needed", "0"),
    ("TTFT p95 [ms]", "ttft_p95_s", "#,##0.0"),
    ("ITL p95 [ms]", "itl_p95_s", "#,##0.0"),
    ("meets targets", "meets_targets_sim", None),
]


def _row(ws: Any, row: pd.Series, columns: list[tuple[str, str, str | None]]) -> list[Any]:
    cells = []
    for _, name, shown in columns:
        value = row[name]
        if shown is None:
            cells.append(_text_cell(ws, str(value)))
        elif pd.isna(value):
            cells.append(None)
        else:
            scale = 1e3 if name.endswith(("_s_p10", "_s_p50", "_s_p90", "_p95_s")) else 1.0
            cells.append(_cell(ws, float(value) * scale, shown))
    return cells


def write_uncertainty(wb: Workbook, bands: Bands | None) -> None:
    """Add the sheet (nothing without draws)."""
    if bands is None:
        return
    ws = _new_sheet(wb, "Uncertainty", "7030A0")
    _widths(ws, [34, 18, 16, 12, 8, 12, 14, 12, 12, 14, 14, 13, 13, 12, 12])
    title = (
        f"The plan over {bands.draws:,} draws of its uncertain inputs (constants: each draw is "
        "the whole plan evaluated again; the Plan sheet holds the central values as formulas)"
    )
    ws.append([_text_cell(ws, title, font=TITLE_FONT)])
    ws.append(_header(ws, ["uncertain input", "distribution"]))
    for i in bands.inputs:
        ws.append([_text_cell(ws, i.label), _text_cell(ws, i.distribution.describe())])
    written = 2 + len(bands.inputs)
    ws.append([])
    ws.append(
        [_text_cell(ws, "The winner of each workload × model, over the draws", font=TITLE_FONT)]
    )
    ws.append(_header(ws, [heading for heading, _, _ in PURCHASE_COLUMNS]))
    for _, row in bands.purchases.iterrows():
        ws.append(_row(ws, row, PURCHASE_COLUMNS))
    written += 3 + len(bands.purchases)
    options = leading_options(bands)
    ws.append([])
    ws.append([_text_cell(ws, "Options that were the cheapest in some draw", font=TITLE_FONT)])
    ws.append(_header(ws, [heading for heading, _, _ in OPTION_COLUMNS]))
    for _, row in options.iterrows():
        ws.append(_row(ws, row, OPTION_COLUMNS))
    written += 3 + len(options)
    simulated = bands.simulated
    if simulated is not None and not simulated.empty:
        ws.append([])
        title = "Each line's winner at the draw of its P90 cost, simulated under that draw's inputs"
        ws.append([_text_cell(ws, title, font=TITLE_FONT)])
        ws.append(_header(ws, [heading for heading, _, _ in SIMULATED_COLUMNS]))
        for _, row in simulated.iterrows():
            ws.append(_row(ws, row, SIMULATED_COLUMNS))
        written += 3 + len(simulated)
    _print_setup(ws, f"A1:O{written}")
