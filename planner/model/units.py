"""Quantities with units: parsing catalog text (:mod:`planner.outputs.formatting` writes them out).

Every quantity in a catalog carries its unit (``80 GiB``, ``3.35 TB/s``, ``989 TFLOPS``). Parsing
returns the value in the base unit of its kind (bytes, bytes per second, FLOP per second, watts,
seconds, events per second). Decimal prefixes are powers of 1000 and binary prefixes powers of
1024, everywhere: ``GB`` = 1000**3 B and ``GiB`` = 1024**3 B (IEC 80000-13): mixing the two can
turn an apparently safe deployment into an out-of-memory failure.
"""

from __future__ import annotations

import math
import re

KB = 1000
MB = 1000**2
GB = 1000**3
TB = 1000**4
KIB = 1024
MIB = 1024**2
GIB = 1024**3
TIB = 1024**4

#: Byte units and their size in bytes. ``kB`` and ``KB`` both mean 1000 bytes.
BYTE_UNITS: dict[str, int] = {
    "B": 1,
    "kB": KB,
    "KB": KB,
    "MB": MB,
    "GB": GB,
    "TB": TB,
    "KiB": KIB,
    "MiB": MIB,
    "GiB": GIB,
    "TiB": TIB,
}

#: Each kind of quantity: its unit names and their factor to the base unit.
UNITS: dict[str, dict[str, float]] = {
    "bytes": {name: float(f) for name, f in BYTE_UNITS.items()},
    "bandwidth": {f"{name}/s": float(f) for name, f in BYTE_UNITS.items()},
    "compute": {"FLOPS": 1.0, "GFLOPS": 1e9, "TFLOPS": 1e12, "PFLOPS": 1e15},
    "power": {"W": 1.0, "kW": 1e3},
    "time": {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "min": 60.0, "h": 3600.0},
    "rate": {"/s": 1.0, "/min": 1 / 60, "/h": 1 / 3600},
}

#: The base unit each kind is returned in.
BASE_UNIT: dict[str, str] = {
    "bytes": "B",
    "bandwidth": "B/s",
    "compute": "FLOP/s",
    "power": "W",
    "time": "s",
    "rate": "1/s",
}

_QUANTITY = re.compile(r"^\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*([^\s\d].*?)?\s*$")


class UnitError(ValueError):
    """A quantity whose text could not be read as a number with an accepted unit."""


def accepted_units(kind: str) -> str:
    """The unit names accepted for ``kind``, for error messages."""
    return ", ".join(UNITS[kind])


def parse(text: object, kind: str) -> float:
    """Parse ``text`` such as ``"80 GiB"`` into the base unit of ``kind``.

    Parameters
    ----------
    text : str
        A number followed by one of the units of ``kind`` (see :data:`UNITS`).
    kind : str
        One of ``bytes``, ``bandwidth``, ``compute``, ``power``, ``time``, ``rate``.

    Returns
    -------
    float
        The value in bytes, bytes/s, FLOP/s, W, s or 1/s.

    Raises
    ------
    UnitError
        When the unit is missing (``80``) or not one of the accepted ones; the message lists the
        accepted units, since a bare number for a byte quantity is ambiguous (GB or GiB?).

    Examples
    --------
    >>> parse("80 GiB", "bytes")
    85899345920.0
    >>> parse("3.35 TB/s", "bandwidth")
    3350000000000.0
    """
    if kind not in UNITS:
        raise ValueError(f"unknown quantity kind {kind!r}")
    units = UNITS[kind]
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise UnitError(f"expected a {kind} quantity such as '{_example(kind)}', got {text!r}")
    match = _QUANTITY.match(str(text))
    if not match:
        raise UnitError(
            f"expected a number followed by a unit ({accepted_units(kind)}), got {text!r}"
        )
    number, unit = match.group(1), match.group(2)
    if unit is None:
        raise UnitError(
            f"{text!r} has no unit: write it with one of {accepted_units(kind)} "
            f"(e.g. '{_example(kind)}')"
        )
    unit = unit.replace(" ", "")
    if unit not in units:
        raise UnitError(
            f"unknown unit {unit!r} in {text!r}: expected one of {accepted_units(kind)}"
        )
    value = float(number)
    if not math.isfinite(value):
        raise UnitError(f"{text!r} is not a finite number")
    factor = units[unit]
    # Exact for integer byte counts: multiply an integer mantissa where possible.
    if float(value).is_integer() and float(factor).is_integer():
        return float(int(value) * int(factor))
    return value * factor


def _example(kind: str) -> str:
    return {
        "bytes": "80 GiB",
        "bandwidth": "3.35 TB/s",
        "compute": "989 TFLOPS",
        "power": "700 W",
        "time": "50 ms",
        "rate": "4 /s",
    }[kind]


def gib(n_bytes: float) -> float:
    """Bytes to binary gibibytes [GiB], 1 GiB = 1024**3 B."""
    return n_bytes / GIB


def gb(n_bytes: float) -> float:
    """Bytes to decimal gigabytes [GB], 1 GB = 1000**3 B."""
    return n_bytes / GB


def is_finite(value: object) -> bool:
    """Whether ``value`` is a finite number: an int, float or numpy number, or text that reads as
    one; ``False`` for None, pandas' NA, NaN, ±inf and anything else (never an exception). The one
    test every layer uses before treating a figure as known."""
    try:
        return math.isfinite(float(value))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
