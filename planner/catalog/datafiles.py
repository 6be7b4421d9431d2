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
        # a blank line inside the data is a gap (a missing value), not nothing: kept as a row
        frame = pd.read_csv(io.BytesIO(read_regular(path)), skip_blank_lines=False)
    except FileProblem as exc:
        raise DataFileError(f"cannot read {file}: it {exc}") from None
    except (OSError, ValueError) as exc:
        raise DataFileError(f"cannot read {file}: {exc}") from None
    filled = np.flatnonzero(frame.notna().any(axis=1).to_numpy())
    return frame.iloc[: filled[-1] + 1 if len(filled) else 0]  # blank lines at the end go


def _first_bad(bad: np.ndarray, raw: pd.Series) -> str:
    """Where the first bad value is, as a reader finds it in the file: its line (the header is
    line 1) and what it holds."""
    row = int(np.flatnonzero(bad)[0])
    held = raw.iloc[row]
    shown = "nothing" if pd.isna(held) else repr(str(held)[:40])
    return f"line {row + 2} holds {shown}"


def read_column(folder: Path, file: str, column: str) -> np.ndarray:
    """Positive integer token lengths from ``column`` of CSV ``file`` inside ``folder``."""
    frame = _read_csv(folder, file)
    if column not in frame.columns:
        raise DataFileError(f"{file} has no column {column!r}; columns: {', '.join(frame.columns)}")
    values = pd.to_numeric(frame[column], errors="coerce").to_numpy(float)
    if len(values) == 0:
        raise DataFileError(f"{file} column {column!r} must hold positive numbers; it is empty")
    bad = ~np.isfinite(values) | (values < 1)
    if bad.any():
        raise DataFileError(
            f"{file} column {column!r} must hold positive numbers; {_first_bad(bad, frame[column])}"
        )
    return np.round(values).astype(int)


def read_trace(folder: Path, file: str) -> pd.DataFrame:
    """An arrival trace: column ``arrival_s`` (seconds, non-decreasing), optional lengths."""
    frame = _read_csv(folder, file)
    if "arrival_s" not in frame.columns:
        raise DataFileError(
            f"{file} needs a column 'arrival_s'; columns: {', '.join(frame.columns)}"
        )
    times = pd.to_numeric(frame["arrival_s"], errors="coerce").to_numpy(float)
    expected = f"{file} column 'arrival_s' must be non-negative and non-decreasing"
    if len(times) == 0:
        raise DataFileError(f"{expected}; it is empty")
    bad = ~np.isfinite(times) | (times < 0)
    bad[1:] |= times[1:] < times[:-1]
    if bad.any():
        raise DataFileError(f"{expected}; {_first_bad(bad, frame['arrival_s'])}")
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
    expected = f"{file} column {column!r} must hold 1 to 240 positive numbers (one a month)"
    if not 1 <= len(values) <= 240:
        raise DataFileError(f"{expected}; it holds {len(values):,}")
    bad = ~np.isfinite(values) | (values <= 0)
    if bad.any():
        raise DataFileError(f"{expected}; {_first_bad(bad, frame[column])}")
    return values
