"""What a run's writers show beyond the results table, computed once for all of them (the
workbook, the report, the terminal): the ranking and the recommendations, the ask, the
measurements and their comparison with the estimates, each forecast's schedule and how it hangs
on the growth, the tornado of the ask's cost, what would change each line of the ask, and the
calibration in words. The writers lay these out; none of them computes a figure again.

The sensitivity (:func:`what_changes`, :func:`tornado`) re-plans in closed form with one input
moved; it does so over the leading options of the plan (:func:`leading_rows`), not every
candidate, so that its cost is bounded by what the report shows, also in a streamed run. The
sensitivity runs in a forked child while the fleet is optimised
(:class:`planner.outputs.background.Forked`), the same figures in about half the time on two
cores."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from planner.catalog import Catalog
from planner.deploy.check import Verdict, apart
from planner.measure import Measurement, load_measurements
from planner.measure.compare import comparison
from planner.outputs.background import Forked
from planner.outputs.basis import calibration_lines
from planner.plan.candidates import Candidates
from planner.plan.deployment import Ask, Line, ask
from planner.plan.fleet import Fleet
from planner.plan.fleet_schedule import FleetSchedule, fleet_schedule
from planner.plan.portfolio import fleet_at_horizon, fleet_of
from planner.plan.recommend import COST, GROUP, rank, ranked, recommendations
from planner.plan.schedule import GrowthCase, WorkloadSchedule, growth_cases, schedules
from planner.plan.sensitivity import (
    SWING,
    Bar,
    caching_applies,
    closed_ask,
    lines_of,
    tornado,
    what_changes,
    without_prefix_caching,
)
from planner.plan.stream import codes_of
from planner.plan.uncertainty import Bands

#: The tornado (:func:`planner.plan.sensitivity.tornado`) and what prefix caching is worth to
#: each workload (:func:`cache_worth`), as the sensitivity passes give them.
Tornado = tuple[float, float, list[Bar]]
Caching = dict[str, "CacheWorth"]

#: Options per workload × model the sensitivity re-plans: the first this many by the ranking
#: (ties in cost among them, and the option an input moved by 10 % makes cheapest, are within
#: it on the shipped catalogs).
LEADING_OPTIONS = 5

#: What a family of options is: the candidates that differ only in tensor-parallel size.
FAMILY = ["workload", "model", "precision", "hardware"]


@dataclass(frozen=True)
class CacheWorth:
    """What prefix caching is worth to a workload's line of the ask: the line as planned (with
    the cache) and the line the closed form asks for with the engine's prefix caching off; where
    the planned line rests on the simulation, also the line the closed form asks for with the
    cache, which the worth is weighed against (like with like: a simulation may ask for more
    replicas than the closed form, the cache or not)."""

    workload: str
    cached: Line
    uncached: Line | None  # None: nothing would serve the workload without the cache
    #: the closed form's line with the cache, where the planned line is the simulation's
    cached_closed: Line | None = None

    @property
    def compared(self) -> Line:
        """The line with the cache that the line without it is weighed against: the closed
        form's where the planned line is the simulation's, else the planned line."""
        return self.cached_closed if self.cached_closed is not None else self.cached

    @property
    def devices_saved(self) -> float:
        uncached = self.uncached.devices if self.uncached else float("nan")
        return uncached - self.compared.devices

    @property
    def monthly_usd_saved(self) -> float:
        uncached = self.uncached.monthly_usd if self.uncached else float("nan")
        return uncached - self.compared.monthly_usd


def cache_worth(
    catalog: Catalog, plan: Ask, rows: pd.DataFrame | None = None, base: Ask | None = None
) -> dict[str, CacheWorth]:
    """Per workload of ``plan`` that prefix caching applies to, its line with and without the
    cache: one more closed-form evaluation of ``rows`` (the leading options) with the engine's
    prefix caching off, and one with it where a planned line is the simulation's; empty, and
    nothing evaluated, where caching applies to none; ``base``: :func:`closed_ask` of the
    catalog and ``rows``, where the caller has it."""
    cached = [
        line
        for line in plan.lines
        if caching_applies(catalog, catalog.get("workloads", line.workload))
    ]
    if not cached:
        return {}
    uncached = lines_of(without_prefix_caching(catalog), rows)
    simulated = {line.workload: bool(line.row.get("simulated", False)) for line in cached}
    with_cache = lines_of(catalog, rows, base) if any(simulated.values()) else {}
    return {
        line.workload: CacheWorth(
            line.workload,
            line,
            uncached.get(line.workload),
            with_cache.get(line.workload) if simulated[line.workload] else None,
        )
        for line in cached
    }


@dataclass(frozen=True)
class Outlook:
    """Everything a run's writers show beyond the results table, computed once."""

    plan: Ask
    measurements: tuple[Measurement, ...]
    measured: pd.DataFrame  # :func:`planner.measure.compare.comparison` of the measurements
    schedules: list[WorkloadSchedule]
    tornado: tuple[float, float, list[Bar]]
    #: per schedule, in order: the schedule with its growth lowered, as forecast, raised
    growth: list[list[GrowthCase]]
    #: the plan over draws of its uncertain inputs (``planner run --draws``), if asked for
    bands: Bands | None
    #: :func:`planner.plan.recommend.rank` of the table (``rank`` and ``winner`` per row)
    order: pd.DataFrame
    #: :func:`planner.plan.recommend.ranked` of the table: each row with its rank and verdict
    ranks: pd.DataFrame
    #: :func:`planner.plan.recommend.recommendations` of the table: one row per group
    recommendations: pd.DataFrame
    #: per workload, the input changes that change its line of the ask, with the line they
    #: lead to (:func:`planner.plan.sensitivity.what_changes`)
    changes: dict[str, list[tuple[str, Line | None]]]
    #: what calibration.yaml changes, a sentence per fit
    calibration: list[str]
    #: per workload prefix caching applies to, its line of the ask with and without the cache
    caching: dict[str, CacheWorth]
    #: the ask's workloads as one shared fleet (:func:`planner.plan.portfolio.plan_fleet`), or why
    #: there is none
    fleet: Fleet | str = "not planned"
    #: the fleet the forecasts' last month needs, with that month (None: no forecast grows)
    fleet_later: tuple[int, Fleet | str] | None = None
    #: the fleet over the months of the forecasts
    #: (:func:`planner.plan.fleet_schedule.fleet_schedule`; None: no fleet or no forecast)
    fleet_months: FleetSchedule | None = None
    #: the measurements of a line's model on its hardware taken with other settings than the
    #: plan's (:func:`planner.deploy.check.apart`), not counted as that line measured
    apart: tuple[Verdict, ...] = ()


