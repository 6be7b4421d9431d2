"""Workload shapes: summarising length distributions and building simulation inputs.

A length is a fixed count, a summary (mean, p95, max), samples, or a CSV column. Memory is
planned on the maximum (the promised reservation), latency on the mean and tails.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from .catalog import Catalog, LengthDistribution, Workload


class DataFileError(ValueError):
    """A CSV named by a workload that cannot be read or lacks the column asked for."""


def read_column(folder: Path, file: str, column: str) -> np.ndarray:
    """Positive integer token lengths from ``column`` of CSV ``file`` inside ``folder``."""
    path = (folder / file).resolve()
    if not path.is_relative_to(folder.resolve()):
        raise DataFileError(f"{file} is outside the catalog folder")
    try:
        frame = pd.read_csv(path)
    except (OSError, ValueError) as exc:
        raise DataFileError(f"cannot read {file}: {exc}") from None
    if column not in frame.columns:
        raise DataFileError(f"{file} has no column {column!r}; columns: {', '.join(frame.columns)}")
    values = pd.to_numeric(frame[column], errors="coerce").to_numpy()
    if len(values) == 0 or not np.all(np.isfinite(values)) or np.any(values < 1):
        raise DataFileError(f"{file} column {column!r} must hold positive numbers")
    return np.round(values).astype(int)


def read_trace(folder: Path, file: str) -> pd.DataFrame:
    """An arrival trace: column ``arrival_s`` (seconds, non-decreasing), optional lengths."""
    path = (folder / file).resolve()
    if not path.is_relative_to(folder.resolve()):
        raise DataFileError(f"{file} is outside the catalog folder")
    try:
        frame = pd.read_csv(path)
    except (OSError, ValueError) as exc:
        raise DataFileError(f"cannot read {file}: {exc}") from None
    if "arrival_s" not in frame.columns:
        raise DataFileError(
            f"{file} needs a column 'arrival_s'; columns: {', '.join(frame.columns)}"
        )
    times = pd.to_numeric(frame["arrival_s"], errors="coerce").to_numpy()
    if (
        len(times) == 0
        or not np.all(np.isfinite(times))
        or np.any(np.diff(times) < 0)
        or times[0] < 0
    ):
        raise DataFileError(f"{file} column 'arrival_s' must be non-negative and non-decreasing")
    for column in ("prompt_tokens", "output_tokens"):
        if column in frame.columns:
            read_column(folder, file, column)
    return frame


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
