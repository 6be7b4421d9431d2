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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import yaml
from pydantic import ValidationError
from scipy.optimize import least_squares

from planner.catalog import Catalog, CatalogError, Problem
from planner.catalog.engines import series_of, step_overhead_per_sequence
from planner.catalog.records import LATENCY_FIGURES, CalibrationFile
from planner.catalog.validation import problems_from_validation
from planner.catalog.yamlsafe import load
from planner.measure import FOLDER, Measurement
from planner.measure.benchmarks import file_key
from planner.measure.compare import (
    COMPARED,
    MOST_EFFICIENCY,
    _engine,
    estimate_rows,
    measured_figures,
    shown,
    slowness,
    users,
)
from planner.model.engine import activation_peak_bytes
from planner.model.units import GIB

#: The least share of datasheet bandwidth a fitted decode step is said to sustain. Memory-bound
#: decode kernels reach 60–90 % of HBM bandwidth; points that ask for less are steps dominated
#: by fixed costs, which only the overhead can carry (fitting the efficiency instead would slow
#: every weight read with it, prefill included).
LEAST_BANDWIDTH_EFFICIENCY = 0.5


#: Bounds of the fitted figures: efficiencies within those the calibration file accepts, an
#: overhead of at most a second.
BOUNDS = {
    "bandwidth_efficiency": (LEAST_BANDWIDTH_EFFICIENCY, MOST_EFFICIENCY),
    "compute_efficiency": (0.01, MOST_EFFICIENCY),
    "step_overhead": (0.0, 1.0),
}

#: The bounds a fit may not rest on while a point lies past them: every end but the bandwidth
#: efficiency's least, where a slower step is fitted as fixed costs instead.
HARD_BOUNDS = {
    ("bandwidth_efficiency", "most"),
    ("compute_efficiency", "least"),
    ("compute_efficiency", "most"),
    ("step_overhead", "least"),
    ("step_overhead", "most"),
}

#: How many times the decode and prompt figures are fitted in turn, at most.
ALTERNATIONS = 8

#: Two step sizes closer than this (relative) are one size to the fit.
DISTINCT = 0.05

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


# Latency: the plan's own metrics, fitted -----------------------------------------------------


@dataclass(frozen=True)
class LatencyPoint:
    """A measured latency or throughput statistic and the candidate it was measured on."""

    measurement: Measurement
    figure: str
    measured: float

    @property
    def metric(self) -> str:
        return COMPARED[self.figure][0]


Predict = Callable[[dict[str, float], Sequence[LatencyPoint]], np.ndarray]


def _ideal(catalog: Catalog) -> Catalog:
    """The catalog without any earlier calibration: the fit sets the assumptions itself."""
    return replace(catalog, calibration=())


def predictor(catalog: Catalog) -> Predict:
    """The plan's estimates of points under a set of fitted figures (the catalog's assumptions
    with those figures in place of its own), one evaluation per engine profile."""
    base = _ideal(catalog)

    def predict(figures: dict[str, float], points: Sequence[LatencyPoint]) -> np.ndarray:
        assumptions = base.assumptions.model_copy(update=figures)
        rows = estimate_rows(
            replace(base, assumptions=assumptions), [p.measurement for p in points]
        )
        return np.array([float(row[p.metric]) for row, p in zip(rows, points, strict=True)])

    return predict


@dataclass(frozen=True)
class Design:
    """Which figures a set of points can fit, and what they cannot tell apart."""

    free: tuple[str, ...]
    notes: tuple[str, ...]


def _distinct(values: Sequence[float]) -> int:
    """How many values differ from each other by more than :data:`DISTINCT`."""
    kept: list[float] = []
    for value in sorted(v for v in values if math.isfinite(v)):
        if not kept or value > kept[-1] * (1 + DISTINCT):
            kept.append(value)
    return len(kept)


