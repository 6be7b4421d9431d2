"""Calibration: the efficiencies and overheads that make the estimates meet the measurements.

Per hardware × engine release, by least squares on the measured points:

* **Decode.** A memory-bound decode step is ``read bytes ÷ (bandwidth × efficiency) +
  all-reduce + step overhead``: with ``M`` the step's memory time at full efficiency, each
  measured inter-token latency ``y`` gives ``y − all-reduce = M ÷ efficiency + overhead``, a
  line in ``M``. Two or more batch sizes fit both; a single point fits the efficiency with the
  catalog's overhead, unless that makes the step read at less than
  :data:`LEAST_BANDWIDTH_EFFICIENCY` of the datasheet: such a step is not bound by bandwidth
  but by fixed costs (kernel launches, small kernels of a deep mixture of experts), so the
  efficiency is held there and the overhead fitted.
* **Prefill.** At one request in flight a compute-bound prompt takes ``FLOP ÷ (peak ×
  efficiency) + all-reduce + overhead`` after preprocessing: each median time to first token
  gives one estimate of the compute efficiency (the fitted decode overhead is used); their
  least-squares value is the one that minimises the squared time errors. A prompt whose
  arithmetic at the assumed efficiency is shorter than its weight read is bound by the read,
  and says nothing of the compute efficiency: it is left out.
* **Memory.** The engine's activation peak is its structural peak × a scale (a line through
  the origin); memory outside PyTorch is the mean measured, apart for tensor parallelism.

Every point used is kept with the fitted estimate and its error, so a reader sees how good the
fit is and where it fails.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from planner.catalog import Catalog
from planner.catalog.engines import series_of
from planner.measure import Measurement
from planner.measure.compare import _engine, estimate_row, measured_figures
from planner.model.engine import activation_peak_bytes

#: The least share of datasheet bandwidth a fitted decode step is said to sustain. Memory-bound
#: decode kernels reach 60–90 % of HBM bandwidth; a single point that asks for less is a step
#: dominated by fixed costs, which only the overhead can carry (fitting the efficiency instead
#: would slow every weight read with it, prefill included).
LEAST_BANDWIDTH_EFFICIENCY = 0.5

#: The activation peak's inputs other than the release's two constants.
ACTIVATION_INPUTS = (
    "max_num_batched_tokens",
    "activation_bytes",
    "mlp_width",
    "hidden_size",
    "tensor_parallel",
    "vocab_size",
    "max_batch_sequences",
)


@dataclass
class Point:
    """One measured figure used by a fit, with the value the fit gives it."""

    measurement: str
    figure: str
    measured: float
    fitted: float = math.nan

    @property
    def error_fraction(self) -> float:
        return self.fitted / self.measured - 1 if self.measured else math.nan


@dataclass
class Calibration:
    """The fitted figures of one hardware × engine release (None where no point informs one)."""

    hardware: str
    engine: str
    bandwidth_efficiency: float | None = None
    step_overhead_s: float | None = None
    compute_efficiency: float | None = None
    activation_scale: float | None = None
    non_torch_bytes: float | None = None
    non_torch_tensor_parallel_bytes: float | None = None
    points: list[Point] = field(default_factory=list)


def _ideal(catalog: Catalog) -> Catalog:
    """The catalog at full efficiency, no step overhead and no earlier calibration: times are
    then pure bytes ÷ bandwidth and FLOP ÷ peak, the regressors of the fit."""
    assumptions = catalog.assumptions.model_copy(
        update={"bandwidth_efficiency": 1.0, "compute_efficiency": 1.0, "step_overhead": 0.0}
    )
    return replace(catalog, assumptions=assumptions, calibration=())


def _line(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Least-squares slope and intercept of y on x."""
    design = np.column_stack([x, np.ones_like(x)])
    (slope, intercept), *_ = np.linalg.lstsq(design, y, rcond=None)
    return float(slope), float(intercept)


Row = tuple[Measurement, Any, float]


