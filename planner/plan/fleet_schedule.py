"""The shared fleet over the months of the forecasts: each device type's devices month by month
as the workloads' traffic grows, how many to own and when to order them, what to rent by the
hour meanwhile, and what it costs, with its net present value.

The fleet's option mix is the optimiser's for this month's traffic (:mod:`planner.plan.fleet`):
which options carry what share of each workload's load in each hour, and what share goes to the
hosted API. The months ahead keep that mix and grow its counts. In month ``m``, an option that
carries share ``s`` of an hour's load (its replicas ÷ the replicas that carry the hour alone)
needs ⌈s × ``r``⌉ replicas, ``r`` the replicas that carry that hour alone at the month's traffic
(:func:`planner.model.need.replicas_at`, the schedule's replica formula, at the workload's
traffic factor × the hour's share of the busiest hour). So every workload stays served each
month, by the same options as today. The mix the forecasts' last month would choose is planned
from scratch beside it (:func:`planner.plan.portfolio.fleet_at_horizon`).

Each device type is then costed as the optimiser costs it, month by month, in devices: owning
``d`` devices costs their capital spread over the amortisation period and running cost, in
⌈(d + spares) ÷ D⌉ nodes of ``D`` devices, each node with its overhead, plus the spare nodes
(N+k) of the workloads on the type once any device is owned; every device-hour beyond the
devices owned is rented. The devices worth owning in a month are the count that costs least
(:func:`devices_worth_owning`); each is ordered the lead time before the month it is first
worth owning (none arrives before the lead time has passed) and kept to the end of the horizon;
until it arrives its hours are rented. The owned devices and nodes, the rent, the cash, the book
value at the end and the net present value are the metrics of :mod:`planner.model.fleet_months`
(the ``Fleet months`` sheet's formulas); the API's share of each workload's traffic is paid
month by month at the month's volume.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from planner.catalog import Catalog
from planner.model import finance
from planner.model.finance import HOURS, SLACK
from planner.model.fleet_months import (
    FLEET_HORIZON,
    FLEET_LEASE_BLOCK,
    FLEET_LEASE_HORIZON,
    FLEET_LEASE_MONTHS,
    FLEET_MONTHS,
    FLEET_POWER_MONTHS,
    devices_wanted,
    type_nodes_owned,
)
from planner.model.need import pool_replicas_at
from planner.plan.fleet import Fleet, Option, known_usd
from planner.plan.portfolio import horizon_factors, split_costs
from planner.plan.schedule import NodeCosts, lease_of, present_value


@dataclass(frozen=True)
class TypeSchedule:
    """One device type of the fleet over the months: the quantities of its block, its month
    columns (each a metric of :mod:`planner.model.fleet_months`) and its totals."""

    hardware: str
    block: dict[str, Any]
    table: dict[str, list[Any]]
    totals: dict[str, Any]

    @property
    def node_devices(self) -> int:
        return int(self.block["type_node_devices"])

    @property
    def spare_nodes(self) -> int:
        return int(self.block["type_spare_nodes"])

    @property
    def hours(self) -> list[list[int]]:
        """Per month, the devices each hour of the day needs [devices]."""
        return list(self.table["hourly_devices"])

    @property
    def peak_devices(self) -> list[int]:
        """Devices the busiest hour of each month needs [devices]."""
        return [max(day) for day in self.hours]

    @property
    def worth_owning(self) -> list[int]:
        return list(self.table["devices_worth_owning"])

    @property
    def owned_devices(self) -> list[int]:
        return list(self.table["devices_owned"])

    @property
    def owned_nodes(self) -> list[int]:
        return list(self.table["type_nodes_owned"])

    @property
    def rented_device_hours(self) -> list[int]:
        return list(self.table["rented_device_hours_per_day"])

    @property
    def cash_usd(self) -> list[float]:
        return list(self.table["fleet_cash_usd"])

    @property
    def book_value_usd(self) -> float:
        return float(self.totals["fleet_total_book_value_at_end_usd"])

    @property
    def npv_usd(self) -> float:
        return float(self.totals["fleet_npv_usd"])

    @property
    def rent_everything_npv_usd(self) -> float:
        return float(self.totals["fleet_rent_everything_npv_usd"])

    @property
    def owned_peak_kw(self) -> list[float]:
        """The owned devices' draw at the facility by month (empty: board power unknown)
        [kW]."""
        return list(self.table.get("owned_peak_kw", []))

    @property
    def lease_npv_usd(self) -> float:
        """Net present value of leasing the same devices and nodes (NaN: no lease) [USD]."""
        return float(self.totals.get("fleet_lease_npv_usd", math.nan))

    @property
    def orders(self) -> list[tuple[int, int]]:
        """(month ordered, nodes) of each month's arrivals, ordered the lead time before."""
        lead, arriving = int(self.block["lead_time_months"]), self.table["type_nodes_arriving"]
        return [(m - lead, int(n)) for m, n in enumerate(arriving) if n > 0]


