"""The schedule's finance: what each way of paying for capacity over time costs, one
definition per quantity, evaluated by :mod:`planner.plan.schedule` and written as the ``Schedule``
sheet's formulas by :mod:`planner.outputs.workbook.schedule`.

Each quantity is a metric of the formula layer (:mod:`planner.model.expr`), kept in its own
registry, :data:`SCHEDULE`: a sheet's quantities, not columns of the Plan; the need (replicas
and nodes by month and hour) is in :mod:`planner.model.need`. A metric's argument names say
what it reads:

- a quantity of the workload's block (``lead_time_months``, ``node_capital_usd``, an assumption
  such as ``amortisation_months``, a column of the option's Plan row, or ``months``: the
  horizon's length), or of the month's row (``month``, ``nodes_owned``, ...);
- ``<column>_all``: the month column over the whole horizon (a range);
- ``<column>_so_far``: the month column from month 0 to this month (a range);
- ``previous_<column>`` and ``next_<column>``: the month column in the month before or after,
  :data:`EDGES` beyond the horizon;
- ``hourly_nodes``: the nodes each hour of the month's day needs (the row's hour cells, a range);
  ``daily_profile``: each hour's share of the busiest hour's traffic (a range) and
  ``hour_share``: one hour's.

Cash is paid at the start of its month; an annual rate r discounts month m by (1 + r)^(m/12),
i.e. monthly at (1 + r)^(1/12) − 1. A count of nothing costs nothing, even at a price that is
unknown (infinite in Python): :func:`times`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from planner.model.expr import (
    floor,
    greatest,
    largest,
    maximum,
    pick,
    power,
    sum_product,
    total,
    where,
)
from planner.model.metric import Kind, Metric, metric, rebound

#: The schedule's metrics by name, filled as the modules of :data:`SCHEDULE_MODULES` are
#: imported; read it through :func:`schedule_metrics`.
SCHEDULE: dict[str, Metric] = {}

#: The modules that define schedule metrics.
SCHEDULE_MODULES = ("planner.model.finance", "planner.model.need", "planner.model.fleet_months")

#: Hours in a day: a daily profile's length, and what a month's rent is spread over.
HOURS = 24

#: What the payback month reads when buying never pays for itself within the horizon.
NO_PAYBACK = "none"

#: What ``previous_<column>`` and ``next_<column>`` read beyond the horizon.
EDGES = {"previous_nodes_owned": 0, "next_stays_at_or_below_rent": 1,
         "previous_devices_owned": 0, "previous_type_nodes_owned": 0}  # fmt: skip

#: How little below a whole number a count may be computed and still round down to it: a count
#: that is whole in exact arithmetic stays whole through floating point.
SLACK = 1e-9


def schedule_metrics() -> dict[str, Metric]:
    """Every schedule metric by name (imports the modules that define them, so the registry is
    whole whichever module asked first)."""
    for module in SCHEDULE_MODULES:
        importlib.import_module(module)
    return SCHEDULE


def schedule_metric(
    unit: str, *, source: str = "", kind: Kind = "number"
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a formula function as a schedule metric (:func:`planner.model.metric.metric`)."""
    return metric(unit, source=source, kind=kind, group="schedule", into=SCHEDULE)


def times(count: Any, usd: Any) -> Any:
    """``count`` × ``usd``, nothing for none of a thing, whatever its price [USD]."""
    return where(count == 0, 0, count * usd)


def book_value_usd(capital_usd: Any, age_months: Any, amortisation_months: Any) -> Any:
    """What an owned node is still worth on the books after ``age_months`` in service:
    capital × (1 − age ÷ amortisation period), not below 0 [USD] (straight-line
    depreciation)."""
    return capital_usd * maximum(0, 1 - age_months / amortisation_months)


def discount_at(rate_per_year: Any, month: Any) -> Any:
    """What a dollar paid at the start of month ``month`` is worth today: 1 ÷ (1 + r)^(m/12),
    which is 1 ÷ (1 + i)^m with i the monthly rate [-]."""
    return 1 / power(1 + rate_per_year, month / 12)