def design(points: Sequence[LatencyPoint], rows: Sequence[Any], catalog: Catalog) -> Design:
    """The figures the points can fit (their estimates at the assumptions in ``rows``)."""
    decode = [(p, r) for p, r in zip(points, rows, strict=True) if p.figure in DECODE_FIGURES]
    prompts = [(p, r) for p, r in zip(points, rows, strict=True) if p.figure.startswith("ttft")]
    free: list[str] = []
    notes: list[str] = []
    a = catalog.assumptions
    if decode:
        free.append("bandwidth_efficiency")
        steps = _distinct([float(r["load_decode_memory_s"]) for _, r in decode])
        if steps >= 2:
            free.append("step_overhead")
        else:
            notes.append(
                f"the decode figures are at one step size (one batch, one context length): the "
                f"step overhead and the bandwidth efficiency are one slope, so the overhead "
                f"stays assumed ({a.step_overhead * 1e3:g} ms); measure the decode latency at a "
                f"second batch size (e.g. 1 and 32 requests at once) to fit both"
            )
        contexts = _distinct([float(r["kv_read_bytes_per_sequence_step"]) for _, r in decode])
        if contexts < 2:
            notes.append(
                f"the decode figures are at one context length: the time per decoding sequence "
                f"and the bandwidth spent reading each sequence's cache are one slope, so the "
                f"time per sequence stays assumed ({step_overhead_per_sequence(a) * 1e6:g} µs); "
                f"measure at a second prompt length to tell them apart"
            )
    if prompts:
        bound = [
            (p, r)
            for p, r in prompts
            if r["prefill_flops"] / r["achieved_compute_flops_per_s"] + r["matmul_padding_s"]
            >= r["weight_read_s"]
        ]
        if _distinct([float(r["prefill_flops"]) for _, r in bound]) >= 2:
            free.append("compute_efficiency")
        elif bound:
            notes.append(
                f"the prompts whose arithmetic outlasts their weight read are of one length: "
                f"their arithmetic and the fixed time of their steps are one slope, so the "
                f"compute efficiency stays assumed ({a.compute_efficiency:g}); measure the time "
                f"to first token at a second prompt length (e.g. 1,000 and 4,000 tokens at one "
                f"request) to fit it"
            )
        else:
            notes.append(
                "every prompt measured is bound by reading the weights, not by its arithmetic: "
                "the compute efficiency stays assumed; measure the time to first token of a "
                "longer prompt (thousands of tokens) at one request"
            )
        if not decode and "step_overhead" not in free:
            notes.append(
                "no decode figure: the bandwidth efficiency and the step overhead stay assumed"
            )
    return Design(tuple(free), tuple(notes))


def _transform(name: str, value: float) -> float:
    """The fit's variable for a figure: an efficiency as its inverse (a time multiplier, which
    the step times are linear in), an overhead in milliseconds."""
    return 1 / value if name.endswith("efficiency") else value * 1e3


def _untransform(name: str, value: float) -> float:
    return 1 / value if name.endswith("efficiency") else value / 1e3


def _solve(
    predict: Predict,
    points: Sequence[LatencyPoint],
    free: Sequence[str],
    start: dict[str, float],
) -> dict[str, float]:
    """The figures in ``free`` that minimise the squared relative errors of ``points`` (bounded
    least squares, trust-region reflective), the others as in ``start``."""
    measured = np.array([p.measured for p in points])

    def residuals(x: np.ndarray) -> np.ndarray:
        figures = dict(start) | {n: _untransform(n, v) for n, v in zip(free, x, strict=True)}
        return predict(figures, points) / measured - 1

    lower = [min(_transform(n, b) for b in BOUNDS[n]) for n in free]
    upper = [max(_transform(n, b) for b in BOUNDS[n]) for n in free]
    x0 = np.clip([_transform(n, start[n]) for n in free], lower, upper)
    found = least_squares(residuals, x0, bounds=(lower, upper), diff_step=1e-4, x_scale="jac")
    return dict(start) | {n: _untransform(n, v) for n, v in zip(free, found.x, strict=True)}


def fit_latency(
    predict: Predict, points: Sequence[LatencyPoint], catalog: Catalog
) -> tuple[dict[str, float], tuple[str, ...], tuple[str, ...]]:
    """The fitted figures for ``points`` (the assumptions where none can be fitted), the
    names fitted, and the notes on what the points could not separate."""
    a = catalog.assumptions
    start = {
        "bandwidth_efficiency": a.bandwidth_efficiency,
        "compute_efficiency": a.compute_efficiency,
        "step_overhead": a.step_overhead,
    }
    if not points:
        return start, (), ()
    rows = estimate_rows(
        replace(_ideal(catalog), assumptions=a.model_copy(update=start)),
        [p.measurement for p in points],
    )
    chosen = design(points, rows, catalog)
    notes = list(chosen.notes)
    decode = [p for p in points if p.figure in DECODE_FIGURES]
    prompts = [p for p in points if p not in decode]
    # the decode figures fix what a step reads and its fixed time, the prompts the arithmetic
    # over those, in turn until neither moves (a joint fit would let a prompt's fixed costs
    # move every step; a compute-bound decode step needs the arithmetic the prompts fix)
    free = [n for n in chosen.free if n != "compute_efficiency"]
    figures = dict(start)
    overhead_fitted = False
    for _ in range(ALTERNATIONS):
        before = dict(figures)
        if free:
            figures, note = _decode(predict, decode, free, figures)
            if note is not None:
                notes.append(note)
                overhead_fitted = True
        if "compute_efficiency" in chosen.free:
            figures = _solve(predict, prompts, ["compute_efficiency"], figures)
        if not free or "compute_efficiency" not in chosen.free:
            break
        if all(math.isclose(figures[n], before[n], rel_tol=1e-6) for n in figures):
            break
    if overhead_fitted and "step_overhead" not in free:
        free.append("step_overhead")
    if "compute_efficiency" in chosen.free:
        free.append("compute_efficiency")
    return figures, tuple(free), tuple(dict.fromkeys(notes))