@dataclass(frozen=True)
class FleetSchedule:
    """The fleet over the months of the forecasts: each workload's traffic factor by month,
    each option's replicas by month and hour, each device type's months, and the API's share
    paid by month."""

    factors: dict[str, list[float]]
    replicas: dict[Option, np.ndarray]  # months × hours
    types: tuple[TypeSchedule, ...]
    api_usd: list[float]
    api_npv_usd: float
    lead_time_months: int
    #: each workload's fleet alone (:attr:`planner.plan.fleet.Fleet.alone`) scheduled the same
    #: way, net present value of all of them [USD] (NaN: not planned)
    alone_npv_usd: float = math.nan

    @property
    def months(self) -> int:
        return len(self.api_usd)

    @property
    def npv_usd(self) -> float:
        """Net present value of the fleet over the months, the API's share included [USD]."""
        return self.api_npv_usd + sum(t.npv_usd for t in self.types)

    @property
    def rent_everything_npv_usd(self) -> float:
        """Net present value of renting every device-hour instead, the API's share included
        [USD]."""
        return self.api_npv_usd + sum(t.rent_everything_npv_usd for t in self.types)

    @property
    def lease_npv_usd(self) -> float:
        """Net present value of leasing the devices and nodes instead of buying them, the
        API's share included (NaN: no lease in the assumptions) [USD]."""
        return self.api_npv_usd + sum(t.lease_npv_usd for t in self.types)

    def to_json(self) -> dict[str, object]:
        """The schedule as plain data (``fleet.json``): per device type the devices needed at
        the busiest hour, owned (devices and nodes) and rented (device-hours a day) by month,
        its orders and net present value; the API by month; the fleet's net present value,
        renting everything's and each workload's fleet alone's."""
        return {
            "months": self.months,
            "npv_usd": known_usd(self.npv_usd),
            "rent_everything_npv_usd": known_usd(self.rent_everything_npv_usd),
            "lease_npv_usd": known_usd(self.lease_npv_usd),
            "alone_npv_usd": known_usd(self.alone_npv_usd),
            "api_usd_by_month": list(self.api_usd),
            "device_types": [
                {
                    "hardware": t.hardware,
                    "devices_per_node": t.node_devices,
                    "spare_nodes": t.spare_nodes,
                    "devices_needed_by_month": t.peak_devices,
                    "devices_owned_by_month": t.owned_devices,
                    "nodes_owned_by_month": t.owned_nodes,
                    "rented_device_hours_per_day_by_month": t.rented_device_hours,
                    "owned_peak_kw_by_month": t.owned_peak_kw or None,
                    "orders": [{"month": m, "nodes": n} for m, n in t.orders],
                    "cash_usd_by_month": t.cash_usd,
                    "npv_usd": known_usd(t.npv_usd),
                    "rent_everything_npv_usd": known_usd(t.rent_everything_npv_usd),
                    "lease_npv_usd": known_usd(t.lease_npv_usd),
                }
                for t in self.types
            ],
        }


def owned_usd_per_month(
    devices: int, node_devices: int, device: NodeCosts, node: NodeCosts
) -> float:
    """Owning ``devices`` devices a month, in as few nodes of ``node_devices`` as hold them:
    each device's and each node's capital spread over the amortisation period and running cost
    (:func:`planner.model.finance.node_owned_usd_per_month` of each) [USD/month]."""
    nodes = type_nodes_owned(devices, node_devices)
    return float(
        finance.times(devices, device.owned_usd_per_month)
        + finance.times(nodes, node.owned_usd_per_month)
    )


