"""How planner writes a number for people: one function per kind of figure, used by the report,
explain and the diff alike.

Memory reads in binary units with the decimal figure beside it (``13.04 GiB (14.00 GB)``: GiB is
what a device's memory is counted in, GB what a datasheet and a weight file say); durations in
ms below a second, else s; money in whole dollars with thousands separators (cents for prices);
a missing value reads ``n/a`` (:data:`NOT_AVAILABLE`).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from planner.model.units import GB, GIB, KB, KIB, MB, MIB, TIB, is_finite

#: What a missing figure reads.
NOT_AVAILABLE = "n/a"


def usd(value: Any) -> str:
    """Whole US dollars with thousands separators (``27,759``)."""
    return f"{float(value):,.0f}" if is_finite(value) else NOT_AVAILABLE


def cents(value: Any) -> str:
    """A price with cents (``2.80``)."""
    return f"{float(value):,.2f}" if is_finite(value) else NOT_AVAILABLE


def count(value: Any) -> str:
    """A whole count with thousands separators (``1,137``)."""
    return f"{float(value):,.0f}" if is_finite(value) else NOT_AVAILABLE


def duration(value: Any) -> str:
    """A duration in ms below one second, else in s, three significant digits (``20 ms``)."""
    if not is_finite(value):
        return NOT_AVAILABLE
    return _duration(float(value), 3)


def durations_apart(first: Any, second: Any) -> tuple[str, str]:
    """Two durations as :func:`duration` writes them, with more significant digits (up to six)
    where three would write two different durations alike (``21.61 ms``, ``21.63 ms``)."""
    if not (is_finite(first) and is_finite(second)):
        return duration(first), duration(second)
    digits = 3
    while True:
        pair = tuple(_duration(float(v), digits) for v in (first, second))
        if digits == 6 or float(first) == float(second) or pair[0] != pair[1]:
            return pair[0], pair[1]
        digits += 1


def _duration(seconds: float, digits: int) -> str:
    if abs(seconds) < 1:
        return f"{seconds * 1e3:,.{digits}g} ms"
    return f"{seconds:,.{digits}g} s"


def binary_decimal(n_bytes: float) -> tuple[str, str]:
    """A byte count in binary and in decimal units: (``13.04 GiB``, ``14.00 GB``); GiB from one
    GiB up, MiB from one MiB, else KiB."""
    if abs(n_bytes) >= GIB:
        return f"{n_bytes / GIB:,.2f} GiB", f"{n_bytes / GB:,.2f} GB"
    if abs(n_bytes) >= MIB:
        return f"{n_bytes / MIB:,.2f} MiB", f"{n_bytes / MB:,.2f} MB"
    return f"{n_bytes / KIB:,.2f} KiB", f"{n_bytes / KB:,.2f} kB"


def memory(value: Any) -> str:
    """A memory figure in binary units with the decimal one beside it.

    >>> memory(14e9)
    '13.04 GiB (14.00 GB)'
    """
    if not is_finite(value):
        return NOT_AVAILABLE
    binary, decimal = binary_decimal(float(value))
    return f"{binary} ({decimal})"


def exact_binary(n_bytes: float) -> str:
    """The exact binary size when it is a whole number of KiB, MiB, GiB or TiB, else bytes.

    >>> exact_binary(131072)
    '128 KiB'
    """
    for unit, size in (("TiB", TIB), ("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if n_bytes >= size and float(n_bytes / size).is_integer():
            return f"{int(n_bytes // size)} {unit}"
    return f"{n_bytes:,.0f} B"


def bandwidth(value: Any) -> str:
    """A bandwidth given in B/s, in decimal GB/s as datasheets state it (``3,350 GB/s``)."""
    return f"{float(value) / GB:,.0f} GB/s" if is_finite(value) else NOT_AVAILABLE


def short(value: Any) -> str:
    """Any value of a generic table (the baseline comparison) as short text."""
    if value is None or value is pd.NA:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return ""
        if value == round(value) or abs(value) >= 100:
            return f"{value:,.0f}"
        return f"{value:,.2f}" if abs(value) >= 1 else f"{value:.3g}"
    return str(value)
