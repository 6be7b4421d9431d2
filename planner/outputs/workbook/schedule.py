"""The ``Schedule`` sheet: capacity over time as live formulas (workloads with a forecast); and
the ``Sensitivity`` sheet beside it.

One block per workload: its inputs (growth, spare nodes, lead time, discount rate: editable;
the per-node costs and the replica figures read from the option's Plan row), then a row per
month, with the nodes each hour of the day needs beside it, then the totals over the horizon.
Every computed cell is a schedule metric's formula (:mod:`planner.model.need`,
:mod:`planner.model.finance`) over the cells its arguments name (:class:`Places`); the per-node
costs are the Plan's cost metrics over one node. This module lays the cells out and computes
nothing: the cached values are :mod:`planner.plan.schedule`'s evaluation of the same metrics,
so a spreadsheet that recalculates shows the same figures until an input is edited.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from openpyxl import Workbook
from openpyxl.utils import get_column_letter

from planner.model import finance
from planner.model.expr import to_excel
from planner.model.metric import metrics
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
from planner.outputs.workbook.plan import PlanLayout, read_number
from planner.plan.assumptions import GLOBALS
from planner.plan.schedule import HOURS, NODE_COST_METRICS, GrowthCase, WorkloadSchedule

#: The month table's columns: header and number format.
MONTH_COLUMNS = [
    ("month", "0"),
    ("traffic_factor", "0.00"),
    ("replicas", "0"),
    ("nodes_needed", "0"),
    ("nodes_base", "0"),
    ("nodes_worth_owning", "0"),
    ("nodes_owned", "0"),
    ("nodes_rented", "0"),
    ("nodes_arriving", "0"),
    ("rented_node_hours_per_day", "0"),
    ("cash_usd", "#,##0"),
    ("cumulative_usd", "#,##0"),
    ("rent_everything_usd", "#,##0"),
    ("up_front_cash_usd", "#,##0"),
    ("discount_factor", "0.0000"),
    ("book_value_at_end_usd", "#,##0"),
    ("depreciation_usd", "#,##0"),
    ("rent_cumulative_usd", "#,##0"),
    ("stays_at_or_below_rent", "0"),
    ("lease_paying_nodes", "0"),
    ("lease_cash_usd", "#,##0"),
]

#: Month columns written only when the assumptions give a lease.
LEASE_COLUMNS = frozenset({"lease_paying_nodes", "lease_cash_usd"})

#: The block's input rows: name, unit, whether finance edits it (else a formula over the Plan).
INPUTS = [
    ("growth_per_month", "fraction", True),
    ("spare_nodes", "nodes", True),
    ("lead_time_months", "months", True),
    ("discount_rate_per_year", "fraction", True),
    ("lease_rate_per_year", "fraction", True),
    ("lease_term_months", "months", True),
    ("lease_payment_usd_per_month", "USD/month", False),
    ("node_devices", "devices", False),
    ("node_capital_usd", "USD", False),
    ("node_running_usd_per_month", "USD/month", False),
    ("node_rent_usd_per_month", "USD/month", False),
    ("node_owned_usd_per_month", "USD/month", False),
    ("break_even_hours_per_day", "h/day", False),
    ("simulation_raise", "ratio", False),
]

#: The block's rows over the horizon: name, unit and the schedule metric each is.
TOTALS = [
    ("cash_usd", "USD", "total_cash_usd"),
    ("book_value_at_end_usd", "USD", "total_book_value_at_end_usd"),
    ("net_usd", "USD", "net_usd"),
    ("npv_usd", "USD", "npv_usd"),
    ("payback_month", "month", "payback_month"),
    ("rent_everything_usd", "USD", "total_rent_everything_usd"),
    ("rent_everything_npv_usd", "USD", "rent_everything_npv_usd"),
    ("up_front_cash_usd", "USD", "total_up_front_cash_usd"),
    ("up_front_book_value_at_end_usd", "USD", "up_front_book_value_at_end_usd"),
    ("up_front_net_usd", "USD", "up_front_net_usd"),
    ("up_front_npv_usd", "USD", "up_front_npv_usd"),
    ("lease_cash_usd", "USD", "total_lease_cash_usd"),
    ("lease_owed_at_end_usd", "USD", "lease_owed_at_end_usd"),
    ("lease_net_usd", "USD", "lease_net_usd"),
    ("lease_npv_usd", "USD", "lease_npv_usd"),
]


#: The block's per-node cost rows and the cost metric each is, over one node's devices.
NODE_COST_COLUMNS = {
    "node_capital_usd": "capital_usd",
    "node_running_usd_per_month": "opex_usd_per_month",
    "node_rent_usd_per_month": "cloud_usd_per_month",
}


def _node_formula(name: str, plan: Callable[[str], str], at: dict[str, str]) -> str:
    """A cost metric's own formula over one node (:func:`planner.plan.schedule.node_costs`):
    ``devices_needed`` is the node's devices (the block's ``node_devices`` cell),
    ``nodes_needed`` 1, an assumption its named cell, a cost metric it needs its formula,
    anything else the option's Plan cell."""
    assumptions = _assumptions()

    def resolve(term: str) -> str:
        if term == "devices_needed":
            return at["node_devices"]
        if term == "nodes_needed":
            return "1"
        if term in assumptions:
            return assumptions[term]
        if term in NODE_COST_METRICS:
            return f"({_node_formula(term, plan, at)})"
        return plan(term)

    return to_excel(metrics()[name].expression(), resolve)[1:]