def devices_worth_owning(
    hourly: Sequence[int], node_devices: int, spare_nodes: int, device: NodeCosts, node: NodeCosts
) -> int:
    """The devices worth owning in a month whose hours need ``hourly`` devices: the count ``d``
    (0 to the busiest hour's) whose month costs least, owning ``d`` devices and, once any is
    owned, ``spare_nodes`` nodes of them more (:func:`owned_usd_per_month`), and renting every
    device-hour beyond ``d`` at a device's rent a month ÷ 24 an hour
    (:func:`planner.model.finance.rented_hours`); the fewest of equal cost [devices]."""
    day = np.asarray(hourly)
    best, best_usd = 0, math.inf
    rent_per_hour = device.rent_usd_per_month / HOURS
    for d in range(int(day.max(initial=0)) + 1):
        owned = int(devices_wanted(d, spare_nodes, node_devices))
        rented = float(finance.rented_hours(day, d))
        usd = owned_usd_per_month(owned, node_devices, device, node) + float(
            finance.times(rented, rent_per_hour)
        )
        if usd < best_usd - SLACK:
            best, best_usd = d, usd
    return best


def alone(option: Option, factors: Sequence[float], profile: Sequence[float]) -> np.ndarray:
    """Replicas of ``option`` that carry its workload's whole load alone, month by month
    (``factors``) and hour by hour (``profile``: each hour's share of the busiest hour's):
    the schedule's replica formula over the Plan figures the option was built from
    [replicas, months × hours]."""
    traffic = np.outer(np.asarray(factors, dtype=float), np.asarray(profile, dtype=float))
    replicas = pool_replicas_at(option.pool, traffic, **dict(option.inputs))
    return np.asarray(replicas, dtype=float)


def grown_replicas(
    fleet: Fleet, factors: Mapping[str, Sequence[float]]
) -> dict[Option, np.ndarray]:
    """Each option the fleet uses, its replicas by month and hour: today's share of each
    hour's load (its replicas ÷ the replicas that carry the hour alone) of the month's
    replicas alone, rounded up (module docstring) [replicas, months × hours]."""
    grown = {}
    for option, today in fleet.replicas.items():
        profile = fleet.demands[option.part or option.workload].profile
        needed = alone(option, factors[option.workload], profile)
        now = np.array([option.alone_at(h) for h in range(HOURS)], dtype=float)
        share = np.divide(np.asarray(today, dtype=float), now, out=np.zeros(HOURS), where=now > 0)
        grown[option] = np.maximum(np.ceil(share * needed - SLACK), 0).astype(int)
    return grown


def type_hours(fleet: Fleet, grown: Mapping[Option, np.ndarray], hardware: str) -> list[list[int]]:
    """The devices of ``hardware`` each hour of each month needs: its options' replicas × their
    devices [devices, months × hours]."""
    mine = [(o, n) for o, n in grown.items() if o.hardware == hardware]
    total = sum(n * o.devices for o, n in mine)
    return np.asarray(total, dtype=int).tolist()


def type_months(
    hardware: str,
    hours: list[list[int]],
    node_devices: int,
    spare_nodes: int,
    costs: tuple[NodeCosts, NodeCosts],
    lead_time_months: int,
    rate_per_year: float,
    lease: tuple[float, int] | None = None,
    power: tuple[float, float] | None = None,
) -> TypeSchedule:
    """One device type over the months of ``hours`` (per month, each hour's devices), ``costs``
    a device's and a node's overhead (:func:`planner.plan.portfolio.split_costs`): the devices
    worth owning each month (:func:`devices_worth_owning`), then the month metrics of
    :mod:`planner.model.fleet_months` and their totals (module docstring); with ``lease``
    (annual rate, term in months), leasing the same devices and nodes too; with ``power`` (a
    device's board power [W], the facility's PUE), the owned devices' draw at the facility."""
    device, node = costs
    months = len(hours)
    block: dict[str, Any] = {
        "type_node_devices": node_devices,
        "type_spare_nodes": spare_nodes,
        "lead_time_months": lead_time_months,
        "discount_rate_per_year": rate_per_year,
        "amortisation_months": device.amortisation_months,
        "months": months,
        "device_capital_usd": device.capital_usd,
        "device_running_usd_per_month": device.running_usd_per_month,
        "device_rent_usd_per_month": device.rent_usd_per_month,
        "overhead_capital_usd": node.capital_usd,
        "overhead_running_usd_per_month": node.running_usd_per_month,
    }
    table: dict[str, list[Any]] = {
        "month": list(range(months)),
        "hourly_devices": [list(day) for day in hours],
        "devices_worth_owning": [
            devices_worth_owning(day, node_devices, spare_nodes, device, node) for day in hours
        ],
    }
    columns: tuple[str, ...] = FLEET_MONTHS
    horizon: tuple[str, ...] = FLEET_HORIZON
    if power is not None:
        block |= {"device_power_w": power[0], "pue": power[1]}
        columns += FLEET_POWER_MONTHS
    if lease is not None:
        block |= {"lease_rate_per_year": lease[0], "lease_term_months": lease[1]}
        for name in FLEET_LEASE_BLOCK:
            block[name] = finance.value(name, block)
        columns, horizon = columns + FLEET_LEASE_MONTHS, horizon + FLEET_LEASE_HORIZON
    for name in columns:
        finance.month_column(name, table, block, months)
    totals: dict[str, Any] = {}
    for name in horizon:
        totals[name] = finance.horizon_value(name, table, block | totals)
    return TypeSchedule(hardware, block, table, totals)


