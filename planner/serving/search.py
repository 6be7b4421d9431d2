"""The search for the fewest replicas that meet a workload's targets, by simulation.

A replica count is proven the fewest when it meets every target and the count below it misses
one (more replicas are assumed never to raise a p95; see :mod:`planner.serving.sizing`). Any
search that ends on such a pair finds the same count; this one asks for few simulations by
guessing where the targets are met from what the runs so far say. Each run's *miss ratio*
(:func:`miss_ratio`: its worst p95 over its target) is about linear in the load one replica
carries (:func:`load`: its users in a closed loop, else its share 1/R of the arrivals), so the
next count tried is where the line through the nearest miss and the nearest hit (or the best
case, one request at a time) crosses 1 (:func:`next_count`); bisection takes over where the
guesses stop halving the interval.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from planner.model.targets import TARGETS as LATENCY_TARGETS
from planner.model.units import is_finite
from planner.serving.configs import step_model, users_per_replica
from planner.serving.speculation import itl_floor_s

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from planner.catalog import Assumptions, Workload
    from planner.serving.statistics import SimResult


#: (label, workload target field, SimResult p95 field), in the order reasons are reported.
TARGETS = tuple((t.name, t.field, t.simulated) for t in LATENCY_TARGETS)


@dataclass(frozen=True)
class Miss:
    """A target one simulation misses: ``label`` (ttft/itl/e2e/task/rejected), value, limit."""

    label: str
    value: float
    limit: float

    def text(self) -> str:
        """``itl p95 0.081 s > 0.050 s target`` (more digits where three would show a tie)."""
        if self.label == "rejected":
            return f"rejected {self.value:.2%} > {self.limit:.2%} ceiling"
        digits = 3
        while digits < 6 and f"{self.value:.{digits}f}" == f"{self.limit:.{digits}f}":
            digits += 1
        return f"{self.label} p95 {self.value:.{digits}f} s > {self.limit:.{digits}f} s target"


def misses(result: SimResult, workload: Workload, ceiling: float) -> list[Miss]:
    """The targets a simulated replica misses (a missing figure counts as a miss)."""
    out = []
    for label, target_field, result_field in TARGETS:
        limit = getattr(workload.targets, target_field)
        if limit is None:
            continue
        value = getattr(result, result_field)
        if not value <= limit:
            out.append(Miss(label, value, limit))
    if not result.rejected_fraction <= ceiling:
        out.append(Miss("rejected", result.rejected_fraction, ceiling))
    return out


def miss_ratio_of(result: SimResult, workload: Workload, ceiling: float) -> float:
    """The run's worst figure over its target or ceiling (:func:`miss_ratio`) [-]."""
    values = {"rejected": result.rejected_fraction}
    limits = {"rejected": ceiling}
    for label, target_field, result_field in TARGETS:
        limit = getattr(workload.targets, target_field)
        if limit is not None:
            values[label] = getattr(result, result_field)
            limits[label] = limit
    return miss_ratio(values, limits)


def floors_missed(
    row: Mapping[str, Any], assumptions: Assumptions
) -> list[tuple[str, float, float, str]]:
    """The latency floors of a row over their targets, (label, floor, target, what binds): the
    no-load TTFT, and a decode step of one sequence with one cached token per token emitted
    (:func:`~planner.serving.speculation.itl_floor_s`). No replica count goes below them."""
    floors = (
        ("ttft", "ttft_p95_target_s", float(row["ttft_s"]), "compute"),
        ("itl", "itl_p95_target_s", itl_floor_s(step_model(row, assumptions)), "bandwidth"),
    )
    return [
        (label, floor, float(row[target]), bound)
        for label, target, floor, bound in floors
        if is_finite(row.get(target)) and floor > float(row[target])
    ]


def miss_ratio(values: dict[str, float], limits: dict[str, float]) -> float:
    """The worst of ``value ÷ limit`` over the targets a run is held to [-]: above 1 a miss.
    A missing value is infinitely far; a zero limit counts as 1 + value when the value is
    above it, else 0."""
    worst = 0.0
    for name, limit in limits.items():
        value = values[name]
        if not value == value:  # a missing figure is a miss
            return math.inf
        ratio = value / limit if limit > 0 else (1.0 + value if value > 0 else 0.0)
        worst = max(worst, ratio)
    return worst


def load(replicas: int, users: int | None) -> float:
    """The load the most loaded of ``replicas`` replicas carries: its users (closed loop of
    ``users``), else its share of the arrivals, 1/R [-]."""
    if users is not None:
        return float(users_per_replica(users, replicas))
    return 1.0 / replicas