def _decode(
    predict: Predict,
    points: Sequence[LatencyPoint],
    free: list[str],
    start: dict[str, float],
) -> tuple[dict[str, float], str | None]:
    """The bandwidth efficiency (and overhead, where ``free``) fitted to the decode points, and
    a note where the efficiency alone could not carry them and the overhead was fitted
    instead, the efficiency held at a bound: steps too slow for any kernel (fixed costs; held
    at :data:`LEAST_BANDWIDTH_EFFICIENCY`), or too fast for the assumed overhead at the
    datasheet's full rate (held at :data:`~planner.measure.compare.MOST_EFFICIENCY`)."""
    figures = _solve(predict, points, free, start)
    if "step_overhead" in free:
        return figures, None
    efficiency = figures["bandwidth_efficiency"]
    if efficiency <= LEAST_BANDWIDTH_EFFICIENCY * (1 + 1e-6):
        held = LEAST_BANDWIDTH_EFFICIENCY
        note = (
            f"the decode steps are slower than any kernel reading at {held:.0%} of the "
            f"datasheet bandwidth: the efficiency is held there and the rest fitted as step "
            f"overhead (fixed costs)"
        )
    elif efficiency >= MOST_EFFICIENCY * (1 - 1e-6):
        held = MOST_EFFICIENCY
        note = (
            f"the decode steps are faster than the assumed step overhead "
            f"({start['step_overhead'] * 1e3:g} ms) allows at the datasheet's full bandwidth: "
            f"the efficiency is held at {held:g} and the step overhead fitted below the "
            f"assumption"
        )
    else:
        return figures, None
    return _solve(
        predict, points, ["step_overhead"], figures | {"bandwidth_efficiency": held}
    ), note


def _latency(catalog: Catalog, points: list[LatencyPoint], fit: Calibration) -> None:
    predict = predictor(catalog)
    figures, free, notes = fit_latency(predict, points, catalog)
    fit.notes.extend(notes)
    if not points:
        return
    fitted = predict(figures, points)
    held_out = []
    for i in range(len(points)):
        others = points[:i] + points[i + 1 :]
        without, _, _ = fit_latency(predict, others, catalog)
        held_out.append(float(predict(without, [points[i]])[0]))
    if "bandwidth_efficiency" in free:
        fit.bandwidth_efficiency = figures["bandwidth_efficiency"]
    if "step_overhead" in free or "bandwidth_efficiency" in free:
        fit.step_overhead_s = figures["step_overhead"]
    if "compute_efficiency" in free:
        fit.compute_efficiency = figures["compute_efficiency"]
    for p, estimate, out in zip(points, fitted, held_out, strict=True):
        fit.points.append(Point(p.measurement.entry.id, p.figure, p.measured, float(estimate), out))
    tolerance = catalog.assumptions.calibrated_band_floor
    fit.refusals.extend(_past_bounds(catalog, figures, free, points, fitted, tolerance))
    if not fit.refusals:
        fit.notes.extend(_misses(points, fitted, tolerance))


#: What a point past each bound says, by the way the bound blocks the fit: "faster" where the
#: plan at the bound is still slower than measured, "slower" where still faster.
_PAST = {
    ("bandwidth_efficiency", "most"): (
        "faster",
        "faster than the device's bandwidth allows for the bytes a step reads",
    ),
    ("compute_efficiency", "most"): (
        "faster",
        "faster than the device's compute allows for the prompt's arithmetic",
    ),
    ("step_overhead", "least"): (
        "faster",
        "faster than the plan allows even with no fixed time per step",
    ),
    ("compute_efficiency", "least"): ("slower", "slower than any compute efficiency explains"),
    ("step_overhead", "most"): ("slower", "slower than any fixed time per step explains"),
}


