"""Capacity over time: the nodes a workload needs month by month as its traffic grows, which to
buy when (whole nodes, ordered a lead time ahead) and what to rent meanwhile, and what each way
of paying costs, with its net present value.

For a workload with a ``forecast``, month ``m``'s traffic is this month's × (1 + growth)^m. Its
recommended option's replica arithmetic (``replicas_needed``: Little's law over the arrival
rate, or the users, and the replica's capacity) is applied to that traffic, raised by the
simulation's margin where the simulation asked for more replicas than the closed form, and
rounded up to whole nodes, plus the spare nodes of N+k.

With a daily profile the same arithmetic runs for each hour of the day over that hour's share of
the traffic, and rented capacity is paid by the hour it is needed (the catalog's rental price
spread evenly over the day's 24 hours).

The schedule then compares, per node, owning (its capital spread over the amortisation period
plus its running cost) with renting it for the hours of the day it is needed: node k is worth
owning in a month when it is busy more than the break-even hours a day (24 × owned ÷ rented
cost a month), so the nodes worth owning are the hourly need ranked (break-even + 1)-th largest:
the base load, or every node when the need is flat and owning costs less. Each node worth owning
is ordered ``lead_time_months`` before the month it first is, and rented until it arrives; the
peak above the owned base is rented by the hour. It is set against renting everything and
against buying the peak up front. Cash flows are discounted monthly at the annual rate,
(1 + r)^(1/12) − 1 a month.

Each of these quantities is one metric of :mod:`planner.model.need` or
:mod:`planner.model.finance`, evaluated here month by month; the ``Schedule`` sheet writes the
same metrics as its formulas.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import dataclass, field
from typing import Any

from planner.catalog import Catalog, Workload
from planner.catalog.datafiles import read_factors
from planner.catalog.records import Forecast
from planner.model import finance
from planner.model.expr import sum_product
from planner.model.finance import (
    HOURS,
    NO_PAYBACK,
    horizon_value,
    month_column,
    value,
)
from planner.model.finance import book_value_usd as book_value_usd
from planner.model.metric import metrics
from planner.model.units import is_finite
from planner.plan.assumptions import GLOBALS
from planner.plan.deployment import API, Ask, Line


def demand_factor(growth_per_month: float, month: int) -> float:
    """Traffic in month ``month`` as a multiple of this month's: (1 + g)^m [-] (compound
    growth; :func:`planner.model.need.traffic_factor`)."""
    return value("traffic_factor", {"growth_per_month": growth_per_month, "month": month})


def monthly_rate(rate_per_year: float) -> float:
    """The monthly rate equivalent to an annual one: (1 + r)^(1/12) − 1 [-] (compounding)."""
    return (1 + rate_per_year) ** (1 / 12) - 1


def discount_factor(rate_per_year: float, month: int) -> float:
    """What a dollar paid at the start of month ``month`` is worth today: 1 ÷ (1 + i)^m with i
    the monthly rate, which is 1 ÷ (1 + r)^(m/12) [-]
    (:func:`planner.model.finance.discount_factor`)."""
    return value("discount_factor", {"discount_rate_per_year": rate_per_year, "month": month})


def present_value(flows: list[float], rate_per_year: float) -> float:
    """Net present value of monthly cash flows, each paid at the start of its month (month 0
    undiscounted): Σ flowₘ × discount factorₘ [USD]."""
    factors = [discount_factor(rate_per_year, m) for m in range(len(flows))]
    return float(sum_product(flows, factors))


def lease_payment_usd(principal_usd: float, rate_per_year: float, term_months: int) -> float:
    """Monthly payment of a lease (an annuity) that repays ``principal_usd`` over
    ``term_months`` at the nominal annual rate: P × i ÷ (1 − (1 + i)^−n), i = r ÷ 12; P ÷ n at 0
    [USD/month] (the annuity formula; :func:`planner.model.finance.lease_payment_usd_per_month`)."""
    return value(
        "lease_payment_usd_per_month",
        {"node_capital_usd": principal_usd, "lease_rate_per_year": rate_per_year,
         "lease_term_months": term_months},
    )  # fmt: skip


def depreciation_usd(owned: list[int], capital_usd: float, amortisation_months: int) -> list[float]:
    """Straight-line depreciation of the owned nodes, month by month: capital ÷ amortisation
    period for each node in service and not yet written off, (owned_m − owned_{m−A}) × capital
    ÷ A with nodes never sold [USD/month] (:func:`planner.model.finance.depreciation_usd`)."""
    table: dict[str, list[Any]] = {"month": list(range(len(owned))), "nodes_owned": list(owned)}
    block = {"node_capital_usd": capital_usd, "amortisation_months": amortisation_months}
    return month_column("depreciation_usd", table, block, len(owned))


def payback_month(renting: list[float], buying: list[float]) -> int | None:
    """The month from which buying's cumulative cost, once above renting's, stays at or below
    it: when the outlay has paid for itself. None when buying never costs more (nothing was
    bought) or never catches up within the horizon
    (:func:`planner.model.finance.payback_month`)."""
    months = len(buying)
    table: dict[str, list[Any]] = {"cash_usd": list(buying), "rent_everything_usd": list(renting)}
    for name in ("cumulative_usd", "rent_cumulative_usd", "stays_at_or_below_rent"):
        month_column(name, table, {}, months)
    month = horizon_value("payback_month", table, {"months": months})
    return None if month == NO_PAYBACK else int(month)


def simulation_raise(row: Any) -> float:
    """How far the simulation raised the closed form's replicas: replicas_planned ÷
    replicas_needed, 1 where the closed form needs none [-]
    (:func:`planner.model.need.simulation_raise`)."""
    return value(
        "simulation_raise", {n: float(row[n]) for n in ("replicas_needed", "replicas_planned")}
    )


#: The Plan columns the replicas of a month are worked out from.
REPLICA_INPUTS = ("concurrency", "replica_capacity_sequences", "in_flight_requests",
                  "forecast_requests_per_s", "requests_per_s_per_replica")  # fmt: skip

#: The Plan columns a disaggregated option's prefill pool is worked out from, with the values
#: of one pool of replicas (no prefill pool) for a row from before the layout existed.
POOL_INPUTS = {"prefill_tokens_per_s_demanded": 0.0, "prefill_tokens_per_s_per_replica": 1.0,
               "prefill_pool_utilisation_limit": 1.0, "disaggregated": 0.0}  # fmt: skip


def replica_inputs(row: Any) -> dict[str, float]:
    """The option's Plan figures the schedule's replicas are worked out from, and the
    simulation's raise."""
    pools = {n: float(row[n]) if n in row else v for n, v in POOL_INPUTS.items()}
    values = {n: float(row[n]) for n in REPLICA_INPUTS} | pools
    return values | {"simulation_raise": simulation_raise(row)}