def replicas_for(target: float, users: int | None, upper: int) -> int:
    """The fewest replicas whose load is at most ``target`` (:func:`load`), at most ``upper``."""
    if users is not None:
        per = math.floor(target)
        return upper if per < 1 else min(-(-users // per), upper)
    return upper if target <= 0 else min(max(math.ceil(1.0 / target - 1e-9), 1), upper)


@dataclass
class Bracket:
    """What the runs so far say: the most replicas that missed (0: none yet) and the fewest
    that met (None: none yet), each with its load and miss ratio; the best case's
    ``(load, ratio)`` when it was run."""

    lo: int = 0
    hi: int | None = None
    at: dict[int, tuple[float, float]] | None = None
    best: tuple[float, float] | None = None
    slow: int = 0
    """Guesses in a row that did not halve the interval."""


def _crossing(miss: tuple[float, float], hit: tuple[float, float]) -> float | None:
    """The load where the line through a miss and a hit reaches ratio 1 (None: no rising
    line)."""
    (x_miss, r_miss), (x_hit, r_hit) = miss, hit
    if not (math.isfinite(r_miss) and math.isfinite(r_hit)) or r_miss <= r_hit:
        return None
    if x_miss <= x_hit:
        return None
    return x_hit + (x_miss - x_hit) * (1.0 - r_hit) / (r_miss - r_hit)


def _beyond(b: Bracket, users: int | None, upper: int) -> int:
    """The next count while every count so far missed: where the line through the nearest
    miss and the best case reaches ratio 1 (doubling without a best case, or after two such
    guesses missed); an open loop's queues grow faster than linearly near their limit, so it
    at most doubles."""
    best = b.best if b.best is not None and b.best[1] < 1.0 else None
    x = None if best is None else _crossing((b.at or {})[b.lo], best)
    guess = 2 * b.lo if x is None else replicas_for(x, users, upper)
    if users is None or b.slow >= 2:
        guess = min(guess, 2 * b.lo)
    b.slow += 1
    return min(max(guess, b.lo + 1), upper)


def next_count(b: Bracket, users: int | None, upper: int) -> int:
    """The replica count to simulate next, strictly between ``b.lo`` and ``b.hi`` (or above
    ``b.lo`` while no count has met the targets)."""
    at = b.at or {}
    if b.hi is None:  # no hit yet
        return _beyond(b, users, upper)
    if b.lo == 0 and len(at) == 1 and b.hi > 1:
        # the first count met: the count just below it first. The closed form's count is
        # usually near the simulated one, and a miss ratio is flat above the fewest count
        # (the one-request floors) while it climbs below it, so a line through one hit
        # guesses far too few
        return b.hi - 1
    if b.hi - b.lo <= 2 or b.slow >= 2:
        b.slow = 0
        return (b.lo + b.hi) // 2 if b.hi - b.lo > 1 else b.lo
    hit = at[b.hi]
    if b.lo > 0:
        x = _crossing(at[b.lo], hit)
    elif 0.0 < hit[1] < 1.0:  # no miss yet: the ratio taken as proportional to the load
        x = hit[0] / hit[1]
    else:
        x = None
    guess = (b.lo + b.hi) // 2 if x is None else replicas_for(x, users, upper)
    return min(max(guess, b.lo + 1), b.hi - 1)


def fewest(
    simulate_at: Callable[[int], tuple[bool, float]],
    start: int,
    upper: int,
    users: int | None,
    best: float | None = None,
) -> tuple[int, int | None]:
    """``(lo, hi)``: ``hi`` the fewest replicas up to ``upper`` that meet the targets and
    ``lo`` the count below it, which misses (0: one replica meets), or ``(upper, None)`` when
    ``upper`` misses too. ``simulate_at`` simulates a count: (met, miss ratio). Starts at
    ``start``; ``best`` is the best case's miss ratio when it was run (its load: one user, or
    none).
    """
    b = Bracket(at={}, best=None if best is None else (1.0 if users is not None else 0.0, best))
    count = start
    while True:
        assert b.at is not None
        met, ratio = simulate_at(count)
        b.at[count] = (load(count, users), ratio)
        width = None if b.hi is None else b.hi - b.lo
        if met:
            b.hi = count
        else:
            b.lo = count
        if b.hi is not None and b.hi - b.lo <= 1:
            return b.lo, b.hi
        if b.hi is None:
            if b.lo >= upper:
                return upper, None
        elif width is None:  # the first hit
            b.slow = 0
        else:
            b.slow = b.slow + 1 if 2 * (b.hi - b.lo) > width else 0
        count = next_count(b, users, upper)