#: The month table's column names, in order.
MONTH_NAMES = [c for c, _ in MONTH_COLUMNS]


class Rows:
    """The sheet's rows as they are built: a row may be reserved first (its number is needed by
    formulas above it) and filled later."""

    def __init__(self) -> None:
        self.cells: list[list[Any]] = []

    def add(self, cells: list[Any] | None = None) -> int:
        """Append a row; its 1-based number."""
        self.cells.append(cells or [])
        return len(self.cells)

    def fill(self, number: int, cells: list[Any]) -> None:
        self.cells[number - 1] = cells


def write_schedule(
    wb: Workbook, found: list[WorkloadSchedule], layout: PlanLayout, positions: dict[Any, int]
) -> dict[str, Any]:
    """Add the sheet (nothing without a schedule); returns its formula cells' cached values.
    ``positions`` maps a results-table index to its position (the Plan row is position + 2)."""
    if not found:
        return {}
    ws = _new_sheet(wb, "Schedule", "7030A0")
    _widths(
        ws, [30, 14, 10, 14, 13, 13, 18, 13, 13, 15, 24, 12, 15, 20, 18, 15, 22, 17] + [5] * HOURS
    )
    cache: dict[str, Any] = {}
    rows = Rows()
    for i, s in enumerate(found):
        if i:
            rows.add()  # a blank row between blocks
        _block(ws, s, layout, positions[s.line.row.name] + 2, rows, cache)
    for cells in rows.cells:
        ws.append(cells)
    _print_setup(ws, f"A1:{get_column_letter(len(MONTH_NAMES) + HOURS)}{len(rows.cells)}")
    return cache


@dataclass
class Places:
    """Where one block's quantities are, so that a metric's formula can name them: the block's
    input cells, the month rows, the profile row, the totals' cells, the option's Plan row."""

    at: dict[str, str]
    plan: Callable[[str], str]
    first: int
    months: int
    profile_row: int = 0
    totals: dict[str, str] = field(default_factory=dict)
    #: the month table's named columns, and the name of the range of its hour cells after them
    names: list[str] = field(default_factory=lambda: MONTH_NAMES)
    hourly: str = "hourly_nodes"

    @property
    def last(self) -> int:
        return self.first + self.months - 1

    def ref(self, row: int = 0, hour: int = 0) -> Callable[[str], str]:
        """The cell (or range) each name reads in month row ``row`` and hour ``hour``."""
        first, last = self.hour_letter(0), self.hour_letter(HOURS - 1)
        hours = f"${first}{{r}}:${last}{{r}}"
        special = {
            self.hourly: hours.format(r=row),
            "daily_profile": hours.format(r=f"${self.profile_row}"),
            "hour_share": f"{self.hour_letter(hour)}${self.profile_row}",
            "months": str(self.months),
        }

        def resolve(name: str) -> str:
            if name in self.totals or name in special:
                return (self.totals | special)[name]
            form, column = finance.reference(name)
            if column in self.names:
                return self._month(form, column, row, name)
            if name in self.at:
                return self.at[name]
            return _assumptions().get(name) or self.plan(name)

        return resolve

    def _month(self, form: str, column: str, row: int, name: str) -> str:
        """Month column ``column`` as ``form`` (:func:`planner.model.finance.reference`) reads
        it from row ``row``."""
        letter = self.column(column)
        if form == "all":
            return f"{letter}${self.first}:{letter}${self.last}"
        if form == "so_far":
            return f"{letter}${self.first}:{letter}{row}"
        other = row + {"previous": -1, "next": 1}.get(form, 0)
        if not self.first <= other <= self.last:
            return str(finance.EDGES[name])
        return f"{letter}{other}"

    def column(self, name: str) -> str:
        """The column of a named month column."""
        return get_column_letter(self.names.index(name) + 1)

    def hour_letter(self, hour: int) -> str:
        """The column of an hour's cell in the month table (after its named columns), and of
        its share in the profile row."""
        return get_column_letter(len(self.names) + 1 + hour)

    def formula(self, name: str, row: int = 0, hour: int = 0) -> str:
        """Schedule metric ``name``'s formula at ``row`` and ``hour``."""
        return to_excel(finance.schedule_metrics()[name].expression(), self.ref(row, hour))


