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
from planner.model.metric import metrics
from planner.plan.assumptions import GLOBALS
from planner.plan.deployment import API, Ask, Line


def demand_factor(growth_per_month: float, month: int) -> float:
    """Traffic in month ``month`` as a multiple of this month's: (1 + g)^m [-] (compound
    growth)."""
    return (1 + growth_per_month) ** month


def monthly_rate(rate_per_year: float) -> float:
    """The monthly rate equivalent to an annual one: (1 + r)^(1/12) − 1 [-] (compounding)."""
    return (1 + rate_per_year) ** (1 / 12) - 1


def discount_factor(rate_per_year: float, month: int) -> float:
    """What a dollar paid at the start of month ``month`` is worth today: 1 ÷ (1 + i)^m with i
    the monthly rate, which is 1 ÷ (1 + r)^(m/12) [-]."""
    return 1 / (1 + monthly_rate(rate_per_year)) ** month


def present_value(flows: list[float], rate_per_year: float) -> float:
    """Net present value of monthly cash flows, each paid at the start of its month (month 0
    undiscounted): Σ flowₘ × discount factorₘ [USD]."""
    return sum(flow * discount_factor(rate_per_year, m) for m, flow in enumerate(flows))


def lease_payment_usd(principal_usd: float, rate_per_year: float, term_months: int) -> float:
    """Monthly payment of a lease (an annuity) that repays ``principal_usd`` over
    ``term_months`` at the nominal annual rate: P × i ÷ (1 − (1 + i)^−n), i = r ÷ 12; P ÷ n at 0
    [USD/month] (the annuity formula)."""
    i = rate_per_year / 12
    if i == 0:
        return principal_usd / term_months
    return principal_usd * i / (1 - (1 + i) ** -term_months)


def book_value_usd(capital_usd: float, age_months: int, amortisation_months: int) -> float:
    """What an owned node is still worth on the books after ``age_months`` in service:
    capital × (1 − age ÷ amortisation period), not below 0 [USD] (straight-line
    depreciation)."""
    return capital_usd * max(0.0, 1 - age_months / amortisation_months)


def depreciation_usd(owned: list[int], capital_usd: float, amortisation_months: int) -> list[float]:
    """Straight-line depreciation of the owned nodes, month by month: capital ÷ amortisation
    period for each node in service and not yet written off, (owned_m − owned_{m−A}) × capital
    ÷ A with nodes never sold [USD/month]."""
    return [
        (n - (owned[m - amortisation_months] if m >= amortisation_months else 0))
        * capital_usd
        / amortisation_months
        for m, n in enumerate(owned)
    ]


def payback_month(renting: list[float], buying: list[float]) -> int | None:
    """The month from which buying's cumulative cost, once above renting's, stays at or below
    it: when the outlay has paid for itself. None when buying never costs more (nothing was
    bought) or never catches up within the horizon."""
    a = b = 0.0
    month, behind = None, False
    for m, (x, y) in enumerate(zip(renting, buying, strict=True)):
        a, b = a + x, b + y
        if b > a:
            behind, month = True, None
        elif behind and month is None:
            month = m
    return month


def simulation_raise(row: Any) -> float:
    """How far the simulation raised the closed form's replicas: replicas_planned ÷
    replicas_needed, 1 where the closed form needs none [-]."""
    today = float(row["replicas_needed"])
    return float(row["replicas_planned"]) / today if today > 0 else 1.0


def replicas_at(row: Any, factor: float) -> int:
    """Replicas the option needs when the workload's traffic is ``factor`` × today's: the
    ``replicas_needed`` formula over the scaled load, times :func:`simulation_raise`."""
    needed = metrics()["replicas_needed"]
    scaled = float(
        needed(
            float(row["concurrency"]) * factor,
            float(row["replica_capacity_sequences"]),
            float(row["in_flight_requests"]) * factor,
            float(row["forecast_requests_per_s"]) * factor,
            float(row["requests_per_s_per_replica"]),
        )
    )
    return math.ceil(scaled * simulation_raise(row) - 1e-9)


@dataclass(frozen=True)
class NodeCosts:
    """What one node of the option costs: to buy, to run and to rent [USD, USD/month]."""

    capital_usd: float
    running_usd_per_month: float
    rent_usd_per_month: float
    amortisation_months: int

    @property
    def owned_usd_per_month(self) -> float:
        """Capital spread over the amortisation period plus running cost [USD/month]."""
        return self.capital_usd / self.amortisation_months + self.running_usd_per_month


