"""What a run's workbook and report derive from the plan beyond its table, computed once for
both: the ask, the measurements and their comparison with the estimates, each forecast's
schedule and how it hangs on the growth, and the tornado of the ask's cost."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from planner.catalog import Catalog
from planner.measure import Measurement, load_measurements
from planner.measure.compare import comparison
from planner.plan.deployment import Ask, ask
from planner.plan.schedule import GrowthCase, WorkloadSchedule, growth_cases, schedules
from planner.plan.sensitivity import SWING, Bar, tornado
from planner.plan.uncertainty import Bands


@dataclass(frozen=True)
class Outlook:
    plan: Ask
    measurements: tuple[Measurement, ...]
    measured: pd.DataFrame  # :func:`planner.measure.compare.comparison` of the measurements
    schedules: list[WorkloadSchedule]
    tornado: tuple[float, float, list[Bar]]
    #: per schedule, in order: the schedule with its growth lowered, as forecast, raised
    growth: list[list[GrowthCase]]
    #: the plan over draws of its uncertain inputs (``planner run --draws``), if asked for
    bands: Bands | None = None


def outlook(catalog: Catalog, table: pd.DataFrame, bands: Bands | None = None) -> Outlook:
    """The :class:`Outlook` of ``table`` (the plan's results) under ``catalog``, with the
    ``bands`` of a Monte Carlo run where there was one."""
    plan = ask(catalog, table)
    measurements = load_measurements(catalog)
    found = schedules(catalog, plan)
    return Outlook(
        plan,
        measurements,
        comparison(catalog, measurements),
        found,
        tornado(catalog, SWING),
        [growth_cases(catalog, s, SWING) for s in found],
        bands,
    )