def _past_bounds(
    catalog: Catalog,
    figures: dict[str, float],
    free: Sequence[str],
    points: Sequence[LatencyPoint],
    fitted: np.ndarray,
    tolerance: float,
) -> list[Problem]:
    """A problem for each point that a figure held at a bound of :data:`HARD_BOUNDS` leaves
    more than ``tolerance`` past it: the points contradict the model there."""
    out = []
    for name in free:
        for end, bound in zip(("least", "most"), BOUNDS[name], strict=True):
            if (name, end) not in HARD_BOUNDS or not math.isclose(
                figures[name], bound, rel_tol=1e-4, abs_tol=1e-9
            ):
                continue
            way, words = _PAST[(name, end)]
            for point, estimate in zip(points, fitted, strict=True):
                ratio = slowness(point.figure, point.measured, float(estimate))
                past = ratio > 1 + tolerance if way == "faster" else ratio < 1 - tolerance
                if not past:
                    continue
                what = COMPARED[point.figure][2].split(" (")[0]
                out.append(
                    Problem(
                        str(catalog.folder / FOLDER / point.measurement.entry.file),
                        f"{name} would have to go past {_bound(name, bound)} to fit: its {what} "
                        f"{shown(point.figure, point.measured)} at {users(point.measurement)} "
                        f"is {words} (the plan gives {shown(point.figure, float(estimate))} at "
                        f"that bound, "
                        f"{float(estimate) / point.measured - 1:+.0%}); the measurements "
                        f"contradict the model, so no calibration is written: check the entry's "
                        f"hardware, model, precision, tensor_parallel and concurrency, or "
                        f"remove it from index.yaml",
                        line=point.measurement.lines.get(point.figure),
                        entry=f"measurement '{point.measurement.entry.id}'",
                        field=file_key(point.measurement.entry.format, point.figure),
                    )
                )
    return out


def _bound(name: str, bound: float) -> str:
    if name == "step_overhead":
        return f"{bound * 1e3:g} ms"
    if name.endswith("efficiency") and bound == MOST_EFFICIENCY:
        return f"{bound:g} (the datasheet's full rate, the most the calibration file takes)"
    return f"{bound:g}"


def _misses(points: Sequence[LatencyPoint], fitted: np.ndarray, tolerance: float) -> list[str]:
    """Notes on the points a fit within its bounds misses by more than ``tolerance``: the
    points disagree with each other more than the model explains."""
    out = []
    for point, estimate in zip(points, fitted, strict=True):
        error = float(estimate) / point.measured - 1
        if abs(error) > tolerance:
            out.append(
                f"the fit misses {point.measurement.entry.id}'s {point.figure} "
                f"({shown(point.figure, point.measured)} at {users(point.measurement)}) by "
                f"{error:+.1%} in "
                f"sample: the points disagree more than the model explains (another setup, or "
                f"run-to-run spread); the held-out error, and so the band, carries it"
            )
    return out


# Memory --------------------------------------------------------------------------------------


def _activation_parts(estimates: Any) -> tuple[float, float]:
    """(forward pass at scale 1, dummy sampler) of a row's activation peak [B]: the peak is the
    larger of the forward pass × its scale and the sampler."""
    inputs = [estimates[name] for name in ACTIVATION_INPUTS]
    forward = activation_peak_bytes(*inputs, activation_scale=1.0, sampler_bytes_per_logit=0.0)
    sampler = activation_peak_bytes(
        *inputs, activation_scale=0.0, sampler_bytes_per_logit=estimates["sampler_bytes_per_logit"]
    )
    return float(forward), float(sampler)


def _scale(forward: np.ndarray, measured: np.ndarray, sampler: np.ndarray, assumed: float) -> float:
    """The activation scale of a line through the origin [least squares], over the peaks the
    forward pass sets (above the sampler's); the assumed scale where none does."""
    chosen = measured > sampler
    if not chosen.any():
        return assumed
    f, m = forward[chosen], measured[chosen]
    return float(np.sum(f * m) / np.sum(f * f))


