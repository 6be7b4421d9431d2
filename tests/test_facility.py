"""Facility limits, worked by hand: a 10 kW rack, 8-device nodes.

700 W devices: a full node draws 8 × 700 = 5,600 W, so ⌊10,000 ÷ 5,600⌋ = 1 node a rack, and
3 nodes need 3 racks. 1,400 W devices: a node draws 11,200 W, more than the rack's 10,000 W:
ruled out by power. A 2-device fleet of 1,400 W devices draws 2,800 W: 3 nodes' worth a rack.
At the site, 24 devices × 700 W × PUE 1.3 = 21.84 kW: within 25 kW, over 20 kW.
"""

from __future__ import annotations

import math

import pytest

from planner.model.cost import eligible, ruled_out_by
from planner.model.facility import (
    facility_peak_kw,
    node_power_w,
    nodes_per_rack,
    racks_needed,
    within_power,
)


@pytest.mark.parametrize(
    ("devices", "power_w", "node_w", "per_rack", "nodes", "racks"),
    [
        (24, 700.0, 5_600.0, 1, 3, 3),
        (24, 1_400.0, 11_200.0, 0, 3, math.nan),
        (2, 1_400.0, 2_800.0, 3, 1, 1),
    ],
)
def test_racks(devices, power_w, node_w, per_rack, nodes, racks) -> None:
    assert node_power_w(devices, 8, power_w) == node_w
    assert nodes_per_rack(10_000.0, node_w) == per_rack
    assert racks_needed(nodes, per_rack) == pytest.approx(racks, nan_ok=True)


def test_no_limit_or_no_board_power_checks_nothing() -> None:
    assert math.isnan(nodes_per_rack(math.nan, 5_600.0))
    assert math.isnan(nodes_per_rack(10_000.0, math.nan))
    assert within_power(math.nan, math.nan, math.nan)


def test_the_site_limit() -> None:
    peak = facility_peak_kw(24, 700.0, 1.3)
    assert peak == pytest.approx(21.84)
    assert within_power(1, peak, 25_000.0)
    assert not within_power(1, peak, 20_000.0)


def test_a_node_over_the_rack_budget_rules_the_option_out() -> None:
    """The option meets its targets and has a price, but its node does not fit a rack."""
    fits = within_power(nodes_per_rack(10_000.0, 11_200.0), 100.0, math.nan)
    assert not fits
    assert not eligible(True, 50_000.0, fits)
    assert ruled_out_by(True, True, False, 50_000.0, fits) == "power"
    assert ruled_out_by(True, True, False, math.nan, True) == "cost"
