"""The error a measurement file's reader raises: what is wrong, and where in the file."""

from __future__ import annotations


class MeasurementFileError(ValueError):
    """A measurement file that is not what it was said to be, or holds a figure no run could
    give: the message says what was expected and what arrived, ``field`` names the key or
    figure and ``line`` its 1-based line, where known."""

    def __init__(self, message: str, field: str | None = None, line: int | None = None):
        super().__init__(message)
        self.field = field
        self.line = line
