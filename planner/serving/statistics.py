"""What a simulation run reports (:class:`SimResult`) and the statistics it is computed with:
percentiles, time-weighted segment quantiles and means, seeded random streams.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, fields

import numpy as np

_PERCENTILES = (50, 90, 95, 99)


@dataclass(frozen=True)
class SimResult:
    """Outcome of one run.  Latencies in seconds; statistics after warm-up."""

    n_requests: int
    n_measured: int
    n_completed: int
    ttft_p50_s: float
    ttft_p90_s: float
    ttft_p95_s: float
    ttft_p99_s: float
    ttft_mean_s: float
    itl_p50_s: float
    itl_p90_s: float
    itl_p95_s: float
    itl_p99_s: float
    itl_mean_s: float
    tpot_p50_s: float
    tpot_p90_s: float
    tpot_p95_s: float
    tpot_p99_s: float
    e2e_p50_s: float
    e2e_p90_s: float
    e2e_p95_s: float
    e2e_p99_s: float
    e2e_mean_s: float
    task_p50_s: float
    task_p90_s: float
    task_p95_s: float
    task_p99_s: float
    task_mean_s: float
    wait_mean_s: float
    wait_p95_s: float
    throughput_tokens_per_s: float
    throughput_requests_per_s: float
    queued_count: int
    queued_fraction: float
    rejected_count: int
    rejected_fraction: float
    preempted_count: int
    preempted_fraction: float
    preemptions: int
    recomputed_tokens: int
    swap_bytes: float
    swap_time_s: float
    tasks_completed: int
    tasks_failed: int
    utilisation: float
    mean_concurrency: float
    mean_kv_tokens: float
    peak_kv_tokens_used: int
    peak_kv_tokens_reserved: int
    kv_budget_tokens: int
    duration_s: float
    samples: dict[str, np.ndarray] = field(default_factory=dict, compare=False, repr=False)
    """Raw per-request arrays of the measured requests (ttft_s, e2e_s, wait_s, tpot_s, task_s)."""

    def to_dict(self) -> dict[str, float | int]:
        """Flat scalar metrics, e.g. ``ttft_p95_s``, ``rejected_fraction``."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "samples"}


def _percentiles(x: np.ndarray) -> list[float]:
    """p50/p90/p95/p99 of x (inverted CDF) [same unit as x]; NaN if empty."""
    if x.size == 0:
        return [math.nan] * len(_PERCENTILES)
    return [float(v) for v in np.percentile(x, _PERCENTILES, method="inverted_cdf")]


def _mean(x: np.ndarray) -> float:
    """Arithmetic mean; NaN if empty."""
    return float(x.mean()) if x.size else math.nan


def _segment_quantiles(
    start: np.ndarray, slope: np.ndarray, count: np.ndarray, weight: np.ndarray, qs: Sequence[float]
) -> list[float]:
    """Weighted inverted-CDF quantiles of values ``start + slope * k`` (k < count).

    Each segment stands for ``count`` values, each repeated ``weight`` times.
    Constant segments are collapsed into point masses; the quantile is found
    by bisection on the value with the count of values <= v in closed form,
    to a relative precision of 1e-12.
    """
    w_tot = weight * count
    total = float(w_tot.sum())
    if total <= 0.0:
        return [math.nan] * len(qs)
    const = slope <= 0.0
    pv = start[const]
    order = np.argsort(pv, kind="stable")
    pv = pv[order]
    pcum = np.cumsum(w_tot[const][order])
    ls, lb, ln, lw = start[~const], slope[~const], count[~const], weight[~const]

    def cdf(v: np.ndarray) -> np.ndarray:
        idx = np.searchsorted(pv, v, side="right")
        acc = np.where(idx > 0, pcum[np.maximum(idx - 1, 0)] if pcum.size else 0.0, 0.0)
        if ls.size:
            k = np.floor((v[:, None] - ls[None, :]) / lb[None, :]) + 1.0
            acc = acc + (np.clip(k, 0.0, ln[None, :]) * lw[None, :]).sum(axis=1)
        return acc

    lo_v = float(start.min())
    hi_v = float((start + slope * (count - 1)).max())
    target = np.asarray(qs, dtype=float) * total
    lo = np.full(len(qs), lo_v)
    hi = np.full(len(qs), hi_v)
    # values below lo_v do not exist: F(lo_v) >= target means the answer is lo_v
    done = cdf(lo) >= target
    hi[done] = lo_v
    for _ in range(200):
        if np.all(hi - lo <= 1e-12 * np.maximum(np.abs(hi), 1e-300)):
            break
        mid = (lo + hi) / 2.0
        ok = cdf(mid) >= target
        hi = np.where(ok, mid, hi)
        lo = np.where(ok, lo, mid)
    return [float(v) for v in hi]


def _segment_mean(
    start: np.ndarray, slope: np.ndarray, count: np.ndarray, weight: np.ndarray
) -> float:
    """Weighted mean of the values ``start + slope * k`` (k < count) [same unit]; NaN if none.

    A segment sums to ``count * start + slope * count * (count - 1) / 2``.
    """
    total = float((weight * count).sum())
    if total <= 0.0:
        return math.nan
    sums = count * start + slope * count * (count - 1) / 2.0
    return float((weight * sums).sum()) / total


def _rngs(seed: int) -> list[np.random.Generator]:
    """Independent PCG64 generators for arrivals, prompt and output lengths."""
    return [np.random.Generator(np.random.PCG64(s)) for s in np.random.SeedSequence(seed).spawn(3)]
