"""The ``Fleet months`` sheet: the shared fleet over the months of the forecasts, a block per
device type, as live formulas.

A block's inputs are what finance may change: the node's devices, the spare nodes kept once a
device is owned, the lead time and discount rate, a device's capital, running cost and rent and
a node's overhead (the plan's cost metrics over one node, split as the fleet's optimiser splits
them). Each month's row has the devices worth owning (the planner's least-cost count, an input)
and the devices each hour of its day needs (the optimiser's mix grown with the month's traffic,
inputs); every other cell is a metric of :mod:`planner.model.fleet_months` over the cells its
arguments name, cached with the planner's own evaluation of the same metrics. The last rows add
the types' net present values and the hosted API's share. This module lays the cells out and
computes nothing.
"""

from __future__ import annotations

from typing import Any

from openpyxl import Workbook
from openpyxl.utils import get_column_letter

from planner.model.finance import HOURS
from planner.model.fleet_months import FLEET_HORIZON, FLEET_LEASE_BLOCK, FLEET_LEASE_HORIZON
from planner.outputs.workbook.cells import (
    INPUT_FILL,
    TITLE_FONT,
    _cell,
    _formula_cell,
    _header,
    _new_sheet,
    _print_setup,
    _text_cell,
    _widths,
)
from planner.outputs.workbook.schedule import Places, Rows
from planner.plan.fleet_schedule import FleetSchedule, TypeSchedule

#: A block's month columns: header and number format (the inputs among them in :data:`TYPED`).
MONTH_COLUMNS = [
    ("month", "0"),
    ("devices_worth_owning", "0"),
    ("devices_wanted", "0"),
    ("devices_owned", "0"),
    ("type_nodes_owned", "0"),
    ("devices_serving", "0"),
    ("rented_device_hours_per_day", "0"),
    ("devices_arriving", "0"),
    ("type_nodes_arriving", "0"),
    ("fleet_cash_usd", "#,##0"),
    ("fleet_rent_everything_usd", "#,##0"),
    ("discount_factor", "0.0000"),
    ("fleet_book_value_at_end_usd", "#,##0"),
]
#: The month column of the facility's power, written where the board power is known.
POWER_COLUMNS = [("owned_peak_kw", "0.0")]

#: The month columns of a lease, written where the assumptions give one.
LEASE_COLUMNS = [
    ("lease_paying_devices", "0"),
    ("lease_paying_type_nodes", "0"),
    ("fleet_lease_cash_usd", "#,##0"),
]
NAMES = [name for name, _ in MONTH_COLUMNS]

#: The month columns typed in, not computed.
TYPED = frozenset({"month", "devices_worth_owning"})

#: A block's inputs: name, unit and number format.
INPUTS = [
    ("type_node_devices", "devices", "0"),
    ("type_spare_nodes", "nodes", "0"),
    ("lead_time_months", "months", "0"),
    ("discount_rate_per_year", "fraction", "0.0%"),
    ("device_capital_usd", "USD", "#,##0.00"),
    ("device_running_usd_per_month", "USD/month", "#,##0.00"),
    ("device_rent_usd_per_month", "USD/month", "#,##0.00"),
    ("overhead_capital_usd", "USD", "#,##0.00"),
    ("overhead_running_usd_per_month", "USD/month", "#,##0.00"),
]

#: A lease's inputs, and its payments (formulas over them), where the assumptions give one.
LEASE_INPUTS = [("lease_rate_per_year", "fraction", "0.0%"), ("lease_term_months", "months", "0")]
LEASE_PAYMENTS = [(name, "USD/month", "#,##0.00") for name in FLEET_LEASE_BLOCK]


def _nowhere(name: str) -> str:
    raise KeyError(f"a fleet block reads no Plan cell: {name}")


