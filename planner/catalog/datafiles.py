"""Data files a catalog names: token lengths from a CSV column, arrival traces.

Files must lie inside the catalog folder; a file that cannot be read, lacks the column asked for
or holds anything but the numbers expected raises :class:`DataFileError` naming the file.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd

from planner.catalog.safefile import FileProblem, read_regular


class DataFileError(ValueError):
    """A CSV named by a workload that cannot be read or lacks the column asked for."""


def _read_csv(folder: Path, file: str) -> pd.DataFrame:
    """CSV ``file``, which must lie inside ``folder``."""
    path = (folder / file).resolve()
    if not path.is_relative_to(folder.resolve()):
        raise DataFileError(f"{file} is outside the catalog folder")
    try:
        return pd.read_csv(io.BytesIO(read_regular(path)))
    except FileProblem as exc:
        raise DataFileError(f"cannot read {file}: it {exc}") from None
    except (OSError, ValueError) as exc:
        raise DataFileError(f"cannot read {file}: {exc}") from None


def read_column(folder: Path, file: str, column: str) -> np.ndarray:
    """Positive integer token lengths from ``column`` of CSV ``file`` inside ``folder``."""
    frame = _read_csv(folder, file)
    if column not in frame.columns:
        raise DataFileError(f"{file} has no column {column!r}; columns: {', '.join(frame.columns)}")
    values = pd.to_numeric(frame[column], errors="coerce").to_numpy()
    if len(values) == 0 or not np.all(np.isfinite(values)) or np.any(values < 1):
        raise DataFileError(f"{file} column {column!r} must hold positive numbers")
    return np.round(values).astype(int)


def read_trace(folder: Path, file: str) -> pd.DataFrame:
    """An arrival trace: column ``arrival_s`` (seconds, non-decreasing), optional lengths."""
    frame = _read_csv(folder, file)
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


def read_factors(folder: Path, file: str, column: str) -> np.ndarray:
    """Positive finite traffic multiples, one per month, from ``column`` of CSV ``file``."""
    frame = _read_csv(folder, file)
    if column not in frame.columns:
        raise DataFileError(f"{file} has no column {column!r}; columns: {', '.join(frame.columns)}")
    values = pd.to_numeric(frame[column], errors="coerce").to_numpy(float)
    if not 1 <= len(values) <= 240 or not np.all(np.isfinite(values)) or np.any(values <= 0):
        raise DataFileError(
            f"{file} column {column!r} must hold 1 to 240 positive numbers (one a month)"
        )
    return values
