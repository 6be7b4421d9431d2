"""The records of calibration.yaml: the figures fitted to measurements of one hardware × engine
release series, with the points they were fitted to and those they were not.
"""

from __future__ import annotations

import re
from typing import Annotated, ClassVar

from pydantic import AfterValidator, Field, model_validator

from planner.catalog.fields import (
    Fraction,
    Id,
    OptionalBytes,
    OptionalSeconds,
    Positive,
    Record,
    Text,
)

#: The figures of a calibration point that are latencies (the error band is fitted to these).
#: The measured latency and throughput statistics a calibration fits, each against the plan's
#: metric of the same definition (planner.measure.compare.COMPARED).
LATENCY_FIGURES = (
    "itl_s.p50",
    "itl_s.mean",
    "tpot_s.mean",
    "tpot_s.p50",
    "ttft_s.p50",
    "ttft_s.mean",
    "e2e_s.p50",
    "e2e_s.mean",
    "output_throughput",
    "output_throughput.mean",
    "request_throughput",
    "request_throughput.mean",
)

#: An efficiency as fitted: within the bounds a hand-written one has, (0, 1]. A fit past 1
#: says the device moved more bytes (or FLOP) than its datasheet allows, so the measurement or
#: the model's count of bytes is wrong: ``planner calibrate`` refuses it rather than write it.
FittedEfficiency = Fraction


def _engine_series(value: str) -> str:
    if not re.fullmatch(r"[a-z0-9_-]+ [0-9]+\.[0-9]+", value):
        raise ValueError(
            f"expected an engine and its release series, e.g. 'vllm 0.10' (as planner "
            f"calibrate writes it); got {value!r}"
        )
    return value


_Figure = Annotated[str, Field(strict=True, pattern=r"^[a-z0-9_.]+$", max_length=100)]


def _relative_error(estimate: float, measured: float) -> float:
    """estimate ÷ measured − 1 (0 for a measured 0 that is estimated exactly)."""
    if measured == 0:
        return 0.0 if estimate == 0 else float("inf")
    return estimate / measured - 1


class CalibrationPoint(Record):
    """A measured figure a fit used, with the value the fit gives it and the value a fit
    without it predicts (its held-out estimate)."""

    measurement: Id
    figure: _Figure
    # every figure compared is a time, a rate or a size: a measured 0 or less is not a measurement
    measured: Annotated[float, Field(strict=True, gt=0, allow_inf_nan=False)]
    fitted: Annotated[float, Field(strict=True, ge=0, allow_inf_nan=False)]
    held_out: Annotated[float, Field(strict=True, allow_inf_nan=False)] | None = None
    # as ``planner calibrate`` prints them; recomputed, never read
    error: Text | None = None
    held_out_error: Text | None = None

    @property
    def error_fraction(self) -> float:
        """fitted ÷ measured − 1 (0 for a measured 0 that is fitted exactly)."""
        return _relative_error(self.fitted, self.measured)

    @property
    def held_out_error_fraction(self) -> float | None:
        """held-out estimate ÷ measured − 1; None where the file gives no held-out estimate."""
        return None if self.held_out is None else _relative_error(self.held_out, self.measured)


class UnusedPoint(Record):
    """A measured figure a fit did not use, and why."""

    measurement: Id
    figure: _Figure
    reason: Text


class Calibration(Record):
    """The figures fitted to measurements of one hardware × engine release series, as
    ``planner calibrate`` writes them, with the points they were fitted to, those they were
    not, and what the points could not tell apart."""

    hardware: Id
    engine: Annotated[str, Field(strict=True, max_length=100), AfterValidator(_engine_series)]
    bandwidth_efficiency: FittedEfficiency | None = None
    step_overhead: OptionalSeconds = None
    compute_efficiency: FittedEfficiency | None = None
    activation_scale: Positive | None = None
    non_torch: OptionalBytes = None
    non_torch_tensor_parallel: OptionalBytes = None
    points: list[CalibrationPoint] = Field(default=[], max_length=10_000)
    unused: list[UnusedPoint] = Field(default=[], max_length=10_000)
    notes: list[Text] = Field(default=[], max_length=100)

    FITTED: ClassVar[tuple[str, ...]] = (
        "bandwidth_efficiency",
        "step_overhead",
        "compute_efficiency",
        "activation_scale",
        "non_torch",
        "non_torch_tensor_parallel",
    )

    @model_validator(mode="after")
    def _fitted_to_points(self) -> Calibration:
        """A calibrated figure is one fitted to measured points: figures without the points
        they were fitted to are assumptions, and belong in assumptions.yaml, where the report
        shows them as assumed."""
        fitted = [name for name in self.FITTED if getattr(self, name) is not None]
        if fitted and not self.points:
            raise ValueError(
                f"gives {', '.join(fitted)} but no measured points they were fitted to; "
                f"planner calibrate writes both, and a figure set by hand belongs in "
                f"assumptions.yaml, where the report shows it as assumed, not calibrated"
            )
        return self

    def latency_points(self) -> list[CalibrationPoint]:
        return [p for p in self.points if p.figure in LATENCY_FIGURES]

    def held_out(self) -> bool:
        """Whether every latency point carries its held-out estimate (the band then comes from
        those; a calibration written before held-out estimates has only in-sample errors)."""
        points = self.latency_points()
        return bool(points) and all(p.held_out is not None for p in points)

    def latency_rms_fraction(self) -> float | None:
        """Root mean square of the latency points' relative errors, held out where every point
        has its held-out estimate, else in-sample (None without a latency point)."""
        points = self.latency_points()
        if not points:
            return None
        held_out = self.held_out()
        errors = [p.held_out_error_fraction if held_out else p.error_fraction for p in points]
        return float(sum(e * e for e in errors if e is not None) / len(errors)) ** 0.5


class CalibrationFile(Record):
    calibration: list[Calibration] = Field(min_length=1, max_length=10_000)
