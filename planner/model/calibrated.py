"""The figures ``calibration.yaml`` fits to measurements, once: each one's field in the
calibration record, its column on the Hardware sheet (in the unit people read) and its column
in the plan (in base units). Every list of calibrated figures elsewhere derives from
:data:`CALIBRATED_FIGURES`.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.model.units import GIB


@dataclass(frozen=True)
class CalibratedFigure:
    """One figure a calibration fits; the sheet shows ``value ÷ scale`` [``sheet_unit``], the
    plan reads ``sheet × scale`` [``unit``]."""

    field: str
    """The calibration record's field (``step_overhead``), in base units."""
    sheet: str
    """The Hardware sheet's column (``calibrated_step_overhead_ms``)."""
    sheet_unit: str
    plan: str
    """The plan's column (``calibrated_step_overhead_s``)."""
    unit: str
    scale: float
    description: str
    """What the plan's column holds, in words."""


#: Every fitted figure, in the order of the Hardware sheet's columns.
CALIBRATED_FIGURES = (
    CalibratedFigure(
        "bandwidth_efficiency",
        "calibrated_bandwidth_efficiency",
        "fraction",
        "calibrated_bandwidth_efficiency",
        "fraction",
        1,
        "bandwidth efficiency fitted to measurements",
    ),
    CalibratedFigure(
        "compute_efficiency",
        "calibrated_compute_efficiency",
        "fraction",
        "calibrated_compute_efficiency",
        "fraction",
        1,
        "compute efficiency fitted to measurements",
    ),
    CalibratedFigure(
        "step_overhead",
        "calibrated_step_overhead_ms",
        "ms",
        "calibrated_step_overhead_s",
        "s",
        1e-3,
        "step overhead fitted to measurements",
    ),
    CalibratedFigure(
        "activation_scale",
        "calibrated_activation_scale",
        "ratio",
        "calibrated_activation_scale",
        "ratio",
        1,
        "the engine's activation scale fitted to measurements",
    ),
    CalibratedFigure(
        "non_torch",
        "calibrated_non_torch_gib",
        "GiB",
        "calibrated_non_torch_bytes",
        "B",
        GIB,
        "memory outside PyTorch, one device per replica, measured",
    ),
    CalibratedFigure(
        "non_torch_tensor_parallel",
        "calibrated_non_torch_tp_gib",
        "GiB",
        "calibrated_non_torch_tp_bytes",
        "B",
        GIB,
        "memory outside PyTorch under tensor parallelism, measured",
    ),
)