def _decode(rows: list[Row], default_overhead: float, fit: Calibration) -> None:
    memory = np.array([e["load_decode_memory_s"] for _, e, _ in rows])
    bound = np.array(
        [max(e["load_decode_memory_s"], e["load_decode_compute_s"]) for _, e, _ in rows]
    )
    allreduce = np.array([e["itl_load_s"] for _, e, _ in rows]) - bound
    y = np.array([measured for _, _, measured in rows]) - allreduce
    if len(np.unique(np.round(memory, 12))) >= 2:
        slope, overhead = _line(memory, y)
        if overhead < 0:  # no step takes less than its reads: the line through the origin
            overhead = 0.0
            slope = float(np.sum(memory * y) / np.sum(memory * memory))
    else:
        overhead = default_overhead
        slope = float(np.sum(memory * (y - overhead)) / np.sum(memory * memory))
        if slope > 1 / LEAST_BANDWIDTH_EFFICIENCY:  # too slow for bandwidth: fixed costs
            slope = 1 / LEAST_BANDWIDTH_EFFICIENCY
            overhead = max(float(np.mean(y - memory * slope)), 0.0)
    fit.bandwidth_efficiency = 1 / slope
    fit.step_overhead_s = overhead
    for (measurement, _, measured), m, a in zip(rows, memory, allreduce, strict=True):
        fitted = float(m * slope + overhead + a)
        fit.points.append(Point(measurement.entry.id, "itl_s.p50", measured, fitted))


def _compute_bound(
    rows: list[Row], bandwidth_efficiency: float, compute_efficiency: float
) -> list[Row]:
    """The prefills whose arithmetic, at the assumed compute efficiency and with the weight
    multiplications' padding, outlasts their weight read at the fitted bandwidth: only those
    say anything of the compute efficiency (a prompt bound by reading the weights would put the
    read's excess into the arithmetic)."""
    return [
        row
        for row in rows
        if row[1]["prefill_flops"] / row[1]["achieved_compute_flops_per_s"] / compute_efficiency
        + row[1]["matmul_padding_s"]
        >= row[1]["weight_read_s"] / bandwidth_efficiency
    ]


def _prefill(rows: list[Row], overhead: float, fit: Calibration) -> None:
    """ttft = preprocess + compute ÷ efficiency + all-reduce + overhead, one request alone."""
    compute = np.array([e["prefill_flops"] / e["achieved_compute_flops_per_s"] for _, e, _ in rows])
    rest = np.array([e["ttft_s"] for _, e, _ in rows]) - compute
    y = np.array([measured for _, _, measured in rows]) - rest - overhead
    inverse = float(np.sum(compute * y) / np.sum(compute * compute))
    fit.compute_efficiency = 1 / inverse
    for (measurement, _, measured), c, r in zip(rows, compute, rest, strict=True):
        fitted = float(c * inverse + r + overhead)
        fit.points.append(Point(measurement.entry.id, "ttft_s.p50", measured, fitted))


def _structural_activation(estimates: Any) -> tuple[float, float]:
    """(forward pass at scale 1, sampler term) of a row's activation peak [B]."""
    forward = activation_peak_bytes(
        *(estimates[name] for name in ACTIVATION_INPUTS), activation_scale=1.0,
        sampler_bytes_per_logit=0.0,
    )  # fmt: skip
    sampler = estimates["activation_peak_bytes"] - forward * estimates["activation_scale"]
    return float(forward), float(sampler)


def _memory(rows: list[tuple[Measurement, Any, dict[str, float]]], fit: Calibration) -> None:
    used = [(m, e, f) for m, e, f in rows if "activation_peak_bytes" in f]
    if used:
        parts = np.array([_structural_activation(e) for _, e, _ in used])
        measured = np.array([f["activation_peak_bytes"] for _, _, f in used])
        forward, sampler = parts[:, 0], parts[:, 1]
        scale = float(np.sum(forward * (measured - sampler)) / np.sum(forward * forward))
        fit.activation_scale = scale
        for (m, _, _), value, x, z in zip(used, measured, forward, sampler, strict=True):
            point = Point(m.entry.id, "activation_peak_bytes", float(value), float(x * scale + z))
            fit.points.append(point)
    for parallel in (False, True):
        chosen = [
            (m, f["non_torch_bytes"])
            for m, _, f in rows
            if "non_torch_bytes" in f and (m.entry.tensor_parallel > 1) == parallel
        ]
        if not chosen:
            continue
        mean = float(np.mean([value for _, value in chosen]))
        if parallel:
            fit.non_torch_tensor_parallel_bytes = mean
        else:
            fit.non_torch_bytes = mean
        fit.points.extend(Point(m.entry.id, "non_torch_bytes", value, mean) for m, value in chosen)


