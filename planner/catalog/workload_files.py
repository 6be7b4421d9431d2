"""The CSV files a catalog's workloads name (length samples, arrival traces, forecast factors):
each must lie inside the catalog folder and hold what is asked of it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from planner.catalog.datafiles import DataFileError, read_column, read_factors, read_trace
from planner.catalog.fields import Record
from planner.catalog.problems import Problem
from planner.catalog.reading import problem_at
from planner.catalog.workload_records import LengthDistribution, Workload
from planner.catalog.yamlsafe import Document


def workload_file_problems(
    folder: Path, parsed: dict[str, Record], docs: dict[str, Document], used: list[str]
) -> list[Problem]:
    """CSV files named by workloads must exist inside the folder and hold what is asked; each
    file read is added to ``used``."""
    problems = []
    for i, w in enumerate(parsed["workloads"].workloads):  # type: ignore[attr-defined]
        faults: list[tuple[str, str]] = []
        for field_name, check in _file_checks(folder, w, used):
            try:
                values = check()
            except DataFileError as exc:
                faults.append((field_name, str(exc)))
                continue
            faults.extend(_past_limits(w, field_name, values))
        growth = _growth_past_bound(w)
        if growth is not None:
            faults.append(("forecast.growth_per_month", growth))
        if _output_past_max(w):
            message = f"output_tokens exceed max_output_tokens ({w.max_output_tokens})"
            faults.append(("output_tokens", message))
        problems += [problem_at(folder, docs, "workloads", i, w.id, f, m) for f, m in faults]
    return problems


def _file_checks(folder: Path, w: Workload, used: list[str]) -> list[tuple[str, Any]]:
    """Each file ``w`` names: the field naming it and a reader of its values (the file's path
    is added to ``used``)."""
    checks: list[tuple[str, Any]] = []
    for key in ("prompt_tokens", "output_tokens"):
        dist = getattr(w, key)
        if isinstance(dist, LengthDistribution) and dist.file is not None:
            checks.append((f"{key}.file", lambda d=dist: read_column(folder, d.file, d.column)))
            used.append(dist.file)
    if w.arrival is not None and w.arrival.file is not None:
        checks.append(("arrival.file", lambda a=w.arrival: read_trace(folder, a.file)))
        used.append(w.arrival.file)
    forecast = w.forecast
    if forecast is not None and forecast.file is not None and forecast.column is not None:
        checks.append(("forecast.file", lambda f=forecast: read_factors(folder, f.file, f.column)))
        used.append(forecast.file)
    return checks


def _past_limits(w: Workload, field_name: str, values: Any) -> list[tuple[str, str]]:
    """(field, message) for a file's values past what its field allows: a forecast past
    :data:`MAX_TRAFFIC_FACTOR`, output lengths past ``max_output_tokens``."""
    forecast = w.forecast
    if field_name == "forecast.file" and forecast is not None:
        if values.max() > MAX_TRAFFIC_FACTOR:
            return [
                (
                    field_name,
                    f"{forecast.file} column {forecast.column!r} reaches {values.max():.4g} × "
                    f"today's traffic, past the {MAX_TRAFFIC_FACTOR:,.0f} × a forecast may reach",
                )
            ]
    if field_name == "output_tokens.file" and values.max() > w.max_output_tokens:
        message = (
            f"output lengths reach {values.max()}, above max_output_tokens ({w.max_output_tokens})"
        )
        return [("output_tokens", message)]
    return []


def _output_past_max(w: Workload) -> bool:
    """Whether the output length given inline (a count, or a summary's max) passes
    ``max_output_tokens``."""
    out = w.output_tokens
    if isinstance(out, int):
        return out > w.max_output_tokens
    return (
        isinstance(out, LengthDistribution)
        and out.max is not None
        and (out.max > w.max_output_tokens)
    )


#: Most a forecast may multiply today's traffic by, in any month: a month's factor in a table
#: may be no more (records.TrafficFactor), and growth compounded over the months no more either.
MAX_TRAFFIC_FACTOR = 1e6


def _growth_past_bound(workload: Workload) -> str | None:
    """Why a forecast's compound growth is refused: (1 + growth)^(months − 1), its last month's
    traffic as a multiple of today's, past :data:`MAX_TRAFFIC_FACTOR` (a load that grows so far
    is surely a slip, and its schedule would count nodes past any purchase); None when within."""
    forecast = workload.forecast
    if forecast is None or not forecast.growth_per_month or forecast.months is None:
        return None
    growth, last = forecast.growth_per_month, forecast.months - 1
    if growth <= 0 or last * math.log10(1 + growth) <= math.log10(MAX_TRAFFIC_FACTOR):
        return None
    exponent = last * math.log10(1 + growth)
    return (
        f"{growth:.0%} a month over {forecast.months} months multiplies today's traffic by "
        f"(1 + {growth:g})^{last} ≈ 10^{exponent:.0f} by the last month, past the "
        f"{MAX_TRAFFIC_FACTOR:,.0f} × a forecast may reach: give fewer months, a smaller growth, "
        "or the factors month by month"
    )
