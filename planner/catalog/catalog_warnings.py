"""What a valid catalog loads with but its reader should hear: a price of zero, a published
parameter count far from its architecture's, an engine release planner has no constants for,
and a calibration fitted on another engine release than the plan's.
"""

from __future__ import annotations

from pathlib import Path

from planner.catalog.engines import known_series, series_of, series_warning
from planner.catalog.fields import Record
from planner.catalog.problems import Problem
from planner.catalog.reading import display_path, problem_at
from planner.catalog.references import calibrations
from planner.catalog.yamlsafe import Document

#: Why a price of zero is worth a warning: it is accepted, and it decides the plan.
FREE = (
    "a price of 0 makes it free, so it wins every comparison of cost it enters; give the "
    "price paid, or leave the field out where it is not known"
)


def _free_warnings(
    folder: Path, parsed: dict[str, Record], docs: dict[str, Document]
) -> list[Problem]:
    """Prices given as zero: a device, a rental, a hosted API or electricity that costs
    nothing is accepted (a gift is possible) but changes the answer, so it is said."""
    warnings = []
    for i, device in enumerate(parsed["hardware"].hardware):  # type: ignore[attr-defined]
        for name in ("purchase_usd", "cloud_usd_per_hour"):
            if device.price is not None and getattr(device.price, name) == 0:
                warnings.append(
                    problem_at(folder, docs, "hardware", i, device.id, f"price.{name}", FREE)
                )
    if "api_offers" in parsed:
        for i, offer in enumerate(parsed["api_offers"].api_offers):  # type: ignore[attr-defined]
            for name in ("input_usd_per_million_tokens", "output_usd_per_million_tokens"):
                if getattr(offer, name) == 0:
                    warnings.append(problem_at(folder, docs, "api_offers", i, offer.id, name, FREE))
    assumptions = parsed["assumptions"].assumptions  # type: ignore[attr-defined]
    if assumptions.electricity_usd_per_kwh == 0:
        warnings.append(
            Problem(
                display_path(folder, "assumptions"),
                FREE,
                line=docs["assumptions"].line_of(("assumptions", "electricity_usd_per_kwh")),
                entry="assumptions",
                field="electricity_usd_per_kwh",
            )
        )
    return warnings


#: Largest relative difference tolerated between a published and a derived parameter count.
PARAMETER_TOLERANCE = 0.01


def _parameter_warnings(
    folder: Path, parsed: dict[str, Record], docs: dict[str, Document]
) -> list[Problem]:
    """A published ``parameters`` that differs by more than 1 % from the architecture's count
    plus ``encoder_parameters``."""
    warnings = []
    for i, model in enumerate(parsed["models"].models):  # type: ignore[attr-defined]
        derived = model.derived_parameters()
        if model.parameters is None or derived is None:
            continue
        total = derived.total + model.encoder_parameters
        gap = (total - model.parameters) / model.parameters
        if abs(gap) > PARAMETER_TOLERANCE:
            encoder = (
                f" (decoder {derived.total:,} + encoder {model.encoder_parameters:,})"
                if model.encoder_parameters
                else ""
            )
            message = (
                f"the architecture gives {total:,} parameters{encoder}, {gap:+.1%} from the "
                f"published {model.parameters:,}; the published total is used"
            )
            warnings.append(problem_at(folder, docs, "models", i, model.id, "parameters", message))
    return warnings


def _engine_warnings(
    folder: Path, parsed: dict[str, Record], docs: dict[str, Document]
) -> list[Problem]:
    """An engine profile whose release series planner has no constants for: it is planned with
    the nearest known series, which the warning names."""
    engine = parsed["assumptions"].assumptions.engine  # type: ignore[attr-defined]
    message = None if engine is None else series_warning(engine)
    if message is None:
        return []
    return [
        Problem(
            display_path(folder, "assumptions"),
            message,
            line=docs["assumptions"].line_of(("assumptions", "engine", "version")),
            entry="assumptions",
            field="engine.version",
        )
    ]


#: The engine series of a plan whose assumptions name no engine (vLLM's newest with constants).
DEFAULT_ENGINE_SERIES = f"vllm {known_series('vllm')[-1]}"


def _calibration_warnings(
    folder: Path, parsed: dict[str, Record], docs: dict[str, Document]
) -> list[Problem]:
    """A calibration fitted on another engine release than the plan's: it is not applied."""
    engine = parsed["assumptions"].assumptions.engine  # type: ignore[attr-defined]
    series = (
        DEFAULT_ENGINE_SERIES if engine is None else f"{engine.name} {series_of(engine.version)}"
    )
    return [
        Problem(
            display_path(folder, "calibration"),
            f"fitted on {fit.engine}, not on the plan's {series}: not applied, so "
            f"{fit.hardware} stays uncalibrated",
            line=docs["calibration"].line_of(("calibration", i, "engine")),
            entry=f"calibration[{i}]",
            field="engine",
        )
        for i, fit in enumerate(calibrations(parsed))
        if fit.engine != series
    ]


def warnings_of(
    folder: Path, parsed: dict[str, Record], docs: dict[str, Document]
) -> list[Problem]:
    """Every warning of a valid catalog: parameter counts, the engine release, calibrations on
    another release, then prices of zero."""
    return (
        _parameter_warnings(folder, parsed, docs)
        + _engine_warnings(folder, parsed, docs)
        + _calibration_warnings(folder, parsed, docs)
        + _free_warnings(folder, parsed, docs)
    )