def api_by_month(
    fleet: Fleet, factors: Mapping[str, Sequence[float]], months: int, period_months: int
) -> list[float]:
    """The API's share of each workload's traffic paid month by month: its bill for the
    busiest hour's traffic all day over the period, per month of the period, × each hour's
    share sent to it × the hour's share of the busiest hour's traffic ÷ 24, × the month's
    traffic factor [USD/month] (the fleet program's API cost, :mod:`planner.plan.fleet`, by
    the month)."""
    out = [0.0] * months
    for w, shares in fleet.api_by_hour.items():
        demand = fleet.demands[w]
        if not np.isfinite(demand.api_usd) or not any(shares):
            continue
        day = sum(a * p for a, p in zip(shares, demand.profile, strict=True)) / HOURS
        for m in range(months):
            out[m] += demand.api_usd / period_months * day * factors[demand.of][m]
    return out


def type_spares(fleet: Fleet, hardware: str) -> int:
    """Spare nodes a device type keeps while it owns any device: the most any workload with an
    option on it asks for (its forecast's ``spare_nodes``, N+k), as the optimiser keeps them
    [nodes]."""
    asks = [fleet.demands[o.part or o.workload].spare_nodes
            for o in fleet.replicas if o.hardware == hardware]  # fmt: skip
    return max(asks, default=0)


def scheduled(
    catalog: Catalog, table: pd.DataFrame, fleet: Fleet, factors: Mapping[str, Sequence[float]]
) -> tuple[dict[Option, np.ndarray], tuple[TypeSchedule, ...], list[float]]:
    """``fleet`` over the months of ``factors`` (each workload's traffic factor by month): its
    options' replicas by month and hour, each device type's months, and the API paid by
    month."""
    a = catalog.assumptions
    grown = grown_replicas(fleet, factors)
    types = []
    for h in fleet.hardware():
        if not any(o.hardware == h for o in grown):
            continue
        row = table[table["hardware"].astype(str) == h].iloc[0]
        devices = fleet.types[h].devices
        power_w = float(row["power_w"])
        power = (power_w, a.pue) if math.isfinite(power_w) and power_w > 0 else None
        types.append(type_months(h, type_hours(fleet, grown, h), devices, type_spares(fleet, h),
                                 split_costs(catalog, row, devices), a.lead_time_months,
                                 a.discount_rate_per_year, lease_of(catalog), power))  # fmt: skip
    months = len(next(iter(factors.values())))
    return grown, tuple(types), api_by_month(fleet, factors, months, a.amortisation_months)


def fleet_schedule(catalog: Catalog, table: pd.DataFrame, fleet: Fleet) -> FleetSchedule | None:
    """The fleet over the months of the forecasts (module docstring), beside each workload's
    fleet alone scheduled the same way; None where no workload of the fleet has a forecast."""
    workloads = list(dict.fromkeys(d.of for d in fleet.demands.values()))
    if not any(catalog.get("workloads", w).forecast for w in workloads) or not fleet.replicas:
        return None
    factors = horizon_factors(catalog, workloads)
    a = catalog.assumptions
    rate = a.discount_rate_per_year
    grown, types, api = scheduled(catalog, table, fleet, factors)
    alone = 0.0
    for apart in fleet.alone:
        _, its_types, its_api = scheduled(catalog, table, apart, factors)
        alone += sum(t.npv_usd for t in its_types) + present_value(its_api, rate)
    return FleetSchedule(factors, grown, types, api, present_value(api, rate),
                         a.lead_time_months, alone if fleet.alone else math.nan)  # fmt: skip