def replicas_at(row: Any, factor: float) -> int:
    """Replicas the option needs when the workload's traffic is ``factor`` × today's: the
    ``replicas_needed`` formula over the scaled load, times :func:`simulation_raise`
    (:func:`planner.model.need.replicas`)."""
    values = replica_inputs(row) | {"traffic_factor": factor, "daily_profile": [1.0]}
    return int(value("replicas", values))


@dataclass(frozen=True)
class NodeCosts:
    """What one node of the option costs: to buy, to run and to rent [USD, USD/month]."""

    capital_usd: float
    running_usd_per_month: float
    rent_usd_per_month: float
    amortisation_months: int

    @property
    def owned_usd_per_month(self) -> float:
        """Capital spread over the amortisation period plus running cost [USD/month]
        (:func:`planner.model.finance.node_owned_usd_per_month`)."""
        return float(
            finance.node_owned_usd_per_month(
                self.capital_usd, self.amortisation_months, self.running_usd_per_month
            )
        )


def node_devices(row: Any, peak_replicas: int) -> int:
    """Devices in one node of the schedule: a full node (``devices_per_node``) once the
    horizon's peak fills one, else the peak's devices (a replica's at least), so a fleet smaller
    than a node is not priced as a full one [devices]
    (:func:`planner.model.need.node_devices`)."""
    values = {n: int(row[n]) for n in ("devices_per_node", "tensor_parallel")}
    return int(value("node_devices", values | {"replicas_all": [peak_replicas]}))