def write_fleet_months(wb: Workbook, found: FleetSchedule | None) -> dict[str, Any]:
    """Add the sheet (nothing without a fleet schedule); returns its formula cells' cached
    values."""
    if found is None or not found.types:
        return {}
    ws = _new_sheet(wb, "Fleet months", "2E75B6")
    _widths(ws, [38] + [18] * (len(NAMES) + len(POWER_COLUMNS) + len(LEASE_COLUMNS) - 1)
            + [5] * HOURS)  # fmt: skip
    rows = Rows()
    cache: dict[str, Any] = {}
    rows.add([_text_cell(ws, "Fleet months: the shared fleet over the forecasts", font=TITLE_FONT)])
    rows.add([_text_cell(ws, "Blue cells are inputs; every other figure is a formula over them.")])
    npv_cells = []
    for t in found.types:
        rows.add()
        npv_cells.append(_block(ws, t, rows, cache))
    rows.add()
    api = rows.add([_text_cell(ws, "api_npv_usd"),
                    _cell(ws, found.api_npv_usd, "#,##0", fill=INPUT_FILL),
                    _text_cell(ws, "USD: the hosted API's share, month by month")])  # fmt: skip
    total = rows.add()
    formula = "=" + "+".join([*npv_cells, f"B{api}"])
    rows.fill(total, [_text_cell(ws, "fleet_months_npv_usd"), _formula_cell(ws, formula, "#,##0"),
                      _text_cell(ws, "USD: every type and the API")])  # fmt: skip
    cache[f"B{total}"] = found.npv_usd
    for cells in rows.cells:
        ws.append(cells)
    last = len(NAMES) + len(POWER_COLUMNS) + len(LEASE_COLUMNS) + HOURS
    _print_setup(ws, f"A1:{get_column_letter(last)}{len(rows.cells)}")
    return cache


def _block(ws: Any, t: TypeSchedule, rows: Rows, cache: dict[str, Any]) -> str:
    """One device type's block: its inputs, a row per month, its totals; the address of its
    net present value."""
    leased, powered = "fleet_lease_cash_usd" in t.table, "owned_peak_kw" in t.table
    columns = MONTH_COLUMNS + (POWER_COLUMNS if powered else []) + (LEASE_COLUMNS if leased else [])
    names = [name for name, _ in columns]
    rows.add([_text_cell(ws, f"{t.hardware}: devices owned and rented by month", font=TITLE_FONT)])
    at = {}
    power = [("device_power_w", "W", "0")] if powered else []
    for name, unit, fmt in INPUTS + power + (LEASE_INPUTS if leased else []):
        number = rows.add([_text_cell(ws, name), _cell(ws, t.block[name], fmt, fill=INPUT_FILL),
                           _text_cell(ws, unit)])  # fmt: skip
        at[name] = f"$B${number}"
    places = Places(at, _nowhere, 0, len(t.hours), names=names, hourly="hourly_devices")
    for name, unit, fmt in LEASE_PAYMENTS if leased else []:
        number = rows.add()
        at[name] = f"$B${number}"
        rows.fill(number, [_text_cell(ws, name), _formula_cell(ws, places.formula(name), fmt),
                           _text_cell(ws, unit)])  # fmt: skip
        cache[f"B{number}"] = t.block[name]
    places.first = len(rows.cells) + 2
    header = rows.add(_header(ws, names + [f"devices_h{h:02d}" for h in range(HOURS)]))
    assert header + 1 == places.first
    for m in range(places.months):
        rows.add(_month_row(ws, t, places, columns, m, cache))
    horizon = FLEET_HORIZON + (FLEET_LEASE_HORIZON if leased else ())
    numbers = {name: rows.add() for name in horizon}
    places.totals = {name: f"B{numbers[name]}" for name in horizon}
    for name in horizon:
        cell = _formula_cell(ws, places.formula(name), "#,##0")
        rows.fill(numbers[name], [_text_cell(ws, name), cell, _text_cell(ws, "USD")])
        cache[f"B{numbers[name]}"] = t.totals[name]
    return f"B{numbers['fleet_npv_usd']}"


def _month_row(
    ws: Any,
    t: TypeSchedule,
    places: Places,
    columns: list[tuple[str, str]],
    m: int,
    cache: dict[str, Any],
) -> list[Any]:
    """Month ``m``'s row: the typed columns, each month metric's formula, each hour's devices."""
    r = places.first + m
    cells = []
    for name, fmt in columns:
        if name in TYPED:
            style = {"fill": INPUT_FILL} if name != "month" else {}
            cells.append(_cell(ws, t.table[name][m], fmt, **style))
            continue
        cells.append(_formula_cell(ws, places.formula(name, r), fmt))
        cache[f"{places.column(name)}{r}"] = t.table[name][m]
    return cells + [_cell(ws, d, "0", fill=INPUT_FILL) for d in t.table["hourly_devices"][m]]