def node_devices(row: Any, peak_replicas: int) -> int:
    """Devices in one node of the schedule: a full node (``devices_per_node``) once the
    horizon's peak fills one, else the peak's devices (a replica's at least), so a fleet smaller
    than a node is not priced as a full one [devices]."""
    per_node = int(row["devices_per_node"])
    tp = int(row["tensor_parallel"])
    return min(per_node, max(tp, peak_replicas * tp))


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

    def finite(name: str) -> float:
        value = float(values[name])
        return value if math.isfinite(value) else math.inf

    return NodeCosts(
        finite("capital_usd"),
        finite("opex_usd_per_month"),
        finite("cloud_usd_per_month"),
        a.amortisation_months,
    )


#: Hours in a day: a daily profile's length, and what a month's rent is spread over.
HOURS = 24


def break_even_hours(costs: NodeCosts) -> float:
    """Hours a day a node must be busy for owning it to cost less than renting it for those
    hours: 24 × owned ÷ rented cost a month [h/day] (inf where renting is free or impossible to
    undercut; 0 where renting is impossible)."""
    if not math.isfinite(costs.rent_usd_per_month):
        return 0.0
    if costs.rent_usd_per_month <= 0:
        return math.inf
    return HOURS * costs.owned_usd_per_month / costs.rent_usd_per_month


def nodes_worth_owning(hourly: list[int], break_even_h: float) -> int:
    """Nodes worth owning in a month whose hours need ``hourly`` nodes: node k is, when more
    than ``break_even_h`` hours a day need k or more, i.e. the (⌊break-even⌋ + 1)-th largest
    hourly need; none when the break-even is a whole day or more [nodes]."""
    if break_even_h >= len(hourly):
        return 0
    return sorted(hourly, reverse=True)[math.floor(break_even_h)]


def rented_node_hours(hourly: list[int], owned: int) -> int:
    """Node-hours a day beyond the ``owned`` nodes, rented by the hour [node·h/day]."""
    return sum(max(need - owned, 0) for need in hourly)


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


def _times(count: int, usd: float) -> float:
    """``count`` × ``usd``, nothing for none of a thing whose price is unknown (inf) [USD]."""
    return count * usd if count else 0.0


#: Owned nodes as they arrive: (month of arrival, nodes arriving that month), one pair a month at
#: most, so that a schedule's work grows with its months, never with its node count.
Tranches = list[tuple[int, int]]


def _plan(
    name: str,
    hours: list[list[int]],
    arrivals: Tranches,
    costs: NodeCosts,
    orders: list[tuple[int, int]],
    lease: tuple[float, int] | None = None,
) -> Plan:
    """Owned nodes arrive as ``arrivals`` (month, nodes), paid on arrival, or with ``lease``
    (annual rate, term) in monthly payments from arrival; any hour's need (``hours``: per
    month, the nodes each hour of the day needs) beyond the owned nodes in service is rented
    for that hour."""
    payment = lease_payment_usd(costs.capital_usd, *lease) if lease else 0.0
    owned, rented, cash = [], [], []
    for m, hourly in enumerate(hours):
        in_service = sum(n for a, n in arrivals if a <= m)
        if lease:
            capital = _times(sum(n for a, n in arrivals if a <= m < a + lease[1]), payment)
        else:
            capital = _times(sum(n for a, n in arrivals if a == m), costs.capital_usd)
        owned.append(in_service)
        rented.append(max(max(hourly) - in_service, 0))
        node_hours = rented_node_hours(hourly, in_service)
        rent = _times(node_hours, costs.rent_usd_per_month / len(hourly))
        cash.append(capital + _times(in_service, costs.running_usd_per_month) + rent)
    end = len(hours)
    if lease:  # the payments still owed at the end count against the lease
        owed = sum(n * max(a + lease[1] - end, 0) for a, n in arrivals if a < end)
        residual = 0.0 - _times(owed, payment)
    else:
        residual = sum(
            n * book_value_usd(costs.capital_usd, end - a, costs.amortisation_months)
            for a, n in arrivals
            if a < end
        )
    return Plan(name, owned, rented, cash, orders, residual)