def owned_after_lead(month: Any, lead_time_months: Any, wanted_so_far: Any) -> Any:
    """Nodes in service in ``month`` when each node wanted is ordered ``lead_time_months``
    before it is first wanted (month 0 at the earliest): the most wanted so far, once the lead
    time has passed [nodes]."""
    return where(month >= lead_time_months, greatest(wanted_so_far), 0)


def rented_hours(hourly_nodes: Any, owned: Any) -> Any:
    """Node-hours a day beyond ``owned`` nodes: Σ over the hours of max(need − owned, 0)
    [node·h/day]."""
    return sum_product((hourly_nodes > owned) * (hourly_nodes - owned))


def paid(
    nodes_paid: Any, usd_per_node: Any, owned: Any, running: Any, hours: Any, rent: Any
) -> Any:
    """A month's cash: the nodes paid for this month at ``usd_per_node`` (capital on arrival, or
    a lease payment), the running cost of the owned nodes, and the node-hours rented at the
    month's rent spread over the day's hours [USD]."""
    return times(nodes_paid, usd_per_node) + times(owned, running) + times(hours, rent / HOURS)


def npv(cash: Any, discount: Any, left_at_end: Any, rate_per_year: Any, months: Any) -> Any:
    """Net present value of monthly ``cash`` less what is ``left_at_end`` (worth still owned;
    negative: still owed), discounted from the month after the horizon [USD]."""
    return sum_product(cash, discount) - left_at_end * discount_at(rate_per_year, months)


# The block of a workload: per node --------------------------------------------------------------


@schedule_metric("USD/month", source="straight-line amortisation")
def node_owned_usd_per_month(
    node_capital_usd: Any, amortisation_months: Any, node_running_usd_per_month: Any
) -> Any:
    """Owning a node a month: its capital spread over the amortisation period plus its running
    cost [USD/month]."""
    return node_capital_usd / amortisation_months + node_running_usd_per_month


@schedule_metric("h/day", source="owning against renting by the hour")
def break_even_hours_per_day(node_owned_usd_per_month: Any, node_rent_usd_per_month: Any) -> Any:
    """Hours a day a node must be busy for owning it to cost less than renting it for those
    hours: 24 × owned ÷ rented cost a month; a whole day where renting costs nothing [h/day]."""
    rent = node_rent_usd_per_month
    return where(rent > 0, HOURS * node_owned_usd_per_month / rent, HOURS)


@schedule_metric("USD/month", source="the annuity formula")
def lease_payment_usd_per_month(
    node_capital_usd: Any, lease_rate_per_year: Any, lease_term_months: Any
) -> Any:
    """Monthly payment of a lease that repays a node's capital over the term at the nominal
    annual rate: P × i ÷ (1 − (1 + i)^−n), i = r ÷ 12; P ÷ n at 0 [USD/month]."""
    i = lease_rate_per_year / 12
    annuity = node_capital_usd * i / (1 - power(1 + i, -lease_term_months))
    return where(lease_rate_per_year == 0, node_capital_usd / lease_term_months, annuity)


# The month rows ------------------------------------------------------------------------------


@schedule_metric("nodes", kind="integer", source="owning against renting by the hour")
def nodes_worth_owning(hourly_nodes: Any, break_even_hours_per_day: Any) -> Any:
    """Nodes worth owning in the month: node k is, when more than the break-even hours a day
    need k or more, i.e. the (⌊break-even⌋ + 1)-th largest hourly need; none when the
    break-even is a whole day or more [nodes]."""
    ranked = largest(hourly_nodes, floor(break_even_hours_per_day) + 1)
    return where(break_even_hours_per_day < HOURS, ranked, 0)


@schedule_metric("nodes", kind="integer", source="each node ordered a lead time ahead")
def nodes_owned(month: Any, lead_time_months: Any, nodes_worth_owning_so_far: Any) -> Any:
    """Nodes owned in service: every node worth owning so far, each ordered the lead time
    before it is first worth owning [nodes]."""
    return owned_after_lead(month, lead_time_months, nodes_worth_owning_so_far)


