"""One fleet for several workloads: which options serve each workload, how many replicas of
each in each hour of the day, on how many owned and rented nodes of each device type, with what
overflow sent to a hosted API, at the least cost over the period.

The per-workload ask prices each workload alone, in whole nodes of its own. A fleet shares
nodes: two workloads whose replicas each need two devices of the same type fit on one 8-device
node; a workload may be served by replicas of several options at once (part of its load on
each); and workloads whose busy hours differ share an owned base, the peaks above it rented by
the hour. As an integer program over the hours of the day (hours whose needs are alike merged):

- ``n[o,t]`` replicas of option ``o`` in hour ``t`` (an eligible row of the plan: a workload
  served by a model on a device type, precision and layout), integer; ``O[h]`` nodes of device
  type ``h`` owned, integer; ``R[h,t]`` nodes of type ``h`` rented in hour ``t``, integer;
  ``a[w,t]`` the share of workload ``w``'s traffic in hour ``t`` sent to the model's hosted API,
  in [0, 1];
- each workload served each hour: Σ over its options of ``n[o,t] ÷ r[o,t]`` + ``a[w,t]`` ≥ 1,
  ``r[o,t]`` the replicas the option needs to carry the hour's whole load alone (the schedule's
  replica formula, :func:`planner.plan.schedule.replicas_at`, at the hour's share of the busiest
  hour's traffic): a share of the load needs that share of the replicas, whole replicas rounded
  up;
- each device type's replicas pack onto its nodes each hour: for each replica size s, the
  devices of its replicas of s or more devices ≤ (``O[h]`` + ``R[h,t]`` − k) × s × ⌊D[h] ÷ s⌋,
  ``D[h]`` devices a node, k the spare nodes a type in use keeps (N+k: the workloads' largest
  ``spare_nodes``, so one node down leaves every workload's replicas in place)
  (:func:`_packing_rows`);
- the cost: Σ ``O[h] × owned[h]`` + Σ ``R[h,t] × rent[h] ÷ 24`` + Σ ``a[w,t] × api[w] × p[w,t]
  ÷ 24``: one node owned over the period (capital and running), rented around the clock over the
  period, spread over the day's hours as the schedule does
  (:func:`planner.model.finance.rented_hours`), and the API's bill for the workload's busiest
  hour's traffic all day, at the hour's share ``p`` of it.

Solved with HiGHS through :func:`scipy.optimize.milp` (scipy is already a dependency; HiGHS is
an exact branch and bound, which reports its gap). The traffic is the forecast's first month;
the months ahead are the schedule's, workload by workload.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.optimize import Bounds, LinearConstraint, milp

from planner.catalog import Catalog
from planner.model.finance import HOURS
from planner.plan.labels import short_label
from planner.plan.recommend import COST
from planner.plan.schedule import node_costs, replicas_at

#: The options kept for each workload and device type, fewest devices first: enough for the
#: optimiser to mix them, few enough that the program stays small.
OPTIONS_PER_TYPE = 3

#: Seconds the second program may take to use fewer device-hours at the same cost.
TIDY_S = 2.0

#: A flat day: every hour carries the busiest hour's traffic.
FLAT = (1.0,) * HOURS


@dataclass(frozen=True)
class Option:
    """One way to serve part of a workload: replicas of ``devices`` devices of ``hardware``,
    ``replicas_alone`` of them carrying the busiest hour's whole load, ``hourly`` each hour's
    (empty: the busiest hour's all day); ``label`` names it for people."""

    workload: str
    hardware: str
    devices: int
    replicas_alone: int
    label: str
    hourly: tuple[int, ...] = ()

    def alone_at(self, hour: int) -> int:
        """Replicas that carry hour ``hour``'s whole load alone [replicas]."""
        return self.hourly[hour] if self.hourly else self.replicas_alone


@dataclass(frozen=True)
class NodeType:
    """A device type as the fleet buys it: ``devices`` a node, one node owned over the period
    at ``owned_usd`` (capital and running) or rented around the clock over it at ``rent_usd``;
    inf where it cannot be had that way."""

    hardware: str
    devices: int
    owned_usd: float
    rent_usd: float = math.inf


@dataclass(frozen=True)
class Demand:
    """A workload's day and its hosted API: each hour's traffic as a share of the busiest
    hour's, and the API's bill over the period for the busiest hour's traffic all day (inf:
    no API serves it)."""

    workload: str
    profile: tuple[float, ...] = FLAT
    api_usd: float = math.inf


@dataclass(frozen=True)
class Fleet:
    """The optimiser's fleet: replicas of each option used, hour by hour; nodes of each type
    owned, and rented each hour; each workload's share of the day's traffic sent to the API;
    the cost over the period and its parts; the cost of each workload planned alone by the same
    program on nodes of its own; and the optimality gap HiGHS reports (0: proven optimal)."""

    replicas: dict[Option, tuple[int, ...]]
    owned: dict[str, int]
    rented: dict[str, tuple[int, ...]]
    api_share: dict[str, float]
    owned_usd: float
    rented_usd: float
    api_usd: float
    alone_usd: float
    gap: float
    spare_nodes: int = 0
    types: dict[str, NodeType] = field(default_factory=dict)

    @property
    def cost_usd(self) -> float:
        """The fleet over the period: nodes owned, node-hours rented and API calls [USD]."""
        return self.owned_usd + self.rented_usd + self.api_usd

    @property
    def saving_usd(self) -> float:
        """What sharing saves against each workload alone [USD]."""
        return self.alone_usd - self.cost_usd

    @property
    def nodes(self) -> dict[str, int]:
        """Nodes of each type at the fleet's busiest hour: owned and the most rented [nodes]."""
        names = dict.fromkeys([*self.owned, *self.rented])
        peak = {h: self.owned.get(h, 0) + max(self.rented.get(h, (0,))) for h in names}
        return {h: n for h, n in peak.items() if n > 0}

    @property
    def peak_replicas(self) -> dict[Option, int]:
        """Replicas of each option used at its busiest hour [replicas]."""
        return {o: max(hours) for o, hours in self.replicas.items()}

    def rented_node_hours(self, hardware: str) -> int:
        """Node-hours of ``hardware`` rented a day [node·h/day]."""
        return sum(self.rented.get(hardware, ()))


def solve(
    options: Sequence[Option],
    types: dict[str, NodeType],
    demands: Sequence[Demand] = (),
    spare_nodes: int = 0,
) -> Fleet:
    """The least-cost fleet over ``options`` (module docstring), each workload's day and API
    from ``demands`` (flat and without an API where not given), with ``spare_nodes`` kept on
    each device type in use; ValueError where the workloads cannot all be served."""
    fleet = _Program(options, types, demands, spare_nodes).solve()
    alone = 0.0
    for workload in dict.fromkeys(o.workload for o in options):
        mine = [o for o in options if o.workload == workload]
        alone += _Program(mine, types, demands, spare_nodes).solve(tidy=False).cost_usd
    return Fleet(**{**fleet.__dict__, "alone_usd": alone})


def _hour_groups(options: Sequence[Option]) -> list[tuple[list[int], tuple[int, ...]]]:
    """The hours of the day grouped by the replicas each option needs alone, with that need:
    hours alike are one column of the program (the API's share of a group is a share of each
    of its hours' load, so hours of unlike traffic but like replicas merge too)."""
    groups: dict[tuple[int, ...], list[int]] = {}
    for hour in range(HOURS):
        groups.setdefault(tuple(o.alone_at(hour) for o in options), []).append(hour)
    return [(hours, need) for need, hours in groups.items()]


class _Program:
    """The integer program of the module docstring, its columns laid out as
    ``n[o,g] | O[h] | R[h,g] | a[w,g] | u[h]`` (g: an hour group; u: a type in use)."""

    def __init__(
        self,
        options: Sequence[Option],
        types: dict[str, NodeType],
        demands: Sequence[Demand],
        spare_nodes: int,
    ) -> None:
        self.options = list(options)
        self.workloads = list(dict.fromkeys(o.workload for o in options))
        given = {d.workload: d for d in demands}
        self.days = {w: given.get(w, Demand(w)) for w in self.workloads}
        self.names = [h for h in types if any(o.hardware == h for o in options)]
        self.types = {h: types[h] for h in self.names}
        self.groups = _hour_groups(options)
        self.spare = spare_nodes
        n_grp = len(self.groups)
        self.at_o = len(self.options) * n_grp
        self.at_r = self.at_o + len(self.names)
        self.at_a = self.at_r + len(self.names) * n_grp
        self.at_u = self.at_a + len(self.workloads) * n_grp
        self.size = self.at_u + len(self.names)
        self.cost = np.zeros(self.size)
        self.upper = np.zeros(self.size)
        self.rows: list[np.ndarray] = []
        self.low: list[float] = []
        self.high: list[float] = []

    def n(self, option: int, group: int) -> int:
        return option * len(self.groups) + group

    def r(self, type_: int, group: int) -> int:
        return self.at_r + type_ * len(self.groups) + group

    def a(self, workload: int, group: int) -> int:
        return self.at_a + workload * len(self.groups) + group

    def share(self, workload: str, group: int) -> float:
        """The workload's traffic over the group's hours, in busiest hours [h]."""
        return sum(self.days[workload].profile[t] for t in self.groups[group][0])

    def constrain(self, row: np.ndarray, low: float, high: float) -> None:
        self.rows.append(row)
        self.low.append(low)
        self.high.append(high)

    def nodes(self) -> None:
        """The nodes' columns: owned over the period, rented for the group's hours; enough of
        them for every replica of every option, spares included."""
        most = sum(max(o.alone_at(t) for t in range(HOURS)) * o.devices for o in self.options)
        for j, h in enumerate(self.names):
            t = self.types[h]
            if math.isfinite(t.owned_usd):
                self.cost[self.at_o + j] = t.owned_usd
                self.upper[self.at_o + j] = most + self.spare
            for g, (hours, _) in enumerate(self.groups):
                if math.isfinite(t.rent_usd):
                    self.cost[self.r(j, g)] = t.rent_usd * len(hours) / HOURS
                    self.upper[self.r(j, g)] = most + self.spare
            self.upper[self.at_u + j] = 1

    def served(self) -> None:
        """Each workload served in each hour group, by its replicas and the API."""
        for g, (_, need) in enumerate(self.groups):
            for i in range(len(self.options)):
                self.upper[self.n(i, g)] = need[i]
            for k, w in enumerate(self.workloads):
                share, day = self.share(w, g), self.days[w]
                if math.isfinite(day.api_usd) and share > 0:
                    self.cost[self.a(k, g)] = day.api_usd * share / HOURS
                    self.upper[self.a(k, g)] = 1
                mine = [i for i, o in enumerate(self.options) if o.workload == w and need[i]]
                if not mine and share == 0:
                    continue
                row = np.zeros(self.size)
                for i in mine:
                    row[self.n(i, g)] = 1 / need[i]
                row[self.a(k, g)] = 1
                self.constrain(row, 1 - 1e-9, np.inf)

    def packed(self) -> None:
        """Each type's replicas packed onto its nodes in each hour group, for each replica size
        s: the devices of its replicas of s or more devices ≤ (nodes − spares) × s × ⌊node ÷
        s⌋. With replica sizes that divide one another (1, 2, 4, 8) these conditions are also
        enough: first-fit decreasing then packs them (Coffman, Garey and Johnson 1987, bin
        packing with divisible item sizes); three 4-device replicas need three 7-device
        nodes, not two."""
        for j, h in enumerate(self.names):
            mine = [(i, o) for i, o in enumerate(self.options) if o.hardware == h]
            for size in sorted({o.devices for _, o in mine}):
                room = size * (self.types[h].devices // size)
                for g in range(len(self.groups)):
                    row = np.zeros(self.size)
                    for i, o in mine:
                        row[self.n(i, g)] = o.devices if o.devices >= size else 0
                    row[self.at_o + j] = row[self.r(j, g)] = -room
                    row[self.at_u + j] = self.spare * room
                    self.constrain(row, -np.inf, 0)

    def in_use(self) -> None:
        """A type holding a replica of any option in any hour is in use (and keeps spares)."""
        for j, h in enumerate(self.names):
            for i, o in enumerate(self.options):
                for g in range(len(self.groups)) if o.hardware == h else ():
                    row = np.zeros(self.size)
                    row[self.n(i, g)] = 1
                    row[self.at_u + j] = -max(self.upper[self.n(i, g)], 1)
                    self.constrain(row, -np.inf, 0)

    def solve(self, tidy: bool = True) -> Fleet:
        """The program's optimum as a :class:`Fleet` (its ``alone_usd`` unknown: NaN). With
        ``tidy``, a second program keeps that cost and uses the fewest device-hours: devices
        already paid for cost nothing more, so the first optimum may fill them with replicas
        nobody needs."""
        self.nodes()
        self.served()
        self.packed()
        if self.spare:
            self.in_use()
        integral = np.ones(self.size)
        integral[self.at_a : self.at_u] = 0
        bounds = Bounds(np.zeros(self.size), self.upper)
        rows = LinearConstraint(np.array(self.rows), self.low, self.high)
        result = milp(self.cost, integrality=integral, bounds=bounds, constraints=[rows])
        if not result.success:
            raise ValueError(f"no fleet serves every workload: {result.message}")
        gap = float(getattr(result, "mip_gap", 0.0) or 0.0)
        if tidy:
            least = float(result.fun)
            held = LinearConstraint(self.cost, -np.inf, least + max(1e-6 * abs(least), 1e-6))
            used = np.zeros(self.size)
            for i, o in enumerate(self.options):
                for g, (hours, _) in enumerate(self.groups):
                    used[self.n(i, g)] = o.devices * len(hours)
            tidied = milp(used, integrality=integral, bounds=bounds, constraints=[rows, held],
                          options={"time_limit": TIDY_S})  # fmt: skip
            if tidied.x is not None:  # the best found in the time, else the first optimum's
                result = tidied
        return self.fleet(result.x, gap)

    def by_hour(self, whole: np.ndarray, first: int) -> tuple[int, ...]:
        """A variable of the hour groups (its group 0 at ``first``), spread over the day."""
        values = [0] * HOURS
        for g, (hours, _) in enumerate(self.groups):
            for t in hours:
                values[t] = int(whole[first + g])
        return tuple(values)

    def fleet(self, x: np.ndarray, gap: float) -> Fleet:
        whole = np.rint(x).astype(int)
        replicas = {o: self.by_hour(whole, self.n(i, 0)) for i, o in enumerate(self.options)}
        owned = {h: int(whole[self.at_o + j]) for j, h in enumerate(self.names)}
        rented = {h: self.by_hour(whole, self.r(j, 0)) for j, h in enumerate(self.names)}
        api_share, api_usd = {}, 0.0
        for k, w in enumerate(self.workloads):
            sent = sum(x[self.a(k, g)] * self.share(w, g) for g in range(len(self.groups)))
            if sent > 1e-9:
                api_share[w] = float(sent / sum(self.days[w].profile))
                api_usd += float(self.days[w].api_usd * sent / HOURS)
        owned = {h: n for h, n in owned.items() if n}
        rented = {h: hours for h, hours in rented.items() if max(hours)}
        owned_usd = sum(self.types[h].owned_usd * n for h, n in owned.items())
        rented_usd = sum(self.types[h].rent_usd * sum(v) / HOURS for h, v in rented.items())
        return Fleet(
            {o: hours for o, hours in replicas.items() if max(hours)},
            owned,
            rented,
            api_share,
            owned_usd,
            rented_usd,
            api_usd,
            math.nan,
            gap,
            self.spare,
            self.types,
        )


def served_rows(table: pd.DataFrame, models: dict[str, str]) -> pd.DataFrame:
    """The eligible rows of each workload of ``models`` (workload → the model that serves it)
    that hold a replica."""
    rows = table[table["eligible"].astype(bool)]
    served = rows["workload"].astype(str).map(models)
    rows = rows[served.to_numpy() == rows["model"].astype(str).to_numpy()]
    return rows[rows["replicas_planned"] > 0]


def daily_profile(catalog: Catalog, workload: str) -> tuple[float, ...]:
    """Each hour's traffic as a share of the busiest hour's: the forecast's ``daily_profile``,
    else flat."""
    forecast = catalog.get("workloads", workload).forecast
    if forecast is None or forecast.daily_profile is None:
        return FLAT
    return tuple(float(share) for share in forecast.daily_profile)


def fleet_options(catalog: Catalog, table: pd.DataFrame, models: dict[str, str]) -> list[Option]:
    """The options of each workload of ``models``: on each device type, for each replica size,
    the eligible row needing fewest replicas (the cheapest of those: another of the same size
    and more replicas can never serve a share more cheaply), the :data:`OPTIONS_PER_TYPE`
    smallest sizes, with the replicas each hour of the workload's day needs alone."""
    rows = served_rows(table, models)
    order = ["workload", "hardware", "tensor_parallel", "replicas_planned", COST]
    rows = rows.sort_values(order, kind="stable")
    rows = rows.drop_duplicates(["workload", "hardware", "tensor_parallel"])
    kept = rows.groupby(["workload", "hardware"], sort=False).head(OPTIONS_PER_TYPE)
    options = []
    for _, r in kept.iterrows():
        profile = daily_profile(catalog, str(r["workload"]))
        hourly = () if profile == FLAT else tuple(replicas_at(r, share) for share in profile)
        options.append(Option(
            str(r["workload"]),
            str(r["hardware"]),
            int(r["tensor_parallel"]),
            int(r["replicas_planned"]),
            short_label(r, devices=False),
            hourly,
        ))  # fmt: skip
    return options


def demands(catalog: Catalog, table: pd.DataFrame, models: dict[str, str]) -> list[Demand]:
    """Each workload's day and the bill of its model's hosted API over the period for the
    busiest hour's traffic all day (``api_usd``; inf without an offer)."""
    rows = served_rows(table, models)
    found = []
    for workload in models:
        bills = pd.to_numeric(rows.loc[rows["workload"] == workload, "api_usd"], errors="coerce")
        bills = bills[np.isfinite(bills)]
        bill = float(bills.min()) if len(bills) else math.inf
        found.append(Demand(workload, daily_profile(catalog, workload), bill))
    return found


def node_types(
    catalog: Catalog, table: pd.DataFrame, hardware: Sequence[str]
) -> dict[str, NodeType]:
    """One full node of each device type, owned over the period (capital and running over the
    amortisation months) and rented around the clock over it. A node holds its
    ``devices_per_node``, or as many as a rack's power budget takes (``rack_power`` ÷ board
    power, as :func:`planner.model.facility.nodes_per_rack` allows a node); a type of which a
    rack powers no device is left out."""
    types = {}
    rack = catalog.assumptions.rack_power
    for h in dict.fromkeys(hardware):
        row = table[table["hardware"].astype(str) == h].iloc[0]
        devices = int(row["devices_per_node"])
        power = float(row["power_w"])
        if rack is not None and math.isfinite(power) and power > 0:
            devices = min(devices, math.floor(rack / power))
        if devices < 1:
            continue
        costs = node_costs(catalog, row, devices)
        months = costs.amortisation_months
        owned = costs.capital_usd + costs.running_usd_per_month * months
        types[h] = NodeType(h, devices, owned, costs.rent_usd_per_month * months)
    return types


def spare_nodes(catalog: Catalog, workloads: Sequence[str]) -> int:
    """Nodes each device type in use keeps beyond the need: the workloads' largest
    ``spare_nodes`` (N+k) [nodes]."""
    spares = [catalog.get("workloads", w).forecast for w in workloads]
    return max((f.spare_nodes for f in spares if f is not None), default=0)


def plan_fleet(catalog: Catalog, table: pd.DataFrame, models: dict[str, str]) -> Fleet:
    """The least-cost shared fleet for ``models`` (workload → model) over the plan ``table``."""
    options = fleet_options(catalog, table, models)
    types = node_types(catalog, table, [o.hardware for o in options])
    options = [o for o in options if o.hardware in types and o.devices <= types[o.hardware].devices]
    missing = set(models) - {o.workload for o in options}
    if missing:
        raise ValueError(f"no eligible option for {', '.join(sorted(missing))}")
    spare = spare_nodes(catalog, list(models))
    return solve(options, types, demands(catalog, table, models), spare)