def leading_rows(catalog: Catalog, table: pd.DataFrame, order: pd.DataFrame) -> pd.DataFrame:
    """The candidates the sensitivity re-plans, as :func:`planner.plan.sweep.candidates` rows
    in plan order: per workload × model, the families (every tensor-parallel size) of its
    first :data:`LEADING_OPTIONS` options by the ranking (``order``: :func:`rank` of
    ``table``), of the options ruled out yet holding a replica at no more than (1 +
    :data:`SWING`) × the winner's cost, and, where nothing is eligible, of the
    :data:`LEADING_OPTIONS` cheapest options holding a replica.

    Read from the plan's candidate codes (:func:`planner.plan.stream.codes_of`), so that a
    streamed sweep's candidates are never held as a table.
    """
    places = order["rank"].to_numpy()
    groups = [table[g] for g in GROUP]
    cost = pd.to_numeric(table[COST], errors="coerce")
    best = cost.where(places == 1).groupby(groups, sort=False).transform("min")
    holds = table["replica_fits"].astype(bool)
    near = holds & (places == 0) & (cost <= best * (1 + SWING))
    unserved = best.isna() & holds
    cheapest = cost.where(unserved).groupby(groups, sort=False).rank(method="first")
    picked = ((places >= 1) & (places <= LEADING_OPTIONS)) | near
    picked |= unserved & (cheapest <= LEADING_OPTIONS)
    return _family_rows(codes_of(catalog), table.loc[picked.to_numpy(dtype=bool), FAMILY])


def _family_rows(plan: Candidates, families: pd.DataFrame) -> pd.DataFrame:
    """The candidates of ``plan`` whose workload, model, precision and hardware are a row of
    ``families``, every tensor-parallel size, in plan order."""
    code = np.zeros(len(plan), dtype=np.int64)
    wanted = np.zeros(len(families), dtype=np.int64)
    for column, key in zip(range(4), FAMILY, strict=True):
        ids = pd.Index(plan.ids[key])
        code = code * len(ids) + plan.codes[:, column]
        wanted = wanted * len(ids) + ids.get_indexer(pd.Index(families[key].astype(str)))
    keep = np.isin(code, wanted)
    return Candidates(plan.codes[keep], plan.ids, plan.sizes).table()


def outlook(catalog: Catalog, table: pd.DataFrame, bands: Bands | None = None) -> Outlook:
    """The :class:`Outlook` of ``table`` (the plan's results) under ``catalog``, with the
    ``bands`` of a Monte Carlo run where there was one."""
    order = rank(table)
    plan = ask(catalog, table, order)
    measurements = load_measurements(catalog)
    found = schedules(catalog, plan)
    leading = leading_rows(catalog, table, order) if len(table) else None

    # the sensitivity passes in a child of their own while this process optimises the fleet
    def sensitivity() -> tuple[Tornado, dict[str, list[tuple[str, Line | None]]], Caching]:
        base = closed_ask(catalog, leading)  # the inputs as given, once for every pass
        return (
            tornado(catalog, SWING, rows=leading, base=base),
            what_changes(catalog, rows=leading, base=base),
            cache_worth(catalog, plan, leading, base),
        )

    passes = Forked(sensitivity, "re-planning with each input moved").start()
    served = {line.workload: line.model for line in plan.lines}
    fleet = fleet_of(catalog, table, served)
    fleet_later = fleet_at_horizon(catalog, table, served) if served else None
    fleet_months = None if isinstance(fleet, str) else fleet_schedule(catalog, table, fleet)
    bars, changes, caching = passes.result()
    return Outlook(
        plan=plan,
        measurements=measurements,
        measured=comparison(catalog, measurements),
        schedules=found,
        tornado=bars,
        growth=[growth_cases(catalog, s, SWING) for s in found],
        bands=bands,
        order=order,
        ranks=ranked(table, order),
        recommendations=recommendations(table, order),
        changes=changes,
        calibration=calibration_lines(catalog),
        caching=caching,
        fleet=fleet,
        fleet_later=fleet_later,
        fleet_months=fleet_months,
        apart=apart(catalog, plan.lines, measurements),
    )