#: The cost metrics one node is priced by, in the order they are computed, with the per-node
#: input each stands for (``capital_usd``: to buy; ``opex_usd_per_month``: to run;
#: ``cloud_usd_per_month``: to rent).
NODE_COST_METRICS = ("capital_usd", "energy_kwh_per_month", "opex_usd_per_month",
                     "cloud_usd_per_month")  # fmt: skip


def node_costs(catalog: Catalog, row: Any, devices: int) -> NodeCosts:
    """What one node of ``devices`` of the option's devices costs: the option's own capital,
    running and rental metrics over one node of them (``devices_needed`` = ``devices``,
    ``nodes_needed`` = 1); a missing price is infinite (never costed as zero)."""
    a = catalog.assumptions
    values: dict[str, Any] = {g.name: g.get(a) * g.scale for g in GLOBALS}
    values |= {"devices_needed": devices, "nodes_needed": 1}
    registry = metrics()
    for name in NODE_COST_METRICS:
        metric = registry[name]
        values[name] = metric(*(values[i] if i in values else row[i] for i in metric.inputs))

    def known_or_inf(name: str) -> float:
        """A cost as a float; NaN (a missing price) as inf, so it is never costed as zero."""
        value = values[name]
        return float(value) if is_finite(value) else math.inf

    return NodeCosts(
        known_or_inf("capital_usd"),
        known_or_inf("opex_usd_per_month"),
        known_or_inf("cloud_usd_per_month"),
        a.amortisation_months,
    )


def break_even_hours(costs: NodeCosts) -> float:
    """Hours a day a node must be busy for owning it to cost less than renting it for those
    hours: 24 × owned ÷ rented cost a month [h/day] (inf where renting is free or impossible to
    undercut; 0 where renting is impossible)
    (:func:`planner.model.finance.break_even_hours_per_day`)."""
    if not math.isfinite(costs.rent_usd_per_month):
        return 0.0
    if costs.rent_usd_per_month <= 0:
        return math.inf
    return value(
        "break_even_hours_per_day",
        {"node_owned_usd_per_month": costs.owned_usd_per_month,
         "node_rent_usd_per_month": costs.rent_usd_per_month},
    )  # fmt: skip


def nodes_worth_owning(hourly: list[int], break_even_h: float) -> int:
    """Nodes worth owning in a month whose hours need ``hourly`` nodes: node k is, when more
    than ``break_even_h`` hours a day need k or more, i.e. the (⌊break-even⌋ + 1)-th largest
    hourly need; none when the break-even is a whole day or more [nodes]
    (:func:`planner.model.finance.nodes_worth_owning`)."""
    values = {"hourly_nodes": hourly, "break_even_hours_per_day": break_even_h}
    return int(value("nodes_worth_owning", values))


def rented_node_hours(hourly: list[int], owned: int) -> int:
    """Node-hours a day beyond the ``owned`` nodes, rented by the hour [node·h/day]
    (:func:`planner.model.finance.rented_node_hours_per_day`)."""
    return int(value("rented_node_hours_per_day", {"hourly_nodes": hourly, "nodes_owned": owned}))


@dataclass
class Plan:
    """One way of meeting a schedule of nodes: per month, nodes owned in service, rented, and the
    cash paid (capital on arrival, running cost of owned nodes, rent)."""

    name: str
    owned: list[int]
    rented: list[int]
    cash_usd: list[float]
    orders: list[tuple[int, int]] = field(default_factory=list)  # (month ordered, nodes)
    #: book value of the owned nodes at the end of the horizon (a lease: minus what is still owed)
    residual_usd: float = 0.0

    @property
    def total_usd(self) -> float:
        """Cash paid over the horizon [USD]."""
        return float(sum(self.cash_usd))

    @property
    def net_usd(self) -> float:
        """Cash paid less what the owned nodes are still worth at the end [USD]."""
        return self.total_usd - self.residual_usd

    def cumulative_usd(self) -> list[float]:
        """Cash paid up to and including each month [USD]."""
        return list(itertools.accumulate(self.cash_usd))