@schedule_metric("nodes", kind="integer")
def nodes_rented(nodes_needed: Any, nodes_owned: Any) -> Any:
    """Nodes rented at the month's busiest hour [nodes]."""
    return maximum(nodes_needed - nodes_owned, 0)


@schedule_metric("nodes", kind="integer")
def nodes_arriving(nodes_owned: Any, previous_nodes_owned: Any) -> Any:
    """Owned nodes arriving this month, paid on arrival [nodes]."""
    return nodes_owned - previous_nodes_owned


@schedule_metric("node·h/day", kind="integer")
def rented_node_hours_per_day(hourly_nodes: Any, nodes_owned: Any) -> Any:
    """Node-hours a day beyond the owned nodes, rented by the hour [node·h/day]."""
    return rented_hours(hourly_nodes, nodes_owned)


@schedule_metric("USD")
def cash_usd(
    nodes_arriving: Any,
    node_capital_usd: Any,
    nodes_owned: Any,
    node_running_usd_per_month: Any,
    rented_node_hours_per_day: Any,
    node_rent_usd_per_month: Any,
) -> Any:
    """The schedule's cash this month: capital of the nodes arriving, running cost of those
    owned, rent of the node-hours beyond them [USD]."""
    return paid(
        nodes_arriving,
        node_capital_usd,
        nodes_owned,
        node_running_usd_per_month,
        rented_node_hours_per_day,
        node_rent_usd_per_month,
    )


@schedule_metric("USD")
def cumulative_usd(cash_usd_so_far: Any) -> Any:
    """The schedule's cash up to and including this month [USD]."""
    return total(cash_usd_so_far)


@schedule_metric("USD")
def rent_everything_usd(hourly_nodes: Any, node_rent_usd_per_month: Any) -> Any:
    """Renting every hour's need this month: node-hours × the rent of a node-hour [USD]."""
    return times(total(hourly_nodes), node_rent_usd_per_month / HOURS)


@schedule_metric("nodes", kind="integer")
def up_front_nodes_owned(month: Any, lead_time_months: Any, nodes_needed_all: Any) -> Any:
    """Nodes owned when the horizon's peak is ordered in month 0: all of them from the lead
    time on [nodes]."""
    return owned_after_lead(month, lead_time_months, nodes_needed_all)


@schedule_metric("USD")
def up_front_cash_usd(
    month: Any,
    lead_time_months: Any,
    nodes_needed_all: Any,
    hourly_nodes: Any,
    node_capital_usd: Any,
    node_running_usd_per_month: Any,
    node_rent_usd_per_month: Any,
) -> Any:
    """Buying the peak up front, this month: the peak's capital when it arrives, its running
    cost from then on, and rent of the need beyond it (all of it until it arrives) [USD]."""
    owned = owned_after_lead(month, lead_time_months, nodes_needed_all)
    capital = where(
        month == lead_time_months, times(greatest(nodes_needed_all), node_capital_usd), 0
    )
    hours = rented_hours(hourly_nodes, owned)
    rent = times(hours, node_rent_usd_per_month / HOURS)
    return capital + times(owned, node_running_usd_per_month) + rent


@schedule_metric("-", source="monthly compounding of the annual rate")
def discount_factor(discount_rate_per_year: Any, month: Any) -> Any:
    """What a dollar paid at the start of the month is worth today: 1 ÷ (1 + r)^(month ÷ 12)
    [-]."""
    return discount_at(discount_rate_per_year, month)


@schedule_metric("USD", source="straight-line depreciation")
def book_value_at_end_usd(
    nodes_arriving: Any,
    node_capital_usd: Any,
    months: Any,
    month: Any,
    amortisation_months: Any,
) -> Any:
    """What the nodes arriving this month are still worth at the end of the horizon [USD]."""
    age = months - month
    return times(nodes_arriving, book_value_usd(node_capital_usd, age, amortisation_months))


