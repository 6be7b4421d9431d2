"""Calibration: the figures measurements replace among the assumptions, and the error band each
estimate carries.

``planner calibrate`` fits, per hardware and engine release, the efficiencies, the step overhead
and the engine's memory overheads to what was measured (``calibration.yaml``). On calibrated
hardware the fitted figure is used; elsewhere the catalog's assumption. A latency estimate then
carries a band at 90 % confidence: on calibrated hardware the fit's held-out relative error (the
root mean square of each point's error when predicted by a fit without it, as a standard
deviation, times the one-sided 90 % quantile of the normal distribution, with a floor for what a
handful of points cannot show); elsewhere the wide band
of the uncalibrated model, an assumption stated as such. The device count at the top of the band
is the same replica arithmetic with every step that much slower.
"""

from __future__ import annotations

from functools import reduce
from operator import and_
from typing import Any

from planner.model.capacity import replicas_needed
from planner.model.expr import ceil, is_missing, is_number, maximum, where
from planner.model.metric import metric, rebound
from planner.model.sources import LEAST_SQUARES, LITTLE, NORMAL, SRE
from planner.model.targets import TARGETS, taking

#: One-sided 90 % quantile of the standard normal distribution: P(Z ≤ 1.2816) = 0.90.
Z90 = 1.2816

CALIBRATED = "calibration.yaml for this hardware, else the assumption"

#: A root-mean-square relative error no finite calibration gives [fraction]: at or past it (an
#: infinite one) the calibration says nothing of the error, and the band is the uncalibrated
#: one. Finite in the workbook too (Excel's largest number is 9.99e307).
MEANINGLESS_RMS = 1e300


def _fitted_else(fitted: Any, assumed: Any) -> Any:
    return where(is_missing(fitted), assumed, fitted)


@metric("fraction", source=CALIBRATED, group="latency")
def bandwidth_efficiency(
    calibrated_bandwidth_efficiency: Any, assumed_bandwidth_efficiency: Any
) -> Any:
    """Share of datasheet memory bandwidth a decode step achieves: fitted to this hardware's
    measurements where calibrated, else the assumption [fraction]."""
    return _fitted_else(calibrated_bandwidth_efficiency, assumed_bandwidth_efficiency)


@metric("fraction", source=CALIBRATED, group="latency")
def compute_efficiency(calibrated_compute_efficiency: Any, assumed_compute_efficiency: Any) -> Any:
    """Share of datasheet compute a prefill achieves: fitted where calibrated, else the
    assumption [fraction]."""
    return _fitted_else(calibrated_compute_efficiency, assumed_compute_efficiency)


@metric("s", source=f"{CALIBRATED}; tensor-parallel latency per interconnect", group="latency")
def step_overhead_s(
    calibrated_step_overhead_s: Any,
    assumed_step_overhead_s: Any,
    allreduce_latency_s_per_step: Any,
) -> Any:
    """Fixed time per decode or prefill step: the engine's (launches, scheduling; fitted where
    calibrated, else the assumption) plus the step's tensor-parallel all-reduce latency [s]."""
    return (
        _fitted_else(calibrated_step_overhead_s, assumed_step_overhead_s)
        + allreduce_latency_s_per_step
    )


@metric("ratio", source=CALIBRATED, group="memory")
def activation_scale(calibrated_activation_scale: Any, engine_activation_scale: Any) -> Any:
    """Scale of the engine's activation peak over its structural peak: fitted to this
    hardware's start-up logs where calibrated, else the engine release's constant [ratio]."""
    return _fitted_else(calibrated_activation_scale, engine_activation_scale)


@metric("", kind="bool", source="calibration.yaml", group="margins")
def latency_calibrated(calibrated_bandwidth_efficiency: Any) -> Any:
    """Whether this hardware's latency estimates are fitted to measurements on it (its bandwidth
    efficiency is calibrated on the plan's engine release)."""
    return is_number(calibrated_bandwidth_efficiency)


@metric("fraction", source=f"{LEAST_SQUARES}; {NORMAL}", group="margins")
def latency_band_fraction(
    latency_calibrated: Any,
    calibration_rms_fraction: Any,
    calibrated_band_floor_fraction: Any,
    uncalibrated_band_fraction: Any,
) -> Any:
    """How much slower than estimated a latency may be, at 90 % confidence [fraction].

    Calibrated: max(1.2816 × the fit's held-out root-mean-square relative error, the floor);
    the floor stands for what a handful of points cannot show (run-to-run spread, other
    lengths).
    Uncalibrated, or calibrated with an error no finite fit gives (an infinite one, from a
    measured 0, which calibration.yaml refuses): the assumed band of the uncalibrated model,
    so no estimate's band, device count or replica count is ever infinite.
    """
    rms = where(is_missing(calibration_rms_fraction), 0, calibration_rms_fraction)
    calibrated = maximum(Z90 * rms, calibrated_band_floor_fraction)
    usable = latency_calibrated & (rms < MEANINGLESS_RMS)
    return where(usable, calibrated, uncalibrated_band_fraction)


