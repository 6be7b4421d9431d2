"""Workload shapes: summarising length distributions and building simulation inputs.

A length is a fixed count, a summary (mean, p95, max), samples, or a CSV column. Memory is
planned on the maximum (the promised reservation), latency on the mean and tails.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from planner.catalog.datafiles import read_column, read_trace

if TYPE_CHECKING:
    from planner.catalog import Catalog, LengthDistribution, Workload


def samples_of(catalog: Catalog, dist: LengthDistribution) -> np.ndarray | None:
    """The samples of a distribution given by samples or a file (None for a summary)."""
    if dist.samples is not None:
        return np.asarray(dist.samples, dtype=int)
    if dist.file is not None:
        return read_column(catalog.folder, dist.file, dist.column or "")
    return None


def summarise(values: np.ndarray) -> tuple[float, float, float]:
    """Mean, 95th percentile (inverted-CDF, an observed value) and maximum of token lengths."""
    return (
        float(np.mean(values)),
        float(np.percentile(values, 95, method="inverted_cdf")),
        float(np.max(values)),
    )


def length_summary(catalog: Catalog, workload: Workload, which: str) -> tuple[float, float, float]:
    """Mean, p95 and max of the workload's ``prompt`` or ``output`` lengths [tokens].

    An output length that is not given is the promised maximum (the conservative case).
    """
    value: Any = workload.prompt_tokens if which == "prompt" else workload.output_tokens
    if value is None:
        n = float(workload.max_output_tokens)
        return n, n, n
    if isinstance(value, int):
        return float(value), float(value), float(value)
    samples = samples_of(catalog, value)
    if samples is not None:
        return summarise(samples)
    return float(value.mean), float(value.p95), float(value.max)


def arrival_rate(catalog: Catalog, workload: Workload) -> float:
    """Forecast task arrivals per second: the stated rate, or a trace's count over its span [1/s].

    Zero for a closed-loop workload.
    """
    arrival = workload.arrival
    if arrival is None:
        return 0.0
    if arrival.rate is not None:
        return float(arrival.rate)
    times = read_trace(catalog.folder, arrival.file or "")["arrival_s"].to_numpy(dtype=float)
    span = times[-1] - times[0]
    return float((len(times) - 1) / span) if span > 0 else float("nan")
