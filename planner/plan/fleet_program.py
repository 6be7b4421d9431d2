"""The integer program that finds one fleet for several workloads (:mod:`planner.plan.fleet`):
which options serve each workload, how many replicas of each in each hour of the day, on how
many owned devices and nodes of each type and how many rented device-hours, with what overflow
sent to a hosted API, at the least cost over the period.

The per-workload ask prices each workload alone, its devices in nodes of its own. A fleet shares
them: two workloads whose replicas each need two devices of the same type fit on one node, which
pays one node's overhead (chassis, processors, network) instead of two; a workload may be served
by replicas of several options at once (part of its load on each); and workloads whose busy
hours differ share an owned base that each alone would rent. As an integer program over the
hours of the day (hours whose needs are alike merged into one group ``g``):

- ``n[o,g]`` replicas of option ``o`` on owned devices and ``m[o,g]`` on rented ones (an option:
  an eligible row of the plan, a workload served by a model on a device type, precision and
  layout), integers; ``d[h]`` devices and ``N[h]`` nodes of type ``h`` owned, integers;
  ``a[w,g]`` the share of workload ``w``'s traffic sent to the model's hosted API, in [0, 1];
- each workload served each hour: Σ over its options of (``n[o,g]`` + ``m[o,g]``) ÷ ``r[o,g]``
  + ``a[w,g]`` ≥ 1, ``r[o,g]`` the replicas the option needs to carry the hour's whole load
  alone (the schedule's replica formula, :func:`planner.plan.schedule.replicas_at`, at the
  hour's share of the busiest hour's traffic): a share of the load needs that share of the
  replicas, whole replicas rounded up;
- the owned replicas fit the owned devices, d[h] ≥ Σ devices × ``n[o,g]`` + D[h] × ``k[h]``,
  the devices fit the nodes, d[h] ≤ D[h] × N[h], and the replicas pack onto the nodes whole
  (:meth:`_Program.packed`), ``D[h]`` the devices a node holds and ``k[h]`` the spare nodes
  the type keeps: the largest ``spare_nodes`` (N+k) of the workloads with an owned replica on
  it, so that k nodes down leave those replicas a place (a rented device that fails is the
  provider's to replace);
- the cost: Σ ``d[h] × device[h]`` + Σ ``N[h] × node[h]`` + Σ ``m[o,g]`` × devices × hours(g)
  ÷ 24 × ``rent[h]`` + Σ ``a[w,g] × api[w] × p(w,g) ÷ 24``: a device and a node owned over the
  period (capital and running, the plan's own cost metrics), a device rented around the clock
  over the period spread over the day's hours as the schedule does
  (:func:`planner.model.finance.rented_hours`), and the API's bill for the busiest hour's
  traffic all day at the group's share ``p`` of it.

Solved with HiGHS through :func:`scipy.optimize.milp` (scipy is already a dependency; HiGHS is
an exact branch and bound, which reports its gap). The traffic is the forecast's first month;
the months ahead are the schedule's, workload by workload.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
from scipy import sparse
from scipy.optimize import Bounds, LinearConstraint, milp

from planner.model import fleet as fleet_model
from planner.model.finance import HOURS
from planner.plan.fleet import Demand, Fleet, NodeType, Option, pool_pairs, priced

#: Seconds the second program may take to use fewer options and device-hours at the same cost.
TIDY_S = 2.0

#: Seconds HiGHS may search for the fleet, and for the fleet without spare nodes that the report
#: compares it with (a bound, said as such, where the search stops short of the optimum).
SOLVE_S, COMPARE_S = 30.0, 5.0

#: Whether HiGHS presolves: measured on the shipped catalogs, its presolve took 1.5 of the 1.6 s
#: the fleet without spare nodes took to solve, and 0.5 s without it, to the same optimum.
PRESOLVE = False


def solve(
    options: Sequence[Option], types: dict[str, NodeType], demands: Sequence[Demand] = ()
) -> Fleet:
    """The least-cost fleet over ``options`` (module docstring), each workload's day, API and
    spare nodes from ``demands`` (flat, without an API or spares where not given); ValueError
    where the workloads cannot all be served."""
    fleet = _Program(options, types, demands).solve()
    apart = []
    for workload in dict.fromkeys(o.workload for o in options):
        mine = [o for o in options if o.workload == workload]
        apart.append(_Program(mine, types, demands).solve(tidy=False))
    alone = sum(f.cost_usd for f in apart)
    unguarded, unguarded_gap = fleet.cost_usd, fleet.gap
    if any(d.spare_nodes for d in demands):
        bare = [replace(d, spare_nodes=0) for d in demands]
        without = _Program(options, types, bare).solve(tidy=False, seconds=COMPARE_S)
        unguarded, unguarded_gap = without.cost_usd, without.gap
    return replace(fleet, alone_usd=alone, unguarded_usd=unguarded, unguarded_gap=unguarded_gap,
                   alone=tuple(apart))  # fmt: skip


def _hour_groups(options: Sequence[Option]) -> list[tuple[list[int], tuple[int, ...]]]:
    """The hours of the day grouped by the replicas each option needs alone, with that need:
    hours alike are one column of the program (the API's share of a group is a share of each
    of its hours' load, so hours of unlike traffic but like replicas merge too)."""
    groups: dict[tuple[int, ...], list[int]] = {}
    for hour in range(HOURS):
        groups.setdefault(tuple(o.alone_at(hour) for o in options), []).append(hour)
    return [(hours, need) for need, hours in groups.items()]


class _Program:
    """The integer program of the module docstring, its columns laid out as ``n[o,g] | m[o,g] |
    d[h] | N[h] | a[w,g] | k[h] | y[h,w] | u[o]`` (g: an hour group; k: a type's spare nodes; y:
    whether a workload asking for spares has an owned replica on the type; u: whether an option
    is used, for the second program)."""

    def __init__(
        self, options: Sequence[Option], types: dict[str, NodeType], demands: Sequence[Demand]
    ) -> None:
        self.options = list(options)
        parents = list(dict.fromkeys(o.workload for o in options))
        parts = {w: [d for d in demands if d.parent == w] for w in parents}
        given = {d.workload: d for d in demands}
        self.days = {}
        for w in parents:
            for d in parts[w] or [given.get(w, Demand(w))]:
                self.days[d.workload] = d
        self.workloads = list(self.days)
        self.names = [h for h in types if any(o.hardware == h for o in options)]
        self.types = {h: types[h] for h in self.names}
        self.groups = _hour_groups(options)
        self.guarded = [w for w in self.workloads if self.days[w].spare_nodes > 0]
        n_opt, n_grp, n_type = len(self.options), len(self.groups), len(self.names)
        self.at_m = n_opt * n_grp
        self.at_d = 2 * n_opt * n_grp
        self.at_nodes = self.at_d + n_type
        self.at_a = self.at_nodes + n_type
        self.at_k = self.at_a + len(self.workloads) * n_grp
        self.at_y = self.at_k + n_type
        self.at_u = self.at_y + n_type * len(self.guarded)
        self.size = self.at_u + n_opt
        self.cost = np.zeros(self.size)
        self.upper = np.zeros(self.size)
        self.rows: list[dict[int, float]] = []
        self.low: list[float] = []
        self.high: list[float] = []

    def n(self, option: int, group: int) -> int:
        return option * len(self.groups) + group

    def m(self, option: int, group: int) -> int:
        return self.at_m + option * len(self.groups) + group

    def a(self, workload: int, group: int) -> int:
        return self.at_a + workload * len(self.groups) + group

    def y(self, type_: int, guarded: int) -> int:
        return self.at_y + type_ * len(self.guarded) + guarded

    def share(self, workload: str, group: int) -> float:
        """The workload's traffic over the group's hours, in busiest hours [h]."""
        return sum(self.days[workload].profile[t] for t in self.groups[group][0])

    def constrain(self, terms: dict[int, float], low: float, high: float) -> None:
        """A row ``low`` ≤ Σ coefficient × column ≤ ``high`` (``terms``: column → coefficient)."""
        self.rows.append(terms)
        self.low.append(low)
        self.high.append(high)

    def matrix(self) -> sparse.csr_array:
        """The rows as a sparse matrix: most columns of a row are zero."""
        at = [(r, c, v) for r, terms in enumerate(self.rows) for c, v in terms.items() if v]
        rows, columns, values = zip(*at, strict=True) if at else ((), (), ())
        shape = (len(self.rows), self.size)
        return sparse.csr_array((values, (rows, columns)), shape=shape)

    def owned(self) -> None:
        """The owned devices' and nodes' columns and what ties them: the devices fit the nodes;
        enough of both for every replica of every option, spares included."""
        spare = max((self.days[w].spare_nodes for w in self.guarded), default=0)
        for j, h in enumerate(self.names):
            t = self.types[h]
            most = sum(max(o.hourly or (o.replicas_alone,)) * o.devices
                       for o in self.options if o.hardware == h)  # fmt: skip
            if t.ownable:
                self.cost[self.at_d + j], self.cost[self.at_nodes + j] = t.device_usd, t.node_usd
                self.upper[self.at_d + j] = most + spare * t.devices
                self.upper[self.at_nodes + j] = most + spare
            self.constrain({self.at_d + j: 1, self.at_nodes + j: -t.devices}, -np.inf, 0)
            self.upper[self.at_k + j] = spare
            for g_ in range(len(self.guarded)):
                self.upper[self.y(j, g_)] = 1

    def served(self) -> None:
        """Each workload served in each hour group, by its replicas and the API; rented
        replicas priced by the device-hour."""
        for g, (hours, need) in enumerate(self.groups):
            for i, o in enumerate(self.options):
                t = self.types[o.hardware]
                self.upper[self.n(i, g)] = need[i] if t.ownable else 0
                if math.isfinite(t.rent_usd):
                    self.cost[self.m(i, g)] = o.devices * t.rent_usd * len(hours) / HOURS
                    self.upper[self.m(i, g)] = need[i]
            for k, w in enumerate(self.workloads):
                share, day = self.share(w, g), self.days[w]
                if math.isfinite(day.api_usd) and share > 0:
                    self.cost[self.a(k, g)] = day.api_usd * share / HOURS
                    self.upper[self.a(k, g)] = 1
                of = day.of
                mine = [i for i, o in enumerate(self.options) if o.serves(w, of) and need[i]]
                if not mine:  # no option needs a replica: the hour's load is nil
                    continue
                terms = {self.a(k, g): 1.0}
                for i in mine:
                    terms[self.n(i, g)] = terms[self.m(i, g)] = 1 / need[i]
                self.constrain(terms, 1 - 1e-9, np.inf)

    def paced(self) -> None:
        """A two-pool option's prefill pool keeps pace with its decode pool each hour group:
        its replicas' share of what it needs alone is at least the decode pool's,
        (n[p,g] + m[p,g]) × r[d,g] ≥ (n[d,g] + m[d,g]) × r[p,g] (:attr:`Option.pool`)."""
        pairs = pool_pairs(self.options)
        for p, d in pairs:
            for g, (_, need) in enumerate(self.groups):
                if need[p] and need[d]:
                    terms = {self.n(p, g): float(need[d]), self.m(p, g): float(need[d])}
                    terms |= {self.n(d, g): -float(need[p]), self.m(d, g): -float(need[p])}
                    self.constrain(terms, 0, np.inf)

    def packed(self) -> None:
        """Each type's owned replicas on its owned devices and packed onto its nodes, each hour
        group: the devices of its replicas and spare nodes ≤ d[h]; for each replica size s, the
        devices of its replicas of s or more devices ≤ (N[h] − k[h]) × s × ⌊D[h] ÷ s⌋ (a
        whole node for a replica of several nodes, :func:`planner.model.fleet.node_room`). With
        replica sizes that divide one another (1, 2, 4, 8) these conditions are also enough:
        first-fit decreasing then packs them (Coffman, Garey and Johnson 1987, bin packing
        with divisible item sizes); three 4-device replicas need three 7-device nodes, not
        two."""
        for j, h in enumerate(self.names):
            t = self.types[h]
            mine = [(i, o) for i, o in enumerate(self.options) if o.hardware == h]
            for g in range(len(self.groups)):
                terms = {self.n(i, g): float(o.devices) for i, o in mine}
                terms |= {self.at_k + j: t.devices, self.at_d + j: -1}
                self.constrain(terms, -np.inf, 0)
                for size in sorted({o.devices for _, o in mine}):
                    room = int(fleet_model.node_room(size, t.devices))
                    terms = {self.n(i, g): float(o.devices) for i, o in mine if o.devices >= size}
                    terms |= {self.at_nodes + j: -room, self.at_k + j: room}
                    self.constrain(terms, -np.inf, 0)

    def spares(self) -> None:
        """A type keeps the spare nodes of each workload asking for them that has an owned
        replica on it in any hour: y[h,w] ≥ n[o,g] ÷ its bound, k[h] ≥ spare_nodes[w] ×
        y[h,w]."""
        for j, h in enumerate(self.names):
            for q, w in enumerate(self.guarded):
                for i, o in enumerate(self.options):
                    mine = o.hardware == h and o.holds_for(w, self.days[w].of)
                    for g in range(len(self.groups)) if mine else ():
                        bound = max(self.upper[self.n(i, g)], 1)
                        self.constrain({self.n(i, g): 1, self.y(j, q): -bound}, -np.inf, 0)
                spare = self.days[w].spare_nodes
                self.constrain({self.y(j, q): spare, self.at_k + j: -1}, -np.inf, 0)

    def used(self) -> None:
        """u[o] ≥ whether option o holds a replica in any hour (the second program counts
        the options it uses)."""
        for i in range(len(self.options)):
            self.upper[self.at_u + i] = 1
            for g in range(len(self.groups)):
                bound = max(self.upper[self.n(i, g)], self.upper[self.m(i, g)], 1)
                terms = {self.n(i, g): 1, self.m(i, g): 1, self.at_u + i: -bound}
                self.constrain(terms, -np.inf, 0)

    def solve(self, tidy: bool = True, seconds: float = SOLVE_S) -> Fleet:
        """The program's optimum as a :class:`Fleet` (its ``alone_usd`` unknown: NaN), or the
        best fleet HiGHS finds in ``seconds``, with its gap. With ``tidy``, a second program
        keeps that cost and uses the fewest options, then the fewest device-hours: devices
        already paid for cost nothing more, so the first optimum may switch a workload between
        options hour by hour or fill idle devices with replicas nobody needs."""
        self.owned()
        self.served()
        self.paced()
        self.packed()
        self.spares()
        self.used()
        integral = np.ones(self.size)
        integral[self.at_a : self.at_k] = 0  # the API's shares
        bounds = Bounds(np.zeros(self.size), self.upper)
        rows = LinearConstraint(self.matrix(), self.low, self.high)
        result = milp(self.cost, integrality=integral, bounds=bounds, constraints=[rows],
                      options={"time_limit": seconds, "presolve": PRESOLVE})  # fmt: skip
        if result.x is None:
            raise ValueError(f"no fleet serves every workload: {result.message}")
        gap = float(getattr(result, "mip_gap", 0.0) or 0.0)
        if tidy:
            least = float(result.fun)
            held = LinearConstraint(self.cost, -np.inf, least + max(1e-6 * abs(least), 1e-6))
            tidied = milp(self.tidiness(), integrality=integral, bounds=bounds,
                          constraints=[rows, held],
                          options={"time_limit": TIDY_S, "presolve": PRESOLVE})  # fmt: skip
            if tidied.x is not None:  # the best found in the time, else the first optimum's
                result = tidied
        return self.fleet(result.x, gap)

    def tidiness(self) -> np.ndarray:
        """The second program's objective: each option used outweighs every device-hour, and
        each device-hour every device and node owned (a node without overhead costs nothing,
        so the first optimum may own more of them than the devices need)."""
        weights = np.zeros(self.size)
        weights[self.at_d : self.at_a] = 1  # devices and nodes owned
        owned = weights.sum()
        for i, o in enumerate(self.options):
            for g, (hours, _) in enumerate(self.groups):
                weights[self.n(i, g)] = weights[self.m(i, g)] = (1 + owned) * o.devices * len(hours)
        weights[self.at_u :] = 1 + weights.sum()
        return weights

    def by_hour(self, whole: np.ndarray, first: int) -> tuple[int, ...]:
        """A variable of the hour groups (its group 0 at ``first``), spread over the day."""
        values = [0] * HOURS
        for g, (hours, _) in enumerate(self.groups):
            for t in hours:
                values[t] = int(whole[first + g])
        return tuple(values)

    def fleet(self, x: np.ndarray, gap: float) -> Fleet:
        """The fleet of the program's solution ``x``, priced by the fleet metrics
        (:mod:`planner.model.fleet`), as the Fleet sheet prices it."""
        whole = np.rint(x).astype(int)
        owned = {o: self.by_hour(whole, self.n(i, 0)) for i, o in enumerate(self.options)}
        rented = {o: self.by_hour(whole, self.m(i, 0)) for i, o in enumerate(self.options)}
        replicas = {o: tuple(map(sum, zip(owned[o], rented[o], strict=True))) for o in owned}
        api_by_hour = {}
        for k, w in enumerate(self.workloads):
            shares = [0.0] * HOURS
            for g, (hours, _) in enumerate(self.groups):
                for t in hours:
                    shares[t] = float(x[self.a(k, g)]) if self.days[w].profile[t] > 0 else 0.0
            api_by_hour[w] = tuple(shares)

        def per_type(at: int) -> dict[str, int]:
            values = whole[at : at + len(self.names)]
            return {h: int(v) for h, v in zip(self.names, values, strict=True) if v}

        fleet = Fleet(
            {o: hours for o, hours in replicas.items() if max(hours)},
            {o: hours for o, hours in rented.items() if max(hours)},
            per_type(self.at_d),
            per_type(self.at_nodes),
            {},
            {},
            0.0,
            0.0,
            0.0,
            math.nan,
            gap,
            per_type(self.at_k),
            self.types,
            api_by_hour=api_by_hour,
            demands=self.days,
            options=tuple(self.options),
        )
        return priced(fleet)
