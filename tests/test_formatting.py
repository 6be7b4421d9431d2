"""One way to write a number for people (planner.outputs.formatting), checked against the seed."""

from __future__ import annotations

import math

import pytest

from planner.outputs import formatting


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        (14e9, "13.04 GiB (14.00 GB)"),  # the seed's 14-billion-byte payload, about 13.04 GiB
        (8 * 1024**3, "8.00 GiB (8.59 GB)"),  # sixteen 512 MiB caches
        (512 * 1024**2, "512.00 MiB (536.87 MB)"),  # one 4,096-token sequence
        (131072, "128.00 KiB (131.07 kB)"),  # one cached token
        (float("nan"), "n/a"),
        (None, "n/a"),
    ],
)
def test_memory_reads_in_binary_units_with_the_decimal_beside(n, expected):
    assert formatting.memory(n) == expected


@pytest.mark.parametrize(
    ("n", "expected"),
    [(131072, "128 KiB"), (536_870_912, "512 MiB"), (8 * 1024**3, "8 GiB"), (1000, "1,000 B")],
)
def test_exact_binary(n, expected):
    assert formatting.exact_binary(n) == expected


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [(0.02, "20 ms"), (0.0075, "7.5 ms"), (8.49, "8.49 s"), (46.9, "46.9 s"), (math.inf, "n/a")],
)
def test_duration_in_ms_below_a_second(seconds, expected):
    assert formatting.duration(seconds) == expected


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        (0.149, 0.76, ("149 ms", "760 ms")),  # apart at three digits: as duration writes them
        (0.021613, 0.021632, ("21.61 ms", "21.63 ms")),  # alike at three, apart at four
        (1.00004, 1.00001, ("1.00004 s", "1.00001 s")),  # apart at six
        (1.2345671, 1.2345679, ("1.23457 s", "1.23457 s")),  # six digits at most
        (1.5, 1.5, ("1.5 s", "1.5 s")),  # equal: three digits
        (math.nan, 0.5, ("n/a", "500 ms")),
    ],
)
def test_two_durations_are_written_far_enough_to_tell_apart(first, second, expected):
    assert formatting.durations_apart(first, second) == expected


@pytest.mark.parametrize(
    ("function", "value", "expected"),
    [
        (formatting.usd, 27759.4, "27,759"),
        (formatting.usd, float("nan"), "n/a"),
        (formatting.cents, 2.8, "2.80"),
        (formatting.count, 1137, "1,137"),
        (formatting.bandwidth, 3.35e12, "3,350 GB/s"),
        (formatting.short, True, "yes"),
        (formatting.short, 0.1234, "0.123"),
    ],
)
def test_money_counts_and_rates(function, value, expected):
    assert function(value) == expected
