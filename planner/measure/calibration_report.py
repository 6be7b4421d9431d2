"""What ``planner calibrate`` writes and prints: the fits as a calibration.yaml document,
checked as ``planner check`` reads the file, and a summary for the terminal.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import yaml
from pydantic import ValidationError

from planner.catalog import CatalogError, Problem
from planner.catalog.calibration_records import CalibrationFile
from planner.catalog.validation import problems_from_validation
from planner.catalog.yamlsafe import load
from planner.measure.points import Calibration
from planner.model.units import GIB

#: Where a calibration planner calibrate refuses to write would have gone, in its problems.
NOT_WRITTEN = "calibration.yaml (not written)"


def _why_nothing(fit: Calibration) -> str:
    """Why a fit has no figure: what its points could not separate, else why none was used."""
    if fit.notes:
        return "; ".join(fit.notes)
    reasons = dict.fromkeys(f"{u.figure}: {u.reason}" for u in fit.unused)
    return "no figure a calibration fits was measured (" + "; ".join(reasons) + ")"


def check_fits(fits: list[Calibration]) -> None:
    """Raise :class:`~planner.catalog.CatalogError` unless the calibration document passes
    the records ``planner check`` reads calibration.yaml with."""
    document = calibration_document(fits)
    if not document["calibration"]:  # neither a fitted figure nor one measured to set
        raise CatalogError(
            [
                Problem(NOT_WRITTEN, f"{fit.hardware} on {fit.engine}: nothing fitted: {why}")
                for fit in fits
                for why in [_why_nothing(fit)]
            ]
        )
    try:
        CalibrationFile.model_validate(document)
    except ValidationError as exc:
        doc = load(yaml.safe_dump(document, sort_keys=False))
        problems = problems_from_validation(NOT_WRITTEN, doc, CalibrationFile, exc)
        raise CatalogError(
            [
                replace(
                    problem,
                    message=f"planner check would refuse what the fit gives: {problem.message}",
                )
                for problem in problems
            ]
        ) from None


def _quantity(value: float | None, unit: str, scale: float = 1.0, digits: int = 4) -> Any:
    return None if value is None else f"{round(float(value) / scale, digits)} {unit}".strip()


def _rounded(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(float(value), digits)


def calibration_document(fits: list[Calibration]) -> dict[str, Any]:
    """The fits as a YAML-ready document: the fitted figures in catalog units (those no point
    informs are left out; a fit with none is left out whole), every point used with its fitted
    and held-out estimates and errors, every figure not used with why, and what the points
    could not separate."""
    entries = []
    for fit in fits:
        if not fit.fitted() and not fit.measured:
            continue  # a calibration without a fitted or measured figure calibrates nothing
        figures = {
            "bandwidth_efficiency": _rounded(fit.bandwidth_efficiency),
            # to the microsecond: the plan must read each fitted point as the fit does
            "step_overhead": _quantity(fit.step_overhead_s, "ms", 1e-3, 6),
            "compute_efficiency": _rounded(fit.compute_efficiency),
            "activation_scale": _rounded(fit.activation_scale),
            "non_torch": _quantity(fit.non_torch_bytes, "GiB", GIB),
            "non_torch_tensor_parallel": _quantity(fit.non_torch_tensor_parallel_bytes, "GiB", GIB),
        }
        points = [
            {
                "measurement": p.measurement,
                "figure": p.figure,
                "measured": float(p.measured),
                "fitted": round(float(p.fitted), 12),
                "error": f"{p.error_fraction:+.1%}",
                "held_out": round(float(p.held_out), 12),
                "held_out_error": f"{p.held_out_error_fraction:+.1%}",
            }
            for p in fit.points
        ]
        entry: dict[str, Any] = {"hardware": fit.hardware, "engine": fit.engine}
        entry |= {k: v for k, v in figures.items() if v is not None}
        entry["points"] = points
        if fit.unused:
            entry["unused"] = [
                {"measurement": u.measurement, "figure": u.figure, "reason": u.reason}
                for u in fit.unused
            ]
        notes = list(fit.notes) + [m.sentence() for m in fit.measured]
        if notes:
            entry["notes"] = notes
        entries.append(entry)
    return {"calibration": entries}


def summary(fits: list[Calibration]) -> list[str]:
    """What a calibration did, in lines for a terminal: per fit, the points used and not,
    the in-sample and held-out errors, and what the points could not separate."""
    lines = []
    for fit in fits:
        used, unused = len(fit.points), len(fit.unused)
        line = f"{fit.hardware} on {fit.engine}: {used} figure(s) used, {unused} not used"
        if not fit.fitted() and not fit.measured:
            line += "; nothing fitted, so no calibration of it is written"
        inside, outside = fit.rms(held_out=False), fit.rms(held_out=True)
        if inside is not None and outside is not None:
            line += (
                f"; latency error {inside:.1%} in sample, {outside:.1%} held out "
                f"(each point predicted by a fit without it: the band uses this)"
            )
        lines.append(line + ".")
        lines.extend(f"  {m.sentence()}" for m in fit.measured)
        lines.extend(f"  not used: {u.measurement} {u.figure}: {u.reason}" for u in fit.unused)
        lines.extend(f"  note: {note}" for note in fit.notes)
    return lines