def _assumptions() -> dict[str, str]:
    """Each assumption's named cell, scaled to base units."""
    return {g.name: g.cell if g.scale == 1 else f"({g.cell}*{g.scale!r})" for g in GLOBALS}


def _block(
    ws: Any,
    s: WorkloadSchedule,
    layout: PlanLayout,
    plan_row: int,
    rows: Rows,
    cache: dict[str, Any],
) -> None:
    """One workload's block: its inputs, a row per month, its totals."""

    def plan(column: str) -> str:
        return read_number(f"Plan!${layout.letters[column]}${plan_row}")

    title = f"{s.workload.id}: {s.line.row['candidate']} ({s.plans['schedule'].name})"
    rows.add([_text_cell(ws, title, font=TITLE_FONT)])
    # reserved first: the formulas below need every address
    at = {name: f"$B${rows.add()}" for name, _, _ in INPUTS}
    places = Places(at, plan, len(rows.cells) + 4, len(s.nodes))
    _inputs(ws, s, places, rows, cache)
    rows.add(
        [_text_cell(ws, "hour")]
        + [None] * (len(MONTH_COLUMNS) - 1)
        + [_cell(ws, h, "0") for h in range(HOURS)]
    )
    places.profile_row = rows.add(
        [_text_cell(ws, "daily_profile"), None, _text_cell(ws, "of the busiest hour")]
        + [None] * (len(MONTH_COLUMNS) - 3)
        + [_cell(ws, share, "0%", fill=INPUT_FILL) for share in s.profile]
    )
    header = rows.add(
        _header(ws, [c for c, _ in MONTH_COLUMNS] + [f"nodes_h{h:02d}" for h in range(HOURS)])
    )
    assert header + 1 == places.first
    for m in range(places.months):
        rows.add(_month_row(ws, s, places, m, cache))
    _totals(ws, s, places, rows, cache)


def _tabled(s: WorkloadSchedule) -> bool:
    """Whether the forecast gives its traffic month by month (typed in, not a growth formula)."""
    forecast = s.workload.forecast
    return forecast is not None and (forecast.factors is not None or forecast.file is not None)


def _inputs(
    ws: Any, s: WorkloadSchedule, places: Places, rows: Rows, cache: dict[str, Any]
) -> None:
    """The block's input rows: a value finance edits, or a metric's formula."""
    for name, unit, editable in INPUTS:
        number = int(places.at[name].split("$")[-1])
        if name == "growth_per_month" and _tabled(s):
            cell = _text_cell(ws, "month by month below")
        elif name.startswith("lease_") and s.lease is None:
            cell = _text_cell(ws, "no lease in the assumptions")
        elif editable:
            fmt = "0.0%" if unit == "fraction" else "0"
            cell = _cell(ws, s.block[name], fmt, fill=INPUT_FILL)
        else:
            if name in NODE_COST_COLUMNS:
                formula = "=" + _node_formula(NODE_COST_COLUMNS[name], places.plan, places.at)
            else:
                formula = places.formula(name)
            cell = _formula_cell(ws, formula, "0" if unit == "devices" else "#,##0.00")
            cache[f"B{number}"] = s.block[name]
        rows.fill(number, [_text_cell(ws, name), cell, _text_cell(ws, unit)])


def _month_row(
    ws: Any, s: WorkloadSchedule, places: Places, m: int, cache: dict[str, Any]
) -> list[Any]:
    """Month ``m``'s row: each month metric's formula, then the nodes each hour needs."""
    r = places.first + m
    cells = []
    for name, fmt in MONTH_COLUMNS:
        if name == "month":
            cells.append(_cell(ws, m, fmt))
        elif name == "traffic_factor" and _tabled(s):  # the forecast's table: typed
            cells.append(_cell(ws, s.factors[m], fmt, fill=INPUT_FILL))
        elif name in LEASE_COLUMNS and s.lease is None:
            cells.append(None)
        else:
            cells.append(_formula_cell(ws, places.formula(name, r), fmt))
            cache[f"{places.column(name)}{r}"] = s.table[name][m]
    for h in range(HOURS):
        cells.append(_formula_cell(ws, places.formula("hour_nodes", r, h), "0"))
        cache[f"{places.hour_letter(h)}{r}"] = s.table["hourly_nodes"][m][h]
    return cells


