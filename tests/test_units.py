import pytest

from planner.model import units
from planner.model.units import UnitError, parse


@pytest.mark.parametrize(
    ("text", "kind", "expected"),
    [
        ("80 GiB", "bytes", 80 * 1024**3),
        ("80 GB", "bytes", 80 * 1000**3),
        ("80GB", "bytes", 80e9),
        ("1.5 TiB", "bytes", 1.5 * 1024**4),
        ("512 MiB", "bytes", 536_870_912),
        ("128 KiB", "bytes", 131_072),
        ("1 kB", "bytes", 1000),
        ("1 KB", "bytes", 1000),
        ("14000000000 B", "bytes", 14e9),
        ("3.35 TB/s", "bandwidth", 3.35e12),
        ("700 GB/s", "bandwidth", 700e9),
        ("900 GiB/s", "bandwidth", 900 * 1024**3),
        ("989 TFLOPS", "compute", 989e12),
        ("2.25 PFLOPS", "compute", 2.25e15),
        ("700 W", "power", 700),
        ("1.2 kW", "power", 1200),
        ("50 ms", "time", 0.05),
        ("250 us", "time", 250e-6),
        ("2 s", "time", 2),
        ("4 /s", "rate", 4),
        ("120 /min", "rate", 2),
    ],
)
def test_parse(text, kind, expected):
    assert parse(text, kind) == pytest.approx(expected, rel=1e-15)


def test_binary_and_decimal_prefixes_differ_as_the_seed_says():
    # Seed ¶3: 14e9 bytes is about 13.04 GiB.
    assert 14e9 / parse("1 GiB", "bytes") == pytest.approx(13.04, abs=0.005)
    assert parse("1 GiB", "bytes") == 1_073_741_824
    assert parse("1 GB", "bytes") == 1_000_000_000


@pytest.mark.parametrize(
    ("text", "kind", "needle"),
    [
        ("80", "bytes", "has no unit"),
        (80, "bytes", "has no unit"),
        ("80 gigs", "bytes", "unknown unit 'gigs'"),
        ("80 Gb", "bytes", "unknown unit 'Gb'"),
        ("3.35 TB", "bandwidth", "unknown unit 'TB'"),
        ("lots", "bytes", "expected a number followed by a unit"),
        ("989 TOPS", "compute", "unknown unit"),
        (True, "bytes", "expected a bytes quantity"),
        ([1], "bytes", "expected a bytes quantity"),
        ("inf GB", "bytes", "expected a number"),
    ],
)
def test_parse_rejects(text, kind, needle):
    with pytest.raises(UnitError) as info:
        parse(text, kind)
    assert needle in str(info.value)


def test_error_lists_accepted_units():
    with pytest.raises(UnitError) as info:
        parse("80", "bytes")
    for unit in ("B", "kB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB"):
        assert unit in str(info.value)


def test_constants():
    assert units.GIB == 2**30 and units.GB == 10**9 and units.TIB == 2**40


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, True),
        (-2.5, True),
        (1e308, True),
        ("40", True),  # text that reads as a number (a CSV cell) is a number
        (None, False),
        (float("nan"), False),
        (float("inf"), False),
        (float("-inf"), False),
        ("n/a", False),
        ([1.0], False),
    ],
)
def test_is_finite(value, expected):
    assert units.is_finite(value) is expected


def test_is_finite_refuses_pandas_and_numpy_missing_values():
    import numpy as np
    import pandas as pd

    assert not units.is_finite(pd.NA)
    assert not units.is_finite(pd.NaT)
    assert not units.is_finite(np.float64("nan"))
    assert units.is_finite(np.int64(3))