@schedule_metric("USD", source="straight-line depreciation")
def depreciation_usd(
    nodes_owned: Any,
    month: Any,
    amortisation_months: Any,
    nodes_owned_all: Any,
    node_capital_usd: Any,
) -> Any:
    """Straight-line depreciation this month: capital ÷ amortisation period for each node in
    service and not yet written off, (owned − owned an amortisation period ago) × capital ÷
    period, nodes never sold [USD]."""
    period = amortisation_months
    written_off = where(month >= period, pick(nodes_owned_all, month - period + 1), 0)
    return (nodes_owned - written_off) * node_capital_usd / period


@schedule_metric("USD")
def rent_cumulative_usd(rent_everything_usd_so_far: Any) -> Any:
    """Renting everything's cash up to and including this month [USD]."""
    return total(rent_everything_usd_so_far)


@schedule_metric("", kind="integer")
def stays_at_or_below_rent(
    cumulative_usd: Any, rent_cumulative_usd: Any, next_stays_at_or_below_rent: Any
) -> Any:
    """1 when the schedule's cumulative cash is at or below renting's from this month to the
    end of the horizon, else 0."""
    at_or_below = cumulative_usd <= rent_cumulative_usd
    return where(at_or_below & (next_stays_at_or_below_rent == 1), 1, 0)


@schedule_metric("nodes", kind="integer", source="a lease paid monthly over its term")
def lease_paying_nodes(
    nodes_owned: Any, month: Any, lease_term_months: Any, nodes_owned_all: Any
) -> Any:
    """Leased nodes still paid for this month: those arrived within the term [nodes]."""
    term = lease_term_months
    paid_off = where(month >= term, pick(nodes_owned_all, month - term + 1), 0)
    return nodes_owned - paid_off


@schedule_metric("USD")
def lease_cash_usd(
    lease_paying_nodes: Any,
    lease_payment_usd_per_month: Any,
    nodes_owned: Any,
    node_running_usd_per_month: Any,
    rented_node_hours_per_day: Any,
    node_rent_usd_per_month: Any,
) -> Any:
    """Leasing the schedule's nodes, this month: the payments of the nodes within their term,
    running cost of those owned, rent of the node-hours beyond them [USD]."""
    return paid(
        lease_paying_nodes,
        lease_payment_usd_per_month,
        nodes_owned,
        node_running_usd_per_month,
        rented_node_hours_per_day,
        node_rent_usd_per_month,
    )


# Over the horizon ----------------------------------------------------------------------------


@schedule_metric("USD")
def total_cash_usd(cash_usd_all: Any) -> Any:
    """The schedule's cash over the horizon [USD]."""
    return total(cash_usd_all)


def _total(name: str, column: str, description: str) -> None:
    """A month column's sum over the horizon: :func:`total_cash_usd` over ``column``."""
    rebound(name, "total_cash_usd", {"cash_usd_all": f"{column}_all"}, description, SCHEDULE)


_total(
    "total_book_value_at_end_usd",
    "book_value_at_end_usd",
    "What the schedule's owned nodes are still worth at the end of the horizon [USD].",
)
_total(
    "total_rent_everything_usd",
    "rent_everything_usd",
    "Renting everything's cash over the horizon [USD].",
)
_total(
    "total_up_front_cash_usd",
    "up_front_cash_usd",
    "Buying the peak up front: cash over the horizon [USD].",
)
_total(
    "total_lease_cash_usd",
    "lease_cash_usd",
    "Leasing the schedule's nodes: cash over the horizon [USD].",
)


@schedule_metric("USD")
def net_usd(total_cash_usd: Any, total_book_value_at_end_usd: Any) -> Any:
    """The schedule's cash less what its nodes are still worth at the end [USD]."""
    return total_cash_usd - total_book_value_at_end_usd


@schedule_metric("USD", source="cash discounted monthly at the annual rate")
def npv_usd(
    cash_usd_all: Any,
    discount_factor_all: Any,
    total_book_value_at_end_usd: Any,
    discount_rate_per_year: Any,
    months: Any,
) -> Any:
    """Net present value of the schedule's cash less its nodes' worth at the end [USD]."""
    return npv(
        cash_usd_all, discount_factor_all, total_book_value_at_end_usd, discount_rate_per_year,
        months,
    )  # fmt: skip