def _finance(
    nodes: list[int],
    hours: list[list[int]],
    lead: int,
    costs: NodeCosts,
    lease: tuple[float, int] | None = None,
    rate_per_year: float = 0.0,
) -> tuple[dict[str, Any], dict[str, list[Any]], dict[str, Any]]:
    """The schedule's finance metrics (:mod:`planner.model.finance`) over ``hours`` (per month,
    the nodes each hour of the day needs; ``nodes``: its busiest hour's): the quantities of the
    block they read, the month columns and the figures over the horizon."""
    months = len(hours)
    block: dict[str, Any] = {
        "lead_time_months": lead,
        "discount_rate_per_year": rate_per_year,
        "node_capital_usd": costs.capital_usd,
        "node_running_usd_per_month": costs.running_usd_per_month,
        "node_rent_usd_per_month": costs.rent_usd_per_month,
        "node_owned_usd_per_month": costs.owned_usd_per_month,
        "break_even_hours_per_day": break_even_hours(costs),
        "amortisation_months": costs.amortisation_months,
        "months": months,
    }
    if lease is not None:
        block |= {"lease_rate_per_year": lease[0], "lease_term_months": lease[1]}
        block["lease_payment_usd_per_month"] = value("lease_payment_usd_per_month", block)
    table: dict[str, list[Any]] = {
        "month": list(range(months)),
        "hourly_nodes": [list(h) for h in hours],
        "nodes_needed": list(nodes),
    }
    for name in finance.MONTH_FINANCE + (finance.LEASE_MONTHS if lease else ()):
        month_column(name, table, block, months)
    totals: dict[str, Any] = {}
    for name in finance.HORIZON + (finance.LEASE_HORIZON if lease else ()):
        totals[name] = horizon_value(name, table, block | totals)
    return block, table, totals


def _orders(target: list[int], lead: int) -> list[tuple[int, int]]:
    """Each node of ``target`` (nodes to own, per month) ordered ``lead`` months before the
    month it is first wanted (month 0 at the earliest), counted by month: the orders (month
    ordered, nodes) that arrive within the horizon, one a month at most, so that a schedule's
    work grows with its months, never with its node count."""
    orders: dict[int, int] = {}
    wanted = 0  # nodes wanted in some month so far
    for m, n in enumerate(target):
        if n > wanted:
            ordered = max(m - lead, 0)
            orders[ordered] = orders.get(ordered, 0) + n - wanted
            wanted = n
    return sorted((m, n) for m, n in orders.items() if m + lead < len(target))


def schedule_plans(
    nodes: list[int],
    lead: int,
    costs: NodeCosts,
    lease: tuple[float, int] | None = None,
    hours: list[list[int]] | None = None,
) -> dict[str, Plan]:
    """The ways of meeting ``nodes`` (nodes needed per month, at the busiest hour; ``hours``:
    per month, each hour's need, flat when not given): the schedule (each node worth owning,
    :func:`nodes_worth_owning`, ordered ``lead`` months before it first is; the rest rented by
    the hour), renting everything, buying the peak up front (ordered in month 0) and, with
    ``lease`` (annual rate, term in months), the schedule's tranches leased instead of bought."""
    hours = hours if hours is not None else [[n] * HOURS for n in nodes]
    _, table, totals = _finance(nodes, hours, lead, costs, lease)
    return _plans(table, totals, lead, lease is not None)


def _plans(
    table: dict[str, list[Any]], totals: dict[str, Any], lead: int, leased: bool
) -> dict[str, Plan]:
    """The ways of paying, read off the finance metrics' month columns and totals."""
    nodes = table["nodes_needed"]
    peak = max(nodes)
    target = list(itertools.accumulate(table["nodes_worth_owning"], max))
    tranches = _orders(target, lead)

    def rented(owned: list[int]) -> list[int]:
        return [
            value("nodes_rented", {"nodes_needed": n, "nodes_owned": o})
            for n, o in zip(nodes, owned, strict=True)
        ]

    none = [0] * len(nodes)
    rent = Plan("rent everything", none, rented(none), table["rent_everything_usd"])
    owned = table["up_front_nodes_owned"]
    up_front = Plan(
        "buy the peak up front", owned, rented(owned), table["up_front_cash_usd"], [(0, peak)],
        totals["up_front_book_value_at_end_usd"],
    )  # fmt: skip
    if max(target) == 0:
        name = "rent (owning costs more a month)"
    elif max(target) < peak:
        name = "own the base in tranches, rent the peak by the hour"
    else:
        name = "buy in tranches, rent until they arrive"
    owned, rented_nodes = table["nodes_owned"], table["nodes_rented"]
    plans = {
        "schedule": Plan(
            name,
            owned,
            rented_nodes,
            table["cash_usd"],
            tranches,
            totals["total_book_value_at_end_usd"],
        ),  # fmt: skip
        "rent": rent,
        "up_front": up_front,
    }
    if leased:
        plans["lease"] = Plan(
            "lease each node as it is needed", owned, rented_nodes, table["lease_cash_usd"],
            tranches, 0.0 - totals["lease_owed_at_end_usd"],
        )  # fmt: skip
    return plans


