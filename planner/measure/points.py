"""What a calibration is made of: the measured latency points a fit is given, the points it
used (with their fitted and held-out estimates), the figures it did not use, and the fit of
one hardware × engine release.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from planner.catalog import Problem
from planner.catalog.calibration_records import LATENCY_FIGURES
from planner.measure import Measurement
from planner.measure.compare import COMPARED

#: The figures of decoding (every latency figure but the times to first token): the bandwidth
#: efficiency and the step overhead are fitted to these.
DECODE_FIGURES = tuple(f for f in LATENCY_FIGURES if not f.startswith("ttft"))


@dataclass
class Point:
    """One measured figure used by a fit, with the value the fit gives it and the value a fit
    without it predicts."""

    measurement: str
    figure: str
    measured: float
    fitted: float = math.nan
    held_out: float = math.nan

    @property
    def error_fraction(self) -> float:
        return self.fitted / self.measured - 1 if self.measured else math.nan

    @property
    def held_out_error_fraction(self) -> float:
        return self.held_out / self.measured - 1 if self.measured else math.nan


@dataclass(frozen=True)
class Unused:
    """A measured figure no fit used, and why."""

    measurement: str
    figure: str
    reason: str


@dataclass(frozen=True)
class Measured:
    """A catalog figure a measurement gives directly, not by a fit: the file and entry to set
    it in, its path there, its value, the measurement and how the value was read."""

    file: str
    entry: str | None
    path: str
    value: float
    measurement: str
    how: str

    def sentence(self) -> str:
        """What to set, e.g. ``set workloads.yaml chat: prefix.measured_hit_ratio: 0.236
        (measurement x: ...)``."""
        where = self.file if self.entry is None else f"{self.file} {self.entry}"
        return (
            f"set {where}: {self.path}: {self.value:.4g} (measurement {self.measurement}: "
            f"{self.how})"
        )


@dataclass
class Calibration:
    """The fitted figures of one hardware × engine release (None where no point informs one),
    the points, the figures not used, and what the points could not separate."""

    hardware: str
    engine: str
    bandwidth_efficiency: float | None = None
    step_overhead_s: float | None = None
    compute_efficiency: float | None = None
    activation_scale: float | None = None
    non_torch_bytes: float | None = None
    non_torch_tensor_parallel_bytes: float | None = None
    points: list[Point] = field(default_factory=list)
    unused: list[Unused] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: Catalog figures the measurements give directly (a hit ratio, an acceptance rate).
    measured: list[Measured] = field(default_factory=list)
    #: Why no calibration of this hardware may be written (a point past a bound).
    refusals: list[Problem] = field(default_factory=list)

    def fitted(self) -> bool:
        """Whether any figure was fitted (a calibration without one calibrates nothing)."""
        return any(
            value is not None
            for value in (
                self.bandwidth_efficiency,
                self.step_overhead_s,
                self.compute_efficiency,
                self.activation_scale,
                self.non_torch_bytes,
                self.non_torch_tensor_parallel_bytes,
            )
        )

    def latency_points(self) -> list[Point]:
        return [p for p in self.points if p.figure in LATENCY_FIGURES]

    def rms(self, held_out: bool) -> float | None:
        """Root mean square relative error of the latency points: in-sample or held out."""
        errors = [
            p.held_out_error_fraction if held_out else p.error_fraction
            for p in self.latency_points()
        ]
        return float(np.sqrt(np.mean(np.square(errors)))) if errors else None


@dataclass(frozen=True)
class LatencyPoint:
    """A measured latency or throughput statistic and the candidate it was measured on."""

    measurement: Measurement
    figure: str
    measured: float

    @property
    def metric(self) -> str:
        return COMPARED[self.figure][0]
