"""Fitting the latency figures: the bandwidth efficiency and step overhead to the decode
points, the compute efficiency to the prompts over those, each by bounded least squares on the
plan's own estimates; every point predicted again by a fit without it; and a fit that rests
on a bound with a point past it refused.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np
from scipy.optimize import least_squares

from planner.catalog import Catalog, Problem
from planner.measure import FOLDER
from planner.measure.benchmarks import file_key
from planner.measure.compare import (
    COMPARED,
    MOST_EFFICIENCY,
    estimate_rows,
    shown,
    slowness,
    users,
)
from planner.measure.design import design
from planner.measure.points import DECODE_FIGURES, Calibration, LatencyPoint, Point

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


def calibrate_latency(catalog: Catalog, points: list[LatencyPoint], fit: Calibration) -> None:
    """Fit the latency figures to ``points`` into ``fit``: the figures the points can fit, each
    point with its fitted and held-out estimates, and the refusals of a fit held at a bound
    with a point past it (else notes on the points it misses)."""
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