def calibrate(catalog: Catalog, measurements: tuple[Measurement, ...]) -> list[Calibration]:
    """One calibration per hardware × engine release that the measurements cover, in the order
    first met."""
    groups: dict[tuple[str, str], list[Measurement]] = defaultdict(list)
    for measurement in measurements:
        profile = _engine(catalog, measurement)
        key = (measurement.entry.hardware, f"{profile.name} {series_of(profile.version)}")
        groups[key].append(measurement)
    ideal = _ideal(catalog)
    out = []
    for (hardware, engine), group in groups.items():
        fit = Calibration(hardware, engine)
        decode, prefill, memory = [], [], []
        for measurement in group:
            figures = measured_figures(catalog, measurement)
            estimates = estimate_row(ideal, measurement)
            memory_bound = estimates["load_decode_memory_s"] >= estimates["load_decode_compute_s"]
            if "itl_s.p50" in figures and memory_bound:
                decode.append((measurement, estimates, figures["itl_s.p50"]))
            if "ttft_s.p50" in figures and measurement.entry.concurrency in (None, 1):
                prefill.append((measurement, estimates, figures["ttft_s.p50"]))
            if "activation_peak_bytes" in figures or "non_torch_bytes" in figures:
                memory.append((measurement, estimate_row(catalog, measurement), figures))
        if decode:
            _decode(decode, catalog.assumptions.step_overhead, fit)
        bandwidth = fit.bandwidth_efficiency or catalog.assumptions.bandwidth_efficiency
        prefill = _compute_bound(prefill, bandwidth, catalog.assumptions.compute_efficiency)
        if prefill:
            overhead = fit.step_overhead_s
            _prefill(
                prefill, catalog.assumptions.step_overhead if overhead is None else overhead, fit
            )
        if memory:
            _memory(memory, fit)
        out.append(fit)
    return out


def _quantity(value: float | None, unit: str, scale: float = 1.0, digits: int = 4) -> Any:
    return None if value is None else f"{round(value / scale, digits)} {unit}".strip()


def calibration_document(fits: list[Calibration]) -> dict[str, Any]:
    """The fits as a YAML-ready document: the fitted figures in catalog units (those no point
    informs are left out) and every point used, with its error."""
    from planner.model.units import GIB

    entries = []
    for fit in fits:
        figures = {
            "bandwidth_efficiency": None
            if fit.bandwidth_efficiency is None
            else round(fit.bandwidth_efficiency, 4),
            "step_overhead": _quantity(fit.step_overhead_s, "ms", 1e-3),
            "compute_efficiency": None
            if fit.compute_efficiency is None
            else round(fit.compute_efficiency, 4),
            "activation_scale": None
            if fit.activation_scale is None
            else round(fit.activation_scale, 4),
            "non_torch": _quantity(fit.non_torch_bytes, "GiB", GIB),
            "non_torch_tensor_parallel": _quantity(fit.non_torch_tensor_parallel_bytes, "GiB", GIB),
        }
        points = [
            {
                "measurement": p.measurement,
                "figure": p.figure,
                "measured": p.measured,
                "fitted": round(p.fitted, 12),
                "error": f"{p.error_fraction:+.1%}",
            }
            for p in fit.points
        ]
        entry = {"hardware": fit.hardware, "engine": fit.engine}
        entry |= {k: v for k, v in figures.items() if v is not None}
        entries.append(entry | {"points": points})
    return {"calibration": entries}