def _memory(rows: list[tuple[Measurement, Any, dict[str, float]]], fit: Calibration) -> None:
    used = [(m, e, f) for m, e, f in rows if "activation_peak_bytes" in f]
    if used:
        parts = np.array([_activation_parts(e) for _, e, _ in used])
        measured = np.array([f["activation_peak_bytes"] for _, _, f in used])
        forward, sampler = parts[:, 0], parts[:, 1]
        assumed = np.array([float(e["engine_activation_scale"]) for _, e, _ in used])
        scale = _scale(forward, measured, sampler, float(assumed[0]))
        fit.activation_scale = scale
        for i, (m, _, _) in enumerate(used):
            rest = np.arange(len(used)) != i
            alone = _scale(forward[rest], measured[rest], sampler[rest], float(assumed[i]))
            fit.points.append(
                Point(
                    m.entry.id,
                    "activation_peak_bytes",
                    float(measured[i]),
                    max(float(forward[i] * scale), float(sampler[i])),
                    max(float(forward[i] * alone), float(sampler[i])),
                )
            )
    for parallel in (False, True):
        chosen = [
            (m, f["non_torch_bytes"], e["non_torch_bytes"])
            for m, e, f in rows
            if "non_torch_bytes" in f and (m.entry.tensor_parallel > 1) == parallel
        ]
        if not chosen:
            continue
        values = np.array([value for _, value, _ in chosen])
        mean = float(np.mean(values))
        if parallel:
            fit.non_torch_tensor_parallel_bytes = mean
        else:
            fit.non_torch_bytes = mean
        for i, (m, value, assumed) in enumerate(chosen):
            rest = np.delete(values, i)
            alone = float(np.mean(rest)) if rest.size else float(assumed)
            fit.points.append(Point(m.entry.id, "non_torch_bytes", value, mean, alone))


# The whole calibration -----------------------------------------------------------------------


def calibrate(catalog: Catalog, measurements: tuple[Measurement, ...]) -> list[Calibration]:
    """One calibration per hardware × engine release that the measurements cover, in the order
    first met; every figure of every measurement is either a point or listed as unused.

    Raises :class:`~planner.catalog.CatalogError` when a fit rests on a bound with a point
    past it, when nothing could be fitted, or when the calibration would not pass ``planner
    check`` (each problem names the measurement, the figure and the bound).
    """
    groups: dict[tuple[str, str], list[Measurement]] = defaultdict(list)
    for measurement in measurements:
        profile = _engine(catalog, measurement)
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
            kept = {}
            for figure, value in figures.items():
                reason = _unused_reason(figure, value, measurement, estimate)
                if reason is not None:
                    fit.unused.append(Unused(measurement.entry.id, figure, reason))
                elif figure in LATENCY_FIGURES:
                    latency.append(LatencyPoint(measurement, figure, value))
                else:
                    kept[figure] = value
            if kept:
                memory.append((measurement, estimate, kept))
        _latency(catalog, latency, fit)
        if memory:
            _memory(memory, fit)
        out.append(fit)
    refusals = [problem for fit in out for problem in fit.refusals]
    if refusals:
        raise CatalogError(refusals)
    _check(out)
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


#: Where a calibration planner calibrate refuses to write would have gone, in its problems.
NOT_WRITTEN = "calibration.yaml (not written)"


def _why_nothing(fit: Calibration) -> str:
    """Why a fit has no figure: what its points could not separate, else why none was used."""
    if fit.notes:
        return "; ".join(fit.notes)
    reasons = dict.fromkeys(f"{u.figure}: {u.reason}" for u in fit.unused)
    return "no figure a calibration fits was measured (" + "; ".join(reasons) + ")"


def _check(fits: list[Calibration]) -> None:
    """Raise :class:`~planner.catalog.CatalogError` unless the calibration document passes
    the records ``planner check`` reads calibration.yaml with."""
    document = calibration_document(fits)
    if not document["calibration"]:
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
        if not fit.fitted():
            continue  # a calibration without a fitted figure calibrates nothing
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
        if fit.notes:
            entry["notes"] = list(fit.notes)
        entries.append(entry)
    return {"calibration": entries}


def summary(fits: list[Calibration]) -> list[str]:
    """What a calibration did, in lines for a terminal: per fit, the points used and not,
    the in-sample and held-out errors, and what the points could not separate."""
    lines = []
    for fit in fits:
        used, unused = len(fit.points), len(fit.unused)
        line = f"{fit.hardware} on {fit.engine}: {used} figure(s) used, {unused} not used"
        if not fit.fitted():
            line += "; nothing fitted, so no calibration of it is written"
        inside, outside = fit.rms(held_out=False), fit.rms(held_out=True)
        if inside is not None and outside is not None:
            line += (
                f"; latency error {inside:.1%} in sample, {outside:.1%} held out "
                f"(each point predicted by a fit without it: the band uses this)"
            )
        lines.append(line + ".")
        lines.extend(f"  not used: {u.measurement} {u.figure}: {u.reason}" for u in fit.unused)
        lines.extend(f"  note: {note}" for note in fit.notes)
    return lines