def _tranches(target: list[int], lead: int) -> tuple[Tranches, list[tuple[int, int]]]:
    """Each node of ``target`` (nodes to own, per month) ordered ``lead`` months before the
    month it is first wanted (month 0 at the earliest), counted by month: the tranches that
    arrive within the horizon (month, nodes), and the orders (month ordered, nodes) that arrive
    within it."""
    months = len(target)
    arrivals: dict[int, int] = {}
    orders: dict[int, int] = {}
    wanted = 0  # nodes wanted in some month so far
    for m, n in enumerate(target):
        if n <= wanted:
            continue
        ordered = max(m - lead, 0)
        arrivals[ordered + lead] = arrivals.get(ordered + lead, 0) + n - wanted
        orders[ordered] = orders.get(ordered, 0) + n - wanted
        wanted = n
    arrived = sorted((a, n) for a, n in arrivals.items() if a < months)
    return arrived, sorted((m, n) for m, n in orders.items() if m + lead < months)


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
    peak = max(nodes)
    break_even = break_even_hours(costs)
    target = list(itertools.accumulate((nodes_worth_owning(h, break_even) for h in hours), max))
    arrivals, tranches = _tranches(target, lead)
    rent = _plan("rent everything", hours, [], costs, [])
    up_front = _plan("buy the peak up front", hours, [(lead, peak)], costs, [(0, peak)])
    if max(target) == 0:
        schedule = _plan("rent (owning costs more a month)", hours, [], costs, [])
    elif max(target) < peak:
        schedule = _plan(
            "own the base in tranches, rent the peak by the hour", hours, arrivals, costs, tranches
        )
    else:
        schedule = _plan(
            "buy in tranches, rent until they arrive", hours, arrivals, costs, tranches
        )
    plans = {"schedule": schedule, "rent": rent, "up_front": up_front}
    if lease is not None:
        plans["lease"] = _plan(
            "lease each node as it is needed", hours, arrivals, costs, tranches, lease=lease
        )
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

    @property
    def base_nodes(self) -> list[int]:
        """Nodes the quietest hour of each month needs [nodes]."""
        return [min(h) for h in self.hours] if self.hours else list(self.nodes)

    def npv_usd(self, key: str) -> float:
        """Net present value of a plan's cash, less its owned nodes' book value at the end
        (discounted from the month after the horizon) [USD]."""
        plan = self.plans[key]
        end = discount_factor(self.discount_rate_per_year, len(plan.cash_usd))
        return present_value(plan.cash_usd, self.discount_rate_per_year) - plan.residual_usd * end

    def payback_month(self) -> int | None:
        """Month from which the schedule's cumulative cost stays at or below renting's."""
        return payback_month(self.plans["rent"].cash_usd, self.plans["schedule"].cash_usd)


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


def workload_schedule(catalog: Catalog, line: Line) -> WorkloadSchedule | None:
    """The schedule of one line of the ask; None without a forecast or for an API line."""
    workload = catalog.get("workloads", line.workload)
    if workload.forecast is None or line.advice == API:
        return None
    forecast, a = workload.forecast, catalog.assumptions
    row = line.row
    tp = float(row["tensor_parallel"])
    factors = traffic_factors(catalog, workload)
    profile = list(forecast.daily_profile or [1.0] * HOURS)

    def nodes_for(replicas: int, devices: int) -> int:
        return math.ceil(replicas * tp / devices - 1e-9) + forecast.spare_nodes

    def day(factor: float) -> list[int]:
        """The replicas each hour needs in a month of ``factor``: each share sized once (a flat
        day is one share)."""
        by_share = {share: replicas_at(row, factor * share) for share in set(profile)}
        return [by_share[share] for share in profile]

    hourly_replicas = [day(f) for f in factors]
    replicas = [max(day) for day in hourly_replicas]
    devices = node_devices(row, max(replicas))
    hours = [[nodes_for(r, devices) for r in day] for day in hourly_replicas]
    nodes = [max(day) for day in hours]
    costs = node_costs(catalog, row, devices)
    lease = None
    if a.lease_rate_per_year is not None and a.lease_term_months is not None:
        lease = (a.lease_rate_per_year, a.lease_term_months)
    plans = schedule_plans(nodes, a.lead_time_months, costs, lease, hours)
    return WorkloadSchedule(
        line,
        workload,
        factors,
        replicas,
        nodes,
        costs,
        plans,
        a.discount_rate_per_year,
        a.lead_time_months,
        profile,
        hours,
        devices,
        lease,
    )


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