@schedule_metric("month", kind="integer")
def payback_month(stays_at_or_below_rent_all: Any, months: Any) -> Any:
    """The month from which the schedule's cumulative cash, once above renting's, stays at or
    below it: when buying has paid for itself; "none" when it never costs more (nothing was
    bought) or never catches up within the horizon."""
    stayed = total(stays_at_or_below_rent_all)
    return where((stayed > 0) & (stayed < months), months - stayed, NO_PAYBACK)


@schedule_metric("USD", source="cash discounted monthly at the annual rate")
def rent_everything_npv_usd(rent_everything_usd_all: Any, discount_factor_all: Any) -> Any:
    """Net present value of renting everything [USD]."""
    return sum_product(rent_everything_usd_all, discount_factor_all)


@schedule_metric("USD", source="straight-line depreciation")
def up_front_book_value_at_end_usd(
    lead_time_months: Any,
    months: Any,
    nodes_needed_all: Any,
    node_capital_usd: Any,
    amortisation_months: Any,
) -> Any:
    """What the peak bought up front is still worth at the end of the horizon (nothing when it
    arrives after it) [USD]."""
    worth = book_value_usd(node_capital_usd, months - lead_time_months, amortisation_months)
    return where(lead_time_months < months, times(greatest(nodes_needed_all), worth), 0)


rebound(
    "up_front_net_usd",
    "net_usd",
    {
        "total_cash_usd": "total_up_front_cash_usd",
        "total_book_value_at_end_usd": "up_front_book_value_at_end_usd",
    },
    "Buying the peak up front: cash less what the nodes are still worth at the end [USD].",
    SCHEDULE,
)
rebound(
    "up_front_npv_usd", "npv_usd",
    {"cash_usd_all": "up_front_cash_usd_all",
     "total_book_value_at_end_usd": "up_front_book_value_at_end_usd"},
    "Net present value of buying the peak up front, less its worth at the end [USD].",
    SCHEDULE,
)  # fmt: skip


@schedule_metric("USD", source="a lease paid monthly over its term")
def lease_owed_at_end_usd(
    nodes_arriving_all: Any,
    month_all: Any,
    lease_term_months: Any,
    months: Any,
    lease_payment_usd_per_month: Any,
) -> Any:
    """The lease payments still owed at the end of the horizon: each node's payments left of
    its term [USD]."""
    left = month_all + lease_term_months - months
    return times(sum_product(nodes_arriving_all, (left > 0) * left), lease_payment_usd_per_month)


@schedule_metric("USD")
def lease_net_usd(total_lease_cash_usd: Any, lease_owed_at_end_usd: Any) -> Any:
    """Leasing: cash plus the payments still owed at the end [USD]."""
    return total_lease_cash_usd + lease_owed_at_end_usd


@schedule_metric("USD", source="cash discounted monthly at the annual rate")
def lease_npv_usd(
    lease_cash_usd_all: Any,
    discount_factor_all: Any,
    lease_owed_at_end_usd: Any,
    discount_rate_per_year: Any,
    months: Any,
) -> Any:
    """Net present value of leasing, the payments still owed at the end included [USD]."""
    owed = lease_owed_at_end_usd
    return npv(lease_cash_usd_all, discount_factor_all, 0 - owed, discount_rate_per_year, months)


# Evaluation ----------------------------------------------------------------------------------


def reference(name: str) -> tuple[str, str]:
    """How a metric's argument reads a month column: (``"all"``, ``"so_far"``, ``"previous"``,
    ``"next"`` or ``"this"``, the column's name)."""
    for suffix in ("_all", "_so_far"):
        if name.endswith(suffix):
            return suffix[1:], name[: -len(suffix)]
    for prefix in ("previous_", "next_"):
        if name.startswith(prefix):
            return prefix[:-1], name[len(prefix) :]
    return "this", name


