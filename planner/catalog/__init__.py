"""Catalogs: the YAML files that describe hardware, models, precisions, workloads and assumptions.

Loading turns untrusted files into typed, validated records at the edge. Every problem names the
file, the entry (its ``id``, or its position when it has none), the field and the line, and says
what was expected and what arrived; all problems are collected and reported together.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from planner.catalog.catalog_warnings import DEFAULT_ENGINE_SERIES, warnings_of
from planner.catalog.engines import engine_series
from planner.catalog.problems import CatalogError, Problem, UnknownEntry
from planner.catalog.reading import display_path, duplicate_ids, read_document
from planner.catalog.records import (
    CATALOG_FILES,
    ID_PATTERN,
    OPTIONAL_FILES,
    SCHEMAS,
    ApiOffer,
    ApiOffersFile,
    Arrival,
    Assumptions,
    AssumptionsFile,
    Bandwidth,
    Bytes,
    BytesOrZero,
    Calibration,
    Compute,
    Count,
    CountOrZero,
    Deployment,
    DeploymentFile,
    Engine,
    Entry,
    Fraction,
    Hardware,
    HardwareFile,
    Id,
    LengthDistribution,
    Lengths,
    MLABlock,
    Model,
    ModelsFile,
    MoEBlock,
    Money,
    OptionalBandwidth,
    OptionalBytes,
    OptionalPower,
    OptionalRate,
    OptionalSeconds,
    Positive,
    Precision,
    PrecisionsFile,
    Price,
    Record,
    Scenario,
    ScenariosFile,
    Seconds,
    Serve,
    SlidingWindowBlock,
    Targets,
    Text,
    Workload,
    WorkloadsFile,
)
from planner.catalog.references import dangling_references
from planner.catalog.validation import problems_from_validation, validation_message
from planner.catalog.workload_files import workload_file_problems
from planner.catalog.yamlsafe import Document


@dataclass(frozen=True)
class Catalog:
    """A validated catalog folder."""

    folder: Path
    hardware: tuple[Hardware, ...]
    models: tuple[Model, ...]
    precisions: tuple[Precision, ...]
    workloads: tuple[Workload, ...]
    assumptions: Assumptions
    scenarios: tuple[Scenario, ...] = ()
    api_offers: tuple[ApiOffer, ...] = ()
    deployment: tuple[Serve, ...] = ()
    calibration: tuple[Calibration, ...] = ()
    prepared_by: str | None = None
    files: dict[str, str] = field(default_factory=dict)  # file name -> SHA-256
    data_files: tuple[str, ...] = ()  # CSVs the workloads name, relative to the folder
    warnings: tuple[Problem, ...] = ()

    def engine_series(self) -> str:
        """The engine release series the plan is for, as calibrations name it (``vllm 0.11``);
        vLLM's newest series with constants when the assumptions name no engine."""
        return engine_series(self.assumptions.engine)

    def calibrated(self) -> dict[str, Calibration]:
        """The calibration that applies to each calibrated hardware: the one fitted on the
        plan's engine release series (a fit on another release does not carry over)."""
        series = self.engine_series()
        return {c.hardware: c for c in self.calibration if c.engine == series}

    def get(self, kind: str, entry_id: str) -> Any:
        for entry in getattr(self, kind):
            if entry.id == entry_id:
                return entry
        valid = ", ".join(e.id for e in getattr(self, kind))
        raise UnknownEntry(f"no {kind} entry {entry_id!r}; valid: {valid}")


def load_catalog(folder: str | Path) -> Catalog:
    """Load and validate every catalog file in ``folder``.

    Raises :class:`CatalogError` listing every problem found in every file.
    """
    folder = Path(folder)
    problems: list[Problem] = []
    if not folder.is_dir():
        raise CatalogError([Problem(str(folder), "is not a catalog folder")])
    parsed: dict[str, Record] = {}
    docs: dict[str, Document] = {}
    files: dict[str, str] = {}
    for stem in CATALOG_FILES + OPTIONAL_FILES:
        path = folder / f"{stem}.yaml"
        display = display_path(folder, stem)
        if not path.exists():
            if stem in CATALOG_FILES:
                problems.append(Problem(display, "the file is missing"))
            continue
        doc, digest, file_problems = read_document(path, display)
        if digest:
            files[path.name] = digest
        problems.extend(file_problems)
        if doc is None:
            continue
        if not isinstance(doc.data, dict):
            problems.append(
                Problem(display, f"expected a mapping with the key '{stem}'", line=doc.line_of(()))
            )
            continue
        docs[stem] = doc
        schema = SCHEMAS[stem]
        if stem in doc.data and isinstance(doc.data[stem], list):
            problems.extend(duplicate_ids(display, doc, stem))
        try:
            parsed[stem] = schema.model_validate(doc.data)
        except ValidationError as exc:
            problems.extend(problems_from_validation(display, doc, schema, exc))
    if not problems:
        problems.extend(dangling_references(folder, parsed, docs))
    data_files: list[str] = []
    if not problems:
        problems.extend(workload_file_problems(folder, parsed, docs, data_files))
    if problems:
        raise CatalogError(problems)
    scenarios = getattr(parsed.get("scenarios"), "scenarios", [])
    offers = getattr(parsed.get("api_offers"), "api_offers", [])
    plan = getattr(parsed.get("deployment"), "deployment", Deployment())
    calibration = getattr(parsed.get("calibration"), "calibration", [])
    return Catalog(
        folder=folder,
        hardware=tuple(parsed["hardware"].hardware),  # type: ignore[attr-defined]
        models=tuple(parsed["models"].models),  # type: ignore[attr-defined]
        precisions=tuple(parsed["precisions"].precisions),  # type: ignore[attr-defined]
        workloads=tuple(parsed["workloads"].workloads),  # type: ignore[attr-defined]
        assumptions=parsed["assumptions"].assumptions,  # type: ignore[attr-defined]
        scenarios=tuple(scenarios),
        api_offers=tuple(offers),
        deployment=tuple(plan.serve),
        calibration=tuple(calibration),
        prepared_by=plan.prepared_by,
        files=files,
        data_files=tuple(dict.fromkeys(data_files)),
        warnings=tuple(warnings_of(folder, parsed, docs)),
    )


#: The catalog package's public names: the records, the problems and the loaded catalog.
__all__ = [
    "ApiOffer",
    "ApiOffersFile",
    "Deployment",
    "Engine",
    "DeploymentFile",
    "Arrival",
    "Assumptions",
    "AssumptionsFile",
    "Bandwidth",
    "Bytes",
    "BytesOrZero",
    "CATALOG_FILES",
    "DEFAULT_ENGINE_SERIES",
    "Catalog",
    "CatalogError",
    "Compute",
    "Count",
    "CountOrZero",
    "Entry",
    "Fraction",
    "Hardware",
    "HardwareFile",
    "ID_PATTERN",
    "Id",
    "LengthDistribution",
    "Lengths",
    "MLABlock",
    "MoEBlock",
    "Model",
    "ModelsFile",
    "Money",
    "OPTIONAL_FILES",
    "OptionalBandwidth",
    "OptionalBytes",
    "OptionalPower",
    "OptionalRate",
    "OptionalSeconds",
    "Positive",
    "Precision",
    "PrecisionsFile",
    "Price",
    "Problem",
    "Record",
    "SCHEMAS",
    "Scenario",
    "ScenariosFile",
    "Serve",
    "Seconds",
    "SlidingWindowBlock",
    "Targets",
    "Text",
    "UnknownEntry",
    "Workload",
    "WorkloadsFile",
    "load_catalog",
    "validation_message",
]