def _totals(
    ws: Any, s: WorkloadSchedule, places: Places, rows: Rows, cache: dict[str, Any]
) -> None:
    """The rows over the horizon: each total metric's formula."""
    numbers = {name: rows.add() for name, _, _ in TOTALS}
    places.totals = {metric: f"B{numbers[name]}" for name, _, metric in TOTALS}
    for name, unit, metric in TOTALS:
        if name.startswith("lease_") and s.lease is None:
            words = _text_cell(ws, "no lease in the assumptions")
            rows.fill(numbers[name], [_text_cell(ws, name), words])
            continue
        formula = _formula_cell(ws, places.formula(metric), "#,##0" if unit == "USD" else "0")
        rows.fill(numbers[name], [_text_cell(ws, name), formula, _text_cell(ws, unit)])
        cache[f"B{numbers[name]}"] = s.totals[metric]


#: The Sensitivity sheet's columns: header and number format.
SENSITIVITY_COLUMNS = [
    ("input", None),
    ("cost_lowered_usd", "#,##0"),
    ("cost_raised_usd", "#,##0"),
    ("devices_lowered", "0"),
    ("devices_raised", "0"),
    ("changes_the_ask", None),
]


#: The growth table's columns (below the tornado's): header and number format.
GROWTH_COLUMNS = [
    ("workload", None),
    ("growth", None),
    ("peak_nodes", "0"),
    ("npv_schedule_usd", "#,##0"),
    ("npv_rent_everything_usd", "#,##0"),
    ("npv_up_front_usd", "#,##0"),
    ("npv_lease_usd", "#,##0"),
    ("cheapest", None),
]


def write_sensitivity(
    wb: Workbook,
    tornado: tuple[float, float, list[Any]] | None,
    swing: float,
    growth: list[tuple[WorkloadSchedule, list[GrowthCase]]] | None = None,
) -> None:
    """Add the ``Sensitivity`` sheet: the ask's cost over the period and devices with each
    uncertain input moved by ±``swing`` (constants: each is the plan evaluated again); with
    ``growth``, each schedule's peak and ways of paying with its growth lowered and raised."""
    if tornado is None:
        return
    base_usd, base_devices, bars = tornado
    ws = _new_sheet(wb, "Sensitivity", "C00000")
    _widths(ws, [24, 18, 18, 16, 16, 24])
    title = (
        f"The ask with each uncertain input moved by −/+{swing:.0%}, in closed form (constants: "
        "each row is the whole plan evaluated again)"
    )
    ws.append([_text_cell(ws, title, font=TITLE_FONT)])
    ws.append(
        [_text_cell(ws, "inputs as given"), _cell(ws, base_usd, "#,##0"), None,
         _cell(ws, base_devices, "0")]
    )  # fmt: skip
    ws.append(_header(ws, [name for name, _ in SENSITIVITY_COLUMNS]))
    for bar in bars:
        flips = ", ".join(bar.flips) or "no"
        ws.append(
            [
                _text_cell(ws, bar.label),
                _cell(ws, bar.low_usd, "#,##0"),
                _cell(ws, bar.high_usd, "#,##0"),
                _cell(ws, bar.low_devices, "0"),
                _cell(ws, bar.high_devices, "0"),
                _text_cell(ws, flips),
            ]
        )
    written = len(bars) + 3
    if growth:
        written += 3 + sum(len(cases) for _, cases in growth)
        ws.append([])
        title = (
            f"Each forecast's schedule with its traffic growth moved by −/+{swing:.0%} "
            "(constants: each row is the schedule computed again)"
        )
        ws.append([_text_cell(ws, title, font=TITLE_FONT)])
        ws.append(_header(ws, [name for name, _ in GROWTH_COLUMNS]))
        for found, cases in growth:
            for case in cases:
                npv = {
                    key: case.npv_usd.get(key) for key in ("schedule", "rent", "up_front", "lease")
                }
                ws.append(
                    [
                        _text_cell(ws, found.workload.id),
                        _text_cell(ws, "as forecast" if case.scale == 1 else f"× {case.scale:g}"),
                        _cell(ws, case.peak_nodes, "0"),
                        *(_cell(ws, v, "#,##0") if v is not None else None for v in npv.values()),
                        _text_cell(ws, found.plans[case.cheapest].name),
                    ]
                )
    _print_setup(ws, f"A1:H{written}")