def _number(value: Any) -> Any:
    """A value as the formula functions compute with it: numbers as numpy floats (a division by
    zero gives inf or NaN, as a spreadsheet's error, never an exception), ranges as arrays."""
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple, np.ndarray)):
        return np.asarray(value, dtype=float)
    return np.float64(value)


def _plain(value: Any, kind: Kind) -> Any:
    """A metric's value as a plain Python number (a whole number for a count) or text."""
    if isinstance(value, np.ndarray):
        value = value.item()
    if isinstance(value, str):
        return value
    number = float(value)
    if kind == "integer" and np.isfinite(number):
        return int(number)
    return number


def value(name: str, values: Mapping[str, Any]) -> Any:
    """Schedule metric ``name`` over ``values`` (each of its arguments by name; a range as a
    list) [the metric's unit]."""
    m = schedule_metrics()[name]
    with np.errstate(all="ignore"):
        result = m.func(*(_number(values[i]) for i in m.inputs))
    return _plain(result, m.kind)


def month_value(
    name: str, month: int, table: Mapping[str, list[Any]], block: Mapping[str, Any]
) -> Any:
    """What argument ``name`` of a month metric reads in ``month``: from the month columns of
    ``table`` (by :func:`reference`), else a quantity of the ``block``."""
    form, column = reference(name)
    if column not in table:
        return block[name]
    values = table[column]
    if form == "all":
        return values
    if form == "so_far":
        return values[: month + 1]
    offset = {"previous": -1, "next": 1}.get(form, 0)
    if form != "this" and not 0 <= month + offset < len(values):
        return EDGES[name]
    return values[month + offset]


def month_column(
    name: str, table: dict[str, list[Any]], block: Mapping[str, Any], months: int
) -> list[Any]:
    """Month metric ``name`` for each month of the horizon, added to ``table``; a metric that
    reads its own next month is computed from the last month back."""
    m = schedule_metrics()[name]
    out: list[Any] = [None] * months
    table[name] = out
    backwards = f"next_{name}" in m.inputs
    for month in reversed(range(months)) if backwards else range(months):
        out[month] = value(name, {i: month_value(i, month, table, block) for i in m.inputs})
    return out


def horizon_value(name: str, table: Mapping[str, list[Any]], block: Mapping[str, Any]) -> Any:
    """A metric over the whole horizon (its ``<column>_all`` arguments the month columns)."""
    inputs = schedule_metrics()[name].inputs
    return value(name, {i: month_value(i, 0, table, block) for i in inputs})


#: The month metrics of the finance, in an order that computes each after what it reads (the
#: need, ``nodes_needed`` and ``hourly_nodes``, comes first); the lease's, when there is one.
MONTH_FINANCE = (
    "nodes_worth_owning", "nodes_owned", "nodes_rented", "nodes_arriving",
    "rented_node_hours_per_day", "cash_usd", "cumulative_usd", "rent_everything_usd",
    "up_front_nodes_owned", "up_front_cash_usd", "discount_factor", "book_value_at_end_usd",
    "depreciation_usd", "rent_cumulative_usd", "stays_at_or_below_rent",
)  # fmt: skip
LEASE_MONTHS = ("lease_paying_nodes", "lease_cash_usd")

#: The metrics over the horizon, in the same kind of order; the lease's.
HORIZON = (
    "total_cash_usd", "total_book_value_at_end_usd", "net_usd", "npv_usd", "payback_month",
    "total_rent_everything_usd", "rent_everything_npv_usd", "total_up_front_cash_usd",
    "up_front_book_value_at_end_usd", "up_front_net_usd", "up_front_npv_usd",
)  # fmt: skip
LEASE_HORIZON = ("total_lease_cash_usd", "lease_owed_at_end_usd", "lease_net_usd", "lease_npv_usd")

#: Each way of paying's net present value.
NPV_OF = {
    "schedule": "npv_usd",
    "rent": "rent_everything_npv_usd",
    "up_front": "up_front_npv_usd",
    "lease": "lease_npv_usd",
}
