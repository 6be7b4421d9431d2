"""Calibration: the efficiencies and overheads that make the estimates meet the measurements,
and how well they predict a measurement they were not fitted to.

Per hardware × engine release:

* **Latency and throughput.** Each measured statistic is held against the plan's metric of the
  same definition (:data:`planner.measure.compare.COMPARED`: a median inter-token latency
  against one step at the load batch, a mean TPOT against the time per output token with the
  others' prefills, a TTFT against the time to first token at load, end to end, throughput),
  evaluated by the plan itself for the candidate as measured. The fitted figures minimise the
  sum of squared relative errors (bounded least squares), so a point reads in the plan that
  uses the calibration as the fit says: first the bandwidth efficiency and the fixed step
  overhead on the decode figures (inter-token, TPOT, end to end, throughput), then the compute
  efficiency on the times to first token over those. Only what the points can tell apart is
  fitted: the step overhead needs decode figures at two or more step sizes (batch or
  context), else it and the bandwidth efficiency are one slope and the overhead stays
  assumed; the compute efficiency needs prompts of two or more lengths whose arithmetic
  outlasts their weight read (one length cannot tell the arithmetic from the fixed time of
  its steps: a deep mixture's 1,024-token prompt fitted alone gave 0.12, and the set's other
  TTFTs came out 126 % too slow). A step too slow for any decode kernel (below
  :data:`LEAST_BANDWIDTH_EFFICIENCY` of the datasheet) is fixed costs: the efficiency is held
  there and the overhead fitted.
* **Held-out error.** Each latency point is predicted once more by a fit made without it
  (leave one out, the same rules on the remaining points; with no point left, the
  assumptions). The band the plan puts on calibrated estimates comes from those errors, not
  from the in-sample fit, which a fit with as many figures as points makes exact.
* **Engine features.** A prefix cache's hit ratio and speculative decoding's acceptance are
  read, not fitted (:mod:`~planner.measure.features`): each is a figure to set in the catalog
  (the workload's ``prefix.measured_hit_ratio``, the engine's acceptance rate), which the
  summary and the calibration's notes name.
* **Memory.** The engine's activation peak is its structural peak × a scale (a line through
  the origin); memory outside PyTorch is the mean measured, apart for tensor parallelism.

Every figure of every measurement is either a point of a fit, with its fitted and held-out
estimates, or listed as unused with the reason.

**Refusals.** A fitted figure is searched within the bounds the calibration file holds it to
(the records of :mod:`planner.catalog.records`: an efficiency in (0, 1]), and the calibration
is validated as ``planner check`` validates the file, so ``planner calibrate`` never writes
one that check refuses. A fit held at a bound while a point still lies past it by more than
the band floor (:data:`~planner.catalog.records.Assumptions`'s ``calibrated_band_floor``) is no
fit: the data contradicts the model (a step faster than the device's bandwidth allows for the
bytes it reads, at the datasheet's full rate), and :func:`calibrate` raises
:class:`~planner.catalog.CatalogError` naming the figure, the bound and each point pulling past
it, rather than clip it silently.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from planner.catalog import Catalog, CatalogError
from planner.catalog.calibration_records import LATENCY_FIGURES
from planner.catalog.engines import series_of
from planner.measure import Measurement
from planner.measure.calibration_report import (
    NOT_WRITTEN,
    calibration_document,
    check_fits,
    summary,
)
from planner.measure.compare import (
    COMPARED,
    engine_as_measured,
    estimate_rows,
    measured_figures,
)
from planner.measure.design import DISTINCT, Design, design
from planner.measure.features import FEATURE_FIGURES, feature_figures
from planner.measure.fitting import (
    ALTERNATIONS,
    BOUNDS,
    HARD_BOUNDS,
    LEAST_BANDWIDTH_EFFICIENCY,
    Predict,
    calibrate_latency,
    fit_latency,
    predictor,
)
from planner.measure.memory_fit import ACTIVATION_INPUTS, calibrate_memory
from planner.measure.points import (
    DECODE_FIGURES,
    Calibration,
    LatencyPoint,
    Measured,
    Point,
    Unused,
)

#: Figures compared with the plan but not fitted, and why.
COMPARED_ONLY = {
    "total_memory_bytes": "the device's memory: a datasheet figure, compared, not fitted",
    "weights_bytes": "set by the model and the precision, compared, not fitted",
    "cuda_graph_bytes": "the release's constant, compared, not fitted",
    "kv_pool_bytes": "follows from the fitted activation scale and non-torch memory",
    "kv_pool_tokens": "follows from the fitted activation scale and non-torch memory",
    "max_concurrency": "follows from the KV pool (compared, not fitted)",
    "gpu_blocks": "follows from the KV pool (compared as tokens, not fitted)",
}

#: Figures that describe how a run was set up, not what it measured.
SETTINGS = {
    "gpu_memory_utilization",
    "max_model_len",
    "request_rate",
    "num_prompts",
    "completed",
    "duration",
    "total_input_tokens",
    "total_output_tokens",
    "memory_total_bytes",
}


def calibrate(catalog: Catalog, measurements: tuple[Measurement, ...]) -> list[Calibration]:
    """One calibration per hardware × engine release that the measurements cover, in the order
    first met; every figure of every measurement is either a point or listed as unused.

    Raises :class:`~planner.catalog.CatalogError` when a fit rests on a bound with a point
    past it, when nothing could be fitted, or when the calibration would not pass ``planner
    check`` (each problem names the measurement, the figure and the bound).
    """
    groups: dict[tuple[str, str], list[Measurement]] = defaultdict(list)
    for measurement in measurements:
        profile = engine_as_measured(catalog, measurement)
        key = (measurement.entry.hardware, f"{profile.name} {series_of(profile.version)}")
        groups[key].append(measurement)
    out = []
    for (hardware, engine), group in groups.items():
        fit = Calibration(hardware, engine)
        fit.notes.extend(dict.fromkeys(w.message for m in group for w in m.warnings))
        latency: list[LatencyPoint] = []
        memory = []
        estimates = estimate_rows(catalog, group)
        for measurement, estimate in zip(group, estimates, strict=True):
            figures = measured_figures(catalog, measurement)
            for read in feature_figures(catalog, measurement, figures):
                if isinstance(read, Measured):
                    fit.measured.append(read)
                else:
                    fit.unused.append(read)
            kept = {}
            for figure, value in figures.items():
                if figure in FEATURE_FIGURES:
                    continue
                reason = _unused_reason(figure, value, measurement, estimate)
                if reason is not None:
                    fit.unused.append(Unused(measurement.entry.id, figure, reason))
                elif figure in LATENCY_FIGURES:
                    latency.append(LatencyPoint(measurement, figure, value))
                else:
                    kept[figure] = value
            if kept:
                memory.append((measurement, estimate, kept))
        calibrate_latency(catalog, latency, fit)
        if memory:
            calibrate_memory(memory, fit)
        out.append(fit)
    refusals = [problem for fit in out for problem in fit.refusals]
    if refusals:
        raise CatalogError(refusals)
    check_fits(out)
    return out


#: The memory figures a calibration fits.
MEMORY_FIGURES = ("activation_peak_bytes", "non_torch_bytes")


def _unused_reason(
    figure: str, value: float, measurement: Measurement, estimate: Any
) -> str | None:
    """Why a measured figure is not a point of a fit (None where it is one)."""
    if figure in LATENCY_FIGURES or figure in MEMORY_FIGURES:
        if value <= 0:
            return (
                f"measured {value:g}: a relative error of a measured 0 (or less) has no "
                f"meaning, so it cannot be a point"
            )
        if figure in MEMORY_FIGURES or math.isfinite(float(estimate[COMPARED[figure][0]])):
            return None
        return "the plan has no estimate for this candidate as measured"
    log = measurement.entry.format == "vllm-log"
    if figure in SETTINGS or (figure == "max_concurrency" and not log):
        return "a setting of the run, not a measured figure"
    if figure in COMPARED_ONLY:
        return COMPARED_ONLY[figure]
    return (
        "no plan metric of this definition (the plan estimates medians, means and "
        "throughputs; percentiles and spreads are the simulation's)"
    )


#: The calibration's public names, each defined in the module for its step: the points
#: (:mod:`~planner.measure.points`), what they can fit (:mod:`~planner.measure.design`), the
#: latency fit (:mod:`~planner.measure.fitting`), the memory fit
#: (:mod:`~planner.measure.memory_fit`) and what is written
#: (:mod:`~planner.measure.calibration_report`).
__all__ = [
    "ACTIVATION_INPUTS",
    "ALTERNATIONS",
    "BOUNDS",
    "COMPARED_ONLY",
    "DECODE_FIGURES",
    "DISTINCT",
    "HARD_BOUNDS",
    "LEAST_BANDWIDTH_EFFICIENCY",
    "MEMORY_FIGURES",
    "NOT_WRITTEN",
    "SETTINGS",
    "Calibration",
    "Design",
    "LatencyPoint",
    "Measured",
    "Point",
    "Predict",
    "Unused",
    "calibrate",
    "calibration_document",
    "design",
    "fit_latency",
    "predictor",
    "summary",
]