@dataclass(frozen=True)
class WorkloadSchedule:
    """A workload's capacity over time under its recommended option."""

    line: Line
    workload: Workload
    factors: list[float]
    replicas: list[int]
    nodes: list[int]
    costs: NodeCosts
    plans: dict[str, Plan]
    discount_rate_per_year: float
    lead_time_months: int
    #: each hour's traffic as a fraction of the busiest hour's (flat: all 1)
    profile: list[float] = field(default_factory=lambda: [1.0] * HOURS)
    #: per month, the nodes each hour of the day needs (its busiest hour: ``nodes``)
    hours: list[list[int]] = field(default_factory=list)
    #: devices in one node (:func:`node_devices`)
    node_devices: int = 1
    #: the lease compared (annual rate, term in months), when the assumptions give one
    lease: tuple[float, int] | None = None
    #: the quantities of the block the finance metrics read (:mod:`planner.model.finance`)
    block: dict[str, Any] = field(default_factory=dict)
    #: the month metrics, by name: a list over the horizon each
    table: dict[str, list[Any]] = field(default_factory=dict)
    #: the metrics over the horizon, by name
    totals: dict[str, Any] = field(default_factory=dict)

    @property
    def base_nodes(self) -> list[int]:
        """Nodes the quietest hour of each month needs [nodes]."""
        return list(self.table["nodes_base"])

    def npv_usd(self, key: str) -> float:
        """Net present value of a plan's cash, less its owned nodes' book value at the end
        (discounted from the month after the horizon) [USD]."""
        return float(self.totals[finance.NPV_OF[key]])

    def payback_month(self) -> int | None:
        """Month from which the schedule's cumulative cost stays at or below renting's."""
        month = self.totals["payback_month"]
        return None if month == NO_PAYBACK else int(month)


def traffic_factors(catalog: Catalog, workload: Workload) -> list[float]:
    """Each month's traffic as a multiple of today's: the forecast's table (inline or its CSV),
    else (1 + growth)^m over its months (no growth: flat)."""
    forecast = workload.forecast
    assert forecast is not None
    if forecast.factors is not None:
        return list(forecast.factors)
    if forecast.file is not None and forecast.column is not None:
        return [float(v) for v in read_factors(catalog.folder, forecast.file, forecast.column)]
    growth = forecast.growth_per_month or 0.0
    return [demand_factor(growth, m) for m in range(forecast.months or 1)]


def lease_of(catalog: Catalog) -> tuple[float, int] | None:
    """The lease the assumptions compare (annual rate, term in months), or None."""
    a = catalog.assumptions
    if a.lease_rate_per_year is None or a.lease_term_months is None:
        return None
    return (a.lease_rate_per_year, a.lease_term_months)


def workload_schedule(catalog: Catalog, line: Line) -> WorkloadSchedule | None:
    """The schedule of one line of the ask; None without a forecast or for an API line."""
    workload = catalog.get("workloads", line.workload)
    if workload.forecast is None or line.advice == API:
        return None
    forecast, a = workload.forecast, catalog.assumptions
    row = line.row
    factors = traffic_factors(catalog, workload)
    block, table = _need(row, forecast, factors)
    costs = node_costs(catalog, row, block["node_devices"])
    lease = lease_of(catalog)
    lead, rate = a.lead_time_months, a.discount_rate_per_year
    hours, nodes = table["hourly_nodes"], table["nodes_needed"]
    paying, months, totals = _finance(nodes, hours, lead, costs, lease, rate)
    return WorkloadSchedule(
        line,
        workload,
        factors,
        table["replicas"],
        nodes,
        costs,
        _plans(months, totals, lead, lease is not None),
        rate,
        lead,
        block["daily_profile"],
        hours,
        block["node_devices"],
        lease,
        block | paying,
        table | months,
        totals,
    )


