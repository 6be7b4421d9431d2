"""Fitting the engine's memory: its activation peak as the structural peak × a scale (a line
through the origin), and the memory outside PyTorch as the mean measured, apart for tensor
parallelism; each point predicted again by a fit without it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from planner.measure import Measurement
from planner.measure.points import Calibration, Point
from planner.model.engine import activation_peak_bytes

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


#: A measurement, the plan's estimates for it, and its measured memory figures.
MemoryRow = tuple[Measurement, Any, dict[str, float]]


def calibrate_memory(rows: list[MemoryRow], fit: Calibration) -> None:
    """Fit the activation scale and the memory outside PyTorch to ``rows`` into ``fit``, each
    measured figure a point with its fitted and held-out estimates."""
    _activation_scale(rows, fit)
    _non_torch(rows, fit)


def _activation_scale(rows: list[MemoryRow], fit: Calibration) -> None:
    """The activation scale over the measured activation peaks."""
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


def _non_torch(rows: list[MemoryRow], fit: Calibration) -> None:
    """The mean memory outside PyTorch, apart with and without tensor parallelism."""
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