def _upper(value: Any, band: Any) -> Any:
    return value * (1 + band)


@metric("s", source=f"{LEAST_SQUARES}; {NORMAL}", group="margins")
def itl_upper_s(itl_planned_s: Any, latency_band_fraction: Any) -> Any:
    """Inter-token latency as planned at the top of its 90 % band: planned × (1 + band) [s]."""
    return _upper(itl_planned_s, latency_band_fraction)


rebound(
    "ttft_upper_s",
    itl_upper_s.__name__,
    {"itl_planned_s": "ttft_planned_s"},
    "Time to first token as planned at the top of its 90 % band [s].",
)
rebound(
    "e2e_upper_s",
    itl_upper_s.__name__,
    {"itl_planned_s": "e2e_planned_s"},
    "End-to-end latency as planned at the top of its 90 % band [s].",
)


@metric("s", source=f"{LEAST_SQUARES}; {NORMAL}", group="margins")
def task_upper_s(
    task_planned_s: Any, requests_per_task: Any, tool_time_s: Any, latency_band_fraction: Any
) -> Any:
    """Task latency as planned at the top of its 90 % band [s]: the model's share (planned less
    the tool time between calls) × (1 + band), plus the tool time, which is not the model's to
    slow down. 3 calls of 2 s with 2 × 1 s of tools (8 s) at a 30 % band: 6 × 1.3 + 2 = 9.8 s."""
    tools = maximum(requests_per_task - 1, 0) * tool_time_s
    return _upper(task_planned_s - tools, latency_band_fraction) + tools


@metric("requests", source=f"{LITTLE}: L = λ × W", group="margins")
def in_flight_upper_requests(in_flight_requests: Any, latency_band_fraction: Any) -> Any:
    """Requests in flight if every step is slower by the band: λ × W × (1 + band) [requests]."""
    return _upper(in_flight_requests, latency_band_fraction)


@metric("1/s", source="steady state of continuous batching", group="margins")
def requests_per_s_per_replica_lower(
    requests_per_s_per_replica: Any, latency_band_fraction: Any
) -> Any:
    """Requests a replica completes per second if every step is slower by the band [1/s]."""
    return requests_per_s_per_replica / (1 + latency_band_fraction)


rebound(
    "replicas_needed_upper",
    replicas_needed.__name__,
    {
        "in_flight_requests": "in_flight_upper_requests",
        "requests_per_s_per_replica": "requests_per_s_per_replica_lower",
    },
    "Replicas for the forecast if every step is slower by the latency band (the same arithmetic "
    "as replicas_needed at the top of the band).",
)


@metric("replicas", source=f"{LITTLE}; {NORMAL}", group="margins")
def replicas_upper(replicas_planned: Any, replicas_needed_upper: Any) -> Any:
    """Replicas to provision at 90 % confidence: the planned count, raised to what the top of
    the latency band needs (closed loop: the users' number bounds the load, so it stays the
    planned count; the band shows in the latencies instead) [replicas]."""
    return where(
        is_missing(replicas_planned),
        float("nan"),
        maximum(replicas_planned, ceil(replicas_needed_upper)),
    )


@metric("devices", source=f"{LITTLE}; {NORMAL}", group="margins")
def devices_upper(
    replicas_upper: Any, tensor_parallel: Any, prefill_pool_device_offset: Any = 0
) -> Any:
    """Devices to buy or rent at 90 % confidence: replicas at the top of the band × devices per
    replica, a prefill pool of its own replica size counted at it, as planned [devices]."""
    return replicas_upper * tensor_parallel + prefill_pool_device_offset


def _within(value: Any, target: Any) -> Any:
    return where(is_missing(target), True, value <= target)


@metric("", kind="bool", source=f"{SRE}; {NORMAL}", group="margins")
@taking("meets_targets_planned", *(n for t in TARGETS for n in (t.upper, t.column)))
def meets_targets_upper(meets_targets_planned: Any, *upper_and_target: Any) -> Any:
    """Whether the targets are still met at the top of the latency band: as planned, and with
    time to first token, inter-token, end-to-end and task latency each at the top of its band
    (the task's tool time excepted)."""
    pairs = zip(upper_and_target[::2], upper_and_target[1::2], strict=True)
    return reduce(and_, (_within(upper, target) for upper, target in pairs), meets_targets_planned)
