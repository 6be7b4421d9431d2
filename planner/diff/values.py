"""Values in a comparison: when two are the same, their difference, and how each is written.

What a diff calls equal (numbers to a relative 1e-9, missing equals missing) and the text of a
value, a change and a delta in the units of its field.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from planner.catalog.records import quantity_fields
from planner.model.units import BASE_UNIT, GB, TB
from planner.outputs.formatting import duration, memory
from planner.plan.recommend import COST

#: Every ``kind`` of change, in the order the text and the CSV list them.
KINDS: dict[str, str] = {
    "input_added": "catalog entry (or file) added",
    "input_removed": "catalog entry (or file) removed",
    "input_changed": "a field of a catalog entry (or a file's SHA-256) changed",
    "recommendation_added": "a workload × model only the new run plans",
    "recommendation_removed": "a workload × model only the old run plans",
    "recommendation_changed": "a field of the recommended option changed",
    "newly_fits": "a candidate that did not fit now fits (fits: False → True)",
    "stops_fitting": "a candidate that fit no longer fits (fits: True → False)",
    "newly_eligible": "a candidate may now be recommended (eligible: False → True)",
    "stops_eligible": "a candidate may no longer be recommended (eligible: True → False)",
    "cost_changed": (
        "cost_usd (the cost the ranking compares: owning or renting over the period, whichever "
        "is cheaper) or devices_needed of a candidate present in both runs changed"
    ),
    "candidate_added": "a candidate only the new run evaluates",
    "candidate_removed": "a candidate only the old run evaluates",
}

#: Catalog sections compared entry by entry: Catalog attribute → singular name used in keys.
SECTIONS: dict[str, str] = {
    "hardware": "hardware",
    "models": "model",
    "precisions": "precision",
    "workloads": "workload",
    "scenarios": "scenario",
}

#: Base unit of catalog fields, by the last part of the field path (values are in base units):
#: every quantity the records parse with its unit, and the money fields.
FIELD_UNITS: dict[str, str] = {
    **{name: BASE_UNIT[kind] for name, kind in quantity_fields().items()},
    "purchase_usd": "USD",
    "node_overhead_usd": "USD",
    "cloud_usd_per_hour": "USD/h",
    "electricity_usd_per_kwh": "USD/kWh",
    "hosting_usd_per_node_month": "USD/month",
}

#: Base unit of fields under a nested block, by the first part of the path.
BLOCK_UNITS: dict[str, str] = {"compute": "FLOP/s", "targets": "s"}

#: The recommended option's fields compared between runs: the option and the cost the ranking
#: compares (:data:`planner.plan.recommend.COST`, ``cost_usd``).
WINNER_FIELDS = ("hardware", "precision", "tensor_parallel", "devices_needed", COST)

#: The recommended option's fields shown but not compared: how to get the devices (``buy`` or
#: ``rent``, :func:`planner.model.cost.acquisition`).
WINNER_SHOWN = ("acquisition",)

#: Relative tolerance below which two numbers count as equal (CSV round trips are exact; this
#: only absorbs float noise, never a real change).
REL_TOL = 1e-9


def is_missing(value: Any) -> bool:
    """Whether a value is missing: None, pandas' NA or a float NaN."""
    if value is None or value is pd.NA:
        return True
    return isinstance(value, float) and math.isnan(value)


def as_number(value: Any) -> float | None:
    """A value as a float; None for a missing value, a truth value or text that is no number."""
    if isinstance(value, bool) or is_missing(value):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def as_plain(value: Any) -> Any:
    """A numpy/pandas scalar as a Python value; missing as None."""
    if is_missing(value):
        return None
    if hasattr(value, "item") and not isinstance(value, (list, dict, str)):
        return value.item()
    return value


def same(old: Any, new: Any) -> bool:
    """Whether two values are equal: missing equals missing, numbers within :data:`REL_TOL`."""
    if is_missing(old) or is_missing(new):
        return is_missing(old) and is_missing(new)
    a, b = as_number(old), as_number(new)
    if a is not None and b is not None and not isinstance(old, str):
        return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=0.0)
    return bool(old == new)


def delta(old: Any, new: Any) -> float | None:
    """``new - old`` when both are numbers, else None."""
    a, b = as_number(old), as_number(new)
    return None if a is None or b is None or isinstance(old, str) else b - a


def _sig(value: float) -> str:
    return f"{value:,.4g}" if abs(value) < 1e15 else f"{value:.4g}"


def format_value(value: Any, unit: str = "") -> str:
    """A value for people, in the unit people read: GB with GiB, TB/s, TFLOPS, ms, USD."""
    if is_missing(value):
        return "-"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {format_value(v)}" for k, v in value.items()) + "}"
    number = as_number(value)
    if number is None or isinstance(value, str):
        return str(value)
    if unit == "B":
        return memory(number)
    if unit == "B/s":
        return f"{_sig(number / TB)} TB/s" if abs(number) >= TB else f"{_sig(number / GB)} GB/s"
    if unit == "FLOP/s":
        return f"{_sig(number / 1e12)} TFLOPS"
    if unit == "s":
        return duration(number)
    if unit == "1/s":
        return f"{_sig(number)} /s"
    if unit.startswith("USD"):
        rest = unit[3:]
        money = f"{number:,.0f}" if abs(number) >= 1000 else f"{number:,.2f}"
        return f"{money} USD{rest}"
    if unit == "devices":
        return f"{number:,.0f}"
    if float(number).is_integer() and abs(number) < 2**53:
        return f"{int(number):,}"
    return f"{number:,.6g}"


def format_delta(old: Any, new: Any, unit: str = "") -> str:
    """The signed difference, with the percentage of ``old`` where it is not zero (``-50.0%``);
    empty unless both are numbers."""
    d = delta(old, new)
    if d is None:
        return ""
    text = ("+" if d >= 0 else "") + format_value(d, unit)
    base = as_number(old)
    if not base:
        return text
    percent = d / abs(base) * 100
    share = f"{percent:+.1f}%" if abs(percent) >= 0.1 or percent == 0 else f"{percent:+.1g}%"
    return f"{text}, {share}"


def format_change(old: Any, new: Any, unit: str = "") -> str:
    """``old → new``, with the difference in brackets where both are numbers."""
    text = f"{format_value(old, unit)} → {format_value(new, unit)}"
    extra = format_delta(old, new, unit)
    return f"{text} ({extra})" if extra else text
