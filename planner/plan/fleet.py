"""One fleet for several workloads: which options serve each workload, how many replicas of
each, on how many nodes of each device type, at the least cost over the period.

The per-workload ask prices each workload alone, in whole nodes of its own. A fleet shares
nodes: two workloads whose replicas each need two devices of the same type fit on one
8-device node, and a workload may be served by replicas of several options at once (part of
its load on each). As an integer program:

- ``n[o]`` replicas of option ``o`` (an eligible row of the plan: a workload served by a model on
  a device type, precision and layout), integer, ``N[h]`` nodes of device type ``h``, integer;
- each workload served: Σ over its options of ``n[o] ÷ r[o]`` ≥ 1, ``r[o]`` the replicas the
  option needs to carry the workload's whole load alone (``replicas_planned``): a share of the
  load needs that share of the replicas, whole replicas rounded up;
- each device type's replicas pack onto its nodes: for each replica size s, the devices of its
  replicas of s or more devices ≤ ``N[h] × s × ⌊D[h] ÷ s⌋``, ``D[h]`` devices a node
  (:func:`_packing_rows`);
- the cost: Σ ``N[h] × c[h]``, ``c[h]`` one node's cost over the period, owned or rented,
  whichever is cheaper (:func:`planner.plan.schedule.node_costs`, the plan's own metrics).

Solved with HiGHS through :func:`scipy.optimize.milp` (scipy is already a dependency; HiGHS is
an exact branch and bound, which reports its gap). The traffic is the forecast's busiest hour
now; the peaks of several workloads over the day and the months ahead are not combined yet.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.optimize import Bounds, LinearConstraint, milp

from planner.catalog import Catalog
from planner.plan.labels import short_label
from planner.plan.schedule import node_costs

#: The options kept for each workload and device type, fewest devices first: enough for the
#: optimiser to mix them, few enough that the program stays small.
OPTIONS_PER_TYPE = 3


@dataclass(frozen=True)
class Option:
    """One way to serve part of a workload: replicas of ``devices`` devices of ``hardware``,
    ``replicas_alone`` of them carrying the whole load (``label`` names it for people)."""

    workload: str
    hardware: str
    devices: int
    replicas_alone: int
    label: str


@dataclass(frozen=True)
class NodeType:
    """A device type as the fleet buys it: ``devices`` a node at ``cost_usd`` over the period."""

    hardware: str
    devices: int
    cost_usd: float


@dataclass(frozen=True)
class Fleet:
    """The optimiser's fleet: replicas of each option used, nodes of each type, their cost
    over the period, the cost of each workload alone in whole nodes of its own, and the
    optimality gap HiGHS reports (0: proven optimal)."""

    replicas: dict[Option, int]
    nodes: dict[str, int]
    cost_usd: float
    alone_usd: float
    gap: float

    @property
    def saving_usd(self) -> float:
        """What sharing saves against each workload alone [USD]."""
        return self.alone_usd - self.cost_usd


def alone_cost(options: Sequence[Option], types: dict[str, NodeType]) -> float:
    """Each workload on whole nodes of its own, its cheapest single option [USD]."""
    total = 0.0
    for workload in dict.fromkeys(o.workload for o in options):
        total += min(
            math.ceil(o.replicas_alone * o.devices / types[o.hardware].devices)
            * types[o.hardware].cost_usd
            for o in options
            if o.workload == workload
        )
    return total


def solve(options: Sequence[Option], types: dict[str, NodeType]) -> Fleet:
    """The least-cost fleet over ``options`` (module docstring); ValueError where a workload
    has no option."""
    workloads = list(dict.fromkeys(o.workload for o in options))
    names = list(types)
    n_opt, n_type = len(options), len(names)
    cost = np.concatenate([np.zeros(n_opt), [types[h].cost_usd for h in names]])
    served = np.zeros((len(workloads), n_opt + n_type))
    for i, o in enumerate(options):
        served[workloads.index(o.workload), i] = 1 / o.replicas_alone
    packed = _packing_rows(options, [types[h] for h in names])
    # at most each option's replicas alone, and a node for each replica of a type
    upper = [o.replicas_alone for o in options] + [
        sum(o.replicas_alone for o in options if o.hardware == h) for h in names
    ]
    result = milp(
        cost,
        integrality=np.ones(n_opt + n_type),
        bounds=Bounds(0, np.array(upper, dtype=float)),
        constraints=[
            LinearConstraint(served, lb=1 - 1e-9, ub=np.inf),
            LinearConstraint(packed, lb=-np.inf, ub=0),
        ],
    )
    if not result.success:
        raise ValueError(f"no fleet serves every workload: {result.message}")
    x = np.rint(result.x).astype(int)
    replicas = {o: int(x[i]) for i, o in enumerate(options) if x[i] > 0}
    nodes = {h: int(x[n_opt + j]) for j, h in enumerate(names) if x[n_opt + j] > 0}
    gap = float(getattr(result, "mip_gap", 0.0) or 0.0)
    total = sum(types[h].cost_usd * count for h, count in nodes.items())
    return Fleet(replicas, nodes, total, alone_cost(options, types), gap)


def _packing_rows(options: Sequence[Option], types: Sequence[NodeType]) -> np.ndarray:
    """The rows of ``A x ≤ 0`` that say a type's replicas pack onto its nodes: for each type
    and each replica size s on it, the devices of its replicas of s or more devices ≤ nodes ×
    the devices of a node that s-device replicas can use, s × ⌊node ÷ s⌋. With replica sizes
    that divide one another (1, 2, 4, 8) these conditions are also enough: first-fit
    decreasing then packs them (Coffman, Garey and Johnson 1987, bin packing with divisible
    item sizes); three 4-device replicas need three 7-device nodes, not two."""
    n_opt = len(options)
    rows = []
    for j, t in enumerate(types):
        sizes = sorted({o.devices for o in options if o.hardware == t.hardware})
        for size in sizes:
            row = np.zeros(n_opt + len(types))
            for i, o in enumerate(options):
                if o.hardware == t.hardware and o.devices >= size:
                    row[i] = o.devices
            row[n_opt + j] = -size * (t.devices // size)
            rows.append(row)
    return np.array(rows).reshape(-1, n_opt + len(types))


def fleet_options(table: pd.DataFrame, models: dict[str, str]) -> list[Option]:
    """The options of each workload of ``models`` (workload → the model that serves it): its
    eligible rows, the :data:`OPTIONS_PER_TYPE` needing fewest devices on each device type."""
    rows = table[table["eligible"].astype(bool)]
    served = rows["workload"].astype(str).map(models)
    rows = rows[served.to_numpy() == rows["model"].astype(str).to_numpy()]
    rows = rows[rows["replicas_planned"] > 0]
    rows = rows.assign(_devices=rows["replicas_planned"] * rows["tensor_parallel"])
    rows = rows.sort_values(["workload", "hardware", "_devices"], kind="stable")
    kept = rows.groupby(["workload", "hardware"], sort=False).head(OPTIONS_PER_TYPE)
    return [
        Option(
            str(r["workload"]),
            str(r["hardware"]),
            int(r["tensor_parallel"]),
            int(r["replicas_planned"]),
            short_label(r, devices=False),
        )
        for _, r in kept.iterrows()
    ]


def node_types(
    catalog: Catalog, table: pd.DataFrame, hardware: Sequence[str]
) -> dict[str, NodeType]:
    """One full node of each device type and its cost over the period: owned (capital and
    running over the amortisation months) or rented, whichever is cheaper. A node holds its
    ``devices_per_node``, or as many as a rack's power budget takes (``rack_power`` ÷ board
    power, as :func:`planner.model.facility.nodes_per_rack` allows a node); a type of which
    a rack powers no device is left out."""
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
        owned = costs.capital_usd + costs.running_usd_per_month * costs.amortisation_months
        rented = costs.rent_usd_per_month * costs.amortisation_months
        types[h] = NodeType(h, devices, min(owned, rented))
    return types


def plan_fleet(catalog: Catalog, table: pd.DataFrame, models: dict[str, str]) -> Fleet:
    """The least-cost shared fleet for ``models`` (workload → model) over the plan ``table``."""
    options = fleet_options(table, models)
    types = node_types(catalog, table, [o.hardware for o in options])
    options = [o for o in options if o.hardware in types and o.devices <= types[o.hardware].devices]
    missing = set(models) - {o.workload for o in options}
    if missing:
        raise ValueError(f"no eligible option for {', '.join(sorted(missing))}")
    return solve(options, types)
