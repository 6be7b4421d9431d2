"""Capacity over time: the nodes a workload needs month by month as its traffic grows, which to
buy when (whole nodes, ordered a lead time ahead) and what to rent meanwhile, and what each way
of paying costs, with its net present value.

For a workload with a ``forecast``, month ``m``'s traffic is this month's × (1 + growth)^m. Its
recommended option's replica arithmetic (``replicas_needed``: Little's law over the arrival
rate, or the users, and the replica's capacity) is applied to that traffic, raised by the
simulation's margin where the simulation asked for more replicas than the closed form, and
rounded up to whole nodes, plus the spare nodes of N+k.

The schedule then compares, per node, owning (its capital spread over the amortisation period
plus its running cost) with renting it: where owning is cheaper, each node is ordered
``lead_time_months`` before the month it is first needed, and rented until it arrives; else
every node is rented. It is set against renting everything and against buying the peak up front.
Cash flows are discounted monthly at the annual rate, (1 + r)^(1/12) − 1 a month.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

from planner.catalog import Catalog, Workload
from planner.catalog.datafiles import read_factors
from planner.model.metric import metrics
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

    @property
    def buy(self) -> bool:
        """Whether owning a node costs less a month than renting it."""
        return self.owned_usd_per_month < self.rent_usd_per_month


def node_costs(row: Any, amortisation_months: int) -> NodeCosts:
    """The option's per-node costs: its fleet's capital, running cost and rent ÷ its nodes."""
    nodes = max(float(row["nodes_needed"]), 1.0)

    def per_node(column: str) -> float:
        value = float(row[column])
        return value / nodes if math.isfinite(value) else math.inf

    return NodeCosts(
        per_node("capital_usd"),
        per_node("opex_usd_per_month"),
        per_node("cloud_usd_per_month"),
        amortisation_months,
    )


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


def _plan(
    name: str,
    nodes: list[int],
    arrivals: list[int],
    costs: NodeCosts,
    orders: list[tuple[int, int]],
    lease: tuple[float, int] | None = None,
) -> Plan:
    """Owned nodes arrive as ``arrivals`` (month of each node's arrival), paid on arrival, or
    with ``lease`` (annual rate, term) in monthly payments from arrival; any need beyond the
    owned nodes in service is rented."""
    payment = lease_payment_usd(costs.capital_usd, *lease) if lease else 0.0
    owned, rented, cash = [], [], []
    for m, need in enumerate(nodes):
        in_service = sum(1 for a in arrivals if a <= m)
        if lease:
            capital = payment * sum(1 for a in arrivals if a <= m < a + lease[1])
        else:
            capital = costs.capital_usd * sum(1 for a in arrivals if a == m)
        owned.append(in_service)
        rented.append(max(need - in_service, 0))
        cash.append(
            capital
            + in_service * costs.running_usd_per_month
            + rented[-1] * costs.rent_usd_per_month
        )
    end = len(nodes)
    if lease:  # the payments still owed at the end count against the lease
        residual = -payment * sum(max(a + lease[1] - end, 0) for a in arrivals if a < end)
    else:
        residual = sum(
            book_value_usd(costs.capital_usd, end - a, costs.amortisation_months)
            for a in arrivals
            if a < end
        )
    return Plan(name, owned, rented, cash, orders, residual)


def schedule_plans(
    nodes: list[int], lead: int, costs: NodeCosts, lease: tuple[float, int] | None = None
) -> dict[str, Plan]:
    """The ways of meeting ``nodes`` (nodes needed per month): the schedule (each node ordered
    ``lead`` months before it is first needed, where owning is cheaper; else all rented),
    renting everything, buying the peak up front (ordered in month 0) and, with ``lease``
    (annual rate, term in months), the schedule's tranches leased instead of bought."""
    months, peak = len(nodes), max(nodes)
    first_needed = [next(m for m, n in enumerate(nodes) if n >= k) for k in range(1, peak + 1)]
    arrivals = [max(m - lead, 0) + lead for m in first_needed]
    orders: dict[int, int] = {}
    for m in first_needed:
        orders[max(m - lead, 0)] = orders.get(max(m - lead, 0), 0) + 1
    owned_in_horizon = [a for a in arrivals if a < months]
    rent = _plan("rent everything", nodes, [], costs, [])
    up_front = _plan("buy the peak up front", nodes, [lead] * peak, costs, [(0, peak)])
    tranches = sorted((m, n) for m, n in orders.items() if m + lead < months)
    if costs.buy:
        schedule = _plan(
            "buy in tranches, rent until they arrive", nodes, owned_in_horizon, costs, tranches
        )
    else:
        schedule = _plan("rent (owning costs more a month)", nodes, [], costs, [])
    plans = {"schedule": schedule, "rent": rent, "up_front": up_front}
    if lease is not None:
        plans["lease"] = _plan(
            "lease each node as it is needed",
            nodes,
            owned_in_horizon,
            costs,
            tranches,
            lease=lease,
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
    per_node = float(row["devices_per_node"])
    tp = float(row["tensor_parallel"])
    factors = traffic_factors(catalog, workload)
    replicas = [replicas_at(row, f) for f in factors]
    nodes = [math.ceil(r * tp / per_node - 1e-9) + forecast.spare_nodes for r in replicas]
    costs = node_costs(row, a.amortisation_months)
    lease = None
    if a.lease_rate_per_year is not None and a.lease_term_months is not None:
        lease = (a.lease_rate_per_year, a.lease_term_months)
    plans = schedule_plans(nodes, a.lead_time_months, costs, lease)
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
    )


def schedules(catalog: Catalog, plan: Ask) -> list[WorkloadSchedule]:
    """The schedule of every line of the ask whose workload has a forecast."""
    out = [workload_schedule(catalog, line) for line in plan.lines]
    return [s for s in out if s is not None]