def _need(row: Any, forecast: Forecast, factors: list[float]) -> tuple[dict[str, Any], dict]:
    """The need metrics (:mod:`planner.model.finance`) of an option over the months of
    ``factors``: the quantities of the block (the Plan figures they read, the node's devices)
    and the month columns (replicas, each hour's nodes, the busiest and quietest hour's)."""
    block: dict[str, Any] = replica_inputs(row) | {
        "growth_per_month": forecast.growth_per_month or 0.0,
        "spare_nodes": forecast.spare_nodes,
        "tensor_parallel": float(row["tensor_parallel"]),
        "prefill_hw_tensor_parallel": float(row.get("prefill_hw_tensor_parallel", 0)),
        "devices_per_node": float(row["devices_per_node"]),
        "daily_profile": list(forecast.daily_profile or [1.0] * HOURS),
    }
    months = len(factors)
    table: dict[str, list[Any]] = {"month": list(range(months)), "traffic_factor": factors}
    month_column("replicas", table, block, months)
    block["node_devices"] = value("node_devices", block | {"replicas_all": table["replicas"]})

    def day(factor: float) -> list[int]:
        """The nodes each hour needs in a month of ``factor``: each share sized once (a flat
        day is one share)."""
        by_share = {
            share: value("hour_nodes", block | {"traffic_factor": factor, "hour_share": share})
            for share in set(block["daily_profile"])
        }
        return [by_share[share] for share in block["daily_profile"]]

    table["hourly_nodes"] = [day(f) for f in factors]
    for name in ("nodes_needed", "nodes_base"):
        month_column(name, table, block, months)
    return block, table


def scaled_growth(forecast: Forecast, factors: list[float], scale: float) -> Forecast:
    """The forecast with its growth × ``scale``: the growth rate, or each month's rise over
    today's traffic (a table, inline or from its file, becomes inline)."""
    if forecast.growth_per_month is not None:
        return forecast.model_copy(update={"growth_per_month": forecast.growth_per_month * scale})
    moved = [max(1 + (f - 1) * scale, 1e-9) for f in factors]
    return forecast.model_copy(
        update={"factors": moved, "file": None, "column": None, "months": None}
    )


#: The ways of paying a schedule compares, in the order they are shown and preferred at equal
#: cost: the schedule, renting everything, buying the peak up front, leasing.
PLANS = ("schedule", "rent", "up_front", "lease")


@dataclass(frozen=True)
class GrowthCase:
    """A schedule with the forecast's growth scaled: its peak nodes, the net present value of
    each way of paying and the cheapest of them."""

    scale: float
    peak_nodes: int
    npv_usd: dict[str, float]

    @property
    def cheapest(self) -> str:
        """The way of paying with the lowest net present value (a :class:`Plan` key); of equal
        ones, the first in :data:`PLANS` (a lease of nothing is no cheaper than renting)."""
        return min(self.npv_usd, key=lambda k: (self.npv_usd[k], PLANS.index(k)))


def growth_cases(catalog: Catalog, found: WorkloadSchedule, swing: float) -> list[GrowthCase]:
    """The schedule of ``found``'s line with its forecast's growth × (1 − swing), as forecast,
    and × (1 + swing): how far the purchase and the way of paying hang on the growth."""
    forecast = found.workload.forecast
    assert forecast is not None

    def at(scale: float) -> WorkloadSchedule:
        if scale == 1:
            return found  # as forecast: the schedule already made
        workload = found.workload.model_copy(
            update={"forecast": scaled_growth(forecast, found.factors, scale)}
        )
        moved = dataclasses.replace(
            catalog,
            workloads=tuple(workload if w.id == workload.id else w for w in catalog.workloads),
        )
        again = workload_schedule(moved, found.line)
        assert again is not None
        return again

    out = []
    for scale in (1 - swing, 1.0, 1 + swing):
        case = at(scale)
        out.append(GrowthCase(scale, max(case.nodes), {k: case.npv_usd(k) for k in case.plans}))
    return out


def schedules(catalog: Catalog, plan: Ask) -> list[WorkloadSchedule]:
    """The schedule of every line of the ask whose workload has a forecast."""
    out = [workload_schedule(catalog, line) for line in plan.lines]
    return [s for s in out if s is not None]
