"""The ``Schedule`` sheet: capacity over time as live formulas (workloads with a forecast); and
the ``Sensitivity`` sheet beside it.

One block per workload: its inputs (growth, spare nodes, lead time, discount rate: editable;
the per-node costs and the replica figures read from the option's Plan row), then a row per
month, with the nodes each hour of the day needs beside it. Each hour's replicas are the
``replicas_needed`` metric's own formula over the traffic scaled by the month's factor and the
hour's share of the daily profile (editable, the busiest hour 1); the nodes worth owning are the
hourly need ranked (break-even hours + 1)-th largest; those owned in service are their running
maximum once the lead time has passed; every hour's need beyond them is rented by the hour.
The cached values are :mod:`planner.plan.schedule`'s, so a spreadsheet that recalculates shows the
same figures until an input is edited.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from openpyxl import Workbook
from openpyxl.utils import get_column_letter

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
from planner.plan.schedule import (
    HOURS,
    NODE_COST_METRICS,
    GrowthCase,
    WorkloadSchedule,
    book_value_usd,
    break_even_hours,
    depreciation_usd,
    discount_factor,
    lease_payment_usd,
    nodes_worth_owning,
    rented_node_hours,
    simulation_raise,
)

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

TOTALS = [("cash_usd", "USD"), ("book_value_at_end_usd", "USD"), ("net_usd", "USD"),
          ("npv_usd", "USD"), ("payback_month", "month"), ("rent_everything_usd", "USD"),
          ("rent_everything_npv_usd", "USD"), ("up_front_cash_usd", "USD"),
          ("up_front_book_value_at_end_usd", "USD"), ("up_front_net_usd", "USD"),
          ("up_front_npv_usd", "USD"), ("lease_cash_usd", "USD"),
          ("lease_owed_at_end_usd", "USD"), ("lease_net_usd", "USD"),
          ("lease_npv_usd", "USD")]  # fmt: skip


#: The block's per-node cost rows and the cost metric each is, over one node's devices.
NODE_COST_COLUMNS = {
    "node_capital_usd": "capital_usd",
    "node_running_usd_per_month": "opex_usd_per_month",
    "node_rent_usd_per_month": "cloud_usd_per_month",
}


def _node_formula(name: str, plan: Callable[[str], str], devices: str) -> str:
    """A cost metric's own formula over one node (:func:`planner.plan.schedule.node_costs`):
    ``devices_needed`` is the node's devices (the cell ``devices``), ``nodes_needed`` 1, an
    assumption its named cell, a cost metric it needs its formula, anything else the option's
    Plan cell."""
    assumptions = {g.name: g.cell if g.scale == 1 else f"({g.cell}*{g.scale!r})" for g in GLOBALS}

    def resolve(term: str) -> str:
        if term == "devices_needed":
            return devices
        if term == "nodes_needed":
            return "1"
        if term in assumptions:
            return assumptions[term]
        if term in NODE_COST_METRICS:
            return f"({_node_formula(term, plan, devices)})"
        return plan(term)

    return to_excel(metrics()[name].expression(), resolve)[1:]


def _letter(name: str) -> str:
    return get_column_letter([c for c, _ in MONTH_COLUMNS].index(name) + 1)


def _hour_letter(hour: int) -> str:
    """The column of an hour's nodes in the month table (after its named columns), and of its
    share in the profile row."""
    return get_column_letter(len(MONTH_COLUMNS) + 1 + hour)


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
    _print_setup(ws, f"A1:{_hour_letter(HOURS - 1)}{len(rows.cells)}")
    return cache


def _block(
    ws: Any,
    s: WorkloadSchedule,
    layout: PlanLayout,
    plan_row: int,
    rows: Rows,
    cache: dict[str, Any],
) -> None:
    """One workload's block: its inputs, a row per month, its totals."""
    row = s.line.row
    forecast = s.workload.forecast
    assert forecast is not None

    def plan(column: str) -> str:
        return read_number(f"Plan!${layout.letters[column]}${plan_row}")

    title = f"{s.workload.id}: {row['candidate']} ({s.plans['schedule'].name})"
    rows.add([_text_cell(ws, title, font=TITLE_FONT)])
    at: dict[str, str] = {}
    costs = s.costs
    values = {
        "growth_per_month": forecast.growth_per_month or 0.0,
        "spare_nodes": forecast.spare_nodes,
        "lead_time_months": s.lead_time_months,
        "discount_rate_per_year": s.discount_rate_per_year,
        "lease_rate_per_year": s.lease[0] if s.lease else None,
        "lease_term_months": s.lease[1] if s.lease else None,
        "lease_payment_usd_per_month": (
            lease_payment_usd(costs.capital_usd, *s.lease) if s.lease else None
        ),
        "node_devices": s.node_devices,
        "node_capital_usd": costs.capital_usd,
        "node_running_usd_per_month": costs.running_usd_per_month,
        "node_rent_usd_per_month": costs.rent_usd_per_month,
        "node_owned_usd_per_month": costs.owned_usd_per_month,
        "break_even_hours_per_day": break_even_hours(costs),
        "simulation_raise": simulation_raise(row),
    }
    for name, _, _ in INPUTS:  # reserved first: the formulas below need every address
        at[name] = f"$B${rows.add()}"
    first = len(rows.cells) + 4  # after the hour row, the profile row and the header
    last = first + len(s.nodes) - 1
    tp = plan("tensor_parallel")
    formulas = {
        "node_devices": (
            f"=MIN({plan('devices_per_node')},MAX({tp},"
            f"MAX({_letter('replicas')}${first}:{_letter('replicas')}${last})*{tp}))"
        ),
        **{
            column: "=" + _node_formula(metric, plan, at["node_devices"])
            for column, metric in NODE_COST_COLUMNS.items()
        },
    }
    formulas["node_owned_usd_per_month"] = (
        f"={at['node_capital_usd']}/amortisation_months+{at['node_running_usd_per_month']}"
    )
    formulas["break_even_hours_per_day"] = (
        f"=IF({at['node_rent_usd_per_month']}>0,"
        f"{HOURS}*{at['node_owned_usd_per_month']}/{at['node_rent_usd_per_month']},{HOURS})"
    )
    rate, term = at["lease_rate_per_year"], at["lease_term_months"]
    formulas["lease_payment_usd_per_month"] = (
        f"=IF({rate}=0,{at['node_capital_usd']}/{term},"
        f"{at['node_capital_usd']}*({rate}/12)/(1-(1+{rate}/12)^(-{term})))"
    )
    formulas["simulation_raise"] = (
        f"=IF({plan('replicas_needed')}>0,{plan('replicas_planned')}/{plan('replicas_needed')},1)"
    )
    tabled = forecast.factors is not None or forecast.file is not None
    for name, unit, editable in INPUTS:
        number = int(at[name].split("$")[-1])
        value = values[name]
        if name == "growth_per_month" and tabled:
            cell = _text_cell(ws, "month by month below")
        elif name.startswith("lease_") and s.lease is None:
            cell = _text_cell(ws, "no lease in the assumptions")
        elif editable:
            cell = _cell(ws, value, "0.0%" if unit == "fraction" else "0", fill=INPUT_FILL)
        else:
            cell = _formula_cell(ws, formulas[name], "0" if unit == "devices" else "#,##0.00")
            cache[f"B{number}"] = value
        rows.fill(number, [_text_cell(ws, name), cell, _text_cell(ws, unit)])
    rows.add(
        [_text_cell(ws, "hour")]
        + [None] * (len(MONTH_COLUMNS) - 1)
        + [_cell(ws, h, "0") for h in range(HOURS)]
    )
    profile_row = rows.add(
        [_text_cell(ws, "daily_profile"), None, _text_cell(ws, "of the busiest hour")]
        + [None] * (len(MONTH_COLUMNS) - 3)
        + [_cell(ws, share, "0%", fill=INPUT_FILL) for share in s.profile]
    )
    profile = f"${_hour_letter(0)}${profile_row}:${_hour_letter(HOURS - 1)}${profile_row}"
    header = rows.add(
        _header(ws, [c for c, _ in MONTH_COLUMNS] + [f"nodes_h{h:02d}" for h in range(HOURS)])
    )
    assert header + 1 == first
    needed = metrics()["replicas_needed"].expression()
    schedule = s.plans["schedule"]
    cumulative = schedule.cumulative_usd()
    months = len(s.nodes)
    need = _letter("nodes_needed")
    worth = _letter("nodes_worth_owning")
    peak = f"MAX({need}${first}:{need}${last})"

    def replicas_at(factor: str) -> str:
        """The replicas_needed formula over the traffic scaled by ``factor``, raised by the
        simulation and rounded up to whole replicas."""
        scaled = {
            "concurrency": f"({plan('concurrency')}*{factor})",
            "replica_capacity_sequences": plan("replica_capacity_sequences"),
            "in_flight_requests": f"({plan('in_flight_requests')}*{factor})",
            "forecast_requests_per_s": f"({plan('forecast_requests_per_s')}*{factor})",
            "requests_per_s_per_replica": plan("requests_per_s_per_replica"),
        }
        expression = to_excel(needed, scaled.__getitem__)[1:]
        return f"ROUNDUP(({expression})*{at['simulation_raise']}-1E-9,0)"

    depreciation = depreciation_usd(schedule.owned, costs.capital_usd, costs.amortisation_months)
    rent_cumulative = s.plans["rent"].cumulative_usd()
    stays = list(zip(rent_cumulative, cumulative, strict=True))
    term_n = s.lease[1] if s.lease else 0
    paying = [
        n - (schedule.owned[m - term_n] if m >= term_n else 0) for m, n in enumerate(schedule.owned)
    ]
    for m in range(months):
        r = first + m

        def cell(name: str, row_number: int = r) -> str:
            return f"{_letter(name)}{row_number}"

        factor = cell("traffic_factor")
        day = f"${_hour_letter(0)}{r}:${_hour_letter(HOURS - 1)}{r}"
        owned_now = cell("nodes_owned")
        peak_owned = f"IF({cell('month')}>={at['lead_time_months']},{peak},0)"
        previous_owned = f"{cell('nodes_owned', r - 1)}" if m else "0"
        arriving = schedule.owned[m] - (schedule.owned[m - 1] if m else 0)
        discount = discount_factor(s.discount_rate_per_year, m)
        book = book_value_usd(costs.capital_usd, months - m, costs.amortisation_months)
        formulas_m = {
            "traffic_factor": f"=(1+{at['growth_per_month']})^{cell('month')}",
            "replicas": f"={replicas_at(f'{factor}*MAX({profile})')}",
            "nodes_needed": f"=MAX({day})",
            "nodes_base": f"=MIN({day})",
            "nodes_worth_owning": (
                f"=IF({at['break_even_hours_per_day']}<{HOURS},"
                f"LARGE({day},INT({at['break_even_hours_per_day']})+1),0)"
            ),
            "nodes_owned": (
                f"=IF({cell('month')}>={at['lead_time_months']},"
                f"MAX({worth}${first}:{cell('nodes_worth_owning')}),0)"
            ),
            "nodes_rented": f"=MAX({cell('nodes_needed')}-{owned_now},0)",
            "nodes_arriving": f"={owned_now}-{previous_owned}",
            "rented_node_hours_per_day": f"=SUMPRODUCT(({day}>{owned_now})*({day}-{owned_now}))",
            "cash_usd": (
                f"={cell('nodes_arriving')}*{at['node_capital_usd']}"
                f"+{owned_now}*{at['node_running_usd_per_month']}"
                f"+{cell('rented_node_hours_per_day')}/{HOURS}*{at['node_rent_usd_per_month']}"
            ),
            "cumulative_usd": f"=SUM({_letter('cash_usd')}${first}:{cell('cash_usd')})",
            "rent_everything_usd": f"=SUM({day})/{HOURS}*{at['node_rent_usd_per_month']}",
            # the peak bought in month 0, in service from the lead time, rented until then
            "up_front_cash_usd": (
                f"=IF({cell('month')}={at['lead_time_months']},{peak},0)*{at['node_capital_usd']}"
                f"+{peak_owned}*{at['node_running_usd_per_month']}"
                f"+SUMPRODUCT(({day}>{peak_owned})*({day}-{peak_owned}))/{HOURS}"
                f"*{at['node_rent_usd_per_month']}"
            ),
            "discount_factor": f"=1/(1+{at['discount_rate_per_year']})^({cell('month')}/12)",
            "book_value_at_end_usd": (
                f"={cell('nodes_arriving')}*{at['node_capital_usd']}*MAX(0,1-({months}-"
                f"{cell('month')})/amortisation_months)"
            ),
            "rent_cumulative_usd": (
                f"=SUM({_letter('rent_everything_usd')}${first}:{cell('rent_everything_usd')})"
            ),
            "stays_at_or_below_rent": (
                f"=IF({cell('cumulative_usd')}<={cell('rent_cumulative_usd')},1,0)"
                if m == months - 1
                else f"=IF(AND({cell('cumulative_usd')}<={cell('rent_cumulative_usd')},"
                f"{cell('stays_at_or_below_rent', r + 1)}=1),1,0)"
            ),
            "lease_paying_nodes": (
                f"={owned_now}-IF({cell('month')}>={term},"
                f"INDEX({_letter('nodes_owned')}${first}:{_letter('nodes_owned')}${last},"
                f"{cell('month')}-{term}+1),0)"
            ),
            "lease_cash_usd": (
                f"={cell('lease_paying_nodes')}*{at['lease_payment_usd_per_month']}"
                f"+{owned_now}*{at['node_running_usd_per_month']}"
                f"+{cell('rented_node_hours_per_day')}/{HOURS}*{at['node_rent_usd_per_month']}"
            ),
            "depreciation_usd": (
                f"=({cell('nodes_owned')}-IF({cell('month')}>=amortisation_months,"
                f"INDEX({_letter('nodes_owned')}${first}:{_letter('nodes_owned')}${last},"
                f"{cell('month')}-amortisation_months+1),0))*{at['node_capital_usd']}"
                "/amortisation_months"
            ),
        }
        values_m = {
            "traffic_factor": s.factors[m],
            "replicas": s.replicas[m],
            "nodes_needed": s.nodes[m],
            "nodes_base": s.base_nodes[m],
            "nodes_worth_owning": nodes_worth_owning(s.hours[m], break_even_hours(costs)),
            "nodes_owned": schedule.owned[m],
            "nodes_rented": schedule.rented[m],
            "nodes_arriving": arriving,
            "rented_node_hours_per_day": rented_node_hours(s.hours[m], schedule.owned[m]),
            "cash_usd": schedule.cash_usd[m],
            "cumulative_usd": cumulative[m],
            "rent_everything_usd": s.plans["rent"].cash_usd[m],
            "up_front_cash_usd": s.plans["up_front"].cash_usd[m],
            "discount_factor": discount,
            "book_value_at_end_usd": arriving * book,
            "depreciation_usd": depreciation[m],
            "rent_cumulative_usd": rent_cumulative[m],
            "stays_at_or_below_rent": int(all(b <= a for a, b in stays[m:])),
            "lease_paying_nodes": paying[m],
            "lease_cash_usd": s.plans["lease"].cash_usd[m] if s.lease else None,
        }
        cells = []
        for name, fmt in MONTH_COLUMNS:
            if name == "month":
                cells.append(_cell(ws, m, fmt))
                continue
            if name == "traffic_factor" and tabled:  # the forecast's table: typed, not computed
                cells.append(_cell(ws, s.factors[m], fmt, fill=INPUT_FILL))
                continue
            if name in LEASE_COLUMNS and s.lease is None:
                cells.append(None)
                continue
            cells.append(_formula_cell(ws, formulas_m[name], fmt))
            cache[cell(name)] = values_m[name]
        for h in range(HOURS):  # the nodes each hour of the day needs
            share = f"{_hour_letter(h)}${profile_row}"
            cells.append(
                _formula_cell(
                    ws,
                    f"=ROUNDUP({replicas_at(f'{factor}*{share}')}*{tp}/"
                    f"{at['node_devices']}-1E-9,0)+{at['spare_nodes']}",
                    "0",
                )
            )
            cache[f"{_hour_letter(h)}{r}"] = s.hours[m][h]
        rows.add(cells)
    column = {name: f"{_letter(name)}{first}:{_letter(name)}{last}" for name, _ in MONTH_COLUMNS}
    rate = at["discount_rate_per_year"]
    end_discount = f"(1+{rate})^({months}/12)"
    totals = {
        "cash_usd": f"=SUM({column['cash_usd']})",
        "book_value_at_end_usd": f"=SUM({column['book_value_at_end_usd']})",
        "rent_everything_usd": f"=SUM({column['rent_everything_usd']})",
        "rent_everything_npv_usd": (
            f"=SUMPRODUCT({column['rent_everything_usd']},{column['discount_factor']})"
        ),
        "up_front_cash_usd": f"=SUM({column['up_front_cash_usd']})",
        "up_front_book_value_at_end_usd": (
            f"=IF({at['lead_time_months']}<{months},{peak}*{at['node_capital_usd']}"
            f"*MAX(0,1-({months}-{at['lead_time_months']})/amortisation_months),0)"
        ),
    }
    total_rows = {name: rows.add() for name, _ in TOTALS}
    stayed = f"SUM({column['stays_at_or_below_rent']})"
    totals["payback_month"] = f'=IF(AND({stayed}>0,{stayed}<{months}),{months}-{stayed},"none")'
    owed_months = f"({column['month']}+{term}-{months})"
    totals["lease_cash_usd"] = f"=SUM({column['lease_cash_usd']})"
    totals["lease_owed_at_end_usd"] = (
        f"=SUMPRODUCT({column['nodes_arriving']},({owed_months}>0)*{owed_months})"
        f"*{at['lease_payment_usd_per_month']}"
    )

    def at_end(cash: str, end: str, sign: str) -> tuple[str, str]:
        """A way of paying's net and net present value: its cash, and what is left at the end
        (``sign`` "-": worth still owned; "+": still owed), undiscounted and discounted from
        the month after the horizon."""
        left = f"B{total_rows[end]}"
        net = f"=B{total_rows[cash]}{sign}{left}"
        npv = f"=SUMPRODUCT({column[cash]},{column['discount_factor']}){sign}{left}/{end_discount}"
        return net, npv

    for prefix, end, sign in (
        ("", "book_value_at_end_usd", "-"),
        ("up_front_", "up_front_book_value_at_end_usd", "-"),
        ("lease_", "lease_owed_at_end_usd", "+"),
    ):
        totals[f"{prefix}net_usd"], totals[f"{prefix}npv_usd"] = at_end(
            f"{prefix}cash_usd", end, sign
        )
    total_values = {
        "cash_usd": schedule.total_usd,
        "book_value_at_end_usd": schedule.residual_usd,
        "net_usd": schedule.net_usd,
        "npv_usd": s.npv_usd("schedule"),
        "rent_everything_usd": s.plans["rent"].total_usd,
        "rent_everything_npv_usd": s.npv_usd("rent"),
        "up_front_cash_usd": s.plans["up_front"].total_usd,
        "up_front_book_value_at_end_usd": s.plans["up_front"].residual_usd,
        "up_front_net_usd": s.plans["up_front"].net_usd,
        "up_front_npv_usd": s.npv_usd("up_front"),
        "payback_month": "none" if s.payback_month() is None else s.payback_month(),
    }
    if s.lease:
        lease = s.plans["lease"]
        total_values |= {
            "lease_cash_usd": lease.total_usd,
            "lease_owed_at_end_usd": -lease.residual_usd,
            "lease_net_usd": lease.net_usd,
            "lease_npv_usd": s.npv_usd("lease"),
        }
    for name, unit in TOTALS:
        number = total_rows[name]
        if name.startswith("lease_") and s.lease is None:
            rows.fill(number, [_text_cell(ws, name), _text_cell(ws, "no lease in the assumptions")])
            continue
        formula = _formula_cell(ws, totals[name], "#,##0" if unit == "USD" else "0")
        rows.fill(number, [_text_cell(ws, name), formula, _text_cell(ws, unit)])
        cache[f"B{number}"] = total_values[name]


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
