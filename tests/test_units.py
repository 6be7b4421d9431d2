import pytest

from planner import units
from planner.units import UnitError, format_binary, format_bytes, parse


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


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        (14e9, "14.00 GB (13.04 GiB)"),
        (8 * 1024**3, "8.59 GB (8.00 GiB)"),
        (512 * 1024**2, "536.87 MB (512.00 MiB)"),
        (131072, "131.07 kB (128.00 KiB)"),
    ],
)
def test_format_bytes_shows_gb_and_gib(n, expected):
    assert format_bytes(n) == expected


@pytest.mark.parametrize(
    ("n", "expected"),
    [(131072, "128 KiB"), (536_870_912, "512 MiB"), (8 * 1024**3, "8 GiB"), (1000, "1,000 B")],
)
def test_format_binary(n, expected):
    assert format_binary(n) == expected


def test_constants():
    assert units.GIB == 2**30 and units.GB == 10**9 and units.TIB == 2**40
