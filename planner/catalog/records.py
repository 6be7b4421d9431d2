"""The catalogs' records: what each entry of hardware, models, precisions, workloads, assumptions
and scenarios may hold, validated by pydantic, every quantity parsed from text with its unit into
base units (a bare number for a quantity is refused).

This module names every catalog file and the record that validates it (:data:`SCHEMAS`); the
records themselves live by subject, and each is importable from here:
:mod:`~planner.catalog.fields` (quantities, counts, ids, the base records),
:mod:`~planner.catalog.components` (hardware, models, precisions),
:mod:`~planner.catalog.workload_records` (workloads),
:mod:`~planner.catalog.plan_records` (assumptions, the engine, scenarios, API offers, deployment)
and :mod:`~planner.catalog.calibration_records` (calibration).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

import planner.catalog.calibration_records as calibration_records
import planner.catalog.components as components
import planner.catalog.fields as fields
import planner.catalog.plan_records as plan_records
import planner.catalog.workload_records as workload_records
from planner.catalog.calibration_records import (
    LATENCY_FIGURES,
    Calibration,
    CalibrationFile,
    CalibrationPoint,
    FittedEfficiency,
    UnusedPoint,
)
from planner.catalog.components import (
    Hardware,
    MLABlock,
    Model,
    MoEBlock,
    Precision,
    Price,
    SlidingWindowBlock,
)
from planner.catalog.fields import (
    ID_PATTERN,
    MAX_COUNT,
    MAX_SAMPLES,
    RESERVED_IDS,
    Bandwidth,
    Bytes,
    BytesOrZero,
    Compute,
    Count,
    CountOrZero,
    Entry,
    Fraction,
    Id,
    Money,
    OptionalBandwidth,
    OptionalBytes,
    OptionalPower,
    OptionalRate,
    OptionalSeconds,
    Positive,
    Quantity,
    Record,
    Seconds,
    Text,
    Uncertain,
)
from planner.catalog.plan_records import (
    MAX_SIMULATION_STEPS,
    MEMORY_FRACTION_FIELDS,
    ApiOffer,
    Assumptions,
    Deployment,
    Engine,
    Scenario,
    Serve,
)
from planner.catalog.workload_records import (
    Arrival,
    Forecast,
    LengthDistribution,
    Lengths,
    Targets,
    TrafficFactor,
    Workload,
)

CATALOG_FILES = ("hardware", "models", "precisions", "workloads", "assumptions")

OPTIONAL_FILES = ("scenarios", "api_offers", "deployment", "calibration")


class HardwareFile(Record):
    hardware: list[Hardware] = Field(min_length=1)


class ModelsFile(Record):
    models: list[Model] = Field(min_length=1)


class PrecisionsFile(Record):
    precisions: list[Precision] = Field(min_length=1)


class WorkloadsFile(Record):
    workloads: list[Workload] = Field(min_length=1)


class AssumptionsFile(Record):
    assumptions: Assumptions


class ScenariosFile(Record):
    scenarios: list[Scenario] = Field(min_length=1)


class DeploymentFile(Record):
    deployment: Deployment


class ApiOffersFile(Record):
    api_offers: list[ApiOffer] = Field(min_length=1)


SCHEMAS: dict[str, type[Record]] = {
    "hardware": HardwareFile,
    "models": ModelsFile,
    "precisions": PrecisionsFile,
    "workloads": WorkloadsFile,
    "assumptions": AssumptionsFile,
    "scenarios": ScenariosFile,
    "api_offers": ApiOffersFile,
    "deployment": DeploymentFile,
    "calibration": CalibrationFile,
}


def quantity_fields() -> dict[str, str]:
    """Every field of the catalogs' records that holds a quantity with a unit: its name → its
    kind (``time``, ``bytes``...), read off the field types themselves."""
    found: dict[str, str] = {}
    modules = (fields, components, workload_records, plan_records, calibration_records)
    namespaces = [*(vars(module) for module in modules), globals()]
    found_in = [v for ns in namespaces for v in ns.values()]
    records = [v for v in found_in if isinstance(v, type) and issubclass(v, BaseModel)]
    for record in records:
        for name, info in record.model_fields.items():
            for meta in info.metadata:
                parser = getattr(meta, "func", None)
                if isinstance(parser, Quantity):
                    found[name] = parser.kind
    return found


#: The records of every catalog file, and the types their fields are made of.
__all__ = [
    "CATALOG_FILES",
    "ID_PATTERN",
    "LATENCY_FIGURES",
    "MAX_COUNT",
    "MAX_SAMPLES",
    "MAX_SIMULATION_STEPS",
    "MEMORY_FRACTION_FIELDS",
    "OPTIONAL_FILES",
    "RESERVED_IDS",
    "SCHEMAS",
    "ApiOffer",
    "ApiOffersFile",
    "Arrival",
    "Assumptions",
    "AssumptionsFile",
    "Bandwidth",
    "Bytes",
    "BytesOrZero",
    "Calibration",
    "CalibrationFile",
    "CalibrationPoint",
    "Compute",
    "Count",
    "CountOrZero",
    "Deployment",
    "DeploymentFile",
    "Engine",
    "Entry",
    "FittedEfficiency",
    "Forecast",
    "Fraction",
    "Hardware",
    "HardwareFile",
    "Id",
    "LengthDistribution",
    "Lengths",
    "MLABlock",
    "Model",
    "ModelsFile",
    "MoEBlock",
    "Money",
    "OptionalBandwidth",
    "OptionalBytes",
    "OptionalPower",
    "OptionalRate",
    "OptionalSeconds",
    "Positive",
    "Precision",
    "PrecisionsFile",
    "Price",
    "Record",
    "Scenario",
    "ScenariosFile",
    "Seconds",
    "Serve",
    "SlidingWindowBlock",
    "Targets",
    "Text",
    "TrafficFactor",
    "Uncertain",
    "UnusedPoint",
    "Workload",
    "WorkloadsFile",
    "quantity_fields",
]
