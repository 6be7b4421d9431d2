"""The cost model against a round-number example worked out by hand."""

import numpy as np
import pytest

from planner.model.cost import (
    break_even_month,
    capital_usd,
    cloud_usd_per_million_tokens,
    cloud_usd_per_month,
    energy_kwh_per_month,
    nodes_needed,
    opex_usd_per_month,
    output_tokens_per_month,
    owned_usd_per_million_tokens,
    owned_usd_per_month,
    tco_usd,
)

# 8 devices at 25,000 USD, 700 W, PUE 1.5, 0.10 USD/kWh, 36 months, 730 h per month, full power,
# no node overhead or hosting; renting at 2.00 USD per device-hour.


def test_capital_energy_tco_by_hand():
    nodes = nodes_needed(8, 8)
    assert nodes == 1
    capital = capital_usd(25_000, 8, 0, nodes)
    assert capital == 200_000
    # 700 W × 1.0 × 1.5 × 8 × 730 h = 6,132,000 Wh = 6,132 kWh
    energy = energy_kwh_per_month(700, 1.0, 1.5, 8, 730)
    assert energy == pytest.approx(6_132, rel=1e-12)
    opex = opex_usd_per_month(energy, 0.10, 0, nodes)
    assert opex == pytest.approx(613.20, rel=1e-12)
    tco = tco_usd(capital, opex, 36)
    assert tco == pytest.approx(200_000 + 36 * 613.20, rel=1e-12)  # 222,075.20
    assert owned_usd_per_month(tco, 36) == pytest.approx(222_075.20 / 36, rel=1e-12)


def test_node_overhead_and_hosting():
    # 12 devices need 2 nodes of 8: 12 × 25,000 + 2 × 40,000 capital; 2 × 1,500 hosting a month
    nodes = nodes_needed(12, 8)
    assert nodes == 2
    assert capital_usd(25_000, 12, 40_000, nodes) == 380_000
    assert opex_usd_per_month(1000, 0.10, 1_500, nodes) == pytest.approx(3_100, rel=1e-12)


def test_cloud_and_break_even_by_hand():
    cloud = cloud_usd_per_month(2.00, 8, 730)
    assert cloud == 11_680
    # saving per month 11,680 − 613.20 = 11,066.80; 200,000 / 11,066.80 = 18.07… → month 19
    assert break_even_month(200_000, cloud, 613.20) == 19
    # renting cheaper than running owned devices: never breaks even
    assert np.isnan(break_even_month(200_000, 500, 613.20))


def test_cost_per_million_tokens():
    # 2 requests/s × 500 tokens × 3600 s × 730 h = 2,628,000,000 tokens a month
    tokens = output_tokens_per_month(2, 500, 730)
    assert tokens == 2_628_000_000
    assert owned_usd_per_million_tokens(6_168.76, tokens) == pytest.approx(6_168.76 / 2_628)
    assert cloud_usd_per_million_tokens(11_680, tokens) == pytest.approx(11_680 / 2_628)


def test_missing_price_is_never_zero():
    assert np.isnan(capital_usd(np.nan, 8, 0, 1))
    assert np.isnan(tco_usd(np.nan, 613.2, 36))
